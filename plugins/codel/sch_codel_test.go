package codel

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// t0 is when the tests start (a kernel's clock is never near 0, and
// first_above_time 0 means unset).
const t0 = sim.Second

type gen struct{ h skb.Handle }

func (g *gen) pkt(size uint32, ecn uint8) skb.Packet {
	g.h++
	return skb.Packet{Handle: g.h, Len: size, TrueSize: 2048, ECN: ecn, Sock: 1, GSOSegs: 1}
}

func enqueue(q qdisc.Qdisc, ctx qdisc.Ctx, ps ...skb.Packet) []qdisc.Code {
	rc := make([]qdisc.Code, len(ps))
	q.Enqueue(ctx, ps, rc)
	return rc
}

// standing is a standing queue: n packets of 1000 bytes (ECN field ecn)
// at t0, then every millisecond for steps ms one more arrives and one is
// dequeued, so the sojourn time grows past any target and stays there.
// It returns the ms (after t0) of each CoDel signal (a QDISC_CONGESTED
// drop, or a packet that left marked CE), and calls at after each step.
func standing(t *testing.T, q *Sched, ctx *qdisctest.Ctx, n, steps int, ecn uint8, at func(ms int)) []int {
	t.Helper()
	var g gen
	ctx.T = t0
	for range n {
		enqueue(q, ctx, g.pkt(1000, ecn))
	}
	var signals []int
	for ms := 1; ms <= steps; ms++ {
		ctx.T = t0 + sim.Time(ms)*sim.Millisecond
		enqueue(q, ctx, g.pkt(1000, ecn))
		before := len(ctx.Dropped)
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 20}, nil)
		for h, r := range ctx.Dropped {
			if r != skb.DropQdiscCongested {
				t.Fatalf("packet %d dropped %s", h, r)
			}
		}
		if len(ctx.Dropped) > before || len(out) == 1 && out[0].ECN == 3 && ecn != 3 {
			signals = append(signals, ms)
		}
		if at != nil {
			at(ms)
		}
	}
	return signals
}

// CoDel under a standing queue above target: nothing until the sojourn
// time has stayed above target (5 ms) for an interval (100 ms), then a
// drop, and the next ones interval * rec_inv_sqrt apart, the reciprocal
// square root of count moved one Newton step per drop from 1.0 (0.5 at
// count 2, 0.5625 at 3, 0.488 at 4: gaps of 100, 50, 56 and 49 ms, not
// interval/sqrt(count)'s 100, 71, 58, 50): codel_dequeue's state machine
// on the kernel's control law. The xstats follow it (count, lastcount,
// dropping, drop_next, ldelay).
func TestDropsAfterInterval(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newSched(t, ctx, "")
	var afterFirst []int64
	drops := standing(t, q, ctx, 300, 400, 0, func(ms int) {
		if q.drops == 1 && afterFirst == nil {
			afterFirst = []int64{qdisctest.XStat(q, "count"), qdisctest.XStat(q, "lastcount"), qdisctest.XStat(q, "dropping"), qdisctest.XStat(q, "drop_next"), qdisctest.XStat(q, "ldelay")}
		}
	})
	t.Logf("drops at ms %v", drops)
	if len(drops) < 5 {
		t.Fatalf("drops at %v: want at least 5 in 400 ms", drops)
	}
	if drops[0] < 105 || drops[0] > 107 {
		t.Errorf("first drop at %d ms, want after 5 ms above target plus 100 ms", drops[0])
	}
	for i, want := range []float64{100, 50, 56.25, 48.8} {
		if gap := float64(drops[i+1] - drops[i]); math.Abs(gap-want) > 1.5 {
			t.Errorf("gap %d: %.0f ms, want %.1f (interval * rec_inv_sqrt)", i+1, gap, want)
		}
	}
	// After the first drop: count 1, in the dropping state, the next
	// drop an interval on (in us, a little under: 1024 ns units).
	if c := afterFirst; c[0] != 1 || c[1] != 1 || c[2] != 1 || c[3] < 99000 || c[3] > 100000 || c[4] < 100000 || c[4] > 110000 {
		t.Errorf("xstats after the first drop: count %d lastcount %d dropping %d drop_next %dus ldelay %dus", c[0], c[1], c[2], c[3], c[4])
	}
	if st := q.Stats(); st.Drops != uint64(len(drops)) || st.Overlimits != 0 || qdisctest.XStat(q, "maxpacket") != 1000 || qdisctest.XStat(q, "ecn_mark") != 0 {
		t.Errorf("stats %+v", st)
	}
	// Drained, the next dequeue finds nothing and leaves the dropping
	// state (codel_dequeue on an empty queue), so the qdisc cannot
	// declare EmptyNoop.
	for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)) > 0 {
	}
	if q.vars.Dropping || q.flags&qdisc.EmptyNoop != 0 {
		t.Errorf("dropping %v after an empty dequeue, flags %#x", q.vars.Dropping, q.flags)
	}
}

// With ecn, an ECN-capable packet is marked CE where it would have been
// dropped: the same schedule, nothing dropped, ecn_mark counting. A
// packet that is not ECN-capable is dropped as without ecn.
func TestECNMarksInstead(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newSched(t, ctx, "ecn")
	marks := standing(t, q, ctx, 300, 400, 2, nil) // ECT(0)
	t.Logf("marks at ms %v", marks)
	if len(ctx.Dropped) != 0 || q.Stats().Drops != 0 {
		t.Fatalf("dropped %d ECN-capable packets", len(ctx.Dropped))
	}
	if len(marks) < 4 || marks[0] < 105 || marks[0] > 107 || int64(len(marks)) != qdisctest.XStat(q, "ecn_mark") {
		t.Fatalf("marks at %v, ecn_mark %d", marks, qdisctest.XStat(q, "ecn_mark"))
	}
	ctx = qdisctest.NewCtx(1)
	q = newSched(t, ctx, "ecn")
	if drops := standing(t, q, ctx, 300, 200, 0, nil); len(drops) == 0 || q.Stats().Drops == 0 || qdisctest.XStat(q, "ecn_mark") != 0 {
		t.Fatalf("not-ECT packets under ecn: drops %v, ecn_mark %d", drops, qdisctest.XStat(q, "ecn_mark"))
	}
}

// ce_threshold marks CE every ECN-capable packet whose sojourn time is
// above it, whatever CoDel's state (here a target CoDel never reaches).
func TestCEThreshold(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newSched(t, ctx, "ce_threshold 2ms target 1s")
	var g gen
	ctx.T = t0
	for range 10 {
		enqueue(q, ctx, g.pkt(1000, 1)) // ECT(1)
	}
	var ce []skb.Handle
	for ms := 1; ms <= 10; ms++ {
		ctx.T = t0 + sim.Time(ms)*sim.Millisecond
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 20}, nil) {
			if p.ECN == 3 {
				ce = append(ce, p.Handle)
			}
		}
	}
	if !slices.Equal(ce, []skb.Handle{3, 4, 5, 6, 7, 8, 9, 10}) || qdisctest.XStat(q, "ce_mark") != 8 || len(ctx.Dropped) != 0 {
		t.Fatalf("CE on %v, ce_mark %d, dropped %v", ce, qdisctest.XStat(q, "ce_mark"), ctx.Dropped)
	}
}

// At the limit codel_qdisc_enqueue drops the packet (QDISC_OVERLIMIT,
// NET_XMIT_DROP) and counts it in drop_overlimit; tc never sends a
// limit of 0 (nor a target or interval of 0), so "limit 0" keeps 1000.
func TestLimit(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newSched(t, ctx, "limit 5")
	var g gen
	var ps []skb.Packet
	for range 7 {
		ps = append(ps, g.pkt(500, 0))
	}
	rc := enqueue(q, ctx, ps...)
	if !slices.Equal(rc, []qdisc.Code{0, 0, 0, 0, 0, qdisc.XmitDrop, qdisc.XmitDrop}) || ctx.Dropped[6] != skb.DropQdiscOverlimit {
		t.Fatalf("codes %v, dropped %v", rc, ctx.Dropped)
	}
	if st := q.Stats(); st.Qlen != 5 || st.Backlog != 2500 || st.Drops != 2 || qdisctest.XStat(q, "drop_overlimit") != 2 {
		t.Fatalf("stats %+v", st)
	}
	for args, want := range map[string]string{"limit 0 target 0 interval 0": "limit 1000p target 5ms interval 100ms ",
		"ce_threshold 4294967295": "limit 1000p target 5ms interval 100ms ", "ecn noecn": "limit 1000p target 5ms interval 100ms ",
		"limit 0x10 target 500us interval 1s ce_threshold 300us ecn": "limit 16p target 499us ce_threshold 299us interval 1e+03ms ecn "} {
		if got := newSched(t, ctx, args).Dump(); got != want {
			t.Errorf("%q: dump %q, want %q", args, got, want)
		}
	}
}

// codel_init: CAN_BYPASS with a limit of at least 1, TCQ_F_DEQUEUE_DROPS,
// the model's cache-line flags, sch->limit in packets, and CoDel's mtu
// psched_mtu clamped to [256, 1 << 20]; ECN off by default.
func TestInit(t *testing.T) {
	info, err := (&Sched{}).Init(qdisctest.NewCtx(1), setup, nil)
	if err != nil || info.Flags != qdisc.CanBypass|qdisc.DequeueDrops || info.Limit != 1000 {
		t.Fatalf("info %+v %v", info, err)
	}
	for mtu, want := range map[int]uint32{1514: 1514, 100: 256, 9014: 9014, 4 << 20: 1 << 20} {
		s := setup
		s.MTU = mtu
		q := &Sched{}
		q.Init(qdisctest.NewCtx(1), s, nil)
		if q.params.MTU != want || q.params.ECN {
			t.Errorf("psched_mtu %d: codel mtu %d ecn %v, want %d", mtu, q.params.MTU, q.params.ECN, want)
		}
	}
	keys := qdisctest.XStatKeys(newSched(t, qdisctest.NewCtx(1), "").Stats().XStats)
	if got := strings.Join(keys, " "); got != "count lastcount ldelay dropping drop_next maxpacket ecn_mark drop_overlimit ce_mark" {
		t.Errorf("xstats %s", got)
	}
}

// codel_change: the new limit trims from the head, the packet
// codel_peek set aside first (qdisc_dequeue_internal), each a counted
// drop freed as NOT_SPECIFIED (rtnl_qdisc_drop); CAN_BYPASS stays as
// init set it; a refused change changes nothing.
func TestChange(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	ctx.T = t0
	q := newSched(t, ctx, "limit 1")
	var g gen
	for range 10 {
		q.limit = 1000
		enqueue(q, ctx, g.pkt(100, 0))
	}
	q.limit = 1000
	if p, ok := q.Peek(ctx); !ok || p.Handle != 1 || q.Stats().Qlen != 10 || q.Stats().Backlog != 1000 {
		t.Fatalf("peek %v %v, stats %+v", p, ok, q.Stats())
	}
	info, err := q.Change(ctx, strings.Fields("limit 4 target 2ms"))
	if err != nil || info.Limit != 4 || info.Flags&qdisc.CanBypass == 0 {
		t.Fatalf("change: %+v %v", info, err)
	}
	for h := skb.Handle(1); h <= 6; h++ {
		if ctx.Dropped[h] != skb.DropNotSpecified {
			t.Fatalf("packet %d: dropped %q, want NOT_SPECIFIED (all: %v)", h, ctx.Dropped[h], ctx.Dropped)
		}
	}
	if st := q.Stats(); st.Qlen != 4 || st.Backlog != 400 || st.Drops != 6 || !strings.HasPrefix(q.Dump(), "limit 4p target 2ms ") {
		t.Fatalf("after change: %+v %q", st, q.Dump())
	}
	if _, err := q.Change(ctx, strings.Fields("limit 2 bogus")); !errors.Is(err, qdisc.ErrParse) || q.Stats().Qlen != 4 {
		t.Fatalf("refused change: %v, qlen %d", err, q.Stats().Qlen)
	}
	// Peek then dequeue gives the same packet; reset purges all and the vars.
	p, _ := q.Peek(ctx)
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1}, nil); len(out) != 1 || out[0].Handle != p.Handle {
		t.Fatalf("peek %d, dequeue %v", p.Handle, out)
	}
	q.Peek(ctx)
	q.vars.Count = 7
	q.Reset(ctx)
	// The queue is freed as rtnl_kfree_skbs frees it (NOT_SPECIFIED),
	// the packet the peek set aside as qdisc_reset's __skb_queue_purge
	// of gso_skb (QUEUE_PURGE).
	if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 || q.vars.Count != 0 || ctx.Dropped[10] != skb.DropNotSpecified || ctx.Dropped[8] != skb.DropQueuePurge {
		t.Fatalf("reset: %+v, vars %+v, dropped %v", st, q.vars, ctx.Dropped)
	}
}

// Bad options give q_codel.c's messages, as tc's parse errors.
func TestOptionErrors(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"limit x", `codel: Illegal "limit": "x" is not an unsigned number`},
		{"limit 100p", `codel: Illegal "limit": "100p" is not an unsigned number`},
		{"target 5xs", `codel: Illegal "target": "5xs" is not a time: unknown unit "xs"`},
		{"interval -3ms", `codel: Illegal "interval": "-3ms" is not a time: it is negative`},
		{"ce_threshold lots", `codel: Illegal "ce_threshold": "lots" is not a time`},
		{"flows 16", `codel: What is "flows"? Usage: ... codel [ limit PACKETS ] [ target TIME ] [ interval TIME ] [ ecn | noecn ] [ ce_threshold TIME ]`},
		{"help", `codel: Usage: ... codel [ limit PACKETS ]`},
		{"target", `codel: option "target" needs a value`},
	} {
		_, err := (&Sched{}).Init(qdisctest.NewCtx(1), setup, strings.Fields(c.args))
		if !errors.Is(err, qdisc.ErrParse) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want a parse error %q", c.args, err, c.want)
		}
	}
}

// Enqueue is priced as one enqueue and one ktime_get
// (codel_set_enqueue_time); a dequeue as one dequeue_func and one
// ktime_get (codel_get_time), as fq_codel reports them.
func TestWorkReported(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newSched(t, ctx, "")
	var g gen
	enqueue(q, ctx, g.pkt(100, 0), g.pkt(100, 0))
	if w := ctx.WorkDone; w[qdisc.WorkEnqueue] != 2 || w[qdisc.WorkTstamp] != 2 || w[qdisc.WorkDequeue] != 0 {
		t.Fatalf("enqueue work %v", w)
	}
	ctx.WorkDone = [qdisc.NumWork]int{}
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1}, nil)
	if w := ctx.WorkDone; w[qdisc.WorkDequeue] != 1 || w[qdisc.WorkTstamp] != 1 || w[qdisc.WorkEnqueue] != 0 {
		t.Fatalf("dequeue work %v", w)
	}
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		args  string
		limit int
	}{
		{"", 1000},
		{"limit 100 target 1ms interval 10ms ecn", 100},
		{"limit 50 target 1us interval 2us", 50}, // CoDel drops within the suite's microseconds
		{"limit 200 target 1us interval 2us ecn ce_threshold 1us", 200},
		{"limit 1", 1},
	} {
		t.Run(c.args, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("codel"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(c.args), Limit: c.limit, Seed: 3}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}
