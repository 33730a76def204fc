package netdev

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// A classful qdisc (htb, prio) holds no leaf qdisc itself: the host
// holds one netdev Qdisc per leaf class (Qdisc.leaves), made by the host
// as pfifo when the class appears (qdisc_create_dflt: handle 0:, parent
// the classid, invisible to `tc qdisc show`) and replaced by `tc qdisc
// add ... parent CLASSID` (qdisc_graft). The classful qdisc reaches its
// leaves through its context (qctx implements wire.ClassHost); the root's
// lock covers the whole tree, its watchdog and its leaves' watchdogs
// reschedule the root (qdisc_watchdog -> __netif_schedule(qdisc_root)).

// classful is the qdisc's class operations, if the qdisc has classes.
func (q *Qdisc) classful() wire.ClassOps {
	if c, ok := q.Ops.(wire.ClassOps); ok && c.Classful() {
		return c
	}
	return nil
}

// Classful reports whether the qdisc has classes.
func (q *Qdisc) Classful() bool { return q.classful() != nil }

// root is qdisc_root: the top of q's tree.
func (q *Qdisc) root() *Qdisc {
	for q.parentQ != nil {
		q = q.parentQ
	}
	return q
}

// ParentQdisc is the classful qdisc q is a leaf of (nil for a root or an
// mq child).
func (q *Qdisc) ParentQdisc() *Qdisc { return q.parentQ }

// Invisible reports TCQ_F_INVISIBLE: a default leaf the host made, which
// `tc qdisc show` leaves out.
func (q *Qdisc) Invisible() bool { return q.invisible }

// Leaves are the qdiscs of q's leaf classes, by class.
func (q *Qdisc) Leaves() map[qdisc.ClassID]*Qdisc { return q.leaves }

// treeHeld is what q and its leaves hold, the classful qdisc's
// sch->q.qlen: its own packets (htb's direct queue, a packet its peek set
// aside) and its leaves' trees.
func (q *Qdisc) treeHeld() (int, int64) {
	n, b := q.held, q.heldBytes
	for _, l := range q.leaves {
		ln, lb := l.treeHeld()
		n += ln
		b += lb
	}
	return n, b
}

// treeDequeuing says whether a CPU is inside the dequeue of q or of a
// qdisc below it (Qdisc.dequeuing).
func (q *Qdisc) treeDequeuing() bool {
	if q.dequeuing {
		return true
	}
	for _, l := range q.leaves {
		if l.treeDequeuing() {
			return true
		}
	}
	return false
}

// leafState is what q's parent knows of q as its leaf.
func (q *Qdisc) leafState() qdisc.LeafState {
	n, b := q.treeHeld()
	return qdisc.LeafState{Qlen: n, Backlog: b}
}

// Classes is q's class dump (tc class show), with each class's qlen and
// backlog from its leaf (and, for a kind that dumps its leaf's stats,
// every counter, LeafStats, or its drops and overlimits, LeafQstats). A
// GraftOnly class without a leaf is not in it (netem_dump_class:
// -ENOENT).
func (q *Qdisc) Classes() []qdisc.Class {
	c := q.classful()
	if c == nil {
		return nil
	}
	out := c.Classes()
	out = slices.DeleteFunc(out, func(cl qdisc.Class) bool { return cl.GraftOnly && q.leaves[cl.ID] == nil })
	for i := range out {
		cl := &out[i]
		leaf := q.leaves[cl.ID]
		if leaf == nil {
			continue
		}
		if cl.LeafStats || cl.LeafQstats {
			st := leaf.Ops.Stats()
			cl.Drops, cl.Overlimits = st.Drops, st.Overlimits
		}
		if cl.LeafStats {
			cl.SentPackets, cl.SentBytes = leaf.SentPkts, leaf.SentBytes
		}
	}
	return out
}

// FlowClasses is a classless qdisc's class dump (tc class show): its
// active flows (qdisc.FlowClasses: fq_codel_walk, sfq_walk, cake_walk),
// each classid the qdisc's handle with the flow's minor and its parent
// the qdisc (tc_fill_tclass). None for a classful qdisc or any other.
func (q *Qdisc) FlowClasses() []qdisc.Class {
	c, ok := q.Ops.(wire.ClassOps)
	if !ok || c.Classful() {
		return nil
	}
	out := c.Classes()
	parent := qdisc.ClassID(q.Handle)
	for i := range out {
		out[i].ID = qdisc.MakeClassID(parent.Major(), out[i].ID.Minor())
		out[i].Parent = parent
	}
	return out
}

// LeafOf is the leaf qdisc of class id of q, or nil.
func (q *Qdisc) LeafOf(id qdisc.ClassID) *Qdisc { return q.leaves[id] }

// syncLeaves makes q's leaf qdiscs agree with its classes after Init or a
// class change: a leaf class without a leaf gets a default pfifo
// (qdisc_create_dflt), and a leaf whose class went or stopped being a leaf
// (htb's parent of a first child) is purged (qdisc_purge_queue, its
// packets freed after the change) and destroyed.
func (n *Net) syncLeaves(q *Qdisc, freed *skb.List) error {
	c := q.classful()
	if c == nil {
		return nil
	}
	classes := c.Classes()
	want := map[qdisc.ClassID]bool{}
	for _, cl := range classes {
		if cl.ID.Major() != q.Handle.Major() {
			return fmt.Errorf("qdisc %s dumped class %s, whose major is not its own", q.Name(), cl.ID)
		}
		if cl.Leaf {
			want[cl.ID] = true
		}
	}
	// Gone first (in class order), so a class that moved keeps nothing.
	var gone []qdisc.ClassID
	for id := range q.leaves {
		if !want[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		n.destroyQdisc(q.leaves[id], freed)
		delete(q.leaves, id)
	}
	for _, cl := range classes {
		if !cl.Leaf {
			continue
		}
		l := q.leaves[cl.ID]
		if l != nil && l.leafGen == cl.LeafGen {
			if err := n.fifoSetLimit(l, cl.FifoLimit); err != nil {
				return err
			}
			continue
		}
		if l == nil && cl.GraftOnly {
			continue // no leaf until tc grafts one
		}
		held := l != nil && l.leafState() != (qdisc.LeafState{})
		nl, err := n.graft(q, cl.ID, cl.DefaultLeafWords(), tc.Unspec, true, freed)
		if err != nil {
			return err
		}
		nl.leafGen = cl.LeafGen
		if held {
			// A new leaf in place of l (Class.LeafGen): l's packets
			// were purged, and the qdisc learns it.
			c.QlenNotify(q.bind(nil, nil), cl.ID, nl.leafState())
		}
	}
	return nil
}

// fifoSetLimit is fifo_set_limit: a leaf of a fifo kind
// (qdisc.TakesFifoLimit) takes limit, in its own unit; 0 or any other
// kind: nothing.
func (n *Net) fifoSetLimit(l *Qdisc, limit uint32) error {
	if limit == 0 || l.Limit == int(limit) || !qdisc.TakesFifoLimit(l.Kind) {
		return nil
	}
	return n.ChangeQdisc(l, []string{"limit", strconv.FormatUint(uint64(limit), 10)})
}

// graft is qdisc_graft on a class: a new qdisc of words (a kind and its
// options) with handle h under class id of q, replacing the leaf there
// (its packets purged into freed). dflt marks the host's default leaf
// (handle 0:, invisible).
func (n *Net) graft(q *Qdisc, id qdisc.ClassID, words []string, h tc.Handle, dflt bool, freed *skb.List) (*Qdisc, error) {
	d := q.dev
	leaf, err := n.newQdisc(d, words, qdiscPlace{handle: h, parent: tc.Handle(id), slot: "class " + id.String()})
	if err != nil {
		return nil, err
	}
	leaf.parentQ, leaf.classID, leaf.invisible = q, id, dflt
	if old := q.leaves[id]; old != nil {
		n.destroyQdisc(old, freed)
	}
	if q.leaves == nil {
		q.leaves = map[qdisc.ClassID]*Qdisc{}
	}
	q.leaves[id] = leaf
	d.Tree = append(d.Tree, leaf)
	return leaf, nil
}

// destroyQdisc removes q and its leaves from the device, purging what
// they hold into freed (qdisc_put -> qdisc_destroy after qdisc_reset).
func (n *Net) destroyQdisc(q *Qdisc, freed *skb.List) {
	for _, id := range sortedClassIDs(q.leaves) {
		n.destroyQdisc(q.leaves[id], freed)
	}
	q.leaves = nil
	n.purge(q, freed)
	q.watchdog.Cancel()
	q.timer.Cancel()
	q.dead = true
	d := q.dev
	d.Tree = slices.DeleteFunc(d.Tree, func(x *Qdisc) bool { return x == q })
	n.qdiscs = slices.DeleteFunc(n.qdiscs, func(x *Qdisc) bool { return x == q })
	d.filters.DropQdisc(q.Handle.Major())
}

// purge is qdisc_purge_queue on q alone: its reset drops what it holds
// (NOT_SPECIFIED: rtnl_kfree_skbs), collected into freed.
func (n *Net) purge(q *Qdisc, freed *skb.List) {
	if q.held == 0 {
		return
	}
	x := &ctlCtx{qctx: q.bind(nil, nil)}
	if r, ok := q.Ops.(qdisc.Resetter); ok {
		r.Reset(x)
	}
	if q.held != 0 {
		sim.Panicf("qdisc %s still holds %d packets after its reset", q.Name(), q.held)
	}
	freed.PushList(&x.freed)
}

func sortedClassIDs(m map[qdisc.ClassID]*Qdisc) []qdisc.ClassID {
	out := make([]qdisc.ClassID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// notifyUp is qdisc_tree_reduce_backlog after a change to leaf outside
// its parent's calls: each ancestor learns its leaf's new state
// (cops->qlen_notify), bottom up. c is the CPU it runs on (nil: tc).
func (n *Net) notifyUp(c *sim.CPU, leaf *Qdisc) {
	for leaf.parentQ != nil {
		p := leaf.parentQ
		p.classful().QlenNotify(p.bind(c, nil), leaf.classID, leaf.leafState())
		leaf = p
	}
}

// The host side of a classful qdisc's context (wire.ClassHost).

// LeafEnqueue is qdisc_enqueue of each packet into the leaf of its
// class, consecutive packets to one leaf in one call to it.
func (x *qctx) LeafEnqueue(batch []qdisc.LeafPacket, res []qdisc.LeafResult) {
	q, n := x.q, x.net
	for i := 0; i < len(batch); {
		id := batch[i].Class
		leaf := q.leaves[id]
		if leaf == nil {
			sim.Panicf("qdisc %s enqueued packet %#x to class %s, which has no leaf qdisc", q.Name(), uint64(batch[i].Handle), id)
		}
		j := i
		skbs := x.skbs[:0]
		for ; j < len(batch) && batch[j].Class == id; j++ {
			s := q.takeBack(n, batch[j].Handle, "leaf enqueue")
			b := &batch[j]
			s.Priority, s.Mark, s.ECN, s.DSCP = b.Priority, b.Mark, b.ECN, b.DSCP
			if int(b.Queue) < len(q.dev.Queues) {
				s.Queue = b.Queue // skbedit's queue_mapping in the parent's filters
			}
			skbs = append(skbs, s)
		}
		n.leafEnqueue(x.cpu, leaf, skbs, x.toFree, res[i:j])
		x.skbs = skbs[:0]
		i = j
	}
}

// leafEnqueue hands skbs to leaf (its enqueue; no hooks: the root's
// enqueue is the one the TX path sees). res[k] gets skbs[k]'s code, the
// packets the leaf made of it (its segments if the leaf, or one below
// it, segments GSO skbs: cake_enqueue's qdisc_tree_reduce_backlog by
// 1 - numsegs), and the leaf's state after it: within one call the
// host cannot see the leaf's drops packet by packet, so the states
// before the call's last packet count only the packets it took, and
// the last one is exact. The leaf's duplicates are cloned as it asks
// (qctx.Duplicate) and go to the root's enqueue, not the leaf's.
func (n *Net) leafEnqueue(c *sim.CPU, leaf *Qdisc, skbs []*skb.SKB, toFree *skb.List, res []qdisc.LeafResult) {
	n.writePrivate(c, leaf)
	n.writeStatsLine(c, leaf)
	before := leaf.leafState()
	for _, s := range skbs {
		qdiscCalculatePktLen(s, leaf) // qdisc_enqueue's, before the leaf segments the skb
	}
	segs, split := n.splitGSO(c, leaf, skbs)
	n.readTCPHeaders(leaf, segs)
	leaf.batch, leaf.rc = leaf.batch[:0], leaf.rc[:0]
	for _, s := range segs {
		s.Holder = leaf.ID
		p := packetFor(leaf, s)
		leaf.held++
		leaf.heldBytes += int64(p.Len)
		leaf.batch = append(leaf.batch, p)
		leaf.rc = append(leaf.rc, qdisc.XmitSuccess)
	}
	leaf.Ops.Enqueue(leaf.bind(c, toFree), leaf.batch, leaf.rc)
	n.orphanPartial(c, leaf, segs, leaf.rc)
	n.noopDropped(leaf, len(segs))
	for i, s := range segs {
		if leaf.rc[i] == qdisc.XmitDrop && s.Holder == leaf.ID {
			sim.Panicf("qdisc %s: returned NET_XMIT_DROP for packet %#x but kept it", leaf.Name(), uint64(s.Handle))
		}
	}
	st, at := before, 0
	for k, s := range skbs {
		nsegs, bytes := n.leafSegs(s, leaf)
		code := leaf.rc[at]
		if split && nsegs > 1 {
			// This leaf segmented it: its segments' codes are the
			// skb's one, as for a root (gsoCode), and its ancestors
			// see the segments it kept (tbf_segment's
			// qdisc_tree_reduce_backlog by 1 - nb; cake's by 1 -
			// numsegs), as the ancestors of ancestors do
			// (Net.gsoSplit).
			rc := leaf.rc[at : at+nsegs]
			code = leaf.gsoCode(rc)
			nsegs, bytes = keptSegs(segs[at:at+nsegs], rc)
			n.gsoSplit[s.Handle] = gsoSplit{segs: nsegs, len: bytes, by: leaf}
			at += len(rc)
		} else {
			at++
		}
		// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS goes to the parent as
		// the leaf answered it (qdisc_enqueue's ret): the leaf did not
		// keep the packet.
		if code == qdisc.XmitSuccess || code == qdisc.XmitCN {
			st.Qlen += nsegs
			st.Backlog += int64(bytes)
		}
		res[k] = qdisc.LeafResult{Code: code, Leaf: st, Segs: nsegs}
	}
	res[len(res)-1].Leaf = leaf.leafState()
}

// LeafDequeue is one packet from the leaf of class id: it joins q.
func (x *qctx) LeafDequeue(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	q, n := x.q, x.net
	leaf := q.leaves[id]
	if leaf == nil {
		sim.Panicf("qdisc %s dequeued from class %s, which has no leaf qdisc", q.Name(), id)
	}
	s := n.leafDequeue(x.cpu, leaf)
	if s == nil {
		return skb.Packet{}, false, leaf.leafState()
	}
	s.Holder = q.ID
	q.held++
	q.heldBytes += int64(s.QdiscPktLen())
	return qdiscPacket(s), true, leaf.leafState()
}

// leafDequeue asks leaf for one packet (qdisc_dequeue_peeked).
func (n *Net) leafDequeue(c *sim.CPU, leaf *Qdisc) *skb.SKB {
	n.writePrivate(c, leaf)
	if held, _ := leaf.treeHeld(); held == 0 && leaf.Flags&qdisc.EmptyNoop != 0 {
		return nil
	}
	n.writeStatsLine(c, leaf)
	leaf.out = leaf.opsDequeue(c, qdisc.DequeueReq{Max: 1, Bytes: 1 << 62})
	if len(leaf.out) > 1 {
		sim.Panicf("qdisc %s: returned %d packets for a dequeue of at most 1", leaf.Name(), len(leaf.out))
	}
	if len(leaf.out) == 0 {
		return nil
	}
	p := leaf.out[0]
	s := leaf.takeBack(n, p.Handle, "dequeue")
	takeEdits(s, &p, leaf.dev)
	leaf.bstatsUpdate(s)
	return s
}

// LeafPeek is the leaf's peek op, with the leaf's state after it.
func (x *qctx) LeafPeek(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	leaf := x.q.leaves[id]
	if leaf == nil {
		sim.Panicf("qdisc %s peeked at class %s, which has no leaf qdisc", x.q.Name(), id)
	}
	pk, ok := leaf.Ops.(qdisc.Peeker)
	if !ok {
		sim.Panicf("qdisc %s has no peek", leaf.Name())
	}
	p, ok := pk.Peek(leaf.bind(x.cpu, nil))
	return p, ok, leaf.leafState()
}
