package etf

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newETF(t *testing.T, args string) (*ETF, *qdisctest.Ctx) {
	t.Helper()
	q := &ETF{}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Ktime(sim.Second)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// tai is the qdisc's clock (CLOCK_TAI) at the context's time plus d.
func tai(ctx *qdisctest.Ctx, d sim.Time) sim.Time {
	off, _ := sim.ClockOffset(sim.ClockTAI)
	return ctx.T + off + d
}

// pkt is a packet of a socket with SO_TXTIME on CLOCK_TAI to be sent at
// txtime.
func pkt(h skb.Handle, txtime sim.Time) skb.Packet {
	return skb.Packet{Handle: h, Len: 1000, GSOSegs: 1, Sock: 1, Flags: skb.PacketTxtimeTAI, Tstamp: txtime}
}

func enqueue(q *ETF, ctx *qdisctest.Ctx, ps ...skb.Packet) []qdisc.Code {
	rc := make([]qdisc.Code, len(ps))
	q.Enqueue(ctx, ps, rc)
	return rc
}

// Packets leave in the order of their transmit times, each once the
// clock is within delta of it (the watchdog armed then); one whose
// time is past, or before the last sent, or from a socket without
// SO_TXTIME on CLOCK_TAI, is dropped at enqueue (is_packet_valid); one
// whose time passes while it waits is dropped at dequeue, counted as
// an overlimit (timesortedlist_drop).
func TestTxtimeOrder(t *testing.T) {
	q, ctx := newETF(t, "clockid CLOCK_TAI delta 100000")
	us := sim.Microsecond
	rc := enqueue(q, ctx, pkt(1, tai(ctx, 500*us)), pkt(2, tai(ctx, 300*us)), pkt(3, tai(ctx, 300*us)), pkt(4, tai(ctx, -us)))
	noSock := pkt(5, tai(ctx, 400*us))
	noSock.Flags = 0
	orphan := pkt(6, tai(ctx, 400*us))
	orphan.Sock = -1
	rc = append(rc, enqueue(q, ctx, noSock, orphan)...)
	want := []qdisc.Code{qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitDrop, qdisc.XmitDrop, qdisc.XmitDrop}
	for i := range want {
		if rc[i] != want[i] {
			t.Fatalf("enqueue codes %v, want %v", rc, want)
		}
	}
	// the watchdog is armed delta before the earliest txtime
	if !ctx.WDogArmed || ctx.WDog != ctx.T+200*us {
		t.Fatalf("watchdog armed %v at %v, want 200 us from now", ctx.WDogArmed, ctx.WDog-ctx.T)
	}
	deq := func() []skb.Handle {
		var hs []skb.Handle
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 30}, nil) {
			hs = append(hs, p.Handle)
		}
		return hs
	}
	if got := deq(); len(got) != 0 {
		t.Fatalf("before the window: %v", got)
	}
	ctx.T += 200*us + 1
	if got := deq(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("at 200 us: %v, want 2 then 3 (equal times in arrival order)", got)
	}
	// a packet before the last one sent is refused
	if rc := enqueue(q, ctx, pkt(7, tai(ctx, 150*us))); rc[0] != qdisc.XmitSuccess {
		t.Errorf("a later packet: %v", rc)
	}
	if rc := enqueue(q, ctx, pkt(8, tai(ctx, 50*us))); rc[0] != qdisc.XmitDrop { // before 3's 300 us
		t.Errorf("a packet before the last sent: %v", rc)
	}
	// let 1 (due at 500 us) and 7 (at 350 us) expire
	ctx.T += 400 * us
	if got := deq(); len(got) != 0 || q.Stats().Qlen != 0 || q.overlimits != 2 || ctx.Dropped[1] != skb.DropNotSpecified {
		t.Errorf("after both times passed: sent %v, qlen %d, overlimits %d, reason %q", got, q.Stats().Qlen, q.overlimits, ctx.Dropped[1])
	}
	if ctx.WDogArmed {
		t.Error("the watchdog is armed over an empty queue")
	}
}

// deadline_mode sends at once, the txtime a deadline (the skb's tstamp
// then the send time); skip_sock_check takes packets of any socket.
// The model's sockets never set SOF_TXTIME_DEADLINE_MODE, so with the
// socket check, deadline_mode refuses them all, as the kernel would.
func TestModes(t *testing.T) {
	q, ctx := newETF(t, "clockid CLOCK_TAI delta 0 deadline_mode skip_sock_check")
	p := pkt(1, tai(ctx, sim.Millisecond))
	p.Flags, p.Sock = 0, -1
	enqueue(q, ctx, p)
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil)
	if len(out) != 1 || out[0].Tstamp != tai(ctx, 0) {
		t.Fatalf("deadline mode: %+v", out)
	}
	q2, ctx2 := newETF(t, "clockid CLOCK_TAI delta 0 deadline_mode")
	if rc := enqueue(q2, ctx2, pkt(1, tai(ctx2, sim.Millisecond))); rc[0] != qdisc.XmitDrop {
		t.Errorf("deadline mode with the socket check: %v", rc)
	}
	if got, want := q.Dump(), "clockid TAI delta 0 offload off deadline_mode on skip_sock_check on"; got != want {
		t.Errorf("dump %q, want %q", got, want)
	}
}

// tc's q_etf.c words and messages, and etf_init's refusals.
func TestErrors(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"delta 100", "Dynamic clockids are not supported"},
		{"clockid CLOCK_MONOTONIC", "Invalid clockid. CLOCK_TAI must be used"},
		{"clockid TAI delta -5", "Delta must be positive"},
		{"clockid TAI offload", "offload (the NIC's launch time, ndo_setup_tc) is not modelled"},
		{"clockid TAI clockid TAI", `duplicate "clockid" specification`},
		{"clockid CLOCK_FOO", `illegal value for "clockid": "CLOCK_FOO"`},
		{"clockid TAI delta x", `illegal value for "delta": "x"`},
		{"clockid TAI deadline_mode deadline_mode", `duplicate "deadline_mode" specification`},
		{"clockid TAI foo", `unknown parameter "foo"`},
		{"clockid", `"clockid": Command line is not complete`},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &ETF{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestConformance(t *testing.T) {
	for _, r := range qdisctest.Run(func() qdisc.Qdisc { return &ETF{} }, qdisctest.Options{Args: []string{"clockid", "CLOCK_TAI", "delta", "100000", "skip_sock_check"}}) {
		t.Errorf("%s: %v", r.Check, r.Err)
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"etf"}, "clockid CLOCK_TAI delta 300000", "clockid TAI delta 0 deadline_mode skip_sock_check", "delta 0x10 clockid tai")
}
