// Package hhf is the kernel's Heavy-Hitter Filter (net/sched/sch_hhf.c):
// packets go to one of two buckets, heavy hitters and the rest, served
// by a weighted deficit round robin that gives the rest non_hh_weight
// quanta to the heavy hitters' one, and a new burst of the rest strict
// priority (fq_codel's new flows). A flow becomes a heavy hitter in a
// multi-stage filter (Estan and Varghese, SIGCOMM 2002): four arrays of
// 1024 byte counters, indexed by three 10-bit chunks of the flow's hash
// and their xor, grown by conservative update and cleared every
// reset_timeout; a flow whose four counters would all pass admit_bytes
// enters the table of heavy hitters (1024 chains of flows, at most
// hh_limit of them), where it stays while it sends within
// evict_timeout. Over the limit, the heavy hitters' head is dropped
// first.
package hhf

import (
	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("hhf", "Heavy-Hitter Filter: a multi-stage filter finds heavy flows, which a weighted DRR serves after the rest (sch_hhf.c)",
		func() qdisc.Qdisc { return &HHF{} })
}

// sch_hhf.c's fixed sizes.
const (
	hhFlowsCnt   = 1024  // HH_FLOWS_CNT: chains of table T
	arraysCnt    = 4     // HHF_ARRAYS_CNT: arrays of filter F
	arraysLen    = 1024  // HHF_ARRAYS_LEN: counters in each
	bitMaskLen   = 10    // HHF_BIT_MASK_LEN
	bitMask      = 0x3FF // HHF_BIT_MASK
	hz           = 1000  // jiffies a second, as the model's netdev.HZ
	bucketHH     = 0     // WDRR_BUCKET_FOR_HH
	bucketNonHH  = 1     // WDRR_BUCKET_FOR_NON_HH
	onNoList     = 0     // the bucketchain is empty (list_empty)
	onNewBuckets = 1
	onOldBuckets = 2
)

// hhFlowState is struct hh_flow_state.
type hhFlowState struct{ hashID, hitTimestamp uint32 }

// wdrrBucket is struct wdrr_bucket; on says which list its bucketchain
// is on.
type wdrrBucket struct {
	q       qdisc.Ring[skb.Packet]
	deficit int32
	on      int
}

// HHF is struct hhf_sched_data, with sch->limit, sch->q.qlen and the
// packet qdisc_peek_dequeued keeps on sch->gso_skb.
type HHF struct {
	buckets      [2]wdrrBucket
	perturbation [2]uint64 // siphash_key_t
	quantum      uint32
	newBuckets   []int // bucket indices, head first
	oldBuckets   []int

	hhFlows [hhFlowsCnt][]hhFlowState // table T, each chain in list order

	hhFlowsLimit, hhFlowsOverlimit, hhFlowsTotalCnt, hhFlowsCurrentCnt uint32

	// filter F
	arrays               [arraysCnt][arraysLen]uint32
	validBits            [arraysCnt][arraysLen / 64]uint64
	arraysResetTimestamp uint32

	// the parameters, the timeouts in jiffies
	resetTimeout, admitBytes, evictTimeout, nonHHWeight uint32

	limit         uint32
	qlen          int // the peeked packet included
	backlog       int64
	drops         uint64
	dropOverlimit uint32
	peeked        qdisc.Peeked
}

// hhfTimeStamp is hhf_time_stamp: jiffies, 32 bits.
func hhfTimeStamp(ctx qdisc.Ctx) uint32 { return uint32(int64(ctx.Now()) / int64(sim.Second/hz)) }

// hhfTimeBefore is hhf_time_before.
func hhfTimeBefore(a, b uint32) bool { return int32(a-b) < 0 }

// Init implements qdisc.Qdisc (hhf_init: the defaults, a perturbation
// key, then hhf_change; the table and filter start empty).
func (q *HHF) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = HHF{limit: 1000, quantum: uint32(min(max(s.MTU, 256), 1<<20)),
		resetTimeout: hz / 25, admitBytes: 131072, evictTimeout: hz, nonHHWeight: 2, hhFlowsLimit: 2 * hhFlowsCnt}
	q.perturbation = qdisc.RandKey(ctx)
	if _, err := q.Change(ctx, args); err != nil {
		return qdisc.Info{}, err
	}
	q.arraysResetTimestamp = hhfTimeStamp(ctx)
	return q.info(), nil
}

// info: sch->limit is the packet limit. An empty dequeue still takes
// drained buckets off their lists, so hhf is no EmptyNoop.
func (q *HHF) info() qdisc.Info {
	return qdisc.Info{Limit: int(min(q.limit, 1<<31-1))}
}

// Change implements qdisc.Changer (hhf_change): the attributes sent,
// then packets dequeued from the head (the peeked one first:
// qdisc_dequeue_internal) and freed, NOT_SPECIFIED and not counted as
// drops, until the queue is within the limit.
func (q *HHF) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	quantum, weight, err := q.validate(o)
	if err != nil {
		return qdisc.Info{}, err
	}
	o.limit.Apply(&q.limit)
	q.quantum, q.nonHHWeight = quantum, weight
	o.hhLimit.Apply(&q.hhFlowsLimit)
	if o.resetTimeout.Set {
		q.resetTimeout = usecsToJiffies(o.resetTimeout.V)
	}
	o.admitBytes.Apply(&q.admitBytes)
	if o.evictTimeout.Set {
		q.evictTimeout = usecsToJiffies(o.evictTimeout.V)
	}
	for uint32(q.qlen) > q.limit {
		p, ok := q.next(ctx)
		if !ok {
			break
		}
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
	return q.info(), nil
}

// seekList is seek_list: the heavy hitter of hash in chain pos, if any;
// expired entries met on the way are freed, but for the chain's last
// (kept to be reused).
func (q *HHF) seekList(ctx qdisc.Ctx, hash uint32, pos int, now uint32) *hhFlowState {
	chain := q.hhFlows[pos]
	for i := 0; i < len(chain); {
		ctx.Work(qdisc.WorkFlowScan, 1)
		flow := &chain[i]
		if hhfTimeBefore(flow.hitTimestamp+q.evictTimeout, now) {
			if i == len(chain)-1 {
				return nil
			}
			chain = append(chain[:i], chain[i+1:]...)
			q.hhFlows[pos] = chain
			q.hhFlowsCurrentCnt--
			continue
		}
		if flow.hashID == hash {
			return flow
		}
		i++
	}
	return nil
}

// allocNewHH is alloc_new_hh: an expired entry of the chain reused, or
// a new one at its tail while the table holds fewer than hh_limit.
func (q *HHF) allocNewHH(ctx qdisc.Ctx, pos int, now uint32) *hhFlowState {
	chain := q.hhFlows[pos]
	for i := range chain {
		ctx.Work(qdisc.WorkFlowScan, 1)
		if hhfTimeBefore(chain[i].hitTimestamp+q.evictTimeout, now) {
			return &chain[i]
		}
	}
	if q.hhFlowsCurrentCnt >= q.hhFlowsLimit {
		q.hhFlowsOverlimit++
		return nil
	}
	q.hhFlowsCurrentCnt++
	q.hhFlows[pos] = append(chain, hhFlowState{})
	return &q.hhFlows[pos][len(chain)]
}

func (q *HHF) valid(i int, pos uint32) bool { return q.validBits[i][pos/64]&(1<<(pos%64)) != 0 }

// hhfClassify is hhf_classify: the filter's arrays reset when their
// time is up; a flow in table T is a heavy hitter (its timestamp
// renewed); else the packet's length is added to its four counters,
// and if the smallest would pass admit_bytes the flow enters T
// (shielded: its bytes no longer count in F), else the counters below
// that sum are raised to it (conservative update).
func (q *HHF) hhfClassify(ctx qdisc.Ctx, p *skb.Packet) int {
	now := hhfTimeStamp(ctx)
	if hhfTimeBefore(q.arraysResetTimestamp+q.resetTimeout, now) {
		q.validBits = [arraysCnt][arraysLen / 64]uint64{}
		q.arraysResetTimestamp = now
	}
	ctx.Work(qdisc.WorkHash, 1)
	hash := khash.HashPerturb(p, q.perturbation) // skb_get_hash_perturb
	flowPos := int(hash & bitMask)
	if flow := q.seekList(ctx, hash, flowPos, now); flow != nil {
		flow.hitTimestamp = now
		return bucketHH
	}
	var filterPos [arraysCnt]uint32
	tmp, xorsum := hash, uint32(0)
	for i := range arraysCnt - 1 {
		filterPos[i] = tmp & bitMask
		xorsum ^= filterPos[i]
		tmp >>= bitMaskLen
	}
	filterPos[arraysCnt-1] = xorsum ^ tmp
	ctx.Work(qdisc.WorkFlowScan, arraysCnt)
	minVal := ^uint32(0)
	for i, pos := range filterPos {
		if !q.valid(i, pos) {
			q.arrays[i][pos] = 0
			q.validBits[i][pos/64] |= 1 << (pos % 64)
		}
		minVal = min(minVal, q.arrays[i][pos]+p.Len)
	}
	if minVal > q.admitBytes {
		flow := q.allocNewHH(ctx, flowPos, now)
		if flow == nil {
			return bucketNonHH
		}
		flow.hashID, flow.hitTimestamp = hash, now
		q.hhFlowsTotalCnt++
		return bucketHH
	}
	for i, pos := range filterPos {
		if q.arrays[i][pos] < minVal {
			q.arrays[i][pos] = minVal
		}
	}
	return bucketNonHH
}

// listAddTail puts bucket b at the tail of list on.
func (q *HHF) listAddTail(b, on int) {
	q.buckets[b].on = on
	if on == onNewBuckets {
		q.newBuckets = append(q.newBuckets, b)
	} else {
		q.oldBuckets = append(q.oldBuckets, b)
	}
}

// listDel takes bucket b off its list (list_del_init).
func (q *HHF) listDel(b int) {
	l := &q.oldBuckets
	if q.buckets[b].on == onNewBuckets {
		l = &q.newBuckets
	}
	for i, x := range *l {
		if x == b {
			*l = append((*l)[:i], (*l)[i+1:]...)
			break
		}
	}
	q.buckets[b].on = onNoList
}

// weight is a bucket's WDRR weight: 1 for the heavy hitters.
func (q *HHF) weight(b int) uint32 {
	if b == bucketHH {
		return 1
	}
	return q.nonHHWeight
}

// Enqueue implements qdisc.Qdisc (hhf_enqueue for each packet).
func (q *HHF) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.hhfEnqueue(ctx, &batch[i])
	}
}

// hhfEnqueue is hhf_enqueue: to its bucket's tail; a bucket not on a
// list joins old_buckets (heavy hitters) or new_buckets (the rest) with
// a fresh deficit. Over the limit one packet is dropped (hhf_drop):
// NET_XMIT_CN if from this packet's bucket.
func (q *HHF) hhfEnqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	idx := q.hhfClassify(ctx, p)
	b := &q.buckets[idx]
	b.q.PushTail(*p)
	q.backlog += int64(p.Len)
	if b.on == onNoList {
		if idx == bucketHH {
			q.listAddTail(idx, onOldBuckets)
		} else {
			q.listAddTail(idx, onNewBuckets)
		}
		b.deficit = int32(q.weight(idx) * q.quantum)
	}
	q.qlen++
	if uint32(q.qlen) <= q.limit {
		return qdisc.XmitSuccess
	}
	q.dropOverlimit++
	if q.hhfDrop(ctx) == idx {
		return qdisc.XmitCN
	}
	return qdisc.XmitSuccess
}

// hhfDrop is hhf_drop: the heavy hitters' head, or the other bucket's.
func (q *HHF) hhfDrop(ctx qdisc.Ctx) int {
	idx := bucketHH
	if q.buckets[idx].q.Len() == 0 {
		idx = bucketNonHH
	}
	if b := &q.buckets[idx]; b.q.Len() > 0 {
		p := b.q.PopHead()
		q.qlen--
		q.backlog -= int64(p.Len)
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
	}
	return idx
}

// hhfDequeue is hhf_dequeue: new_buckets first; a bucket out of deficit
// gets its weight's quanta and goes to old_buckets' tail; an empty one
// leaves its list (a new one passes through old_buckets first, while
// that list is not empty, so the heavy hitters are not starved).
func (q *HHF) hhfDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	for {
		head := onNewBuckets
		if len(q.newBuckets) == 0 {
			head = onOldBuckets
			if len(q.oldBuckets) == 0 {
				return skb.Packet{}, false
			}
		}
		idx := q.oldBuckets
		if head == onNewBuckets {
			idx = q.newBuckets
		}
		bi := idx[0]
		b := &q.buckets[bi]
		if b.deficit <= 0 {
			b.deficit += int32(q.weight(bi) * q.quantum)
			q.listDel(bi) // list_move_tail
			q.listAddTail(bi, onOldBuckets)
			continue
		}
		if b.q.Len() == 0 {
			q.listDel(bi)
			if head == onNewBuckets && len(q.oldBuckets) > 0 {
				q.listAddTail(bi, onOldBuckets)
			}
			continue
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		p := b.q.PopHead()
		q.qlen--
		q.backlog -= int64(p.Len)
		b.deficit -= int32(p.Len)
		return p, true
	}
}

// next is the next packet, the peeked one first (qdisc_dequeue_peeked).
func (q *HHF) next(ctx qdisc.Ctx) (skb.Packet, bool) {
	return q.peeked.Dequeue(&q.qlen, &q.backlog, func() (skb.Packet, bool) { return q.hhfDequeue(ctx) })
}

// Dequeue implements qdisc.Qdisc.
func (q *HHF) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.next(ctx) })
}

// Peek implements qdisc.Peeker: qdisc_peek_dequeued, hhf's peek op.
func (q *HHF) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	return q.peeked.Peek(&q.qlen, &q.backlog, func() (skb.Packet, bool) { return q.hhfDequeue(ctx) })
}

// Reset implements qdisc.Resetter: hhf_reset dequeues everything and
// frees it (NOT_SPECIFIED, not drops) and empties table T and filter F
// (hhf_reset_classifier); then qdisc_reset purges the peeked packet
// (QUEUE_PURGE).
func (q *HHF) Reset(ctx qdisc.Ctx) {
	for {
		p, ok := q.hhfDequeue(ctx)
		if !ok {
			break
		}
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
	q.hhFlows = [hhFlowsCnt][]hhFlowState{}
	q.hhFlowsCurrentCnt = 0
	q.validBits = [arraysCnt][arraysLen / 64]uint64{}
	q.arraysResetTimestamp = hhfTimeStamp(ctx)
	q.peeked.Purge(ctx)
	q.qlen, q.backlog = 0, 0
}

// Stats implements qdisc.Qdisc: tc_hhf_xstats as hhf_print_xstats
// prints them.
func (q *HHF) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops,
		XStats: []qdisc.XStat{
			qdisc.XUint("drop_overlimit", uint64(q.dropOverlimit)),
			qdisc.XUint("hh_overlimit", uint64(q.hhFlowsOverlimit)),
			qdisc.XUint("tot_hh", uint64(q.hhFlowsTotalCnt)),
			qdisc.XUint("cur_hh", uint64(q.hhFlowsCurrentCnt)),
		}}
}
