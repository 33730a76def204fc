package red

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newQ(t testing.TB, ctx *qdisctest.Ctx, args string, leaves ...string) *RED {
	t.Helper()
	q := &RED{}
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Leaves: leaves}); err != nil {
		t.Fatal(err)
	}
	return q
}

var next skb.Handle

func send(q *RED, ctx *qdisctest.Ctx, size uint32, ecn uint8) qdisc.Code {
	next++
	rc := make([]qdisc.Code, 1)
	q.Enqueue(ctx, []skb.Packet{{Handle: next, Len: size, ECN: ecn, GSOSegs: 1}}, rc)
	return rc[0]
}

func deq(q *RED, ctx *qdisctest.Ctx) bool {
	return len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)) == 1
}

// tc's fixed point by hand (red.h's own example: min 30 KB, max 90 KB,
// probability 0.02): Wlog from the burst (55 packets of 1000 bytes:
// 55 + 1 - 30 = 26 <= (1 - (31/32)^55) x 32 = 26.4 first at W = 1/32),
// Plog 22 (60000 / 0.02 needs 22 doublings to pass 1), Scell_log 15
// (10 Mbit/s: 12500 ticks an avpkt, -ln(31/32)/12500 a tick, 31 of that
// is 12.2M ticks, 2^15 cells of 512), max_P 0.02 x 2^32.
func TestTcParameters(t *testing.T) {
	o, err := parse(strings.Fields("limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02 bandwidth 10Mbit"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.wlog != 5 || o.plog != 22 || o.scellLog != 15 || o.maxP != 85899345 {
		t.Fatalf("Wlog %d Plog %d Scell_log %d max_P %d", o.wlog, o.plog, o.scellLog, o.maxP)
	}
	// Stab: (i << 15) x 2.54e-6 truncated; the shift is 1 from cell 13.
	if o.stab[12] != 0 || o.stab[13] != 1 || o.stab[255] != 31 {
		t.Fatalf("stab[12..13] %d %d, [255] %d", o.stab[12], o.stab[13], o.stab[255])
	}
	// Floyd's defaults: max = limit/4, min = max/3, burst = (2 min + max) / 3 avpkt.
	o, _ = parse(strings.Fields("limit 1M avpkt 1500"), 0)
	if o.qthMax != 262144 || o.qthMin != 87381 {
		t.Fatalf("defaults min %d max %d", o.qthMin, o.qthMax)
	}
}

// The average by hand (Wlog 5): qavg += backlog - qavg >> 5, after an
// idle start whose first enqueue only decays (nothing to decay).
func TestQavgByHand(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "limit 400000 min 30000 max 90000 avpkt 1000 burst 55")
	for i, want := range []uint64{0, 1000, 2969, 5877} {
		send(q, ctx, 1000, 0)
		if q.vars.QAvg != want {
			t.Fatalf("enqueue %d: qavg %d, want %d", i+1, q.vars.QAvg, want)
		}
	}
	for deq(q, ctx) {
	}
	// Idle 1 ms: Stab[1000 >> 15] is 0, so linear: 5877 x 1000 >> 15 = 179.
	ctx.T += sim.Millisecond
	send(q, ctx, 1000, 0)
	if q.vars.QAvg != 5698 {
		t.Fatalf("after 1 ms idle: %d, want 5698", q.vars.QAvg)
	}
	for deq(q, ctx) {
	}
	// Idle 30 ms: the linear decay is past half, so half.
	ctx.T += 30 * sim.Millisecond
	send(q, ctx, 1000, 0)
	if q.vars.QAvg != 5698/2 {
		t.Fatalf("after 30 ms idle: %d, want %d", q.vars.QAvg, 5698/2)
	}
	for deq(q, ctx) {
	}
	// Idle 10 s: capped at Scell_max (255 cells), Stab[255] = 31.
	ctx.T += 10 * sim.Second
	send(q, ctx, 1000, 0)
	if q.vars.QAvg != 0 {
		t.Fatalf("after 10 s idle: %d", q.vars.QAvg)
	}
}

// Above max every packet is marked: dropped (QDISC_OVERLIMIT) without
// ecn or with harddrop, CE-marked with ecn if it is ECN-capable, and a
// not-ECT one dropped unless nodrop queues it.
func TestHardMark(t *testing.T) {
	cases := []struct {
		flags string
		ecn   uint8
		want  string // dropped, marked, queued
	}{
		{"", 2, "dropped"}, {"ecn", 2, "marked"}, {"ecn", 0, "dropped"}, {"ecn harddrop", 2, "dropped"},
		{"ecn nodrop", 0, "queued"}, {"ecn nodrop", 1, "marked"},
	}
	for _, c := range cases {
		ctx := qdisctest.NewCtx(1)
		// Wlog 2: the average follows the backlog within a few packets.
		q := newQ(t, ctx, "limit 1000000 min 3000 max 9000 avpkt 1000 burst 4 "+c.flags)
		if q.parms.Wlog != 2 {
			t.Fatalf("Wlog %d", q.parms.Wlog)
		}
		for q.vars.QAvg < uint64(q.parms.QthMax) {
			if rc := send(q, ctx, 1000, c.ecn); rc != qdisc.XmitSuccess && q.vars.QAvg < uint64(q.parms.QthMin) {
				t.Fatalf("%s: dropped below min", c.flags)
			}
		}
		before := q.Stats()
		rc := send(q, ctx, 1000, c.ecn)
		after := q.Stats()
		got := "queued"
		switch r, dropped := ctx.Dropped[next]; {
		case dropped:
			got = "dropped"
			// congestion_drop: NET_XMIT_CN, the skb taken as sent.
			if r != skb.DropQdiscOverlimit || rc != qdisc.XmitCN {
				t.Errorf("%s: reason %q, %v, want QDISC_OVERLIMIT, NET_XMIT_CN", c.flags, r, rc)
			}
		case rc != qdisc.XmitSuccess:
			t.Errorf("%s: %v for a packet queued", c.flags, rc)
		case q.stats.forcedMark > 0:
			got = "marked"
		}
		if got != c.want || after.Overlimits != before.Overlimits+1 {
			t.Errorf("flags %q ecn %d: %s (overlimits %d -> %d), want %s", c.flags, c.ecn, got, before.Overlimits, after.Overlimits, c.want)
		}
	}
}

// Between min and max, at a steady backlog B the mark probability is
// p_b = max_P (B - min) / (max - min), and the count since the last mark
// makes the gaps uniform: a mark once qcount x (B - min) passes qR,
// uniform in [0, 2^32 / (max_P / (max - min))). At B = 60000 (min 30000,
// max 90000, max_P 0.02: p_b 0.01) the gap is uniform on 1..100, mean
// 50.5: 1980 marks in 100000 packets, sd 25.
func TestProbabilisticMark(t *testing.T) {
	ctx := qdisctest.NewCtx(3)
	q := newQ(t, ctx, "limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02")
	for q.leaves.Get(q.class()).Backlog < 60000 {
		send(q, ctx, 1000, 0)
	}
	steady := func(n int) (drops int) {
		for range n {
			if send(q, ctx, 1000, 0) == qdisc.XmitCN { // congestion_drop's code
				drops++
				continue
			}
			deq(q, ctx)
		}
		return drops
	}
	steady(3000) // the average settles at B << Wlog
	if got := (q.vars.QAvg - uint64(q.parms.QthMin)) >> q.parms.Wlog; got != 30000 {
		t.Fatalf("settled at %d above min, want 30000", got)
	}
	const n = 100000
	drops := steady(n)
	want := n / 50.5
	if math.Abs(float64(drops)-want) > 5*25.4 {
		t.Errorf("%d drops in %d, want %.0f +- 127", drops, n, want)
	}
	t.Logf("%d probability drops in %d packets at B = 60000 (want %.0f)", drops, n, want)
	if q.stats.forcedDrop != 0 {
		t.Errorf("forced drops %d", q.stats.forcedDrop)
	}
	for _, r := range ctx.Dropped {
		if r != skb.DropQdiscCongested {
			t.Fatalf("probability drop reason %q", r)
		}
	}
}

// The byte limit of the child: pdrop, QDISC_DROP, and the child's
// NET_XMIT_DROP passed up (not congestion_drop's NET_XMIT_CN).
func TestChildLimit(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "limit 2500 min 100000 max 300000 avpkt 1000")
	send(q, ctx, 1000, 0)
	send(q, ctx, 1000, 0)
	if rc := send(q, ctx, 1000, 0); rc != qdisc.XmitDrop || q.stats.pdrop != 1 || ctx.Dropped[next] != skb.DropQdiscDrop {
		t.Fatalf("rc %v pdrop %d reason %q", rc, q.stats.pdrop, ctx.Dropped[next])
	}
}

// Adaptive RED by hand: above the target band max_P grows by
// min(1%, max_P/4); below it, max_P x 0.9. The kernel arms its timer on
// tc_red_qopt's flags, which current tc leaves 0, so `adaptive` is
// dumped but no timer runs.
func TestAdaptive(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "limit 400000 min 30000 max 90000 avpkt 1000 burst 55 adaptive")
	if ctx.TimerArmed || q.flags&flagAdaptative == 0 {
		t.Fatalf("timer armed %v, flags %#x", ctx.TimerArmed, q.flags)
	}
	if q.parms.TargetMin != 30000+2*12000 || q.parms.TargetMax != 30000+3*12000 {
		t.Fatalf("targets %d %d", q.parms.TargetMin, q.parms.TargetMax)
	}
	p0 := q.parms.MaxP
	q.vars.Idling, q.vars.QAvg = false, uint64(70000)<<q.parms.Wlog
	q.redAdaptativeAlgo(ctx)
	if want := p0 + min(maxPMin, p0/4); q.parms.MaxP != want {
		t.Fatalf("above target: max_P %d, want %d", q.parms.MaxP, want)
	}
	q.vars.QAvg = uint64(40000) << q.parms.Wlog
	p1 := q.parms.MaxP
	q.redAdaptativeAlgo(ctx)
	if q.parms.MaxP != p1/10*9 || q.parms.MaxPDelta != (q.parms.MaxP+30000)/60000 {
		t.Fatalf("below target: max_P %d, want %d; delta %d", q.parms.MaxP, p1/10*9, q.parms.MaxPDelta)
	}
}

// A change makes a new child, a bfifo of the new limit, whatever child
// was there (the old one's packets freed, as qdisc_purge_queue does, and
// counted in red's drops) and resets the average.
func TestChange(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "limit 400000 avpkt 1000", "parent 1:1 handle 10: pfifo limit 50")
	if kind, _, _, _ := ctx.LeafInfo(q.class()); kind != "pfifo" {
		t.Fatalf("the grafted child is %q", kind)
	}
	for range 5 {
		send(q, ctx, 1000, 0)
	}
	if _, err := qdisctest.Change(ctx, q, strings.Fields("limit 200000 avpkt 1000 ecn")); err != nil {
		t.Fatal(err)
	}
	kind, limit, _, _ := ctx.LeafInfo(q.class())
	if st := q.Stats(); st.Qlen != 0 || st.Drops != 5 || len(ctx.Dropped) != 5 || q.vars.QAvg != 0 || q.vars.QCount != -1 ||
		kind != "bfifo" || limit != 200000 {
		t.Fatalf("after change: %+v, freed %d, qavg %d, child %s limit %d", st, len(ctx.Dropped), q.vars.QAvg, kind, limit)
	}
	if _, err := q.Change(ctx, strings.Fields("limit 200000 avpkt 1000 nodrop")); err == nil || q.flags&flagECN == 0 {
		t.Fatalf("nodrop without ecn: %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		args  string
		class error
		want  string
	}{
		{"avpkt 1000", qdisc.ErrParse, "Required parameter (limit, avpkt) is missing"},
		{"limit 1M avpkt 1500 min 300K max 100K burst 300", qdisc.ErrParse, "failed to calculate probability"},
		{"limit 1M avpkt 1500 min 300K max 400K burst 10", qdisc.ErrParse, "burst 10 is too small"},
		{"limit 1M avpkt 1500 nodrop", qdisc.ErrKernel, "nodrop mode is only meaningful with ECN"},
		{"limit 1M avpkt 1500 probability lots", qdisc.ErrParse, `Illegal "probability"`},
		{"limit 1M avpkt 1500 qevent mark block 10", qdisc.ErrLacks, "qevent"},
		{"limit 1M avpkt 1500 gentle", qdisc.ErrParse, `unknown option "gentle"`},
	} {
		_, err := (&RED{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(c.args))
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %v containing %q", c.args, err, c.class, c.want)
		}
	}
}

// The kernel's tc-testing cases for red
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/red.json, by id),
// `tc qdisc show` without -d, after "qdisc red 1: root refcnt N ".
func TestTcTesting(t *testing.T) {
	for _, c := range []struct{ id, args, want string }{
		{"8b6e", "limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb $"},
		{"342e", "adaptive limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb adaptive $"},
		{"2d4b", "ecn limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb ecn $"},
		{"650f", "ecn adaptive limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb ecn adaptive $"},
		{"5f15", "ecn harddrop limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb ecn harddrop $"},
		{"53e8", "ecn nodrop limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb ecn nodrop $"},
		{"af8e", "ecn harddrop nodrop limit 1M avpkt 1500 min 100K max 300K", "limit 1Mb min 100Kb max 300Kb ecn harddrop nodrop $"},
	} {
		q := newQ(t, qdisctest.NewCtx(1), c.args)
		if got := q.print(false); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("%s: %q, want /%s/", c.id, got, c.want)
		}
	}
	// d091: nodrop alone, tc exits 2 (the kernel refuses).
	if _, err := (&RED{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields("nodrop limit 1M avpkt 1500 min 100K max 300K")); !errors.Is(err, qdisc.ErrKernel) {
		t.Errorf("d091: %v", err)
	}
	// Under -d: ewma, probability (the kernel always dumps max_P), Scell_log.
	q := newQ(t, qdisctest.NewCtx(1), "limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02 bandwidth 10Mbit ecn")
	if got, want := q.Dump(), "limit 400000b min 30000b max 90000b ecn ewma 5 probability 0.02 Scell_log 15"; got != want {
		t.Errorf("-d: %q, want %q", got, want)
	}
	var parts []string
	for _, x := range q.Stats().XStats {
		parts = append(parts, x.Key+" "+x.Text())
	}
	if got := strings.Join(parts, " "); got != "marked 0 early 0 pdrop 0 other 0" {
		t.Errorf("xstats %q", got)
	}
}

func TestConformance(t *testing.T) {
	for _, args := range []string{
		"limit 400000 min 30000 max 90000 avpkt 1000 burst 55",
		"limit 100000 avpkt 1000 ecn",
		"limit 60000 min 3000 max 9000 avpkt 1000 burst 4 ecn harddrop",
		"limit 1M avpkt 1500 ecn nodrop adaptive probability 0.1",
	} {
		t.Run(args, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("red"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(args), Seed: 1}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// A dequeue that finds the child empty starts the idle period
// (red_dequeue's red_start_of_idle_period), which the average then
// decays over: the host must call it, so red does not declare
// EmptyNoop (a qdisc whose empty dequeue the host may skip).
func TestEmptyDequeueStartsIdle(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "limit 400000 min 30000 max 90000 avpkt 1000 burst 55")
	send(q, ctx, 1000, 0)
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil); len(out) != 1 || q.vars.Idling {
		t.Fatalf("dequeued %d, idling %v", len(out), q.vars.Idling)
	}
	ctx.T += sim.Millisecond
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil); len(out) != 0 || !q.vars.Idling || q.vars.IdleStart != ctx.T {
		t.Errorf("an empty dequeue: idling %v from %v (now %v)", q.vars.Idling, q.vars.IdleStart, ctx.T)
	}
	info, _ := qdisctest.Change(ctx, q, strings.Fields("limit 400000 min 30000 max 90000 avpkt 1000 burst 55"))
	if info.Flags&qdisc.EmptyNoop != 0 {
		t.Error("red declares EmptyNoop, so the host may skip the empty dequeue that starts its idle period")
	}
}
