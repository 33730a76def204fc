package fidelity

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

// e3Report is one E3 run: its rate, its __netif_schedule callers, NET_TX
// raises and net_tx_action's root-lock waits.
func e3Report(seed uint64, fast string, mpps float64, callers []report.SchedCaller, raised uint64, waitAvg, waitTotal int64) *report.Report {
	r := &report.Report{Name: "fast_path=" + fast, Profile: "6.19-rc1", Seed: seed, TxPps: mpps * 1e6, TxPackets: 1000,
		Config: map[string]string{"fast_path": fast}, Counters: map[string]uint64{"net_tx_softirq_raised": raised},
		NetifSchedule: callers}
	r.Locks = []report.Lock{{Name: "net_tx_action (root_lock)", Contended: 10, AvgWaitNs: waitAvg, TotalWaitNs: waitTotal,
		MCSContended: 4, MCSAvgWaitNs: waitAvg, MCSTotalWaitNs: 4 * waitAvg}}
	r.Queues = []report.Queue{{Requeues: 40}}
	r.Window = report.Window{OfferedPackets: 1000, TxPackets: 1000} // fq dropped nothing, as the NIC's tc -s
	return r
}

// The seed's E3 as the model would have to show it: completions the main
// caller, fewer raises and waits with the fast path, a 13.7% gain.
func seedE3(seeds int, gains ...float64) []*report.Report {
	compl := []report.SchedCaller{{Caller: "bql_wake", Calls: 600}, {Caller: "drv_wake", Calls: 200}, {Caller: "quota", Calls: 200}}
	var reps []*report.Report
	for s := 1; s <= seeds; s++ {
		g := seedE3OnPps/seedE3OffPps - 1
		if len(gains) > 0 {
			g = gains[s-1]
		}
		reps = append(reps, e3Report(uint64(s), "off", 52.19, compl, 900, seedTxActionWaitNs, 5_000_000),
			e3Report(uint64(s), "on", 52.19*(1+g), compl, 100, seedTxActionWaitNs, 500_000))
	}
	return reps
}

func TestE3SeedHoldsAgainstItself(t *testing.T) {
	runs, err := FindE3(seedE3(3, 0.137, 0.13, 0.14))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range E3(runs) {
		if r.Judged() && !r.Holds {
			t.Errorf("%s: seed %s, model %s does not hold (%s)", r.Name, r.Seed, r.Model, r.Tolerance)
		}
	}
}

// Each tolerance fails the rows it should.
func TestE3Tolerances(t *testing.T) {
	tests := []struct {
		name   string
		reps   []*report.Report
		change func(reps []*report.Report)
		fail   string
	}{
		{"gain inside the noise", seedE3(3, 0.05, -0.04, 0.02), nil, "tx pps, fast path on / off"},
		{"a loss", seedE3(3, -0.03, -0.02, -0.04), nil, "tx pps, fast path on / off"},
		{"one seed, a small gain", seedE3(1, 0.005), nil, "tx pps, fast path on / off"},
		{"quota the main caller", seedE3(1), func(reps []*report.Report) {
			reps[0].NetifSchedule = []report.SchedCaller{{Caller: "quota", Calls: 980}, {Caller: "bql_wake", Calls: 20}}
		}, "__netif_schedule from TX completions, off"},
		{"more raises with the fast path", seedE3(1), func(reps []*report.Report) { reps[1].Counters["net_tx_softirq_raised"] = 1000 },
			"NET_TX_SOFTIRQ raised, on / off"},
		{"short waits", seedE3(1), func(reps []*report.Report) { reps[0].Locks[0].MCSAvgWaitNs = 2000 }, "net_tx_action root-lock wait, off"},
		{"short waits of every waiter do not decide", seedE3(1), func(reps []*report.Report) { reps[0].Locks[0].AvgWaitNs = 2000 }, "(no row)"},
		{"more waiting with the fast path", seedE3(1), func(reps []*report.Report) { reps[1].Locks[0].TotalWaitNs = 6_000_000 },
			"net_tx_action root-lock wait in total, on / off"},
		{"fq drops", seedE3(1), func(reps []*report.Report) {
			reps[0].Window = report.Window{OfferedPackets: 10000, Drops: map[string]uint64{"FQ_FLOW_LIMIT": 20, "RX_MISSED": 5}}
		}, "fq's drops, off"},
		{"drops elsewhere are not fq's", seedE3(1), func(reps []*report.Report) {
			reps[0].Window = report.Window{OfferedPackets: 10000, Drops: map[string]uint64{"QDISC_DROP": 500}}
		}, "(no row)"},
		{"no window, no verdict", seedE3(1), func(reps []*report.Report) { reps[0].Window = report.Window{} }, "(no row)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != nil {
				tc.change(tc.reps)
			}
			runs, err := FindE3(tc.reps)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range E3(runs) {
				if !r.Judged() {
					continue
				}
				if want := strings.HasPrefix(r.Name, tc.fail); r.Holds == want {
					t.Errorf("%s: holds %v (model %s, %s)", r.Name, r.Holds, r.Model, r.Tolerance)
				}
			}
		})
	}
}

// FindE3 pairs off and on by seed and refuses reports without a pair.
func TestFindE3(t *testing.T) {
	reps := seedE3(2)
	reps = append(reps[:3], e3Report(9, "on", 1, nil, 0, 0, 0)) // seed 2 has no "on"; seed 9 no "off"
	runs, err := FindE3(reps)
	if err != nil || len(runs) != 1 || runs[0].Seed != 1 {
		t.Fatalf("%+v, %v: want seed 1's pair only", runs, err)
	}
	if _, err := FindE3(reps[2:]); err == nil || !strings.Contains(err.Error(), "E3 needs the variants fast_path=off and fast_path=on") {
		t.Errorf("no pair: %v", err)
	}
}

// TestOfferWhy: the gain row's why line gives what the senders offered
// against what was sent in the window, and fq's flow-limit share of it.
func TestOfferWhy(t *testing.T) {
	for _, tc := range []struct {
		w    report.Window
		want string
	}{
		{report.Window{OfferedPackets: 300, TxPackets: 200, Drops: map[string]uint64{"FQ_FLOW_LIMIT": 75}},
			"senders offered 1.50 a packet sent, FQ_FLOW_LIMIT dropped 25% of it"},
		{report.Window{OfferedPackets: 100, TxPackets: 100}, "senders offered 1.00 a packet sent, FQ_FLOW_LIMIT dropped 0% of it"},
		{report.Window{}, "senders offered 0.00 a packet sent, FQ_FLOW_LIMIT dropped 0% of it"},
	} {
		if got := offerWhy(&report.Report{Window: tc.w}); got != tc.want {
			t.Errorf("offerWhy(%+v) = %q, want %q", tc.w, got, tc.want)
		}
	}
}

// A report without a window gives fq's drops no verdict: 0 of 0 is not
// "none dropped".
func TestFQDropsRowNeedsAWindow(t *testing.T) {
	r := e3Report(1, "off", 50, nil, 0, 0, 0)
	r.Window = report.Window{}
	if row := fqDropsRow(r, ""); row.Judged() || row.Holds {
		t.Errorf("no window: %+v, want no verdict", row)
	}
	r.Window = report.Window{OfferedPackets: 1000, Drops: map[string]uint64{"FQ_FLOW_LIMIT": 2}}
	if row := fqDropsRow(r, ""); !row.Judged() || row.Holds {
		t.Errorf("0.2%% dropped: %+v, want judged, not held", row)
	}
}
