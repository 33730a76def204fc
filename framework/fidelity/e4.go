package fidelity

import (
	"fmt"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
)

// E4's variants (scripts/e4.tengo): senders over both sockets (numa) or
// on one (nonuma), before 4d202a0d1 (4.7) and after it (4.8).
const (
	E4NumaBefore   = "numa-before"
	E4NumaAfter    = "numa-after"
	E4NonumaBefore = "nonuma-before"
	E4NonumaAfter  = "nonuma-after"
)

// The seed's figures: Eric Dumazet, "[PATCH net-next 4/4] net_sched:
// generalize bulk dequeue" (4d202a0d1, 21 June 2016): HTB on a bonding
// device under pressure, "1) NUMA node contention: 610,000 pps ->
// 1,110,000 pps 2) No node contention: 1,380,000 pps -> 1,930,000 pps".
const (
	seedE4NumaBefore   = 610000
	seedE4NumaAfter    = 1110000
	seedE4NonumaBefore = 1380000
	seedE4NonumaAfter  = 1930000
)

// e4GainTol is how far the model's gain (after / before - 1, the
// commit's "+82 %") may be from the seed's, relative: the issue asks for
// both rows as ratios. On the ratio itself a 20% band would let +15%
// pass for +40%.
const e4GainTol = 0.25

// E4 judges the seed's two rows from scripts/e4.tengo's reports: each
// gain as a ratio, that the gain is larger with NUMA contention, and
// what NUMA contention costs before the change. Each row's why is the
// mechanism: the bond's qdisc_restarts per packet (the dequeuer's
// root-lock round trips; an enqueuer adds one hold per packet either
// way), the mean bulk, HTB's backlog and the enqueuers' busylock wait.
func E4(reps []*report.Report) []Row {
	nb, na := FindVariant(reps, E4NumaBefore), FindVariant(reps, E4NumaAfter)
	ob, oa := FindVariant(reps, E4NonumaBefore), FindVariant(reps, E4NonumaAfter)
	var rows []Row
	gainRow := func(id, name string, before, after *report.Report, sb, sa float64, vb, va string) (float64, bool) {
		seed := fmt.Sprintf("%.2fx (%.2f -> %.2f Mpps)", sa/sb, sb/1e6, sa/1e6)
		if before == nil || after == nil {
			rows = append(rows, missing(id, name, seed, vb, va))
			return 0, false
		}
		g := safeDiv(after.TxPps, before.TxPps)
		rows = append(rows, Row{ID: id, Name: name, Seed: seed,
			Model: fmt.Sprintf("%.2fx (%.2f -> %.2f Mpps)", g, before.TxPps/1e6, after.TxPps/1e6),
			Ratio: safeDiv(g, sa/sb), Tolerance: fmt.Sprintf("the gain's %%, ±%.0f%% of it", 100*e4GainTol),
			Holds: within(g-1, sa/sb-1, e4GainTol), Why: e4Why(before, after)})
		return g, true
	}
	gn, okN := gainRow("E4.1", "tx pps after / before, NUMA contention", nb, na, seedE4NumaBefore, seedE4NumaAfter, E4NumaBefore, E4NumaAfter)
	go_, okO := gainRow("E4.2", "tx pps after / before, no node contention", ob, oa, seedE4NonumaBefore, seedE4NonumaAfter, E4NonumaBefore, E4NonumaAfter)

	const largerSeed = "+82% with NUMA contention, +40% without"
	if !okN || !okO {
		rows = append(rows, missing("E4.3", "the gain is larger with NUMA contention", largerSeed, E4NumaBefore, E4NumaAfter, E4NonumaBefore, E4NonumaAfter))
	} else {
		rows = append(rows, Row{ID: "E4.3", Name: "the gain is larger with NUMA contention", Seed: largerSeed,
			Model: fmt.Sprintf("%+.0f%% with, %+.0f%% without", 100*(gn-1), 100*(go_-1)), Kind: Check,
			Tolerance: "larger with", Holds: gn > go_,
			Why: "the kernel's gain needs HTB backlogged: then the dequeuer's root-lock round trip against an enqueuer, dearer across sockets, " +
				"is paid once per 9 skbs instead of every skb. HTB backlogs only while an enqueuer's hold of the root lock (the class read, the leaf's " +
				"lines, struct Qdisc's hot line) is shorter than the dequeuer's time outside it per skb (bond_start_xmit, the slave's fq and driver); " +
				e4Backlogged(na) + " " + processorWhy(na)})
	}

	costSeed := fmt.Sprintf("%.2fx (%.2f vs %.2f Mpps)", float64(seedE4NumaBefore)/seedE4NonumaBefore, seedE4NumaBefore/1e6, seedE4NonumaBefore/1e6)
	if nb == nil || ob == nil {
		rows = append(rows, missing("E4.4", "NUMA contention, before: numa / nonuma", costSeed, E4NumaBefore, E4NonumaBefore))
	} else {
		x := safeDiv(nb.TxPps, ob.TxPps)
		seedX := float64(seedE4NumaBefore) / seedE4NonumaBefore
		rows = append(rows, Row{ID: "E4.4", Name: "NUMA contention, before: numa / nonuma", Seed: costSeed,
			Model: fmt.Sprintf("%.2fx (%.2f vs %.2f Mpps)", x, nb.TxPps/1e6, ob.TxPps/1e6), Kind: Check,
			Ratio: safeDiv(x, seedX), Tolerance: "within 1.5x", Holds: factor(x, seedX) <= 1.5,
			Why: "every root-lock handoff and qdisc line (htb's and its leaf's struct Qdisc, two lines each before 4d202a0d1: qdisc_stats_line) " +
				"moves across the interconnect half the time (cost.line_remote vs cost.line_socket) " + processorWhy(nb)})
	}

	// The toggle itself: one skb per restart before, more after.
	if nb != nil && na != nil && ob != nil && oa != nil {
		var before, after []string
		one := true
		for _, r := range []*report.Report{nb, ob} {
			b := bulk(r)
			one = one && b == 1
			before = append(before, fmt.Sprintf("%s %.2f", r.Name, b))
		}
		more := false
		for _, r := range []*report.Report{na, oa} {
			b := bulk(r)
			more = more || b > 1
			after = append(after, fmt.Sprintf("%s %.2f", r.Name, b))
		}
		rows = append(rows, Row{ID: "E4.5", Name: "skbs per qdisc_restart of bond0's htb", Seed: "1 before (not TCQ_F_ONETXQUEUE); up to 9 of one txq after",
			Model: fmt.Sprint(before, " ", after), Kind: Check, Tolerance: "1 before, more after", Holds: one && more})
	}
	for i := range rows {
		rows[i].Experiment = "E4"
	}
	return rows
}

// bond is the report's first bonding device (the senders'), or nil.
func bond(r *report.Report) *report.DeviceSection {
	for i := range r.Devices {
		if r.Devices[i].Kind == "bonding" {
			return &r.Devices[i]
		}
	}
	return nil
}

// bulk is the bond's mean skbs per qdisc_restart over the window (0
// without a bond or a restart).
func bulk(r *report.Report) float64 {
	b := bond(r)
	if b == nil {
		return 0
	}
	return safeDiv(float64(b.RestartPackets), float64(b.QdiscRestarts))
}

// e4Backlogged says whether the NUMA run after the change kept HTB
// backlogged, which its gain needs.
func e4Backlogged(after *report.Report) string {
	b := bulk(after)
	if b >= 2 {
		return fmt.Sprintf("across sockets it stays so after the change (%.2f skbs a restart)", b)
	}
	return fmt.Sprintf("across sockets the hold is the longer, so HTB drains after the change and its dequeuer gets %.2f skbs a restart", b)
}

// processorWhy names the line latencies a run's host had (its
// processor: setup.cpu, sim.CPUModels).
func processorWhy(r *report.Report) string {
	if r == nil {
		return ""
	}
	m, err := sim.LookupCPU(r.Setup.CPU)
	if err != nil {
		return fmt.Sprintf("(processor %q)", r.Setup.CPU)
	}
	return fmt.Sprintf("(processor %s: %d ns a line within the socket, %d across)", m.Name, m.LineSocket, m.LineRemote)
}

// e4Why is a gain's mechanism: the dequeuer's root-lock round trips per
// packet and the mean bulk, HTB's backlog at the end, and the enqueuers'
// busylock wait, before -> after.
func e4Why(before, after *report.Report) string {
	trips := func(r *report.Report) float64 {
		b := bond(r)
		if b == nil {
			return 0
		}
		return safeDiv(float64(b.QdiscRestarts), float64(b.RestartPackets))
	}
	backlog := func(r *report.Report) int {
		if b := bond(r); b != nil && len(b.Qdisc) > 0 {
			return b.Qdisc[0].BacklogPackets
		}
		return 0
	}
	busy := func(r *report.Report) float64 { return float64(lockNamed(r, siteBusylock).AvgWaitNs) }
	// turn is an enqueue's serial turn: the busylock held from its
	// grant to its release (the root lock's wait and hold inside it),
	// beside the time between two skbs sent.
	turn := func(r *report.Report) string {
		l := lockNamed(r, siteBusylock)
		if l.Acquired == 0 {
			return "-"
		}
		return fmt.Sprintf("%s vs %s a packet sent", usec(float64(l.HoldNs)/float64(l.Acquired)), usec(safeDiv(1e9, r.TxPps)))
	}
	return fmt.Sprintf("dequeuer's root-lock round trips per packet %.2f -> %.2f (bulk %.2f -> %.2f skbs); htb backlog %d -> %d; busylock wait avg %s -> %s; "+
		"an enqueue's turn (busylock held) %s -> %s",
		trips(before), trips(after), bulk(before), bulk(after), backlog(before), backlog(after), usec(busy(before)), usec(busy(after)),
		turn(before), turn(after))
}
