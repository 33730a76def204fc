package netdev

import (
	"errors"
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// ChangeQdisc is `tc qdisc change` on q with option words args
// (qdisc_change -> ops->change): between engine steps, as the tc process
// runs under rtnl and the tree lock. Packets the change drops are
// unlinked at once and freed the way rtnl_kfree_skbs frees them, after
// the change: here on CPU 0, from an interrupt at the current time (tc's
// own process is not a simulated CPU, and neither is the time it
// spends). Until then they are in flight. A refused change changes
// nothing. A broken invariant (a drop of a packet the qdisc does not
// hold, an undeclared drop reason) is returned as an error, since no CPU
// is running to stop.
func (n *Net) ChangeQdisc(q *Qdisc, args []string) (err error) {
	x := &ctlCtx{qctx: q.bind(nil, nil)}
	defer func() {
		if r := recover(); r != nil {
			var me *sim.ModelError
			if e, ok := r.(error); ok && errors.As(e, &me) {
				err = me
				return
			}
			panic(r)
		}
	}()
	before := q.leafState()
	info, err := qdisc.Change(q.Ops, x, args)
	if err == nil && q.Classful() {
		// prio's bands may have grown or shrunk: leaves follow the classes.
		if serr := n.syncLeaves(q, &x.freed); serr != nil {
			return serr
		}
	}
	if err == nil && q.parentQ != nil && q.leafState() != before {
		n.notifyUp(nil, q) // qdisc_tree_reduce_backlog: the ancestors learn
	}
	if err != nil {
		if x.freed.Len > 0 {
			return fmt.Errorf("qdisc %s dropped %d packets in a change it refused", q.Name(), x.freed.Len)
		}
		var pc *qdisc.PartialChange
		if errors.As(err, &pc) {
			// Refused after part of it was applied: sch->limit (and
			// the flags) are as the applied part left them.
			q.takeInfo(pc.Info)
			return pc.Err
		}
		return err
	}
	q.takeInfo(info)
	if info.TCMap != nil && q.setsTC {
		if err := q.dev.applyTCMap(q.Kind, info.TCMap); err != nil {
			return err
		}
	}
	n.rtnlKfreeSkbs(&x.freed)
	return nil
}

// takeInfo takes what a change's Info says of sch: its flags (the
// device's TCQ_F_ONETXQUEUE kept, TCQ_F_CAN_BYPASS kept off once a
// filter was added), its limit and where GSO skbs are segmented.
func (q *Qdisc) takeInfo(info qdisc.Info) {
	q.Flags = info.Flags | q.Flags&qdisc.OneTxQueue
	if q.filtered {
		q.Flags &^= qdisc.CanBypass // tc_new_tfilter's, kept
	}
	q.Limit, q.segmentOver = info.Limit, info.SegmentOver
}

// rtnlKfreeSkbs frees what a tc command dropped after it, as
// rtnl_kfree_skbs does: on CPU 0, from an interrupt at the current time;
// in flight until then.
func (n *Net) rtnlKfreeSkbs(freed *skb.List) {
	if freed.Len == 0 {
		return
	}
	for s := freed.Pop(); s != nil; s = freed.Pop() {
		n.rtnlFree.Push(s)
	}
	n.E.RaiseIRQ(n.E.CPUs[0], n.E.Now(), func(c *sim.CPU) { n.kfreeSkbEach(c, &n.rtnlFree) }) // __rtnl_unlock: kfree_skb of each
}

// ctlCtx is the qdisc context of a change (a wire.QdiscHost): the
// host's context without a CPU (engine time, nothing charged, timers
// armed from CPU 0), with drops collected for rtnl_kfree_skbs.
type ctlCtx struct {
	*qctx
	freed skb.List
}

func (x *ctlCtx) Drop(h skb.Handle, reason skb.DropReason) {
	x.checkReason(reason)
	s := x.take(h, "drop")
	x.net.Pool.SetReason(s, reason)
	x.freed.Push(s)
}

func (x *ctlCtx) DequeueDrop(h skb.Handle, reason skb.DropReason) { x.Drop(h, reason) }
