package fq

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
)

// knownOptions are the tc-fq words (tc/q_fq.c fq_parse_opt).
var knownOptions = []string{"limit", "flow_limit", "quantum", "initial_quantum", "maxrate", "buckets",
	"orphan_mask", "pacing", "nopacing", "refill_delay", "low_rate_threshold", "horizon", "horizon_drop",
	"horizon_cap", "ce_threshold", "timer_slack", "weights", "bands", "offload_horizon", "defrate"}

// qopt is the TCA_FQ_* attributes tc sends (fq_parse_opt): each only
// when its word was given (buckets only when not 0).
type qopt struct {
	plimit, flowPlimit, quantum, initialQuantum qdisc.Attr[uint32]
	maxRate, defRate, lowRateThreshold          qdisc.Attr[uint32] // bytes/s
	refillDelay, ceThreshold, horizon, offload  qdisc.Attr[uint32] // us
	timerSlack                                  qdisc.Attr[uint32] // ns
	bucketsLog, orphanMask, rateEnable          qdisc.Attr[uint32]
	horizonDrop                                 qdisc.Attr[bool]
	priomap                                     qdisc.Attr[[16]uint8]
	weights                                     qdisc.Attr[[fqBands]int32]
}

// parse is fq_parse_opt: tc's words to attributes, with tc's own
// refusals (a 32-bit rate, 3 bands, weights of at least FQ_MIN_WEIGHT).
func parse(args []string, speedBps int64) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("fq", args)
	counts := map[string]*qdisc.Attr[uint32]{"limit": &o.plimit, "flow_limit": &o.flowPlimit, "quantum": &o.quantum,
		"initial_quantum": &o.initialQuantum, "orphan_mask": &o.orphanMask}
	times := map[string]*qdisc.Attr[uint32]{"refill_delay": &o.refillDelay, "ce_threshold": &o.ceThreshold,
		"horizon": &o.horizon, "offload_horizon": &o.offload}
	rates := map[string]*qdisc.Attr[uint32]{"maxrate": &o.maxRate, "defrate": &o.defRate, "low_rate_threshold": &o.lowRateThreshold}
	flags := map[string]func(){"pacing": func() { o.rateEnable.Put(1) }, "nopacing": func() { o.rateEnable.Put(0) },
		"horizon_drop": func() { o.horizonDrop.Put(true) }, "horizon_cap": func() { o.horizonDrop.Put(false) }}
	for k := a.Next(); k != ""; k = a.Next() {
		var err error
		switch {
		case counts[k] != nil:
			err = put(counts[k], a.Unsigned, k)
		case times[k] != nil:
			err = put(times[k], a.Time, k)
		case rates[k] != nil:
			err = parseRate(a, k, rates[k], speedBps)
		case flags[k] != nil:
			flags[k]()
		case k == "buckets":
			err = parseBuckets(a, &o)
		case k == "timer_slack":
			err = parseTimerSlack(a, &o)
		case k == "bands":
			err = parsePriomap(a, &o)
		case k == "weights":
			err = parseWeights(a, &o)
		default:
			err = a.Unknown(k, knownOptions...)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

func put(at *qdisc.Attr[uint32], get func(string) (uint32, error), key string) error {
	v, err := get(key)
	at.Put(v)
	return err
}

// parseRate is get_rate, or get_percent_rate for maxrate and defrate
// with a '%': that share of the device's speed (speedBps, what tc reads
// from /sys/class/net/DEV/speed).
func parseRate(a *qdisc.Args, key string, at *qdisc.Attr[uint32], speedBps int64) error {
	v, err := a.Value(key)
	if err != nil {
		return err
	}
	get := units.GetRate
	if strings.Contains(v, "%") && key != "low_rate_threshold" {
		get = func(v string) (uint32, error) { return psched.PercentRate(v, speedBps) }
	}
	r, err := get(v)
	if err != nil {
		return qdisc.Parsef("fq", "illegal %q: %v", key, err)
	}
	at.Put(r)
	return nil
}

// parseBuckets is "buckets N": tc sends ilog2 rounded up, and nothing
// for 0.
func parseBuckets(a *qdisc.Args, o *qopt) error {
	n, err := a.Unsigned("buckets")
	if err != nil || n == 0 {
		return err
	}
	log := uint32(0)
	for v := n - 1; v != 0; v >>= 1 {
		log++
	}
	o.bucketsLog.Put(log)
	return nil
}

// parseTimerSlack is get_time64 into the u32 tc sends.
func parseTimerSlack(a *qdisc.Args, o *qopt) error {
	ns, err := a.Time64("timer_slack")
	if err != nil {
		return err
	}
	if ns > math.MaxUint32 {
		return qdisc.Parsef("fq", "illegal (out of range) \"timer_slack\": %dns is above 4294967295ns", ns)
	}
	o.timerSlack.Put(uint32(ns))
	return nil
}

// parsePriomap is "bands 3 priomap P0 .. P15".
func parsePriomap(a *qdisc.Args, o *qopt) error {
	if o.priomap.Set {
		return qdisc.Parsef("fq", "duplicate \"bands\"")
	}
	n, err := a.Value("bands")
	if err != nil {
		return err
	}
	if b, err := units.GetInteger(n, 10); err != nil {
		return qdisc.Parsef("fq", "illegal \"bands\": %v", err)
	} else if b != fqBands {
		return qdisc.Parsef("fq", "\"bands\" must be 3, not %d", b)
	}
	if w := a.Next(); w != "priomap" {
		return qdisc.Parsef("fq", "\"priomap\" expected after bands 3, got %q", w)
	}
	var m [16]uint8
	for i := range m {
		if !a.More() {
			return qdisc.Parsef("fq", "not enough elements in priomap (want 16)")
		}
		v, _ := a.Value("priomap")
		b, err := units.GetUnsigned(v, 10)
		if err != nil {
			return qdisc.Parsef("fq", "illegal \"priomap\" element %q, number in [0..2] expected", v)
		}
		if b >= fqBands {
			return qdisc.Parsef("fq", "\"priomap\" element %d too big", b)
		}
		m[i] = uint8(b)
	}
	o.priomap.Put(m)
	return nil
}

// parseWeights is "weights W0 W1 W2".
func parseWeights(a *qdisc.Args, o *qopt) error {
	if o.weights.Set {
		return qdisc.Parsef("fq", "duplicate \"weights\"")
	}
	var w [fqBands]int32
	for i := range w {
		if !a.More() {
			return qdisc.Parsef("fq", "not enough elements in weights (want %d)", fqBands)
		}
		v, _ := a.Value("weights")
		n, err := units.GetInteger(v, 10)
		if err != nil {
			return qdisc.Parsef("fq", "illegal \"weights\" element %q, positive number expected", v)
		}
		if n < fqMinWeight {
			return qdisc.Parsef("fq", "\"weight\" element %d too small (at least %d)", n, fqMinWeight)
		}
		w[i] = n
	}
	o.weights.Put(w)
	return nil
}

// validate is fq_change's refusals: buckets of 2^1..2^18, a quantum in
// (0, 1Mb], pacing 0 or 1, an offload_horizon within what the device
// paces (the model's devices pace nothing).
//
// The kernel applies the valid attributes of a refused request as it
// meets them (and still trims to a new limit); the model refuses the
// whole request, which changes nothing (a refused change ends the run).
func validate(o qopt) error {
	switch {
	case o.bucketsLog.Set && (o.bucketsLog.V < 1 || o.bucketsLog.V > fqMaxTreesLog):
		return qdisc.Refusef("fq", "buckets 2^%d: the table is 2 to 2^%d buckets (EINVAL)", o.bucketsLog.V, fqMaxTreesLog)
	case o.quantum.Set && (o.quantum.V == 0 || o.quantum.V > 1<<20):
		return qdisc.Refusef("fq", "invalid quantum %d (1 to 1048576)", o.quantum.V)
	case o.initialQuantum.Set && o.initialQuantum.V > math.MaxInt32:
		return qdisc.Refusef("fq", "initial_quantum %d is above %d (netlink policy)", o.initialQuantum.V, math.MaxInt32)
	case o.rateEnable.Set && o.rateEnable.V > 1:
		return qdisc.Refusef("fq", "pacing %d: 0 or 1 (EINVAL)", o.rateEnable.V)
	case o.offload.Set && o.offload.V != 0:
		return qdisc.Refusef("fq", "invalid offload_horizon %dus: the device offers no pacing offload (max 0us)", o.offload.V)
	}
	return nil
}

// apply is fq_change's assignments, in its order, and fq_resize. now is
// the time of the change (fq_rehash frees aged detached flows).
func (q *FQ) apply(o qopt, now sim.Time) {
	set := func(at qdisc.Attr[uint32], f func(uint32)) {
		if at.Set {
			f(at.V)
		}
	}
	set(o.plimit, func(v uint32) { q.limit = int(v) })
	set(o.flowPlimit, func(v uint32) { q.flowPlimit = int(v) })
	set(o.quantum, func(v uint32) { q.quantum = int(v) })
	set(o.initialQuantum, func(v uint32) { q.initialQuantum = int(v) })
	// defrate: the kernel warns "sch_fq: defrate %u ignored." and goes on.
	set(o.maxRate, func(v uint32) {
		q.flowMaxRate = uint64(v)
		if v == math.MaxUint32 { // ~0U on the wire is "no maxrate"
			q.flowMaxRate = rateUnlimited
		}
	})
	set(o.lowRateThreshold, func(v uint32) { q.lowRateThreshold = uint64(v) })
	set(o.rateEnable, func(v uint32) { q.rateEnable = v == 1 })
	// usecs_to_jiffies rounds up to the model's 1ms jiffy.
	set(o.refillDelay, func(v uint32) { q.flowRefillDelay = sim.Time((uint64(v)+999)/1000) * sim.Millisecond })
	if o.priomap.Set {
		q.prio2band = o.priomap.V
	}
	if o.weights.Set {
		for i, w := range o.weights.V {
			q.bandFlows[i].quantum = int(w)
		}
	}
	set(o.orphanMask, func(v uint32) { q.orphanMask = v })
	set(o.ceThreshold, func(v uint32) { q.ceThreshold = uint64(v) * 1000 })
	set(o.timerSlack, func(v uint32) { q.timerSlack = sim.Time(v) })
	set(o.horizon, func(v uint32) { q.horizon = sim.Time(v) * sim.Microsecond })
	if o.horizonDrop.Set {
		q.horizonDrop = o.horizonDrop.V
	}
	log := q.fqTreesLog
	set(o.bucketsLog, func(v uint32) { log = uint(v) })
	q.fqResize(log, now)
}

// fqResize is fq_resize: a new table of 2^log buckets, the flows moved
// over by fq_rehash (which frees the aged detached ones on the way).
func (q *FQ) fqResize(log uint, now sim.Time) {
	if q.fqRoot != nil && log == q.fqTreesLog {
		return
	}
	root := make([][]*fqFlow, 1<<log)
	freed := 0
	for _, bucket := range q.fqRoot {
		for _, f := range bucket {
			if fqGCCandidate(f, now) {
				freed++
				continue
			}
			idx := hashPtr(f.key, log)
			i, _ := slices.BinarySearchFunc(root[idx], f.key, func(g *fqFlow, k uint64) int {
				switch {
				case g.key < k:
					return -1
				case g.key > k:
					return 1
				}
				return 0
			})
			root[idx] = slices.Insert(root[idx], i, f)
		}
	}
	q.flows -= freed
	q.inactiveFlows -= freed
	q.statGCFlows += uint64(freed)
	q.fqRoot, q.fqTreesLog = root, log
}

// Dump implements qdisc.Qdisc: fq_dump as tc's fq_print_opt prints it
// (a current kernel always sends the priomap, the weights and the
// offload_horizon).
func (q *FQ) Dump() string {
	w := []string{
		fmt.Sprintf("limit %dp", q.limit),
		fmt.Sprintf("flow_limit %dp", q.flowPlimit),
		fmt.Sprintf("buckets %d", 1<<q.fqTreesLog),
		fmt.Sprintf("orphan_mask %d", q.orphanMask),
	}
	if !q.rateEnable {
		w = append(w, "nopacing")
	}
	w = append(w, "bands", "3", "priomap")
	for _, b := range q.prio2band {
		w = append(w, strconv.Itoa(int(b)))
	}
	w = append(w, "weights")
	for i := range q.bandFlows {
		w = append(w, strconv.Itoa(q.bandFlows[i].quantum))
	}
	w = append(w, "quantum", units.SprintSize(uint64(q.quantum)), "initial_quantum", units.SprintSize(uint64(q.initialQuantum)))
	if r := min(q.flowMaxRate, math.MaxUint32); r != math.MaxUint32 {
		w = append(w, "maxrate", units.SprintRate(r))
	}
	if q.lowRateThreshold != 0 {
		w = append(w, "low_rate_threshold", units.SprintRate(q.lowRateThreshold))
	}
	w = append(w, "refill_delay", units.SprintTime(uint32(q.flowRefillDelay/sim.Microsecond)))
	if us := uint32(q.ceThreshold / 1000); us != math.MaxUint32 {
		w = append(w, "ce_threshold", units.SprintTime(us))
	}
	w = append(w, "timer_slack", units.SprintTime64(int64(q.timerSlack)), "horizon", units.SprintTime(uint32(q.horizon/sim.Microsecond)))
	if q.horizonDrop {
		w = append(w, "horizon_drop")
	} else {
		w = append(w, "horizon_cap")
	}
	w = append(w, "offload_horizon", units.SprintTime(uint32(q.offloadHorizon/sim.Microsecond)))
	return strings.Join(w, " ")
}

// Stats implements qdisc.Qdisc: fq_dump_stats (struct tc_fq_qd_stats) in
// the order and with the names of tc's fq_print_xstats, every field
// always present. Like tc, "throttled" appears twice: first the flows
// throttled now, then the count of throttle events.
func (q *FQ) Stats() qdisc.Stats {
	st := qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops}
	if q.hasPeeked {
		st.Qlen++
		st.Backlog += int64(q.peeked.Len)
	}
	kv := func(k string, v int64) { st.XStats = append(st.XStats, qdisc.XInt(k, v)) }
	var next int64
	if q.timeNextDelayedFlow != timeNever {
		next = int64(q.timeNextDelayedFlow + q.timerSlack - q.lastNow)
	}
	kv("flows", int64(q.flows))
	kv("inactive", int64(q.inactiveFlows))
	kv("throttled", int64(q.throttledFlows))
	for i := range q.bandPktCount {
		kv(fmt.Sprintf("band%d_pkts", i), int64(q.bandPktCount[i]))
	}
	// tc prints the delay and the unthrottle latency with sprint_time64.
	st.XStats = append(st.XStats, qdisc.XTime("next_packet_delay", sim.Time(next)))
	kv("gc", int64(q.statGCFlows))
	kv("highprio", 0) // highprio_packets: always 0 since the bands replaced it
	kv("fastpath", int64(q.statFastpathPackets))
	kv("retrans", 0) // tcp_retrans: always 0 in the kernel
	kv("throttled", int64(q.statThrottled))
	st.XStats = append(st.XStats, qdisc.XTime("latency", sim.Time(min(q.unthrottleLatencyNs, math.MaxUint32))))
	kv("ce_mark", int64(q.statCEMark))
	kv("flows_plimit", int64(q.statFlowsPlimit))
	kv("pkts_too_long", int64(q.statPktsTooLong))
	kv("alloc_errors", int64(q.statAllocationErrors))
	kv("horizon_drops", int64(q.statHorizonDrops))
	kv("horizon_caps", int64(q.statHorizonCaps))
	for i := range q.statBandDrops {
		kv(fmt.Sprintf("band%d_drops", i), int64(q.statBandDrops[i]))
	}
	return st
}
