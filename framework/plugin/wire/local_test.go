package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// event is one host operation and the host's CPU time when it happened.
type event struct {
	At   sim.Time
	What string
}

func (e event) String() string { return fmt.Sprintf("%d:%s", e.At, e.What) }

// fakeQHost is the host's per-call qdisc context: it records each
// operation at the host CPU time it happens.
type fakeQHost struct {
	t      *testing.T
	now    sim.Time
	events []event
}

func (h *fakeQHost) rec(format string, args ...any) {
	h.events = append(h.events, event{h.now, fmt.Sprintf(format, args...)})
}

func (h *fakeQHost) Now() sim.Time { return h.now }
func (h *fakeQHost) Spend(ns int64) {
	if ns < 0 {
		h.t.Errorf("host spent %d ns", ns)
	}
	h.now += sim.Time(ns)
}
func (h *fakeQHost) Drop(p skb.Handle, r skb.DropReason)        { h.rec("drop %#x %s", uint64(p), r) }
func (h *fakeQHost) DequeueDrop(p skb.Handle, r skb.DropReason) { h.rec("ddrop %#x %s", uint64(p), r) }
func (h *fakeQHost) Watchdog(at sim.Time)                       { h.rec("watchdog %d", at) }
func (h *fakeQHost) WatchdogRange(at, slack sim.Time)           { h.rec("watchdog %d slack %d", at, slack) }
func (h *fakeQHost) CancelWatchdog()                            { h.rec("cancel watchdog") }
func (h *fakeQHost) ModTimer(at sim.Time)                       { h.rec("mod_timer %d", at) }
func (h *fakeQHost) DelTimer()                                  { h.rec("del_timer") }
func (h *fakeQHost) Lines(key uint64, n int)                    { h.rec("lines %#x %d", key, n) }
func (h *fakeQHost) ReadSibling(txq int)                        { h.rec("read sibling %d", txq) }
func (h *fakeQHost) TxqStates(buf []byte) []byte                { return buf }
func (h *fakeQHost) Duplicate(p skb.Handle)                     { h.rec("duplicate %#x", uint64(p)) }
func (h *fakeQHost) RandSeed() sim.Seed                         { return testSeed }
func (h *fakeQHost) WorkPrices() qdisc.Prices                   { return testPrices() }

// The qdisc must use the wrapper's context for these, never the host's.
func (h *fakeQHost) Work(qdisc.Work, int) { h.t.Error("qdisc priced work on the host's context") }
func (h *fakeQHost) Rand() uint32         { h.t.Error("qdisc drew from the host's context"); return 0 }

// scriptQdisc runs script for each data-path method.
type scriptQdisc struct {
	script func(ctx qdisc.Ctx)
	setup  qdisc.Setup
	calls  []string
}

func (q *scriptQdisc) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	q.setup = s
	return qdisc.Info{Limit: len(args)}, nil
}
func (q *scriptQdisc) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.calls = append(q.calls, fmt.Sprintf("enqueue %d", len(batch)))
	for i := range rc {
		rc[i] = qdisc.XmitCN
	}
	q.script(ctx)
}
func (q *scriptQdisc) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	q.calls = append(q.calls, fmt.Sprintf("dequeue %d", req.Max))
	q.script(ctx)
	return append(out, skb.Packet{Handle: 42})
}
func (q *scriptQdisc) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	q.calls = append(q.calls, "peek")
	q.script(ctx)
	return skb.Packet{Handle: 43}, true
}
func (q *scriptQdisc) Reset(ctx qdisc.Ctx) {
	q.calls = append(q.calls, "reset")
	q.script(ctx)
}
func (q *scriptQdisc) Stats() qdisc.Stats { return qdisc.Stats{Qlen: 7} }
func (q *scriptQdisc) Dump() string       { return "script" }

type changerQdisc struct{ scriptQdisc }

func (q *changerQdisc) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	return qdisc.Info{Limit: 99}, nil
}

var testSeed = sim.Seed{12345, 678}

// testPrices: enqueue 10, dequeue 13, hash 16, flow scan 19, tstamp 22,
// rand 25.
func testPrices() qdisc.Prices {
	var p qdisc.Prices
	for i := range p {
		p[i] = int64(10 + 3*i)
	}
	return p
}

func testSetup() qdisc.Setup { return qdisc.Setup{NumTxQ: 1} }

func TestLocalQdiscAppliesPostedOps(t *testing.T) {
	s := testSetup()
	const start = 1_000_000
	var host *fakeQHost
	script := func(ctx qdisc.Ctx) {
		if ctx == qdisc.Ctx(host) {
			t.Fatal("the qdisc got the host's context")
		}
		if ctx.Now() != start {
			t.Fatalf("qdisc clock %d at the call, want %d", ctx.Now(), start)
		}
		ctx.Work(qdisc.WorkEnqueue, 1) // 10
		ctx.Drop(0x11, skb.DropQdiscDrop)
		ctx.Work(qdisc.WorkHash, 3) // 3 x 16
		if ctx.Now() != start+58 {
			t.Fatalf("qdisc clock %d, want %d", ctx.Now(), start+58)
		}
		ctx.Watchdog(5_000_000)
		ctx.WatchdogRange(6_000_000, 10_000) // the slack crosses too
		ctx.Rand()                           // 25
		ctx.DequeueDrop(0x22, skb.DropQdiscOverlimit)
		ctx.DequeueDrop(0x23, skb.DropQueuePurge) // nothing spent in between
		ctx.Work(qdisc.WorkEnqueue, 1)            // trailing
		if len(host.events) != 0 || host.now != start {
			t.Fatalf("host saw %v at %d during the call: ops must wait for the call's end", host.events, host.now)
		}
	}
	want := []event{
		{start + 10, "drop 0x11 QDISC_DROP"},
		{start + 58, "watchdog 5000000 slack 0"},
		{start + 58, "watchdog 6000000 slack 10000"},
		{start + 83, "ddrop 0x22 QDISC_OVERLIMIT"},
		{start + 83, "ddrop 0x23 QUEUE_PURGE"},
	}
	const end = start + 93
	calls := map[string]func(l *LocalQdisc, h *fakeQHost){
		"enqueue": func(l *LocalQdisc, h *fakeQHost) {
			rc := make([]qdisc.Code, 2)
			l.Enqueue(h, make([]skb.Packet, 2), rc)
			if rc[0] != qdisc.XmitCN || rc[1] != qdisc.XmitCN {
				t.Errorf("rc %v", rc)
			}
		},
		"dequeue": func(l *LocalQdisc, h *fakeQHost) {
			out := l.Dequeue(h, qdisc.DequeueReq{Max: 8}, []skb.Packet{{Handle: 1}})
			if len(out) != 2 || out[1].Handle != 42 {
				t.Errorf("dequeue returned %+v", out)
			}
		},
		"peek": func(l *LocalQdisc, h *fakeQHost) {
			if p, ok := l.Peek(h); !ok || p.Handle != 43 {
				t.Errorf("peek returned %+v %v", p, ok)
			}
		},
		"reset": func(l *LocalQdisc, h *fakeQHost) { l.Reset(h) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			q := &scriptQdisc{script: script}
			l := WrapQdisc(q).(*LocalQdisc)
			if _, err := l.Init(&fakeQHost{t: t}, s, []string{"a", "b"}); err != nil {
				t.Fatal(err)
			}
			if q.setup != s {
				t.Error("Init did not pass the setup on")
			}
			for round := range 2 { // the second call starts afresh
				host = &fakeQHost{t: t, now: start}
				call(l, host)
				if !reflect.DeepEqual(host.events, want) {
					t.Fatalf("round %d: host saw\n%v\nwant\n%v", round, host.events, want)
				}
				if host.now != end {
					t.Fatalf("round %d: host clock %d after the call, want %d (trailing spend lost?)", round, host.now, end)
				}
			}
			if len(q.calls) != 2 {
				t.Fatalf("calls %v", q.calls)
			}
		})
	}
}

func TestLocalQdiscPassThrough(t *testing.T) {
	q := &scriptQdisc{script: func(qdisc.Ctx) {}}
	l := WrapQdisc(q)
	if WrapQdisc(l) != l {
		t.Fatal("WrapQdisc wrapped a wrapper")
	}
	if _, ok := l.(Wrapped); !ok {
		t.Fatal("LocalQdisc is not Wrapped")
	}
	if l.Stats().Qlen != 7 || l.Dump() != "script" {
		t.Fatal("Stats/Dump not passed through")
	}
	// Nothing posted, nothing spent: the host sees nothing.
	l.Init(&fakeQHost{t: t}, testSetup(), nil)
	h := &fakeQHost{t: t, now: 5}
	if _, err := l.(qdisc.Changer).Change(h, nil); !errors.Is(err, qdisc.ErrCannotChange) {
		t.Fatalf("Change on a non-Changer: %v", err)
	}
	c := WrapQdisc(&changerQdisc{})
	c.Init(&fakeQHost{t: t}, testSetup(), nil)
	if info, err := c.(qdisc.Changer).Change(h, nil); err != nil || info.Limit != 99 {
		t.Fatalf("Change on a Changer: %v %v", info, err)
	}
	l.(*LocalQdisc).Reset(h)
	if len(h.events) != 0 || h.now != 5 {
		t.Fatalf("empty call: %v at %d", h.events, h.now)
	}
}

func mustModelError(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		me, ok := r.(*sim.ModelError)
		if !ok {
			t.Fatalf("got %v (%T), want a *sim.ModelError", r, r)
		}
		if !strings.Contains(me.Msg, want) {
			t.Fatalf("error %q, want %q", me.Msg, want)
		}
	}()
	f()
}

func TestQdiscCtxWorkAndRand(t *testing.T) {
	prices := testPrices()
	x := NewQdiscCtx(testSeed, prices, false)
	x.Begin(100)
	var want int64 = 100
	for k := qdisc.Work(0); k < qdisc.NumWork; k++ {
		for _, n := range []int{0, 1, 5} {
			x.Work(k, n)
			want += prices[k] * int64(n)
			if int64(x.Now()) != want {
				t.Fatalf("Work(%d, %d): clock %d, want %d", k, n, x.Now(), want)
			}
		}
	}
	if ops, pending := x.Posted(); len(ops) != 0 || pending != want-100 {
		t.Fatalf("posted %v, pending %d", ops, pending)
	}
	mustModelError(t, "unknown work kind", func() { x.Work(qdisc.NumWork, 1) })
	mustModelError(t, "-1 units of work", func() { x.Work(qdisc.WorkHash, -1) })
	mustModelError(t, "no Timer(ctx) method", func() { x.ModTimer(5) })

	ref := sim.NewRand(testSeed)
	x.Begin(0)
	for i := range 50 {
		if got, w := x.Rand(), ref.Uint32(); got != w {
			t.Fatalf("draw %d: %d, want %d from sim.NewRand(CtxSeed)", i, got, w)
		}
		if int64(x.Now()) != int64(i+1)*prices[qdisc.WorkRand] {
			t.Fatalf("draw %d: clock %d, want the WorkRand price each", i, x.Now())
		}
	}
	// The stream carries on across calls and does not restart at Begin.
	x.Begin(0)
	if got, w := x.Rand(), ref.Uint32(); got != w {
		t.Fatalf("after Begin: %d, want %d", got, w)
	}
	// The wrapper draws the same stream, seeded from the setup.
	l := &LocalQdisc{Q: &scriptQdisc{script: func(ctx qdisc.Ctx) {
		ref := sim.NewRand(testSeed)
		a, b := ctx.Rand(), ctx.Rand()
		if a != ref.Uint32() || b != ref.Uint32() {
			t.Error("LocalQdisc's Rand is not sim.NewRand of the host's RandSeed")
		}
	}}}
	l.Init(&fakeQHost{t: t}, testSetup(), nil)
	h := &fakeQHost{t: t}
	l.Reset(h)
	if int64(h.now) != 2*prices[qdisc.WorkRand] {
		t.Fatalf("two draws spent %d on the host", h.now)
	}
}

// fakeDHost is the host's driver.Ctx: it records each operation and
// query at the host CPU time it happens.
type fakeDHost struct {
	t       *testing.T
	now     sim.Time
	cpu     int
	drvXoff map[int]bool
	stack   map[int]bool // BQL xoff
	bql     map[int]int  // bytes in flight
	limit   int
	qdisc   map[int]bool
	events  []event
	onSync  func()
}

func newFakeDHost(t *testing.T, now sim.Time) *fakeDHost {
	return &fakeDHost{t: t, now: now, cpu: 3, drvXoff: map[int]bool{}, stack: map[int]bool{}, bql: map[int]int{},
		limit: 3000, qdisc: map[int]bool{}}
}

func (h *fakeDHost) rec(format string, args ...any) {
	h.events = append(h.events, event{h.now, fmt.Sprintf(format, args...)})
}

func (h *fakeDHost) Now() sim.Time { return h.now }
func (h *fakeDHost) Spend(ns int64) {
	if ns < 0 {
		h.t.Errorf("host spent %d ns", ns)
	}
	h.now += sim.Time(ns)
}
func (h *fakeDHost) CPU() int { return h.cpu }
func (h *fakeDHost) SentQueue(q, bytes int) {
	h.rec("sent %d %d", q, bytes)
	h.bql[q] += bytes
	h.stack[q] = h.bql[q] >= h.limit
}
func (h *fakeDHost) SentQueueMore(q, bytes int, more bool) bool {
	h.rec("sentmore %d %d %v", q, bytes, more)
	h.bql[q] += bytes
	if more {
		return h.drvXoff[q]
	}
	h.stack[q] = h.bql[q] >= h.limit
	return true
}
func (h *fakeDHost) CompletedQueue(q, pkts, bytes int) {
	h.rec("completed %d %d %d", q, pkts, bytes)
	h.bql[q] -= bytes
	h.stack[q] = h.bql[q] >= h.limit
}
func (h *fakeDHost) StopQueue(q int)  { h.rec("stop %d", q); h.drvXoff[q] = true }
func (h *fakeDHost) WakeQueue(q int)  { h.rec("wake %d", q); h.drvXoff[q] = false }
func (h *fakeDHost) StartQueue(q int) { h.rec("start %d", q); h.drvXoff[q] = false }
func (h *fakeDHost) QueueStopped(q int) bool {
	return h.drvXoff[q]
}
func (h *fakeDHost) XmitStopped(q int) bool {
	h.rec("xmit_stopped? %d", q)
	return h.drvXoff[q] || h.stack[q]
}
func (h *fakeDHost) HasQdisc(q int) bool                 { h.rec("has_qdisc? %d", q); return h.qdisc[q] }
func (h *fakeDHost) Consume(p skb.Handle)                { h.rec("consume %#x", uint64(p)) }
func (h *fakeDHost) Drop(p skb.Handle, r skb.DropReason) { h.rec("drop %#x %s", uint64(p), r) }
func (h *fakeDHost) RaiseIRQ(v int, at sim.Time)         { h.rec("irq %d %d", v, at) }
func (h *fakeDHost) NapiScheduleLocal(v int)             { h.rec("napi %d", v) }
func (h *fakeDHost) NetifRx(p skb.Handle) bool           { h.rec("netif_rx %#x", uint64(p)); return p%2 == 0 }
func (h *fakeDHost) SyncPoint() {
	h.rec("sync")
	if h.onSync != nil {
		h.onSync()
	}
}

// scriptDriver runs xmit or poll.
type scriptDriver struct {
	xmit func(ctx driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode)
	poll func(ctx driver.Ctx, v, budget int) (int, bool)
}

func (d *scriptDriver) Init(s driver.Setup, args []string) (driver.Info, error) {
	return driver.Info{Vectors: s.NumTxQ}, nil
}
func (d *scriptDriver) Xmit(ctx driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
	return d.xmit(ctx, txq, batch)
}
func (d *scriptDriver) Poll(ctx driver.Ctx, v, budget int) (int, bool) { return d.poll(ctx, v, budget) }
func (d *scriptDriver) Stats() []driver.QueueStats                     { return []driver.QueueStats{{Queue: 9}} }
func (d *scriptDriver) SelectQueue(p skb.Packet, n int) (int, bool)    { return int(p.Hash) % n, true }

func newLocalDriver(t *testing.T, d *scriptDriver) *LocalDriver {
	t.Helper()
	l := WrapDriver(d).(*LocalDriver)
	if _, err := l.Init(driver.Setup{NumTxQ: 4}, nil); err != nil {
		t.Fatal(err)
	}
	return l
}

func checkEvents(t *testing.T, h *fakeDHost, want ...event) {
	t.Helper()
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(h.events, want) {
		t.Fatalf("host saw\n%v\nwant\n%v", h.events, want)
	}
}

func TestLocalDriverSentQueueMore(t *testing.T) {
	const start = 500
	h := newFakeDHost(t, start)
	h.drvXoff[1] = true
	l := newLocalDriver(t, &scriptDriver{xmit: func(ctx driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
		if ctx.CPU() != 3 || ctx.Now() != start {
			t.Fatalf("ctx cpu %d now %d", ctx.CPU(), ctx.Now())
		}
		ctx.Spend(4)
		if !ctx.SentQueueMore(1, 100, true) {
			t.Error("SentQueueMore(more) on a stopped queue: false, want its netif_tx_queue_stopped (true)")
		}
		ctx.Spend(2)
		if ctx.SentQueueMore(0, 200, true) {
			t.Error("SentQueueMore(more) on a running queue: true")
		}
		if !ctx.SentQueueMore(0, 300, false) {
			t.Error("SentQueueMore without more: false, want true (ring the doorbell)")
		}
		ctx.Spend(1)
		checkEvents(t, h) // posted, not applied yet
		return len(batch), driver.TxOK
	}})
	if sent, rc := l.Xmit(h, 0, make([]skb.Packet, 3)); sent != 3 || rc != driver.TxOK {
		t.Fatalf("xmit %d %#x", sent, rc)
	}
	checkEvents(t, h,
		event{start + 4, "sentmore 1 100 true"},
		event{start + 6, "sentmore 0 200 true"},
		event{start + 6, "sentmore 0 300 false"})
	if h.now != start+7 {
		t.Fatalf("host clock %d, want %d", h.now, start+7)
	}
}

func TestLocalDriverStopQueueIsImmediate(t *testing.T) {
	const start = 1000
	h := newFakeDHost(t, start)
	l := newLocalDriver(t, &scriptDriver{xmit: func(ctx driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
		ctx.Spend(5)
		ctx.SentQueue(txq, 1500)
		ctx.Spend(3)
		ctx.StopQueue(txq)
		// The host stopped the queue now, after the op posted before it.
		checkEvents(t, h, event{start + 5, "sent 2 1500"}, event{start + 8, "stop 2"})
		if !h.drvXoff[txq] || !ctx.QueueStopped(txq) {
			t.Fatal("StopQueue not applied at once")
		}
		if ctx.Now() != start+8 || h.now != start+8 {
			t.Fatalf("after the query: ctx %d host %d, want %d", ctx.Now(), h.now, start+8)
		}
		ctx.Spend(2)
		ctx.Consume(0x77)
		ctx.Spend(1)
		return 1, driver.TxOK
	}})
	l.Xmit(h, 2, make([]skb.Packet, 1))
	checkEvents(t, h, event{start + 5, "sent 2 1500"}, event{start + 8, "stop 2"}, event{start + 10, "consume 0x77"})
	if h.now != start+11 {
		t.Fatalf("host clock %d", h.now)
	}
}

func TestLocalDriverWakeSeenByQueueStopped(t *testing.T) {
	h := newFakeDHost(t, 0)
	h.drvXoff[2], h.drvXoff[3] = true, true
	l := newLocalDriver(t, &scriptDriver{poll: func(ctx driver.Ctx, v, budget int) (int, bool) {
		if !ctx.QueueStopped(2) {
			t.Fatal("queue 2 not stopped at the start")
		}
		ctx.Spend(10)
		ctx.WakeQueue(2)
		if ctx.QueueStopped(2) {
			t.Fatal("QueueStopped after the driver's own wake: true")
		}
		if !h.drvXoff[2] {
			t.Fatal("the wake was applied during the call")
		}
		if !ctx.QueueStopped(3) {
			t.Fatal("waking 2 woke 3")
		}
		// A query applies the wake; the view stays right after it.
		if ctx.HasQdisc(2) {
			t.Fatal("HasQdisc")
		}
		if h.drvXoff[2] || ctx.QueueStopped(2) {
			t.Fatal("after a query: queue 2 stopped")
		}
		ctx.StopQueue(2)
		if !ctx.QueueStopped(2) {
			t.Fatal("stopped again after the wake: QueueStopped false")
		}
		return 5, true
	}})
	if work, done := l.Poll(h, 1, 64); work != 5 || !done {
		t.Fatalf("poll %d %v", work, done)
	}
	checkEvents(t, h, event{10, "wake 2"}, event{10, "has_qdisc? 2"}, event{10, "stop 2"})
}

func TestLocalDriverXmitStoppedAppliesFirst(t *testing.T) {
	h := newFakeDHost(t, 100)
	h.limit = 3000
	l := newLocalDriver(t, &scriptDriver{xmit: func(ctx driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
		if ctx.XmitStopped(txq) {
			t.Fatal("stopped before anything was sent")
		}
		ctx.Spend(7)
		ctx.SentQueue(txq, 3000) // BQL limit reached: only the host knows
		ctx.Spend(2)
		if !ctx.XmitStopped(txq) {
			t.Fatal("XmitStopped did not see the SentQueue posted before it")
		}
		ctx.Spend(1)
		ctx.CompletedQueue(txq, 1, 3000)
		ctx.RaiseIRQ(1, 12345)
		ctx.NapiScheduleLocal(2)
		ctx.Drop(0x5, skb.DropTxDevice)
		ctx.(driver.SyncPoint).SyncPoint()
		ctx.Spend(3)
		return 0, driver.TxBusy
	}})
	if sent, rc := l.Xmit(h, 1, make([]skb.Packet, 1)); sent != 0 || rc != driver.TxBusy {
		t.Fatalf("xmit %d %#x", sent, rc)
	}
	checkEvents(t, h,
		event{100, "xmit_stopped? 1"},
		event{107, "sent 1 3000"},
		event{109, "xmit_stopped? 1"},
		event{110, "completed 1 1 3000"},
		event{110, "irq 1 12345"},
		event{110, "napi 2"},
		event{110, "drop 0x5 TX_DEVICE"},
		event{110, "sync"})
	if h.now != 113 {
		t.Fatalf("host clock %d", h.now)
	}
}

// A query lets other CPUs run; one may call the same driver. Each call
// keeps its own context.
func TestLocalDriverNestedCalls(t *testing.T) {
	h := newFakeDHost(t, 0)
	var l *LocalDriver
	depth := 0
	l = newLocalDriver(t, &scriptDriver{xmit: func(ctx driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
		depth++
		me := depth
		ctx.Spend(int64(10 * me))
		ctx.SentQueue(txq, 100*me)
		if me == 1 {
			ctx.WakeQueue(0)
			ctx.(driver.SyncPoint).SyncPoint() // runs the inner call
		}
		ctx.Spend(1)
		ctx.Consume(skb.Handle(me))
		return 1, driver.TxOK
	}})
	h.onSync = func() { l.Xmit(h, 3, make([]skb.Packet, 1)) }
	l.Xmit(h, 1, make([]skb.Packet, 1))
	checkEvents(t, h,
		event{10, "sent 1 100"},
		event{10, "wake 0"},
		event{10, "sync"},
		event{30, "sent 3 200"},
		event{31, "consume 0x2"},
		event{32, "consume 0x1"})
}

func TestLocalDriverPassThrough(t *testing.T) {
	d := &scriptDriver{poll: func(ctx driver.Ctx, v, budget int) (int, bool) {
		mustModelError(t, "txq 4 out of range", func() { ctx.SentQueue(4, 1) })
		mustModelError(t, "txq -1 out of range", func() { ctx.QueueStopped(-1) })
		mustModelError(t, "negative time", func() { ctx.Spend(-5) })
		return budget, false
	}}
	l := newLocalDriver(t, d)
	if WrapDriver(l) != driver.Driver(l) {
		t.Fatal("WrapDriver wrapped a wrapper")
	}
	if l.Selector() == nil || l.Stats()[0].Queue != 9 {
		t.Fatal("Selector/Stats not passed through")
	}
	if w, done := l.Poll(newFakeDHost(t, 0), 0, 17); w != 17 || done {
		t.Fatal("poll result")
	}
	type plain struct{ driver.Driver }
	if (&LocalDriver{D: plain{d}}).Selector() != nil {
		t.Fatal("a driver without ndo_select_queue has a Selector")
	}
}

func TestApplyAndAnswerRejectForeignOps(t *testing.T) {
	mustModelError(t, "not a qdisc operation", func() {
		ApplyQdisc(&fakeQHost{t: t}, []Op{{Kind: OpWakeQueue}}, 0)
	})
	mustModelError(t, "not a driver operation", func() {
		ApplyDriver(newFakeDHost(t, 0), []Op{{Kind: OpQdiscWatchdog}}, 0)
	})
	mustModelError(t, "does not exist", func() { Answer(newFakeDHost(t, 0), 0, 0) })
	mustModelError(t, "does not exist", func() { Answer(newFakeDHost(t, 0), numQueries, 0) })
}

// StartQueue (netif_tx_start_queue) travels as its own op: the driver's
// view sees the queue running at once, the host applies a start, not a
// wake (which would reschedule the qdisc).
func TestLocalDriverStartQueue(t *testing.T) {
	h := newFakeDHost(t, 0)
	h.drvXoff[2] = true
	l := newLocalDriver(t, &scriptDriver{poll: func(ctx driver.Ctx, v, budget int) (int, bool) {
		ctx.Spend(10)
		ctx.StartQueue(2)
		if ctx.QueueStopped(2) {
			t.Fatal("QueueStopped after the driver's own start: true")
		}
		return 1, true
	}})
	if work, done := l.Poll(h, 1, 64); work != 1 || !done {
		t.Fatalf("poll %d %v", work, done)
	}
	checkEvents(t, h, event{10, "start 2"})
	if h.drvXoff[2] {
		t.Fatal("queue 2 still stopped")
	}
}

// A plugin's posted Lines reports are checked against qdisc.MaxLines,
// as its own Ctx checks them before posting.
func TestCheckQdiscOpsLines(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		fail bool
	}{{1, false}, {qdisc.MaxLines, false}, {0, true}, {qdisc.MaxLines + 1, true}, {1 << 40, true}} {
		err := CheckQdiscOps([]Op{{Kind: OpQdiscLines, A: 7, B: tc.n}}, nil)
		if (err != nil) != tc.fail {
			t.Errorf("%d lines: %v, want failure %v", tc.n, err, tc.fail)
		}
	}
}

// A plugin's posted ReadSibling reports name a queue index (u16).
func TestCheckQdiscOpsReadSibling(t *testing.T) {
	for _, tc := range []struct {
		txq  int64
		fail bool
	}{{0, false}, {0xffff, false}, {-1, true}, {0x10000, true}} {
		err := CheckQdiscOps([]Op{{Kind: OpQdiscReadSibling, A: tc.txq}}, nil)
		if (err != nil) != tc.fail {
			t.Errorf("queue %d: %v, want failure %v", tc.txq, err, tc.fail)
		}
	}
}
