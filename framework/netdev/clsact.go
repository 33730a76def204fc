package netdev

import (
	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// clsact is a device's clsact qdisc (net/sched/sch_ingress.c), or its
// ingress qdisc: clsact's egress block is a filter block that
// sch_handle_egress runs in __dev_queue_xmit before the TX queue is
// picked, its ingress block (the ingress qdisc's only one) what
// sch_handle_ingress runs in __netif_receive_skb_core on a received
// frame, before the stack takes it. Its counters are the mini_Qdiscs'
// (every packet classified, either way, and the drops).
type clsact struct {
	kind                string // "clsact" or "ingress"
	sentPkts, sentBytes uint64
	drops               uint64
	rng                 *sim.Rand    // the actions' get_random_u32 (gact's random verdicts)
	prices              qdisc.Prices // what a filter tried costs (the cost table's)
	// policeSite is perf lock's caller for act_police's tcfp_lock:
	// every transmitting CPU takes the one lock of a police action.
	policeSite *sim.LockStat
	// ctxs are each CPU's classification context, made once: a CPU
	// classifies one packet at a time, and another CPU may run while
	// this one spins on a police's lock.
	ctxs []blockCtx
}

// ethHlen is ETH_HLEN: the MAC header a received frame's skb->len
// leaves out at the ingress hook.
const ethHlen = 14

// Where the device's filter set keeps the egress and ingress blocks.
const (
	egressAt  = qdisc.ClassID(tc.Egress)
	ingressAt = qdisc.ClassID(tc.IngressBlock)
)

// tcClsact is tc_modify_qdisc and tc_get_qdisc for the clsact and
// ingress qdiscs (parent TC_H_CLSACT = TC_H_INGRESS, handle ffff:).
func (n *Net) tcClsact(d *Device, verb tc.Verb, cmd tc.Qdisc) error {
	switch {
	case cmd.Kind != "" && cmd.Kind != "clsact" && cmd.Kind != "ingress":
		return kernelf("Error: Invalid qdisc name (the parent ffff:fff1 is clsact's or ingress's).")
	case verb == tc.VerbDelete:
		if d.clsact == nil {
			return kernelf("Error: Cannot find specified qdisc on specified device.")
		}
		if cmd.Kind != "" && cmd.Kind != d.clsact.kind {
			return kernelf("Error: Invalid qdisc name.")
		}
		// qdisc_destroy: the blocks and their filters go with it
		d.clsact = nil
		d.filters.DropQdisc(tc.Egress.Major())
		return nil
	case d.clsact != nil && verb == tc.VerbAdd:
		return kernelf("Error: Exclusivity flag on, cannot modify.")
	case d.clsact != nil:
		return kernelf("Error: Change operation not supported by specified qdisc.") // clsact has no change op
	case verb == tc.VerbChange:
		return kernelf("Error: Specified qdisc not found.")
	}
	if cmd.Kind == "" {
		return kernelf("Error: Specified qdisc kind is unknown.")
	}
	d.clsact = &clsact{kind: cmd.Kind, rng: n.E.Rand("netdev/clsact/" + d.Name), prices: qdisc.WorkPrices(n.E.Costs),
		policeSite: n.E.LockSite("tcf_police_act (tcfp_lock)"), ctxs: make([]blockCtx, len(n.E.CPUs))}
	return nil
}

// blockCtx is the context of a clsact block's classification on the
// transmitting (or, at ingress, receiving) CPU: the clock, the price of
// each filter tried, the actions' random draws, police's lock, and
// skbedit's queue_mapping (egress only: the ingress one is refused).
// The embedded qdisc.Ctx is nil: classification asks nothing else of
// it.
type blockCtx struct {
	qdisc.Ctx
	c    *sim.CPU
	d    *Device
	s    *skb.SKB      // the skb classified (mirred sends it)
	p    skb.Packet    // what the actions edit (here, not on the stack: mirred's interface call would move it to the heap)
	at   qdisc.ClassID // the block: egressAt or ingressAt
	skip bool
}

func (x *blockCtx) Now() sim.Time { return sim.Ktime(x.c.Now()) }

func (x *blockCtx) Work(k qdisc.Work, n int) { x.c.Spend(x.d.clsact.prices[k] * int64(n)) }

func (x *blockCtx) Rand() uint32 { return x.d.clsact.rng.Uint32() }

// LockAction implements cls.ActionLocker: spin_lock_bh(&police->tcfp_lock)
// on this CPU, the lock made at the action's first packet.
func (x *blockCtx) LockAction(slot *any) {
	if *slot == nil {
		*slot = &sim.SpinLock{Name: "tcfp_lock"}
	}
	(*slot).(*sim.SpinLock).Lock(x.c, x.d.clsact.policeSite)
}

// UnlockAction implements cls.ActionLocker.
func (x *blockCtx) UnlockAction(slot *any) { (*slot).(*sim.SpinLock).Unlock(x.c) }

// RealNumTxQueues implements cls.EgressCtx.
func (x *blockCtx) RealNumTxQueues() int { return len(x.d.Queues) }

// SkipTxQueue implements cls.EgressCtx.
func (x *blockCtx) SkipTxQueue() { x.skip = true }

var (
	_ cls.EgressCtx    = (*blockCtx)(nil)
	_ cls.ActionLocker = (*blockCtx)(nil)
)

// schHandleEgress is sch_handle_egress with tc_run: the egress block's
// filters on the skb. It returns the TX queue an skbedit queue_mapping
// chose (netdev_xmit_skip_txqueue), nil for netdev_core_pick_tx's; done
// says the skb is gone (a drop: TC_EGRESS, NET_XMIT_DROP).
func (n *Net) schHandleEgress(c *sim.CPU, d *Device, s *skb.SKB) (txq *TxQueue, rc qdisc.Code, done bool) {
	x, p, rc, done := n.tcRun(c, d, s, egressAt, skb.DropTCEgress)
	if done {
		return nil, rc, true
	}
	if x != nil && x.skip {
		s.Queue = p.Queue
		return d.Queues[p.Queue], 0, false // netdev_tx_queue_mapping
	}
	return nil, 0, false
}

// tcRun is tc_run on a clsact block (at) for s on CPU c: the miniq's
// counters, the filters, and a shot skb freed with the block's reason
// (or the one the classification set: tcf_get_drop_reason), rc
// NET_XMIT_DROP; an skb an action took (mirred) is gone, rc
// NET_XMIT_SUCCESS; otherwise what the actions edited (skbedit's
// priority and mark) goes into s. x is nil when the block has no
// filters (no miniq: nothing runs). An skb ifb gave back
// (tc_skip_classify) passes once, its actions not run
// (tcf_action_exec's skb_skip_tc_classify).
func (n *Net) tcRun(c *sim.CPU, d *Device, s *skb.SKB, at qdisc.ClassID, reason skb.DropReason) (x *blockCtx, p skb.Packet, rc qdisc.Code, done bool) {
	if d.clsact == nil || !d.filters.Filtered(at) {
		return nil, p, 0, false
	}
	ca := d.clsact
	pktLen := s.Len
	if at == ingressAt {
		// sch_handle_ingress: qdisc_skb_cb(skb)->pkt_len = skb->len,
		// the data past the MAC header eth_type_trans pulled
		pktLen -= ethHlen
	}
	ca.sentPkts += uint64(max(s.GSOSegs, 1)) // mini_qdisc_bstats_cpu_update
	ca.sentBytes += uint64(pktLen)
	if s.Redir&skb.SkipClassify != 0 {
		s.Redir &^= skb.SkipClassify
		return nil, p, 0, false
	}
	x = &ca.ctxs[c.ID]
	*x = blockCtx{c: c, d: d, s: s, at: at, p: s.Packet}
	x.p.Len = pktLen // what the actions count and police meters
	r := d.filters.Classify(x, &x.p, at)
	p = x.p
	switch r.Verdict {
	case qdisc.VerdictStolen:
		return x, p, qdisc.XmitSuccess, true
	case qdisc.VerdictShot:
		ca.drops++
		if r.Reason != skb.DropNone {
			reason = r.Reason
		}
		n.kfreeSkb(c, s, reason)
		return x, p, qdisc.XmitDrop, true
	}
	s.Priority, s.Mark = p.Priority, p.Mark
	return x, p, 0, false
}

// tcClsactFilter is tc_new_tfilter and tc_del_tfilter on a block of
// the clsact or ingress qdisc (parent ffff:fff3, "egress"; ffff:fff2,
// "ingress"; ffff:, the ingress qdisc's): clsact_find picks the block by
// the minor, and the ingress qdisc has one block whatever it is
// (ingress_tcf_block).
func (n *Net) tcClsactFilter(d *Device, verb tc.Verb, cmd tc.Filter) error {
	if d.clsact == nil {
		return kernelf("Error: Parent Qdisc doesn't exists.")
	}
	at := egressAt
	switch {
	case d.clsact.kind == "ingress" || cmd.Parent == tc.IngressBlock:
		at = ingressAt
	case cmd.Parent != tc.Egress:
		return kernelf("Error: Cannot find block of clsact for %s (write egress or ingress).", cmd.Parent)
	}
	if at == ingressAt && cls.EditsQueue(cmd.Options) {
		return kernelf("Error: skbedit: \"queue_mapping\" option on receive side is hardware only, use skip_sw.")
	}
	if verb == tc.VerbDelete {
		return d.filters.Delete(cmd, at)
	}
	if _, err := d.filters.Add(verb, cmd, at); err != nil {
		return err
	}
	d.filters.ArmActions(sim.Ktime(n.E.Now())) // tcf_police_init's clock
	return nil
}

// Clsact is the device's clsact or ingress qdisc: its kind and its
// counters (its mini_Qdiscs': the packets its blocks classified, its
// drops); ok is false without one.
func (d *Device) Clsact() (kind string, pkts, bytes, drops uint64, ok bool) {
	if d.clsact == nil {
		return "", 0, 0, 0, false
	}
	return d.clsact.kind, d.clsact.sentPkts, d.clsact.sentBytes, d.clsact.drops, true
}

// schHandleIngress is sch_handle_ingress with tc_run on a received
// frame on CPU c: the ingress block's filters, before the stack takes
// it; done says a drop freed it (TC_INGRESS).
func (n *Net) schHandleIngress(c *sim.CPU, d *Device, s *skb.SKB) (done bool) {
	_, _, _, done = n.tcRun(c, d, s, ingressAt, skb.DropTCIngress)
	return done
}
