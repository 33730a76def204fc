// Package drr is the kernel's Deficit Round Robin qdisc
// (net/sched/sch_drr.c): flat classes, each with a quantum (default the
// device's MTU, psched_mtu) and a leaf qdisc the host holds; packets go
// to a class by skb->priority (major = the qdisc's handle) or the
// qdisc's filters, or are dropped; active classes are served in turn,
// each sending while its deficit covers the head packet.
package drr

import (
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("drr", "Deficit Round Robin over classes, each with a quantum and its own leaf qdisc (sch_drr.c)",
		func() qdisc.Qdisc { return &DRR{} })
}

// class is struct drr_class.
type class struct {
	id               qdisc.ClassID
	quantum, deficit uint32
	active           bool
}

// DRR is struct drr_sched.
type DRR struct {
	handle uint16
	mtu    uint32
	clhash qdisc.ClassHash[*class]
	byID   map[qdisc.ClassID]*class
	active []*class // the active list, head first
	leaves qdisc.LeafTable
	drops  uint64

	batch qdisc.LeafBatch
	cls   []*class // each batched packet's class
}

// Init implements qdisc.Qdisc (drr_init_qdisc): drr takes no options.
func (q *DRR) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	if len(args) > 0 {
		return qdisc.Info{}, qdisc.Parsef("drr", "What is %q?", args[0])
	}
	q.handle, q.mtu = uint16(s.Major()), uint32(s.MTU)
	q.byID = map[qdisc.ClassID]*class{}
	return qdisc.Info{}, nil
}

// drrClassify is drr_classify: nil drops the packet.
func (q *DRR) drrClassify(x qdisc.ClassCtx, p *skb.Packet) *class {
	if uint16(p.Priority>>16) == q.handle {
		if cl := q.byID[qdisc.ClassID(p.Priority)]; cl != nil {
			return cl
		}
	}
	r := x.Classify(p, qdisc.MakeClassID(q.handle, 0))
	if r.Verdict != qdisc.VerdictClass {
		return nil
	}
	return q.byID[r.Class]
}

// Enqueue implements qdisc.Qdisc (drr_enqueue for each packet).
func (q *DRR) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	q.batch.Reset()
	q.cls = q.cls[:0]
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		cl := q.drrClassify(x, &batch[i])
		if cl == nil {
			// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: counted as a drop;
			// the sender sees NET_XMIT_SUCCESS (dev_qdisc_enqueue's mask).
			q.drops++
			ctx.Drop(batch[i].Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
			continue
		}
		q.batch.Add(&batch[i], cl.id, i)
		q.cls = append(q.cls, cl)
	}
	q.drops += q.batch.Send(x, &q.leaves, rc)
	for k, cl := range q.cls {
		if q.batch.Result(k).Code != qdisc.XmitSuccess {
			continue
		}
		if !cl.active {
			cl.active = true
			q.active = append(q.active, cl)
			cl.deficit = cl.quantum
		}
	}
	// A leaf that dropped the packet it said NET_XMIT_SUCCESS for (its
	// own __NET_XMIT_BYPASS: netem's loss, a classful leaf's classify
	// drop) leaves drr_enqueue's class off the active list, as
	// err != NET_XMIT_SUCCESS there; the leaves' last states are exact.
	for _, cl := range q.cls {
		if cl.active && q.leaves.Get(cl.id).Qlen == 0 {
			q.deactivate(cl)
		}
	}
}

func (q *DRR) deactivate(cl *class) {
	if !cl.active {
		return
	}
	cl.active = false
	for i, c := range q.active {
		if c == cl {
			q.active = append(q.active[:i], q.active[i+1:]...)
			return
		}
	}
}

// drrDequeue is drr_dequeue: the head class sends while its deficit
// covers its head packet, else goes to the tail with a quantum more.
func (q *DRR) drrDequeue(ctx qdisc.Ctx, x qdisc.ClassCtx) (skb.Packet, bool) {
	for len(q.active) > 0 {
		ctx.Work(qdisc.WorkFlowScan, 1)
		cl := q.active[0]
		// A peek that dequeues (qdisc_peek_dequeued) may drop: the leaf's
		// qdisc_tree_reduce_backlog counts them here and, when it empties
		// the leaf, drr_qlen_notify takes the class off the list.
		head, ok, st, dropped := q.leaves.Peek(x, cl.id)
		q.drops += uint64(dropped)
		if st.Qlen == 0 {
			q.deactivate(cl)
		}
		if !ok {
			return skb.Packet{}, false // qdisc_warn_nonwc
		}
		if head.Len <= cl.deficit {
			cl.deficit -= head.Len
			p, ok, st, dropped := q.leaves.Dequeue(x, cl.id)
			q.drops += uint64(dropped)
			if st.Qlen == 0 {
				// list_del, or drr_qlen_notify from the leaf's
				// qdisc_tree_reduce_backlog when it dropped all it held.
				q.deactivate(cl)
			}
			if !ok {
				return skb.Packet{}, false
			}
			ctx.Work(qdisc.WorkDequeue, 1)
			return p, true
		}
		cl.deficit += cl.quantum
		q.active = append(q.active[1:], cl) // list_move_tail
	}
	return skb.Packet{}, false
}

// Dequeue implements qdisc.Qdisc.
func (q *DRR) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.drrDequeue(ctx, x) })
}

// Reset implements qdisc.Resetter (drr_reset_qdisc; the host resets the
// leaves).
func (q *DRR) Reset(qdisc.Ctx) {
	for _, cl := range q.active {
		cl.active = false
	}
	q.active = q.active[:0]
	q.leaves.Reset()
}

// Stats implements qdisc.Qdisc.
func (q *DRR) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops}
}

// Dump implements qdisc.Qdisc: drr has no qdisc options.
func (q *DRR) Dump() string { return "" }

// ChangeClass implements qdisc.Classful (drr_change_class): "quantum
// SIZE" (tc's get_size), default the device's MTU.
func (q *DRR) ChangeClass(_ qdisc.Ctx, req qdisc.ClassReq) error {
	var quantum uint32
	set := false
	a := qdisc.NewArgs("drr", req.Args)
	for k := a.Next(); k != ""; k = a.Next() {
		if k != "quantum" {
			return qdisc.Parsef("drr", "What is %q?", k)
		}
		v, err := a.Value(k)
		if err != nil {
			return err
		}
		n, perr := units.GetSize(v)
		if perr != nil {
			return qdisc.Parsef("drr", "Illegal \"quantum\" %q", v)
		}
		quantum, set = n, true
	}
	if set && quantum == 0 {
		return qdisc.Refusef("drr", "Error: Specified DRR quantum cannot be zero.")
	}
	if cl := q.byID[req.ID]; cl != nil {
		if set {
			cl.quantum = quantum
		}
		return nil
	}
	if req.ID.Major() != q.handle || req.ID.Minor() == 0 {
		return qdisc.Refusef("drr", "RTNETLINK answers: Invalid argument (classid %s is not a class of %x:)", req.ID, q.handle)
	}
	if !set {
		quantum = q.mtu // psched_mtu
	}
	cl := &class{id: req.ID, quantum: quantum}
	q.byID[cl.id] = cl
	q.clhash.Insert(cl.id, cl)
	q.clhash.Grow()
	return nil
}

// DeleteClass implements qdisc.Classful (drr_delete_class).
func (q *DRR) DeleteClass(_ qdisc.Ctx, id qdisc.ClassID) error {
	cl := q.byID[id]
	if cl == nil {
		return qdisc.Refusef("drr", "RTNETLINK answers: No such file or directory (class %s)", id)
	}
	q.drops += uint64(q.leaves.Remove(id).Qlen) // qdisc_purge_queue
	q.deactivate(cl)
	q.clhash.Remove(id)
	delete(q.byID, id)
	return nil
}

// Classes implements qdisc.Classful (drr_walk, drr_dump_class,
// drr_dump_class_stats): parent root, the deficit while the class holds
// packets, and the leaf's counters: drr_dump_class_stats copies the
// leaf's qstats (drops and overlimits, its dequeue drops included), not
// the class's, which drr_enqueue counts but nothing prints.
func (q *DRR) Classes() []qdisc.Class {
	var out []qdisc.Class
	for _, cl := range q.clhash.Walk() {
		deficit := uint64(0)
		if q.leaves.Get(cl.id).Qlen > 0 {
			deficit = uint64(cl.deficit)
		}
		out = append(out, qdisc.Class{ID: cl.id, Parent: qdisc.RootClass, Leaf: true, LeafStats: true,
			Options: fmt.Sprintf("quantum %s ", units.SprintSize(uint64(cl.quantum))),
			XStats:  []qdisc.XStat{qdisc.XSize("deficit", deficit)}})
	}
	return out
}

// QlenNotify implements qdisc.Classful (drr_qlen_notify).
func (q *DRR) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if cl := q.byID[id]; cl != nil && st.Qlen == 0 {
		q.deactivate(cl)
	}
}
