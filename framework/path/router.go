package path

import (
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// rxTruesize is what a router's received frame costs a qdisc that counts
// memory (cake): a 2 KB RX buffer around an sk_buff, as the NIC models'
// napi_build_skb gives.
var rxTruesize = skb.TruesizeFrag(2048)

// router is the bottleneck of one link running a qdisc: packets are
// enqueued as they arrive and dequeued whenever the bottleneck's wire is
// free (or the qdisc's watchdog says), one at a time. It is a router
// whose CPU is not modelled: the qdisc's work costs nothing, and it runs
// in process (a built-in kind).
type router struct {
	e      *sim.Engine
	l      *Link
	ops    qdisc.Qdisc
	rng    *sim.Rand
	pkts   map[skb.Handle]Pkt
	handle uint64
	busy   bool
	wdGen  uint64
	tmGen  uint64
	dups   []skb.Handle
	out    []skb.Packet
	batch  [1]skb.Packet
	rc     [1]qdisc.Code
	// later are packets handed for a later time, in time order (a
	// link's sends are): each event made by enqueueLater takes the head.
	later   sim.Fifo[laterPkt]
	laterFn func()
	doneFn  func() // the wire's end: the next dequeue
	// Drops by reason, as the qdisc gave them.
	Drops map[skb.DropReason]uint64
}

// routerSetup is what the router's qdisc learns about its device: one
// queue, a 1500-byte MTU, the bottleneck's rate.
func routerSetup(rate int64, limit int) qdisc.Setup {
	return qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, DevMTU: 1500, RateBps: rate, TxQueueLen: limit, NumTxQ: 1, DevTxQ: 1}
}

// CheckQdisc checks a path qdisc's tc words without a run: the kind is
// a built-in that can stand alone, its options parse.
func CheckQdisc(words []string, rate int64, limit int) error {
	if len(words) == 0 {
		return nil
	}
	kind := words[0]
	if _, mq := qdisc.MultiQueueChild(kind); mq || kind == "mq" || kind == "mqprio" || kind == "noqueue" {
		return fmt.Errorf("path qdisc: %s needs a multiqueue device; the path's bottleneck is one queue", kind)
	}
	ops, err := qdisc.New(kind)
	if err != nil {
		return fmt.Errorf("path qdisc: %w", err)
	}
	if _, ok := ops.(qdisc.Classful); ok {
		return fmt.Errorf("path qdisc: %s is classful; the path's router runs a classless qdisc (its classes and filters are the host's)", kind)
	}
	if _, err := ops.Init(qdisc.CheckCtx(), routerSetup(rate, limit), words[1:]); err != nil {
		return fmt.Errorf("path qdisc %s: %w", kind, err)
	}
	return nil
}

func newRouter(e *sim.Engine, l *Link, name string, words []string) (*router, error) {
	if err := CheckQdisc(words, l.wire.RateBps, l.limit); err != nil {
		return nil, err
	}
	ops, _ := qdisc.New(words[0])
	r := &router{e: e, l: l, ops: ops, rng: e.Rand("path/" + name + "/qdisc"), pkts: map[skb.Handle]Pkt{},
		Drops: map[skb.DropReason]uint64{}}
	r.laterFn = r.enqueueHead
	r.doneFn = func() {
		r.busy = false
		r.transmit()
	}
	if _, err := ops.Init(r, routerSetup(l.wire.RateBps, l.limit), words[1:]); err != nil {
		return nil, fmt.Errorf("path qdisc %s: %w", words[0], err)
	}
	return r, nil
}

// Now implements qdisc.Ctx: ktime, as on the host (sim.Ktime), so a
// qdisc's zero-initialised timestamps lie in the past here too.
func (r *router) Now() sim.Time { return sim.Ktime(r.e.Now()) }

// Work implements qdisc.Ctx: the router's CPU is not modelled.
func (r *router) Work(qdisc.Work, int) {}

// Rand implements qdisc.Ctx.
func (r *router) Rand() uint32 { return r.rng.Uint32() }

func (r *router) drop(h skb.Handle, reason skb.DropReason) {
	if _, ok := r.pkts[h]; !ok {
		panic(fmt.Sprintf("path qdisc: drop of packet %#x it does not hold", uint64(h)))
	}
	delete(r.pkts, h)
	if reason == skb.DropNone {
		reason = skb.DropQdiscDrop
	}
	r.Drops[reason]++
	r.l.Dropped++
}

// Drop implements qdisc.Ctx.
func (r *router) Drop(h skb.Handle, reason skb.DropReason) { r.drop(h, reason) }

// DequeueDrop implements qdisc.Ctx.
func (r *router) DequeueDrop(h skb.Handle, reason skb.DropReason) { r.drop(h, reason) }

// Watchdog implements qdisc.Ctx: try to dequeue again at at (ktime).
func (r *router) Watchdog(at sim.Time) {
	r.wdGen++
	g := r.wdGen
	r.e.At(sim.SimTime(at), func() {
		if r.wdGen == g {
			r.transmit()
		}
	})
}

// WatchdogRange implements qdisc.Ctx: a router's qdisc has no CPU
// whose interrupts could run it early, so it fires at at + slack.
func (r *router) WatchdogRange(at, slack sim.Time) { r.Watchdog(at + slack) }

// CancelWatchdog implements qdisc.Ctx.
func (r *router) CancelWatchdog() { r.wdGen++ }

// ModTimer implements qdisc.Ctx (at in ktime).
func (r *router) ModTimer(at sim.Time) {
	r.tmGen++
	g := r.tmGen
	r.e.At(sim.SimTime(at), func() {
		if r.tmGen != g {
			return
		}
		if t, ok := r.ops.(qdisc.TimerQdisc); ok {
			t.Timer(r)
		}
		r.transmit()
	})
}

// DelTimer implements qdisc.Ctx.
func (r *router) DelTimer() { r.tmGen++ }

// Lines implements qdisc.Ctx: the path's router prices no CPU.
func (r *router) Lines(uint64, int) {}

// ReadSibling implements qdisc.Ctx: the path's router prices no CPU.
func (r *router) ReadSibling(int) {}

// Duplicate implements qdisc.Ctx (netem's duplicate).
func (r *router) Duplicate(h skb.Handle) { r.dups = append(r.dups, h) }

func (r *router) packet(p Pkt) skb.Packet {
	r.handle++
	h := skb.Handle(r.handle)
	r.pkts[h] = p
	return skb.Packet{Handle: h, Len: p.Len, TrueSize: rxTruesize, Hash: p.Hash, Keys: p.Keys, DSCP: p.DSCP, ECN: p.ECN,
		Sock: -1, GSOSegs: 1}
}

type laterPkt struct {
	t sim.Time
	p Pkt
}

// enqueue hands p to the qdisc at t (in engine context at t).
func (r *router) enqueue(t sim.Time, p Pkt) bool {
	if t > r.e.Now() {
		r.enqueueLater(t, p)
		return true
	}
	r.batch[0], r.rc[0] = r.packet(p), qdisc.XmitSuccess
	r.ops.Enqueue(r, r.batch[:], r.rc[:])
	r.batch[0] = skb.Packet{}
	rc := r.rc[0]
	for len(r.dups) > 0 {
		h := r.dups[0]
		r.dups = r.dups[1:]
		if d, ok := r.pkts[h]; ok {
			// The clone comes back marked, as the host marks it
			// (qdisc.Ctx.Duplicate): netem does not duplicate it again.
			c := r.packet(d)
			c.Flags |= skb.PacketDup
			r.ops.Enqueue(r, []skb.Packet{c}, []qdisc.Code{qdisc.XmitSuccess})
		}
	}
	r.l.MaxQueue = max(r.l.MaxQueue, r.ops.Stats().Qlen)
	r.transmit()
	return rc != qdisc.XmitDrop
}

// enqueueLater is enqueue at t, an event away. Link.Send's times never
// go back, so the events fire in the order of later.
func (r *router) enqueueLater(t sim.Time, p Pkt) {
	r.later.Push(laterPkt{t, p})
	r.e.At(t, r.laterFn)
}

// enqueueHead is the due enqueue at the head of later.
func (r *router) enqueueHead() {
	x := r.later.Pop()
	r.enqueue(x.t, x.p)
}

// transmit dequeues the next packet onto the bottleneck's wire if it is
// free; the wire's end dequeues the next.
func (r *router) transmit() {
	if r.busy {
		return
	}
	r.out = r.ops.Dequeue(r, qdisc.DequeueReq{Max: 1}, r.out[:0])
	if len(r.out) == 0 {
		return
	}
	q := r.out[0]
	p, ok := r.pkts[q.Handle]
	if !ok {
		panic(fmt.Sprintf("path qdisc: dequeued packet %#x it was never handed", uint64(q.Handle)))
	}
	delete(r.pkts, q.Handle)
	if q.ECN == 3 && p.ECN != 3 {
		r.l.Marked++
	}
	p.ECN = q.ECN
	r.busy = true
	done := r.l.wire.Send(r.e.Now(), p.Len) // the router's link is idle when it dequeues
	r.e.At(done, r.doneFn)
	r.l.arrive(done+r.l.delay, p)
}
