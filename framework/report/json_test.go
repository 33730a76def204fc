package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestWriteJSONRoundTrip(t *testing.T) {
	in := sampleReport()
	var b bytes.Buffer
	if err := WriteJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "}\n") || !strings.HasPrefix(b.String(), "{\n  \"") {
		t.Errorf("want 2-space indent and trailing newline, got %.40q...", b.String())
	}
	var out Report
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*in, out) {
		t.Errorf("round trip changed the report\n in: %+v\nout: %+v", *in, out)
	}
}

func TestJSONKeys(t *testing.T) {
	tests := []struct {
		name   string
		report *Report
	}{
		{"sample", sampleReport()},
		{"empty", &Report{}},
	}
	top := []string{"offered_packets", "tx_packets", "in_flight_packets", "drops", "tx_pps",
		"tx_bps", "cpu_ns_per_packet", "cpu_busy_pct", "duration_ns", "profile", "seed",
		"locks", "queues", "qdisc", "sim_wall_ns", "events"}
	nested := map[string][]string{
		"locks":  {"name", "contended", "total_wait_ns", "max_wait_ns"},
		"queues": {"txq", "tx_packets", "tx_bytes", "stops", "wakes"},
		"qdisc":  {"handle", "kind", "sent_packets", "dropped", "overlimits", "requeues", "backlog_packets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJSON(&b, tt.report); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range top {
				if _, ok := m[k]; !ok {
					t.Errorf("missing top-level key %q", k)
				}
			}
			if _, ok := m["drops"].(map[string]any); !ok {
				t.Errorf("drops = %#v, want an object", m["drops"])
			}
			for k, fields := range nested {
				arr, ok := m[k].([]any)
				if !ok {
					t.Errorf("%s = %#v, want an array", k, m[k])
					continue
				}
				for _, e := range arr {
					obj, ok := e.(map[string]any)
					if !ok {
						t.Errorf("%s element %#v is not an object", k, e)
						continue
					}
					for _, f := range fields {
						if _, ok := obj[f]; !ok {
							t.Errorf("%s element missing %q", k, f)
						}
					}
				}
			}
			if bytes.Contains(b.Bytes(), []byte("null")) {
				t.Errorf("JSON contains null:\n%s", b.String())
			}
		})
	}
}

func TestWriteJSONGolden(t *testing.T) {
	r := sampleReport()
	r.StripWall()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", b.Bytes())
}

func TestWriteJSONList(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSONList(&b, []*Report{sampleReport(), {}}); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Variants []map[string]any `json:"variants"`
	}
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Variants) != 2 || v.Variants[0]["name"] != "baseline" {
		t.Errorf("variants = %v", v.Variants)
	}
	b.Reset()
	if err := WriteJSONList(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "{\n  \"variants\": []\n}\n" {
		t.Errorf("empty list = %q", got)
	}
}

func TestStripWallDeterministic(t *testing.T) {
	a, c := sampleReport(), sampleReport()
	c.SimWallNs = 1
	a.StripWall()
	c.StripWall()
	var ba, bc bytes.Buffer
	if err := WriteJSON(&ba, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&bc, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ba.Bytes(), bc.Bytes()) {
		t.Error("reports differing only in sim_wall_ns encode differently after StripWall")
	}
}

func TestNormalizeNonFinite(t *testing.T) {
	r := &Report{}
	r.TxPps = 0
	r.CPUNsPerPacket = r.TxPps / r.TxPps // NaN from an empty window
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatalf("NaN rate should be normalised, got %v", err)
	}
}
