package ice

// fakeCtx is a small host for driving the driver directly: the BQL and
// queue-state half of netdev's dctx, with interrupts and local NAPI
// schedules recorded instead of run.

import (
	"sort"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

type irq struct {
	v  int
	at sim.Time
}

type fakeCtx struct {
	t          *testing.T
	now        sim.Time
	cpu        int
	bql        bool
	dql        []netdev.DQL
	drvXoff    []bool
	stackXoff  []bool
	qdisc      []bool
	held       map[skb.Handle]skb.Packet // with the driver, not yet freed
	next       skb.Handle
	inPoll     bool
	consumed   []uint64 // per txq
	consumedB  []uint64
	dropped    []uint64
	stops      []uint64 // StopQueue calls on a running queue
	wakes      []uint64 // WakeQueue calls that woke
	pollWakes  []uint64 // ... of those, from NAPI poll
	scheds     []uint64 // __netif_schedule of the txq's qdisc
	sentBytes  []uint64 // BQL: bytes reported sent
	complBytes []uint64 // BQL: bytes reported completed
	irqs       []irq
	local      []int    // NapiScheduleLocal calls, in order
	events     []string // "stop q", "local v", "wake q" in order
	onWake     func(q int)
}

func newFake(t *testing.T, nq int, bql bool) *fakeCtx {
	f := &fakeCtx{t: t, bql: bql, held: map[skb.Handle]skb.Packet{}, next: 1}
	f.dql = make([]netdev.DQL, nq)
	for i := range f.dql {
		f.dql[i].Init(netdev.HZ, 0)
	}
	f.drvXoff, f.stackXoff, f.qdisc = make([]bool, nq), make([]bool, nq), make([]bool, nq)
	for i := range f.qdisc {
		f.qdisc[i] = true
	}
	for _, p := range []*[]uint64{&f.consumed, &f.consumedB, &f.dropped, &f.stops, &f.wakes, &f.pollWakes, &f.scheds, &f.sentBytes, &f.complBytes} {
		*p = make([]uint64, nq)
	}
	return f
}

func (f *fakeCtx) jiffies() uint64 { return uint64(f.now / (sim.Second / netdev.HZ)) }

func (f *fakeCtx) Now() sim.Time       { return f.now }
func (f *fakeCtx) Spend(ns int64)      { f.now += ns }
func (f *fakeCtx) CPU() int            { return f.cpu }
func (f *fakeCtx) HasQdisc(q int) bool { return f.qdisc[q] }

func (f *fakeCtx) SentQueue(q, bytes int) {
	f.sentBytes[q] += uint64(bytes)
	if !f.bql {
		return
	}
	f.dql[q].Queued(uint32(bytes))
	if f.dql[q].Avail() < 0 {
		f.stackXoff[q] = true
	}
}

func (f *fakeCtx) SentQueueMore(q, bytes int, more bool) bool {
	if more {
		f.sentBytes[q] += uint64(bytes)
		if f.bql {
			f.dql[q].Queued(uint32(bytes))
		}
		return f.drvXoff[q]
	}
	f.SentQueue(q, bytes)
	return true
}

func (f *fakeCtx) CompletedQueue(q, pkts, bytes int) {
	f.complBytes[q] += uint64(bytes)
	if !f.bql || bytes == 0 {
		return
	}
	f.dql[q].Completed(uint32(bytes), f.jiffies())
	if f.dql[q].Avail() >= 0 && f.stackXoff[q] {
		f.stackXoff[q] = false
		if !f.drvXoff[q] {
			f.scheds[q]++
		}
	}
}

func (f *fakeCtx) StopQueue(q int) {
	if !f.drvXoff[q] {
		f.stops[q]++
	}
	f.drvXoff[q] = true
	f.events = append(f.events, "stop")
}

func (f *fakeCtx) WakeQueue(q int) {
	if !f.drvXoff[q] {
		return
	}
	if f.onWake != nil {
		f.onWake(q)
	}
	f.drvXoff[q] = false
	f.wakes[q]++
	if f.inPoll {
		f.pollWakes[q]++
	}
	f.scheds[q]++
	f.events = append(f.events, "wake")
}

func (f *fakeCtx) QueueStopped(q int) bool { return f.drvXoff[q] }
func (f *fakeCtx) XmitStopped(q int) bool  { return f.drvXoff[q] || f.stackXoff[q] }

func (f *fakeCtx) Consume(h skb.Handle) {
	p, ok := f.held[h]
	if !ok {
		f.t.Fatalf("consume of packet %#x the driver does not hold", uint64(h))
	}
	delete(f.held, h)
	f.consumed[p.Queue]++
	f.consumedB[p.Queue] += uint64(p.Len)
}

func (f *fakeCtx) Drop(h skb.Handle, _ skb.DropReason) {
	p, ok := f.held[h]
	if !ok {
		f.t.Fatalf("drop of packet %#x the driver does not hold", uint64(h))
	}
	delete(f.held, h)
	f.dropped[p.Queue]++
}

func (f *fakeCtx) RaiseIRQ(v int, at sim.Time) { f.irqs = append(f.irqs, irq{v, at}) }
func (f *fakeCtx) NapiScheduleLocal(v int) {
	f.local = append(f.local, v)
	f.events = append(f.events, "local")
}

// packets makes n fresh packets for txq q.
func (f *fakeCtx) packets(q, n int, size uint32) []skb.Packet {
	out := make([]skb.Packet, n)
	for i := range out {
		out[i] = skb.Packet{Handle: f.next, Len: size, Queue: uint16(q), Hash: uint32(f.next) * 2654435761, Sock: -1}
		f.next++
	}
	return out
}

// xmit hands batch to the driver as dev_hard_start_xmit does; it returns
// what the driver did not take.
func (f *fakeCtx) xmit(d driver.Driver, q int, batch []skb.Packet) (rest []skb.Packet, rc driver.TxCode) {
	for _, p := range batch {
		f.held[p.Handle] = p
	}
	sent, rc := d.Xmit(f, q, batch)
	if sent < 0 || sent > len(batch) {
		f.t.Fatalf("xmit claims %d of %d sent", sent, len(batch))
	}
	for _, p := range batch[sent:] {
		delete(f.held, p.Handle)
	}
	return batch[sent:], rc
}

// heldBytes is the bytes of packets on txq q the driver holds.
func (f *fakeCtx) heldBytes(q int) (n uint64) {
	for _, p := range f.held {
		if int(p.Queue) == q {
			n += uint64(p.Len)
		}
	}
	return
}

// serviceIRQs runs, in time order, every interrupt due by now: the
// vector's NAPI polls until done (net_rx_action repolls). check runs
// after every poll.
func (f *fakeCtx) serviceIRQs(d driver.Driver, check func()) {
	for {
		sort.SliceStable(f.irqs, func(i, j int) bool { return f.irqs[i].at < f.irqs[j].at })
		if len(f.irqs) == 0 || f.irqs[0].at > f.now {
			return
		}
		x := f.irqs[0]
		f.irqs = f.irqs[1:]
		f.poll(d, x.v, check)
	}
}

func (f *fakeCtx) poll(d driver.Driver, v int, check func()) {
	for i := 0; ; i++ {
		if i > 100000 {
			f.t.Fatal("NAPI never completes")
		}
		f.inPoll = true
		_, done := d.Poll(f, v, 64)
		f.inPoll = false
		if check != nil {
			check()
		}
		if done {
			return
		}
	}
}

// pump offers total packets per queue in bulks, as a qdisc would: a
// queue that is stopped (driver or BQL) gets nothing, a refused rest is
// requeued and offered first next time. Every step the due interrupts
// run. After the offer it runs until the driver holds nothing (or until
// limit). It returns the NETDEV_TX_BUSY count.
func (f *fakeCtx) pump(d driver.Driver, nq, total, bulk int, size uint32, step sim.Time, check func()) (busy int) {
	left := make([]int, nq)
	requeued := make([][]skb.Packet, nq)
	for i := range left {
		left[i] = total
	}
	limit := f.now + 10*sim.Second
	for f.now < limit {
		offered := false
		for q := 0; q < nq; q++ {
			if len(requeued[q]) == 0 && left[q] == 0 {
				continue
			}
			offered = true
			if f.XmitStopped(q) {
				continue
			}
			batch := requeued[q]
			if len(batch) == 0 {
				n := min(bulk, left[q])
				left[q] -= n
				batch = f.packets(q, n, size)
			}
			rest, rc := f.xmit(d, q, batch)
			if rc == driver.TxBusy {
				busy++
			}
			requeued[q] = append([]skb.Packet(nil), rest...)
			if check != nil {
				check()
			}
		}
		if !offered && len(f.held) == 0 {
			return busy
		}
		f.now += step
		f.serviceIRQs(d, check)
	}
	f.t.Fatalf("traffic did not drain: driver holds %d packets, %d interrupts pending", len(f.held), len(f.irqs))
	return busy
}
