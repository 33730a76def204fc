package cake

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
)

var knownOptions = []string{"bandwidth", "unlimited", "autorate-ingress", "rtt", "datacentre", "lan", "metro",
	"regional", "internet", "oceanic", "satellite", "interplanetary", "besteffort", "precedence", "diffserv8",
	"diffserv4", "diffserv3", "flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost",
	"triple-isolate", "nonat", "nat", "wash", "nowash", "split-gso", "no-split-gso", "ack-filter",
	"ack-filter-aggressive", "no-ack-filter", "memlimit", "overhead", "mpu", "atm", "ptm", "noatm", "raw",
	"conservative", "ethernet", "docsis", "ingress", "egress", "fwmark", "limit", "mq-clear-tins"}

var rttWords = map[string]uint64{ // microseconds, as tc-cake's keywords
	"datacentre": 100, "lan": 1000, "metro": 10000, "regional": 30000, "internet": 100000,
	"oceanic": 300000, "satellite": 1000000, "interplanetary": 1000000000,
}

var flowWords = map[string]int{
	"flowblind": flowNone, "srchost": flowSrcIP, "dsthost": flowDstIP, "hosts": flowHosts, "flows": flowFlows,
	"dual-srchost": flowDualSrc, "dual-dsthost": flowDualDst, "triple-isolate": flowTriple,
}

var tinWords = map[string]int{
	"diffserv3": diffserv3, "diffserv4": diffserv4, "diffserv8": diffserv8, "besteffort": besteffort, "precedence": precedence,
}

type unit struct {
	suf string
	m   float64
}

var (
	rateUnits = []unit{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
		{"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3}, {"bps", 8}} // bits/s
	timeUnits = []unit{{"usec", 1}, {"us", 1}, {"msec", 1e3}, {"ms", 1e3}, {"sec", 1e6}, {"s", 1e6}} // us
	sizeUnits = []unit{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}}
)

// parseUnit parses a non-negative number with the first matching suffix
// of units (tc's get_rate / get_time / get_size words).
func parseUnit(s string, units []unit, what, example string) (float64, error) {
	v := strings.ToLower(s)
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suf) {
			v, mult = strings.TrimSuffix(v, u.suf), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f != f {
		return 0, fmt.Errorf("%q is not a %s (e.g. %s)", s, what, example)
	}
	return f * mult, nil
}

// parseRate parses a tc rate ("100Mbit", "2Gbit") into bytes per
// second, as cake keeps it.
func parseRate(s string) (uint64, error) {
	f, err := parseUnit(s, rateUnits, "rate", "100Mbit, 2Gbit")
	return uint64(f / 8), err
}

// parseTimeUs parses "5ms", "100us", "1s" into microseconds.
func parseTimeUs(s string) (uint64, error) {
	f, err := parseUnit(s, timeUnits, "time", "100ms, 500us")
	return uint64(f), err
}

// parseSize parses "32Mb", "4096", "64kb" into bytes.
func parseSize(s string) (uint64, error) {
	f, err := parseUnit(s, sizeUnits, "size", "32Mb")
	return uint64(f), err
}

// parse applies tc-cake words, as q_cake.c turns them into attributes
// and cake_change applies them.
func (q *Cake) parse(args []string) error {
	a := qdisc.NewArgs("cake", args)
	for k := a.Next(); k != ""; k = a.Next() {
		if m, ok := flowWords[k]; ok {
			q.flowMode = q.flowMode&flowNATFlag | m
			continue
		}
		if m, ok := tinWords[k]; ok {
			q.tinMode = m
			continue
		}
		if us, ok := rttWords[k]; ok {
			q.interval, q.target = us, max(us/20, 1)
			continue
		}
		switch k {
		case "bandwidth":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			r, err := parseRate(v)
			if err != nil {
				return fmt.Errorf("cake: bandwidth: %v", err)
			}
			q.rateBps = r
		case "unlimited":
			q.rateBps = 0
		case "autorate-ingress":
			return fmt.Errorf("cake: autorate-ingress is not modelled (no ingress capacity estimate)")
		case "rtt":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			us, err := parseTimeUs(v)
			if err != nil {
				return fmt.Errorf("cake: rtt: %v", err)
			}
			q.interval, q.target = max(us, 1), max(us/20, 1)
		case "nonat":
			q.flowMode &^= flowNATFlag
		case "nat":
			return fmt.Errorf("cake: nat needs conntrack, which the model does not have")
		case "wash":
			q.rateFlags |= flagWash
		case "nowash":
			q.rateFlags &^= flagWash
		case "split-gso":
			q.rateFlags |= flagSplitGSO
		case "no-split-gso":
			q.rateFlags &^= flagSplitGSO
		case "ack-filter":
			q.ackFilter = ackFilter
		case "ack-filter-aggressive":
			q.ackFilter = ackAggressive
		case "no-ack-filter":
			q.ackFilter = ackNone
		case "memlimit":
			v, err := a.Value(k)
			if err != nil {
				return err
			}
			n, err := parseSize(v)
			if err != nil || n > 1<<32-1 {
				return fmt.Errorf("cake: memlimit %q must be a size below 4Gb", v)
			}
			q.bufferConfigLimit = uint32(n)
		case "overhead":
			n, err := a.Int(k, -64, 256)
			if err != nil {
				return err
			}
			q.rateOverhead = int16(n)
			q.rateFlags |= flagOverhead
		case "mpu":
			n, err := a.Int(k, 0, 256)
			if err != nil {
				return err
			}
			q.rateMpu = uint16(n)
		case "atm":
			q.atmMode = atmATM
		case "ptm":
			q.atmMode = atmPTM
		case "noatm":
			q.atmMode = atmNone
		case "raw":
			q.rateFlags &^= flagOverhead
			q.rateOverhead = 0
		case "conservative":
			q.atmMode, q.rateOverhead = atmATM, 48
			q.rateFlags |= flagOverhead
		case "ethernet":
			q.rateOverhead, q.rateMpu = 38, 84
			q.rateFlags |= flagOverhead
		case "docsis":
			q.atmMode, q.rateOverhead, q.rateMpu = atmNone, 18, 64
			q.rateFlags |= flagOverhead
		case "ingress":
			q.rateFlags |= flagIngress
		case "egress":
			q.rateFlags &^= flagIngress
		case "fwmark":
			if _, err := a.Int(k, 0, 1<<32-1); err != nil {
				return err
			}
			// The model's packets carry no skb->mark; a mask selects nothing.
		case "mq-clear-tins":
			// txlab: the cake_mq variant whose dequeue-time rate update goes
			// through cake_configure_rates and clears unused tins.
			q.clearTinBug = true
		case "limit":
			n, err := a.Int(k, 1, 1<<20)
			if err != nil {
				return err
			}
			q.limit = int(n)
		default:
			return a.Unknown(k, knownOptions...)
		}
	}
	return nil
}

func fmtRate(bytesPerSec uint64) string {
	if bytesPerSec == 0 {
		return "unlimited"
	}
	bits := bytesPerSec * 8
	switch {
	case bits >= 1e9 && bits%1e6 == 0:
		return strconv.FormatUint(bits/1e6, 10) + "Mbit"
	case bits >= 1e6 && bits%1e3 == 0:
		return strconv.FormatUint(bits/1e3, 10) + "Kbit"
	}
	return strconv.FormatUint(bits, 10) + "bit"
}

func fmtUs(us uint64) string {
	switch {
	case us >= 1000000 && us%1000000 == 0:
		return strconv.FormatUint(us/1000000, 10) + "s"
	case us >= 1000 && us%1000 == 0:
		return strconv.FormatUint(us/1000, 10) + "ms"
	}
	return strconv.FormatUint(us, 10) + "us"
}

// Dump implements qdisc.Qdisc: the option line tc -d prints.
func (q *Cake) Dump() string {
	var w []string
	w = append(w, "bandwidth", fmtRate(q.rateBps))
	for k, v := range tinWords {
		if v == q.tinMode {
			w = append(w, k)
		}
	}
	for k, v := range flowWords {
		if v == q.flowMode&flowMask {
			w = append(w, k)
		}
	}
	w = append(w, "nonat")
	if q.rateFlags&flagWash != 0 {
		w = append(w, "wash")
	} else {
		w = append(w, "nowash")
	}
	switch q.ackFilter {
	case ackFilter:
		w = append(w, "ack-filter")
	case ackAggressive:
		w = append(w, "ack-filter-aggressive")
	default:
		w = append(w, "no-ack-filter")
	}
	if q.rateFlags&flagSplitGSO != 0 {
		w = append(w, "split-gso")
	} else {
		w = append(w, "no-split-gso")
	}
	w = append(w, "rtt", fmtUs(q.interval))
	if q.rateFlags&flagOverhead == 0 {
		w = append(w, "raw")
	}
	switch q.atmMode {
	case atmATM:
		w = append(w, "atm")
	case atmPTM:
		w = append(w, "ptm")
	}
	w = append(w, "overhead", strconv.Itoa(int(q.rateOverhead)))
	if q.rateMpu != 0 {
		w = append(w, "mpu", strconv.Itoa(int(q.rateMpu)))
	}
	if q.rateFlags&flagIngress != 0 {
		w = append(w, "ingress")
	}
	if q.bufferConfigLimit != 0 {
		w = append(w, "memlimit", strconv.FormatUint(uint64(q.bufferConfigLimit), 10)+"b")
	}
	return strings.Join(w, " ")
}

// Stats implements qdisc.Qdisc; XStats follow tc -s's cake block.
func (q *Cake) Stats() qdisc.Stats {
	st := qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops, Overlimits: q.overlimits}
	kv := func(k string, v int64) { st.XStats = append(st.XStats, qdisc.XInt(k, v)) }
	kv("memory_used", int64(q.bufferMaxUsed))
	kv("memory_limit", int64(q.bufferLimit))
	kv("min_network_size", int64(q.minNetlen))
	kv("max_network_size", int64(q.maxNetlen))
	kv("min_adj_size", int64(q.minAdjlen))
	kv("max_adj_size", int64(q.maxAdjlen))
	if q.shared != nil {
		kv("active_queues", int64(q.activeQueues))
	}
	for i := 0; i < q.tinCnt; i++ {
		b := q.tins[q.tinOrder[i]]
		p := fmt.Sprintf("tin%d_", i)
		var maxP uint32
		for f := range b.flows {
			maxP = max(maxP, b.flows[f].cvars.pDrop)
		}
		kv(p+"thresh_bps", int64(b.tinRateBps*8))
		kv(p+"target_us", int64(b.cparams.target/1000))
		kv(p+"interval_us", int64(b.cparams.interval/1000))
		kv(p+"pk_delay_us", int64(b.peakDelay/1000))
		kv(p+"av_delay_us", int64(b.avgeDelay/1000))
		kv(p+"sp_delay_us", int64(b.baseDelay/1000))
		kv(p+"backlog", int64(b.tinBacklog))
		kv(p+"pkts", int64(b.packets))
		kv(p+"bytes", int64(b.bytes))
		kv(p+"way_inds", int64(b.wayDirects))
		kv(p+"way_miss", int64(b.wayMisses))
		kv(p+"way_cols", int64(b.wayCollisions))
		kv(p+"drops", int64(b.tinDropped))
		kv(p+"marks", int64(b.tinEcnMark))
		kv(p+"ack_drop", int64(b.ackDrops))
		kv(p+"sp_flows", int64(b.sparseFlowCount))
		kv(p+"bk_flows", int64(b.bulkFlowCount))
		kv(p+"un_flows", int64(b.unresponsiveFlowCount))
		kv(p+"max_len", int64(b.maxSkblen))
		kv(p+"quantum", int64(b.tinQuantum))
		kv(p+"drop_overlimit", int64(b.dropOverlimit))
		kv(p+"blue_p_max_ppm", int64(uint64(maxP)*1000000>>32)) // txlab: BLUE's largest p_drop
	}
	return st
}

// BlueMax is the largest BLUE drop probability of any flow, in [0, 1].
func (q *Cake) BlueMax() float64 {
	var m uint32
	for i := 0; i < q.tinCnt; i++ {
		for f := range q.tins[i].flows {
			m = max(m, q.tins[i].flows[f].cvars.pDrop)
		}
	}
	return float64(m) / float64(1<<32)
}
