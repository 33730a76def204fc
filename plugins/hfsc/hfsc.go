// Package hfsc is the kernel's Hierarchical Fair Service Curve
// scheduler (net/sched/sch_hfsc.c, 6.12): a tree of classes, each with
// up to three two-segment service curves, m1 for d then m2: a real-time
// curve (rt) that guarantees a leaf its service by deadlines, a
// link-sharing curve (ls) by which siblings share what their parent
// gets (virtual times), and an upper limit (ul) no link-sharing may
// exceed (fit times). Leaves hold a qdisc of any kind (the host holds
// it: framework/qdisc.Classful). A dequeue serves the eligible leaf
// with the earliest deadline if any is eligible, else walks the
// link-sharing tree down by smallest virtual time among the children
// that fit; with none it arms the watchdog at the next eligible or fit
// time. Time is the kernel's: psched ticks of 64 ns, and the curves'
// fixed point is sch_hfsc.c's to the bit.
package hfsc

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("hfsc", "Hierarchical Fair Service Curve: classes with real-time, link-sharing and upper-limit service curves (sch_hfsc.c)",
		func() qdisc.Qdisc { return &HFSC{} })
}

// Curve flags, enum hfsc_class_flags: which curves a class has.
const (
	hasRSC = 1 << iota // HFSC_RSC
	hasFSC             // HFSC_FSC
	hasUSC             // HFSC_USC
)

// class is struct hfsc_class.
type class struct {
	id       qdisc.ClassID
	level    int
	parent   *class
	children []*class // list_add_tail order

	bytes, packets uint64 // bstats
	drops          uint64 // qstats.drops

	total  uint64 // cl_total: work in bytes
	cumul  uint64 // cl_cumul: work done by real-time criteria
	d      uint64 // cl_d: deadline
	e      uint64 // cl_e: eligible time
	vt     uint64 // cl_vt: virtual time
	f      uint64 // cl_f: fit time for link-sharing, max(myf, cfmin)
	myf    uint64 // cl_myf: fit time from the upper limit
	cfmin  uint64 // cl_cfmin: earliest children's fit time
	cvtmin uint64 // cl_cvtmin: smallest vt of the fitting children
	vtadj  uint64 // cl_vtadj: intra-period vt adjustment
	cvtoff uint64 // cl_cvtoff: largest vt seen among the children

	rsc, fsc, usc                       internalSC
	deadline, eligible, virtual, ulimit runtimeSC

	flags                           uint8
	vtperiod, parentperiod, nactive uint32

	inEl   bool      // in the eligible tree (!RB_EMPTY_NODE(&cl->el_node))
	vtTree classList // active children by vt
	cfTree classList // active children by f

	// seen is the leaf's qlen before the packet an Enqueue call is
	// at (its `first`), valid while gen is the call's.
	seen int
	gen  uint64
}

// HFSC is struct hfsc_sched.
type HFSC struct {
	handle   uint16
	devSpeed int64
	defcls   uint16
	root     class // its own queue is rootQ, a pfifo of txqueuelen
	byID     map[qdisc.ClassID]*class
	clhash   qdisc.ClassHash[*class]
	eligible classList

	rootQ     qdisc.Ring[skb.Packet]
	rootB     int64
	rootLimit int

	leaves     qdisc.LeafTable
	drops      uint64
	overlimits uint64

	// per-call buffers
	batch qdisc.LeafBatch
	cls   []*class
	gen   uint64
}

// parseQopt is hfsc_parse_opt: "default CLASSID" (hex, 16 bits).
func parseQopt(args []string) (uint16, error) {
	var defcls uint16
	a := qdisc.NewArgs("hfsc", args)
	for k := a.Next(); k != ""; k = a.Next() {
		if !psched.Matches(k, "default") {
			if psched.Matches(k, "help") {
				return 0, qdisc.Parsef("hfsc", "Usage: ... hfsc [ default CLASSID ]")
			}
			return 0, qdisc.Parsef("hfsc", "HFSC: What is %q ?", k)
		}
		v, err := a.Value(k)
		if err != nil {
			return 0, err
		}
		if defcls != 0 {
			return 0, qdisc.Parsef("hfsc", "HFSC: Double \"default\"")
		}
		n, perr := units.GetUnsigned(v, 16)
		if perr != nil || n > 0xFFFF {
			return 0, qdisc.Parsef("hfsc", "HFSC: Illegal \"default\" %q", v)
		}
		defcls = uint16(n)
	}
	return defcls, nil
}

// Init implements qdisc.Qdisc (hfsc_init_qdisc): the root class, with
// its own pfifo (qdisc_create_dflt), which serves skb->priority X:0 and
// the default class 0 while no class exists.
func (q *HFSC) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	defcls, err := parseQopt(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.defcls = defcls
	q.handle = uint16(s.Major())
	q.devSpeed = max(s.RateBps, 0)
	q.rootLimit = s.TxQueueLen // fifo_init with no options
	q.root = class{id: qdisc.MakeClassID(q.handle, 0)}
	q.byID = map[qdisc.ClassID]*class{q.root.id: &q.root}
	q.clhash.Insert(q.root.id, &q.root)
	q.clhash.Grow()
	return qdisc.Info{Flags: qdisc.EmptyNoop}, nil
}

// Change implements qdisc.Changer (hfsc_change_qdisc): the default
// class only.
func (q *HFSC) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	defcls, err := parseQopt(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.defcls = defcls
	return qdisc.Info{Flags: qdisc.EmptyNoop}, nil
}

// find is hfsc_find_class.
func (q *HFSC) find(id qdisc.ClassID) *class {
	if id.Major() != q.handle {
		return nil
	}
	return q.byID[id]
}

// leafQlen is cl->qdisc->q.qlen.
func (q *HFSC) leafQlen(cl *class) int {
	if cl == &q.root {
		return q.rootQ.Len()
	}
	return q.leaves.Get(cl.id).Qlen
}

// inElOrVttree is cl_in_el_or_vttree.
func inElOrVttree(cl *class) bool {
	return cl.flags&hasFSC != 0 && cl.nactive != 0 || cl.flags&hasRSC != 0 && cl.inEl
}

// eltreeInsert, eltreeRemove and eltreeUpdate are the eligible tree's.
func (q *HFSC) eltreeInsert(cl *class) {
	q.eligible.insert(cl, keyE)
	cl.inEl = true
}

func (q *HFSC) eltreeRemove(cl *class) {
	if cl.inEl {
		q.eligible.remove(cl)
		cl.inEl = false
	}
}

func (q *HFSC) eltreeUpdate(cl *class) {
	q.eltreeRemove(cl)
	q.eltreeInsert(cl)
}

// eltreeGetMindl is eltree_get_mindl: among the classes eligible now,
// the one with the earliest deadline.
func (q *HFSC) eltreeGetMindl(ctx qdisc.Ctx, cur uint64) *class {
	var cl *class
	for _, p := range q.eligible {
		ctx.Work(qdisc.WorkFlowScan, 1)
		if p.e > cur {
			break
		}
		if cl == nil || p.d < cl.d {
			cl = p
		}
	}
	return cl
}

// vttreeFirstfit is vttree_firstfit: cl's active child of smallest vt
// that fits (f <= now).
func vttreeFirstfit(ctx qdisc.Ctx, cl *class, cur uint64) *class {
	for _, p := range cl.vtTree {
		ctx.Work(qdisc.WorkFlowScan, 1)
		if p.f <= cur {
			return p
		}
	}
	return nil
}

// vttreeGetMinvt is vttree_get_minvt: the leaf link-sharing serves,
// walking down by smallest fitting vt.
func vttreeGetMinvt(ctx qdisc.Ctx, cl *class, cur uint64) *class {
	if cl.cfmin > cur {
		return nil // nothing under the root fits yet
	}
	for cl.level > 0 {
		cl = vttreeFirstfit(ctx, cl, cur)
		if cl == nil {
			return nil
		}
		if cl.parent.cvtmin < cl.vt {
			cl.parent.cvtmin = cl.vt
		}
	}
	return cl
}

// vttreeUpdate and cftreeUpdate move cl to its new key in its parent's
// trees.
func vttreeUpdate(cl *class) {
	cl.parent.vtTree.remove(cl)
	cl.parent.vtTree.insert(cl, keyVT)
}

func cftreeUpdate(cl *class) {
	cl.parent.cfTree.remove(cl)
	cl.parent.cfTree.insert(cl, keyF)
}

// initED is init_ed: a real-time class becomes backlogged.
func (q *HFSC) initED(cl *class, nextLen uint32, cur uint64) {
	cl.deadline.min(&cl.rsc, cur, cl.cumul)
	// the eligible curve: the deadline curve for a concave rt, a line
	// of slope m2 for a convex one
	cl.eligible = cl.deadline
	if cl.rsc.sm1 <= cl.rsc.sm2 {
		cl.eligible.dx, cl.eligible.dy = 0, 0
	}
	cl.e = cl.eligible.y2x(cl.cumul)
	cl.d = cl.deadline.y2x(cl.cumul + uint64(nextLen))
	q.eltreeInsert(cl)
}

// updateED is update_ed.
func (q *HFSC) updateED(cl *class, nextLen uint32) {
	cl.e = cl.eligible.y2x(cl.cumul)
	cl.d = cl.deadline.y2x(cl.cumul + uint64(nextLen))
	q.eltreeUpdate(cl)
}

// updateD is update_d.
func updateD(cl *class, nextLen uint32) { cl.d = cl.deadline.y2x(cl.cumul + uint64(nextLen)) }

// updateCfmin is update_cfmin.
func updateCfmin(cl *class) {
	if p := cl.cfTree.first(); p != nil {
		cl.cfmin = p.f
	} else {
		cl.cfmin = 0
	}
}

// initVF is init_vf: cl and the ancestors it wakes become active for
// link-sharing. now reads the clock for an upper limit (the kernel's
// psched_get_time, read once, when needed).
func initVF(cl *class, now func() uint64) {
	var cur uint64
	goActive := true
	for ; cl.parent != nil; cl = cl.parent {
		if goActive {
			goActive = cl.nactive == 0
			cl.nactive++
		}
		if goActive {
			p := cl.parent
			if maxCl := p.vtTree.last(); maxCl != nil {
				// vt: the average of the smallest and largest
				// siblings'; within the parent's period, never
				// below the class's own
				vt := maxCl.vt
				if p.cvtmin != 0 {
					vt = (p.cvtmin + vt) / 2
				}
				if p.vtperiod != cl.parentperiod || vt > cl.vt {
					cl.vt = vt
				}
			} else {
				// the first child of a new backlog period: the
				// largest vt seen among the siblings
				cl.vt = p.cvtoff
				p.cvtmin = 0
			}
			cl.virtual.min(&cl.fsc, cl.vt, cl.total)
			cl.vtadj = 0
			cl.vtperiod++
			cl.parentperiod = p.vtperiod
			if p.nactive == 0 {
				cl.parentperiod++
			}
			cl.f = 0
			p.vtTree.insert(cl, keyVT)
			p.cfTree.insert(cl, keyF)
			if cl.flags&hasUSC != 0 {
				if cur == 0 {
					cur = now()
				}
				cl.ulimit.min(&cl.usc, cur, cl.total)
				cl.myf = cl.ulimit.y2x(cl.total)
			}
		}
		if f := max(cl.myf, cl.cfmin); f != cl.f {
			cl.f = f
			cftreeUpdate(cl)
		}
		updateCfmin(cl.parent)
	}
}

// updateVF is update_vf: len bytes served from leaf cl (0: only a check
// whether it went passive); the ancestors' totals, virtual times and
// fit times follow.
func (q *HFSC) updateVF(cl *class, length uint32) {
	goPassive := q.leafQlen(cl) == 0 && cl.flags&hasFSC != 0 && cl.nactive != 0
	for ; cl.parent != nil; cl = cl.parent {
		cl.total += uint64(length)
		if cl.flags&hasFSC == 0 || cl.nactive == 0 {
			continue
		}
		if goPassive {
			cl.nactive--
			goPassive = cl.nactive == 0
		}
		p := cl.parent
		cl.vt = cl.virtual.y2x(cl.total) + cl.vtadj
		// a vt below cvtmin: the class was skipped for not fitting;
		// adjust vtadj
		if cl.vt < p.cvtmin {
			cl.vtadj += p.cvtmin - cl.vt
			cl.vt = p.cvtmin
		}
		if goPassive {
			// no more active child: passive
			if cl.vt > p.cvtoff {
				p.cvtoff = cl.vt
			}
			p.vtTree.remove(cl)
			p.cfTree.remove(cl)
			updateCfmin(p)
			continue
		}
		vttreeUpdate(cl)
		if cl.flags&hasUSC != 0 {
			cl.myf = cl.ulimit.y2x(cl.total)
		}
		if f := max(cl.myf, cl.cfmin); f != cl.f {
			cl.f = f
			cftreeUpdate(cl)
			updateCfmin(p)
		}
	}
}

// hfscClassify is hfsc_classify: a leaf class, or nil to drop.
func (q *HFSC) hfscClassify(x qdisc.ClassCtx, p *skb.Packet) *class {
	if uint16(p.Priority>>16) == q.handle {
		if cl := q.byID[qdisc.ClassID(p.Priority)]; cl != nil && cl.level == 0 {
			return cl
		}
	}
	head := &q.root
	for {
		r := x.Classify(p, head.id)
		if r.Verdict == qdisc.VerdictNone {
			break
		}
		if r.Verdict == qdisc.VerdictShot {
			return nil
		}
		cl := q.find(r.Class)
		if cl == nil || cl.level >= head.level {
			break // an invalid classid, or one not below: filters only point down
		}
		if cl.level == 0 {
			return cl
		}
		head = cl // the inner class's filters
	}
	// classification failed: the default class
	cl := q.find(qdisc.MakeClassID(q.handle, q.defcls))
	if cl == nil || cl.level > 0 {
		return nil
	}
	return cl
}

// activate is hfsc_enqueue's work for a packet of len bytes that made
// leaf cl non-empty: init_ed and init_vf unless it is still in a tree,
// then a peek, which isolates the head so a head drop before the first
// dequeue cannot invalidate the deadline.
func (q *HFSC) activate(ctx qdisc.Ctx, x qdisc.ClassCtx, cl *class, length uint32) {
	if inElOrVttree(cl) {
		return
	}
	var cur uint64
	now := func() uint64 {
		if cur == 0 {
			ctx.Work(qdisc.WorkTstamp, 1)
			cur = uint64(ctx.Now()) >> 6 // psched_get_time
		}
		return cur
	}
	if cl.flags&hasRSC != 0 {
		q.initED(cl, length, now())
	}
	if cl.flags&hasFSC != 0 {
		initVF(cl, now)
	}
	if cl.flags&hasRSC != 0 {
		q.peekLen(x, cl)
	}
}

// Enqueue implements qdisc.Qdisc (hfsc_enqueue for each packet): drops
// and the root class's own queue here, the rest to their leaves in one
// host call, then each class that a packet made backlogged is
// activated in the packets' order.
func (q *HFSC) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	q.batch.Reset()
	q.cls = q.cls[:0]
	q.gen++
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		p := &batch[i]
		cl := q.hfscClassify(x, p)
		switch {
		case cl == nil:
			// no class, or a filter's TC_ACT_SHOT: counted, dropped,
			// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS
			q.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
		case cl == &q.root:
			rc[i] = q.rootEnqueue(ctx, x, p)
		default:
			if cl.gen != q.gen {
				cl.gen, cl.seen = q.gen, q.leaves.Get(cl.id).Qlen
			}
			q.batch.Add(p, cl.id, i)
			q.cls = append(q.cls, cl)
		}
	}
	q.drops += q.batch.Send(x, &q.leaves, rc)
	for k, cl := range q.cls {
		r := q.batch.Result(k)
		first := cl.seen == 0
		cl.seen = r.Leaf.Qlen
		if r.Code != qdisc.XmitSuccess {
			cl.drops++ // net_xmit_drop_count; the qdisc's counted by Send
			continue
		}
		if first {
			q.activate(ctx, x, cl, q.batch.Packet(k).Len)
		}
	}
}

// rootEnqueue is hfsc_enqueue to the root class's pfifo.
func (q *HFSC) rootEnqueue(ctx qdisc.Ctx, x qdisc.ClassCtx, p *skb.Packet) qdisc.Code {
	if q.rootQ.Len() >= q.rootLimit {
		q.drops++
		q.root.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitDrop
	}
	first := q.rootQ.Len() == 0
	q.rootQ.PushTail(*p)
	q.rootB += int64(p.Len)
	if first {
		q.activate(ctx, x, &q.root, p.Len)
	}
	return qdisc.XmitSuccess
}

// leafDequeue is qdisc_dequeue_peeked of cl's queue. Drops the leaf
// makes on the way count as the qdisc's; a leaf they empty is notified
// first, as the leaf's qdisc_tree_reduce_backlog calls hfsc_qlen_notify
// inside its dequeue.
func (q *HFSC) leafDequeue(x qdisc.ClassCtx, cl *class) (skb.Packet, bool) {
	if cl == &q.root {
		if q.rootQ.Len() == 0 {
			return skb.Packet{}, false
		}
		p := q.rootQ.PopHead()
		q.rootB -= int64(p.Len)
		return p, true
	}
	p, ok, st, dropped := q.leaves.Dequeue(x, cl.id)
	q.noteLeafDrops(cl, st, dropped)
	return p, ok
}

// peekLen is qdisc_peek_len of cl's queue (0 when the leaf shows none).
func (q *HFSC) peekLen(x qdisc.ClassCtx, cl *class) uint32 {
	if cl == &q.root {
		if q.rootQ.Len() == 0 {
			return 0
		}
		return q.rootQ.Front().Len
	}
	p, ok, st, dropped := q.leaves.Peek(x, cl.id)
	q.noteLeafDrops(cl, st, dropped)
	if !ok {
		return 0
	}
	return p.Len
}

// noteLeafDrops counts a leaf's own drops and, when they emptied it,
// runs hfsc_qlen_notify.
func (q *HFSC) noteLeafDrops(cl *class, st qdisc.LeafState, dropped int) {
	if dropped == 0 {
		return
	}
	q.drops += uint64(dropped)
	if st.Qlen == 0 {
		q.qlenNotify(cl)
	}
}

// qlenNotify is hfsc_qlen_notify: an emptied leaf leaves the trees.
func (q *HFSC) qlenNotify(cl *class) {
	if cl.nactive != 0 {
		q.updateVF(cl, 0)
	}
	if cl.flags&hasRSC != 0 {
		q.eltreeRemove(cl)
	}
}

// scheduleWatchdog is hfsc_schedule_watchdog: at the next eligible
// time or the root's next fit time, whichever is first.
func (q *HFSC) scheduleWatchdog(ctx qdisc.Ctx) {
	var next uint64
	if cl := q.eligible.first(); cl != nil {
		next = cl.e
	}
	if q.root.cfmin != 0 && (next == 0 || next > q.root.cfmin) {
		next = q.root.cfmin
	}
	if next != 0 {
		ctx.Watchdog(sim.Time(next << 6)) // qdisc_watchdog_schedule: ticks to ns
	}
}

// hfscDequeue is hfsc_dequeue.
func (q *HFSC) hfscDequeue(ctx qdisc.Ctx, x qdisc.ClassCtx) (skb.Packet, bool) {
	if q.qlen() == 0 {
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkTstamp, 1)
	cur := uint64(ctx.Now()) >> 6
	// real-time first: the eligible class with the earliest deadline
	cl := q.eltreeGetMindl(ctx, cur)
	realtime := cl != nil
	if !realtime {
		// link-sharing: the leaf of smallest vt in the hierarchy
		if cl = vttreeGetMinvt(ctx, &q.root, cur); cl == nil {
			q.overlimits++
			q.scheduleWatchdog(ctx)
			return skb.Packet{}, false
		}
	}
	p, ok := q.leafDequeue(x, cl)
	if !ok {
		return skb.Packet{}, false // qdisc_warn_nonwc: no watchdog of hfsc's
	}
	cl.bytes += uint64(p.Len)
	cl.packets += uint64(max(p.GSOSegs, 1))
	q.updateVF(cl, p.Len)
	if realtime {
		cl.cumul += uint64(p.Len)
	}
	if cl.flags&hasRSC != 0 {
		if q.leafQlen(cl) != 0 {
			nextLen := q.peekLen(x, cl)
			// the peek may have emptied it (a CoDel leaf)
			if q.leafQlen(cl) != 0 {
				if realtime {
					q.updateED(cl, nextLen)
				} else {
					updateD(cl, nextLen)
				}
			}
		} else {
			q.eltreeRemove(cl) // passive
		}
	}
	ctx.Work(qdisc.WorkDequeue, 1)
	return p, true
}

// Dequeue implements qdisc.Qdisc: hfsc_dequeue per packet of the bulk.
func (q *HFSC) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.hfscDequeue(ctx, x) })
}

func (q *HFSC) qlen() int { return q.rootQ.Len() + q.leaves.Qlen }

// resetClass is hfsc_reset_class.
func resetClass(cl *class) {
	*cl = class{id: cl.id, level: cl.level, parent: cl.parent, children: cl.children,
		bytes: cl.bytes, packets: cl.packets, drops: cl.drops,
		rsc: cl.rsc, fsc: cl.fsc, usc: cl.usc, flags: cl.flags,
		vtTree: cl.vtTree[:0], cfTree: cl.cfTree[:0]}
	if cl.flags&hasRSC != 0 {
		cl.deadline = rtscInit(&cl.rsc, 0, 0)
	}
	if cl.flags&hasFSC != 0 {
		cl.virtual = rtscInit(&cl.fsc, 0, 0)
	}
	if cl.flags&hasUSC != 0 {
		cl.ulimit = rtscInit(&cl.usc, 0, 0)
	}
}

// Reset implements qdisc.Resetter (hfsc_reset_qdisc; the host resets
// the leaves, hfsc the root class's own queue).
func (q *HFSC) Reset(ctx qdisc.Ctx) {
	for _, cl := range q.clhash.Walk() {
		resetClass(cl)
	}
	q.purgeRoot(ctx)
	q.eligible = q.eligible[:0]
	ctx.CancelWatchdog()
	q.leaves.Reset()
}

// purgeRoot empties the root class's pfifo (qdisc_reset: rtnl_kfree_skbs).
func (q *HFSC) purgeRoot(ctx qdisc.Ctx) int {
	n := q.rootQ.Len()
	for q.rootQ.Len() > 0 {
		ctx.Drop(q.rootQ.PopHead().Handle, skb.DropNotSpecified)
	}
	q.rootB = 0
	return n
}

// Stats implements qdisc.Qdisc: the tree's qlen and backlog.
func (q *HFSC) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.qlen(), Backlog: q.rootB + q.leaves.Backlog, Drops: q.drops, Overlimits: q.overlimits}
}

// Dump implements qdisc.Qdisc: hfsc_print_opt, the default class only
// when set.
func (q *HFSC) Dump() string {
	if q.defcls == 0 {
		return ""
	}
	return fmt.Sprintf("default %#x ", q.defcls)
}

// QlenNotify implements qdisc.Classful (hfsc_qlen_notify).
func (q *HFSC) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if cl := q.byID[id]; cl != nil && st.Qlen == 0 {
		q.qlenNotify(cl)
	}
}

// classOpt is the class's tc words as hfsc_parse_class_opt sends them.
type classOpt struct {
	rsc, fsc, usc qdisc.Attr[serviceCurve]
}

// parseClass is hfsc_parse_class_opt.
func parseClass(args []string, devSpeed int64) (classOpt, error) {
	var o classOpt
	for i := 0; i < len(args); {
		k := args[i]
		var dst []*qdisc.Attr[serviceCurve]
		name := ""
		switch {
		case psched.Matches(k, "rt"):
			dst, name = []*qdisc.Attr[serviceCurve]{&o.rsc}, "rt"
		case psched.Matches(k, "ls"):
			dst, name = []*qdisc.Attr[serviceCurve]{&o.fsc}, "ls"
		case psched.Matches(k, "sc"):
			dst, name = []*qdisc.Attr[serviceCurve]{&o.rsc, &o.fsc}, "sc"
		case psched.Matches(k, "ul"):
			dst, name = []*qdisc.Attr[serviceCurve]{&o.usc}, "ul"
		case psched.Matches(k, "help"):
			return o, qdisc.Parsef("hfsc", "Usage: ... hfsc [ [ rt SC ] [ ls SC ] | [ sc SC ] ] [ ul SC ]")
		default:
			return o, qdisc.Parsef("hfsc", "HFSC: What is %q ?", k)
		}
		if i+1 >= len(args) {
			return o, errIncomplete(k)
		}
		sc, n, err := curveWords(args[i+1:], devSpeed)
		if err != nil {
			var nc *errNoCurve
			if errors.As(err, &nc) {
				return o, qdisc.Parsef("hfsc", "HFSC: Illegal %q (%s)", name, nc.why)
			}
			return o, err
		}
		for _, d := range dst {
			d.Put(sc)
		}
		i += 1 + n
	}
	switch {
	case !o.rsc.Set && !o.fsc.Set && !o.usc.Set:
		return o, qdisc.Parsef("hfsc", "HFSC: no parameters given")
	case o.usc.Set && !o.fsc.Set:
		return o, qdisc.Parsef("hfsc", "HFSC: Upper-limit Service Curve without Link-Share Service Curve")
	}
	return o, nil
}

// curve is the kernel's reading of one attribute: a curve of two zero
// slopes is none.
func curve(a qdisc.Attr[serviceCurve]) *serviceCurve {
	if !a.Set || a.V.m1 == 0 && a.V.m2 == 0 {
		return nil
	}
	return &a.V
}

// changeRSC, changeFSC and changeUSC are hfsc_change_rsc, _fsc, _usc.
func changeRSC(cl *class, sc *serviceCurve, cur uint64) {
	cl.rsc = sc2isc(*sc)
	cl.deadline = rtscInit(&cl.rsc, cur, cl.cumul)
	cl.eligible = cl.deadline
	if cl.rsc.sm1 <= cl.rsc.sm2 {
		cl.eligible.dx, cl.eligible.dy = 0, 0
	}
	cl.flags |= hasRSC
}

func changeFSC(cl *class, sc *serviceCurve) {
	cl.fsc = sc2isc(*sc)
	cl.virtual = rtscInit(&cl.fsc, cl.vt, cl.total)
	cl.flags |= hasFSC
}

func changeUSC(cl *class, sc *serviceCurve, cur uint64) {
	cl.usc = sc2isc(*sc)
	cl.ulimit = rtscInit(&cl.usc, cur, cl.total)
	cl.flags |= hasUSC
}

// ChangeClass implements qdisc.Classful (hfsc_change_class).
func (q *HFSC) ChangeClass(ctx qdisc.Ctx, req qdisc.ClassReq) error {
	o, err := parseClass(req.Args, q.devSpeed)
	if err != nil {
		return err
	}
	rsc, fsc, usc := curve(o.rsc), curve(o.fsc), curve(o.usc)
	x := ctx.(qdisc.ClassCtx)
	parentID := req.Parent
	if parentID.Minor() == 0 && parentID != qdisc.RootClass {
		parentID = q.root.id // "parent X:" is the root class
	}
	if cl := q.find(req.ID); cl != nil {
		switch {
		case cl.parent != nil && req.Parent != 0 && cl.parent.id != parentID,
			cl.parent == nil && req.Parent != 0 && req.Parent != qdisc.RootClass:
			return qdisc.Refusef("hfsc", "RTNETLINK answers: Invalid argument (class %s's parent is not %s)", req.ID, req.Parent)
		}
		ctx.Work(qdisc.WorkTstamp, 1)
		cur := uint64(ctx.Now()) >> 6
		old := cl.flags
		if rsc != nil {
			changeRSC(cl, rsc, cur)
		}
		if fsc != nil {
			changeFSC(cl, fsc)
		}
		if usc != nil {
			changeUSC(cl, usc, cur)
		}
		var length uint32
		if q.leafQlen(cl) != 0 {
			length = q.peekLen(x, cl)
		}
		// the peek may have emptied it (a CoDel leaf)
		if q.leafQlen(cl) != 0 {
			if cl.flags&hasRSC != 0 {
				if old&hasRSC != 0 {
					q.updateED(cl, length)
				} else {
					q.initED(cl, length, cur)
				}
			}
			if cl.flags&hasFSC != 0 {
				if old&hasFSC != 0 {
					q.updateVF(cl, 0)
				} else {
					initVF(cl, func() uint64 { return cur })
				}
			}
		}
		return nil
	}
	if req.Parent == qdisc.RootClass {
		return qdisc.Refusef("hfsc", "RTNETLINK answers: File exists (hfsc's root class is %s:; write \"parent %x:\")", req.ID, q.handle)
	}
	parent := q.find(parentID)
	if parent == nil {
		return qdisc.Refusef("hfsc", "RTNETLINK answers: No such file or directory (parent class %s)", req.Parent)
	}
	if req.ID.Minor() == 0 || req.ID.Major() != q.handle {
		return qdisc.Refusef("hfsc", "RTNETLINK answers: Invalid argument (classid %s is not a class of %x:)", req.ID, q.handle)
	}
	if rsc == nil && fsc == nil {
		return qdisc.Refusef("hfsc", "RTNETLINK answers: Invalid argument (class %s: a new class needs an rt, ls or sc curve)", req.ID)
	}
	cl := &class{id: req.ID, parent: parent}
	if rsc != nil {
		changeRSC(cl, rsc, 0)
	}
	if fsc != nil {
		changeFSC(cl, fsc)
	}
	if usc != nil {
		changeUSC(cl, usc, 0)
	}
	var warn error
	if parent.flags&hasFSC == 0 && parent != &q.root {
		// an inner class with only rt: it gets its rt as ls
		warn = &qdisc.Warning{Msg: "Forced curve change on parent 'rt' to 'sc'"}
		parent.fsc = parent.rsc
		parent.virtual = rtscInit(&parent.fsc, parent.vt, parent.total)
		parent.flags |= hasFSC
	}
	q.byID[cl.id] = cl
	q.clhash.Insert(cl.id, cl)
	parent.children = append(parent.children, cl)
	if parent.level == 0 {
		// qdisc_purge_queue of the parent's leaf (the host destroys it
		// after this call; the root keeps its own)
		if parent == &q.root {
			q.drops += uint64(q.purgeRoot(ctx))
		} else {
			q.drops += uint64(q.leaves.Remove(parent.id).Qlen)
		}
		q.qlenNotify(parent)
	}
	adjustLevels(parent)
	q.clhash.Grow()
	return warn
}

// adjustLevels is hfsc_adjust_levels: cl's level and its ancestors'.
func adjustLevels(cl *class) {
	for ; cl != nil; cl = cl.parent {
		level := 0
		for _, p := range cl.children {
			level = max(level, p.level+1)
		}
		cl.level = level
	}
}

// DeleteClass implements qdisc.Classful (hfsc_delete_class).
func (q *HFSC) DeleteClass(_ qdisc.Ctx, id qdisc.ClassID) error {
	cl := q.find(id)
	if cl == nil {
		return qdisc.Refusef("hfsc", "RTNETLINK answers: No such file or directory (class %s)", id)
	}
	if cl.level > 0 || cl == &q.root {
		return qdisc.Refusef("hfsc", "Error: HFSC class in use (%s has children or is the root class).", id)
	}
	p := cl.parent
	if i := slices.Index(p.children, cl); i >= 0 {
		p.children = slices.Delete(p.children, i, i+1)
	}
	adjustLevels(p)
	q.drops += uint64(q.leaves.Remove(id).Qlen) // qdisc_purge_queue
	q.qlenNotify(cl)
	q.clhash.Remove(id)
	delete(q.byID, id)
	return nil
}

// Classes implements qdisc.Classful: hfsc_walk's order (the class
// hash) with hfsc_dump_class and hfsc_dump_class_stats. The root class
// X: holds no leaf the host sees: its pfifo is the model's rootQ.
func (q *HFSC) Classes() []qdisc.Class {
	var out []qdisc.Class
	for _, cl := range q.clhash.Walk() {
		parent := qdisc.RootClass
		if cl.parent != nil {
			parent = cl.parent.id
		}
		c := qdisc.Class{ID: cl.id, Parent: parent, Leaf: cl.level == 0 && cl != &q.root, Filters: true,
			Options: dumpCurves(cl), SentPackets: cl.packets, SentBytes: cl.bytes, Drops: cl.drops,
			XStats: []qdisc.XStat{qdisc.XUint("period", uint64(cl.vtperiod)), qdisc.XUint("work", cl.total),
				qdisc.XUint("rtwork", cl.cumul), qdisc.XUint("level", uint64(cl.level))}}
		if cl == &q.root && cl.level == 0 {
			c.Qlen, c.Backlog = q.rootQ.Len(), q.rootB
		}
		out = append(out, c)
	}
	return out
}

// dumpCurves is hfsc_print_class_opt over hfsc_dump_curves: "sc" when
// rt and ls are the same curve, else "rt" and "ls"; then "ul".
func dumpCurves(cl *class) string {
	var b strings.Builder
	var rsc, fsc *serviceCurve
	if cl.flags&hasRSC != 0 {
		sc := cl.rsc.dump()
		rsc = &sc
	}
	if cl.flags&hasFSC != 0 {
		sc := cl.fsc.dump()
		fsc = &sc
	}
	if rsc != nil && fsc != nil && *rsc == *fsc {
		b.WriteString("sc " + rsc.String())
	} else {
		if rsc != nil {
			b.WriteString("rt " + rsc.String())
		}
		if fsc != nil {
			b.WriteString("ls " + fsc.String())
		}
	}
	if cl.flags&hasUSC != 0 {
		b.WriteString("ul " + cl.usc.dump().String())
	}
	return b.String()
}
