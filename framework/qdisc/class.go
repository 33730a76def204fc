package qdisc

import (
	"fmt"
	"slices"

	"github.com/txlab/txlab/framework/skb"
)

// ClassID is a class handle, major:minor as the kernel holds it in a u32
// (TC_H_MAKE): tc writes it "1:10" (hex). A classful qdisc's classes
// share its major; X:0 names the qdisc itself.
type ClassID uint32

// RootClass is TC_H_ROOT: the parent of a class at the top of its qdisc
// (tcm_parent of htb's root classes).
const RootClass ClassID = 0xFFFFFFFF

// MakeClassID is TC_H_MAKE(maj << 16, min).
func MakeClassID(maj, min uint16) ClassID { return ClassID(uint32(maj)<<16 | uint32(min)) }

// Major is TC_H_MAJ(c) >> 16.
func (c ClassID) Major() uint16 { return uint16(c >> 16) }

// Minor is TC_H_MIN(c).
func (c ClassID) Minor() uint16 { return uint16(c) }

// String prints c as print_tc_classid does: "root", "none", ":a", "1:"
// or "1:a".
func (c ClassID) String() string {
	switch {
	case c == RootClass:
		return "root"
	case c == 0:
		return "none"
	case c.Major() == 0:
		return fmt.Sprintf(":%x", c.Minor())
	case c.Minor() == 0:
		return fmt.Sprintf("%x:", c.Major())
	}
	return fmt.Sprintf("%x:%x", c.Major(), c.Minor())
}

// Classful is a qdisc with classes, the kernel's Qdisc_class_ops: htb,
// prio, drr. It is a Qdisc and is served, isolated and tested like one; a
// leaf-only qdisc implements none of this.
//
// Its classes' leaf qdiscs are held by the host, not by the plugin: each
// leaf is a full qdisc of any kind (built-in or plugin), made by the host
// as pfifo when a class appears (qdisc_create_dflt) and replaced by `tc
// qdisc add ... parent CLASSID`. The classful qdisc reaches them only
// through ClassCtx, the context every call of a Classful gets (assert it:
// ctx.(qdisc.ClassCtx)):
//
//   - Enqueue classifies each packet (ClassCtx.Classify runs the filters
//     attached to the qdisc or a class, tcf_classify) and hands the whole
//     batch to the leaves in one host call (EnqueueLeaves,
//     qdisc_enqueue per packet), or keeps or drops a packet itself
//     (htb's direct queue);
//   - Dequeue takes packets from leaves one at a time (DequeueLeaf,
//     cl->leaf.q->dequeue), as the kernel's classful dequeues do, and
//     may look first (PeekLeaf).
//
// Every answer carries the leaf's qlen and backlog after the operation,
// so the qdisc keeps an exact copy of its leaves' state (the kernel's
// qdisc reads cl->leaf.q->q.qlen). Stats().Qlen and Backlog of a
// classful qdisc are its whole tree, as sch->q.qlen is: what it holds
// itself plus its leaves; the host checks that total at every accounting
// check. A leaf whose qlen changes outside the qdisc's own calls (a `tc
// qdisc change` that drops, a graft that purges the old leaf) is reported
// with QlenNotify (qdisc_tree_reduce_backlog and cops->qlen_notify).
type Classful interface {
	Qdisc
	// ChangeClass is `tc class add|change|replace` (cops->change): the
	// class's tc words, parsed and validated as Init does the qdisc's,
	// then applied. A refused change changes nothing. After it the host
	// reads Classes() and makes the leaf qdiscs agree: a new leaf class
	// gets a pfifo, a class that stopped being a leaf (htb's parent of
	// a first child) loses its leaf, whose packets are purged.
	ChangeClass(ctx Ctx, req ClassReq) error
	// DeleteClass is `tc class del` (cops->delete).
	DeleteClass(ctx Ctx, id ClassID) error
	// Classes is every class in the order `tc class show` lists them
	// (cops->walk), each with its dump and stats.
	Classes() []Class
	// QlenNotify says the leaf of class id now holds leaf, after a
	// change the qdisc did not make (qdisc_tree_reduce_backlog; the
	// kernel's cops->qlen_notify when the leaf empties). Packets that
	// left it other than by DequeueLeaf were dropped: the qdisc counts
	// them in its drops, as qdisc_tree_reduce_backlog does.
	QlenNotify(ctx Ctx, id ClassID, leaf LeafState)
}

// ClassReq is one `tc class add|change|replace` (tc_ctl_tclass's
// RTM_NEWTCLASS) after the host found the qdisc: ID has the qdisc's major.
type ClassReq struct {
	ID ClassID
	// Parent is the parent as tc_ctl_tclass completes it: RootClass for
	// "root", X:0 (the qdisc's handle) for "parent X:", or a class.
	Parent ClassID
	// Create is NLM_F_CREATE (add, replace): a missing class may be
	// made. Without it (change) a missing class is refused by the host.
	Create bool
	// Exists says the class exists (the host asked Classes()): a change
	// of it, not a new one. "add" of an existing class is refused by the
	// host (NLM_F_EXCL: File exists).
	Exists bool
	Args   []string
}

// Class is one class as `tc -s -d class show` prints it.
type Class struct {
	ID     ClassID
	Parent ClassID // tcm_parent: RootClass at the top (htb) or the qdisc's X:0 (prio)
	// Leaf says the class has a leaf qdisc (htb level 0, every prio
	// band): the host holds it.
	Leaf bool
	// DefaultLeaf are the tc words of the leaf the kernel's qdisc makes
	// for the class when it appears (qdisc_create_dflt,
	// fifo_create_dflt: tbf's "bfifo limit N"); nil is a pfifo. The
	// host makes it invisible, handle 0:, as it makes the pfifo.
	DefaultLeaf []string
	// GraftOnly says the class holds a leaf only once tc grafts one
	// (netem's one class: q->qdisc is NULL until `tc qdisc add ...
	// parent 1:1`): the host makes no default leaf for it, lists it in
	// `tc class show` only while it holds one (netem_dump_class answers
	// -ENOENT without), and tells the qdisc when it gets one (Grafter).
	// Leaf must be set too: the class takes a leaf qdisc.
	GraftOnly bool
	// DelNoop says a delete of the class's leaf (`tc qdisc del ...
	// parent` the class) leaves noop_qdisc there, which drops every
	// packet (tbf_graft: new ?: &noop_qdisc); otherwise it leaves a
	// default leaf as the class's first (htb, prio, drr:
	// qdisc_create_dflt of a pfifo), or, for a GraftOnly class, none.
	DelNoop bool
	// LeafGen, when it changes, has the host replace the class's leaf
	// with a new default leaf (DefaultLeaf), the old one purged and
	// destroyed, and tell the qdisc with QlenNotify: red's __red_change
	// makes a new bfifo child at every change that gives a limit
	// (fifo_create_dflt, qdisc_purge_queue and qdisc_put of the old),
	// whatever child tc had grafted. The host reads it after Init and
	// after each change.
	LeafGen uint64
	// FifoLimit, when not 0, is the limit the qdisc sets on the
	// class's leaf with fifo_set_limit (tbf_change): after a change,
	// a leaf of a fifo kind with a change op (pfifo, bfifo,
	// pfifo_head_drop: whatever qdisc was grafted there) takes it, in
	// its own unit (bytes for bfifo, packets for the others, as the
	// kernel sends the one number to each); any other leaf keeps its
	// limit.
	FifoLimit uint32
	// Filters says filters may be attached to the class itself
	// (cops->tcf_block gives it a block: htb's classes; prio's and drr's
	// have none, only the qdisc does).
	Filters bool
	// Options is the kind's print_copt text ("prio 0 quantum 200000 rate
	// 750Mbit ...").
	Options string
	// NoStats says the kind's class ops have no dump_stats (tbf,
	// netem): `tc -s class show` prints every counter of the class 0,
	// its leaf's backlog too.
	NoStats bool
	// LeafStats says the class's counters are its leaf qdisc's (prio and
	// drr dump the child's stats); otherwise the counters below are the
	// class's own, and only qlen and backlog come from the leaf.
	LeafStats bool
	// LeafQstats says the class's drops and overlimits are its leaf
	// qdisc's (qdisc_qstats_copy of the leaf: qfq_dump_class_stats),
	// its Sent counters its own (the class's bstats, which qfq counts
	// at enqueue).
	LeafQstats             bool
	SentPackets, SentBytes uint64
	Drops, Overlimits      uint64
	// Qlen and Backlog are a flow class's own queue (FlowClasses:
	// the flow's packets and bytes, gnet_stats_queue); a leaf class's
	// come from its leaf qdisc, held by the host, and are 0 here.
	Qlen    int
	Backlog int64
	// XStats are the class's tc_*_xstats (htb: lended, borrowed, giants,
	// tokens, ctokens), in the order the kind prints them.
	XStats []XStat
}

// FlowClasses is a classless qdisc whose Qdisc_class_ops walk its flows
// (fq_codel_walk, sfq_walk, cake_walk): `tc class show` lists one class
// per flow that is active, with no leaf and no options, its stats those
// of the flow (dump_class_stats). It is the dump only: such a qdisc
// takes no class changes (it has a filter block, HasBlock, whose
// classids pick a flow).
type FlowClasses interface {
	// FlowClasses is every active flow in walk order. A class's ID is
	// its minor only (cl, which the kind's dump_class ORs into the
	// qdisc's handle); the host adds the handle's major and sets Parent
	// to the qdisc (tc_fill_tclass's tcm_parent = q->handle). Qlen,
	// Backlog, Drops and XStats are the flow's; the rest stays zero.
	FlowClasses() []Class
}

// LeafState is a leaf qdisc's qlen and backlog (its whole tree's, if the
// leaf is classful itself).
type LeafState struct {
	Qlen    int
	Backlog int64
}

// LeafResult is the host's answer for one packet of EnqueueLeaves: the
// leaf's NET_XMIT code, its state after the packet, and how many
// packets the leaf made of it (Segs: a GSO skb's segments when the leaf
// segments it, as cake's split-gso does; 0 or 1 otherwise).
type LeafResult struct {
	Code Code
	Leaf LeafState
	Segs int
}

// Arrived is how many packets joined the leaf for this one (if it took
// them): what LeafTable.Update's arrived counts. A leaf that segments a
// GSO skb grows its ancestors' qlen by the extra segments without a
// drop (qdisc_tree_reduce_backlog by 1 - numsegs).
func (r LeafResult) Arrived() int { return max(r.Segs, 1) }

// Verdict is what the filters decided for a packet (tcf_classify's
// return with CONFIG_NET_CLS_ACT).
type Verdict uint8

// Verdicts.
const (
	// VerdictNone: no filter matched (tcf_classify returns TC_ACT_UNSPEC,
	// -1): the qdisc falls back (htb's default class, prio's priomap).
	VerdictNone Verdict = iota
	// VerdictClass: a filter matched; Result.Class is its classid (0 if
	// it named none, as matchall with only actions).
	VerdictClass
	// VerdictShot: an action dropped the packet (TC_ACT_SHOT).
	VerdictShot
	// VerdictStolen: an action took the packet (TC_ACT_STOLEN: mirred
	// sent it to another device); it is gone, not dropped. Only the
	// host's clsact and ingress blocks give it.
	VerdictStolen
)

// FilterResult is tcf_result with its verdict.
type FilterResult struct {
	Verdict Verdict
	Class   ClassID
	// Reason is a shot packet's drop reason when the classification
	// set one (tcf_set_drop_reason: TC_RECLASSIFY_LOOP); empty, the
	// caller's own (TC_EGRESS, a qdisc's QDISC_DROP).
	Reason skb.DropReason
}

// ClassCtx is the context of every call of a Classful qdisc: Ctx plus
// its classes' filters and leaves. In process and out of process it is
// the same code (framework/plugin/wire), so both give the same result;
// out of process each EnqueueLeaves, DequeueLeaf and PeekLeaf is one
// round trip to the host (a query), while Classify runs in the plugin's
// process on a copy of the filters the host keeps it in step with.
type ClassCtx interface {
	Ctx
	// Classify is tcf_classify over the filters attached at at: the
	// qdisc's own (at = its handle, X:0) or a class's. Actions run (an
	// skbedit priority or mark changes *p, and the host's skb when p
	// goes to a leaf). It reports one WorkHash per filter tried.
	Classify(p *skb.Packet, at ClassID) FilterResult
	// EnqueueLeaves is qdisc_enqueue(batch[i], leaf of class to[i]) for
	// every i, in order, as one host call; res[i] gets each answer. The
	// packets leave the qdisc (their drops by the leaf are the leaf's).
	// A class without a leaf is an error that ends the run.
	EnqueueLeaves(batch []skb.Packet, to []ClassID, res []LeafResult)
	// DequeueLeaf is the leaf's dequeue of one packet (qdisc_dequeue_peeked,
	// so a packet the leaf's peek set aside comes first); the packet
	// joins the qdisc. ok is false if the leaf gave none: with
	// leaf.Qlen 0 it is empty; otherwise it is not work-conserving
	// (throttled: its watchdog reschedules the root).
	DequeueLeaf(id ClassID) (p skb.Packet, ok bool, leaf LeafState)
	// PeekLeaf is the leaf's peek op (or qdisc_peek_dequeued), with the
	// leaf's qlen and backlog after it: a peek that dequeues may drop
	// (a CoDel leaf), and the kernel's leaf then tells its parent at
	// once (qdisc_tree_reduce_backlog, cops->qlen_notify when empty).
	PeekLeaf(id ClassID) (skb.Packet, bool, LeafState)
}

// Grafter is a Classful qdisc with a GraftOnly class: Grafted tells it
// the class now holds a leaf (leaf true: cops->graft put one where there
// was none; a graft in place of an existing leaf purges the old one and
// reports that with QlenNotify), or holds none any more (leaf false: `tc
// qdisc del` of its leaf, cops->graft of NULL; the leaf's packets were
// purged, reported with QlenNotify first). A new leaf is empty.
type Grafter interface {
	Grafted(ctx Ctx, id ClassID, leaf bool)
}

// LeafPacket is one packet of EnqueueLeaves on its way to the host: its
// handle, class, and the fields the qdisc may have changed, as on a
// packet it dequeues (a filter's skbedit of priority and mark, a CE
// mark: netem's ECN loss before it hands the packet to its child).
type LeafPacket struct {
	Handle   skb.Handle
	Class    ClassID
	Priority uint32
	Mark     uint32
	ECN      uint8
	DSCP     uint8
	Queue    uint16 // queue_mapping, as the qdisc's filters left it
}

// LeafPacketOf is p on its way to the leaf of class to.
func LeafPacketOf(p *skb.Packet, to ClassID) LeafPacket {
	return LeafPacket{Handle: p.Handle, Class: to, Priority: p.Priority, Mark: p.Mark, ECN: p.ECN, DSCP: p.DSCP, Queue: p.Queue}
}

// LeafTable is a classful qdisc's copy of its leaves' qlen and backlog,
// and their sum: the kernel's qdisc reads cl->leaf.q->q.qlen, and keeps
// the tree's total in sch->q.qlen (which its Stats reports). Update it
// from every EnqueueLeaves and DequeueLeaf answer and every QlenNotify.
type LeafTable struct {
	m       map[ClassID]LeafState
	Qlen    int
	Backlog int64
}

// Get is leaf id's last known state.
func (t *LeafTable) Get(id ClassID) LeafState { return t.m[id] }

// Update records leaf id's state after arrived packets went into it and
// departed came out; it returns how many packets left it otherwise: its
// own drops, which qdisc_tree_reduce_backlog counts in the ancestors'
// drops.
func (t *LeafTable) Update(id ClassID, st LeafState, arrived, departed int) int {
	if t.m == nil {
		t.m = map[ClassID]LeafState{}
	}
	old := t.m[id]
	t.m[id] = st
	t.Qlen += st.Qlen - old.Qlen
	t.Backlog += st.Backlog - old.Backlog
	return old.Qlen + arrived - departed - st.Qlen
}

// Peek is x.PeekLeaf(id) with t brought up to date: the packet, whether
// the leaf has one, its state after, and how many packets a peek that
// dequeues dropped (qdisc_peek_dequeued on a CoDel leaf), which the
// qdisc counts as its own, as the leaf's qdisc_tree_reduce_backlog does.
func (t *LeafTable) Peek(x ClassCtx, id ClassID) (p skb.Packet, ok bool, st LeafState, dropped int) {
	p, ok, st = x.PeekLeaf(id)
	return p, ok, st, t.Update(id, st, 0, 0)
}

// PeekHead is Peek for a leaf t knows to hold packets, and no host call
// for one it knows is empty (the qdisc's qlen test before
// qdisc_peek_head): the packet, whether there is one, and what the peek
// dropped.
func (t *LeafTable) PeekHead(x ClassCtx, id ClassID) (p skb.Packet, ok bool, dropped int) {
	if t.Get(id).Qlen == 0 {
		return skb.Packet{}, false, 0
	}
	p, ok, _, dropped = t.Peek(x, id)
	return p, ok, dropped
}

// Dequeue is x.DequeueLeaf(id) with t brought up to date: the packet,
// whether the leaf gave one, its state after, and how many packets it
// dropped on the way (a CoDel leaf's dequeue drops), which the qdisc
// counts as its own, as qdisc_tree_reduce_backlog does.
func (t *LeafTable) Dequeue(x ClassCtx, id ClassID) (p skb.Packet, ok bool, st LeafState, dropped int) {
	p, ok, st = x.DequeueLeaf(id)
	n := 0
	if ok {
		n = 1
	}
	return p, ok, st, t.Update(id, st, 0, n)
}

// DequeueFirst is prio_dequeue's loop, and ets_qdisc_dequeue's over its
// strict bands: the first of bands 0..n-1 (class id(b)) whose leaf gives
// a packet, with what the leaves dropped on the way.
func (t *LeafTable) DequeueFirst(ctx Ctx, x ClassCtx, n int, id func(band int) ClassID) (p skb.Packet, ok bool, dropped int) {
	for b := 0; b < n; b++ {
		c := id(b)
		ctx.Work(WorkFlowScan, 1)
		if t.Get(c).Qlen == 0 {
			continue // the band's dequeue finds nothing
		}
		p, ok, _, d := t.Dequeue(x, c)
		dropped += d
		if ok {
			ctx.Work(WorkDequeue, 1)
			return p, true, dropped
		}
	}
	return skb.Packet{}, false, dropped
}

// BandClasses are a band qdisc's classes (prio_walk, multiq_walk): one
// per band, handle:1 to handle:n under the qdisc, each a leaf whose
// stats are its leaf qdisc's (their dump_class_stats copy the child's).
func BandClasses(handle uint16, n int) []Class {
	out := make([]Class, n)
	for b := range out {
		out[b] = Class{ID: MakeClassID(handle, uint16(b+1)), Parent: MakeClassID(handle, 0), Leaf: true, LeafStats: true}
	}
	return out
}

// PrioMax is TC_PRIO_MAX: a priomap has PrioMax+1 entries, indexed by
// skb->priority's low bits.
const PrioMax = 15

// PrioBand is prio_classify's and ets_classify's band for p among bands
// bands: the one skb->priority names (TC_H_MIN - 1) when its major is
// the qdisc's handle, else the one the qdisc's filters give, else
// priomap[skb->priority & TC_PRIO_MAX] (a priority with another major
// taken as 0); a band out of range is priomap[0]. -1: a filter shot the
// packet.
func PrioBand(x ClassCtx, p *skb.Packet, handle uint16, bands int, priomap *[PrioMax + 1]uint8) int {
	band := p.Priority
	if uint16(band>>16) != handle {
		r := x.Classify(p, MakeClassID(handle, 0))
		switch r.Verdict {
		case VerdictShot:
			return -1
		case VerdictNone:
			if band>>16 != 0 {
				band = 0
			}
			return int(priomap[band&PrioMax])
		}
		band = uint32(r.Class)
	}
	b := int(band&0xFFFF) - 1
	if b < 0 || b >= bands {
		return int(priomap[0])
	}
	return b
}

// Remove forgets leaf id (its class went or became inner): the packets
// it held are purged by the host, and returned here for the caller to
// count as dropped (qdisc_purge_queue's qdisc_tree_reduce_backlog).
func (t *LeafTable) Remove(id ClassID) LeafState {
	st := t.m[id]
	delete(t.m, id)
	t.Qlen -= st.Qlen
	t.Backlog -= st.Backlog
	return st
}

// Reset forgets every leaf's packets (qdisc_reset: the host resets the
// leaves).
func (t *LeafTable) Reset() { *t = LeafTable{} }

// LeafBatch is an Enqueue call's packets bound for its leaves, handed to
// the host in one EnqueueLeaves (qdisc_enqueue for each). Reset it at
// the call's start, Add each packet with its class and its place in the
// call's batch, then Send. Result(k) is the k-th added packet's answer,
// for what the qdisc does with it (htb's and drr's activations).
type LeafBatch struct {
	pkts []skb.Packet
	to   []ClassID
	at   []int
	res  []LeafResult
}

// Reset empties the batch, keeping its buffers.
func (b *LeafBatch) Reset() {
	b.pkts, b.to, b.at, b.res = b.pkts[:0], b.to[:0], b.at[:0], b.res[:0]
}

// Add queues *p for the leaf of class to; at is its place in the call's
// batch (where Send writes its code).
func (b *LeafBatch) Add(p *skb.Packet, to ClassID, at int) {
	b.pkts = append(b.pkts, *p)
	b.to = append(b.to, to)
	b.at = append(b.at, at)
}

// Len is how many packets were added.
func (b *LeafBatch) Len() int { return len(b.pkts) }

// Packet is the k-th packet added, as the leaf got it.
func (b *LeafBatch) Packet(k int) *skb.Packet { return &b.pkts[k] }

// Result is the answer for the k-th packet added (after Send).
func (b *LeafBatch) Result(k int) LeafResult { return b.res[k] }

// Send hands the batch to the leaves, writes each packet's NET_XMIT code
// into rc at its place, brings t up to date, and returns how many
// packets the leaves dropped (net_xmit_drop_count: the qdisc counts
// them as its own, as qdisc_tree_reduce_backlog does).
func (b *LeafBatch) Send(x ClassCtx, t *LeafTable, rc []Code) (drops uint64) {
	if len(b.pkts) == 0 {
		return 0
	}
	b.res = slices.Grow(b.res[:0], len(b.pkts))[:len(b.pkts)]
	clear(b.res)
	x.EnqueueLeaves(b.pkts, b.to, b.res)
	for k, r := range b.res {
		rc[b.at[k]] = r.Code
		drops += uint64(t.Update(b.to[k], r.Leaf, r.Arrived(), 0))
	}
	return drops
}

// SendOne hands *p alone to the leaf of class to (qdisc_enqueue of one
// skb, as netem moves a due packet into its child and red hands its
// child each packet it lets through) and returns the leaf's code and
// the packets the leaves dropped, as Send.
func (b *LeafBatch) SendOne(x ClassCtx, t *LeafTable, p *skb.Packet, to ClassID) (Code, uint64) {
	b.Reset()
	b.Add(p, to, 0)
	var rc [1]Code
	drops := b.Send(x, t, rc[:])
	return rc[0], drops
}

// DefaultLeafWords are the tc words of the leaf the host makes for c
// when it appears or when a delete leaves it empty: its DefaultLeaf, or
// a pfifo (qdisc_create_dflt).
func (c *Class) DefaultLeafWords() []string {
	if len(c.DefaultLeaf) == 0 {
		return []string{"pfifo"}
	}
	return c.DefaultLeaf
}

// FindClass is the class id among cs (cops->find over a class dump),
// or nil.
func FindClass(cs []Class, id ClassID) *Class {
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i]
		}
	}
	return nil
}

// TakesFifoLimit reports whether a leaf of kind takes a class's
// FifoLimit: fifo_set_limit changes a qdisc whose ops' id matches
// "?fifo" and that has a change op (pfifo, bfifo, pfifo_head_drop;
// pfifo_fast has none).
func TakesFifoLimit(kind string) bool {
	return kind == "pfifo" || kind == "bfifo" || kind == "pfifo_head_drop"
}
