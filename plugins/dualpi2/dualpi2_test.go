package dualpi2

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newDualPI2(t *testing.T, args string) (*DualPI2, *qdisctest.Ctx) {
	t.Helper()
	q := &DualPI2{}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Second // a clock that does not start at 0, as the host's
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// send enqueues n packets of size bytes with ECN field ecn, numbered on
// from *h, and returns their codes.
func send(q *DualPI2, ctx qdisc.Ctx, h *skb.Handle, ecn uint8, prio uint32, n int, size uint32) []qdisc.Code {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: size, TrueSize: 2048, ECN: ecn, Priority: prio, GSOSegs: 1}
	}
	rc := make([]qdisc.Code, n)
	q.Enqueue(ctx, batch, rc)
	return rc
}

// The defaults as dualpi2_reset_default sets them and tc prints the
// dump: alpha 41/256 and beta 819/256 come back as 40/256 and 818/256
// through the kernel's scaling (dualpi2_scale_alpha_beta, then
// dualpi2_unscale_alpha_beta, each rounding down); memlimit is the limit
// at twice the MTU (1514) a packet.
func TestDump(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"", "limit 10000p memlimit 30280000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
		{"limit 100 target 5ms tupdate 8ms step_thresh 10p min_qlen_step 2 coupling_factor 3 overflow drop_enqueue classic_protection 30% any_ect no_split_gso",
			"limit 100p memlimit 302800B target 5ms tupdate 8ms alpha 0.156250 beta 3.195312 step_thresh 10p min_qlen_step 2p coupling_factor 3 overflow drop_enqueue classic_protection 30% any_ect no_split_gso "},
		{"limit 100 memlimit 5000", "limit 100p memlimit 5000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
		{"alpha 0.5 beta 10 step_thresh 500us", "limit 10000p memlimit 30280000B target 15ms tupdate 16ms alpha 0.496094 beta 9.996094 step_thresh 500us min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
		// max_rtt 100ms: typical 100/6 ms, tupdate the smaller of it and
		// a third of max, alpha and beta from max (tc's auto-config)
		{"max_rtt 100ms", "limit 10000p memlimit 30280000B target 16.7ms tupdate 16.7ms alpha 0.160156 beta 2.996094 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso "},
	} {
		q, _ := newDualPI2(t, tt.args)
		if got := q.Dump(); got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"foo", `What is "foo"?`},
		{"limit x", `Illegal "limit"`},
		{"limit", `option "limit" needs a value`},
		{"target 5", ""}, // 5 us: a time
		{"step_thresh 5q", `Illegal "step_thresh"`},
		{"coupling_factor 256", `Illegal "coupling_factor"`},
		{"coupling_factor 0", "integer out of range"},
		{"classic_protection 101", `Illegal "classic_protection"`},
		{"alpha -1", `Illegal "alpha"`},
		{"alpha 0.001", "integer out of range"}, // rounds to 0 in 1/256
		{"beta 16777216", `Illegal "beta"`},
		{"beta 10000000", "integer out of range"},
		{"typical_rtt 50ms max_rtt 10ms", "typical_rtt must be <= max_rtt!"},
		{"max_rtt 4000s", "rounds down alpha"},
	} {
		q := &DualPI2{}
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), q, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
	q, ctx := newDualPI2(t, "")
	if _, err := qdisctest.Change(ctx, q, nil); err == nil || !strings.Contains(err.Error(), "Dualpi2 options are required") {
		t.Errorf("change without options: %v", err)
	}
}

// ECT(1) packets go to the L-queue, the rest to the C-queue (and
// skb->priority 1:1 and 1:2 to the L-queue too); while both are
// backlogged the WRR serves them by classic_protection's weights, 90:10
// of the bytes by default, 50:50 at classic_protection 50%.
func TestWRR(t *testing.T) {
	for _, tt := range []struct {
		args string
		want float64 // L bytes over C bytes
	}{{"", 9}, {"classic_protection 50", 1}, {"classic_protection 80", 0.25}} {
		q, ctx := newDualPI2(t, tt.args)
		var h skb.Handle
		send(q, ctx, &h, 1, 0, 400, 1000)       // ECT(1): L
		send(q, ctx, &h, 0, 0, 400, 1000)       // not-ECT: C
		send(q, ctx, &h, 2, 0x10002, 200, 1000) // ECT(0) with priority 1:2: L (LLLL)
		if q.l.Len() != 600 || q.c.Len() != 400 {
			t.Fatalf("%q: L %d C %d", tt.args, q.l.Len(), q.c.Len())
		}
		var lb, cb float64
		for range 300 {
			for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil) {
				if p.ECN == 0 {
					cb += float64(p.Len)
				} else {
					lb += float64(p.Len)
				}
			}
		}
		if r := lb / cb; r < tt.want*0.95 || r > tt.want*1.05 {
			t.Errorf("%q: L %v bytes, C %v: ratio %.3f, want %.2f", tt.args, lb, cb, r, tt.want)
		}
	}
}

// An L4S packet that waited past step_thresh (1 ms) is CE-marked at
// dequeue (step_mark); a not-ECT packet put in the L-queue by
// skb->priority X:1 is dropped there instead (DUALPI2_STEP_DROP); one
// that waited less goes as it came.
func TestStep(t *testing.T) {
	q, ctx := newDualPI2(t, "")
	var h skb.Handle
	send(q, ctx, &h, 1, 0, 5, 1000)
	send(q, ctx, &h, 0, 0x10001, 5, 1000)
	ctx.T += 2 * sim.Millisecond
	send(q, ctx, &h, 1, 0, 5, 1000) // fresh
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil)
	ce := 0
	for _, p := range out {
		if p.ECN == 3 {
			ce++
		}
	}
	st := q.Stats()
	if len(out) != 10 || ce != 5 || qdisctest.XStat(q, "step_mark") != 5 || st.Drops != 5 {
		t.Errorf("sent %d (%d CE), step marks %d, drops %d: want 10, 5, 5, 5", len(out), ce, qdisctest.XStat(q, "step_mark"), st.Drops)
	}
	for h, r := range ctx.Dropped {
		if r != dropStep {
			t.Errorf("packet %#x dropped for %s", uint64(h), r)
		}
	}
}

// calculate_probability: alpha on the larger head delay's distance from
// target, beta on its change since the last update, in 64 ns units:
// with a classic head 25 ms old (10 ms over target) the first update
// gives (10 ms * alpha + 25 ms * beta) >> 6; an empty qdisc then pulls p
// back by (-15 ms * alpha - 25 ms * beta) >> 6, to 0.
func TestProbability(t *testing.T) {
	q, ctx := newDualPI2(t, "")
	var h skb.Handle
	send(q, ctx, &h, 0, 0, 3, 1000)
	ctx.T += 25 * sim.Millisecond
	q.Timer(ctx)
	want := uint32((uint64(10_000_000)*uint64(q.alpha) + uint64(25_000_000)*uint64(q.beta)) >> 6)
	if q.prob != want || want == 0 {
		t.Errorf("p %d, want %d", q.prob, want)
	}
	if !ctx.TimerArmed || ctx.TimerAt != ctx.T+16*sim.Millisecond {
		t.Errorf("timer armed %v at %v, want now + 16 ms", ctx.TimerArmed, ctx.TimerAt)
	}
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil)
	q.Timer(ctx)
	if q.prob != 0 {
		t.Errorf("p %d after the queue emptied, want 0", q.prob)
	}
}

// must_drop at p = 50%: classic packets go with p squared (a quarter
// dropped if not ECT, CE-marked if ECT(0)), L4S ones are marked with p
// times the coupling factor 2 (all); nothing below 2 MTUs of backlog.
func TestCoupledMarking(t *testing.T) {
	q, ctx := newDualPI2(t, "limit 100000")
	var h skb.Handle
	send(q, ctx, &h, 0, 0, 4000, 1000)
	send(q, ctx, &h, 2, 0, 4000, 1000)
	send(q, ctx, &h, 1, 0, 4000, 1000)
	q.prob = maxProb / 2
	var sent, marked [4]int
	for {
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil)
		if len(out) == 0 {
			break
		}
		for _, p := range out {
			orig := uint8(0)
			switch {
			case p.Handle > 8000:
				orig = 1
			case p.Handle > 4000:
				orig = 2
			}
			sent[orig]++
			if p.ECN == 3 {
				marked[orig]++
			}
		}
	}
	dropped := 4000 - sent[0]
	if dropped < 900 || dropped > 1100 || marked[2] < 900 || marked[2] > 1100 || marked[1] < 3990 {
		t.Errorf("not-ECT dropped %d, ECT(0) marked %d, ECT(1) marked %d of 4000: want ~1000, ~1000, all", dropped, marked[2], marked[1])
	}
}

// The enqueue's limits: sch->limit packets over both queues, and the
// memory limit over their truesizes (QDISC_OVERLIMIT, overlimits).
func TestLimits(t *testing.T) {
	q, ctx := newDualPI2(t, "limit 10")
	var h skb.Handle
	rc := send(q, ctx, &h, 1, 0, 6, 1000)
	rc = append(rc, send(q, ctx, &h, 0, 0, 6, 1000)...)
	if rc[10] != qdisc.XmitDrop || q.Stats().Overlimits != 2 || q.qlen() != 10 || ctx.Dropped[h] != skb.DropQdiscOverlimit {
		t.Errorf("codes %v overlimits %d qlen %d", rc, q.Stats().Overlimits, q.qlen())
	}
	q, ctx = newDualPI2(t, "memlimit 5000")
	send(q, ctx, &h, 0, 0, 3, 1000) // truesize 2048 each
	if q.qlen() != 2 {
		t.Errorf("memlimit 5000 holds %d packets of truesize 2048, want 2", q.qlen())
	}
}

// dualpi2 conforms, behind the plugin boundary's wrapper too.
func TestConformance(t *testing.T) {
	for _, args := range [][]string{nil, {"limit", "500", "drop_enqueue"}, {"step_thresh", "3p", "any_ect", "overflow", "coupling_factor", "4"}} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&DualPI2{}) }
		o := qdisctest.Options{Args: args, Seed: 3, Pkts: 2000}
		if len(args) > 1 && args[0] == "limit" {
			o.Limit = 500
		}
		for _, r := range qdisctest.Run(f, o) {
			t.Errorf("%v: %s: %v", args, r.Check, r.Err)
		}
	}
}

// Any words: a clear error, or a dualpi2 that takes packets, dumps,
// gives them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"dualpi2"}, "limit 100 step_thresh 3p", "max_rtt 50ms typical_rtt 5ms", "alpha 1e6 beta 0.004",
		"classic_protection 0 coupling_factor 255 any_ect overflow drop_enqueue")
}
