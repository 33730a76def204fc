package fidelity

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/txlab/txlab/framework/report"
)

// The seed's E3: Eric Dumazet, "[PATCH net-next] net: add a fast path in
// __netif_schedule()" (f8a55d5e71e6, 17 Oct 2025): "a 13 % increase of
// throughput on an IDPF NIC (200Gbit), 32 TX qeues, sending UDP packets
// of 120 bytes", sar -n DEV 5 5 txpck/s before and after.
const (
	seedE3OffPps = 52191462.56
	seedE3OnPps  = 59363099.96
)

// seedTxActionWaitNs is net_tx_action's average root-lock wait in the
// seed's perf lock table right after the llist change, the kernel the
// fast path was written against (E1's host, unpinned: 121 contended in
// 1 s on CPUs 0-7, 28.24 us avg).
const seedTxActionWaitNs = 28240

// The requeues 0345552a653c's commit message shows on the same NIC three
// weeks later, still without its bulk limit: tc -s, one second apart,
// 123,512,969 packets and 4,897,539 requeues.
const (
	seedRequeuesPerS = 4897539
	seedRequeuePkts  = 123512969
)

// E3Run is one seed's pair of runs: fast path off and on.
type E3Run struct {
	Seed    uint64
	Off, On *report.Report
}

// FindE3 pairs the fast_path=off and fast_path=on runs of each seed.
func FindE3(reps []*report.Report) ([]E3Run, error) {
	bySeed := map[uint64]*E3Run{}
	for _, r := range reps {
		if r == nil {
			continue
		}
		var slot **report.Report
		run := bySeed[r.Seed]
		if run == nil {
			run = &E3Run{Seed: r.Seed}
		}
		switch r.Config["fast_path"] {
		case "off":
			slot = &run.Off
		case "on":
			slot = &run.On
		default:
			continue
		}
		if *slot == nil {
			*slot = r
			bySeed[r.Seed] = run
		}
	}
	var out []E3Run
	for _, run := range bySeed {
		if run.Off != nil && run.On != nil {
			out = append(out, *run)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("E3 needs the variants fast_path=off and fast_path=on of one seed (scripts/fastpath.tengo runs them)")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seed < out[j].Seed })
	return out, nil
}

// gainStats is the mean and sample standard deviation of the runs' gains
// (on / off - 1).
func gainStats(runs []E3Run) (gains []float64, mean, sd float64) {
	for _, r := range runs {
		gains = append(gains, safeDiv(r.On.TxPps, r.Off.TxPps)-1)
	}
	mean, sd = meanSD(gains)
	return gains, mean, sd
}

// meanSD is the mean and the sample standard deviation (0 for one value).
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) > 1 {
		for _, x := range xs {
			sd += (x - mean) * (x - mean)
		}
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return mean, sd
}

// E3 is E3's rows. The figure: the gain, which must be a gain and, over
// several seeds, above twice their standard deviation (issue 15: "a gain
// well above run-to-run noise"). The checks: who calls __netif_schedule
// (the commit message names TX completions restarting a queue stopped by
// BQL or the driver), NET_TX raises and net_tx_action's root-lock waits
// with the fast path, and the requeues of that NIC at the time.
func E3(runs []E3Run) []Row {
	gains, mean, sd := gainStats(runs)
	var offPps, onPps float64
	for _, r := range runs {
		offPps += r.Off.TxPps / float64(len(runs))
		onPps += r.On.TxPps / float64(len(runs))
	}
	seedGain := seedE3OnPps / seedE3OffPps
	model := fmt.Sprintf("%.3fx (%.2f -> %.2f Mpps", 1+mean, offPps/1e6, onPps/1e6)
	tol := "a gain over 1% (one seed: no noise figure)"
	holds := mean > 0.01
	if len(runs) > 1 {
		model += fmt.Sprintf("; %d seeds: %s, sd %.1f%%", len(runs), signedPcts(gains), 100*sd)
		tol = "a gain above 2 sd of the seeds' gains"
		holds = mean > 0 && mean > 2*sd
	}
	model += ")"
	rows := []Row{{Name: "tx pps, fast path on / off", Seed: fmt.Sprintf("%.3fx (%.2f -> %.2f Mpps)", seedGain, seedE3OffPps/1e6, seedE3OnPps/1e6),
		Model: model, Ratio: safeDiv(1+mean, seedGain), Tolerance: tol, Holds: holds,
		Why: "off: " + itrWhy(runs[0].Off) + ", " + offerWhy(runs[0].Off) + "; on: " + itrWhy(runs[0].On) + ", " + offerWhy(runs[0].On)}}

	off, on := runs[0].Off, runs[0].On
	tag := ""
	if len(runs) > 1 {
		tag = fmt.Sprintf(", seed %d", runs[0].Seed)
	}
	// Where the calls come from, fast path off.
	var calls, compl float64
	var parts []string
	for _, s := range off.NetifSchedule {
		calls += float64(s.Calls)
		if s.Caller == "bql_wake" || s.Caller == "drv_wake" {
			compl += float64(s.Calls)
		}
	}
	for _, s := range off.NetifSchedule {
		parts = append(parts, s.Caller+" "+pct(float64(s.Calls), calls))
	}
	rows = append(rows, Row{Name: "__netif_schedule from TX completions, off" + tag,
		Seed:  "the main source: completions restart queues BQL or the driver stopped",
		Model: fmt.Sprintf("%s (%s)", pct(compl, calls), strings.Join(parts, ", ")), Kind: Check,
		Tolerance: "at least half", Holds: calls > 0 && compl >= calls/2})

	raisedOff, raisedOn := float64(off.Counters["net_tx_softirq_raised"]), float64(on.Counters["net_tx_softirq_raised"])
	rows = append(rows, Row{Name: "NET_TX_SOFTIRQ raised, on / off" + tag, Seed: "fewer: none while defer_list is not empty",
		Model: fmt.Sprintf("%.2fx (%.0f -> %.0f)", safeDiv(raisedOn, raisedOff), raisedOff, raisedOn), Kind: Check,
		Tolerance: "fewer", Holds: raisedOn < raisedOff})

	lo, ln := lockNamed(off, siteTxAction), lockNamed(on, siteTxAction)
	rows = append(rows, Row{Name: "net_tx_action root-lock wait, off" + tag,
		Seed: fmt.Sprintf("avg %s (perf lock after the llist, E1's host)", usec(seedTxActionWaitNs)),
		// perf lock's view: the waits that queued on qspinlock's MCS path.
		Model: fmt.Sprintf("avg %s, %d contended as perf lock records (every waiter: avg %s, %d)", usec(float64(lo.MCSAvgWaitNs)), lo.MCSContended,
			usec(float64(lo.AvgWaitNs)), lo.Contended), Kind: Check,
		Ratio: safeDiv(float64(lo.MCSAvgWaitNs), seedTxActionWaitNs), Tolerance: "within 3x",
		Holds: factor(float64(lo.MCSAvgWaitNs), seedTxActionWaitNs) <= 3})
	rows = append(rows, Row{Name: "net_tx_action root-lock wait in total, on / off" + tag, Seed: "less spinning on the root lock",
		Model: fmt.Sprintf("%.2fx (%s -> %s)", safeDiv(float64(ln.TotalWaitNs), float64(lo.TotalWaitNs)),
			msec(lo.TotalWaitNs), msec(ln.TotalWaitNs)), Kind: Check, Tolerance: "less", Holds: ln.TotalWaitNs < lo.TotalWaitNs})

	softOff, sysOff, satOff, nIRQ := irqCPUs(off)
	softOn, sysOn, satOn, _ := irqCPUs(on)
	rows = append(rows, Row{Name: "interrupt CPUs' time, off / on" + tag,
		Seed: "CPUs serving TX completions trapped restarting a busy qdisc, spinning on its lock in net_tx_action",
		Model: fmt.Sprintf("%d CPUs (mpstat -P): %.0f%% soft, %.0f%% sys (%d over 90%% soft) -> %.0f%% soft, %.0f%% sys (%d)",
			nIRQ, softOff, sysOff, satOff, softOn, sysOn, satOn), Kind: Check})

	var requeues uint64
	for _, q := range off.Queues {
		requeues += q.Requeues
	}
	rows = append(rows, Row{Name: "requeued skbs, off" + tag,
		Seed:  fmt.Sprintf("%.1f%% of packets (%.1f M/s, 0345552a653c's tc -s on this NIC)", 100*float64(seedRequeuesPerS)/seedRequeuePkts, seedRequeuesPerS/1e6),
		Model: fmt.Sprintf("%.1f%% of packets (%d of %d)", 100*safeDiv(float64(requeues), float64(off.TxPackets)), requeues, off.TxPackets),
		Kind:  Check})
	rows = append(rows, fqDropsRow(off, tag))
	for i := range rows {
		rows[i].Experiment = "E3"
	}
	return rows
}

// fqDropsRow judges the same tc -s: the mq root over this NIC's fq
// children counted "dropped 0" in 268 G packets, so fq's flow limit did
// not drop there and the senders were held by their send buffers, not
// by drops that give them their skbs back.
func fqDropsRow(off *report.Report, tag string) Row {
	drops := sumDrops(off.Window.Drops, func(reason string) bool { return strings.HasPrefix(reason, "FQ_") })
	const name, seed = "fq's drops, off", "none: dropped 0 of 268 G packets (0345552a653c's tc -s on this NIC)"
	if off.Window.OfferedPackets == 0 {
		return Row{Name: name + tag, Kind: Check, Seed: seed, Model: "no window", Why: "the report has no measurement window"}
	}
	share := safeDiv(float64(drops), float64(off.Window.OfferedPackets))
	return Row{Name: name + tag, Kind: Check, Tolerance: "under 0.1% of the offered", Seed: seed,
		Model: fmt.Sprintf("%.1f%% of the offered (%d of %d)", 100*share, drops, off.Window.OfferedPackets),
		Holds: share < 0.001,
		Why:   joinWhy(sleepWhy(off), dropRates(off))}
}

// itrWhy is where idpf's TX DIM left the queues' interrupt intervals at
// the end of a run (ethtool's tx_itr_usecs), what they carried per
// interrupt, and the requeued share: the longer the interval, the more
// completions pile up per interrupt and the more often a queue stops on
// its completion queue and is restarted by the clean.
func itrWhy(r *report.Report) string {
	byITR := map[int64]int{}
	var irqs int64
	var pkts, requeues uint64
	for _, q := range r.Queues {
		for _, kv := range q.Ethtool {
			switch kv.Key {
			case "tx_itr_usecs":
				byITR[kv.Value]++
			case "irqs":
				irqs += kv.Value
			}
		}
		pkts += q.TxPackets
		requeues += q.Requeues
	}
	var itrs []int64
	for v := range byITR {
		itrs = append(itrs, v)
	}
	sort.Slice(itrs, func(i, j int) bool { return itrs[i] > itrs[j] })
	var parts []string
	for _, v := range itrs {
		parts = append(parts, fmt.Sprintf("%d us x%d", v, byITR[v]))
	}
	dim := "static ITR"
	if len(parts) > 0 {
		dim = "TX DIM at " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s, %.0f packets an interrupt, %.1f%% requeued", dim, safeDiv(float64(pkts), float64(irqs)), 100*safeDiv(float64(requeues), float64(pkts)))
}

// offerWhy is what the senders offered against what was sent, in the
// window, and the share fq's flow limit dropped: senders no longer
// held up in net_tx_action (the fast path's point) offer more, and
// what fq cannot hold per flow is work that sends nothing; how many
// sockets share each queue and where the senders run say why.
func offerWhy(r *report.Report) string {
	w := r.Window
	return fmt.Sprintf("senders offered %.2f a packet sent, FQ_FLOW_LIMIT dropped %s of it%s%s", safeDiv(float64(w.OfferedPackets), float64(w.TxPackets)),
		pct(float64(w.Drops["FQ_FLOW_LIMIT"]), float64(w.OfferedPackets)), socketsWhy(r), placementWhy(r))
}

func msec(ns int64) string { return fmt.Sprintf("%.2f ms", float64(ns)/1e6) }
