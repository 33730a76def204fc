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
	"github.com/txlab/txlab/framework/workload"
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
	test, err := For(workload.Spec{Kind: "udp_stream"})
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
	test, _ := For(workload.Spec{Kind: "udp_rate"})
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
	if _, err := For(workload.Spec{Kind: "tcp_stream", Flows: 4, Down: 4, Marks: []uint8{0, 10}}); err == nil || err.Error() != "no flent test describes these tcp_stream senders (flent's tests are written for: forward (udp_flood), tcp_stream downloads only (--flows 0 --down N) (tcp_ndown), tcp_stream uploads and downloads (--down N) marked among 0, 8, 40, 46 (rrul), tcp_stream uploads only (--down 0) (tcp_nup), udp_rate (udp_flood), udp_stream (udp_flood))" {
		t.Errorf("For(up and down, AF11): %v", err)
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
	test, _ := For(workload.Spec{Kind: "udp_stream"})
	if _, err := FromReport(test, &report.Report{}, Options{}); err == nil {
		t.Error("a report without series was written")
	}
}

// tcp_nup's data sets from a report's flows: each upload's goodput on
// the window's intervals (null before), their sum, mean and Jain's index.
func TestTCPNup(t *testing.T) {
	test, err := For(workload.Spec{Kind: "tcp_stream", Flows: 2})
	if err != nil || test.Name != "tcp_nup" {
		t.Fatalf("For(2 uploads): %v %v", test, err)
	}
	r := testReport()
	r.TCP = &report.TCP{Flows: []report.Flow{
		{ID: 0, Dir: "up", SeriesBps: []float64{10e6, 30e6}},
		{ID: 1, Dir: "down", SeriesBps: []float64{1e6, 1e6}},
		{ID: 2, Dir: "up", SeriesBps: []float64{10e6, 10e6}},
	}}
	ms := func(v float64) *float64 { return &v }
	r.Latency = &report.Latency{Probes: []report.ProbeLatency{
		{Kind: "udp_rr", Series: []*float64{ms(9), ms(9), ms(9)}},
		{Kind: "ping", Series: []*float64{nil, ms(2.5), ms(4)}},
	}}
	if p := test.Params(r); p["upload_streams"] != "2" {
		t.Errorf("params %v", p)
	}
	got := map[string][]float64{}
	var names []string
	for _, s := range test.Series(r) {
		got[s.Name] = s.Values
		names = append(names, s.Name)
	}
	if strings.Join(names, "|") != "TCP upload::1|TCP upload::2|TCP upload sum|TCP upload avg|TCP upload fairness|Ping (ms) ICMP" {
		t.Errorf("series %v", names)
	}
	for name, want := range map[string][]float64{
		"TCP upload::1": {math.NaN(), 10, 30}, "TCP upload::2": {math.NaN(), 10, 10},
		"TCP upload sum": {math.NaN(), 20, 40}, "TCP upload avg": {math.NaN(), 10, 20},
		"TCP upload fairness": {math.NaN(), 1, 1600.0 / (2 * 1000)},
		"Ping (ms) ICMP":      {math.NaN(), 2.5, 4},
	} {
		for i, w := range want {
			g := got[name][i]
			if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > 1e-9) {
				t.Errorf("%s[%d] = %v, want %v", name, i, g, w)
			}
		}
	}
}

// rrul's data sets: per mark and direction the goodput of that mark's
// flows (summed), avg and sum each way, the totals, a UDP ping per
// udp_rr probe of an rrul mark, ICMP, and the pings' average.
func TestRRUL(t *testing.T) {
	test, err := For(workload.Spec{Kind: "tcp_stream", Flows: 2, Down: 1, Marks: []uint8{0, 46}})
	if err != nil || test.Name != "rrul" {
		t.Fatalf("For(rrul): %v %v", test, err)
	}
	r := testReport()
	r.TCP = &report.TCP{Flows: []report.Flow{
		{ID: 0, Dir: "up", DSCP: 0, SeriesBps: []float64{10e6, 30e6}},
		{ID: 1, Dir: "up", DSCP: 46, SeriesBps: []float64{2e6, 4e6}},
		{ID: 2, Dir: "up", DSCP: 0, SeriesBps: []float64{1e6, 1e6}},
		{ID: 3, Dir: "down", DSCP: 8, SeriesBps: []float64{5e6, 6e6}},
	}}
	ms := func(v float64) *float64 { return &v }
	r.Latency = &report.Latency{Probes: []report.ProbeLatency{
		{Kind: "udp_rr", DSCP: 0, Series: []*float64{ms(1), ms(2), nil}},
		{Kind: "udp_rr", DSCP: 10, Series: []*float64{ms(50), ms(50), ms(50)}},
		{Kind: "ping", Series: []*float64{nil, ms(4), ms(6)}},
	}}
	got := map[string][]float64{}
	var names []string
	for _, s := range test.Series(r) {
		got[s.Name] = s.Values
		names = append(names, s.Name)
	}
	if want := "TCP upload BE|TCP upload EF|TCP upload avg|TCP upload sum|TCP download BK|TCP download avg|TCP download sum|TCP totals|Ping (ms) UDP BE|Ping (ms) ICMP|Ping (ms) avg"; strings.Join(names, "|") != want {
		t.Errorf("series %v\nwant %v", strings.Join(names, "|"), want)
	}
	nan := math.NaN()
	for name, want := range map[string][]float64{
		"TCP upload BE": {nan, 11, 31}, "TCP upload EF": {nan, 2, 4},
		"TCP upload avg": {nan, 6.5, 17.5}, "TCP upload sum": {nan, 13, 35},
		"TCP download BK": {nan, 5, 6}, "TCP download avg": {nan, 5, 6}, "TCP download sum": {nan, 5, 6},
		"TCP totals":       {nan, 18, 41},
		"Ping (ms) UDP BE": {1, 2, nan}, "Ping (ms) ICMP": {nan, 4, 6}, "Ping (ms) avg": {1, 3, 6},
	} {
		for i, w := range want {
			g := got[name][i]
			if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > 1e-9) {
				t.Errorf("%s[%d] = %v, want %v", name, i, g, w)
			}
		}
	}
	if p := test.Params; p != nil {
		t.Errorf("rrul has test parameters")
	}
}
