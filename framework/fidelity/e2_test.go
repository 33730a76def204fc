package fidelity

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/script"
	"github.com/txlab/txlab/scripts"
)

// fake is a report of a variant whose rate goes from start to end over
// ten 100 ms intervals after a 30 ms warmup, with BLUE's p rising to p.
func fake(name string, start, end, p float64, drops map[string]uint64) *report.Report {
	r := &report.Report{Name: name, WarmupNs: 30e6, WindowNs: 1e9, DurationNs: 1030e6,
		Window: report.Window{OfferedPackets: 5e6, Drops: drops}}
	r.Series = append(r.Series, report.Interval{StartNs: 0, EndNs: 30e6, TxPps: start})
	for i := 0; i < 10; i++ {
		pps := start + (end-start)*float64(i)/9
		r.Series = append(r.Series, report.Interval{StartNs: 30e6 + int64(i)*100e6, EndNs: 130e6 + int64(i)*100e6,
			TxPps: pps, TxPackets: uint64(pps / 10), BlueP: p * float64(i) / 9})
	}
	r.TxPps = (start + end) / 2
	r.Window.TxPackets = uint64(r.TxPps)
	r.Locks = []report.Lock{{Name: siteEnqueue, HoldNs: 4e8}, {Name: siteDirect, HoldNs: 3e8, Contended: 10, TotalWaitNs: 5000}}
	return r
}

// cakeMemory is a root cake's tc -s with memory_used used of the
// default 10240-packet limit.
func cakeMemory(used int64) []report.Qdisc {
	return []report.Qdisc{{Kind: "cake", XStats: []report.XStat{
		{Key: "memory_used", Value: json.Number(strconv.FormatInt(used, 10))},
		{Key: "memory_limit", Value: "15503360"},
	}}}
}

// E2b.12 holds when the queue stays below cake's memory limit before the
// llist and reaches it after; without cake's statistics it is no verdict.
func TestE2bFillRow(t *testing.T) {
	for _, tc := range []struct {
		pre, ll []report.Qdisc
		holds   bool
		judged  bool
	}{
		{cakeMemory(8916480), cakeMemory(15504576), true, true},   // Jonas's 10-s runs
		{cakeMemory(8916480), cakeMemory(15503616), true, true},   // 256 bytes over: it dropped
		{cakeMemory(8916480), cakeMemory(15503360), false, true},  // at the limit, never over it: cake never dropped
		{cakeMemory(14700000), cakeMemory(15504576), true, true},  // 94.8% before
		{cakeMemory(14800000), cakeMemory(15504576), false, true}, // 95.5% before: all but full
		{cakeMemory(15503616), cakeMemory(15504576), false, true}, // full before too (his two-minute baseline)
		{nil, nil, false, false},                                  // not cake
		{cakeMemory(8916480), nil, false, false},                  // the llist run's root is not cake
	} {
		pre, ll := fake(E2bPre, 1e6, 1e6, 0, nil), fake(E2bLlist, 0.6e6, 0.2e6, 1, nil)
		pre.Qdisc, ll.Qdisc = tc.pre, tc.ll
		r := fillRow(pre, ll)
		if r.Holds != tc.holds || r.Judged() != tc.judged {
			t.Errorf("pre %v, llist %v: %+v, want holds %v, judged %v", tc.pre, tc.ll, r, tc.holds, tc.judged)
		}
	}
	if r := fillRow(nil, fake(E2bLlist, 1, 1, 0, nil)); r.Model != "not run" || r.Holds {
		t.Errorf("without the pre-llist run: %+v", r)
	}
}

// E2b.13 holds when cake_drop's QDISC_OVERLIMIT and BLUE's CAKE_FLOOD
// are the llist run's two largest kfree_skb reasons, 90% of them; the
// NIC's RX_MISSED is not one.
func TestE2bDropReasonsRow(t *testing.T) {
	for _, tc := range []struct {
		drops map[string]uint64
		holds bool
	}{
		{map[string]uint64{"RX_MISSED": 9e6, "CAKE_FLOOD": 2e6, "QDISC_OVERLIMIT": 5e5, "QDISC_CONGESTED": 300}, true},
		{map[string]uint64{"QDISC_OVERLIMIT": 2e6, "CAKE_FLOOD": 5e5}, true},
		{map[string]uint64{"QDISC_OVERLIMIT": 2e6}, false},                                       // no BLUE
		{map[string]uint64{"CAKE_FLOOD": 2e6, "QDISC_DROP": 1e6, "QDISC_OVERLIMIT": 5e5}, false}, // the defer bound second
		{map[string]uint64{"CAKE_FLOOD": 1e6, "QDISC_OVERLIMIT": 1e6, "QDISC_DROP": 3e5}, false}, // 87%
		{map[string]uint64{"RX_MISSED": 9e6}, false},
	} {
		ll := fake(E2bLlist, 0.6e6, 0.2e6, 1, nil)
		ll.Window.Drops = tc.drops
		if r := dropReasonsRow(ll); r.Holds != tc.holds || !r.Judged() {
			t.Errorf("drops %v: %+v, want judged, holds %v", tc.drops, r, tc.holds)
		}
	}
	if r := dropReasonsRow(nil); r.Model != "not run" || r.Holds {
		t.Errorf("without the llist run: %+v", r)
	}
}

// E2b.14 holds when each llist run's arrivals at __dev_xmit_skb are
// within 25% of Jonas's ratio to the pre-llist run's (tc -s: 1.59x,
// 1.62x, 1.60x); the model's DUT feeding cake 2.4x as much fails it.
func TestE2bArrivalsRow(t *testing.T) {
	for _, tc := range []struct {
		counts []uint64
		holds  bool
	}{
		{[]uint64{468e3, 746e3, 760e3, 750e3}, true},
		{[]uint64{979e3, 2330e3, 2243e3, 2200e3}, false}, // the model's at session 39
		{[]uint64{468e3, 746e3, 460e3, 750e3}, false},    // one run no faster than before
		{[]uint64{0, 746e3, 760e3, 750e3}, false},
	} {
		var runs []*report.Report
		for i, name := range []string{E2bPre, E2bLlist, E2bDeqDrop, E2bBound} {
			r := fake(name, 1e6, 1e6, 0, nil)
			r.XmitNs.Count = tc.counts[i]
			runs = append(runs, r)
		}
		if r := arrivalsRow(runs...); r.Holds != tc.holds || !r.Judged() {
			t.Errorf("%v: %+v, want judged, holds %v", tc.counts, r, tc.holds)
		}
	}
	if r := arrivalsRow(fake(E2bPre, 1, 1, 0, nil), nil, nil, nil); r.Model != "not run" || r.Holds {
		t.Errorf("without the llist runs: %+v", r)
	}
}

func rowByID(t *testing.T, rows []Row, id string) Row {
	t.Helper()
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %s in %+v", id, rows)
	return Row{}
}

// The rows judge what the reports show, each against its own criterion,
// and a missing variant makes its row "not run", never a pass.
func TestE2bRows(t *testing.T) {
	reps := []*report.Report{
		fake(E2bPre, 1.1e6, 1.1e6, 0, map[string]uint64{"RX_MISSED": 1e6}),
		fake(E2bLlist, 1.8e6, 0.15e6, 1, map[string]uint64{"CAKE_FLOOD": 2e6}),
		fake(E2bDeqDrop, 1.8e6, 0.60e6, 0.98, nil),
		fake(E2bBound, 1.8e6, 0.65e6, 0.97, nil),
		fake(E2bNoBlue, 1.9e6, 1.9e6, 0, nil),
	}
	// The llist run's CPU profile in Jonas's proportions (units of 1e6
	// ns: __dev_queue_xmit 53.37 of them).
	reps[1].CPUProfile = []report.ProfileRow{
		{Activity: netdev.ActPusher, SpinNs: 16.49e6}, {Activity: netdev.ActRun, WorkNs: 1e6, SpinNs: 12.01e6},
		{Activity: netdev.ActEnqueue, WorkNs: 10e6}, {Activity: netdev.ActDequeue, WorkNs: 6.91e6},
		{Activity: netdev.ActDriver, WorkNs: 1.10e6}, {Activity: netdev.ActXmit, WorkNs: 5.86e6},
		{Activity: "softirq NET_RX", WorkNs: 40e6}, // outside __dev_queue_xmit: no effect
	}
	reps[0].Qdisc, reps[1].Qdisc = cakeMemory(8916480), cakeMemory(15504576) // Jonas's tc -s
	reps[1].Window.Drops = map[string]uint64{"RX_MISSED": 9e6, "CAKE_FLOOD": 2e6, "QDISC_OVERLIMIT": 5e5, "QDISC_CONGESTED": 300}
	// Arrivals at __dev_xmit_skb over the 1 s window, Jonas's 1.6x.
	for i, n := range []uint64{468e3, 746e3, 760e3, 750e3, 760e3} {
		reps[i].XmitNs.Count = n
	}
	// The pre-llist run's dequeuer spins as Jonas's did before the llist.
	reps[0].CPUProfile = []report.ProfileRow{{Activity: netdev.ActRun, WorkNs: 1e6, SpinNs: 5.68e6}}
	rows := E2b(reps)
	if len(rows) != 16 {
		t.Fatalf("%d rows, want 16", len(rows))
	}
	if r := rowByID(t, rows, "E2b.15"); r.Judged() || !strings.Contains(r.Model, "ends before its 3rd second") {
		t.Errorf("E2b.15 on a 1-second run is no verdict: %+v", r)
	}
	if r := rowByID(t, rows, "E2b.8"); r.Ratio < 0.999 || r.Ratio > 1.001 || r.Kind != Check {
		t.Errorf("E2b.8, sch_direct_xmit's spin in Jonas's proportions: %+v", r)
	}
	for _, r := range rows {
		if r.Judged() && !r.Holds {
			t.Errorf("%s %s: %s does not hold (%s)", r.ID, r.Name, r.Model, r.Why)
		}
	}
	if w := rowByID(t, rows, "E2b.3").Why; !strings.Contains(w, "(0.99 by 1s)") || !strings.Contains(w, "BLUE is the collapse") {
		t.Errorf("E2b.3's mechanism %q should say when p reached 0.99 and that BLUE is the cause", w)
	}
	// The dequeuer hardly spinning breaks the spin rows only.
	reps[1].CPUProfile[1].SpinNs = 2e6
	for _, r := range E2b(reps)[6:] {
		if r.Judged() && r.Holds == (r.ID == "E2b.8" || r.ID == "E2b.16") {
			t.Errorf("%s %s with sch_direct_xmit spinning 2 of 43: holds %v (%s)", r.ID, r.Name, r.Holds, r.Model)
		}
	}
	// Swap the mitigations: the order breaks. A collapsed BLUE-off run
	// says the collapse is root-lock saturation.
	reps[2], reps[3] = fake(E2bDeqDrop, 1.8e6, 0.65e6, 0.98, nil), fake(E2bBound, 1.8e6, 0.60e6, 0.97, nil)
	reps[4] = fake(E2bNoBlue, 1.9e6, 0.1e6, 0, nil)
	rows = E2b(reps)
	if rowByID(t, rows, "E2b.1").Holds || rowByID(t, rows, "E2b.6").Holds {
		t.Errorf("order and BLUE-off rows hold on reports that break them: %+v", rows)
	}
	if r := rowByID(t, rows, "E2b.3"); !strings.Contains(r.Why, "not BLUE") || r.Holds || !strings.Contains(r.Model, "not by BLUE") {
		t.Errorf("E2b.3 with BLUE off collapsing too should blame the root lock and not hold: %+v", r)
	}
	// Drops in the stack above 1% of sent fail E2b.2.
	reps[0] = fake(E2bPre, 1.1e6, 1.1e6, 0, map[string]uint64{"QDISC_OVERLIMIT": 50000})
	if r := rowByID(t, E2b(reps), "E2b.2"); r.Holds {
		t.Errorf("E2b.2 holds with 50000 drops in cake: %+v", r)
	}
	// A run too short for BLUE to climb says so.
	short := fake(E2bLlist, 1.8e6, 1.8e6, 0.03, nil)
	short.DurationNs = 36e6
	if w := blueTrace(short); !strings.Contains(w, "longer than this run") {
		t.Errorf("a 36 ms run's BLUE trace %q should say p cannot reach 1 in it", w)
	}
	if w := blueTrace(reps[1]); strings.Contains(w, "longer than this run") {
		t.Errorf("a run where p reached 1 says it could not: %q", w)
	}
	rows = E2b(reps[:1])
	if r := rowByID(t, rows, "E2b.1"); r.Holds || r.Model != "not run" {
		t.Errorf("a missing variant: %+v", r)
	}
}

func TestE2Rows(t *testing.T) {
	reps := []*report.Report{
		fake(E2Cake618, 1.0e6, 1.0e6, 0, nil),
		fake(E2CakeLlist, 0.5e6, 0.01e6, 1, nil),
		fake(E2CakeNoBlue, 0.7e6, 0.7e6, 0, nil),
		fake(E2Burst8, 0.3e6, 0.3e6, 0.5, nil),
		fake(E2Burst256, 0.01e6, 0.01e6, 0.5, nil),
		fake(E2FqCodel618, 1e6, 1e6, 0, nil),
		fake(E2FqCodelRc1, 0.9e6, 0.9e6, 0, nil),
		fake(E2Sfq618, 1e6, 1e6, 0, nil),
		fake(E2SfqRc1, 0.5e6, 0.5e6, 0, nil),
		fake(E2Netem618, 1e6, 1e6, 0, nil),
		fake(E2NetemRc1, 0.85e6, 0.85e6, 0, nil),
	}
	rows := E2(reps)
	want := map[string]bool{"E2.1": true, "E2.2": true, "E2.3": true, "E2.4": true, "E2.5": false, "E2.6": false, "E2.7": true, "E2.8": true, "E2.9": false}
	for _, r := range rows {
		if r.Holds != want[r.ID] {
			t.Errorf("%s %s: holds %v, want %v (%s)", r.ID, r.Name, r.Holds, want[r.ID], r.Model)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	if r := rowByID(t, rows, "E2.6"); r.Kind != Check {
		t.Errorf("E2.6, the dropwatch's places, is a check, never judged: %+v", r)
	}
	// BLUE off falling 3-4x while the llist run falls further: both
	// mechanisms, and the row does not hold.
	both := slices.Clone(reps)
	both[1], both[2] = fake(E2CakeLlist, 1e6, 0.01e6, 1, nil), fake(E2CakeNoBlue, 1e6, 0.25e6, 0, nil)
	if r := rowByID(t, E2(both), "E2.1"); r.Holds || !strings.Contains(r.Why, "with BLUE off it collapses too (") ||
		!strings.Contains(r.Why, "(not BLUE); BLUE's drops at dequeue take the llist run 4x further") {
		t.Errorf("E2.1 with BLUE off falling 4x and the llist run 100x: %+v", r)
	}
	// E2.9 sets the llist run's queues beside Toke's: the busiest over
	// the idlest, or an idlest that sent nothing.
	reps[1].Queues = []report.Queue{{Txq: 0, TxPps: 300}, {Txq: 1, TxPps: 30}, {Txq: 2, TxPps: 3000}}
	if r := rowByID(t, E2(reps), "E2.9"); r.Kind != Check || !strings.Contains(r.Model, "3 queues from 30 pps to 3 Kpps (busiest / idlest 100.0x)") || !strings.Contains(r.Seed, "133x") {
		t.Errorf("E2.9: %+v", r)
	}
	reps[1].Queues[1].TxPps = 0
	if r := rowByID(t, E2(reps), "E2.9"); !strings.Contains(r.Model, "the idlest sent nothing") {
		t.Errorf("E2.9 with a queue at 0: %s", r.Model)
	}
	// The fq_codel row says how the dequeuer shares the lock with the
	// drainers: turns per drain and skbs a turn.
	reps[6].Locks = []report.Lock{{Name: siteEnqueue, HoldNs: 9e8, Acquired: 1000}, {Name: siteDirect, HoldNs: 5e7, Acquired: 900}}
	reps[6].Window.TxPackets = 8100
	if w := rowByID(t, E2(reps), "E2.4").Why; !strings.Contains(w, "0.90 times a drain, sending 9.0 skbs a turn") {
		t.Errorf("E2.4's mechanism %q should give the dequeuer's turns per drain", w)
	}
	// E2.2 gives the knee: the enqueue side's hold per packet arriving
	// times the arrival (0.9 of the window's lock over 5 Mpps).
	reps[2].Locks = []report.Lock{{Name: siteEnqueue, HoldNs: 9e8}}
	if w := rowByID(t, E2(reps), "E2.2").Why; !strings.Contains(w, "180 ns a packet arriving x 5 Mpps = 0.90") {
		t.Errorf("E2.2's mechanism %q should give the enqueue side's hold per packet and the arrival", w)
	}
	// A rate that fell to nothing is the deepest collapse, never "0x":
	// E2.3 holds; BLUE off collapsed to 0 pps does not, and then E2.1's
	// collapse is not BLUE's: it does not hold either.
	reps[1], reps[2], reps[4] = fake(E2CakeLlist, 0.5e6, 0, 1, nil), fake(E2CakeNoBlue, 0, 0, 0, nil), fake(E2Burst256, 0, 0, 0.5, nil)
	rows = E2(reps)
	for id, holds := range map[string]bool{"E2.1": false, "E2.2": false, "E2.3": true, "E2.7": true} {
		if r := rowByID(t, rows, id); r.Holds != holds || strings.Contains(r.Model, "0x") {
			t.Errorf("%s on a rate of 0: holds %v, want %v (%s)", id, r.Holds, holds, r.Model)
		}
	}
	if r := rowByID(t, rows, "E2.1"); !strings.Contains(r.Model, "not by BLUE") {
		t.Errorf("E2.1 collapsing with BLUE off too should say it is not BLUE's: %s", r.Model)
	}
	// Without the BLUE-off run the reason is unchecked: the collapse
	// alone is judged.
	if r := rowByID(t, E2(append(reps[:2:2], reps[3:]...)), "E2.1"); !r.Holds {
		t.Errorf("E2.1 without lab-noblue: %+v, want the collapse judged alone", r)
	}
}

// runScript runs the shipped script's variants named in only, with
// params, and returns their reports.
func runScript(t *testing.T, name string, params map[string]string, only ...string) []*report.Report {
	t.Helper()
	var reps []*report.Report
	for _, spec := range scriptPlan(t, name, params).Specs {
		for _, o := range only {
			if spec.Name == o {
				rep, err := run.Run(spec, nil)
				if err != nil {
					t.Fatalf("%s %s: %v", name, spec.Name, err)
				}
				reps = append(reps, rep)
			}
		}
	}
	if len(reps) != len(only) {
		t.Fatalf("%s: ran %d of the variants %v", name, len(reps), only)
	}
	return reps
}

// scriptPlan evaluates the shipped script name with params.
func scriptPlan(t *testing.T, name string, params map[string]string) *script.Plan {
	t.Helper()
	src, err := scripts.FS.ReadFile(name + ".tengo")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := script.Load(name+".tengo", src, script.Options{Params: params, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := prog.Eval()
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// The shipped E2b, scaled down to 0.7 s: before the llist the overload
// is lost at RX, not in cake; with the llist the qdisc fills, BLUE's p
// climbs and the rate falls; with BLUE off it stays above the
// pre-llist rate.
func TestE2bScaled(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of simulation")
	}
	reps := runScript(t, "e2b", map[string]string{"duration": "700ms"}, E2bPre, E2bLlist, E2bNoBlue)
	rows := E2b(reps)
	for _, r := range rows {
		t.Logf("%s %s: %s | %s", r.ID, r.Name, r.Model, r.Why)
	}
	if r := rowByID(t, rows, "E2b.2"); !r.Holds {
		t.Errorf("pre-llist drops in the stack: %s (%s)", r.Model, r.Why)
	}
	pre, ll, nb := reps[0], reps[1], reps[2]
	if p := lastBlue(ll); p < 0.2 {
		t.Errorf("llist: BLUE's p %.2f after 0.7 s, want it climbing (1/256 per 5 ms while cake overflows)", p)
	}
	if tail(ll) > 0.85*head(ll) {
		t.Errorf("llist: %.0f pps at the end vs %.0f at the start, want a decline", tail(ll), head(ll))
	}
	// BLUE off, no collapse: p stays 0 and the rate stays above the
	// pre-llist baseline. It settles below its first interval once cake
	// is full and every enqueue pays an overflow drop (Toke's "still a
	// delta ... cake is simply quite inefficient at dropping packets").
	if tail(nb) < tail(pre) || lastBlue(nb) != 0 {
		t.Errorf("lab-noblue: %.0f -> %.0f pps (pre-llist %.0f), p %.2f; want above the pre-llist rate and p 0", head(nb), tail(nb), tail(pre), lastBlue(nb))
	}
	if ratio(arrival(ll), arrival(pre)) < 1.2 {
		t.Errorf("arrival at the qdisc %.0f vs %.0f before the llist: the llist should let more in", arrival(ll), arrival(pre))
	}
}

// The shipped E2, scaled down: the rows compute from a real run, and
// the defer bound of 8 does better than 256.
func TestE2Scaled(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of simulation")
	}
	reps := runScript(t, "e2", map[string]string{"duration": "150ms"}, E2Cake618, E2CakeLlist, E2Burst8, E2Burst256)
	rows := E2(reps)
	for _, r := range rows {
		t.Logf("%s %s: %s | %s", r.ID, r.Name, r.Model, r.Why)
	}
	// The row asks 3x over the shipped second (3.8x); 150 ms of it
	// gives 2.9x.
	if b8, b256 := FindVariant(reps, E2Burst8).TxPps, FindVariant(reps, E2Burst256).TxPps; !(b8 > 2*b256) {
		t.Errorf("defer bound 8 vs 256: %.0f vs %.0f pps (%s)", b8, b256, rowByID(t, rows, "E2.3").Model)
	}
	if r := rowByID(t, rows, "E2.2"); r.Model != "not run" {
		t.Errorf("E2.2 without its variant: %+v", r)
	}
}

// E2n's rows judge each pair by its own criterion; a missing variant is
// "not run", never a pass.
func TestE2nRows(t *testing.T) {
	reps := []*report.Report{
		fake(E2n16Old, 0.6e6, 0.6e6, 0, nil),
		fake(E2n16Rc1, 100, 100, 1, map[string]uint64{"CAKE_FLOOD": 2e6}),
		fake(E2n1Old, 0.6e6, 0.6e6, 0, nil),
		fake(E2n1Rc1, 0.6e6, 0.6e6, 0, nil),
		fake(E2nIdpfOld, 0.36e6, 0.36e6, 0, nil),
		fake(E2nIdpfRc1, 0.55e6, 0.55e6, 0, nil),
	}
	rows := E2n(reps)
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5 (three judged, the dropwatch's two checks)", len(rows))
	}
	for _, r := range rows {
		if r.Kind != Check && !r.Holds {
			t.Errorf("%s %s: %s does not hold (%s)", r.ID, r.Name, r.Model, r.Why)
		}
	}
	// Toke's dropwatch beside the 16-netperf run: shown, never judged.
	if r := rowByID(t, rows, "E2n.5"); r.Kind != Check || r.Holds || !strings.Contains(r.Model, "defer bound 0, to_free") {
		t.Errorf("E2n.5: %+v, want an unjudged check of the 16-netperf run's drops", r)
	}
	// The listing's other half: no drop at dequeue. BLUE's drops at
	// dequeue fail it; drops at enqueue (and the NIC's, which
	// drop_monitor never sees) pass; a run without drops proves nothing.
	for _, tc := range []struct {
		drops map[string]uint64
		holds bool
	}{
		{map[string]uint64{"CAKE_FLOOD": 2e6}, false},
		{map[string]uint64{"QDISC_OVERLIMIT": 7e5, "RX_MISSED": 4e5, "CAKE_FLOOD": 13}, true},
		{map[string]uint64{"QDISC_OVERLIMIT": 7e5, "CAKE_FLOOD": 7100}, false},
		{map[string]uint64{"RX_MISSED": 4e5}, false},
		{nil, false},
	} {
		reps[1] = fake(E2n16Rc1, 100, 100, 1, tc.drops)
		if r := rowByID(t, E2n(reps), "E2n.6"); r.Holds != tc.holds || !r.Judged() {
			t.Errorf("E2n.6 with drops %v: %+v, want judged, holds %v", tc.drops, r, tc.holds)
		}
	}
	// 16 netperf that fell to nothing collapsed the most of all.
	reps[1] = fake(E2n16Rc1, 0, 0, 1, map[string]uint64{"CAKE_FLOOD": 2e6})
	if r := rowByID(t, E2n(reps), "E2n.1"); !r.Holds {
		t.Errorf("E2n.1 at 0 pps: %+v, want a collapse", r)
	}
	// No collapse with 16 and a collapse with 1 and on idpf: all fail.
	reps[1], reps[3], reps[5] = fake(E2n16Rc1, 0.6e6, 0.6e6, 0, nil), fake(E2n1Rc1, 100, 100, 1, nil), fake(E2nIdpfRc1, 0.1e6, 0.1e6, 0, nil)
	for _, r := range E2n(reps) {
		if r.Holds {
			t.Errorf("%s %s: %s holds, want not", r.ID, r.Name, r.Model)
		}
	}
	if r := rowByID(t, E2n(reps[:4]), "E2n.3"); r.Model != "not run" || r.Holds {
		t.Errorf("E2n.3 without the idpf variants: %+v, want not run", r)
	}
	// The local reading is a check row: shown, never judged.
	reps = append(reps, fake(E2nLocal16Old, 0.97e6, 0.97e6, 0, nil), fake(E2nLocal16Rc1, 1.15e6, 1.15e6, 0, nil))
	rows = E2n(reps)
	if len(rows) != 6 {
		t.Fatalf("%d rows with the local variants, want 6", len(rows))
	}
	if r := rowByID(t, rows, "E2n.4"); r.Kind != Check || r.Holds || !strings.Contains(r.Model, "1.19x") {
		t.Errorf("E2n.4: %+v, want an unjudged check with the local pair's ratio", r)
	}
}

// The defer bound's drops are the QDISC_DROPs the defer_drops counter
// vouches for; every other enqueue drop leaves by the to_free list, and
// RX and dequeue drops by neither.
func TestLlistDrops(t *testing.T) {
	for _, tc := range []struct {
		drops         map[string]uint64
		deferDrops    uint64
		bound, toFree uint64
	}{
		{map[string]uint64{"QDISC_OVERLIMIT": 100, "RX_MISSED": 50, "CAKE_FLOOD": 7}, 0, 0, 100},
		{map[string]uint64{"QDISC_DROP": 30, "QDISC_OVERLIMIT": 100}, 20, 20, 110},
		{map[string]uint64{"QDISC_BURST_DROP": 40, "QDISC_CONGESTED": 3}, 40, 40, 0},
	} {
		r := &report.Report{Counters: map[string]uint64{"defer_drops": tc.deferDrops}}
		r.Drops = tc.drops
		if b, f, _ := llistDrops(r); b != tc.bound || f != tc.toFree {
			t.Errorf("%v with defer_drops %d: bound %d, to_free %d; want %d, %d", tc.drops, tc.deferDrops, b, f, tc.bound, tc.toFree)
		}
	}
}

// Jonas Köppeler's "+ dequeue drops" and "+ limiting the number of
// deferred packets" kernels (llist thread, 10-11 Nov 2025) ran Eric's
// dequeue-drop patch from the thread on v1 of "net_sched: speedup qdisc
// dequeue": both to_free lists freed after the root lock by
// kfree_skb_list_reason, in kmem_cache_free_bulk arrays (the patch's
// __dev_xmit_skb free_out and net_tx_action hunks). tcf_kfree_skb_list,
// one kfree_skb_reason each, came in the series' v2 (11 Nov, patch 12).
// The script ran both variants with one kfree_skb each.
func TestE2bDequeueDropsKernel(t *testing.T) {
	plan := scriptPlan(t, "e2b", map[string]string{"duration": "40ms"})
	for _, name := range []string{E2bDeqDrop, E2bBound} {
		var found bool
		for _, spec := range plan.Specs {
			if spec.Name != name {
				continue
			}
			found = true
			cfg, err := netdev.Profile(spec.Profile)
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range spec.Set {
				k, v, _ := strings.Cut(kv, "=")
				if strings.HasPrefix(k, "cost.") {
					continue
				}
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			if !cfg.DequeueDrops || !cfg.BulkFreeList {
				t.Errorf("%s: dequeue_drops %v, bulk_free_list %v; want both (kfree_skb_list_reason after the root lock)", name, cfg.DequeueDrops, cfg.BulkFreeList)
			}
		}
		if !found {
			t.Errorf("e2b has no variant %s", name)
		}
	}
}

// E2b.15 judges the llist run's third second against the pre-llist
// rate: Jonas's first test fell to 0.6% of it; the row asks under 5%.
func TestE2bFirstTestRow(t *testing.T) {
	long := func(name string, pps ...float64) *report.Report {
		r := &report.Report{Name: name, WarmupNs: 30e6}
		r.Series = append(r.Series, report.Interval{StartNs: 0, EndNs: 30e6, TxPps: pps[0]})
		for i, x := range pps {
			r.Series = append(r.Series, report.Interval{StartNs: 30e6 + int64(i)*1e9, EndNs: 30e6 + int64(i+1)*1e9, TxPps: x, TxPackets: uint64(x)})
		}
		return r
	}
	pre := long(E2bPre, 1e6, 1e6, 1e6, 1e6)
	for _, tc := range []struct {
		third float64
		holds bool
	}{{3e3, true}, {49e3, true}, {51e3, false}, {0.27e6, false}} {
		r := firstTestRow(pre, long(E2bLlist, 2e6, 0.5e6, tc.third, 2e3))
		if !r.Judged() || r.Holds != tc.holds {
			t.Errorf("third second at %.0f pps against 1 Mpps: %+v, want holds %v", tc.third, r, tc.holds)
		}
	}
	if r := firstTestRow(pre, long(E2bLlist, 2e6, 0.5e6)); r.Judged() || r.Holds {
		t.Errorf("a 2-second run cannot say: %+v", r)
	}
	if r := firstTestRow(nil, long(E2bLlist, 2e6, 0.5e6, 3e3)); r.Holds || r.Model != "not run" {
		t.Errorf("without the pre-llist run: %+v", r)
	}
}

// E2b.16 judges the dequeuer's relock spin after the llist over before
// against Jonas's 5.68% -> 12.01% (2.11x), within 2x.
func TestE2bRelockRow(t *testing.T) {
	run := func(name string, spinNs int64) *report.Report {
		return &report.Report{Name: name, WindowNs: 1e9, CPUProfile: []report.ProfileRow{{Activity: netdev.ActRun, SpinNs: spinNs}}}
	}
	for _, tc := range []struct {
		before, after int64
		holds         bool
	}{{568e5, 1201e5, true}, {1e8, 1e8, false}, {1e7, 4e7, true}, {1e7, 5e7, false}, {12e6, 211e6, false}, {0, 1e8, false}} {
		r := relockRow(run(E2bPre, tc.before), run(E2bLlist, tc.after))
		if !r.Judged() || r.Holds != tc.holds {
			t.Errorf("relock spin %d -> %d ns: %+v, want holds %v", tc.before, tc.after, r, tc.holds)
		}
	}
	if r := relockRow(nil, run(E2bLlist, 1)); r.Holds || r.Model != "not run" {
		t.Errorf("without the pre-llist run: %+v", r)
	}
}
