package qdisctest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// A classful qdisc (qdisc.Classful) runs the suite with leaves the
// context holds, as a host does: a pfifo per leaf class (its default),
// or the qdisc Options.Leaves puts there, called directly, each with its
// own context (leafCtx). The suite has no filters, so packets classify
// by skb->priority and the qdisc's defaults (htb's default class, prio's
// priomap); Options.Classes adds classes first.

// leafCtx is a leaf's context: the suite's, with the leaf's own
// watchdog, timer and declared drop reasons, and its duplicates handed
// to the root (netem_enqueue's rootq->enqueue), not to the leaf.
type leafCtx struct {
	*Ctx
	id      qdisc.ClassID
	q       qdisc.Qdisc
	kind    string
	limit   int // sch->limit, as its Info says
	reasons []skb.DropReason
	// d keeps the packet qdisc_peek_dequeued took from a leaf without a
	// peek of its own (netem, pie, fq_codel) until its dequeue.
	d qdisc.Defaults

	wdog, timerAt         sim.Time
	wdogArmed, timerArmed bool
	gen                   uint64 // its class's LeafGen when made
}

func (x *leafCtx) Watchdog(at sim.Time)         { x.wdog, x.wdogArmed = at, true }
func (x *leafCtx) WatchdogRange(at, _ sim.Time) { x.Watchdog(at) }
func (x *leafCtx) CancelWatchdog()              { x.wdogArmed = false }
func (x *leafCtx) ModTimer(at sim.Time)         { x.timerAt, x.timerArmed = at, true }
func (x *leafCtx) DelTimer()                    { x.timerArmed = false }
func (x *leafCtx) Drop(h skb.Handle, r skb.DropReason) {
	x.Ctx.dropWith(x.reasons, h, r)
}
func (x *leafCtx) DequeueDrop(h skb.Handle, r skb.DropReason) {
	x.Ctx.dropWith(x.reasons, h, r)
}

// Duplicate is skb_clone now: the suite enqueues the clone at the root
// after the root's call, and marks it (Packet.Dup) if the root hands it
// back to this leaf.
func (x *leafCtx) Duplicate(h skb.Handle) {
	p, ok := x.pkts[h]
	if _, dropped := x.Dropped[h]; !ok || dropped {
		panic(&Broken{fmt.Sprintf("leaf %s duplicated packet %#x it does not hold", x.id, uint64(h))})
	}
	x.leafDups = append(x.leafDups, leafDup{p: p, by: x.id})
}

// leafDup is a leaf's duplicate: the packet cloned and the leaf's class.
type leafDup struct {
	p  skb.Packet
	by qdisc.ClassID
}

// init inits the leaf qdisc with its own context.
func (x *leafCtx) init(s qdisc.Setup, args []string) error {
	info, err := x.q.Init(x, s, args)
	if err == nil {
		err = info.CheckDropReasons()
	}
	x.reasons, x.limit = info.DropReasons, info.Limit
	return err
}

// fifoSetLimit is fifo_set_limit on the leaf, as the host does it
// (netdev's): a fifo kind (qdisc.TakesFifoLimit) takes limit.
func (x *leafCtx) fifoSetLimit(limit uint32) error {
	if limit == 0 || x.limit == int(limit) || !qdisc.TakesFifoLimit(x.kind) {
		return nil
	}
	info, err := qdisc.Change(x.q, x, []string{"limit", fmt.Sprint(limit)})
	x.limit = info.Limit
	return err
}

// classOps is what both a qdisc.Classful and a plugin proxy (a
// wire.ClassOps) have.
type classOps interface {
	Classes() []qdisc.Class
	ChangeClass(qdisc.Ctx, qdisc.ClassReq) error
}

// classful is q's class ops, if q has classes.
func classful(q qdisc.Qdisc) classOps {
	if c, ok := q.(interface{ Classful() bool }); ok && !c.Classful() {
		return nil
	}
	c, _ := q.(classOps)
	return c
}

// attach applies o.Classes to q (`tc class add` words after "class
// add": "parent 1: classid 1:10 htb rate 100mbit") and gives every leaf
// class a pfifo.
func (c *Ctx) attach(q qdisc.Qdisc, o Options) error {
	co := classful(q)
	if co == nil {
		switch {
		case len(o.Classes) > 0:
			return fmt.Errorf("classes given, but the qdisc has none (it implements no qdisc.Classful)")
		case len(o.Leaves) > 0:
			return fmt.Errorf("leaves given, but the qdisc has no classes (it implements no qdisc.Classful)")
		}
		return nil
	}
	maj := tc.MakeHandle(uint16(o.Setup.Major()), 0)
	for _, line := range o.Classes {
		cmd, err := tc.ParseClass(strings.Fields(line))
		if err != nil {
			return fmt.Errorf("class %q: %w", line, err)
		}
		parent := qdisc.ClassID(tc.MakeHandle(maj.Major(), cmd.Parent.Minor()))
		if cmd.Parent == tc.Root || cmd.Parent == tc.Unspec {
			parent = qdisc.RootClass
		}
		req := qdisc.ClassReq{ID: qdisc.ClassID(tc.MakeHandle(maj.Major(), cmd.ClassID.Minor())), Parent: parent, Create: true, Args: cmd.Options}
		if err := co.ChangeClass(c, req); err != nil {
			if _, warn := err.(*qdisc.Warning); !warn {
				return fmt.Errorf("class %q: %w", line, err)
			}
		}
	}
	c.major = maj.Major()
	if err := c.syncLeaves(co, c.major); err != nil {
		return err
	}
	for _, line := range o.Leaves {
		if err := c.graft(q, co, line); err != nil {
			return fmt.Errorf("leaf %q: %w", line, err)
		}
	}
	return nil
}

// graftOnly says class id of co is one that holds a leaf only once one
// is grafted (qdisc.Class.GraftOnly).
func graftOnly(co classOps, id qdisc.ClassID) bool {
	cl := qdisc.FindClass(co.Classes(), id)
	return cl != nil && cl.GraftOnly
}

// graft puts the qdisc of line (`tc qdisc add` words after "qdisc
// add": "parent 1:10 handle 10: netem delay 1ms") on a leaf class of
// root (whose class ops are co) in place of its pfifo, or on a class
// that holds none until then (qdisc.Grafter is told).
func (c *Ctx) graft(root qdisc.Qdisc, co classOps, line string) error {
	cmd, err := tc.ParseQdisc(strings.Fields(line))
	if err != nil {
		return err
	}
	id := qdisc.ClassID(cmd.Parent)
	old := c.leaves[id]
	empty := old == nil && cmd.Parent.Minor() != 0 && graftOnly(co, id)
	switch {
	case cmd.Kind == "":
		return errors.New("no qdisc kind")
	case cmd.Parent.Minor() == 0 || (old == nil && !empty):
		return fmt.Errorf("parent %s is not a leaf class of the qdisc", cmd.Parent)
	}
	q, err := qdisc.New(cmd.Kind)
	if err != nil {
		return err
	}
	s := DefaultSetup()
	s.Handle, s.Parent = "0:", tc.Handle(id).String()
	if cmd.Handle != tc.Unspec {
		s.Handle = cmd.Handle.QdiscString()
	}
	x := &leafCtx{Ctx: c, id: id, q: q, kind: cmd.Kind}
	if err := x.init(s, cmd.Options); err != nil {
		return err
	}
	c.leaves[id] = x
	if g, ok := root.(qdisc.Grafter); ok && empty {
		g.Grafted(c, id, true)
	}
	if co := classful(q); co != nil {
		// A classful leaf (tbf under htb) gets its own classes' leaves,
		// kept in the same table: their classids carry its major.
		h, _ := tc.ParseQdiscHandle(s.Handle)
		return c.syncLeaves(co, h.Major())
	}
	return nil
}

// syncLeaves gives each leaf class its default leaf (a pfifo unless the
// class names another, qdisc.Class.DefaultLeaf), applies a class's
// FifoLimit to a fifo leaf, and drops the leaves of classes of major
// (the qdisc's) gone (none of which hold packets when the suite changes
// classes).
func (c *Ctx) syncLeaves(co classOps, major uint16) error {
	if c.leaves == nil {
		c.leaves = map[qdisc.ClassID]*leafCtx{}
	}
	want := map[qdisc.ClassID]bool{}
	for _, cl := range co.Classes() {
		if !cl.Leaf {
			continue
		}
		want[cl.ID] = true
		old := c.leaves[cl.ID]
		if old != nil && old.gen == cl.LeafGen {
			if err := old.fifoSetLimit(cl.FifoLimit); err != nil {
				return err
			}
			continue
		}
		if old == nil && cl.GraftOnly {
			continue // no leaf until one is grafted
		}
		// A new leaf in place of old (Class.LeafGen): old's packets
		// purged, and the qdisc told once the new leaf is in.
		purged := false
		if old != nil && leafState(old).Qlen > 0 {
			if r, ok := old.q.(qdisc.Resetter); ok {
				r.Reset(old)
				purged = true
			}
		}
		words := cl.DefaultLeafWords()
		leaf, err := qdisc.New(words[0])
		if err != nil {
			return err
		}
		x := &leafCtx{Ctx: c, id: cl.ID, q: leaf, kind: words[0], gen: cl.LeafGen}
		if err := x.init(DefaultSetup(), words[1:]); err != nil {
			return err
		}
		c.leaves[cl.ID] = x
		if n, ok := co.(interface {
			QlenNotify(qdisc.Ctx, qdisc.ClassID, qdisc.LeafState)
		}); ok && purged {
			n.QlenNotify(c, cl.ID, leafState(x))
		}
	}
	// Drop the leaves of this qdisc's classes that went (its major);
	// a nested classful leaf's are another major's.
	for id := range c.leaves {
		if !want[id] && id.Major() == major {
			delete(c.leaves, id)
		}
	}
	return nil
}

// leafIDs are the leaves' classes, in order.
func (c *Ctx) leafIDs() []qdisc.ClassID {
	ids := make([]qdisc.ClassID, 0, len(c.leaves))
	for id := range c.leaves {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// resetLeaves is the host resetting a classful qdisc's leaves after the
// qdisc's own reset.
func (c *Ctx) resetLeaves() {
	for _, id := range c.leafIDs() {
		x := c.leaves[id]
		x.d.Reset(x.q, x) // its own Defaults: a packet a peek set aside goes too
	}
}

// Reset is the host's reset of q: q's own (qdisc_reset), then its
// leaves'.
func Reset(c *Ctx, q qdisc.Qdisc) {
	var d qdisc.Defaults
	d.Reset(q, c)
	c.resetLeaves()
}

// LeafInfo is the leaf of class id as a test sees it: its kind, its
// sch->limit and its stats; ok is false for a class without a leaf.
func (c *Ctx) LeafInfo(id qdisc.ClassID) (kind string, limit int, st qdisc.Stats, ok bool) {
	x := c.leaves[id]
	if x == nil {
		return "", 0, qdisc.Stats{}, false
	}
	return x.kind, x.limit, x.q.Stats(), true
}

func (c *Ctx) leaf(id qdisc.ClassID) *leafCtx {
	l := c.leaves[id]
	if l == nil {
		panic(&Broken{fmt.Sprintf("asked for the leaf of class %s, which has none", id)})
	}
	return l
}

// leafEvent is the earliest watchdog or timer a leaf armed (nil: none).
func (c *Ctx) leafEvent() (*leafCtx, sim.Time, bool) {
	var first *leafCtx
	var at sim.Time
	var timer bool
	for _, id := range c.leafIDs() {
		x := c.leaves[id]
		if x.wdogArmed && (first == nil || x.wdog < at) {
			first, at, timer = x, x.wdog, false
		}
		if x.timerArmed && (first == nil || x.timerAt < at) {
			first, at, timer = x, x.timerAt, true
		}
	}
	return first, at, timer
}

// fire is a leaf's watchdog (qdisc_watchdog reschedules the root: the
// suite's next dequeue) or timer (its callback, then the root learns
// the leaf's new state, as qdisc_tree_reduce_backlog tells it).
func (x *leafCtx) fire(root qdisc.Qdisc, timer bool) error {
	if !timer {
		x.wdogArmed = false
		x.T = max(x.T, x.wdog)
		return nil
	}
	x.timerArmed = false
	x.T = max(x.T, x.timerAt)
	t, ok := x.q.(qdisc.TimerQdisc)
	if !ok {
		return fmt.Errorf("leaf %s armed its own timer but has no Timer method", x.id)
	}
	before := leafState(x)
	t.Timer(x)
	if st := leafState(x); st != before {
		if co := classful(root); co != nil {
			if n, ok := co.(interface {
				QlenNotify(qdisc.Ctx, qdisc.ClassID, qdisc.LeafState)
			}); ok {
				n.QlenNotify(x.Ctx, x.id, st)
			}
		}
	}
	return nil
}

func leafState(x *leafCtx) qdisc.LeafState {
	st := x.d.Stats(x.q)
	return qdisc.LeafState{Qlen: st.Qlen, Backlog: st.Backlog}
}

// Classify implements qdisc.ClassCtx and qdisc.FilterCtx with the
// context's Filters (the suite has none).
func (c *Ctx) Classify(p *skb.Packet, at qdisc.ClassID) qdisc.FilterResult {
	if c.Filters == nil {
		return qdisc.FilterResult{}
	}
	return c.Filters.Classify(c, p, at)
}

// Filtered implements qdisc.FilterCtx.
func (c *Ctx) Filtered(at qdisc.ClassID) bool { return c.Filters != nil && c.Filters.Filtered(at) }

// EnqueueLeaves implements qdisc.ClassCtx (a classful qdisc called
// directly). A leaf's clone the root hands back to that leaf comes
// marked (Packet.Dup), as the host marks it.
func (c *Ctx) EnqueueLeaves(batch []skb.Packet, to []qdisc.ClassID, res []qdisc.LeafResult) {
	for i := range batch {
		rc := []qdisc.Code{qdisc.XmitSuccess}
		x := c.leaf(to[i])
		p := batch[i]
		if by, ok := c.dupBy[p.Handle]; ok {
			delete(c.dupBy, p.Handle)
			if by == to[i] {
				p.Flags |= skb.PacketDup
			}
		}
		x.q.Enqueue(x, []skb.Packet{p}, rc)
		res[i] = qdisc.LeafResult{Code: rc[0], Leaf: leafState(x)}
	}
}

// DequeueLeaf implements qdisc.ClassCtx.
func (c *Ctx) DequeueLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	x := c.leaf(id)
	out := x.d.Dequeue(x.q, x, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
	if len(out) == 0 {
		return skb.Packet{}, false, leafState(x)
	}
	return out[0], true, leafState(x)
}

// PeekLeaf implements qdisc.ClassCtx.
func (c *Ctx) PeekLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	x := c.leaf(id)
	p, ok := x.d.Peek(x.q, x)
	return p, ok, leafState(x)
}

// LeafEnqueue implements the host side (wire.ClassHost) for a classful
// qdisc behind the plugin boundary: the packets are the suite's, by
// handle, with the fields the qdisc's filters may have changed.
func (c *Ctx) LeafEnqueue(batch []qdisc.LeafPacket, res []qdisc.LeafResult) {
	for i, lp := range batch {
		p, ok := c.pkts[lp.Handle]
		if !ok {
			panic(&Broken{fmt.Sprintf("enqueued packet %#x to a leaf, which the suite never handed in", uint64(lp.Handle))})
		}
		p.Priority, p.Mark = lp.Priority, lp.Mark
		c.EnqueueLeaves([]skb.Packet{p}, []qdisc.ClassID{lp.Class}, res[i:i+1])
	}
}

// LeafDequeue implements the host side of DequeueLeaf.
func (c *Ctx) LeafDequeue(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	return c.DequeueLeaf(id)
}

// LeafPeek implements the host side of PeekLeaf.
func (c *Ctx) LeafPeek(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	return c.PeekLeaf(id)
}

// Change is `tc qdisc change` of q under this context, as the host runs
// it: q's change, then its leaves made to agree with its classes (a
// class's FifoLimit applied, as tbf_change's fifo_set_limit).
func Change(c *Ctx, q qdisc.Qdisc, args []string) (qdisc.Info, error) {
	info, err := qdisc.Change(q, c, args)
	if err != nil {
		return info, err
	}
	if co := classful(q); co != nil {
		err = c.syncLeaves(co, c.major)
	}
	return info, err
}

// Attach inits q with this context and, for a classful q, applies
// o.Classes and gives its leaf classes their pfifos, as Run does before
// each check.
func Attach(c *Ctx, q qdisc.Qdisc, o Options) (qdisc.Info, error) {
	if o.Setup.MTU == 0 {
		o.Setup = DefaultSetup()
	}
	info, err := c.Init(q, o.Setup, o.Args)
	if err != nil {
		return info, err
	}
	return info, c.attach(q, o)
}
