package netdev

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/ifname"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// An ifb device (drivers/net/ifb.c) takes what a tc mirred action
// redirects to it, runs it through its own qdisc, and hands it back:
// the way to shape what a device receives (an ingress filter's `action
// mirred egress redirect dev ifb0`, then `tc qdisc add dev ifb0 root
// cake ...`), or to put one qdisc over several devices' egress. Its
// ndo_start_xmit (ifb_xmit) queues the skb on the TX queue's rq and
// schedules the queue's tasklet; the tasklet (ifb_ri_tasklet) takes rq
// under the queue's _xmit_lock and sends each skb back where it came
// from: into netif_receive_skb of the device it arrived on when it was
// redirected from a receive path (the forwarding path goes on from
// there), else into that device's __dev_queue_xmit, with
// tc_skip_classify set so that device's tc hook lets it pass once. Like
// a bond's, its driver is the host's own: the tasklet calls the stack.

// IfbTxQLimit is TX_Q_LIMIT: an ifb's tx_queue_len, and the rq length at
// which ifb_xmit stops the TX queue (the tasklet wakes it once rq is
// empty).
const IfbTxQLimit = 32

// Ifb is an ifb device's host side: each TX queue's ifb_q_private.
type Ifb struct {
	Qs []IfbQueue
	// RxDropped counts what ifb_xmit freed for not being redirected
	// (dev->stats.rx_dropped), TxDropped what the tasklet freed for a
	// device that went away (dev->stats.tx_dropped).
	RxDropped, TxDropped uint64
}

// IfbQueue is one ifb_q_private: rq, filled by ifb_xmit under the TX
// queue's lock, and tq, the tasklet's own, with their counters (ifb's
// rx_* is what ifb_xmit took, tx_* what the tasklet sent back).
type IfbQueue struct {
	rq, tq                   skb.List
	pending                  bool // tasklet_pending
	tl                       tasklet
	RxPackets, RxBytes       uint64
	TxPackets, TxBytes       uint64
	TaskletRuns, Rescheduled uint64 // ifb_ri_tasklet calls, and how many ended in resched
}

// ifbDriver is the ifb's ndo_* for the parts of the host that ask every
// device's driver: no rings, no NAPI. Its transmit is the host's
// (ifbXmit).
type ifbDriver struct{}

func (ifbDriver) Init(driver.Setup, []string) (driver.Info, error) { return driver.Info{}, nil }
func (ifbDriver) Xmit(driver.Ctx, int, []skb.Packet) (int, driver.TxCode) {
	panic("ifb: the host transmits on an ifb (ifb_xmit), never through its driver")
}
func (ifbDriver) Poll(driver.Ctx, int, int) (int, bool) { return 0, true }
func (ifbDriver) Stats() []driver.QueueStats            { return nil }

// IfbSpec is `ip link add NAME [numtxqueues N] [txqueuelen N] type ifb`.
type IfbSpec struct {
	Name       string
	TxQueues   int // numtxqueues, 1 by default (the module's ifb0 and ifb1 have one)
	TxQueueLen int // txqueuelen, IfbTxQLimit by default
}

// AddIfb makes an ifb device, up, with the kernel's default qdiscs on
// it (pfifo_fast, or mq over pfifo_fast with several queues, whose
// limit is the ifb's tx_queue_len).
func (n *Net) AddIfb(p IfbSpec) (*Device, error) {
	if n.DeviceByName(p.Name) != nil {
		return nil, fmt.Errorf("%s: RTNETLINK answers: File exists", p.Name)
	}
	if p.TxQueues == 0 {
		p.TxQueues = 1
	}
	if p.TxQueues < 1 || p.TxQueues > MaxQueues {
		return nil, kernelf("%s: Error: Invalid number of transmit queues (%d).", p.Name, p.TxQueues)
	}
	if p.TxQueueLen == 0 {
		p.TxQueueLen = IfbTxQLimit
	}
	if p.TxQueueLen < 0 {
		return nil, fmt.Errorf("%s: txqueuelen %d: Invalid argument", p.Name, p.TxQueueLen)
	}
	d := &Device{Name: p.Name, MTU: 1500, Drv: ifbDriver{}, net: n, driverName: "ifb", filters: cls.NewSet(),
		txQueueLen: p.TxQueueLen}
	d.Ifb = &Ifb{Qs: make([]IfbQueue, p.TxQueues)}
	n.softQueues(d, p.TxQueues)
	for i := range d.Ifb.Qs {
		d.Ifb.Qs[i].tl.fn = func(c *sim.CPU) { n.ifbRiTasklet(c, d, i) }
	}
	if n.site.ifbTasklet == nil {
		n.site.ifbTasklet = n.E.LockSite("ifb_ri_tasklet (_xmit_lock)")
	}
	if err := n.attachQdiscs(d, nil); err != nil {
		return nil, fmt.Errorf("device %s: %w", p.Name, err)
	}
	if err := n.register(d); err != nil {
		return nil, err
	}
	return d, nil
}

// ifbHardStartXmit is dev_hard_start_xmit on an ifb (under its queue's
// HARD_TX_LOCK: an ifb is not lltx): each skb through ifb_xmit, which
// always returns NETDEV_TX_OK.
func (n *Net) ifbHardStartXmit(c *sim.CPU, d *Device, txq *TxQueue, list *skb.List) {
	n.driverXmitHook(c, txq, list)
	for s := list.Pop(); s != nil; s = list.Pop() {
		if n.Hooks.Tap != nil { // xmit_one's dev_queue_xmit_nit
			one := &n.sd[c.ID].tapOne
			one[0] = s
			n.Hooks.Tap(c, txq, one[:])
		}
		n.ifbXmit(c, d, txq, s)
	}
}

// ifbXmit is ifb_xmit: count it, free what was not redirected to it,
// stop the queue once rq holds tx_queue_len skbs (the one in hand still
// joins it), queue, and schedule the queue's tasklet on this CPU if it
// is not pending.
func (n *Net) ifbXmit(c *sim.CPU, d *Device, txq *TxQueue, s *skb.SKB) {
	q := &d.Ifb.Qs[txq.Index]
	c.Spend(n.E.Costs.IfbXmit)
	q.RxPackets++
	q.RxBytes += uint64(s.Len)
	if s.Redir&skb.Redirected == 0 || s.Redir.Iif() == 0 {
		d.Ifb.RxDropped++
		n.kfreeSkb(c, s, skb.DropNotSpecified) // dev_kfree_skb
		return
	}
	if q.rq.Len >= d.TxQueueLen() {
		d.ctxFor(c).StopQueue(txq.Index)
	}
	q.rq.Push(s)
	if !q.pending {
		q.pending = true
		n.taskletSchedule(c, &q.tl)
	}
}

// ifbRiTasklet is ifb_ri_tasklet for TX queue qi: with tq empty, take rq
// whole under the queue's lock (a trylock: busy, try again later); send
// every skb of tq back where it came from; then, under the lock again,
// end if rq is empty (waking the queue if ifb_xmit had stopped it), or
// go round once more.
func (n *Net) ifbRiTasklet(c *sim.CPU, d *Device, qi int) {
	q := &d.Ifb.Qs[qi]
	txq := d.Queues[qi]
	q.TaskletRuns++
	c.Spend(n.E.Costs.TaskletRun)
	if q.tq.Empty() {
		if !txq.xmitLock.TryLock(c, n.site.ifbTasklet) {
			n.ifbResched(c, q)
			return
		}
		q.tq.PushList(&q.rq) // skb_queue_splice_tail_init
		txq.xmitLock.Unlock(c)
	}
	for s := q.tq.Pop(); s != nil; s = q.tq.Pop() {
		c.Spend(n.E.Costs.IfbTaskletSkb)
		q.TxPackets++
		q.TxBytes += uint64(s.Len)
		txq.TxPackets++ // the report's per-queue "completed"
		txq.TxBytes += uint64(s.Len)
		from := n.Devs[s.Redir.Iif()-1]
		s.Redir = (s.Redir&^skb.Redirected | skb.SkipClassify).WithIif(d.ifindex)
		if s.Redir&skb.FromIngress == 0 {
			n.devQueueXmit(c, from, s)
		} else {
			s.Redir &^= skb.FromIngress
			n.netifReceiveSkb(c, from, s)
		}
	}
	if txq.xmitLock.TryLock(c, n.site.ifbTasklet) {
		if q.rq.Empty() {
			q.pending = false
			if txq.state&queueDrvXoff != 0 {
				d.ctxFor(c).WakeQueue(qi)
			}
			txq.xmitLock.Unlock(c)
			return
		}
		txq.xmitLock.Unlock(c)
	}
	n.ifbResched(c, q)
}

// ifbResched is ifb_ri_tasklet's resched: tasklet_pending stays set and
// the tasklet goes back on this CPU's list.
func (n *Net) ifbResched(c *sim.CPU, q *IfbQueue) {
	q.Rescheduled++
	q.pending = true
	n.taskletSchedule(c, &q.tl)
}

// ifbHeld is what the ifbs' queues hold (InFlight's "ifb").
func (n *Net) ifbHeld() int64 {
	var h int64
	for _, d := range n.Devs {
		if d.Ifb == nil {
			continue
		}
		for i := range d.Ifb.Qs {
			h += int64(d.Ifb.Qs[i].rq.Len + d.Ifb.Qs[i].tq.Len)
		}
	}
	return h
}

// ParseIfbList reads ifbs in `ip link add` words, separated by ';':
// NAME [numtxqueues N] [txqueuelen N] [type ifb] (name first, as
// `ip link add ifb0 numtxqueues 4 type ifb` gives it).
func ParseIfbList(text string) ([]IfbSpec, error) {
	var out []IfbSpec
	names := map[string]bool{}
	for i, part := range strings.Split(text, ";") {
		words := strings.Fields(part)
		if len(words) == 0 {
			if strings.TrimSpace(text) == "" {
				return nil, nil
			}
			return nil, fmt.Errorf("ifb %d is empty (ifbs are separated by ';')", i+1)
		}
		p := IfbSpec{Name: words[0]}
		if err := checkIfName(p.Name); err != nil {
			return nil, err
		}
		for w := words[1:]; len(w) > 0; {
			switch w[0] {
			case "type":
				if len(w) < 2 || w[1] != "ifb" {
					return nil, fmt.Errorf("%s: only type ifb is made here (got %q)", p.Name, strings.Join(w[1:min(2, len(w))], ""))
				}
			case "numtxqueues", "txqueuelen":
				if len(w) < 2 {
					return nil, fmt.Errorf("%s: Command line is not complete after %q", p.Name, w[0])
				}
				v, err := strconv.Atoi(w[1])
				if err != nil || v < 0 || v > 1<<20 {
					return nil, fmt.Errorf("%s: Error: argument %q is wrong: Invalid \"%s\" value", p.Name, w[1], w[0])
				}
				if w[0] == "numtxqueues" {
					if v < 1 || v > MaxQueues {
						return nil, kernelf("%s: Error: Invalid number of transmit queues (%d; at most %d).", p.Name, v, MaxQueues)
					}
					p.TxQueues = v
				} else {
					if v == 0 {
						return nil, fmt.Errorf("%s: txqueuelen 0: an ifb queues what it takes (give 1 or more)", p.Name)
					}
					p.TxQueueLen = v
				}
			default:
				return nil, fmt.Errorf("%s: Garbage instead of arguments %q (an ifb takes numtxqueues N and txqueuelen N)", p.Name, w[0])
			}
			w = w[2:]
		}
		if names[p.Name] {
			return nil, fmt.Errorf("%s: RTNETLINK answers: File exists (a second ifb of that name)", p.Name)
		}
		names[p.Name] = true
		out = append(out, p)
	}
	return out, nil
}

// checkIfName is ip's refusal of a name dev_valid_name refuses.
func checkIfName(name string) error {
	if !ifname.Valid(name) {
		return fmt.Errorf("%q: Error: argument %q is wrong: \"name\" not a valid ifname", name, name)
	}
	return nil
}
