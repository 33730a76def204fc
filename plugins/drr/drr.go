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
	"github.com/txlab/txlab/plugins/internal/deficit"
)

func init() {
	qdisc.Register("drr", "Deficit Round Robin over classes, each with a quantum and its own leaf qdisc (sch_drr.c)",
		func() qdisc.Qdisc { return &DRR{} })
}

// class is struct drr_class: its quantum and deficit are the round's.
type class = deficit.Class

// DRR is struct drr_sched.
type DRR struct {
	handle uint16
	mtu    uint32
	clhash qdisc.ClassHash[*class]
	byID   map[qdisc.ClassID]*class
	round  deficit.Round // the active list
	leaves qdisc.LeafTable
	drops  uint64
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

// Enqueue implements qdisc.Qdisc (drr_enqueue for each packet): every
// class shares.
func (q *DRR) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.drops += q.round.Enqueue(ctx, batch, rc, &q.leaves, q.drrClassify, func(*class) bool { return true })
}

// Dequeue implements qdisc.Qdisc.
func (q *DRR) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	// drr_dequeue is the round alone.
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		p, ok, drops := q.round.Dequeue(ctx, x, &q.leaves)
		q.drops += drops
		return p, ok
	})
}

// Reset implements qdisc.Resetter (drr_reset_qdisc; the host resets the
// leaves).
func (q *DRR) Reset(qdisc.Ctx) {
	q.round.Reset()
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
			cl.Quantum = quantum
		}
		return nil
	}
	if req.ID.Major() != q.handle || req.ID.Minor() == 0 {
		return qdisc.Refusef("drr", "RTNETLINK answers: Invalid argument (classid %s is not a class of %x:)", req.ID, q.handle)
	}
	if !set {
		quantum = q.mtu // psched_mtu
	}
	cl := &class{ID: req.ID, Quantum: quantum}
	q.byID[cl.ID] = cl
	q.clhash.Insert(cl.ID, cl)
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
	q.round.Deactivate(cl)
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
		if q.leaves.Get(cl.ID).Qlen > 0 {
			deficit = uint64(cl.Deficit)
		}
		out = append(out, qdisc.Class{ID: cl.ID, Parent: qdisc.RootClass, Leaf: true, LeafStats: true,
			Options: fmt.Sprintf("quantum %s ", units.SprintSize(uint64(cl.Quantum))),
			XStats:  []qdisc.XStat{qdisc.XSize("deficit", deficit)}})
	}
	return out
}

// QlenNotify implements qdisc.Classful (drr_qlen_notify).
func (q *DRR) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if cl := q.byID[id]; cl != nil && st.Qlen == 0 {
		q.round.Deactivate(cl)
	}
}
