// Package sfb is the kernel's Stochastic Fair Blue (net/sched/sch_sfb.c):
// BLUE per flow without per-flow state. Each packet's 32-bit hash picks
// one bin on each of 8 levels of 16 (a Bloom filter); each bin counts
// the packets queued that hashed to it and keeps a BLUE marking
// probability, raised by `increment` when its count reaches `target`
// and lowered by `decrement` when it is empty. A packet is marked (or
// dropped, if not ECN-capable) with the smallest probability among its
// bins; a flow whose every bin is at 1 is unresponsive and is rate
// limited to `penalty_rate` packets a second instead. Two sets of bins
// with their own hash keys swap every `rehash` (with `db` of double
// buffering before). sfb is classful as the kernel's: its one class
// holds a pfifo of `limit` packets (a new one at every change), or any
// qdisc grafted there.
package sfb

import (
	"fmt"
	"math"
	"strconv"

	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("sfb", "Stochastic Fair Blue: BLUE marking probabilities in a Bloom filter of bins, unresponsive flows rate limited, over a child qdisc (sch_sfb.c)",
		func() qdisc.Qdisc { return &SFB{} })
}

// The bins (SFB_*).
const (
	bucketShift = 4
	numBuckets  = 1 << bucketShift
	bucketMask  = numBuckets - 1
	levels      = 32 / bucketShift
	maxProb     = 0xFFFF // SFB_MAX_PROB
	hz          = 1000   // jiffies a second, as the model's netdev.HZ
)

// bucket is struct sfb_bucket: a bin's virtual queue and probability.
type bucket struct{ qlen, pMark uint16 }

// binSet is struct sfb_bins.
type binSet struct {
	perturbation [2]uint64 // siphash_key_t
	bins         [levels][numBuckets]bucket
}

// qopt is struct tc_sfb_qopt as tc sends it (tc's own defaults).
type qopt struct {
	rehashMs, warmupMs uint32
	limit, max, bin    uint32
	increment, dec     uint32
	penRate, penBurst  uint32
}

// SFB is struct sfb_sched_data; its child is the host's leaf of class
// 1:1.
type SFB struct {
	handle   uint16
	txqlen   uint32
	opt      qopt
	limit    uint32
	rehash   int64 // jiffies
	warmup   int64
	rehashAt int64 // rehash_time
	tokenAt  int64 // token_time
	tokens   uint32
	slot     int
	dbuf     bool // double_buffering
	bins     [2]binSet
	hashes   map[skb.Handle][2]uint32 // each queued packet's sfb_skb_cb

	earlydrop, penaltydrop, bucketdrop, queuedrop, childdrop, marked uint32

	leaves            qdisc.LeafTable
	batch             qdisc.LeafBatch
	gen               uint64 // a new child at every change (Class.LeafGen)
	drops, overlimits uint64
}

// getProb is q_sfb.c's get_prob: a fraction in [0, 1], in 1/65535.
func getProb(v string) (uint32, error) {
	d, err := strconv.ParseFloat(v, 64)
	if err != nil || d < 0 || d > 1 {
		return 0, fmt.Errorf("%q is not a probability in [0, 1]", v)
	}
	return uint32(d*maxProb + 0.5), nil
}

// parse is sfb_parse_opt: tc's defaults, its words, then max and target
// from each other when one is 0.
func parse(args []string) (qopt, error) {
	o := qopt{rehashMs: 600 * 1000, warmupMs: 60 * 1000, penRate: 10, penBurst: 20,
		increment: (maxProb + 1000) / 2000, dec: (maxProb + 10000) / 20000}
	a := qdisc.NewArgs("sfb", args)
	for k := a.Next(); k != ""; k = a.Next() {
		var dst *uint32
		prob := false
		switch k {
		case "rehash":
			dst = &o.rehashMs
		case "db":
			dst = &o.warmupMs
		case "limit":
			dst = &o.limit
		case "max":
			dst = &o.max
		case "target":
			dst = &o.bin
		case "increment":
			dst, prob = &o.increment, true
		case "decrement":
			dst, prob = &o.dec, true
		case "penalty_rate":
			dst = &o.penRate
		case "penalty_burst":
			dst = &o.penBurst
		default:
			return o, qdisc.Parsef("sfb", "What is %q?", k)
		}
		v, err := a.Value(k)
		if err != nil {
			return o, err
		}
		var n uint32
		if prob {
			n, err = getProb(v)
		} else {
			n, err = units.GetUnsigned(v, 0)
		}
		if err != nil {
			return o, qdisc.Parsef("sfb", "Illegal %q", k)
		}
		*dst = n
	}
	if o.max == 0 {
		if o.bin >= 1 {
			o.max = (o.bin*5 + 1) / 4
		} else {
			o.max = 25
		}
	}
	if o.bin == 0 {
		o.bin = (o.max*4 + 3) / 5
	}
	return o, nil
}

// Init implements qdisc.Qdisc (sfb_init: the noop child, then
// sfb_change).
func (q *SFB) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = SFB{handle: uint16(s.Major()), txqlen: uint32(max(s.TxQueueLen, 0))}
	return q.Change(ctx, args)
}

// jiffies is the kernel's jiffies at ctx's time.
func jiffies(ctx qdisc.Ctx) int64 { return int64(ctx.Now()) / int64(sim.Second/hz) }

// msToJiffies is msecs_to_jiffies at HZ 1000.
func msToJiffies(ms uint32) int64 { return int64(ms) }

// Change implements qdisc.Changer (sfb_change): a new pfifo child of
// limit packets (tx_queue_len when 0; the host makes it and purges the
// old one), the parameters, the bins zeroed and both keys drawn anew.
func (q *SFB) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.opt = o
	q.limit = o.limit
	if q.limit == 0 {
		q.limit = q.txqlen
	}
	q.gen++
	now := jiffies(ctx)
	q.rehash, q.warmup = msToJiffies(o.rehashMs), msToJiffies(o.warmupMs)
	q.rehashAt, q.tokenAt = now, now
	q.tokens = o.penBurst
	q.slot, q.dbuf = 0, false
	q.bins = [2]binSet{}
	q.bins[0].perturbation = qdisc.RandKey(ctx)
	q.bins[1].perturbation = qdisc.RandKey(ctx)
	q.hashes = map[skb.Handle][2]uint32{}
	return qdisc.Info{Flags: qdisc.EmptyNoop | qdisc.HasBlock}, nil
}

func (q *SFB) class() qdisc.ClassID { return qdisc.MakeClassID(q.handle, 1) }

// adjust is the per-bin step of sfb_enqueue: an empty bin's probability
// falls, a full one's rises; it returns the smallest qlen and
// probability over the packet's bins.
func (q *SFB) adjust(set *binSet, h uint32) (minQlen, pMin uint32) {
	minQlen, pMin = math.MaxUint32, math.MaxUint32
	for i := 0; i < levels; i++ {
		b := &set.bins[i][h&bucketMask]
		h >>= bucketShift
		switch {
		case b.qlen == 0:
			b.pMark = uint16(max(int(b.pMark)-int(q.opt.dec), 0)) // prob_minus
		case uint32(b.qlen) >= q.opt.bin:
			b.pMark = uint16(min(uint32(b.pMark)+q.opt.increment, maxProb)) // prob_plus
		}
		minQlen = min(minQlen, uint32(b.qlen))
		pMin = min(pMin, uint32(b.pMark))
	}
	return minQlen, pMin
}

// qlenAdd adds d to the bins of hash h in set (0xFFFF and 0 bound them).
func qlenAdd(set *binSet, h uint32, d int) {
	for i := 0; i < levels; i++ {
		b := &set.bins[i][h&bucketMask]
		h >>= bucketShift
		if d > 0 && b.qlen < 0xFFFF || d < 0 && b.qlen > 0 {
			b.qlen = uint16(int(b.qlen) + d)
		}
	}
}

// rateLimit is sfb_rate_limit: true drops the packet (no token left).
func (q *SFB) rateLimit(ctx qdisc.Ctx) bool {
	if q.opt.penRate == 0 || q.opt.penBurst == 0 {
		return true
	}
	if q.tokens < 1 {
		now := jiffies(ctx)
		age := min(10*hz, now-q.tokenAt)
		q.tokens = uint32(uint64(age) * uint64(q.opt.penRate) / hz)
		q.tokens = min(q.tokens, q.opt.penBurst)
		q.tokenAt = now
		if q.tokens < 1 {
			return true
		}
	}
	q.tokens--
	return false
}

// Enqueue implements qdisc.Qdisc (sfb_enqueue for each packet, the
// child's one at a time: the next packet's bins read this one's).
func (q *SFB) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.enqueue(ctx, &batch[i])
	}
}

func (q *SFB) drop(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	q.drops++
	ctx.Drop(p.Handle, skb.DropQdiscDrop)
	return qdisc.XmitCN
}

func (q *SFB) enqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	if uint32(q.leaves.Qlen) >= q.limit {
		q.overlimits++
		q.queuedrop++
		return q.drop(ctx, p)
	}
	if q.rehash > 0 {
		now := jiffies(ctx)
		limit := q.rehashAt + q.rehash
		switch {
		case now > limit: // time_after
			q.bins[q.slot].perturbation = qdisc.RandKey(ctx) // sfb_swap_slot
			q.slot ^= 1
			q.dbuf = false
			q.rehashAt = now
		case !q.dbuf && q.warmup > 0 && now > limit-q.warmup:
			q.dbuf = true
		}
	}
	slot := q.slot
	var hashes [2]uint32
	var h uint32
	at := qdisc.MakeClassID(q.handle, 0)
	if fc, ok := qdisc.Filters(ctx, at); ok {
		// the external classifier's classid minor, hashed
		r := fc.Classify(p, at)
		if r.Verdict != qdisc.VerdictClass {
			// no match, or a drop: NET_XMIT_SUCCESS | __NET_XMIT_BYPASS
			q.drops++
			ctx.Drop(p.Handle, skb.DropNotSpecified) // kfree_skb
			return qdisc.XmitSuccess | qdisc.XmitBypass
		}
		ctx.Work(qdisc.WorkSiphash, 1)
		h = uint32(khash.SipHash1u32(q.bins[slot].perturbation, uint32(r.Class.Minor())))
	} else {
		ctx.Work(qdisc.WorkSiphash, 1)
		h = khash.HashPerturb(p, q.bins[slot].perturbation)
	}
	if h == 0 {
		h = 1
	}
	hashes[slot] = h
	ctx.Work(qdisc.WorkFlowScan, levels)
	minQlen, pMin := q.adjust(&q.bins[slot], h)
	other := slot ^ 1
	if minQlen >= q.opt.max {
		q.overlimits++
		q.bucketdrop++
		return q.drop(ctx, p)
	}
	if pMin >= maxProb {
		// an inelastic flow: its bins in the other set too while double
		// buffering, then the penalty box
		if q.dbuf {
			h2 := khash.HashPerturb(p, q.bins[other].perturbation)
			if h2 == 0 {
				h2 = 1
			}
			hashes[other] = h2
			q.adjust(&q.bins[other], h2)
		}
		if q.rateLimit(ctx) {
			q.overlimits++
			q.penaltydrop++
			return q.drop(ctx, p)
		}
	} else if r := uint32(ctx.Rand()) & 0xFFFF & maxProb; r < pMin { // get_random_u16
		if pMin > maxProb/2 && r < (pMin-maxProb/2)*2 {
			// marking that many: unresponsive or badly congested
			q.earlydrop++
			return q.drop(ctx, p)
		}
		if !p.SetCE() {
			q.earlydrop++
			return q.drop(ctx, p)
		}
		q.marked++
	}
	code, drops := q.batch.SendOne(ctx.(qdisc.ClassCtx), &q.leaves, p, q.class())
	q.drops += drops
	switch {
	case code == qdisc.XmitSuccess:
		for s := range 2 {
			if hashes[s] != 0 {
				qlenAdd(&q.bins[s], hashes[s], +1)
			}
		}
		q.hashes[p.Handle] = hashes
	default:
		q.childdrop++ // net_xmit_drop_count (the model's actions steal none)
	}
	return code
}

// Dequeue implements qdisc.Qdisc (sfb_dequeue: the child's head, its
// bins' counts down).
func (q *SFB) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		p, ok, _, dropped := q.leaves.Dequeue(ctx.(qdisc.ClassCtx), q.class())
		q.drops += uint64(dropped)
		if !ok {
			return skb.Packet{}, false
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		if hs, held := q.hashes[p.Handle]; held {
			delete(q.hashes, p.Handle)
			for s := range 2 {
				if hs[s] != 0 {
					qlenAdd(&q.bins[s], hs[s], -1)
				}
			}
		}
		return p, true
	})
}

// Reset implements qdisc.Resetter (sfb_reset: the host resets the
// child; slot 0, the bins zeroed, slot 0's key drawn anew).
func (q *SFB) Reset(ctx qdisc.Ctx) {
	q.leaves.Reset()
	q.slot, q.dbuf = 0, false
	k1 := q.bins[1].perturbation
	q.bins = [2]binSet{}
	q.bins[1].perturbation = k1
	q.bins[0].perturbation = qdisc.RandKey(ctx)
	clear(q.hashes)
}

// Stats implements qdisc.Qdisc: tc_sfb_xstats, with the largest bin
// qlen and probability and the average probability of the active set.
func (q *SFB) Stats() qdisc.Stats {
	var maxQ, maxP, total uint32
	for i := range q.bins[q.slot].bins {
		for _, b := range q.bins[q.slot].bins[i] {
			maxQ, maxP = max(maxQ, uint32(b.qlen)), max(maxP, uint32(b.pMark))
			total += uint32(b.pMark)
		}
	}
	x := []qdisc.XStat{qdisc.XUint("earlydrop", uint64(q.earlydrop)), qdisc.XUint("penaltydrop", uint64(q.penaltydrop)),
		qdisc.XUint("bucketdrop", uint64(q.bucketdrop)), qdisc.XUint("queuedrop", uint64(q.queuedrop)),
		qdisc.XUint("childdrop", uint64(q.childdrop)), qdisc.XUint("marked", uint64(q.marked)),
		qdisc.XUint("maxqlen", uint64(maxQ)), qdisc.XFloat("maxprob", float64(maxP)/maxProb),
		qdisc.XFloat("avgprob", float64(total/(levels*numBuckets))/maxProb)}
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops, Overlimits: q.overlimits, XStats: x}
}

// Dump implements qdisc.Qdisc: sfb_dump as sfb_print_opt prints it.
func (q *SFB) Dump() string {
	g := func(v uint32) string { return strconv.FormatFloat(float64(v)/maxProb, 'g', 6, 64) } // %lg
	return fmt.Sprintf("rehash %s db %s limit %dp max %dp target %dp increment %s decrement %s penalty_rate %dpps penalty_burst %dp ",
		units.SprintTime(q.opt.rehashMs*1000), units.SprintTime(q.opt.warmupMs*1000), q.limit, q.opt.max, q.opt.bin,
		g(q.opt.increment), g(q.opt.dec), q.opt.penRate, q.opt.penBurst)
}

// ChangeClass implements qdisc.Classful: sfb_change_class is -ENOSYS
// (and tc has no class options for sfb).
func (q *SFB) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("sfb", `Error: Qdisc "sfb" is classless.`)
}

// DeleteClass implements qdisc.Classful (sfb_delete: -ENOSYS).
func (q *SFB) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("sfb", "RTNETLINK answers: Function not implemented (sfb's one class goes with the qdisc)")
}

// Classes implements qdisc.Classful: the one class 1:1 whose leaf is a
// pfifo of limit packets, made anew at every change (LeafGen); a
// deleted leaf leaves noop_qdisc (sfb_graft).
func (q *SFB) Classes() []qdisc.Class {
	return []qdisc.Class{{ID: q.class(), Parent: qdisc.MakeClassID(q.handle, 0), Leaf: true,
		DefaultLeaf: []string{"pfifo", "limit", strconv.FormatUint(uint64(q.limit), 10)}, LeafGen: q.gen,
		NoStats: true, DelNoop: true}}
}

// QlenNotify implements qdisc.Classful: the child changed without sfb
// (a purge, its own drops); the packets it dropped keep their bins
// counted, as the kernel's (sfb decrements at its own dequeue only).
func (q *SFB) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if st.Qlen == 0 {
		clear(q.hashes) // nothing held: the bins keep their counts, the model its map small
	}
}
