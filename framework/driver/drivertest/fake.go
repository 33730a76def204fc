// Package drivertest is a small fake host for driving a driver model
// directly in tests: the BQL and queue-state half of netdev's driver
// context, with interrupts and local NAPI schedules recorded instead of
// run.
package drivertest

import (
	"sort"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// RxPkt is one NetifRx call.
type RxPkt struct {
	P   skb.Packet
	CPU int
}

// IRQ is one RaiseIRQ call.
type IRQ struct {
	V  int
	At sim.Time
}

type Ctx struct {
	TB         *testing.T
	Clock      sim.Time
	OnCPU      int
	BQL        bool
	DQL        []netdev.DQL
	DrvXoff    []bool
	StackXoff  []bool
	Qdisc      []bool
	Held       map[skb.Handle]skb.Packet // with the driver, not yet freed
	NextH      skb.Handle
	InPoll     bool
	Consumed   []uint64 // per txq
	ConsumedB  []uint64
	Dropped    []uint64
	Stops      []uint64 // StopQueue calls on a running queue
	Wakes      []uint64 // WakeQueue calls that woke
	PollWakes  []uint64 // ... of those, from NAPI poll
	Scheds     []uint64 // __netif_schedule of the txq's qdisc
	SentBytes  []uint64 // BQL: bytes reported sent
	ComplBytes []uint64 // BQL: bytes reported completed
	Irqs       []IRQ
	Local      []int // NapiScheduleLocal calls, in order
	// Rx are the packets handed to NetifRx (the host's backlog), in
	// order, with the CPU each came from; RxFull makes it refuse them
	// (NET_RX_DROP), counted in RxDropped per txq.
	Rx        []RxPkt
	RxFull    bool
	RxDropped []uint64
	Events    []string // "stop", "start", "wake", "local" in order
	OnWake    func(q int)
	// OnStop runs after StopQueue sets the driver's XOFF: what another
	// CPU's clean does between the stop and the driver's re-check.
	OnStop func(q int)
}

func New(t *testing.T, nq int, bql bool) *Ctx {
	f := &Ctx{TB: t, BQL: bql, Held: map[skb.Handle]skb.Packet{}, NextH: 1}
	f.DQL = make([]netdev.DQL, nq)
	for i := range f.DQL {
		f.DQL[i].Init(netdev.HZ, 0)
	}
	f.DrvXoff, f.StackXoff, f.Qdisc = make([]bool, nq), make([]bool, nq), make([]bool, nq)
	for i := range f.Qdisc {
		f.Qdisc[i] = true
	}
	for _, p := range []*[]uint64{&f.Consumed, &f.ConsumedB, &f.Dropped, &f.Stops, &f.Wakes, &f.PollWakes, &f.Scheds, &f.SentBytes, &f.ComplBytes, &f.RxDropped} {
		*p = make([]uint64, nq)
	}
	return f
}

func (f *Ctx) Jiffies() uint64 { return uint64(f.Clock / (sim.Second / netdev.HZ)) }

func (f *Ctx) Now() sim.Time       { return f.Clock }
func (f *Ctx) Spend(ns int64)      { f.Clock += sim.Time(ns) }
func (f *Ctx) CPU() int            { return f.OnCPU }
func (f *Ctx) HasQdisc(q int) bool { return f.Qdisc[q] }

func (f *Ctx) SentQueue(q, bytes int) {
	f.SentBytes[q] += uint64(bytes)
	if !f.BQL {
		return
	}
	f.DQL[q].Queued(uint32(bytes))
	if f.DQL[q].Avail() < 0 {
		f.StackXoff[q] = true
	}
}

func (f *Ctx) SentQueueMore(q, bytes int, more bool) bool {
	if more {
		f.SentBytes[q] += uint64(bytes)
		if f.BQL {
			f.DQL[q].Queued(uint32(bytes))
		}
		return f.DrvXoff[q]
	}
	f.SentQueue(q, bytes)
	return true
}

func (f *Ctx) CompletedQueue(q, pkts, bytes int) {
	f.ComplBytes[q] += uint64(bytes)
	if !f.BQL || bytes == 0 {
		return
	}
	f.DQL[q].Completed(uint32(bytes), f.Jiffies())
	if f.DQL[q].Avail() >= 0 && f.StackXoff[q] {
		f.StackXoff[q] = false
		if !f.DrvXoff[q] {
			f.Scheds[q]++
		}
	}
}

func (f *Ctx) StopQueue(q int) {
	if !f.DrvXoff[q] {
		f.Stops[q]++
	}
	f.DrvXoff[q] = true
	f.Events = append(f.Events, "stop")
	if f.OnStop != nil {
		f.OnStop(q)
	}
}

// StartQueue is netif_tx_start_queue: no reschedule.
func (f *Ctx) StartQueue(q int) {
	f.DrvXoff[q] = false
	f.Events = append(f.Events, "start")
}

func (f *Ctx) WakeQueue(q int) {
	if !f.DrvXoff[q] {
		return
	}
	if f.OnWake != nil {
		f.OnWake(q)
	}
	f.DrvXoff[q] = false
	f.Wakes[q]++
	if f.InPoll {
		f.PollWakes[q]++
	}
	f.Scheds[q]++
	f.Events = append(f.Events, "wake")
}

func (f *Ctx) QueueStopped(q int) bool { return f.DrvXoff[q] }
func (f *Ctx) XmitStopped(q int) bool  { return f.DrvXoff[q] || f.StackXoff[q] }

func (f *Ctx) Consume(h skb.Handle) {
	p, ok := f.Held[h]
	if !ok {
		f.TB.Fatalf("consume of packet %#x the driver does not hold", uint64(h))
	}
	delete(f.Held, h)
	f.Consumed[p.Queue]++
	f.ConsumedB[p.Queue] += uint64(p.Len)
}

func (f *Ctx) Drop(h skb.Handle, _ skb.DropReason) {
	p, ok := f.Held[h]
	if !ok {
		f.TB.Fatalf("drop of packet %#x the driver does not hold", uint64(h))
	}
	delete(f.Held, h)
	f.Dropped[p.Queue]++
}

// NetifRx takes the packet from the driver: into Rx, or refused.
func (f *Ctx) NetifRx(h skb.Handle) bool {
	p, ok := f.Held[h]
	if !ok {
		f.TB.Fatalf("netif_rx of packet %#x the driver does not hold", uint64(h))
	}
	delete(f.Held, h)
	if f.RxFull {
		f.RxDropped[p.Queue]++
		return false
	}
	f.Rx = append(f.Rx, RxPkt{p, f.OnCPU})
	return true
}

func (f *Ctx) RaiseIRQ(v int, at sim.Time) { f.Irqs = append(f.Irqs, IRQ{v, at}) }
func (f *Ctx) NapiScheduleLocal(v int) {
	f.Local = append(f.Local, v)
	f.Events = append(f.Events, "local")
}

// packets makes n fresh packets for txq q.
func (f *Ctx) Packets(q, n int, size uint32) []skb.Packet {
	out := make([]skb.Packet, n)
	for i := range out {
		out[i] = skb.Packet{Handle: f.NextH, Len: size, Queue: uint16(q), Hash: uint32(f.NextH) * 2654435761, Sock: -1}
		f.NextH++
	}
	return out
}

// xmit hands batch to the driver as dev_hard_start_xmit does; it returns
// what the driver did not take.
func (f *Ctx) Xmit(d driver.Driver, q int, batch []skb.Packet) (rest []skb.Packet, rc driver.TxCode) {
	for _, p := range batch {
		f.Held[p.Handle] = p
	}
	sent, rc := d.Xmit(f, q, batch)
	if sent < 0 || sent > len(batch) {
		f.TB.Fatalf("xmit claims %d of %d sent", sent, len(batch))
	}
	for _, p := range batch[sent:] {
		delete(f.Held, p.Handle)
	}
	return batch[sent:], rc
}

// heldBytes is the bytes of packets on txq q the driver holds.
func (f *Ctx) HeldBytes(q int) (n uint64) {
	for _, p := range f.Held {
		if int(p.Queue) == q {
			n += uint64(p.Len)
		}
	}
	return
}

// serviceIRQs runs, in time order, every interrupt due by now: the
// vector's NAPI polls until done (net_rx_action repolls). check runs
// after every poll.
func (f *Ctx) ServiceIRQs(d driver.Driver, check func()) {
	for {
		sort.SliceStable(f.Irqs, func(i, j int) bool { return f.Irqs[i].At < f.Irqs[j].At })
		if len(f.Irqs) == 0 || f.Irqs[0].At > f.Clock {
			return
		}
		x := f.Irqs[0]
		f.Irqs = f.Irqs[1:]
		f.Poll(d, x.V, check)
	}
}

func (f *Ctx) Poll(d driver.Driver, v int, check func()) {
	for i := 0; ; i++ {
		if i > 100000 {
			f.TB.Fatal("NAPI never completes")
		}
		f.InPoll = true
		_, done := d.Poll(f, v, 64)
		f.InPoll = false
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
func (f *Ctx) Pump(d driver.Driver, nq, total, bulk int, size uint32, step sim.Time, check func()) (busy int) {
	left := make([]int, nq)
	requeued := make([][]skb.Packet, nq)
	for i := range left {
		left[i] = total
	}
	limit := f.Clock + 10*sim.Second
	for f.Clock < limit {
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
				batch = f.Packets(q, n, size)
			}
			rest, rc := f.Xmit(d, q, batch)
			if rc == driver.TxBusy {
				busy++
			}
			requeued[q] = append([]skb.Packet(nil), rest...)
			if check != nil {
				check()
			}
		}
		if !offered && len(f.Held) == 0 {
			return busy
		}
		f.Clock += step
		f.ServiceIRQs(d, check)
	}
	f.TB.Fatalf("traffic did not drain: driver holds %d packets, %d interrupts pending", len(f.Held), len(f.Irqs))
	return busy
}

// CheckStopsWakes compares the driver's busy, stop and restart counters
// (stats, summed over its queues) with what the host saw: busy
// NETDEV_TX_BUSY returns (Pump's), and its StopQueue and WakeQueue
// calls, every stop woken by the drain. It returns the host's stops.
func (f *Ctx) CheckStopsWakes(stats []driver.QueueStats, busy int) (stops uint64) {
	f.TB.Helper()
	var sBusy, sStop, sRestart, wakes uint64
	for _, s := range stats {
		sBusy += s.Busy
		sStop += s.Stopped
		sRestart += s.Restart
	}
	for q := range f.Stops {
		stops += f.Stops[q]
		wakes += f.Wakes[q]
	}
	if sBusy != uint64(busy) || sStop != stops || sRestart != wakes || stops != wakes {
		f.TB.Errorf("busy %d/%d stops %d/%d restarts %d/%d (driver/host)", sBusy, busy, sStop, stops, sRestart, wakes)
	}
	return stops
}
