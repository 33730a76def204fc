package tbf

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/fq_codel" // a child for TestChildQdisc
)

// newQ makes a tbf with its class's default leaf, or the leaves given
// (`tc qdisc add` words after "qdisc add").
func newQ(t testing.TB, ctx *qdisctest.Ctx, args string, leaves ...string) *TBF {
	t.Helper()
	q := &TBF{}
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Leaves: leaves}); err != nil {
		t.Fatal(err)
	}
	return q
}

func pkts(first, n int, size uint32) []skb.Packet {
	out := make([]skb.Packet, n)
	for i := range out {
		out[i] = skb.Packet{Handle: skb.Handle(first + i), Len: size, GSOSegs: 1}
	}
	return out
}

func enqueue(q qdisc.Qdisc, ctx qdisc.Ctx, ps []skb.Packet) []qdisc.Code {
	rc := make([]qdisc.Code, len(ps))
	q.Enqueue(ctx, ps, rc)
	return rc
}

// deq takes one packet at ctx.T, or reports the watchdog it armed.
func deq(q qdisc.Qdisc, ctx *qdisctest.Ctx) (skb.Packet, bool) {
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
	if len(out) == 0 {
		return skb.Packet{}, false
	}
	return out[0], true
}

// The bucket by hand: 1 Mbit/s is 8000 ns a byte, so a 3000-byte bucket
// holds 24 ms and a 1000-byte packet costs 8 ms. Three packets leave at
// once (24 -> 16 -> 8 -> 0 ms), the fourth waits 8 ms with the watchdog
// armed then, and the fifth 8 ms more.
func TestBucketByHand(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 3000 limit 100kb")
	if q.cfg.buffer != 24_000_000 || q.cfg.maxSize != 3000 || q.tokens != q.cfg.buffer {
		t.Fatalf("buffer %d ns, max_size %d, tokens %d", q.cfg.buffer, q.cfg.maxSize, q.tokens)
	}
	enqueue(q, ctx, pkts(1, 5, 1000))
	for i := 1; i <= 3; i++ {
		if p, ok := deq(q, ctx); !ok || p.Handle != skb.Handle(i) {
			t.Fatalf("packet %d did not leave at once (%v)", i, ok)
		}
	}
	if want := []int64{16e6, 8e6, 0}; q.tokens != want[2] {
		t.Fatalf("tokens %d, want 0", q.tokens)
	}
	if _, ok := deq(q, ctx); ok || !ctx.WDogArmed || ctx.WDog != 8*sim.Millisecond {
		t.Fatalf("4th packet: left %v, watchdog %v at %d, want 8ms", ok, ctx.WDogArmed, ctx.WDog)
	}
	if st := q.Stats(); st.Overlimits != 1 || st.Qlen != 2 || st.Backlog != 2000 {
		t.Fatalf("stats %+v", st)
	}
	ctx.T = 8*sim.Millisecond - 1
	if _, ok := deq(q, ctx); ok || ctx.WDog != 8*sim.Millisecond {
		t.Fatalf("left 1 ns early, or re-armed at %d", ctx.WDog)
	}
	ctx.T = 8 * sim.Millisecond
	if p, ok := deq(q, ctx); !ok || p.Handle != 4 || q.tokens != 0 || q.tc != ctx.T {
		t.Fatalf("4th at 8ms: %v tokens %d t_c %d", ok, q.tokens, q.tc)
	}
	if _, ok := deq(q, ctx); ok || ctx.WDog != 16*sim.Millisecond {
		t.Fatalf("5th: watchdog at %d, want 16ms", ctx.WDog)
	}
	// An idle bucket refills to its depth, no more.
	ctx.T = sim.Second
	if p, ok := deq(q, ctx); !ok || p.Handle != 5 || q.tokens != 16e6 {
		t.Fatalf("after 1s idle: %v, tokens %d, want a full bucket less one packet", ok, q.tokens)
	}
}

// The peak bucket (mtu bytes at peakrate) spaces back-to-back packets
// at the peak rate even with a deep main bucket: 2 Mbit/s is 4000 ns a
// byte, a 1000-byte mtu 4 ms.
func TestPeakRate(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 10000 peakrate 2mbit mtu 1000 limit 100kb")
	if q.cfg.mtu != 4e6 || q.cfg.maxSize != 1000 {
		t.Fatalf("mtu %d ns, max_size %d", q.cfg.mtu, q.cfg.maxSize)
	}
	enqueue(q, ctx, pkts(1, 4, 1000))
	for i := 0; i < 4; i++ {
		p, ok := deq(q, ctx)
		if !ok {
			if !ctx.WDogArmed {
				t.Fatal("throttled without a watchdog")
			}
			ctx.T = ctx.WDog
			p, ok = deq(q, ctx)
		}
		if !ok || ctx.T != sim.Time(i)*4*sim.Millisecond || p.Handle != skb.Handle(i+1) {
			t.Fatalf("packet %d left at %d (%v), want %d ms", i+1, ctx.T, ok, 4*i)
		}
	}
	// A packet above the peak bucket can never leave: dropped at enqueue.
	if rc := enqueue(q, ctx, pkts(10, 1, 1001)); rc[0] != qdisc.XmitDrop || ctx.Dropped[10] != skb.DropQdiscDrop {
		t.Fatalf("oversize packet: %v %q", rc[0], ctx.Dropped[10])
	}
}

// The child bfifo drops at its byte limit, and tbf counts the drop too.
func TestByteLimit(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 1514 limit 2500")
	rc := enqueue(q, ctx, pkts(1, 3, 1000))
	if rc[0] != qdisc.XmitSuccess || rc[1] != qdisc.XmitSuccess || rc[2] != qdisc.XmitDrop {
		t.Fatalf("codes %v", rc)
	}
	kind, limit, child, _ := ctx.LeafInfo(q.class())
	if st := q.Stats(); st.Drops != 1 || st.Backlog != 2000 || kind != "bfifo" || limit != 2500 || child.Drops != 1 || ctx.Dropped[3] != skb.DropQdiscDrop {
		t.Fatalf("stats %+v, child %s limit %d drops %d, reason %q", st, kind, limit, child.Drops, ctx.Dropped[3])
	}
}

// tc turns a latency into a byte limit (rate x latency + burst), and the
// dump turns it back; a limit below the burst prints as a limit.
func TestLatencyLimit(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 10kb latency 50ms")
	if q.cfg.limit != 125000*50/1000+10240 {
		t.Fatalf("limit %d", q.cfg.limit)
	}
	if got, want := q.Dump(), "rate 1Mbit burst 10Kb/1 mpu 0b lat 50ms linklayer ethernet "; got != want {
		t.Fatalf("dump %q, want %q", got, want)
	}
	// 1 Gbit/s: the rate is bytes/s in the 32-bit tc_ratespec.
	q = newQ(t, ctx, "rate 1gbit burst 125000 latency 1ms")
	if q.cfg.rate.RateBytesPs != 125e6 || q.cfg.buffer != 1e6 || q.cfg.limit != 250000 {
		t.Fatalf("1gbit: rate %d buffer %d limit %d", q.cfg.rate.RateBytesPs, q.cfg.buffer, q.cfg.limit)
	}
	// Above 2^32 bytes/s tc sends TCA_TBF_RATE64.
	q = newQ(t, ctx, "rate 100gbit burst 1mb limit 10mb")
	if q.cfg.rate.RateBytesPs != 12_500_000_000 || !strings.HasPrefix(q.Dump(), "rate 100Gbit ") {
		t.Fatalf("100gbit: %d %q", q.cfg.rate.RateBytesPs, q.Dump())
	}
}

// A change sets new buckets (full) and the child's limit; packets above
// a lowered limit stay; a refused change leaves everything.
func TestChange(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 3000 limit 10kb")
	enqueue(q, ctx, pkts(1, 8, 1000))
	for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40}, nil)) > 0 {
	}
	if _, err := qdisctest.Change(ctx, q, strings.Fields("rate 2mbit burst 5000 limit 2000")); err != nil {
		t.Fatal(err)
	}
	_, limit, child, _ := ctx.LeafInfo(q.class())
	if q.tokens != q.cfg.buffer || q.cfg.buffer != 20e6 || limit != 2000 || child.Qlen != 5 {
		t.Fatalf("after change: tokens %d buffer %d child limit %d qlen %d", q.tokens, q.cfg.buffer, limit, child.Qlen)
	}
	if rc := enqueue(q, ctx, pkts(20, 1, 100)); rc[0] != qdisc.XmitDrop {
		t.Fatal("enqueue above the lowered limit was accepted")
	}
	before := q.cfg
	for _, args := range []string{"rate 2mbit burst 5000", "rate 2mbit burst 5000 limit 1000 peakrate 1mbit mtu 1500", "rate 1mbit"} {
		if _, err := qdisctest.Change(ctx, q, strings.Fields(args)); err == nil || q.cfg != before {
			t.Fatalf("change %q: %v, config now %+v", args, err, q.cfg)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		args  string
		class error
		want  string
	}{
		{"", qdisc.ErrParse, `the "rate" parameter is mandatory; the "burst" parameter is mandatory; either "limit" or "latency" is required`},
		{"rate 1mbit burst 10k", qdisc.ErrParse, `either "limit" or "latency" is required`},
		{"rate 1mbit burst 10k limit 1k peakrate 2mbit", qdisc.ErrParse, `"mtu" must also be specified`},
		{"rate 1mbit burst 10k limit 1k latency 5ms", qdisc.ErrParse, `specifying both "limit" and "latency"`},
		{"rate 1mbit rate 2mbit", qdisc.ErrParse, `duplicate "rate"`},
		{"rate fast burst 1k limit 1k", qdisc.ErrParse, `illegal value for "rate": "fast"`},
		{"rate 1mbit maxburst 1k/3 limit 1k", qdisc.ErrParse, `illegal value for "maxburst"`},
		{"rate 1mbit burst 1k limit 1k linklayer x25", qdisc.ErrParse, `illegal value for "linklayer"`},
		{"rate 1mbit burst 1k limit 1k shaping", qdisc.ErrParse, `unknown option "shaping"`},
		{"rate 1mbit burst 1k limit", qdisc.ErrParse, `"limit" needs a value`},
		{"rate 1mbit burst 1k limit 1k peakrate 1mbit mtu 1500", qdisc.ErrKernel, "peakrate 125000 is lower than or equals to rate 125000"},
		{"rate 10% burst 1k limit 1k", nil, ""},
		{"rate 8bit burst 1mb limit 1k", qdisc.ErrParse, "burst out of range"},
	}
	for _, c := range cases {
		_, err := (&TBF{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(c.args))
		if c.class == nil {
			if err != nil {
				t.Errorf("%q: %v", c.args, err)
			}
			continue
		}
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "tbf: ") {
			t.Errorf("%q: %v, want %v containing %q", c.args, err, c.class, c.want)
		}
	}
	// 10% of the 10 Gbit/s test device.
	q := newQ(t, qdisctest.NewCtx(1), "rate 10% burst 1k limit 1k")
	if q.cfg.rate.RateBytesPs != 125e6 {
		t.Errorf("rate 10%%: %d bytes/s", q.cfg.rate.RateBytesPs)
	}
	// tc's prefix matching (matches()): "lat" is latency, "peak" peakrate.
	q = newQ(t, qdisctest.NewCtx(1), "rate 1mbit buffer 10kb lat 50ms peak 2mbit minburst 1540")
	if q.cfg.peak.RateBytesPs != 250000 || q.cfg.maxSize != 1540 {
		t.Errorf("prefixed words: peak %d max_size %d", q.cfg.peak.RateBytesPs, q.cfg.maxSize)
	}
}

// Reset purges the child, refills the buckets and stops the watchdog.
func TestReset(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 1000 limit 10kb")
	enqueue(q, ctx, pkts(1, 4, 1000))
	deq(q, ctx)
	deq(q, ctx)
	if !ctx.WDogArmed {
		t.Fatal("no watchdog")
	}
	qdisctest.Reset(ctx, q)
	if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 || len(ctx.Dropped) != 3 || ctx.WDogArmed || q.tokens != q.cfg.buffer {
		t.Fatalf("after reset: %+v, %d purged, watchdog %v", st, len(ctx.Dropped), ctx.WDogArmed)
	}
}

func TestConformance(t *testing.T) {
	for _, args := range []string{
		"rate 100mbit burst 10kb limit 100kb",
		"rate 1gbit burst 3028 latency 1ms",
		"rate 50mbit burst 20kb peakrate 200mbit mtu 1514 limit 50kb",
		"rate 10mbit burst 1514 limit 3000 overhead 24 linklayer atm",
		"rate 1gbit burst 64kb limit 1mb mpu 64",
	} {
		t.Run(args, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("tbf"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(args), Seed: 1}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// tbf's one class 1:1 takes any qdisc (tbf_graft): fq_codel under the
// shaper holds the backlog, tbf's buckets pace what it gives. The class
// dumps with no stats of its own; tbf's qlen and backlog are the leaf's;
// a change of limit reaches a fifo leaf only (fifo_set_limit: the one
// number, packets for a pfifo), and tc class changes are refused.
func TestChildQdisc(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "rate 1mbit burst 3000 limit 100kb", "parent 1:1 handle 10: fq_codel")
	cls := q.Classes()
	if len(cls) != 1 || cls[0].ID != q.class() || cls[0].Parent != qdisc.MakeClassID(1, 0) || !cls[0].Leaf ||
		cls[0].FifoLimit != 100*1024 || strings.Join(cls[0].DefaultLeaf, " ") != "bfifo limit 102400" {
		t.Fatalf("classes %+v", cls)
	}
	if kind, _, _, _ := ctx.LeafInfo(q.class()); kind != "fq_codel" {
		t.Fatalf("leaf %q", kind)
	}
	enqueue(q, ctx, pkts(1, 5, 1000))
	_, _, child, _ := ctx.LeafInfo(q.class())
	if st := q.Stats(); st.Qlen != 5 || st.Backlog != 5000 || child.Qlen != 5 {
		t.Fatalf("tbf %+v, fq_codel holds %d", st, child.Qlen)
	}
	for i := 1; i <= 3; i++ { // a 3000-byte bucket: three leave at once
		if _, ok := deq(q, ctx); !ok {
			t.Fatalf("packet %d held", i)
		}
	}
	if _, ok := deq(q, ctx); ok || !ctx.WDogArmed {
		t.Fatal("the fourth left without tokens, or no watchdog")
	}
	if _, err := qdisctest.Change(ctx, q, strings.Fields("rate 1mbit burst 3000 limit 5kb")); err != nil {
		t.Fatal(err)
	}
	if _, limit, _, _ := ctx.LeafInfo(q.class()); limit != 10240 {
		t.Errorf("fq_codel's limit %d: fifo_set_limit reaches fifos only", limit)
	}
	// A pfifo there takes the byte limit as packets, as in the kernel.
	ctx = qdisctest.NewCtx(1)
	q = newQ(t, ctx, "rate 1mbit burst 3000 limit 100kb", "parent 1:1 pfifo limit 10")
	if _, err := qdisctest.Change(ctx, q, strings.Fields("rate 1mbit burst 3000 limit 2000")); err != nil {
		t.Fatal(err)
	}
	if kind, limit, _, _ := ctx.LeafInfo(q.class()); kind != "pfifo" || limit != 2000 {
		t.Errorf("pfifo leaf: %s limit %d, want 2000 packets", kind, limit)
	}
	if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: q.class()}); !errors.Is(err, qdisc.ErrParse) {
		t.Errorf("class change: %v", err)
	}
	if err := q.DeleteClass(ctx, q.class()); !errors.Is(err, qdisc.ErrKernel) {
		t.Errorf("class delete: %v", err)
	}
}
