package cake

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
)

// tc-cake's keywords (q_cake.c cake_parse_opt), then txlab's lab-only
// words (labOptions): "limit N" (sch->limit, which tc cannot set),
// "mq-clear-tins" (the cake_mq variant that re-programs every tin; see
// mq.go) and "lab-noblue" (BLUE off, the thread's experiment).
var knownOptions = []string{"bandwidth", "unlimited", "autorate-ingress", "rtt", "datacentre", "lan", "metro",
	"regional", "internet", "oceanic", "satellite", "interplanetary", "besteffort", "precedence", "diffserv8",
	"diffserv4", "diffserv", "diffserv3", "nowash", "wash", "split-gso", "no-split-gso", "flowblind", "srchost",
	"dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate", "nat", "nonat", "ptm", "atm",
	"noatm", "raw", "conservative", "ipoa-vcmux", "ipoa-llcsnap", "bridged-vcmux", "bridged-llcsnap",
	"pppoa-vcmux", "pppoa-llc", "pppoe-vcmux", "pppoe-llcsnap", "pppoe-ptm", "bridged-ptm", "via-ethernet",
	"ethernet", "ether-vlan", "docsis", "overhead", "mpu", "ingress", "egress", "no-ack-filter", "ack-filter",
	"ack-filter-aggressive", "memlimit", "fwmark", "limit", "mq-clear-tins", "lab-noblue"}

// labOptions are the words tc-cake does not have: txlab's, for
// experiments (txlab list shows them apart).
var labOptions = []qdisc.LabOption{
	{Word: "limit N", Help: "sch->limit in packets (tc cannot set it; the kernel's default is 10240)"},
	{Word: "mq-clear-tins", Help: "cake_mq: the variant that re-programs every tin on a rate sync (see mq.go)"},
	{Word: "lab-noblue", Help: "BLUE off: cobalt_queue_full never raises p_drop, so no CAKE_FLOOD drops (the thread's \"turning off the BLUE algorithm\"); CoDel unchanged"},
}

// presets are the rtt keywords: target and interval in us.
var presets = map[string][2]uint32{
	"datacentre": {5, 100}, "lan": {50, 1000}, "metro": {500, 10000}, "regional": {1500, 30000},
	"internet": {5000, 100000}, "oceanic": {15000, 300000}, "satellite": {50000, 1000000},
	"interplanetary": {50000000, 1000000000},
}

var diffservNames = [...]string{diffserv3: "diffserv3", diffserv4: "diffserv4", diffserv8: "diffserv8",
	besteffort: "besteffort", precedence: "precedence"}

var diffservWords = map[string]uint32{"besteffort": besteffort, "precedence": precedence, "diffserv8": diffserv8,
	"diffserv4": diffserv4, "diffserv": diffserv4, "diffserv3": diffserv3}

var flowNames = [...]string{flowNone: "flowblind", flowSrcIP: "srchost", flowDstIP: "dsthost", flowHosts: "hosts",
	flowFlows: "flows", flowDualSrc: "dual-srchost", flowDualDst: "dual-dsthost", flowTriple: "triple-isolate"}

var flowWords = func() map[string]uint32 {
	m := map[string]uint32{}
	for i, n := range flowNames {
		m[n] = uint32(i)
	}
	return m
}()

// framing is a link-layer keyword: the ATM mode it sets (-1: none), the
// bytes it adds to the overhead, the mpu it sets (0: none).
type framing struct {
	atm       int
	add       int32
	mpu       uint32
	overheads bool // sets TCA_CAKE_OVERHEAD
}

var framings = map[string]framing{
	// ADSL, over ATM cells.
	"ipoa-vcmux": {atmATM, 8, 0, true}, "ipoa-llcsnap": {atmATM, 16, 0, true},
	"bridged-vcmux": {atmATM, 24, 0, true}, "bridged-llcsnap": {atmATM, 32, 0, true},
	"pppoa-vcmux": {atmATM, 10, 0, true}, "pppoa-llc": {atmATM, 14, 0, true},
	"pppoe-vcmux": {atmATM, 32, 0, true}, "pppoe-llcsnap": {atmATM, 40, 0, true},
	// VDSL2, over PTM.
	"pppoe-ptm": {atmPTM, 30, 0, true}, "bridged-ptm": {atmPTM, 22, 0, true},
	// Ethernet: preamble, gap and FCS; a VLAN tag; DOCSIS frames.
	"ethernet": {-1, 38, 84, true}, "ether-vlan": {-1, 4, 0, true}, "docsis": {atmNone, 18, 64, true},
	"via-ethernet": {-1, 0, 0, false}, // ignored since cake compensates itself
}

// qopt is the TCA_CAKE_* attributes tc sends (cake_parse_opt), plus the
// txlab words.
type qopt struct {
	baseRate                                      qdisc.Attr[uint64] // bytes/s; 0 is unlimited
	diffserv, atm, flowMode, mpu, rtt, target     qdisc.Attr[uint32]
	autorate, memory, fwmark, nat, wash, splitGSO qdisc.Attr[uint32]
	ingress, ackFilter                            qdisc.Attr[uint32]
	overhead                                      qdisc.Attr[int32]
	raw                                           bool
	limit                                         qdisc.Attr[uint32] // txlab: sch->limit
	clearTins                                     bool               // txlab: mq-clear-tins
	noBlue                                        bool               // txlab: lab-noblue
	preset                                        string             // the rtt keyword given, if any
	bandwidthSet, unlimited                       bool
}

// flagWords are the keywords that set one attribute to a value.
var flagWords = map[string]func(*qopt){
	"nowash": func(o *qopt) { o.wash.Put(0) }, "wash": func(o *qopt) { o.wash.Put(1) },
	"split-gso": func(o *qopt) { o.splitGSO.Put(1) }, "no-split-gso": func(o *qopt) { o.splitGSO.Put(0) },
	"nat": func(o *qopt) { o.nat.Put(1) }, "nonat": func(o *qopt) { o.nat.Put(0) },
	"ptm": func(o *qopt) { o.atm.Put(atmPTM) }, "atm": func(o *qopt) { o.atm.Put(atmATM) },
	"noatm":   func(o *qopt) { o.atm.Put(atmNone) },
	"ingress": func(o *qopt) { o.ingress.Put(1) }, "egress": func(o *qopt) { o.ingress.Put(0) },
	"no-ack-filter": func(o *qopt) { o.ackFilter.Put(ackNone) }, "ack-filter": func(o *qopt) { o.ackFilter.Put(ackFilter) },
	"ack-filter-aggressive": func(o *qopt) { o.ackFilter.Put(ackAggressive) },
	"autorate-ingress":      func(o *qopt) { o.autorate.Put(1) },
	"unlimited":             func(o *qopt) { o.baseRate.Put(0); o.unlimited = true; o.autorate.Put(0) },
	"raw": func(o *qopt) {
		o.atm.Put(atmNone)
		o.overhead.Put(0)
		o.raw = true
	},
	"conservative":  func(o *qopt) { o.atm.Put(atmATM); o.overhead.Put(48) },
	"mq-clear-tins": func(o *qopt) { o.clearTins = true },
	"lab-noblue":    func(o *qopt) { o.noBlue = true },
}

// valueWords are the keywords that take a value.
var valueWords = map[string]func(*qdisc.Args, *qopt) error{
	"bandwidth": func(a *qdisc.Args, o *qopt) error {
		r, err := a.Rate64("bandwidth")
		o.baseRate.Put(r)
		o.bandwidthSet, o.unlimited = r != 0, false
		o.autorate.Put(0)
		return err
	},
	"rtt": func(a *qdisc.Args, o *qopt) error {
		us, err := a.Time("rtt")
		o.rtt.Put(us)
		o.target.Put(max(us/20, 1))
		return err
	},
	"overhead": func(a *qdisc.Args, o *qopt) error {
		n, err := a.Int("overhead", -64, 256)
		o.overhead.Put(int32(n))
		return err
	},
	"mpu": func(a *qdisc.Args, o *qopt) error {
		n, err := a.Int("mpu", 0, 256)
		o.mpu.Put(uint32(n))
		return err
	},
	"memlimit": func(a *qdisc.Args, o *qopt) error {
		n, err := a.Size("memlimit")
		o.memory.Put(n)
		return err
	},
	"fwmark": func(a *qdisc.Args, o *qopt) error {
		n, err := a.Unsigned("fwmark") // get_u32(..., 0)
		o.fwmark.Put(n)
		return err
	},
	"limit": func(a *qdisc.Args, o *qopt) error {
		n, err := a.Int("limit", 1, 1<<20)
		o.limit.Put(uint32(n))
		return err
	},
}

// parse is cake_parse_opt: keywords into attributes, in tc's order of
// precedence (a later word wins; framings add to the overhead).
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("cake", args)
	for k := a.Next(); k != ""; k = a.Next() {
		if err := parseWord(a, &o, k); err != nil {
			return o, err
		}
	}
	// tc sends what it was given, leaving out a zero rate (unless
	// "unlimited"), mpu, rtt, target, memlimit and fwmark.
	o.baseRate.Set = o.bandwidthSet || o.unlimited
	for _, at := range []*qdisc.Attr[uint32]{&o.mpu, &o.rtt, &o.target, &o.memory, &o.fwmark} {
		at.Set = at.Set && at.V != 0
	}
	return o, nil
}

func parseWord(a *qdisc.Args, o *qopt, k string) error {
	if p, ok := presets[k]; ok {
		if o.preset != "" {
			return qdisc.Parsef("cake", "duplicate %q: %q is the second value", o.preset, k)
		}
		o.preset = k
		o.target.Put(p[0])
		o.rtt.Put(p[1])
		return nil
	}
	if m, ok := diffservWords[k]; ok {
		o.diffserv.Put(m)
		return nil
	}
	if m, ok := flowWords[k]; ok {
		o.flowMode.Put(m)
		return nil
	}
	if f, ok := framings[k]; ok {
		if f.atm >= 0 {
			o.atm.Put(uint32(f.atm))
		}
		if f.overheads {
			o.overhead.Put(o.overhead.V + f.add)
		}
		if f.mpu != 0 {
			o.mpu.Put(f.mpu)
		}
		return nil
	}
	if f, ok := flagWords[k]; ok {
		f(o)
		return nil
	}
	if f, ok := valueWords[k]; ok {
		return f(a, o)
	}
	return a.Unknown(k, knownOptions...)
}

// validate is cake_config_change's refusal: autorate-ingress on a
// cake_mq child's shared configuration.
func (q *Cake) validate(o qopt) error {
	if o.autorate.Set && o.autorate.V != 0 && (q.shared != nil || q.sharedGroup) {
		return qdisc.Refusef("cake_mq", "Can't use autorate-ingress with cake_mq (EOPNOTSUPP)")
	}
	return nil
}

// apply is cake_config_change's assignments, in its order. It reports
// whether the overhead changed (TCA_CAKE_OVERHEAD or TCA_CAKE_RAW), which
// resets the packet-size statistics.
func (q *Cake) apply(o qopt) (overheadChanged bool) {
	q.applyShaper(o)
	q.applyRest(o)
	return o.overhead.Set || o.raw
}

// applyShaper: NAT, the rate, the tins, the flow mode and the framing.
func (q *Cake) applyShaper(o qopt) {
	if o.nat.Set {
		q.flowMode = q.flowMode&^flowNATFlag | flowNATFlag*int(o.nat.V&1)
	}
	if o.baseRate.Set {
		q.rateBps = o.baseRate.V
		if q.shared != nil {
			q.shared.rateBps = o.baseRate.V
		}
	}
	if o.diffserv.Set {
		q.tinMode = int(o.diffserv.V)
	}
	q.setFlag(o.wash, flagWash)
	if o.flowMode.Set {
		q.flowMode = q.flowMode&flowNATFlag | int(o.flowMode.V)&flowMask
	}
	if o.atm.Set {
		q.atmMode = int(o.atm.V)
	}
	if o.overhead.Set {
		q.rateOverhead = int16(o.overhead.V)
		q.rateFlags |= flagOverhead
	}
	if o.raw {
		q.rateFlags &^= flagOverhead
	}
	if o.mpu.Set {
		q.rateMpu = uint16(o.mpu.V)
	}
}

// applyRest: CoDel's rtt and target, ingress, the ACK filter, the memory
// limit, GSO splitting, the fwmark, and txlab's words.
func (q *Cake) applyRest(o qopt) {
	if o.rtt.Set {
		q.interval = uint64(max(o.rtt.V, 1))
	}
	if o.target.Set {
		q.target = uint64(max(o.target.V, 1))
	}
	q.setFlag(o.autorate, flagAutorate)
	q.setFlag(o.ingress, flagIngress)
	if o.ackFilter.Set {
		q.ackFilter = int(o.ackFilter.V)
	}
	if o.memory.Set {
		q.bufferConfigLimit = o.memory.V
	}
	q.setFlag(o.splitGSO, flagSplitGSO)
	if o.fwmark.Set {
		q.fwmarkMask = o.fwmark.V
		q.fwmarkShft = uint(bits.TrailingZeros32(o.fwmark.V)) % 32 // __ffs; 0 for no mask
	}
	if o.limit.Set {
		q.limit = int(o.limit.V)
	}
	q.clearTinBug = q.clearTinBug || o.clearTins
	q.noBlue = q.noBlue || o.noBlue
}

func (q *Cake) setFlag(at qdisc.Attr[uint32], flag int) {
	if !at.Set {
		return
	}
	if at.V != 0 {
		q.rateFlags |= flag
	} else {
		q.rateFlags &^= flag
	}
}

// configRate is the configured rate in bytes/s: a cake_mq child's shared
// configuration's, not the share it shapes to now.
func (q *Cake) configRate() uint64 {
	if q.shared != nil {
		return q.shared.rateBps
	}
	return q.rateBps
}

// Dump implements qdisc.Qdisc: cake_dump as tc's cake_print_opt prints
// it, in its order and words.
func (q *Cake) Dump() string {
	w := []string{"bandwidth", "unlimited"}
	if r := q.configRate(); r != 0 {
		w[1] = units.SprintRate(r)
	}
	if q.rateFlags&flagAutorate != 0 {
		w = append(w, "autorate-ingress")
	}
	w = append(w, diffservNames[q.tinMode], flowNames[q.flowMode&flowMask])
	w = append(w, pick(q.flowMode&flowNATFlag != 0, "nat", "nonat"), pick(q.rateFlags&flagWash != 0, "wash", "nowash"))
	if q.rateFlags&flagIngress != 0 {
		w = append(w, "ingress")
	}
	w = append(w, [...]string{ackNone: "no-ack-filter", ackFilter: "ack-filter", ackAggressive: "ack-filter-aggressive"}[q.ackFilter])
	w = append(w, pick(q.rateFlags&flagSplitGSO != 0, "split-gso", "no-split-gso"))
	if q.interval != 0 {
		w = append(w, "rtt", units.SprintTime(uint32(min(q.interval, math.MaxUint32))))
	}
	raw := q.rateFlags&flagOverhead == 0
	if raw {
		w = append(w, "raw")
	}
	switch {
	case q.atmMode == atmATM:
		w = append(w, "atm")
	case q.atmMode == atmPTM:
		w = append(w, "ptm")
	case !raw:
		w = append(w, "noatm")
	}
	w = append(w, "overhead", strconv.Itoa(int(q.rateOverhead)))
	if q.rateMpu != 0 {
		w = append(w, "mpu", strconv.Itoa(int(q.rateMpu)))
	}
	if q.bufferConfigLimit != 0 {
		w = append(w, "memlimit", units.SprintSize(uint64(q.bufferConfigLimit)))
	}
	if q.fwmarkMask != 0 {
		w = append(w, "fwmark", fmt.Sprintf("0x%x", q.fwmarkMask))
	}
	if q.noBlue {
		w = append(w, "lab-noblue") // txlab's, so a report shows it; tc has no such word
	}
	return strings.Join(w, " ")
}

func pick(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}

// Stats implements qdisc.Qdisc: cake_dump_stats, in its fields and the
// units tc -s prints them in (cake_print_xstats): memory used and limit
// as sizes, the capacity estimate and each tin's threshold as rates
// (bytes/s, printed in bits), CoDel's target and interval and the delay
// averages as times. Each tin's keys carry its dump position, tin_order
// (diffserv3 dumps Bulk, Best Effort, Voice). Three keys are txlab's,
// not the kernel's: drop_overlimit (b->drop_overlimit, kept but not
// dumped), blue_p_max_ppm (the largest BLUE p_drop of the tin's flows,
// which the kernel shows per flow in tc -s class show as blue_prob) and
// codel_dropping (the tin's flows in CoDel's dropping state, each flow's
// "dropping" there).
func (q *Cake) Stats() qdisc.Stats {
	st := qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops, Overlimits: q.overlimits}
	add := func(x qdisc.XStat) { st.XStats = append(st.XStats, x) }
	u := func(k string, v uint64) { add(qdisc.XUint(k, v)) }
	add(qdisc.XSize("memory_used", uint64(q.bufferMaxUsed)))
	add(qdisc.XSize("memory_limit", uint64(q.bufferLimit)))
	add(qdisc.XRate("capacity_estimate", q.avgPeakBandwidth))
	u("min_network_size", uint64(q.minNetlen))
	u("max_network_size", uint64(q.maxNetlen))
	u("min_adj_size", uint64(q.minAdjlen))
	u("max_adj_size", uint64(q.maxAdjlen))
	// cake_dump_stats puts TCA_CAKE_STATS_ACTIVE_QUEUES for every
	// cake, cake_mq's children or not (0 unless cake_mq's rate
	// sharing counted them), and q_cake.c prints "active queues"
	// whenever it is there, before the average header offset.
	u("active_queues", uint64(q.activeQueues))
	u("avg_hdr_offset", uint64((q.avgNetoff+0x8000)>>16))
	us := func(t uint64) sim.Time { return sim.Time(t / 1000 * 1000) } // ktime_to_us, as tc gets it
	for i := 0; i < q.tinCnt; i++ {
		b := q.tins[q.tinOrder[i]]
		p := fmt.Sprintf("tin%d_", i)
		var maxP uint32
		var dropping uint64
		for f := range b.flows {
			maxP = max(maxP, b.flows[f].cvars.pDrop)
			if b.flows[f].cvars.dropping {
				dropping++
			}
		}
		add(qdisc.XRate(p+"thresh", b.tinRateBps))
		add(qdisc.XTime(p+"target", us(uint64(b.cparams.target))))
		add(qdisc.XTime(p+"interval", us(uint64(b.cparams.interval))))
		add(qdisc.XTime(p+"pk_delay", us(b.peakDelay)))
		add(qdisc.XTime(p+"av_delay", us(b.avgeDelay)))
		add(qdisc.XTime(p+"sp_delay", us(b.baseDelay)))
		add(qdisc.XSize(p+"backlog", uint64(b.tinBacklog)))
		u(p+"pkts", uint64(b.packets))
		u(p+"bytes", b.bytes)
		u(p+"way_inds", uint64(b.wayHits))
		u(p+"way_miss", uint64(b.wayMisses))
		u(p+"way_cols", uint64(b.wayCollisions))
		u(p+"drops", uint64(b.tinDropped))
		u(p+"marks", uint64(b.tinEcnMark))
		u(p+"ack_drop", uint64(b.ackDrops))
		u(p+"sp_flows", uint64(b.sparseFlowCount)+uint64(b.decayingFlowCount))
		u(p+"bk_flows", uint64(b.bulkFlowCount))
		u(p+"un_flows", uint64(b.unresponsiveFlowCount))
		u(p+"max_len", uint64(b.maxSkblen))
		u(p+"quantum", uint64(b.flowQuantum))
		u(p+"drop_overlimit", uint64(b.dropOverlimit))  // txlab
		u(p+"blue_p_max_ppm", uint64(maxP)*1000000>>32) // txlab
		u(p+"codel_dropping", dropping)                 // txlab
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
