package netdev

import (
	"fmt"
	"slices"

	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// tcGraftMQ is `tc qdisc add|replace dev D parent MAJ:N [handle H:] KIND`
// under an mq root: qdisc_leaf finds queue N-1's qdisc (mq_find,
// mq_leaf), and mq_graft puts the new qdisc there, TCQ_F_ONETXQUEUE on
// that queue. A default child (handle 0:) counts as none, as
// tc_modify_qdisc ignores it.
func (n *Net) tcGraftMQ(d *Device, verb tc.Verb, cmd tc.Qdisc) error {
	i, err := d.mqClass(cmd.Parent)
	if err != nil {
		return err
	}
	old := d.Children[i]
	h, err := n.graftHandle(d, verb, cmd, old, old.Handle != tc.Unspec, "class "+cmd.Parent.String())
	if err != nil {
		return err
	}
	if err := checkStab(cmd.Stab); err != nil {
		return err
	}
	q, err := n.newQdisc(d, append([]string{cmd.Kind}, cmd.Options...),
		qdiscPlace{handle: h, parent: cmd.Parent, slot: fmt.Sprintf("8001:%x", i+1), one: d.Queues[i]})
	if err != nil {
		return err
	}
	q.stab = cmd.Stab
	n.swapMQChild(d, i, q)
	return nil
}

// mqClass is mq_find: queue N-1 for class MAJ:N of d's mq root. An
// mqprio traffic class (MAJ:ffe0+k, mqprio_find finds it) holds no
// qdisc: mqprio_graft finds no queue for it (EINVAL).
func (d *Device) mqClass(id tc.Handle) (int, error) {
	if k := int(id.Minor()) - TCHMinPriority; d.RootKind == "mqprio" && k >= 0 && k < d.tc.num {
		return 0, kernelf("RTNETLINK answers: Invalid argument (class %s is a traffic class; qdiscs go under its queues' classes)", id)
	}
	i := int(id.Minor()) - 1
	if i < 0 || i >= len(d.Children) {
		return 0, kernelf("Error: Specified class not found (%s %s has classes %s to %s).", d.RootKind, d.RootHandle.QdiscString(),
			tc.MakeHandle(d.RootHandle.Major(), 1), tc.MakeHandle(d.RootHandle.Major(), uint16(len(d.Children))))
	}
	return i, nil
}

// tcDeleteMQ is RTM_DELQDISC of an mq child: mq_graft of nothing, which
// dev_graft_qdisc turns into noop_qdisc on that queue (dev_activate
// attaches defaults only when the root is noop_qdisc): from then on
// every packet for the queue is dropped, as in the kernel, until a
// qdisc is grafted there again.
func (n *Net) tcDeleteMQ(d *Device, cmd tc.Qdisc) error {
	i, err := d.mqClass(cmd.Parent)
	if err != nil {
		return err
	}
	old := d.Children[i]
	switch {
	case old.noop:
		return kernelf("Error: Cannot find specified qdisc on specified device (class %s holds none).", cmd.Parent)
	case cmd.Handle != tc.Unspec && cmd.Handle != old.Handle:
		return kernelf("Error: Invalid handle (class %s holds %s).", cmd.Parent, old.Name())
	case cmd.Kind != "" && cmd.Kind != old.Kind:
		return kernelf("Error: Invalid qdisc name (class %s holds %s).", cmd.Parent, old.Name())
	case old.Handle == tc.Unspec:
		return kernelf("Error: Cannot delete qdisc with handle of zero (class %s's default %s).", cmd.Parent, old.Kind)
	}
	noop := n.newNoop(d)
	noop.Parent, noop.invisible = cmd.Parent, true // TCQ_F_BUILTIN: in no dump
	n.swapMQChild(d, i, noop)
	return nil
}

// swapMQChild puts q in place of d's mq child i (dev_graft_qdisc). On a
// device that is down it is instant. On one that is up mq_graft runs
// dev_deactivate and dev_activate around it, as a root graft does:
// every queue meets noop_qdisc meanwhile, and every queue's qdisc is
// reset, the other children's packets dropped too.
func (n *Net) swapMQChild(d *Device, i int, q *Qdisc) {
	old := d.Children[i]
	d.Children[i] = q
	// The old child's tree leaves tc's view now, its filters with it.
	tree := subtree(old)
	d.Tree = slices.DeleteFunc(d.Tree, func(x *Qdisc) bool { return slices.Contains(tree, x) })
	for _, x := range tree {
		if x.Handle != tc.Unspec {
			d.filters.DropQdisc(x.Handle.Major())
		}
	}
	if !n.up {
		var freed skb.List
		n.destroyQdisc(old, &freed)
		d.Queues[i].qdisc = q
		n.rtnlKfreeSkbs(&freed)
		return
	}
	n.deactivate(d, devQdiscs{qdiscs: tree, txq: d.queueQdiscs()}, slices.Clone(d.Children), false)
}

// queueQdiscs are d's queues' qdiscs now (dev_queue->qdisc).
func (d *Device) queueQdiscs() []*Qdisc {
	out := make([]*Qdisc, len(d.Queues))
	for i, txq := range d.Queues {
		out[i] = txq.qdisc
	}
	return out
}

// subtree is q and every qdisc under its classes.
func subtree(q *Qdisc) []*Qdisc {
	out := []*Qdisc{q}
	for _, id := range sortedClassIDs(q.leaves) {
		out = append(out, subtree(q.leaves[id])...)
	}
	return out
}
