package netdev

import (
	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/skb"
)

// act_mirred's host side (net/sched/act_mirred.c): clsact's and the
// ingress qdisc's blocks run mirred; the packet goes out of the target's
// __dev_queue_xmit on the same CPU, nested.

// mirredNestLimit is MIRRED_NEST_LIMIT: how deep mirred's egress
// redirects may nest on one CPU (softnet_data.xmit.sched_mirred_nest).
const mirredNestLimit = 4

// mirredStack is a CPU's sched_mirred_dev and sched_mirred_nest.
type mirredStack struct {
	dev  [mirredNestLimit]*Device
	nest int
}

// MirredNestFull implements cls.Redirector: this CPU's
// sched_mirred_nest is at MIRRED_NEST_LIMIT.
func (x *blockCtx) MirredNestFull() bool { return x.d.net.sd[x.c.ID].mirred.nest >= mirredNestLimit }

// Mirred implements cls.Redirector: tcf_mirred_act on the block's CPU
// past its nest check. The loop check (a target already on this CPU's
// stack of egress redirects), then tcf_mirred_to_dev: at ingress a
// redirect sends the skb itself (TC_ACT_CONSUMED); anywhere else the
// action sends a clone, and a redirect's original is consumed by the
// hook (TC_ACT_STOLEN): the model sends the skb itself and prices the
// clone and the consume, whose destructor gives the socket its charge
// back (the clone has none: skb_orphan's effect). A mirror's clone is a
// new skb, offered.
func (x *blockCtx) Mirred(dev string, target *any, e cls.Eaction, p *skb.Packet) cls.MirredResult {
	n, c := x.d.net, x.c
	ms := &n.sd[c.ID].mirred
	if *target == nil {
		*target = n.DeviceByName(dev)
	}
	to := (*target).(*Device)
	for _, d := range ms.dev[:ms.nest] {
		if d == to {
			return cls.MirredFailed // "tc mirred: loop on device"
		}
	}
	ms.dev[ms.nest] = to
	ms.nest++
	c.Spend(n.E.Costs.Mirred)
	s := x.s
	s.Priority, s.Mark = p.Priority, p.Mark
	atIngress := x.at == ingressAt
	send := s
	if !e.Redirect() {
		send = n.skbCloneFor(c, s)
		send.XmitCPU, send.RxQueue = s.XmitCPU, s.RxQueue // __copy_skb_header: sender_cpu, queue_mapping
	} else if !atIngress {
		c.Spend(n.E.Costs.KfreeSkbmem) // skb_clone's sk_buff, and the original's kfree_skbmem
		if o := n.Pool.Orphan(s); o != nil {
			c.Spend(n.destructorCost()) // the original's consume_skb: sock_wfree
			o.Orphan(c, s)
		}
	}
	r := skb.Redirect(0).WithIif(x.d.ifindex)
	if e.Redirect() {
		r |= skb.Redirected
		if atIngress {
			r |= skb.FromIngress
		}
	}
	send.Redir = r
	if to.Ifb == nil {
		n.localSendOut(send) // a received packet for this host's sockets, sent out instead
	}
	n.devQueueXmit(c, to, send)
	ms.nest--
	return cls.MirredSent
}

var _ cls.Redirector = (*blockCtx)(nil)
