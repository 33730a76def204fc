package fidelity

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/report"
)

// Mechanism is what each run did, as rows for people to read beside the
// figures: who holds the root lock and for how long, where drops happen
// by reason, who calls __netif_schedule and what net_tx_action found,
// cake's BLUE p, and the arrival rate at __dev_xmit_skb against the
// busylock run of the same setup. They carry no verdict.
func Mechanism(reps []*report.Report) []Row {
	var rows []Row
	check := func(r *report.Report, what, model string) {
		rows = append(rows, Row{Name: label(r) + ": " + what, Seed: "-", Model: model, Kind: Check})
	}
	for _, r := range reps {
		if r == nil {
			continue
		}
		if m := rootLock(r); m != "" {
			check(r, "root lock held by", m)
		}
		if m := dropPlaces(r); m != "" {
			check(r, "drops by place", m)
		}
		if m := schedCallers(r); m != "" {
			check(r, "__netif_schedule callers", m)
		}
		if m := blueP(r); m != "" {
			check(r, "cake BLUE p", m)
		}
		if m := arrivalRatio(r, reps); m != "" {
			check(r, "arrivals at __dev_xmit_skb / busylock run's", m)
		}
		if m := deferBatches(r); m != "" {
			check(r, "defer_list drains", m)
		}
	}
	return rows
}

// deferBatches is the llist's batches over the window: how many drains
// a second, their mean, and the buckets (skbs) the median, the 99th
// percentile and the largest drain fall in.
func deferBatches(r *report.Report) string {
	h := r.DeferBatch
	if h == nil || h.Count == 0 {
		return ""
	}
	at := func(q float64) report.Bucket {
		var n uint64
		for _, b := range h.Buckets {
			n += b.Count
			if float64(n) >= q*float64(h.Count) {
				return b
			}
		}
		return h.Buckets[len(h.Buckets)-1]
	}
	span := func(b report.Bucket) string {
		if b.Hi-b.Lo <= 1 {
			return strconv.FormatInt(b.Lo, 10)
		}
		return fmt.Sprintf("%d-%d", b.Lo, b.Hi-1)
	}
	return fmt.Sprintf("%.0f/s, %.1f skbs each; median in %s, p99 in %s, the largest in %s",
		safeDiv(float64(h.Count), float64(r.WindowNs)/1e9), h.MeanNs, span(at(0.5)), span(at(0.99)), span(h.Buckets[len(h.Buckets)-1]))
}

func label(r *report.Report) string {
	if r.Name != "" {
		return r.Name
	}
	return r.Profile
}

// rootLocks is how many root locks the run has: one per qdisc at the
// root (mq and cake_mq have none of their own) or under an mq class.
func rootLocks(r *report.Report) int {
	kind := map[string]string{}
	for _, q := range r.Qdisc {
		kind[q.Handle] = q.Kind
	}
	multi := func(k string) bool { return k == "mq" || k == "mqprio" || k == "cake_mq" }
	n := 0
	for _, q := range r.Qdisc {
		switch {
		case q.Parent == "root":
			if !multi(q.Kind) && q.Kind != "noqueue" {
				n++
			}
		default:
			major, _, _ := strings.Cut(q.Parent, ":")
			if multi(kind[major+":"]) {
				n++
			}
		}
	}
	return n
}

// rootLock is the root lock's holders by call site: the share of the
// locks' time each site held them (when every CPU was recorded), the
// hold per acquisition, and the average contended wait.
func rootLock(r *report.Report) string {
	var parts []string
	n := rootLocks(r)
	whole := float64(r.WindowNs) * float64(n)
	for _, l := range r.Locks {
		site, ok := strings.CutSuffix(l.Name, " (root_lock)")
		if !ok || l.Acquired == 0 {
			continue
		}
		p := site + " "
		if r.LockCPUs == "" && whole > 0 {
			// A hold that began before the window counts whole at its
			// unlock, so a lock held for milliseconds can pass 100%.
			p += pct(min(float64(l.HoldNs), whole), whole) + " of the time, "
		}
		p += usec(safeDiv(float64(l.HoldNs), float64(l.Acquired))) + " a hold, waits " + usec(float64(l.AvgWaitNs))
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	out := strings.Join(parts, "; ")
	if r.LockCPUs != "" {
		out += " (on CPUs " + r.LockCPUs + ")"
	} else {
		out += fmt.Sprintf(" (%d root locks)", n)
	}
	return out
}

// The places a drop happens, by its reason (the defer bound's drops are
// counted apart: defer_drops).
var (
	rxReasons      = map[string]bool{"RX_MISSED": true, "CPU_BACKLOG": true}
	dequeueReasons = map[string]bool{"QDISC_CONGESTED": true, "CAKE_FLOOD": true}
	otherReasons   = map[string]bool{"DEV_READY": true, "TX_DEVICE": true, "NOT_SPECIFIED": true, "LOST_TO_PLUGIN": true}
)

// dropPlaces is the run's drops by place: RX ring, defer bound, qdisc
// enqueue, qdisc dequeue, elsewhere; each with its reasons.
func dropPlaces(r *report.Report) string {
	if r.DroppedPackets == 0 {
		return ""
	}
	places := dropsByPlace(r)
	var parts []string
	for _, place := range []string{"RX", "defer bound", "enqueue", "dequeue", "elsewhere"} {
		m := places[place]
		if m == nil {
			continue
		}
		var total uint64
		var rs []string
		for _, reason := range sortedKeys(m) {
			total += m[reason]
			rs = append(rs, reason+" "+strconv.FormatUint(m[reason], 10))
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s)", place, total, strings.Join(rs, ", ")))
	}
	return strings.Join(parts, "; ") + fmt.Sprintf(" of %d offered", r.OfferedPackets)
}

// dropsByPlace sorts a run's drops by place (RX, defer bound, enqueue,
// dequeue, elsewhere) and reason. The defer bound's drops share
// QDISC_DROP or QDISC_BURST_DROP with the qdisc's own: the defer_drops
// counter says how many were the bound's, taken in reason order.
func dropsByPlace(r *report.Report) map[string]map[string]uint64 {
	places := map[string]map[string]uint64{}
	add := func(place, reason string, n uint64) {
		if n == 0 {
			return
		}
		if places[place] == nil {
			places[place] = map[string]uint64{}
		}
		places[place][reason] += n
	}
	deferLeft := r.Counters["defer_drops"]
	for _, reason := range sortedKeys(r.Drops) {
		n := r.Drops[reason]
		switch {
		case rxReasons[reason]:
			add("RX", reason, n)
		case dequeueReasons[reason]:
			add("dequeue", reason, n)
		case otherReasons[reason]:
			add("elsewhere", reason, n)
		case reason == "QDISC_BURST_DROP" || reason == "QDISC_DROP":
			d := min(n, deferLeft)
			deferLeft -= d
			add("defer bound", reason, d)
			add("enqueue", reason, n-d)
		default:
			add("enqueue", reason, n)
		}
	}
	return places
}

// schedCallers is __netif_schedule by caller, what the calls did, and
// what net_tx_action found.
func schedCallers(r *report.Report) string {
	var calls, skipped, raised uint64
	for _, s := range r.NetifSchedule {
		calls += s.Calls
		skipped += s.Skipped
		raised += s.Raised
	}
	if calls == 0 {
		return ""
	}
	callers := append([]report.SchedCaller(nil), r.NetifSchedule...)
	sort.SliceStable(callers, func(i, j int) bool { return callers[i].Calls > callers[j].Calls })
	var parts []string
	for _, s := range callers {
		parts = append(parts, s.Caller+" "+pct(float64(s.Calls), float64(calls)))
	}
	a := r.NetTxAction
	out := fmt.Sprintf("%s of %d; %d skipped by the fast path, %d raised NET_TX; net_tx_action found it running %s of %d",
		strings.Join(parts, ", "), calls, skipped, raised, pct(float64(a.FoundRunning), float64(a.Qdiscs)), a.Qdiscs)
	var takes []string
	for _, s := range callers {
		if s.TxActionTakes > 0 {
			takes = append(takes, fmt.Sprintf("%s %.0f/s at %s", s.Caller, float64(s.TxActionTakes)*1e9/float64(max(r.WindowNs, 1)),
				nsText(s.TxActionWaitNs/int64(s.TxActionTakes))))
		}
	}
	if len(takes) > 0 {
		out += "; its root-lock takes on the lock CPUs, by what queued the qdisc: " + strings.Join(takes, ", ")
	}
	return out
}

// blueP is cake's BLUE drop probability: the most each tin reached
// (cake's xstats keep the maximum, not the course over time).
func blueP(r *report.Report) string {
	var parts []string
	for _, q := range r.Qdisc {
		if q.Kind != "cake" {
			continue
		}
		for _, x := range q.XStats {
			tin, ok := strings.CutSuffix(x.Key, "_blue_p_max_ppm")
			if !ok {
				continue
			}
			ppm, err := x.Value.Float64()
			if err != nil || ppm == 0 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s max %.3f", tin, ppm/1e6))
		}
		if len(parts) == 0 {
			parts = append(parts, "0 in every tin")
		}
		return "p " + strings.Join(parts, ", ") + " (" + q.Handle + ", the most reached)"
	}
	return ""
}

// arrivalRatio is an llist run's rate of arrivals at __dev_xmit_skb
// against the busylock run of the same setup (the __dev_queue_xmit calls
// of the window, which its latency histogram counts).
func arrivalRatio(r *report.Report, reps []*report.Report) string {
	if r.Config["xmit"] != "llist" {
		return ""
	}
	for _, b := range reps {
		if b == nil || b.Config["xmit"] != "busylock" || !reflect.DeepEqual(b.Setup, r.Setup) || b.Seed != r.Seed {
			continue
		}
		a, base := xmitRate(r), xmitRate(b)
		return fmt.Sprintf("%.2fx (%.3f / %.3f Mpps, %s)", safeDiv(a, base), a/1e6, base/1e6, label(b))
	}
	return ""
}

// xmitRate is __dev_queue_xmit calls per second of the window.
func xmitRate(r *report.Report) float64 {
	return safeDiv(float64(r.XmitNs.Count), float64(r.WindowNs)/1e9)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
