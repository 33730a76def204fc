package plot

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"gonum.org/v1/plot/plotter"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

// small builds a report of n intervals of 1 ms after a 1 ms warmup:
// name, qdisc kind, and per interval tx pps, drops by reason, backlog,
// BLUE p and CoDel's dropping flows.
func small(name, kind string, pps float64, blue bool) *report.Report {
	r := &report.Report{Name: name, Profile: "6.18", Setup: report.Setup{Qdisc: kind, Workload: "udp_stream"},
		DurationNs: 5e6, WarmupNs: 1e6, WindowNs: 4e6,
		Qdisc:      []report.Qdisc{{Handle: "8001:", Parent: "root", Kind: kind}},
		XmitNs:     report.Hist{Count: 100, Buckets: []report.Bucket{{Lo: 512, Hi: 1024, Count: 60}, {Lo: 1024, Hi: 2048, Count: 30}, {Lo: 8192, Hi: 16384, Count: 10}}},
		CPUProfile: []report.ProfileRow{{Activity: "dev_qdisc_enqueue", WorkNs: int64(pps)}, {Activity: "__dev_xmit_skb root lock (pusher)", WorkNs: 1e5, SpinNs: int64(2 * pps)}}}
	r.Window.TxPackets = uint64(pps / 250)
	for i := int64(0); i < 4; i++ {
		iv := report.Interval{StartNs: (1 + i) * 1e6, EndNs: (2 + i) * 1e6, TxPackets: uint64(pps / 1000), TxPps: pps * float64(1+i%2),
			TxBytes: uint64(pps), TxBps: pps * 8000, Backlog: 100 * i, DropsBy: map[string]uint64{"QDISC_DROP": uint64(10 * i)},
			VMStat: report.VMStat{SysPct: 40, SoftPct: 30, IdlePct: 60}}
		if blue {
			iv.BlueP = 0.25 * float64(i)
			iv.CoDelDropping = i
			iv.DropsBy["CAKE_FLOOD"] = uint64(5 * i)
		}
		r.Series = append(r.Series, iv)
	}
	return r
}

func twoVariants() []*report.Report {
	return []*report.Report{small("cake/6.18", "cake", 9e5, true), small("fq_codel/6.19-rc1", "fq_codel", 2e5, false)}
}

// withTCP is the JSON of rs with what tcp_stream runs add: series
// goodput, tcp.flows and latency.
func withTCP(t *testing.T, rs []*report.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSONList(&b, rs); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Variants []map[string]any `json:"variants"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for i, v := range doc.Variants {
		for _, iv := range v["series"].([]any) {
			iv.(map[string]any)["goodput_bps"] = 1e8 * float64(i+1)
		}
		v["tcp"] = map[string]any{"flows": []any{
			map[string]any{"id": 1, "dir": "up", "dscp": 0, "series_bps": []float64{1e8, 2e8, 3e8, 2e8}},
			map[string]any{"id": 2, "dir": "down", "dscp": 46, "series_bps": []float64{5e7, 5e7, 6e7, 4e7}},
		}}
		pc := func(p50 float64) map[string]any {
			m := map[string]any{"p50": p50, "p90": 2 * p50, "p99": 4 * p50, "mean": p50, "samples": 100}
			if i == 0 { // the first run's report has the distribution, the other only percentiles
				m["cdf_ms"] = []float64{p50 / 2, p50, 2 * p50, 4 * p50}
			}
			return m
		}
		v["latency"] = map[string]any{"idle_rtt_ms": pc(0.1), "loaded_rtt_ms": pc(5 * float64(i+1)), "probes": []any{
			map[string]any{"id": 1, "kind": "ping", "dscp": 0, "idle_rtt_ms": pc(0.1), "loaded_rtt_ms": pc(5)},
			map[string]any{"id": 2, "kind": "udp_rr", "dscp": 46, "idle_rtt_ms": pc(0.1), "loaded_rtt_ms": pc(1)},
		}}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func figures(t *testing.T, runs []Run, opt Options) map[string]*Figure {
	t.Helper()
	figs, _, err := Figures(runs, opt)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*Figure{}
	for _, f := range figs {
		if m[f.Name] != nil {
			t.Fatalf("two figures named %s", f.Name)
		}
		m[f.Name] = f
	}
	return m
}

// wellFormedSVG checks b is XML with an <svg> root and returns its text.
func wellFormedSVG(t *testing.T, name string, b []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", name, err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tk.Name.Local
			}
		case xml.CharData:
			text.Write(tk)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", name, root)
	}
	return text.String()
}

// TestEveryKind: each kind is drawn from a small report, every figure is
// a well-formed SVG whose text has its title (the script and the
// variant) and its legend's series names.
func TestEveryKind(t *testing.T) {
	runs, err := Decode(withTCP(t, twoVariants()))
	if err != nil {
		t.Fatal(err)
	}
	figs := figures(t, runs, Options{Script: "scripts/e2.tengo"})
	want := map[string][]string{
		"overview":                          {"cake/6.18", "fq_codel/6.19-rc1"},
		"throughput-pps":                    {"cake/6.18", "fq_codel/6.19-rc1"},
		"throughput-bps":                    {"cake/6.18", "fq_codel/6.19-rc1"},
		"backlog":                           {"cake/6.18", "fq_codel/6.19-rc1"},
		"drops":                             {"cake/6.18", "fq_codel/6.19-rc1"},
		"drops-1-cake-6.18":                 {"CAKE_FLOOD", "QDISC_DROP"},
		"drops-2-fq_codel-6.19-rc1":         {"QDISC_DROP"},
		"xmit-latency":                      {"cake/6.18", "fq_codel/6.19-rc1"},
		"cpu-sys":                           {"cake/6.18", "fq_codel/6.19-rc1"},
		"cpu-1-cake-6.18":                   {"sys", "soft", "idle"},
		"cpu-2-fq_codel-6.19-rc1":           {"sys", "soft", "idle"},
		"cpu-profile":                       {"cake/6.18", "fq_codel/6.19-rc1", "lock spin (lighter)"},
		"blue-p":                            {"cake/6.18"},
		"codel-dropping":                    {"cake/6.18", "fq_codel/6.19-rc1"},
		"goodput":                           {"cake/6.18", "fq_codel/6.19-rc1"},
		"goodput-flows-1-cake-6.18":         {"flow 1 up dscp 0", "flow 2 down dscp 46"},
		"goodput-flows-2-fq_codel-6.19-rc1": {"flow 1 up dscp 0", "flow 2 down dscp 46"},
		"rtt-cdf":                           {"cake/6.18 idle", "cake/6.18 loaded", "fq_codel/6.19-rc1 idle", "fq_codel/6.19-rc1 loaded"},
	}
	for name, labels := range want {
		f := figs[name]
		if f == nil {
			t.Errorf("no figure %s (have %v)", name, keys(figs))
			continue
		}
		if got := f.Labels(); !equalSet(got, labels) {
			t.Errorf("%s: legend %q, want %q", name, got, labels)
		}
		b, err := Render(f, "svg")
		if err != nil {
			t.Fatal(err)
		}
		text := wellFormedSVG(t, name, b)
		for _, l := range append(labels, "scripts/e2.tengo") {
			if !strings.Contains(text, l) {
				t.Errorf("%s: %q not in the SVG's text", name, l)
			}
		}
		if strings.Contains(name, "-1-") && !strings.Contains(text, "cake/6.18") {
			t.Errorf("%s: the title does not name its variant", name)
		}
	}
	if len(figs) != len(want) {
		t.Errorf("figures %v, want %d", keys(figs), len(want))
	}
	// The overview stacks what this report has: pps, backlog, BLUE, CoDel.
	if got := figs["overview"].Panels(); len(got) != 4 {
		t.Errorf("overview panels %q", got)
	}
	// The profile's activities on its axis, most first from the top.
	prof := wellFormedSVG(t, "cpu-profile", must(Render(figs["cpu-profile"], "svg")))
	if i, j := strings.Index(prof, "__dev_xmit_skb root lock (pusher)"), strings.Index(prof, "dev_qdisc_enqueue"); i < 0 || j < 0 || !strings.Contains(prof, "ns a packet sent") {
		t.Errorf("cpu-profile: activities or axis missing from %q", prof)
	}
	// Units on the axes.
	text := wellFormedSVG(t, "throughput-pps", must(Render(figs["throughput-pps"], "svg")))
	for _, s := range []string{"tx (Mpps)", "simulated time (ms)"} {
		if !strings.Contains(text, s) {
			t.Errorf("throughput-pps: no axis %q", s)
		}
	}
}

// TestOneRun: a single run's figures are named by kind alone, titled
// with its variant; kinds without data are skipped and said.
func TestOneRun(t *testing.T) {
	runs, err := FromReports([]*report.Report{small("", "fq_codel", 5e5, false)})
	if err != nil {
		t.Fatal(err)
	}
	figs, skipped, err := Figures(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		if !strings.Contains(f.Title, "profile 6.18 · fq_codel") {
			t.Errorf("%s: title %q", f.Name, f.Title)
		}
	}
	wantNames := []string{"overview", "throughput-pps", "throughput-bps", "backlog", "drops", "xmit-latency", "cpu", "cpu-profile", "codel-dropping"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("figures %v, want %v", names, wantNames)
	}
	if want := []string{"blue-p", "goodput", "goodput-flows", "rtt-cdf"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	// Kinds asked for by name: only those.
	figs, _, err = Figures(runs, Options{Kinds: []string{"cpu", "backlog"}})
	if err != nil || len(figs) != 2 || figs[0].Name != "backlog" || figs[1].Name != "cpu" {
		t.Errorf("kinds cpu,backlog gave %v, %v", figs, err)
	}
	if _, _, err := Figures(runs, Options{Kinds: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `no plot kind "nope"`) {
		t.Errorf("an unknown kind: %v", err)
	}
}

// TestDeterministic: the same report gives the same bytes, SVG and PNG,
// from the Report and from its JSON.
func TestDeterministic(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteJSONList(&b, twoVariants()); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Decode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	fromReports, err := FromReports(twoVariants())
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range Formats {
		a := figures(t, fromJSON, Options{Script: "s.tengo"})
		c := figures(t, fromReports, Options{Script: "s.tengo"})
		for name, f := range a {
			x, y := must(Render(f, format)), must(Render(c[name], format))
			again := must(Render(f, format))
			if !bytes.Equal(x, y) || !bytes.Equal(x, again) {
				t.Errorf("%s.%s: the same report gave different bytes", name, format)
			}
			if format == "png" {
				img, err := png.Decode(bytes.NewReader(x))
				if err != nil {
					t.Fatalf("%s.png: %v", name, err)
				}
				if r := img.Bounds(); r.Dx() < 500 || r.Dy() < 200 {
					t.Errorf("%s.png: %v", name, r)
				}
			}
		}
	}
}

// TestDecodeBadInput: what is not a run's report is a one-line error
// saying why.
func TestDecodeBadInput(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "not a txlab report: invalid JSON at byte 0: unexpected end of JSON input"},
		{"not JSON", "vmstat 1\n", "not a txlab report: invalid JSON at byte 1"},
		{"an array", "[1, 2]", "not a txlab report: a JSON array, not an object"},
		{"another object", `{"a": 1}`, `not a txlab report: no "profile" key`},
		{"no series", `{"profile": "6.18", "setup": {}, "xmit_latency_ns": {}, "window_ns": 1}`, `no "series" key`},
		{"series mistyped", `{"profile": "6.18", "setup": {}, "series": "x", "xmit_latency_ns": {}, "window_ns": 1}`, "series is a JSON string"},
		{"a sweep", `{"format": 1, "grid": [], "rows": []}`, "a sweep's report, not a run's"},
		{"no variants", `{"variants": []}`, "a comparison without variants"},
		{"a bad variant", `{"variants": [{"profile": "x"}]}`, `variant 1: not a txlab report: no "setup" key`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line with %q", err, c.want)
			}
		})
	}
}

// TestWrite: files are written whole, an existing file that differs is
// kept (and named) unless force, the same bytes are fine, a missing
// parent or a wrong target is an error before anything is written.
func TestWrite(t *testing.T) {
	runs, err := FromReports(twoVariants())
	if err != nil {
		t.Fatal(err)
	}
	figs, _, err := Figures(runs, Options{Kinds: []string{"backlog", "throughput-pps"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "plots")
	wrote, err := Write(dir, figs, "svg", false)
	if err != nil || len(wrote) != 2 {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	if _, err := Write(dir, figs, "svg", false); err != nil {
		t.Errorf("the same files again: %v", err)
	}
	backlog := filepath.Join(dir, "backlog.svg")
	if err := os.WriteFile(backlog, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	pps := filepath.Join(dir, "throughput-pps.svg")
	os.Remove(pps)
	if _, err := Write(dir, figs, "svg", false); err == nil || !strings.Contains(err.Error(), backlog+" exists and differs") {
		t.Errorf("a file that differs: %v", err)
	}
	if b, _ := os.ReadFile(backlog); string(b) != "mine" {
		t.Error("a file that differs was replaced without force")
	}
	if _, err := os.Stat(pps); err == nil {
		t.Error("a refused write wrote another file")
	}
	if _, err := Write(dir, figs, "svg", true); err != nil {
		t.Errorf("force: %v", err)
	}
	if b, _ := os.ReadFile(backlog); string(b) == "mine" {
		t.Error("force did not replace the file")
	}
	tmp := t.TempDir()
	aFile := filepath.Join(tmp, "f")
	os.WriteFile(aFile, nil, 0o644)
	bad := []struct {
		target, format, want string
	}{
		{filepath.Join(tmp, "no", "such"), "svg", "its parent " + filepath.Join(tmp, "no") + " does not exist"},
		{aFile, "svg", aFile + ": not a directory"},
		{filepath.Join(tmp, "d"), "jpg", `plot format "jpg": want svg or png`},
		{filepath.Join(tmp, "one.svg"), "svg", "2 figures for one file"},
		{filepath.Join(tmp, "no", "one.png"), "png", "its directory " + filepath.Join(tmp, "no") + " does not exist"},
	}
	for _, c := range bad {
		if _, err := Save(c.target, figs, c.format, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Save(%s, %s): %v, want %q", c.target, c.format, err, c.want)
		}
	}
	// One figure to a file: its extension says the format.
	one := filepath.Join(tmp, "one.png")
	if _, err := Save(one, figs[:1], "svg", false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(one); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Error("FILE.png is not a PNG")
	}
	if _, err := os.Stat(filepath.Join(tmp, "d")); err == nil {
		t.Error("a refused directory was made")
	}
}

// TestHistogramGaps: empty buckets between two listed ones are drawn at
// zero, and the axis labels powers of two as bpftrace does.
func TestHistogramGaps(t *testing.T) {
	runs, _ := FromReports([]*report.Report{small("", "pfifo_fast", 1e5, false)})
	figs := figures(t, runs, Options{Kinds: []string{"xmit-latency"}})
	text := wellFormedSVG(t, "xmit-latency", must(Render(figs["xmit-latency"], "svg")))
	for _, l := range []string{"512", "1K", "2K", "4K", "8K", "16K"} {
		if !strings.Contains(text, l+"\n") {
			t.Errorf("no tick %q", l)
		}
	}
	if got := pow2Label(21); got != "2M" {
		t.Errorf("pow2Label(21) = %q", got)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func keys(m map[string]*Figure) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func equalSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestLongLegend: a legend longer than the figure is cut, and says how
// many entries it left out.
func TestLongLegend(t *testing.T) {
	var rs []*report.Report
	for i := 0; i < 40; i++ {
		rs = append(rs, small(fmt.Sprintf("v%02d", i), "pfifo", 1e5*float64(i+1), false))
	}
	runs, err := FromReports(rs)
	if err != nil {
		t.Fatal(err)
	}
	figs := figures(t, runs, Options{Kinds: []string{"backlog"}})
	text := wellFormedSVG(t, "backlog", must(Render(figs["backlog"], "svg")))
	if !strings.Contains(text, "v00") || strings.Contains(text, "v39") || !strings.Contains(text, "more") {
		t.Errorf("a 40-entry legend on one panel: v00 %v, v39 %v, 'more' %v", strings.Contains(text, "v00"), strings.Contains(text, "v39"), strings.Contains(text, "more"))
	}
	if len(figs["backlog"].Labels()) != 40 {
		t.Errorf("Labels %d, want all 40", len(figs["backlog"].Labels()))
	}
}

// TestBondQdiscs: a qdisc on a stacked host's device (a bond's slave)
// counts as the run's for the state figures.
func TestBondQdiscs(t *testing.T) {
	r := small("", "noqueue", 1e5, false)
	r.Qdisc = []report.Qdisc{{Handle: "0:", Parent: "root", Kind: "noqueue"}}
	r.Devices = []report.DeviceSection{{Name: "eth0", Kind: "i40e", Qdisc: []report.Qdisc{{Handle: "1:", Parent: "root", Kind: "fq_codel"}}}}
	runs, err := FromReports([]*report.Report{r})
	if err != nil {
		t.Fatal(err)
	}
	if figs := figures(t, runs, Options{Kinds: []string{"codel-dropping"}}); figs["codel-dropping"] == nil {
		t.Error("fq_codel on a slave: no codel-dropping figure")
	}
}

// The RTT CDF is the report's distribution as an empirical CDF (flent's
// ping_cdf): 0 below the smallest sample, point j of k at (j+1)/k from
// its value on, 1 at the largest; a report with only percentiles gives
// its three points.
func TestCDFXY(t *testing.T) {
	xy, step := cdfXY(Percentiles{P50: 2, P90: 3, P99: 9, Samples: 4, CDF: []float64{1, 2, 2, 9}})
	want := plotter.XYs{{X: 1, Y: 0}, {X: 1, Y: 0.25}, {X: 2, Y: 0.5}, {X: 2, Y: 0.75}, {X: 9, Y: 1}}
	if !step || !slices.Equal(xy, want) {
		t.Errorf("cdfXY = %v, %v; want %v as steps", xy, step, want)
	}
	xy, step = cdfXY(Percentiles{P50: 2, P90: 3, P99: 9, Samples: 4})
	if want := (plotter.XYs{{X: 2, Y: 0.5}, {X: 3, Y: 0.9}, {X: 9, Y: 0.99}}); step || !slices.Equal(xy, want) {
		t.Errorf("cdfXY without cdf_ms = %v, %v; want %v as points", xy, step, want)
	}
}
