package fidelity

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

// e5Rep is a variant's report with the figures E5 reads.
func e5Rep(name string, gbps, upGbps, p50, p99, busy float64, holdNs int64) *report.Report {
	g, up := gbps*1e9, upGbps*1e9
	return &report.Report{Name: name, GoodputBps: &g, CPUBusyPct: busy,
		Latency: &report.Latency{Idle: report.Percentiles{P50: 0.05}, Loaded: report.Percentiles{P50: p50, P99: p99}},
		TCP:     &report.TCP{UpBps: up, DownBps: g - up},
		Locks:   []report.Lock{{Name: "net_tx_action (root_lock)", Acquired: 10, HoldNs: 10 * holdNs}}}
}

// E5's rows: per mode and test, net-next against the fix, the loaded
// RTT judged on p50 and p99 both higher, the upload goodput on a loss
// of over 1%; the why names cake_clear_tin and the tins it walks; a cell
// without its two variants is "not run".
func TestE5(t *testing.T) {
	var reps []*report.Report
	for _, m := range []string{"be", "ds3"} {
		// be-nup: clearing worse in RTT, equal goodput; be-rrul: worse
		// in both; ds3-nup: p99 worse, p50 better; ds3-rrul: not run.
		switch m {
		case "be":
			reps = append(reps,
				e5Rep(E5Variant(E5NetNext, m, "nup"), 1.913, 1.913, 0.084, 0.127, 10.5, 6000),
				e5Rep(E5Variant(E5Fix, m, "nup"), 1.913, 1.913, 0.080, 0.099, 3.8, 160),
				e5Rep(E5Variant(E5NetNext, m, "rrul"), 3.146, 1.300, 3.80, 5.04, 9.8, 3500),
				e5Rep(E5Variant(E5Fix, m, "rrul"), 3.221, 1.378, 3.68, 4.85, 6.0, 80),
				e5Rep(E5Variant(E5Cake, m, "rrul"), 3.496, 1.661, 3.67, 4.76, 6.2, 270))
		case "ds3":
			reps = append(reps,
				e5Rep(E5Variant(E5NetNext, m, "nup"), 1.913, 1.913, 0.078, 0.102, 8.3, 4200),
				e5Rep(E5Variant(E5Fix, m, "nup"), 1.913, 1.913, 0.080, 0.099, 3.8, 160))
		}
	}
	rows := E5(reps)
	byName := map[string]Row{}
	for _, r := range rows {
		byName[r.Name] = r
		if r.Experiment != "E5" {
			t.Errorf("%s: experiment %q", r.Name, r.Experiment)
		}
	}
	for _, tt := range []struct {
		name  string
		holds bool
		model string
	}{
		{"loaded RTT, clearing vs fix (be-nup)", true, "p50 0.080 -> 0.084, p99 0.099 -> 0.127 ms (p99 1.28x)"},
		{"loaded RTT, clearing vs fix (be-rrul)", true, "p99 4.850 -> 5.040"},
		{"loaded RTT, clearing vs fix (ds3-nup)", false, "p50 0.080 -> 0.078"},
		{"upload goodput, clearing vs fix (be-nup)", false, "up 1913 -> 1913 Mbit/s (1.000x)"},
		{"upload goodput, clearing vs fix (be-rrul)", true, "up 1378 -> 1300 Mbit/s (0.943x); all 3221 -> 3146"},
		{"upload goodput, clearing vs fix (ds3-nup)", false, "up 1913 -> 1913"},
	} {
		r, ok := byName[tt.name]
		if !ok {
			t.Fatalf("no row %q in %v", tt.name, rows)
		}
		if r.Holds != tt.holds || !strings.Contains(r.Model, tt.model) || !r.Judged() {
			t.Errorf("%s: holds %v model %q, want %v and %q", tt.name, r.Holds, r.Model, tt.holds, tt.model)
		}
		if !strings.Contains(r.Why, "cake_clear_tin on each rate adjustment") {
			t.Errorf("%s: why %q", tt.name, r.Why)
		}
	}
	if w := byName["upload goodput, clearing vs fix (be-nup)"].Why; !strings.Contains(w, "7 unused tins (besteffort) x 1024 flows") ||
		!strings.Contains(w, "root-lock hold 0.16 us -> 6.00 us") || !strings.Contains(w, "the cost is CPU, not goodput") {
		t.Errorf("be-nup goodput why: %q", w)
	}
	if w := byName["loaded RTT, clearing vs fix (ds3-nup)"].Why; !strings.Contains(w, "5 unused tins (diffserv3)") {
		t.Errorf("ds3 why: %q", w)
	}
	if r := byName["loaded RTT, clearing vs fix (ds3-rrul)"]; r.Model != "not run" || r.Holds || !strings.Contains(r.Why, "net-next-ds3-rrul, fix-ds3-rrul") {
		t.Errorf("a cell without its variants: %+v", r)
	}
	if r := byName["plain cake vs cake_mq with the fix (be-rrul)"]; r.Judged() || !strings.Contains(r.Model, "upload goodput 1661 vs 1378") {
		t.Errorf("plain cake row: %+v", r)
	}
	if held, judged := Held(rows); judged != 7 || held != 3 {
		t.Errorf("%d of %d hold, want 3 of 7 (the missing cell's RTT row judged, its goodput row absent)", held, judged)
	}
	// Uploads under the shaped rate that rise with the clearing are
	// cake_mq's rate split, not a full shaper.
	up := E5([]*report.Report{
		e5Rep(E5Variant(E5NetNext, "be", "rrul"), 3.46, 1.625, 3.80, 5.04, 8.7, 2400),
		e5Rep(E5Variant(E5Fix, "be", "rrul"), 3.28, 1.443, 3.68, 4.85, 5.7, 90)})
	for _, r := range up {
		if r.Name == "upload goodput, clearing vs fix (be-rrul)" &&
			(r.Holds || !strings.Contains(r.Why, "rate / active queues") || strings.Contains(r.Why, "still fills")) {
			t.Errorf("rising uploads under the shaped rate: %+v", r)
		}
	}
}

// Over several seeds an E5 difference holds only in the claimed
// direction in every seed with its mean above twice its standard error:
// be-nup's RTT rises by 5-6% in each seed and holds; ds3-nup's by 40%
// and 30% but falls 1% in the third seed, and does not;
// be-rrul's rises in seed 1 alone (+2%, -3%, +1%) and does not, though
// the text shows seed 1's figures; be-rrul's goodput falls 4-6% in each
// and holds.
func TestE5Seeds(t *testing.T) {
	var reps []*report.Report
	add := func(seed uint64, test string, nnP99, fxP99, nnUp, fxUp float64) {
		nn := e5Rep(E5Variant(E5NetNext, "be", test), nnUp+1, nnUp, nnP99*0.8, nnP99, 10, 6000)
		fx := e5Rep(E5Variant(E5Fix, "be", test), fxUp+1, fxUp, fxP99*0.8, fxP99, 4, 160)
		nn.Seed, fx.Seed = seed, seed
		reps = append(reps, nn, fx)
	}
	for i, d := range []struct{ nup, rrul, up float64 }{{1.05, 1.02, 0.95}, {1.06, 0.97, 0.96}, {1.055, 1.01, 0.94}} {
		add(uint64(i+1), "nup", 0.1*d.nup, 0.1, 1.9, 1.9)
		add(uint64(i+1), "rrul", 4*d.rrul, 4, 1.4*d.up, 1.4)
	}
	// ds3-nup: a large mean, but one seed the other way.
	for i, d := range []float64{1.40, 1.30, 0.99} {
		nn := e5Rep(E5Variant(E5NetNext, "ds3", "nup"), 2.9, 1.9, 0.08*d, 0.1*d, 10, 6000)
		fx := e5Rep(E5Variant(E5Fix, "ds3", "nup"), 2.9, 1.9, 0.08, 0.1, 4, 160)
		nn.Seed, fx.Seed = uint64(i+1), uint64(i+1)
		reps = append(reps, nn, fx)
	}
	byName := map[string]Row{}
	for _, r := range E5(reps) {
		byName[r.Name] = r
	}
	for _, tt := range []struct {
		name  string
		holds bool
		model string
	}{
		{"loaded RTT, clearing vs fix (ds3-nup)", false, "3 seeds: p50 +40.0% +30.0% -1.0%"},
		{"loaded RTT, clearing vs fix (be-nup)", true, "p99 0.100 -> 0.105 ms (p99 1.05x); 3 seeds: p50 +5.0% +6.0% +5.5%, p99 +5.0% +6.0% +5.5%"},
		{"loaded RTT, clearing vs fix (be-rrul)", false, "p99 4.000 -> 4.080 ms (p99 1.02x); 3 seeds: p50 +2.0% -3.0% +1.0%"},
		{"upload goodput, clearing vs fix (be-rrul)", true, "up 1400 -> 1330 Mbit/s (0.950x); all 2400 -> 2330; 3 seeds: -5.0% -4.0% -6.0%"},
		{"upload goodput, clearing vs fix (be-nup)", false, "3 seeds: +0.0% +0.0% +0.0%"},
	} {
		r := byName[tt.name]
		if r.Holds != tt.holds || !strings.Contains(r.Model, tt.model) {
			t.Errorf("%s: holds %v model %q, want %v and %q", tt.name, r.Holds, r.Model, tt.holds, tt.model)
		}
	}
	if tol := byName["loaded RTT, clearing vs fix (be-rrul)"].Tolerance; tol != "p50 and p99 higher in every seed, the mean by over 2 standard errors" {
		t.Errorf("tolerance %q", tol)
	}
}
