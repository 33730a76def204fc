package fq

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
)

// knownOptions are the tc-fq words (tc/q_fq.c fq_parse_opt).
var knownOptions = []string{"limit", "flow_limit", "quantum", "initial_quantum", "maxrate", "buckets",
	"orphan_mask", "pacing", "nopacing", "refill_delay", "low_rate_threshold", "horizon", "horizon_drop",
	"horizon_cap", "ce_threshold", "timer_slack", "weights", "bands", "priomap", "offload_horizon", "defrate"}

type suffix struct {
	name  string
	scale float64
}

// rateSuffixes is get_rate's table (lib/utils_math.c), matched without
// case; no suffix means bit/s. Longest first so "kibit" wins over "bit".
var rateSuffixes = []suffix{
	{"kibps", 8 * 1024}, {"mibps", 8 * 1024 * 1024}, {"gibps", 8 * 1024 * 1024 * 1024}, {"tibps", 8 * 1024 * 1024 * 1024 * 1024},
	{"kibit", 1024}, {"mibit", 1024 * 1024}, {"gibit", 1024 * 1024 * 1024}, {"tibit", 1024 * 1024 * 1024 * 1024},
	{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
	{"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12},
	{"bit", 1}, {"bps", 8},
}

// timeSuffixes is get_time's table in microseconds (no suffix: us).
var timeSuffixes = []suffix{
	{"usecs", 1}, {"msecs", 1e3}, {"usec", 1}, {"msec", 1e3}, {"secs", 1e6},
	{"sec", 1e6}, {"us", 1}, {"ms", 1e3}, {"s", 1e6},
}

// time64Suffixes is get_time64's table in nanoseconds (no suffix: ns).
var time64Suffixes = []suffix{
	{"nsecs", 1}, {"usecs", 1e3}, {"msecs", 1e6}, {"nsec", 1}, {"usec", 1e3}, {"msec", 1e6},
	{"secs", 1e9}, {"sec", 1e9}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
}

// sizeSuffixes accept what Dump prints for quantum ("3028b", "64Kb").
var sizeSuffixes = []suffix{
	{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1024 * 1024 * 1024}, {"k", 1024}, {"m", 1024 * 1024},
	{"g", 1024 * 1024 * 1024}, {"b", 1},
}

// parseScaled reads a non-negative number with an optional unit and
// returns it scaled, refusing results above max.
func parseScaled(key, v string, units []suffix, what, example string, max float64) (float64, error) {
	num, scale := v, 1.0
	low := strings.ToLower(v)
	for _, u := range units {
		if strings.HasSuffix(low, u.name) {
			num, scale = v[:len(v)-len(u.name)], u.scale
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("fq: %s %q is not a %s (e.g. %s)", key, v, what, example)
	}
	if f < 0 {
		return 0, fmt.Errorf("fq: %s %q must not be negative", key, v)
	}
	f *= scale
	if f > max {
		return 0, fmt.Errorf("fq: %s %q is too large (the kernel takes a 32-bit value)", key, v)
	}
	return f, nil
}

// parseRate is tc's get_rate: bits/s words to bytes/s in 32 bits.
func parseRate(key, v string) (uint64, error) {
	f, err := parseScaled(key, v, rateSuffixes, "rate", "100Mbit, 1Gbit", 8*math.MaxUint32)
	return uint64(f / 8), err
}

// parseTimeUs is tc's get_time: microseconds in 32 bits.
func parseTimeUs(key, v string) (uint64, error) {
	f, err := parseScaled(key, v, timeSuffixes, "time", "40ms, 10s, 500us", math.MaxUint32)
	return uint64(f), err
}

func (q *FQ) parse(args []string) error {
	a := qdisc.NewArgs("fq", args)
	u32 := func(k string) (int64, error) { return a.Int(k, 0, math.MaxUint32) }
	for k := a.Next(); k != ""; k = a.Next() {
		switch k {
		case "limit":
			n, err := u32(k)
			if err != nil {
				return err
			}
			q.limit = int(n)
		case "flow_limit":
			n, err := u32(k)
			if err != nil {
				return err
			}
			q.flowPlimit = int(n)
		case "quantum", "initial_quantum":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			f, err := parseScaled(k, v, sizeSuffixes, "size", "3028, 64Kb", math.MaxUint32)
			if err != nil {
				return err
			}
			if f != math.Trunc(f) {
				return fmt.Errorf("fq: %s %q is not a whole number of bytes", k, v)
			}
			if k == "quantum" {
				if f == 0 || f > 1<<20 {
					return fmt.Errorf("fq: quantum %s is invalid: it must be in [1, 1048576] bytes", v)
				}
				q.quantum = int(f)
			} else {
				if f > math.MaxInt32 {
					return fmt.Errorf("fq: initial_quantum %s is invalid: at most %d bytes", v, math.MaxInt32)
				}
				q.initialQuantum = int(f)
			}
		case "maxrate", "low_rate_threshold", "defrate":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			if strings.Contains(v, "%") {
				return fmt.Errorf("fq: %s %q: percent rates need the device speed, give a rate (e.g. 1Gbit)", k, v)
			}
			r, err := parseRate(k, v)
			if err != nil {
				return err
			}
			switch k {
			case "maxrate":
				q.flowMaxRate = r
				if r == math.MaxUint32 { // ~0U is "no maxrate" on the wire
					q.flowMaxRate = rateUnlimited
				}
			case "low_rate_threshold":
				q.lowRateThreshold = r
			}
			// defrate: the kernel warns "defrate ignored" and goes on.
		case "buckets":
			n, err := u32(k)
			if err != nil {
				return err
			}
			if n == 0 {
				break // tc sends nothing for buckets 0
			}
			log := uint(0) // tc rounds up to a power of two
			for (uint64(1) << log) < uint64(n) {
				log++
			}
			if log < 1 || log > fqMaxTreesLog {
				return fmt.Errorf("fq: buckets %d is invalid: it must be in [2, %d]", n, 1<<fqMaxTreesLog)
			}
			q.fqTreesLog = log
		case "orphan_mask":
			// tc reads it with strtoul base 0: masks may be given in hex.
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			n, perr := strconv.ParseUint(v, 0, 32)
			if perr != nil {
				return fmt.Errorf("fq: orphan_mask %q is not a 32-bit number (e.g. 1023, 0x3ff)", v)
			}
			q.orphanMask = uint32(n)
		case "pacing":
			q.rateEnable = true
		case "nopacing":
			q.rateEnable = false
		case "refill_delay", "horizon", "ce_threshold", "offload_horizon":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			us, err := parseTimeUs(k, v)
			if err != nil {
				return err
			}
			switch k {
			case "refill_delay":
				q.flowRefillDelay = sim.Time(us) * sim.Microsecond
			case "horizon":
				q.horizon = sim.Time(us) * sim.Microsecond
			case "ce_threshold":
				q.ceThreshold = us * 1000
			case "offload_horizon":
				if us != 0 {
					return fmt.Errorf("fq: offload_horizon %s is invalid: the device has no pacing offload (max 0us)", v)
				}
			}
		case "horizon_drop":
			q.horizonDrop = true
		case "horizon_cap":
			q.horizonDrop = false
		case "timer_slack":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			ns, err := parseScaled(k, v, time64Suffixes, "time", "10us, 1ms", math.MaxUint32)
			if err != nil {
				return err
			}
			q.timerSlack = sim.Time(ns)
		case "weights":
			for i := range fqBands {
				n, err := a.Int(k, math.MinInt32, math.MaxInt32)
				if err != nil {
					return fmt.Errorf("%w (weights takes %d numbers)", err, fqBands)
				}
				if n < fqMinWeight {
					return fmt.Errorf("fq: weight %d of band %d is less than the minimum %d", n, i, fqMinWeight)
				}
				q.bandFlows[i].quantum = int(n)
			}
		case "bands", "priomap":
			if k == "bands" {
				n, err := a.Int(k, math.MinInt32, math.MaxInt32)
				if err != nil {
					return err
				}
				if n != fqBands {
					return fmt.Errorf("fq: bands %d is invalid: fq only supports 3 bands", n)
				}
				if w := a.Next(); w != "priomap" {
					return fmt.Errorf("fq: \"priomap\" expected after bands 3, got %q", w)
				}
			}
			for i := range q.prio2band {
				n, err := a.Int("priomap", 0, math.MaxUint32)
				if err != nil {
					return fmt.Errorf("%w (priomap takes 16 bands)", err)
				}
				if n >= fqBands {
					return fmt.Errorf("fq: priomap field %d maps to a too high band %d (bands are 0..2)", i, n)
				}
				q.prio2band[i] = uint8(n)
			}
		default:
			return a.Unknown(k, knownOptions...)
		}
	}
	return nil
}

// sprintSize is iproute2's sprint_size.
func sprintSize(sz uint64) string {
	const kilo, mega, giga = 1024, 1024 * 1024, 1024 * 1024 * 1024
	t := float64(sz)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	switch {
	case sz >= giga && math.Abs(giga*math.RoundToEven(t/giga)-t) < 1024:
		return g(math.RoundToEven(t/giga)) + "Gb"
	case sz >= mega && math.Abs(mega*math.RoundToEven(t/mega)-t) < 1024:
		return g(math.RoundToEven(t/mega)) + "Mb"
	case sz >= kilo && math.Abs(kilo*math.RoundToEven(t/kilo)-t) < 16:
		return g(math.RoundToEven(t/kilo)) + "Kb"
	}
	return strconv.FormatUint(sz, 10) + "b"
}

// sprintRate is iproute2's print_color_rate (SI units) of bytes/s.
func sprintRate(bytesPerSec uint64) string {
	units := []string{"", "K", "M", "G", "T"}
	r := bytesPerSec << 3
	i := 0
	for ; i < len(units)-1; i++ {
		if r < 1000 || (r%1000 != 0 && r < 1000*1000) {
			break
		}
		r /= 1000
	}
	return strconv.FormatUint(r, 10) + units[i] + "bit"
}

// sprintTime is iproute2's sprint_time of microseconds.
func sprintTime(us uint64) string {
	t := float64(us)
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(t/1e6, 'g', 3, 64) + "s"
	case us >= 1e3:
		return strconv.FormatFloat(t/1e3, 'g', 3, 64) + "ms"
	}
	return strconv.FormatUint(us, 10) + "us"
}

// sprintTime64 is iproute2's sprint_time64 of nanoseconds.
func sprintTime64(ns int64) string {
	t := float64(ns)
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(t/1e9, 'g', 3, 64) + "s"
	case ns >= 1e6:
		return strconv.FormatFloat(t/1e6, 'g', 3, 64) + "ms"
	case ns >= 1e3:
		return strconv.FormatFloat(t/1e3, 'g', 3, 64) + "us"
	}
	return strconv.FormatInt(ns, 10) + "ns"
}

// Dump implements qdisc.Qdisc: fq_dump as tc's fq_print_opt prints it.
// The bands/priomap and weights words appear only when they differ from
// the defaults, so the default line matches older tc output.
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
	if q.prio2band != defaultPrio2band {
		w = append(w, "bands", "3", "priomap")
		for _, b := range q.prio2band {
			w = append(w, strconv.Itoa(int(b)))
		}
	}
	if q.bandFlows[0].quantum != defaultWeights[0] || q.bandFlows[1].quantum != defaultWeights[1] ||
		q.bandFlows[2].quantum != defaultWeights[2] {
		w = append(w, "weights")
		for i := range q.bandFlows {
			w = append(w, strconv.Itoa(q.bandFlows[i].quantum))
		}
	}
	w = append(w, "quantum", sprintSize(uint64(q.quantum)), "initial_quantum", sprintSize(uint64(q.initialQuantum)))
	if q.flowMaxRate != rateUnlimited {
		w = append(w, "maxrate", sprintRate(q.flowMaxRate))
	}
	if q.lowRateThreshold != 0 {
		w = append(w, "low_rate_threshold", sprintRate(q.lowRateThreshold))
	}
	w = append(w, "refill_delay", sprintTime(uint64(q.flowRefillDelay/sim.Microsecond)))
	if us := q.ceThreshold / 1000; us != math.MaxUint32 {
		w = append(w, "ce_threshold", sprintTime(us))
	}
	w = append(w, "timer_slack", sprintTime64(int64(q.timerSlack)), "horizon", sprintTime(uint64(q.horizon/sim.Microsecond)))
	if q.horizonDrop {
		w = append(w, "horizon_drop")
	} else {
		w = append(w, "horizon_cap")
	}
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
	kv("next_packet_delay", next)
	kv("gc", int64(q.statGCFlows))
	kv("highprio", 0) // highprio_packets: always 0 since the bands replaced it
	kv("fastpath", int64(q.statFastpathPackets))
	kv("retrans", 0) // tcp_retrans: always 0 in the kernel
	kv("throttled", int64(q.statThrottled))
	kv("latency", min(q.unthrottleLatencyNs, math.MaxUint32))
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
