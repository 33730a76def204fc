// Package htb is the kernel's Hierarchical Token Bucket
// (net/sched/sch_htb.c, 6.18): classes in a tree of up to 8 levels, each
// with a rate and a ceil, leaf classes holding a qdisc of any kind (the
// host holds it: framework/qdisc.Classful), served by priority and, among
// classes of one priority at one level, by deficit round robin with each
// class's quantum; a class over its rate borrows from its ancestors up to
// its ceil (the modes HTB_CAN_SEND / HTB_MAY_BORROW / HTB_CANT_SEND).
// Mode changes in the future wait in per-level event queues (wait_pq);
// the qdisc watchdog fires at the next one. Packets that classify to no
// class go to the direct queue and leave first. Hardware offload is not
// modelled (the software path is).
package htb

import (
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("htb", "Hierarchical Token Bucket: classes with rate, ceil and borrowing, DRR per priority (sch_htb.c)",
		func() qdisc.Qdisc { return &HTB{} })
}

// Limits of the tree (include/uapi/linux/pkt_sched.h).
const (
	MaxDepth = 8 // TC_HTB_MAXDEPTH
	NumPrio  = 8 // TC_HTB_NUMPRIO
	version  = 0x30011
)

// htbCmode is enum htb_cmode.
type htbCmode uint8

const (
	cantSend  htbCmode = iota // HTB_CANT_SEND: can't send and can't borrow
	mayBorrow                 // HTB_MAY_BORROW: can't send but may borrow
	canSend                   // HTB_CAN_SEND
)

// class is struct htb_class.
type class struct {
	id       qdisc.ClassID
	parent   *class
	children int
	level    int

	rate, ceil      psched.Ratecfg
	buffer, cbuffer int64 // ns
	mbuffer         int64
	prio            int
	quantum         int32 // an int: a u32 quantum of 2^31 or more is negative
	// hopt keeps what tc sent, for the dump: the buffer and cbuffer in
	// ticks and the rates as given.
	bufTicks, cbufTicks uint32
	quantumSet          bool

	bytes, packets    uint64 // bstats
	drops, overlimits uint64
	lends, borrows    uint64 // tc_htb_xstats
	giants            uint64

	tokens, ctokens int64
	tc              int64 // t_c: checkpoint time

	deficit [MaxDepth]int32  // leaf: ints, wrapping as the kernel's do
	inner   [NumPrio]hprio   // inner: feeds
	in      [NumPrio]*idTree // which tree node[prio] is in, if any
	pqKey   int64
	inPQ    bool

	prioActivity int
	cmode        htbCmode
}

// clearUnion is the kernel's memset(&cl->inner, 0, sizeof(cl->inner)):
// the inner class's feeds, and with them the leaf's deficits, which
// share that union. Each feed's tree keeps its prio.
func (cl *class) clearUnion() {
	cl.inner = [NumPrio]hprio{}
	for p := range cl.inner {
		cl.inner[p].tree.prio = p
	}
	cl.deficit = [MaxDepth]int32{}
}

// bstatsUpdate is bstats_update: the packet's bytes (qdisc_pkt_len),
// and a GSO skb's segments as its packets.
func (cl *class) bstatsUpdate(p *skb.Packet) {
	cl.bytes += uint64(p.Len)
	cl.packets += uint64(max(p.GSOSegs, 1))
}

// level is struct htb_level.
type level struct {
	waitPQ waitPQ
	hprio  [NumPrio]hprio
}

// HTB is struct htb_sched.
type HTB struct {
	handle     uint16
	devSpeed   int64 // the link's bits/s, for a rate in percent
	defcls     uint32
	r2q        uint32
	directQlen int
	direct     qdisc.Ring[skb.Packet]
	directB    int64
	directPkts uint64
	overlimits uint64
	drops      uint64

	clhash      qdisc.ClassHash[*class]
	classes     map[qdisc.ClassID]*class
	now         int64
	nearEvCache [MaxDepth]int64
	rowMask     [MaxDepth]int
	hlevel      [MaxDepth]level

	leaves qdisc.LeafTable

	// per-call buffers
	batch qdisc.LeafBatch
	cls   []*class // each batched packet's class
}

// glob is struct tc_htb_glob plus TCA_HTB_DIRECT_QLEN, as tc sends them.
type glob struct {
	r2q        uint32
	defcls     uint32
	directQlen qdisc.Attr[uint32]
}

// parseGlob is htb_parse_opt: r2q, default (hex), direct_qlen, debug.
func parseGlob(args []string) (glob, error) {
	g := glob{r2q: 10}
	a := qdisc.NewArgs("htb", args)
	for k := a.Next(); k != ""; k = a.Next() {
		switch {
		case psched.Matches(k, "r2q"):
			v, err := a.Value(k)
			if err != nil {
				return g, err
			}
			n, perr := units.GetUnsigned(v, 10)
			if perr != nil {
				return g, qdisc.Parsef("htb", "Illegal \"r2q\" %q", v)
			}
			g.r2q = n
		case psched.Matches(k, "default"):
			v, err := a.Value(k)
			if err != nil {
				return g, err
			}
			n, perr := units.GetUnsigned(v, 16)
			if perr != nil {
				return g, qdisc.Parsef("htb", "Illegal \"default\" %q", v)
			}
			g.defcls = n
		case psched.Matches(k, "debug"):
			if _, err := a.Value(k); err != nil {
				return g, err
			}
		case psched.Matches(k, "direct_qlen"):
			v, err := a.Value(k)
			if err != nil {
				return g, err
			}
			n, perr := units.GetUnsigned(v, 10)
			if perr != nil {
				return g, qdisc.Parsef("htb", "Illegal \"direct_qlen\" %q", v)
			}
			g.directQlen.Put(n)
		case psched.Matches(k, "offload"):
			return g, qdisc.Lacksf("htb", "offload: hardware HTB (ndo_setup_tc) is not modelled; txlab's htb is the software one")
		default:
			return g, qdisc.Parsef("htb", "What is %q?", k)
		}
	}
	return g, nil
}

// Init implements qdisc.Qdisc (htb_init).
func (q *HTB) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	g, err := parseGlob(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.handle = uint16(s.Major())
	q.devSpeed = max(s.RateBps, 0)
	q.directQlen = s.TxQueueLen
	if g.directQlen.Set {
		q.directQlen = int(g.directQlen.V)
	}
	// rate2quantum is an int: below 1 (0, or 2^31 and above read as
	// negative) it is 1
	q.r2q = g.r2q
	if q.r2q < 1 || q.r2q > math.MaxInt32 {
		q.r2q = 1
	}
	q.defcls = g.defcls
	q.classes = map[qdisc.ClassID]*class{}
	for i := range q.hlevel {
		for p := range q.hlevel[i].hprio {
			q.hlevel[i].hprio[p].tree.prio = p
		}
	}
	// sch->limit stays 0, as in the kernel; an empty htb's dequeue
	// touches nothing (sch->q.qlen == 0: goto fin). Its enqueue only
	// classifies and reads the class (htb_enqueue).
	return qdisc.Info{Flags: qdisc.EmptyNoop | qdisc.EnqueueReadsPrivate}, nil
}

// find is htb_find.
func (q *HTB) find(id qdisc.ClassID) *class {
	if id.Major() != q.handle {
		return nil
	}
	return q.classes[id]
}

// htbDirect is HTB_DIRECT: the packet goes to the direct queue.
var htbDirect = &class{}

// htbClassify is htb_classify: a leaf class, htbDirect, or nil to drop.
func (q *HTB) htbClassify(x qdisc.ClassCtx, p *skb.Packet) *class {
	self := qdisc.MakeClassID(q.handle, 0)
	if qdisc.ClassID(p.Priority) == self {
		return htbDirect // X:0 (direct flow) selected by skb->priority
	}
	at := self
	if cl := q.find(qdisc.ClassID(p.Priority)); cl != nil {
		if cl.level == 0 {
			return cl
		}
		at = cl.id // start with the inner class's filters
	}
	for hops := 0; ; hops++ {
		r := x.Classify(p, at)
		if r.Verdict == qdisc.VerdictNone {
			break
		}
		if r.Verdict == qdisc.VerdictShot {
			return nil
		}
		if r.Class == self {
			return htbDirect
		}
		cl := q.find(r.Class)
		if cl == nil {
			break // filter selected invalid classid
		}
		if cl.level == 0 {
			return cl
		}
		if hops+1 > MaxDepth {
			return nil // "htb: classify loop detected, dropping packet"
		}
		at = cl.id // an inner class: its filters
	}
	cl := q.find(qdisc.MakeClassID(q.handle, uint16(q.defcls)))
	if cl == nil || cl.level != 0 {
		return htbDirect // bad default: the direct queue
	}
	return cl
}

// Enqueue implements qdisc.Qdisc (htb_enqueue for each packet): the
// direct queue and drops here, the rest to their leaves in one host call.
func (q *HTB) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	q.batch.Reset()
	q.cls = q.cls[:0]
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		p := &batch[i]
		cl := q.htbClassify(x, p)
		switch cl {
		case htbDirect:
			if q.direct.Len() < q.directQlen {
				q.direct.PushTail(*p)
				q.directB += int64(p.Len)
				q.directPkts++
				rc[i] = qdisc.XmitSuccess
			} else {
				q.drops++
				ctx.Drop(p.Handle, skb.DropQdiscDrop)
				rc[i] = qdisc.XmitDrop
			}
		case nil:
			// A filter's TC_ACT_SHOT: htb_enqueue counts the drop
			// (__NET_XMIT_BYPASS) and returns NET_XMIT_SUCCESS |
			// __NET_XMIT_BYPASS, which dev_qdisc_enqueue masks.
			q.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
		default:
			q.batch.Add(p, cl.id, i)
			q.cls = append(q.cls, cl)
		}
	}
	// Each code is returned unmasked, as htb_enqueue returns ret.
	q.drops += q.batch.Send(x, &q.leaves, rc)
	for k, cl := range q.cls {
		if q.batch.Result(k).Code != qdisc.XmitSuccess {
			// net_xmit_drop_count (1 without __NET_XMIT_STOLEN):
			// NET_XMIT_DROP, NET_XMIT_CN and the leaf's own drop
			// (NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: netem's loss).
			// The qdisc's drop Send counted from the leaf's state.
			cl.drops++
			continue
		}
		q.htbActivate(cl)
	}
	// A leaf that dropped the packet it said NET_XMIT_SUCCESS for (its
	// own __NET_XMIT_BYPASS: netem's loss) is not activated by
	// htb_enqueue, whose test is qdisc_enqueue's unmasked code; the
	// leaves' last states are exact.
	for _, cl := range q.cls {
		if cl.prioActivity != 0 && q.leaves.Get(cl.id).Qlen == 0 {
			q.htbDeactivate(cl)
		}
	}
}

// htbActivate is htb_activate.
func (q *HTB) htbActivate(cl *class) {
	if cl.prioActivity == 0 {
		cl.prioActivity = 1 << cl.prio
		q.htbActivatePrios(cl)
	}
}

// htbDeactivate is htb_deactivate.
func (q *HTB) htbDeactivate(cl *class) {
	if cl.prioActivity == 0 {
		return
	}
	q.htbDeactivatePrios(cl)
	cl.prioActivity = 0
}

// htbAddClassToRow is htb_add_class_to_row.
func (q *HTB) htbAddClassToRow(cl *class, mask int) {
	q.rowMask[cl.level] |= mask
	for m := mask; m != 0; {
		prio := ffs(m)
		m &^= 1 << prio
		q.hlevel[cl.level].hprio[prio].tree.insert(cl)
	}
}

// htbRemoveClassFromRow is htb_remove_class_from_row.
func (q *HTB) htbRemoveClassFromRow(cl *class, mask int) {
	m := 0
	hl := &q.hlevel[cl.level]
	for mask != 0 {
		prio := ffs(mask)
		mask &^= 1 << prio
		hp := &hl.hprio[prio]
		if hp.ptr == cl {
			nextNode(&hp.ptr, prio)
		}
		hp.tree.erase(cl)
		if hp.tree.empty() {
			m |= 1 << prio
		}
	}
	q.rowMask[cl.level] &^= m
}

// htbActivatePrios is htb_activate_prios: connect cl to its ancestors'
// feeds (while it may borrow) or to its level's row.
func (q *HTB) htbActivatePrios(cl *class) {
	p := cl.parent
	mask := cl.prioActivity
	for cl.cmode == mayBorrow && p != nil && mask != 0 {
		for m := mask; m != 0; {
			prio := ffs(m)
			m &^= 1 << prio
			if !p.inner[prio].tree.empty() {
				// parent already has its feed in use: it is active already
				mask &^= 1 << prio
			}
			p.inner[prio].tree.insert(cl)
		}
		p.prioActivity |= mask
		cl = p
		p = cl.parent
	}
	if cl.cmode == canSend && mask != 0 {
		q.htbAddClassToRow(cl, mask)
	}
}

// htbDeactivatePrios is htb_deactivate_prios.
func (q *HTB) htbDeactivatePrios(cl *class) {
	p := cl.parent
	mask := cl.prioActivity
	for cl.cmode == mayBorrow && p != nil && mask != 0 {
		m := mask
		mask = 0
		for m != 0 {
			prio := ffs(m)
			m &^= 1 << prio
			fp := &p.inner[prio]
			if fp.ptr == cl {
				// removing the child the parent's feed points at: forget
				// the pointer, remember the classid
				fp.lastPtrID = cl.id
				fp.ptr = nil
			}
			fp.tree.erase(cl)
			if fp.tree.empty() {
				mask |= 1 << prio
			}
		}
		p.prioActivity &^= mask
		cl = p
		p = cl.parent
	}
	if cl.cmode == canSend && mask != 0 {
		q.htbRemoveClassFromRow(cl, mask)
	}
}

// ffs is ffz(~m): the lowest set bit.
func ffs(m int) int {
	for i := 0; i < 32; i++ {
		if m&(1<<i) != 0 {
			return i
		}
	}
	return 32
}

// htbClassMode is htb_class_mode (htb_hysteresis 0, the default): cl's
// mode at t_c + *diff; when it cannot send, *diff becomes the time until
// it changes.
func htbClassMode(cl *class, diff *int64) htbCmode {
	if toks := cl.ctokens + *diff; toks < 0 { // htb_lowater is 0
		*diff = -toks
		return cantSend
	}
	toks := cl.tokens + *diff
	if toks >= 0 { // htb_hiwater is 0
		return canSend
	}
	*diff = -toks
	return mayBorrow
}

// htbChangeClassMode is htb_change_class_mode.
func (q *HTB) htbChangeClassMode(cl *class, diff *int64) {
	newMode := htbClassMode(cl, diff)
	if newMode == cl.cmode {
		return
	}
	if newMode == cantSend {
		cl.overlimits++
		q.overlimits++
	}
	if cl.prioActivity != 0 { // not necessary: speed optimization
		if cl.cmode != cantSend {
			q.htbDeactivatePrios(cl)
		}
		cl.cmode = newMode
		if newMode != cantSend {
			q.htbActivatePrios(cl)
		}
	} else {
		cl.cmode = newMode
	}
}

// htbAddToWaitTree is htb_add_to_wait_tree.
func (q *HTB) htbAddToWaitTree(cl *class, delay int64) {
	cl.pqKey = q.now + delay
	if cl.pqKey == q.now {
		cl.pqKey++
	}
	if q.nearEvCache[cl.level] > cl.pqKey {
		q.nearEvCache[cl.level] = cl.pqKey
	}
	q.hlevel[cl.level].waitPQ.insert(cl)
}

// htbAccntTokens is htb_accnt_tokens.
func htbAccntTokens(cl *class, bytes int, diff int64) {
	toks := diff + cl.tokens
	if toks > cl.buffer {
		toks = cl.buffer
	}
	toks -= int64(cl.rate.L2T(uint32(bytes)))
	if toks <= -cl.mbuffer {
		toks = 1 - cl.mbuffer
	}
	cl.tokens = toks
}

// htbAccntCtokens is htb_accnt_ctokens.
func htbAccntCtokens(cl *class, bytes int, diff int64) {
	toks := diff + cl.ctokens
	if toks > cl.cbuffer {
		toks = cl.cbuffer
	}
	toks -= int64(cl.ceil.L2T(uint32(bytes)))
	if toks <= -cl.mbuffer {
		toks = 1 - cl.mbuffer
	}
	cl.ctokens = toks
}

// htbChargeClass is htb_charge_class: packet pk dequeued from leaf cl
// borrowing at level: its ceil bucket and every ancestor's, and the rate
// bucket of those at level or above; modes change as the buckets say.
func (q *HTB) htbChargeClass(cl *class, lvl int, pk *skb.Packet) {
	bytes := int(pk.Len)
	for ; cl != nil; cl = cl.parent {
		diff := min(q.now-cl.tc, cl.mbuffer)
		if cl.level >= lvl {
			if cl.level == lvl {
				cl.lends++
			}
			htbAccntTokens(cl, bytes, diff)
		} else {
			cl.borrows++
			cl.tokens += diff // we moved t_c; update tokens
		}
		htbAccntCtokens(cl, bytes, diff)
		cl.tc = q.now

		old := cl.cmode
		diff = 0
		q.htbChangeClassMode(cl, &diff)
		if old != cl.cmode {
			if old != canSend {
				q.hlevel[cl.level].waitPQ.erase(cl)
			}
			if cl.cmode != canSend {
				q.htbAddToWaitTree(cl, diff)
			}
		}
		if cl.level != 0 { // leaves are counted at dequeue
			cl.bstatsUpdate(pk)
		}
	}
}

// htbDoEvents is htb_do_events: apply the mode changes due at level;
// the time of the next one, 0 for none. (The kernel's two-jiffy bound
// never bites: the model's clock does not move inside the loop.)
func (q *HTB) htbDoEvents(ctx qdisc.Ctx, lvl int) int64 {
	pq := &q.hlevel[lvl].waitPQ
	for {
		cl := pq.first()
		if cl == nil {
			return 0
		}
		if cl.pqKey > q.now {
			return cl.pqKey
		}
		ctx.Work(qdisc.WorkFlowScan, 1)
		pq.erase(cl)
		diff := min(q.now-cl.tc, cl.mbuffer)
		q.htbChangeClassMode(cl, &diff)
		if cl.cmode != canSend {
			q.htbAddToWaitTree(cl, diff)
		}
	}
}

// htbLookupLeaf is htb_lookup_leaf: the leaf the row's and feeds' DRR
// pointers lead to.
func htbLookupLeaf(ctx qdisc.Ctx, hp *hprio, prio int) *class {
	type frame struct {
		root *idTree
		pptr **class
		pid  *qdisc.ClassID
	}
	var stk [MaxDepth]frame
	if hp.tree.empty() {
		return nil
	}
	sp := 0
	stk[0] = frame{&hp.tree, &hp.ptr, &hp.lastPtrID}
	for i := 0; i < 65535; i++ {
		ctx.Work(qdisc.WorkFlowScan, 1)
		f := &stk[sp]
		if *f.pptr == nil && *f.pid != 0 {
			// ptr was invalidated but id is valid: recover it or the next
			*f.pptr = f.root.findNextUpper(*f.pid)
		}
		*f.pid = 0
		if *f.pptr == nil { // at the right end: rewind and go up
			*f.pptr = f.root.first()
			if sp > 0 {
				sp--
				if *stk[sp].pptr == nil {
					return nil // WARN_ON(1)
				}
				nextNode(stk[sp].pptr, prio)
			}
			continue
		}
		cl := *f.pptr
		if cl.level == 0 {
			return cl
		}
		cp := &cl.inner[prio]
		sp++
		if sp >= MaxDepth {
			return nil
		}
		stk[sp] = frame{&cp.tree, &cp.ptr, &cp.lastPtrID}
	}
	return nil // WARN_ON(1)
}

// htbDequeueTree is htb_dequeue_tree: a packet from the classes active
// at prio and level, by DRR.
func (q *HTB) htbDequeueTree(ctx qdisc.Ctx, x qdisc.ClassCtx, prio, lvl int) (skb.Packet, bool) {
	hp := &q.hlevel[lvl].hprio[prio]
	start := htbLookupLeaf(ctx, hp, prio)
	cl := start
	var pk skb.Packet
	ok := false
	for {
		if cl == nil {
			return skb.Packet{}, false
		}
		// class can be empty (its leaf dropped in enqueue, or was
		// grafted over since): deactivate and skip it
		if q.leaves.Get(cl.id).Qlen == 0 {
			q.htbDeactivate(cl)
			if q.rowMask[lvl]&(1<<prio) == 0 { // row/level might become empty
				return skb.Packet{}, false
			}
			next := htbLookupLeaf(ctx, hp, prio)
			if cl == start { // fix start if we just deleted it
				start = next
			}
			cl = next
			continue
		}
		var st qdisc.LeafState
		var dropped int
		pk, ok, st, dropped = q.leaves.Dequeue(x, cl.id)
		q.drops += uint64(dropped)
		if dropped > 0 && st.Qlen == 0 {
			// its drops emptied it: the leaf's qdisc_tree_reduce_backlog
			// called htb_qlen_notify inside its dequeue, before the DRR
			// step below (which then moves the row's pointer again)
			q.htbDeactivate(cl)
		}
		if ok {
			break
		}
		// qdisc_warn_nonwc: a leaf that holds packets but gave none
		q.nextPtr(cl, prio, lvl)
		cl = htbLookupLeaf(ctx, hp, prio)
		if cl == start {
			break
		}
	}
	if !ok {
		return skb.Packet{}, false
	}
	cl.bstatsUpdate(&pk)
	cl.deficit[lvl] -= int32(pk.Len)
	if cl.deficit[lvl] < 0 {
		cl.deficit[lvl] += cl.quantum
		q.nextPtr(cl, prio, lvl)
	}
	if q.leaves.Get(cl.id).Qlen == 0 {
		q.htbDeactivate(cl)
	}
	q.htbChargeClass(cl, lvl, &pk)
	return pk, true
}

// nextPtr moves the DRR pointer past cl: its parent's feed's at level >
// 0, the row's at level 0.
func (q *HTB) nextPtr(cl *class, prio, lvl int) {
	if lvl != 0 {
		nextNode(&cl.parent.inner[prio].ptr, prio)
	} else {
		nextNode(&q.hlevel[0].hprio[prio].ptr, prio)
	}
}

// htbDequeue is htb_dequeue for one packet.
func (q *HTB) htbDequeue(ctx qdisc.Ctx, x qdisc.ClassCtx) (skb.Packet, bool) {
	// direct packets first, as high prio, to minimize cpu work
	if q.direct.Len() > 0 {
		p := q.direct.PopHead()
		q.directB -= int64(p.Len)
		ctx.Work(qdisc.WorkDequeue, 1)
		return p, true
	}
	if q.leaves.Qlen == 0 {
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkTstamp, 1)
	q.now = int64(ctx.Now())
	nextEvent := q.now + 5*int64(sim.Second)
	for lvl := 0; lvl < MaxDepth; lvl++ {
		event := q.nearEvCache[lvl]
		if q.now >= event { // common case: skip the event handler
			event = q.htbDoEvents(ctx, lvl)
			if event == 0 {
				event = q.now + int64(sim.Second)
			}
			q.nearEvCache[lvl] = event
		}
		nextEvent = min(nextEvent, event)
		for m := ^q.rowMask[lvl]; m != -1; {
			prio := ffs(^m)
			m |= 1 << prio
			if p, ok := q.htbDequeueTree(ctx, x, prio, lvl); ok {
				ctx.Work(qdisc.WorkDequeue, 1)
				return p, true
			}
		}
	}
	if nextEvent > q.now {
		ctx.Watchdog(sim.Time(nextEvent)) // qdisc_watchdog_schedule_ns
	} else {
		ctx.Watchdog(sim.Time(q.now)) // schedule_work: __netif_schedule(root)
	}
	return skb.Packet{}, false
}

// Dequeue implements qdisc.Qdisc: htb_dequeue per packet of the bulk.
func (q *HTB) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.htbDequeue(ctx, x) })
}

// Reset implements qdisc.Resetter (htb_reset; the host resets the
// leaves).
func (q *HTB) Reset(ctx qdisc.Ctx) {
	for _, cl := range q.clhash.Walk() {
		if cl.level != 0 {
			cl.clearUnion()
		}
		cl.in = [NumPrio]*idTree{}
		cl.inPQ = false
		cl.prioActivity = 0
		cl.cmode = canSend
	}
	ctx.CancelWatchdog()
	for q.direct.Len() > 0 {
		ctx.Drop(q.direct.PopHead().Handle, skb.DropNotSpecified)
	}
	q.directB = 0
	for i := range q.hlevel {
		q.hlevel[i] = level{}
		for p := range q.hlevel[i].hprio {
			q.hlevel[i].hprio[p].tree.prio = p
		}
	}
	q.rowMask = [MaxDepth]int{}
	q.leaves.Reset()
}

// Stats implements qdisc.Qdisc: the tree's qlen and backlog.
func (q *HTB) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.direct.Len() + q.leaves.Qlen, Backlog: q.directB + q.leaves.Backlog,
		Drops: q.drops, Overlimits: q.overlimits}
}

// Dump implements qdisc.Qdisc: htb_print_opt of the qdisc, with -d.
func (q *HTB) Dump() string {
	def := "0"
	if q.defcls != 0 {
		def = fmt.Sprintf("%#x", q.defcls)
	}
	return fmt.Sprintf("r2q %d default %s direct_packets_stat %d ver %d.%d direct_qlen %d",
		q.r2q, def, q.directPkts, version>>16, version&0xffff, q.directQlen)
}

// QlenNotify implements qdisc.Classful (htb_qlen_notify).
func (q *HTB) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if cl := q.classes[id]; cl != nil && st.Qlen == 0 {
		q.htbDeactivate(cl)
	}
}
