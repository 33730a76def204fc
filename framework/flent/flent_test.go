package flent

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/report"
)

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func testReport() *report.Report {
	r := &report.Report{Profile: "6.18", Seed: 3, DurationNs: 3e6, WarmupNs: 1e6, TxPackets: 300, TxBytes: 300 * 162}
	for i := int64(0); i < 3; i++ {
		n := uint64(100 * (i + 1))
		r.Series = append(r.Series, report.Interval{StartNs: i * 1e6, EndNs: (i + 1) * 1e6, TxPackets: n, TxBytes: n * 162, TxBps: float64(n*162*8) / 1e-3})
	}
	r.Setup.Workload = "udp_stream"
	return r
}

// A report as flent loads it: the recorded settings, version 4, x values
// in seconds, the test's series in Mbit/s of frames, raw values at
// absolute times from T0, SERIES_META with units and mean.
func TestFromReport(t *testing.T) {
	test, err := For("udp_stream")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 3, 9, 0, 0, 500000000, time.UTC)
	f, err := FromReport(test, testReport(), Options{Title: "6.18", Time: start, Version: "v"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf, "e2"); err != nil {
		t.Fatal(err)
	}
	doc := decode(t, buf.Bytes())
	if doc["version"] != float64(4) {
		t.Errorf("version %v", doc["version"])
	}
	md := doc["metadata"].(map[string]any)
	for _, k := range recordedSettings {
		if _, ok := md[k]; !ok {
			t.Errorf("metadata lacks %s", k)
		}
	}
	want := map[string]any{"NAME": "udp_flood", "TITLE": "6.18", "TIME": "2026-12-03T09:00:00.500000Z", "T0": "2026-12-03T09:00:00.500000Z",
		"STEP_SIZE": 0.001, "LENGTH": 0.003, "TOTAL_LENGTH": 0.003, "DATA_FILENAME": "e2.flent.gz", "LOCAL_HOST": "txlab"}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("%s = %v, want %v", k, md[k], v)
		}
	}
	x := doc["x_values"].([]any)
	if len(x) != 3 || x[0] != 0.001 || x[2] != 0.003 {
		t.Errorf("x_values %v", x)
	}
	// 100 frames of 162 bytes in 1 ms: 129.6 Mbit/s.
	up := doc["results"].(map[string]any)["UDP upload"].([]any)
	for i, v := range up {
		if w := 129.6 * float64(i+1); math.Abs(v.(float64)-w) > 1e-9 {
			t.Errorf("UDP upload[%d] = %v, want %v", i, v, w)
		}
	}
	raw := doc["raw_values"].(map[string]any)["UDP upload"].([]any)
	if p := raw[1].(map[string]any); math.Abs(p["t"].(float64)-(float64(start.Unix())+0.5+0.002)) > 1e-6 || p["val"] != up[1] {
		t.Errorf("raw_values[1] %v", p)
	}
	sm := md["SERIES_META"].(map[string]any)["UDP upload"].(map[string]any)
	if sm["UNITS"] != "Mbits/s" || math.Abs(sm["MEAN_VALUE"].(float64)-259.2) > 1e-9 {
		t.Errorf("SERIES_META %v", sm)
	}
}

// The same report and start time give the same bytes.
func TestWriteDeterministic(t *testing.T) {
	test, _ := For("udp_rate")
	var a, b bytes.Buffer
	for _, buf := range []*bytes.Buffer{&a, &b} {
		f, err := FromReport(test, testReport(), Options{Time: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Write(buf, "x.flent.gz"); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two writes differ")
	}
}

// A missing value is null in results and absent from raw_values.
func TestNullValues(t *testing.T) {
	f := &File{Test: "udp_flood", StepSize: 1, Length: 2, X: []float64{1, 2},
		Series: []Series{{Name: "UDP upload", Units: "Mbits/s", Values: []float64{math.NaN(), 5}}}}
	var buf bytes.Buffer
	if err := f.Write(&buf, "n"); err != nil {
		t.Fatal(err)
	}
	doc := decode(t, buf.Bytes())
	if r := doc["results"].(map[string]any)["UDP upload"].([]any); r[0] != nil || r[1] != 5.0 {
		t.Errorf("results %v", r)
	}
	if raw := doc["raw_values"].(map[string]any)["UDP upload"].([]any); len(raw) != 1 {
		t.Errorf("raw_values %v", raw)
	}
}

func TestErrors(t *testing.T) {
	if _, err := For("tcp_stream"); err == nil || !strings.Contains(err.Error(), "no flent test describes tcp_stream senders") || !strings.Contains(err.Error(), "udp_stream (udp_flood)") {
		t.Errorf("For(tcp_stream): %v", err)
	}
	for _, c := range []struct {
		f    File
		want string
	}{
		{File{StepSize: 1, X: []float64{1}}, "no test name"},
		{File{Test: "udp_flood", StepSize: 1}, "no data points"},
		{File{Test: "udp_flood", X: []float64{1}}, "step size"},
		{File{Test: "udp_flood", StepSize: 1, X: []float64{1}, Series: []Series{{Name: "a", Values: []float64{1, 2}}}}, `"a" has 2 values for 1`},
		{File{Test: "udp_flood", StepSize: 1, X: []float64{1}, Series: []Series{{Name: "a", Values: []float64{1}}, {Name: "a", Values: []float64{1}}}}, `"a" twice`},
	} {
		if err := c.f.Write(&bytes.Buffer{}, "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
	test, _ := For("udp_stream")
	if _, err := FromReport(test, &report.Report{}, Options{}); err == nil {
		t.Error("a report without series was written")
	}
}
