// Package deficit is the deficit round robin over classes whose leaf
// qdiscs the host holds, as sch_drr.c and sch_ets.c's bandwidth-sharing
// bands both run it: a list of active classes, head first; the head
// class sends while its deficit covers its head packet, else goes to the
// tail with a quantum more.
package deficit

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

// Class is the part of struct drr_class and struct ets_class the round
// reads: the class, its quantum and its deficit.
type Class struct {
	ID               qdisc.ClassID
	Quantum, Deficit uint32
	active           bool
}

// Active says the class is on the list (cl_is_active).
func (c *Class) Active() bool { return c.active }

// Round is the active list (struct drr_sched's and struct ets_sched's
// active).
type Round struct {
	active []*Class

	batch qdisc.LeafBatch
	cls   []*Class // each batched packet's class
}

// Len is how many classes are active.
func (r *Round) Len() int { return len(r.active) }

// Activate puts cl at the tail with a full quantum (list_add_tail,
// deficit = quantum), unless it is there already.
func (r *Round) Activate(cl *Class) {
	if cl.active {
		return
	}
	cl.active = true
	cl.Deficit = cl.Quantum
	r.active = append(r.active, cl)
}

// Deactivate takes cl off the list (list_del_init), if it is on it.
func (r *Round) Deactivate(cl *Class) {
	if !cl.active {
		return
	}
	cl.active = false
	for i, c := range r.active {
		if c == cl {
			r.active = append(r.active[:i], r.active[i+1:]...)
			return
		}
	}
}

// Reset empties the list (the qdisc's reset; the host resets the leaves).
func (r *Round) Reset() {
	for _, cl := range r.active {
		cl.active = false
	}
	r.active = r.active[:0]
}

// settle takes off the list every class of the last batch whose leaf
// holds nothing now. A leaf that dropped the packet it answered NET_XMIT_SUCCESS for
// (its own __NET_XMIT_BYPASS: netem's loss, a classful leaf's classify
// drop) leaves the class off the active list in the kernel, which
// activates only on NET_XMIT_SUCCESS itself; the host's answers to a
// batch are the leaves' last states, so the qdisc settles after it.
func (r *Round) settle(leaves *qdisc.LeafTable) {
	for _, cl := range r.cls {
		if cl.active && leaves.Get(cl.ID).Qlen == 0 {
			r.Deactivate(cl)
		}
	}
}

// Enqueue is drr_enqueue's and ets_qdisc_enqueue's loop over a batch:
// classify each packet (nil drops it: NET_XMIT_SUCCESS |
// __NET_XMIT_BYPASS, counted, which the sender sees as NET_XMIT_SUCCESS
// through dev_qdisc_enqueue's mask), one host call puts the rest in
// their classes' leaves, and a class that shares (ets's strict bands do
// not) and took its packet joins the round with a full quantum. It
// returns the drops, the classifier's and the leaves'.
func (r *Round) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code, leaves *qdisc.LeafTable,
	classify func(qdisc.ClassCtx, *skb.Packet) *Class, shares func(*Class) bool) (drops uint64) {
	x := ctx.(qdisc.ClassCtx)
	r.batch.Reset()
	r.cls = r.cls[:0]
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		cl := classify(x, &batch[i])
		if cl == nil {
			drops++
			ctx.Drop(batch[i].Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
			continue
		}
		r.batch.Add(&batch[i], cl.ID, i)
		r.cls = append(r.cls, cl)
	}
	drops += r.batch.Send(x, leaves, rc)
	for k, cl := range r.cls {
		if r.batch.Result(k).Code == qdisc.XmitSuccess && shares(cl) {
			r.Activate(cl)
		}
	}
	r.settle(leaves)
	return drops
}

// Dequeue is drr_dequeue's loop and ets_qdisc_dequeue's after its strict
// bands: the head class sends while its deficit covers its head packet,
// else goes to the tail with a quantum more. drops counts the packets
// the leaves dropped on the way (their peeks and dequeues may, as a
// CoDel leaf does).
func (r *Round) Dequeue(ctx qdisc.Ctx, x qdisc.ClassCtx, leaves *qdisc.LeafTable) (p skb.Packet, ok bool, drops uint64) {
	for len(r.active) > 0 {
		ctx.Work(qdisc.WorkFlowScan, 1)
		cl := r.active[0]
		// A peek that dequeues (qdisc_peek_dequeued) may drop: the leaf's
		// qdisc_tree_reduce_backlog counts them here and, when it empties
		// the leaf, the qdisc's qlen_notify takes the class off the list.
		head, ok, st, dropped := leaves.Peek(x, cl.ID)
		drops += uint64(dropped)
		if st.Qlen == 0 {
			r.Deactivate(cl)
		}
		if !ok {
			return skb.Packet{}, false, drops // qdisc_warn_nonwc
		}
		if head.Len <= cl.Deficit {
			cl.Deficit -= head.Len
			p, ok, st, dropped := leaves.Dequeue(x, cl.ID)
			drops += uint64(dropped)
			if st.Qlen == 0 {
				// list_del, or qlen_notify from the leaf's
				// qdisc_tree_reduce_backlog when it dropped all it held.
				r.Deactivate(cl)
			}
			if !ok {
				return skb.Packet{}, false, drops
			}
			ctx.Work(qdisc.WorkDequeue, 1)
			return p, true, drops
		}
		cl.Deficit += cl.Quantum
		r.active = append(r.active[1:], cl) // list_move_tail
	}
	return skb.Packet{}, false, drops
}
