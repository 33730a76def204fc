// Package fidelity sets the model's runs of the seeds' experiments beside
// the kernel's figures: each experiment is a function from the reports of
// its script's variants (found by variant name) to rows, one per claim of
// the seed, with the kernel's figure, the model's, whether the acceptance
// criterion holds, and the mechanism behind the model's figure (who holds
// the root lock, BLUE's p over time, where the drops are), so that a
// figure that holds for the wrong reason shows it. `txlab fidelity`
// prints them.
package fidelity

import (
	"fmt"
	"sort"
	"strings"

	"github.com/txlab/txlab/framework/report"
)

// Row is one claim of a seed against the model.
type Row struct {
	ID        string // "E2.1" ("" where the experiment does not number its claims)
	Name      string // what is compared
	Seed      string // the kernel's figure, as the seed reports it
	Model     string // the model's figure, from the reports
	Tolerance string // the acceptance criterion, where it is a tolerance
	Holds     bool   // the acceptance criterion holds
	Why       string // the model's mechanism, or why the row could not be judged
}

// Lock call sites, as the model names them (framework/netdev).
const (
	siteEnqueue  = "__dev_xmit_skb (root_lock)"
	siteDirect   = "sch_direct_xmit (root_lock)"
	siteTxAction = "net_tx_action (root_lock)"
	rxMissed     = "RX_MISSED"
)

// Find returns the report of the variant named name, or nil.
func Find(reps []*report.Report, name string) *report.Report {
	for _, r := range reps {
		if r != nil && r.Name == name {
			return r
		}
	}
	return nil
}

// missing is the row for a claim whose variants were not all run.
func missing(id, name, seed string, variants ...string) Row {
	return Row{ID: id, Name: name, Seed: seed, Model: "not run",
		Why: "needs the variants " + strings.Join(variants, ", ")}
}

// measured is the series after the warmup.
func measured(r *report.Report) []report.Interval {
	var out []report.Interval
	for _, iv := range r.Series {
		if iv.StartNs >= r.WarmupNs && iv.EndNs > iv.StartNs {
			out = append(out, iv)
		}
	}
	return out
}

// head is the rate of the first measured interval.
func head(r *report.Report) float64 {
	if s := measured(r); len(s) > 0 {
		return s[0].TxPps
	}
	return r.TxPps
}

// tail is the rate over the last quarter of the measured series (at
// least its last interval): where a decline has got to.
func tail(r *report.Report) float64 {
	s := measured(r)
	if len(s) == 0 {
		return r.TxPps
	}
	s = s[len(s)-max(1, len(s)/4):]
	var pkts uint64
	var ns int64
	for _, iv := range s {
		pkts += iv.TxPackets
		ns += iv.EndNs - iv.StartNs
	}
	return float64(pkts) * 1e9 / float64(ns)
}

// lockHold is the share of the window the root lock was held after being
// taken at the enqueue side, and at the dequeue side (sch_direct_xmit's
// re-take and net_tx_action), with the dequeue side's mean wait.
func lockHold(r *report.Report) (enq, deq float64, deqWaitNs int64) {
	if r.WindowNs <= 0 {
		return 0, 0, 0
	}
	var waits, contended int64
	for _, l := range r.Locks {
		switch l.Name {
		case siteEnqueue:
			enq += float64(l.HoldNs) / float64(r.WindowNs) // a hold begun before the window may push it past 1
		case siteDirect, siteTxAction:
			deq += float64(l.HoldNs) / float64(r.WindowNs)
			waits += l.TotalWaitNs
			contended += int64(l.Contended)
		}
	}
	if contended > 0 {
		deqWaitNs = waits / contended
	}
	return enq, deq, deqWaitNs
}

// arrival is the rate at which packets reached __dev_queue_xmit in the
// window: offered minus what the NIC dropped at the RX rings.
func arrival(r *report.Report) float64 {
	if r.WindowNs <= 0 {
		return 0
	}
	n := r.Window.OfferedPackets - min(r.Window.OfferedPackets, r.Window.Drops[rxMissed])
	return float64(n) * 1e9 / float64(r.WindowNs)
}

// stackDrops are the window's drops other than at the RX rings.
func stackDrops(r *report.Report) uint64 {
	var n uint64
	for k, v := range r.Window.Drops {
		if k != rxMissed {
			n += v
		}
	}
	return n
}

// dropRates is the window's drops by reason, per second, largest first.
func dropRates(r *report.Report) string {
	if r.WindowNs <= 0 {
		return ""
	}
	type kv struct {
		k string
		v uint64
	}
	var all []kv
	for k, v := range r.Window.Drops {
		if v > 0 {
			all = append(all, kv{k, v})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	var parts []string
	for _, x := range all {
		parts = append(parts, fmt.Sprintf("%s %s", x.k, rate(float64(x.v)*1e9/float64(r.WindowNs))))
	}
	if len(parts) == 0 {
		return "no drops"
	}
	return strings.Join(parts, ", ")
}

// blueTrace is BLUE's p over the measured series at a few points, and
// the time it first reached 0.99.
func blueTrace(r *report.Report) string {
	s := measured(r)
	if len(s) == 0 {
		return ""
	}
	var pts []string
	step := max(1, len(s)/4)
	for i := 0; i < len(s); i += step {
		pts = append(pts, fmt.Sprintf("%.2f@%s", s[i].BlueP, secs(s[i].EndNs)))
	}
	last := s[len(s)-1]
	if i := len(s) - 1; i%step != 0 {
		pts = append(pts, fmt.Sprintf("%.2f@%s", last.BlueP, secs(last.EndNs)))
	}
	out := "BLUE p " + strings.Join(pts, " ")
	for _, iv := range s {
		if iv.BlueP >= 0.99 {
			out += fmt.Sprintf(" (0.99 by %s)", secs(iv.EndNs))
			break
		}
	}
	return out
}

// rate prints packets per second as the seeds do: Mpps or Kpps.
func rate(pps float64) string {
	if pps >= 1e6 {
		return fmt.Sprintf("%.3g Mpps", pps/1e6)
	}
	if pps >= 1e3 {
		return fmt.Sprintf("%.3g Kpps", pps/1e3)
	}
	return fmt.Sprintf("%.3g pps", pps)
}

func secs(ns int64) string { return fmt.Sprintf("%.2gs", float64(ns)/1e9) }

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
