package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"
)

// jaegerTrace is what Jaeger's query API returns for one trace.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID     string `json:"spanID"`
		Operation  string `json:"operationName"`
		Start      int64  `json:"startTime"`
		Duration   int64  `json:"duration"`
		References []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Warnings []string `json:"warnings"`
	} `json:"spans"`
	Warnings []string `json:"warnings"`
}

func jaegerGet(t *testing.T, base, id string) jaegerTrace {
	t.Helper()
	var out struct{ Data []jaegerTrace }
	for try := 0; try < 20; try++ { // the collector batches: give it a moment
		resp, err := http.Get(base + "/api/traces/" + id)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err == nil && len(out.Data) == 1 {
				return out.Data[0]
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("Jaeger at %s has no trace %s", base, id)
	return jaegerTrace{}
}

// Against a real Jaeger (v2, OTLP on localhost:4317, the query API at
// $TXLAB_JAEGER, e.g. http://localhost:16686): the README's window
// command exports every span, the run's trace and each variant's
// simulated trace are apart and linked, and Jaeger flags nothing (no
// clock skew, no child before its parent). Opt-in: the test needs the
// Jaeger the README shows how to start.
func TestJaegerShowsTheTraces(t *testing.T) {
	base := os.Getenv("TXLAB_JAEGER")
	if base == "" {
		t.Skip("TXLAB_JAEGER is not set (a Jaeger query URL, e.g. http://localhost:16686)")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "txlab-jaeger-test")
	out, err := txlab(t, append(append([]string(nil), quick...), "--trace", "otlp-grpc", "--trace-window", "100us@2ms",
		"--compare", "profile=6.18,6.19-rc1")...)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`trace: (\d+) spans exported \((\d+) failed\) via otlp-grpc; trace ([0-9a-f]{32})`).FindStringSubmatch(out)
	if m == nil || m[2] != "0" {
		t.Fatalf("export: %q", out)
	}
	run := jaegerGet(t, base, m[3])
	sims := map[string]bool{}
	for _, sp := range run.Spans {
		for _, r := range sp.References {
			if r.RefType == "FOLLOWS_FROM" && r.TraceID != run.TraceID {
				sims[r.TraceID] = true
			}
		}
	}
	if len(sims) != 2 {
		t.Fatalf("the run's trace links to %d simulated traces, want 2", len(sims))
	}
	total := len(run.Spans)
	for id := range sims {
		tr := jaegerGet(t, base, id)
		total += len(tr.Spans)
		byID := map[string]int64{}
		for _, sp := range tr.Spans {
			byID[sp.SpanID] = sp.Start
		}
		for _, sp := range tr.Spans {
			if len(sp.Warnings) > 0 {
				t.Errorf("trace %s: Jaeger warns on %s: %v", id, sp.Operation, sp.Warnings)
				break
			}
			for _, r := range sp.References {
				if r.RefType == "CHILD_OF" && sp.Start < byID[r.SpanID] {
					t.Errorf("trace %s: %s starts before its parent", id, sp.Operation)
				}
			}
		}
	}
	if want := m[1]; fmt.Sprint(total) != want {
		t.Errorf("Jaeger holds %d spans of the run, %s were exported", total, want)
	}
}
