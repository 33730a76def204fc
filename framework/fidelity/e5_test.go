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
}
