package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// htTr is a hostTransport that answers with scripted plugin frames.
type htTr struct {
	sent    [][]byte
	replies [][]byte
	// sendErrAt fails the Send with this index (0: never).
	sendErrAt int
	closed    bool
}

func (t *htTr) Send(b []byte) error {
	if t.sendErrAt > 0 && len(t.sent)+1 == t.sendErrAt {
		return errors.New("broken pipe")
	}
	t.sent = append(t.sent, bytes.Clone(b))
	return nil
}

func (t *htTr) Recv(timeout time.Duration) ([]byte, error) {
	if len(t.replies) == 0 {
		return nil, fmt.Errorf("no answer within %v: the plugin hangs", timeout)
	}
	b := t.replies[0]
	t.replies = t.replies[1:]
	return b, nil
}

func (t *htTr) Close() error { t.closed = true; return nil }

// Frames, built as server.go builds them.

func htFrame(typ byte, call uint32) *wire.Enc {
	e := &wire.Enc{}
	e.U8(typ)
	e.U32(call)
	return e
}

// htOK is a StatusOK reply with ops, the trailing spend and payload.
func htOK(call uint32, ops []wire.Op, trailing int64, payload func(e *wire.Enc)) []byte {
	e := htFrame(wire.FrameReply, call)
	e.U8(wire.StatusOK)
	e.Ops(ops, trailing)
	if payload != nil {
		payload(e)
	}
	return e.B
}

// htStatus is a reply with a status other than OK and its message.
func htStatus(call uint32, status byte, msg string) []byte {
	e := htFrame(wire.FrameReply, call)
	e.U8(status)
	e.Str(msg)
	return e.B
}

func htUpcall(call uint32, ops []wire.Op, trailing int64, q wire.Query, arg int64) []byte {
	e := htFrame(wire.FrameUpcall, call)
	e.Ops(ops, trailing)
	e.U8(byte(q))
	e.I64(arg)
	return e.B
}

// htEnq is an enqueue reply: n results, then the rcs.
func htEnq(call uint32, ops []wire.Op, trailing int64, n uint32, rcs ...byte) []byte {
	return htOK(call, ops, trailing, func(e *wire.Enc) {
		e.U32(n)
		for _, c := range rcs {
			e.U8(c)
		}
	})
}

type htPkt struct {
	h          skb.Handle
	ecn, dscp  byte
	prio, mark uint32
}

// htDeq is a dequeue reply returning pkts.
func htDeq(call uint32, ops []wire.Op, trailing int64, pkts ...htPkt) []byte {
	return htOK(call, ops, trailing, func(e *wire.Enc) {
		e.U32(uint32(len(pkts)))
		for _, p := range pkts {
			e.DequeuedPacket(&skb.Packet{Handle: p.h, ECN: p.ecn, DSCP: p.dscp, Priority: p.prio, Mark: p.mark})
		}
	})
}

func htXmit(call uint32, ops []wire.Op, trailing int64, sent uint32, rc driver.TxCode) []byte {
	return htOK(call, ops, trailing, func(e *wire.Enc) {
		e.U32(sent)
		e.U8(byte(rc))
	})
}

func htDrop(h skb.Handle, spend int64) wire.Op {
	return wire.Op{Kind: wire.OpQdiscDrop, Spend: spend, H: h, Reason: skb.DropQdiscDrop}
}

// htEvent is one operation applied to a fake host context, at the
// host's time.
type htEvent struct {
	At   sim.Time
	What string
}

// htQCtx is the host's per-call qdisc context (qdisc.Ctx, QdiscHost).
type htQCtx struct {
	now    sim.Time
	events []htEvent
}

func (x *htQCtx) rec(f string, a ...any) {
	x.events = append(x.events, htEvent{x.now, fmt.Sprintf(f, a...)})
}
func (x *htQCtx) Now() sim.Time                              { return x.now }
func (x *htQCtx) Spend(ns int64)                             { x.now += sim.Time(ns) }
func (x *htQCtx) Work(k qdisc.Work, n int)                   { x.rec("work %d %d", k, n) }
func (x *htQCtx) Rand() uint32                               { x.rec("rand"); return 4 }
func (x *htQCtx) Drop(h skb.Handle, r skb.DropReason)        { x.rec("drop %#x %s", uint64(h), r) }
func (x *htQCtx) DequeueDrop(h skb.Handle, r skb.DropReason) { x.rec("ddrop %#x %s", uint64(h), r) }
func (x *htQCtx) Watchdog(at sim.Time)                       { x.rec("watchdog %d", at) }
func (x *htQCtx) WatchdogRange(at, slack sim.Time)           { x.rec("watchdog %d slack %d", at, slack) }
func (x *htQCtx) CancelWatchdog()                            { x.rec("cancel watchdog") }
func (x *htQCtx) ModTimer(at sim.Time)                       { x.rec("mod_timer %d", at) }
func (x *htQCtx) DelTimer()                                  { x.rec("del_timer") }
func (x *htQCtx) Lines(key uint64, n int)                    { x.rec("lines %#x %d", key, n) }
func (x *htQCtx) ReadSibling(txq int)                        { x.rec("read sibling %d", txq) }
func (x *htQCtx) TxqStates(buf []byte) []byte                { return buf }
func (x *htQCtx) Duplicate(h skb.Handle)                     { x.rec("duplicate %#x", uint64(h)) }
func (x *htQCtx) RandSeed() sim.Seed                         { return sim.Seed{7, 7} }
func (x *htQCtx) WorkPrices() qdisc.Prices                   { return qdisc.WorkPrices(sim.DefaultCosts()) }

var _ qdisc.Ctx = (*htQCtx)(nil)
var _ wire.QdiscHost = (*htQCtx)(nil)

// htDCtx is the host's driver context.
type htDCtx struct {
	now     sim.Time
	cpu     int
	drvXoff map[int]bool
	events  []htEvent
}

func newHTDCtx(now sim.Time) *htDCtx { return &htDCtx{now: now, cpu: 1, drvXoff: map[int]bool{}} }

func (x *htDCtx) rec(f string, a ...any) {
	x.events = append(x.events, htEvent{x.now, fmt.Sprintf(f, a...)})
}
func (x *htDCtx) Now() sim.Time      { return x.now }
func (x *htDCtx) Spend(ns int64)     { x.now += sim.Time(ns) }
func (x *htDCtx) CPU() int           { return x.cpu }
func (x *htDCtx) SentQueue(q, b int) { x.rec("sent %d %d", q, b) }
func (x *htDCtx) SentQueueMore(q, b int, m bool) bool {
	x.rec("sentmore %d %d %v", q, b, m)
	return x.drvXoff[q]
}
func (x *htDCtx) CompletedQueue(q, p, b int)          { x.rec("completed %d %d %d", q, p, b) }
func (x *htDCtx) StopQueue(q int)                     { x.rec("stop %d", q); x.drvXoff[q] = true }
func (x *htDCtx) WakeQueue(q int)                     { x.rec("wake %d", q); x.drvXoff[q] = false }
func (x *htDCtx) StartQueue(q int)                    { x.rec("start %d", q); x.drvXoff[q] = false }
func (x *htDCtx) QueueStopped(q int) bool             { return x.drvXoff[q] }
func (x *htDCtx) XmitStopped(q int) bool              { x.rec("xmit_stopped? %d", q); return x.drvXoff[q] }
func (x *htDCtx) HasQdisc(q int) bool                 { x.rec("has_qdisc? %d", q); return true }
func (x *htDCtx) Consume(h skb.Handle)                { x.rec("consume %#x", uint64(h)) }
func (x *htDCtx) Drop(h skb.Handle, r skb.DropReason) { x.rec("drop %#x %s", uint64(h), r) }
func (x *htDCtx) RaiseIRQ(v int, at sim.Time)         { x.rec("irq %d %d", v, at) }
func (x *htDCtx) NapiScheduleLocal(v int)             { x.rec("napi %d", v) }
func (x *htDCtx) NetifRx(h skb.Handle) bool           { x.rec("netif_rx %#x", uint64(h)); return true }

const htName = "fake (test)"

func htConn(replies ...[]byte) (*conn, *htTr, *int) {
	tr := &htTr{replies: replies}
	kills := new(int)
	c := &conn{name: htName, tr: tr, timeout: time.Second, kill: func() { *kills++ }}
	return c, tr, kills
}

func htQdisc(replies ...[]byte) (*Qdisc, *htTr, *int) {
	c, tr, kills := htConn(replies...)
	return &Qdisc{c: c, inst: 1, kind: "fake", hold: newHoldings()}, tr, kills
}

func htDriver(replies ...[]byte) (*Driver, *htTr, *int) {
	c, tr, kills := htConn(replies...)
	return &Driver{c: c, inst: 2, name: "fake", numTxQ: 2, vectors: 2, hold: newHoldings()}, tr, kills
}

// htAbort runs f and returns the *sim.ModelError it panicked with (nil
// if it returned). Any other panic fails the test.
func htAbort(t *testing.T, f func()) (me *sim.ModelError) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r != nil {
			var ok bool
			if me, ok = r.(*sim.ModelError); !ok {
				t.Fatalf("panic %v (%T), want a *sim.ModelError", r, r)
			}
		}
	}()
	f()
	return nil
}

func htBatch(hs ...skb.Handle) []skb.Packet {
	var b []skb.Packet
	for i, h := range hs {
		b = append(b, skb.Packet{Handle: h, Len: uint32(100 * (i + 1)), Sock: -1, Hash: uint32(h) * 7, GSOSegs: 1,
			Tstamp: -5, Priority: 3})
	}
	return b
}

// htHolds checks, through holdings.out (so not relying on how the set
// is kept), that h holds each of held and none of notHeld. It forgets
// what it finds held: call it last.
func htHolds(t *testing.T, h *holdings, held, notHeld []skb.Handle) {
	t.Helper()
	for _, p := range notHeld {
		if err := h.out(p, "probed"); err == nil {
			t.Errorf("packet %#x is still held", uint64(p))
		}
	}
	for _, p := range held {
		if err := h.out(p, "probed"); err != nil {
			t.Errorf("packet %#x not held: %v", uint64(p), err)
		}
	}
}

// htCheckDead checks c died of an error naming the plugin, was killed
// once, and answers later calls without sending anything.
func htCheckDead(t *testing.T, c *conn, tr *htTr, kills int, msg string, later func()) {
	t.Helper()
	var pe *Error
	if !errors.As(c.dead, &pe) || pe.Plugin != htName {
		t.Fatalf("conn.dead = %v, want a *plugin.Error of %s", c.dead, htName)
	}
	if c.dead.Error() != msg {
		t.Fatalf("conn.dead %q, aborted with %q", c.dead, msg)
	}
	if kills != 1 {
		t.Fatalf("plugin killed %d times, want once", kills)
	}
	n := len(tr.sent)
	me := htAbort(t, later)
	if me == nil || me.Msg != msg {
		t.Fatalf("a later call on the dead plugin: %v, want the same error %q", me, msg)
	}
	if len(tr.sent) != n {
		t.Fatalf("a later call on the dead plugin sent %d frames", len(tr.sent)-n)
	}
}

// htCase is one scripted exchange; all but the last frame's calls
// succeed, the last one must abort the run with want.
type htCase struct {
	name   string
	frames [][]byte
	calls  int    // calls made (default 1)
	want   string // in the error message
	skip   string // a known bug: why the case is skipped
	setup  func(tr *htTr)
}

func (c htCase) run(t *testing.T, what string, mk func(frames ...[]byte) (*conn, *htTr, *int, func(call int), func() []htEvent)) {
	t.Run(c.name, func(t *testing.T) {
		if c.skip != "" {
			t.Skip(c.skip)
		}
		cn, tr, kills, call, events := mk(c.frames...)
		if c.setup != nil {
			c.setup(tr)
		}
		calls := max(c.calls, 1)
		for i := range calls - 1 {
			if me := htAbort(t, func() { call(i) }); me != nil {
				t.Fatalf("call %d aborted: %s", i, me.Msg)
			}
		}
		before := len(events())
		me := htAbort(t, func() { call(calls - 1) })
		if me == nil {
			t.Fatalf("garbage accepted (frames %x)", c.frames)
		}
		prefix := "plugin " + htName + ": " + what + ": "
		if !strings.HasPrefix(me.Msg, prefix) || !strings.Contains(me.Msg, c.want) {
			t.Fatalf("error %q, want %q...%q", me.Msg, prefix, c.want)
		}
		if what != "driver fake xmit" && len(events()) != before {
			t.Fatalf("the failed call applied %v", events()[before:])
		}
		htCheckDead(t, cn, tr, *kills, me.Msg, func() { call(calls - 1) })
	})
}

func TestQdiscEnqueue(t *testing.T) {
	q, tr, kills := htQdisc(
		htEnq(0, []wire.Op{htDrop(0x11, 100), {Kind: wire.OpQdiscWatchdog, A: 5000}}, 50, 2, 0, 1),
		htEnq(1, nil, 0, 1, 2),
	)
	ctx := &htQCtx{now: 1000}
	batch := htBatch(0x10, 0x11)
	rc := []qdisc.Code{9, 9}
	if me := htAbort(t, func() { q.Enqueue(ctx, batch, rc) }); me != nil {
		t.Fatal(me)
	}
	if !reflect.DeepEqual(rc, []qdisc.Code{qdisc.XmitSuccess, qdisc.XmitDrop}) {
		t.Fatalf("rc %v", rc)
	}
	want := []htEvent{{1100, "drop 0x11 QDISC_DROP"}, {1100, "watchdog 5000 slack 0"}}
	if !reflect.DeepEqual(ctx.events, want) || ctx.now != 1150 {
		t.Fatalf("applied %v, now %d; want %v, 1150", ctx.events, ctx.now, want)
	}
	// The call frame.
	d := wire.Dec{B: tr.sent[0]}
	if typ, call, inst, m, now := d.U8(), d.U32(), d.U32(), wire.Method(d.U8()), d.I64(); typ != wire.FrameCall ||
		call != 0 || inst != 1 || m != wire.MQEnqueue || now != 1000 {
		t.Fatalf("call frame %d %d %d %v %d", typ, call, inst, m, now)
	}
	if got, segs, hdrs := d.Packets(nil), d.Segs(nil), d.TCPHeaders(nil); d.End() != nil || !reflect.DeepEqual(got, batch) ||
		len(segs) != 0 || len(hdrs) != 0 {
		t.Fatalf("call frame packets %+v, segment places %v, TCP headers %v (%v)", got, segs, hdrs, d.Err)
	}
	// The next call has the next id.
	rc = rc[:1]
	if me := htAbort(t, func() { q.Enqueue(ctx, htBatch(0x12), rc) }); me != nil {
		t.Fatal(me)
	}
	if rc[0] != qdisc.XmitCN || tr.sent[1][1] != 1 || *kills != 0 || q.c.dead != nil {
		t.Fatalf("second call: rc %v id %d", rc, tr.sent[1][1])
	}
	htHolds(t, &q.hold, []skb.Handle{0x10, 0x12}, []skb.Handle{0x11, 0x13})
}

func TestQdiscEnqueueGarbage(t *testing.T) {
	good := htEnq(0, []wire.Op{htDrop(0x11, 100)}, 50, 2, 0, 1)
	cases := []htCase{
		{name: "reply for another call", frames: [][]byte{htEnq(1, nil, 0, 2, 0, 0)}, want: "reply to call 1 while call 0 waits"},
		{name: "reply for an earlier call", calls: 2,
			frames: [][]byte{htEnq(0, nil, 0, 2, 0, 0), htEnq(0, nil, 0, 2, 0, 0)}, want: "reply to call 0 while call 1 waits"},
		{name: "unknown frame type", frames: [][]byte{append([]byte{9}, good[1:]...)}, want: "frame type 9"},
		{name: "a call frame", frames: [][]byte{append([]byte{wire.FrameCall}, good[1:]...)}, want: "frame type 1"},
		{name: "an answer frame", frames: [][]byte{append([]byte{wire.FrameAnswer}, good[1:]...)}, want: "frame type 2"},
		{name: "too few results", frames: [][]byte{htEnq(0, nil, 0, 1, 0)}, want: "1 results for a batch of 2"},
		{name: "too many results", frames: [][]byte{htEnq(0, nil, 0, 3, 0, 0, 0)}, want: "3 results for a batch of 2"},
		{name: "results count huge", frames: [][]byte{htEnq(0, nil, 0, 1<<32-1, 0, 0)}, want: "4294967295 results"},
		{name: "rc 9", frames: [][]byte{htEnq(0, nil, 0, 2, 9, 0)}, want: "result 9 for packet 0 is no NET_XMIT code"},
		{name: "rc 3 for the second", frames: [][]byte{htEnq(0, nil, 0, 2, 0, 3)}, want: "result 3 for packet 1"},
		{name: "drop of a packet never handed in", frames: [][]byte{htEnq(0, []wire.Op{htDrop(0x99, 1)}, 0, 2, 0, 1)},
			want: "dropped packet 0x99, which it was never handed"},
		{name: "drop twice", frames: [][]byte{htEnq(0, []wire.Op{htDrop(0x10, 1), htDrop(0x10, 1)}, 0, 2, 1, 0)},
			want: "dropped packet 0x10 twice"},
		{name: "dequeue drop twice", frames: [][]byte{htEnq(0, []wire.Op{htDrop(0x10, 1),
			{Kind: wire.OpQdiscDequeueDrop, H: 0x10, Reason: skb.DropQdiscDrop}}, 0, 2, 1, 0)}, want: "dropped packet 0x10 twice"},
		{name: "a drop reason neither the kernel's nor declared", frames: [][]byte{htEnq(0, []wire.Op{{Kind: wire.OpQdiscDrop,
			H: 0x10, Reason: "MADE_UP"}}, 0, 2, 1, 0)}, want: `drop reason "MADE_UP" is not a kernel SKB_DROP_REASON_* name`},
		{name: "drop of a packet of an earlier call", calls: 2,
			frames: [][]byte{htEnq(0, []wire.Op{htDrop(0x10, 1)}, 0, 2, 1, 0),
				htEnq(1, []wire.Op{htDrop(0x10, 1)}, 0, 2, 0, 0)}, want: "dropped packet 0x10 twice"},
		{name: "unknown status", frames: [][]byte{htStatus(0, 8, "what")}, want: "reply status 8"},
		{name: "status syntax", frames: [][]byte{htStatus(0, wire.StatusSyntax, "bad handle")}, want: "bad handle"},
		{name: "status error", frames: [][]byte{htStatus(0, wire.StatusError, "boom")}, want: "boom"},
		{name: "status unknown", frames: [][]byte{htStatus(0, wire.StatusUnknown, "no instance 1")}, want: "no instance 1"},
		{name: "status invalid", frames: [][]byte{htStatus(0, wire.StatusInvalid, "bad limit")}, want: "bad limit"},
		{name: "status no change", frames: [][]byte{htStatus(0, wire.StatusNoChange, "")}, want: "Change operation not supported"},
		{name: "upcall during a qdisc call", frames: [][]byte{htUpcall(0, nil, 0, wire.QueryXmitStopped, 0)},
			want: "asked the host a query during a call that may make none"},
		{name: "unknown op kind", frames: [][]byte{htEnq(0, []wire.Op{{Kind: 77}}, 0, 2, 0, 0)}, want: "unknown op kind 77"},
		{name: "negative spend", frames: [][]byte{htEnq(0, []wire.Op{htDrop(0x10, -5)}, 0, 2, 1, 0)}, want: "negative spend -5"},
		{name: "negative trailing spend", frames: [][]byte{htEnq(0, nil, -1, 2, 0, 0)}, want: "negative spend -1"},
		{name: "leftover bytes", frames: [][]byte{append(bytes.Clone(good), 0)}, want: "1 bytes left over"},
		{name: "no reply (hang)", frames: nil, want: "no answer within 1s"},
		{name: "send fails", frames: [][]byte{good}, want: "broken pipe", setup: func(tr *htTr) { tr.sendErrAt = 1 }},
		// A qdisc that posts a driver operation is garbage too; see the
		// report in the test's skip reason.
		{name: "driver op from a qdisc", frames: [][]byte{htEnq(0, []wire.Op{{Kind: wire.OpWakeQueue, A: 0}}, 0, 2, 0, 0)},
			want: "not a qdisc operation"},
		{name: "consume from a qdisc", frames: [][]byte{htEnq(0, []wire.Op{{Kind: wire.OpConsume, H: 0x10}}, 0, 2, 0, 0)},
			want: "not a qdisc operation"},
	}
	for n := range len(good) {
		want := "malformed frame"
		cases = append(cases, htCase{name: fmt.Sprintf("truncated to %d of %d", n, len(good)),
			frames: [][]byte{good[:n:n]}, want: want})
	}
	for _, c := range cases {
		c.run(t, "qdisc fake enqueue", func(frames ...[]byte) (*conn, *htTr, *int, func(int), func() []htEvent) {
			q, tr, kills := htQdisc(frames...)
			ctx := &htQCtx{now: 1000}
			call := func(i int) {
				rc := make([]qdisc.Code, 2)
				q.Enqueue(ctx, htBatch(skb.Handle(0x10+2*i), skb.Handle(0x11+2*i)), rc)
			}
			return q.c, tr, kills, call, func() []htEvent { return ctx.events }
		})
	}
}

func TestQdiscDequeue(t *testing.T) {
	q, tr, kills := htQdisc(
		htDeq(0, []wire.Op{{Kind: wire.OpQdiscDequeueDrop, Spend: 20, H: 0x11, Reason: skb.DropQdiscCongested}}, 5,
			htPkt{h: 0x10, ecn: 3, dscp: 46, prio: 6, mark: 0x2a}),
		htDeq(1, nil, 0),
		htDeq(2, nil, 0, htPkt{h: 0x12}), // Max 0 still allows one (dequeue_skb's first)
	)
	for _, h := range []skb.Handle{0x10, 0x11, 0x12} {
		q.hold.in(h)
	}
	ctx := &htQCtx{now: 7000}
	var out []skb.Packet
	if me := htAbort(t, func() {
		out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 2, Bytes: 3000, SameQueue: true}, []skb.Packet{{Handle: 1}})
	}); me != nil {
		t.Fatal(me)
	}
	if !reflect.DeepEqual(out, []skb.Packet{{Handle: 1}, {Handle: 0x10, ECN: 3, DSCP: 46, Priority: 6, Mark: 0x2a}}) {
		t.Fatalf("out %+v", out)
	}
	want := []htEvent{{7020, "ddrop 0x11 QDISC_CONGESTED"}}
	if !reflect.DeepEqual(ctx.events, want) || ctx.now != 7025 {
		t.Fatalf("applied %v now %d", ctx.events, ctx.now)
	}
	d := wire.Dec{B: tr.sent[0][10:]}
	if now, mx, b, same, txq := d.I64(), d.U32(), d.I64(), d.Bool(), d.Bytes(); d.End() != nil || now != 7000 || mx != 2 || b != 3000 || !same || len(txq) != 0 {
		t.Fatalf("call frame: %d %d %d %v %v (%v)", now, mx, b, same, txq, d.Err)
	}
	htHolds(t, &q.hold, nil, []skb.Handle{0x10, 0x11})
	// Nothing to dequeue.
	if me := htAbort(t, func() { out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 4}, out[:0]) }); me != nil || len(out) != 0 {
		t.Fatal(me, out)
	}
	if me := htAbort(t, func() { out = q.Dequeue(ctx, qdisc.DequeueReq{}, out[:0]) }); me != nil || len(out) != 1 {
		t.Fatal(me, out)
	}
	if *kills != 0 {
		t.Fatal("killed")
	}
	htHolds(t, &q.hold, nil, []skb.Handle{0x10, 0x11, 0x12})
}

func TestQdiscDequeueGarbage(t *testing.T) {
	ddrop := func(h skb.Handle) wire.Op {
		return wire.Op{Kind: wire.OpQdiscDequeueDrop, H: h, Reason: skb.DropQdiscDrop}
	}
	cases := []htCase{
		{name: "more than max", frames: [][]byte{htDeq(0, nil, 0, htPkt{h: 0x10}, htPkt{h: 0x11}, htPkt{h: 0x12})},
			want: "returned 3 packets for a dequeue of at most 2"},
		{name: "count huge", frames: [][]byte{htOK(0, nil, 0, func(e *wire.Enc) { e.U32(1<<32 - 1) })},
			want: "returned 4294967295 packets"},
		{name: "a handle never handed in", frames: [][]byte{htDeq(0, nil, 0, htPkt{h: 0x99})},
			want: "dequeued packet 0x99, which it was never handed"},
		{name: "a handle twice", frames: [][]byte{htDeq(0, nil, 0, htPkt{h: 0x10}, htPkt{h: 0x10})},
			want: "dequeued packet 0x10 twice"},
		{name: "a handle dropped and dequeued", frames: [][]byte{htDeq(0, []wire.Op{ddrop(0x11)}, 0, htPkt{h: 0x11})},
			want: "dequeued packet 0x11 twice"},
		{name: "a handle dequeued before", calls: 2,
			frames: [][]byte{htDeq(0, nil, 0, htPkt{h: 0x10}), htDeq(1, nil, 0, htPkt{h: 0x10})},
			want:   "dequeued packet 0x10 twice"},
		{name: "drop of a packet never handed in", frames: [][]byte{htDeq(0, []wire.Op{ddrop(0x42)}, 0)},
			want: "dropped packet 0x42, which it was never handed"},
		{name: "ECN 4", frames: [][]byte{htDeq(0, nil, 0, htPkt{h: 0x10, ecn: 4})}, want: "packet 0x10 with ECN bits 4"},
		{name: "DSCP 64", frames: [][]byte{htDeq(0, nil, 0, htPkt{h: 0x10, dscp: 64})}, want: "packet 0x10 with ECN bits 0 and DSCP 64"},
		{name: "count past the end", frames: [][]byte{htOK(0, nil, 0, func(e *wire.Enc) { e.U32(2); e.U64(0x10); e.U8(0) })},
			want: "malformed frame"},
		{name: "status error", frames: [][]byte{htStatus(0, wire.StatusError, "boom")}, want: "boom"},
		{name: "reply for another call", frames: [][]byte{htDeq(3, nil, 0)}, want: "reply to call 3 while call 0 waits"},
		{name: "upcall during a qdisc call", frames: [][]byte{htUpcall(0, nil, 0, wire.QuerySyncPoint, 0)},
			want: "query during a call that may make none"},
	}
	for _, c := range cases {
		c.run(t, "qdisc fake dequeue", func(frames ...[]byte) (*conn, *htTr, *int, func(int), func() []htEvent) {
			q, tr, kills := htQdisc(frames...)
			for _, h := range []skb.Handle{0x10, 0x11, 0x12} {
				q.hold.in(h)
			}
			ctx := &htQCtx{now: 1000}
			call := func(int) { q.Dequeue(ctx, qdisc.DequeueReq{Max: 2}, nil) }
			return q.c, tr, kills, call, func() []htEvent { return ctx.events }
		})
	}
}

func TestQdiscPeekResetDead(t *testing.T) {
	peek := func(call uint32, ok bool, h skb.Handle) []byte {
		return htOK(call, nil, 3, func(e *wire.Enc) {
			e.Bool(ok)
			p := skb.Packet{Handle: h, Len: 99}
			e.Packet(&p)
		})
	}
	q, _, _ := htQdisc(peek(0, true, 0x10), peek(1, false, 0), htOK(2, []wire.Op{htDrop(0x10, 4)}, 1, nil))
	q.hold.in(0x10)
	ctx := &htQCtx{}
	var p skb.Packet
	var ok bool
	if me := htAbort(t, func() { p, ok = q.Peek(ctx) }); me != nil || !ok || p.Handle != 0x10 || p.Len != 99 {
		t.Fatal(me, p, ok)
	}
	if me := htAbort(t, func() { p, ok = q.Peek(ctx) }); me != nil || ok {
		t.Fatal(me, p, ok)
	}
	if me := htAbort(t, func() { q.Reset(ctx) }); me != nil || ctx.now != 11 {
		t.Fatal(me, ctx.now)
	}
	htHolds(t, &q.hold, nil, []skb.Handle{0x10})
	cases := []htCase{
		{name: "peek of a packet not held", frames: [][]byte{peek(0, true, 0x99)}, want: "peeked packet 0x99 it does not hold"},
		{name: "peek bool 2", frames: [][]byte{htOK(0, nil, 0, func(e *wire.Enc) {
			e.U8(2)
			e.Packet(&skb.Packet{Handle: 0x10})
		})}, want: "bool not 0 or 1"},
		{name: "peek without packet", frames: [][]byte{htOK(0, nil, 0, func(e *wire.Enc) { e.Bool(false) })},
			want: "short packet"},
	}
	for _, c := range cases {
		c.run(t, "qdisc fake peek", func(frames ...[]byte) (*conn, *htTr, *int, func(int), func() []htEvent) {
			q, tr, kills := htQdisc(frames...)
			q.hold.in(0x10)
			ctx := &htQCtx{}
			// Peek applies the ops before the holding check; here there are none.
			return q.c, tr, kills, func(int) { q.Peek(ctx) }, func() []htEvent { return ctx.events }
		})
	}
	// A dead plugin answers Stats, Dump and PluginDead without a frame.
	q, tr, _ := htQdisc(htStatus(0, wire.StatusError, "boom"))
	htAbort(t, func() { q.Reset(&htQCtx{}) })
	if q.PluginDead() == nil || !strings.Contains(q.PluginDead().Error(), "boom") {
		t.Fatalf("PluginDead %v", q.PluginDead())
	}
	if st := q.Stats(); st.Qlen != 0 || q.Dump() != "(plugin dead)" || len(tr.sent) != 1 {
		t.Fatalf("dead plugin: stats %+v, %d frames sent", st, len(tr.sent))
	}
	if _, err := q.Init(&htQCtx{}, qdisc.Setup{}, nil); err == nil || len(tr.sent) != 1 {
		t.Fatalf("Init on a dead plugin: %v, %d frames sent", err, len(tr.sent))
	}
}

func TestDriverXmitWithUpcall(t *testing.T) {
	dv, tr, kills := htDriver(
		htUpcall(0, []wire.Op{{Kind: wire.OpSentQueue, Spend: 10, A: 1, B: 1500}}, 5, wire.QueryXmitStopped, 1),
		htXmit(0, []wire.Op{{Kind: wire.OpConsume, Spend: 7, H: 0x20}}, 3, 1, driver.TxBusy),
	)
	host := newHTDCtx(2000)
	host.drvXoff[1] = true
	batch := htBatch(0x20, 0x21)
	var sent int
	var rc driver.TxCode
	if me := htAbort(t, func() { sent, rc = dv.Xmit(host, 1, batch) }); me != nil {
		t.Fatal(me)
	}
	if sent != 1 || rc != driver.TxBusy {
		t.Fatalf("xmit %d %#x", sent, rc)
	}
	want := []htEvent{{2010, "sent 1 1500"}, {2015, "xmit_stopped? 1"}, {2022, "consume 0x20"}}
	if !reflect.DeepEqual(host.events, want) || host.now != 2025 {
		t.Fatalf("applied %v now %d", host.events, host.now)
	}
	if len(tr.sent) != 2 || *kills != 0 {
		t.Fatalf("%d frames sent", len(tr.sent))
	}
	d := wire.Dec{B: tr.sent[0]}
	typ, call, inst, m := d.U8(), d.U32(), d.U32(), wire.Method(d.U8())
	now, cpu, xoff, txq := d.I64(), d.U32(), d.Xoff(nil), d.U32()
	ps := d.Packets(nil)
	if d.End() != nil || typ != wire.FrameCall || call != 0 || inst != 2 || m != wire.MDXmit || now != 2000 || cpu != 1 ||
		!reflect.DeepEqual(xoff, wire.XoffBits{2}) || txq != 1 || !reflect.DeepEqual(ps, batch) {
		t.Fatalf("call frame: %d %d %d %v %d %d %v %d %+v (%v)", typ, call, inst, m, now, cpu, xoff, txq, ps, d.Err)
	}
	d = wire.Dec{B: tr.sent[1]}
	typ, call = d.U8(), d.U32()
	now, ans, xoff := d.I64(), d.Bool(), d.Xoff(nil)
	if d.End() != nil || typ != wire.FrameAnswer || call != 0 || now != 2015 || !ans || !reflect.DeepEqual(xoff, wire.XoffBits{2}) {
		t.Fatalf("answer frame: %d %d %d %v %v (%v)", typ, call, now, ans, xoff, d.Err)
	}
	htHolds(t, &dv.hold, nil, []skb.Handle{0x20, 0x21})
}

// NET_XMIT_DROP crosses the boundary: a driver that took the whole
// bulk and dropped its last packet (veth_xmit's NET_RX_DROP) answers it.
func TestDriverXmitDropCode(t *testing.T) {
	dv, _, _ := htDriver(htXmit(0, []wire.Op{{Kind: wire.OpConsume, H: 0x20}, {Kind: wire.OpDriverDrop, H: 0x21}}, 0, 2, driver.TxDrop))
	var sent int
	var rc driver.TxCode
	if me := htAbort(t, func() { sent, rc = dv.Xmit(newHTDCtx(0), 0, htBatch(0x20, 0x21)) }); me != nil {
		t.Fatal(me)
	}
	if sent != 2 || rc != driver.TxDrop {
		t.Fatalf("xmit %d %#x, want 2, NET_XMIT_DROP", sent, rc)
	}
}

func TestDriverXmitGarbage(t *testing.T) {
	consume := func(h skb.Handle) wire.Op { return wire.Op{Kind: wire.OpConsume, H: h} }
	upcall := htUpcall(0, nil, 0, wire.QueryHasQdisc, 0)
	cases := []htCase{
		{name: "sent past the batch", frames: [][]byte{htXmit(0, nil, 0, 3, driver.TxOK)}, want: "claims 3 of 2 packets sent"},
		{name: "rc no netdev_tx_t", frames: [][]byte{htXmit(0, nil, 0, 2, 0x20)}, want: "with rc 0x20"},
		{name: "NET_XMIT_DROP with a packet refused", frames: [][]byte{htXmit(0, []wire.Op{consume(0x20)}, 0, 1, driver.TxDrop)},
			want: "claims 1 of 2 packets sent with rc 0x1"},
		{name: "freed a refused packet", frames: [][]byte{htXmit(0, []wire.Op{consume(0x21)}, 0, 1, driver.TxBusy)},
			want: "freed packet 0x21 it refused"},
		{name: "consume never handed in", frames: [][]byte{htXmit(0, []wire.Op{consume(0x99)}, 0, 2, driver.TxOK)},
			want: "completed packet 0x99, which it was never handed"},
		{name: "consume twice", frames: [][]byte{htXmit(0, []wire.Op{consume(0x20), consume(0x20)}, 0, 2, driver.TxOK)},
			want: "completed packet 0x20 twice"},
		{name: "drop after consume", frames: [][]byte{htXmit(0, []wire.Op{consume(0x20),
			{Kind: wire.OpDriverDrop, H: 0x20}}, 0, 2, driver.TxOK)}, want: "dropped packet 0x20 twice"},
		{name: "status error", frames: [][]byte{htStatus(0, wire.StatusError, "boom")}, want: "boom"},
		{name: "truncated reply", frames: [][]byte{htXmit(0, nil, 0, 2, driver.TxOK)[:17]}, want: "malformed frame"},
		{name: "upcall unknown query", frames: [][]byte{htUpcall(0, nil, 0, 9, 0)}, want: "unknown query 9"},
		{name: "upcall query 0", frames: [][]byte{htUpcall(0, nil, 0, 0, 0)}, want: "unknown query 0"},
		{name: "upcall for another call", frames: [][]byte{htUpcall(4, nil, 0, wire.QueryHasQdisc, 0)},
			want: "reply to call 4 while call 0 waits"},
		{name: "upcall consume never handed in", frames: [][]byte{htUpcall(0, []wire.Op{consume(0x99)}, 0, wire.QuerySyncPoint, 0)},
			want: "completed packet 0x99, which it was never handed"},
		{name: "consume in upcall and reply", frames: [][]byte{htUpcall(0, []wire.Op{consume(0x20)}, 0, wire.QuerySyncPoint, 0),
			htXmit(0, []wire.Op{consume(0x20)}, 0, 2, driver.TxOK)}, want: "completed packet 0x20 twice"},
		{name: "upcall leftover bytes", frames: [][]byte{append(bytes.Clone(upcall), 1)}, want: "1 bytes left over"},
		{name: "upcall truncated", frames: [][]byte{upcall[:len(upcall)-1]}, want: "malformed frame"},
		{name: "upcall negative spend", frames: [][]byte{htUpcall(0, []wire.Op{{Kind: wire.OpWakeQueue, Spend: -2}}, 0,
			wire.QueryHasQdisc, 0)}, want: "negative spend -2"},
		{name: "answer send fails", frames: [][]byte{upcall}, want: "broken pipe", setup: func(tr *htTr) { tr.sendErrAt = 2 }},
		{name: "hang after the answer", frames: [][]byte{upcall}, want: "the plugin hangs"},
		{name: "txq out of range", frames: [][]byte{htXmit(0, []wire.Op{{Kind: wire.OpWakeQueue, A: 5}}, 0, 2, driver.TxOK)},
			want: "wake_queue on txq 5 of 2"},
		{name: "vector out of range", frames: [][]byte{htXmit(0, []wire.Op{{Kind: wire.OpRaiseIRQ, A: 9, B: 100}}, 0, 2, driver.TxOK)},
			want: "raise_irq on vector 9 of 2"},
		{name: "negative bytes", frames: [][]byte{htXmit(0, []wire.Op{{Kind: wire.OpSentQueue, A: 0, B: -1}}, 0, 2, driver.TxOK)},
			want: "sent_queue with counts -1"},
		{name: "query on a txq out of range", frames: [][]byte{htUpcall(0, nil, 0, wire.QueryXmitStopped, 7)},
			want: "on txq 7 of 2"},
		{name: "qdisc op from a driver", frames: [][]byte{htXmit(0, []wire.Op{{Kind: wire.OpQdiscWatchdog, A: 1}}, 0, 2, driver.TxOK)},
			want: "not a driver operation"},
		{name: "qdisc op from a driver in an upcall", frames: [][]byte{htUpcall(0, []wire.Op{htDrop(0x20, 0)}, 0,
			wire.QuerySyncPoint, 0)}, want: "not a driver operation"},
	}
	for _, c := range cases {
		c.run(t, "driver fake xmit", func(frames ...[]byte) (*conn, *htTr, *int, func(int), func() []htEvent) {
			dv, tr, kills := htDriver(frames...)
			host := newHTDCtx(100)
			return dv.c, tr, kills, func(int) { dv.Xmit(host, 0, htBatch(0x20, 0x21)) }, func() []htEvent { return host.events }
		})
	}
}

func TestDriverPoll(t *testing.T) {
	poll := func(call uint32, ops []wire.Op, work int32, done bool) []byte {
		return htOK(call, ops, 2, func(e *wire.Enc) {
			e.U32(uint32(work))
			e.Bool(done)
		})
	}
	dv, tr, _ := htDriver(poll(0, []wire.Op{{Kind: wire.OpCompletedQueue, Spend: 1, A: 1, B: 2, C: 3000},
		{Kind: wire.OpWakeQueue, A: 1}, {Kind: wire.OpRaiseIRQ, A: 1, B: 999}, {Kind: wire.OpNapiScheduleLocal, A: 0}}, 17, true))
	host := newHTDCtx(10)
	host.drvXoff[1] = true
	var work int
	var done bool
	if me := htAbort(t, func() { work, done = dv.Poll(host, 1, 64) }); me != nil || work != 17 || !done {
		t.Fatal(me, work, done)
	}
	want := []htEvent{{11, "completed 1 2 3000"}, {11, "wake 1"}, {11, "irq 1 999"}, {11, "napi 0"}}
	if !reflect.DeepEqual(host.events, want) || host.now != 13 {
		t.Fatalf("applied %v now %d", host.events, host.now)
	}
	d := wire.Dec{B: tr.sent[0][10:]}
	if now, cpu, xoff, v, budget := d.I64(), d.U32(), d.Xoff(nil), d.U32(), int32(d.U32()); d.End() != nil ||
		now != 10 || cpu != 1 || !reflect.DeepEqual(xoff, wire.XoffBits{2}) || v != 1 || budget != 64 {
		t.Fatalf("call frame %d %d %v %d %d (%v)", now, cpu, xoff, v, budget, d.Err)
	}
	cases := []htCase{
		{name: "negative work", frames: [][]byte{poll(0, nil, -1, true)}, want: "negative work -1"},
		{name: "done not a bool", frames: [][]byte{htOK(0, nil, 0, func(e *wire.Enc) { e.U32(1); e.U8(3) })},
			want: "bool not 0 or 1"},
	}
	for _, c := range cases {
		c.run(t, "driver fake poll", func(frames ...[]byte) (*conn, *htTr, *int, func(int), func() []htEvent) {
			dv, tr, kills := htDriver(frames...)
			host := newHTDCtx(100)
			return dv.c, tr, kills, func(int) { dv.Poll(host, 0, 64) }, func() []htEvent { return host.events }
		})
	}
	// A dead driver has no stats and sends nothing.
	dv, tr, _ = htDriver(htStatus(0, wire.StatusError, "boom"))
	htAbort(t, func() { dv.Poll(newHTDCtx(0), 0, 1) })
	if dv.Stats() != nil || len(tr.sent) != 1 || !strings.Contains(dv.PluginDead().Error(), "boom") {
		t.Fatalf("dead driver: %d frames sent, %v", len(tr.sent), dv.PluginDead())
	}
}

func TestCallIDs(t *testing.T) {
	var replies [][]byte
	for id := range uint32(300) {
		replies = append(replies, htOK(id, nil, 0, nil))
	}
	q, tr, _ := htQdisc(replies...)
	for i := range 300 {
		if me := htAbort(t, func() { q.Reset(&htQCtx{}) }); me != nil {
			t.Fatalf("call %d: %s", i, me.Msg)
		}
		d := wire.Dec{B: tr.sent[i][1:5]}
		if id := d.U32(); id != uint32(i) {
			t.Fatalf("call %d sent with id %d", i, id)
		}
	}
}

// An options error keeps its class across the boundary: the server's
// reply status and the host's class for it agree, for every class.
func TestOptionClassRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status byte
		class  error
	}{
		{qdisc.Parsef("k", "bad"), wire.StatusInvalid, qdisc.ErrParse},
		{errors.New("an error of no class"), wire.StatusInvalid, qdisc.ErrParse},
		{qdisc.Refusef("k", "no"), wire.StatusRefused, qdisc.ErrKernel},
		{qdisc.Lacksf("k", "lacks"), wire.StatusLacks, qdisc.ErrLacks},
		{qdisc.Syntaxf("bad handle"), wire.StatusSyntax, qdisc.ErrSyntax},
		{qdisc.ErrCannotChange, wire.StatusNoChange, qdisc.ErrKernel},
	} {
		st := optionStatus(tc.err)
		if st != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, st, tc.status)
			continue
		}
		if st == wire.StatusNoChange {
			continue // the host answers qdisc.ErrCannotChange itself
		}
		if !errors.Is(&qdisc.OptionError{Class: optionClass[st], Msg: "m"}, tc.class) {
			t.Errorf("%v: status %d comes back as %v, want %v", tc.err, st, optionClass[st], tc.class)
		}
	}
}

// htClassCtx is a classful qdisc's host: leaves that take every packet.
type htClassCtx struct {
	htQCtx
	leaf int
}

func (x *htClassCtx) LeafEnqueue(batch []qdisc.LeafPacket, res []qdisc.LeafResult) {
	for i, p := range batch {
		x.rec("leaf enqueue %#x to %s", uint64(p.Handle), p.Class)
		x.leaf++
		res[i] = qdisc.LeafResult{Leaf: qdisc.LeafState{Qlen: x.leaf}, Segs: i + 1} // Segs: what the wire carries
	}
}

func (x *htClassCtx) LeafDequeue(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	x.rec("leaf dequeue %s", id)
	x.leaf--
	return skb.Packet{Handle: 0x77, Len: 100}, true, qdisc.LeafState{Qlen: x.leaf}
}

func (x *htClassCtx) LeafPeek(qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	return skb.Packet{}, false, qdisc.LeafState{}
}

// htLeafUp is a classful qdisc's leaf query upcall.
func htLeafUp(call uint32, q wire.Query, payload func(e *wire.Enc)) []byte {
	e := htFrame(wire.FrameUpcall, call)
	e.Ops(nil, 10)
	e.U8(byte(q))
	payload(e)
	return e.B
}

// A classful qdisc's leaf queries: the host checks what it hands to its
// leaves (packets it holds, once), answers, and takes back what leaves
// give it; garbage ends the run naming the plugin.
func TestClassfulLeafQueries(t *testing.T) {
	enq := func(hs ...skb.Handle) func(e *wire.Enc) {
		return func(e *wire.Enc) {
			var b []qdisc.LeafPacket
			for _, h := range hs {
				b = append(b, qdisc.LeafPacket{Handle: h, Class: 0x10010})
			}
			wire.EncodeLeafQuery(e, b, 0)
		}
	}
	deq := func(e *wire.Enc) { wire.EncodeLeafQuery(e, nil, 0x10010) }
	mk := func(frames ...[]byte) (*Qdisc, *htTr, *int, *htClassCtx) {
		q, tr, kills := htQdisc(frames...)
		q.classful = true
		return q, tr, kills, &htClassCtx{htQCtx: htQCtx{now: 1000}}
	}
	// A good exchange: the batch goes to a leaf, then one packet comes
	// back from it through a dequeue.
	q, tr, _, ctx := mk(htLeafUp(0, wire.QueryLeafEnqueue, enq(0x10, 0x11)), htEnq(0, nil, 0, 2, 0, 0),
		htLeafUp(1, wire.QueryLeafDequeue, deq), htOK(1, nil, 0, func(e *wire.Enc) { e.U32(1); e.DequeuedPacket(&skb.Packet{Handle: 0x77}) }))
	if me := htAbort(t, func() { q.Enqueue(ctx, htBatch(0x10, 0x11), []qdisc.Code{0, 0}) }); me != nil {
		t.Fatal(me)
	}
	if me := htAbort(t, func() { q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil) }); me != nil {
		t.Fatal(me)
	}
	want := []htEvent{{1010, "leaf enqueue 0x10 to 1:10"}, {1010, "leaf enqueue 0x11 to 1:10"}, {1020, "leaf dequeue 1:10"}}
	if !reflect.DeepEqual(ctx.events, want) {
		t.Fatalf("applied %v, want %v", ctx.events, want)
	}
	// The answer frame: the host's time, then each packet's code, its
	// leaf's qlen and backlog, and the packets the leaf made of it.
	d := wire.Dec{B: tr.sent[1]}
	if typ, call, now := d.U8(), d.U32(), d.I64(); typ != wire.FrameAnswer || call != 0 || now != 1010 {
		t.Fatalf("answer %d %d %d", typ, call, now)
	}
	res := make([]qdisc.LeafResult, 2)
	if err := wire.DecodeLeafEnqueue(&d, res); err != nil || res[1].Leaf.Qlen != 2 || res[0].Segs != 1 || res[1].Segs != 2 {
		t.Fatalf("answer %+v %v", res, err)
	}
	for _, tt := range []struct {
		name   string
		frames [][]byte
		want   string
	}{
		{"a packet it never held", [][]byte{htLeafUp(0, wire.QueryLeafEnqueue, enq(0x99))}, "enqueued to a leaf packet 0x99, which it was never handed"},
		{"a packet twice", [][]byte{htLeafUp(0, wire.QueryLeafEnqueue, enq(0x10, 0x10))}, "enqueued to a leaf packet 0x10 twice"},
		{"a driver query", [][]byte{htUpcall(0, nil, 0, wire.QueryXmitStopped, 0)}, "asked the host query 1, which is no leaf query"},
		{"a truncated query", [][]byte{htLeafUp(0, wire.QueryLeafEnqueue, func(e *wire.Enc) { e.U32(3); e.U64(0x10) })}, "malformed frame"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, _, kills, ctx := mk(tt.frames...)
			me := htAbort(t, func() { q.Enqueue(ctx, htBatch(0x10, 0x11), []qdisc.Code{0, 0}) })
			if me == nil || !strings.Contains(me.Msg, "plugin "+htName+": qdisc fake enqueue: ") || !strings.Contains(me.Msg, tt.want) {
				t.Fatalf("%v, want %q", me, tt.want)
			}
			if *kills != 1 {
				t.Fatalf("plugin killed %d times", *kills)
			}
		})
	}
}
