package qdisctest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// A classful qdisc (qdisc.Classful) runs the suite with leaves the
// context holds, as a host does: a pfifo per leaf class (its default),
// called directly with this context. The suite has no filters, so
// packets classify by skb->priority and the qdisc's defaults (htb's
// default class, prio's priomap); Options.Classes adds classes first.

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
		if len(o.Classes) > 0 {
			return fmt.Errorf("classes given, but the qdisc has none (it implements no qdisc.Classful)")
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
	return c.syncLeaves(co)
}

// syncLeaves gives each leaf class a pfifo and drops leaves of classes
// gone (none of which hold packets when the suite changes classes).
func (c *Ctx) syncLeaves(co classOps) error {
	if c.leaves == nil {
		c.leaves = map[qdisc.ClassID]qdisc.Qdisc{}
	}
	want := map[qdisc.ClassID]bool{}
	for _, cl := range co.Classes() {
		if !cl.Leaf {
			continue
		}
		want[cl.ID] = true
		if c.leaves[cl.ID] != nil {
			continue
		}
		leaf, err := qdisc.New("pfifo")
		if err != nil {
			return err
		}
		if _, err := leaf.Init(c, DefaultSetup(), nil); err != nil {
			return err
		}
		c.leaves[cl.ID] = leaf
	}
	for id := range c.leaves {
		if !want[id] {
			delete(c.leaves, id)
		}
	}
	return nil
}

// resetLeaves is the host resetting a classful qdisc's leaves after the
// qdisc's own reset.
func (c *Ctx) resetLeaves() {
	ids := make([]qdisc.ClassID, 0, len(c.leaves))
	for id := range c.leaves {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if r, ok := c.leaves[id].(qdisc.Resetter); ok {
			r.Reset(c)
		}
	}
}

func (c *Ctx) leaf(id qdisc.ClassID) qdisc.Qdisc {
	l := c.leaves[id]
	if l == nil {
		panic(&Broken{fmt.Sprintf("asked for the leaf of class %s, which has none", id)})
	}
	return l
}

func leafState(l qdisc.Qdisc) qdisc.LeafState {
	st := l.Stats()
	return qdisc.LeafState{Qlen: st.Qlen, Backlog: st.Backlog}
}

// Classify implements qdisc.ClassCtx: the suite has no filters.
func (c *Ctx) Classify(*skb.Packet, qdisc.ClassID) qdisc.FilterResult { return qdisc.FilterResult{} }

// EnqueueLeaves implements qdisc.ClassCtx (a classful qdisc called
// directly).
func (c *Ctx) EnqueueLeaves(batch []skb.Packet, to []qdisc.ClassID, res []qdisc.LeafResult) {
	for i := range batch {
		rc := []qdisc.Code{qdisc.XmitSuccess}
		l := c.leaf(to[i])
		l.Enqueue(c, batch[i:i+1], rc)
		res[i] = qdisc.LeafResult{Code: rc[0], Leaf: leafState(l)}
	}
}

// DequeueLeaf implements qdisc.ClassCtx.
func (c *Ctx) DequeueLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	l := c.leaf(id)
	out := l.Dequeue(c, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
	if len(out) == 0 {
		return skb.Packet{}, false, leafState(l)
	}
	return out[0], true, leafState(l)
}

// PeekLeaf implements qdisc.ClassCtx.
func (c *Ctx) PeekLeaf(id qdisc.ClassID) (skb.Packet, bool) {
	var d qdisc.Defaults
	return d.Peek(c.leaf(id), c)
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
func (c *Ctx) LeafPeek(id qdisc.ClassID) (skb.Packet, bool) { return c.PeekLeaf(id) }

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
