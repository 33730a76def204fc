package pie

import (
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newPIE(t testing.TB, ctx *qdisctest.Ctx, args string) *PIE {
	t.Helper()
	q := &PIE{}
	if _, err := ctx.Init(q, qdisctest.DefaultSetup(), strings.Fields(args)); err != nil {
		t.Fatal(err)
	}
	return q
}

var next skb.Handle

func send(q qdisc.Qdisc, ctx *qdisctest.Ctx, size uint32, ecn uint8) qdisc.Code {
	next++
	rc := make([]qdisc.Code, 1)
	q.Enqueue(ctx, []skb.Packet{{Handle: next, Len: size, TrueSize: 2048, ECN: ecn, GSOSegs: 1, Hash: uint32(next) * 2654435761}}, rc)
	return rc[0]
}

func deq(q qdisc.Qdisc, ctx *qdisctest.Ctx) bool {
	return len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)) == 1
}

// pie_calculate_probability by hand, defaults (alpha 2, beta 20, target
// 15 ms = 234375 ticks): MAX_PROB / PSCHED_TICKS_PER_SEC = 4611686018;
// alpha = 2 x that >> 4 = 576460752, beta 5764607522; at prob 0 both are
// halved and shifted by 2 five times (power 100 .. 10^6): 281474 and
// 2814749. A 20 ms delay (312500 ticks) after 0: delta = 281474 x 78125
// + 2814749 x 312500 = 901599218750. The next update at the same delay:
// at prob 1.25e-5 only three shifts (power 10^5 stops): alpha 4503599,
// and no trend: + 4503599 x 78125.
func TestCalculateProbabilityByHand(t *testing.T) {
	p := paramsInit()
	var v vars
	v.varsInit()
	v.qdelay = psched.NsToTicks(20e6)
	calculateProbability(&p, &v, 30000)
	if v.prob != 901599218750 || v.qdelayOld != 312500 {
		t.Fatalf("prob %d qdelay_old %d, want 901599218750 312500", v.prob, v.qdelayOld)
	}
	calculateProbability(&p, &v, 30000)
	if v.prob != 901599218750+4503599*78125 {
		t.Fatalf("second update: %d, want %d", v.prob, 901599218750+4503599*78125)
	}
	// A delay over 250 ms adds 2% at once.
	v = vars{qdelay: psched.NsToTicks(300e6), qdelayOld: psched.NsToTicks(300e6)}
	calculateProbability(&p, &v, 30000)
	if v.prob < maxProb/50 {
		t.Fatalf("over 250 ms: prob %d, want at least 2%%", v.prob)
	}
	// Two idle updates decay it by 1/64 a time (a target of 0 keeps
	// alpha's term out).
	v, p.target = vars{prob: 1 << 40}, 0
	calculateProbability(&p, &v, 0)
	if v.prob != 1<<40-1<<40/64 {
		t.Fatalf("idle decay: %d", v.prob)
	}
}

// pie_drop_early's derandomisation at 10%: accu_prob must reach 0.85
// before a drop can fall (9 packets of 0.1), then each packet drops with
// 10%, and at 8.5 (86 packets) a drop is forced: the gap between drops
// is 8 + a geometric of mean 10, mean 18 (sd 9.5; over 2000 gaps the
// mean is within 1.1 at 5 sd).
func TestDropEarlyGaps(t *testing.T) {
	ctx := qdisctest.NewCtx(5)
	q := newPIE(t, ctx, "limit 100000")
	for range 3 {
		send(q, ctx, 1500, 0)
	}
	q.vars.burstTime, q.vars.prob = 0, maxProb/10
	var gaps []int
	since := 0
	for len(gaps) < 2000 {
		ctx.T += 10 * sim.Millisecond // the dequeued packet is 30 ms old: above target/2
		since++
		if send(q, ctx, 1500, 0) == qdisc.XmitDrop {
			gaps = append(gaps, since)
			since = 0
			continue
		}
		deq(q, ctx)
	}
	sum, lo, hi := 0, math.MaxInt, 0
	for _, g := range gaps[1:] {
		sum += g
		lo, hi = min(lo, g), max(hi, g)
	}
	mean := float64(sum) / float64(len(gaps)-1)
	t.Logf("gaps: min %d max %d mean %.2f", lo, hi, mean)
	if lo < 9 || hi > 86 || math.Abs(mean-18) > 1.1 {
		t.Fatalf("gaps min %d max %d mean %.2f, want >= 9, <= 86, 18 +- 1.1", lo, hi, mean)
	}
	if q.stats.dropped != uint32(len(gaps)) || ctx.Dropped[next] != skb.DropQdiscCongested {
		t.Fatalf("dropped %d, reason %q", q.stats.dropped, ctx.Dropped[next])
	}
}

// With ecn, a packet PIE would drop is CE-marked instead while the
// probability is at most 10%, and dropped above it; the burst allowance
// (150 ms) keeps every packet; the limit drops with QDISC_OVERLIMIT.
func TestECNBurstLimit(t *testing.T) {
	for _, c := range []struct {
		prob uint64
		mark bool
	}{{maxProb / 10, true}, {maxProb / 5, false}} {
		ctx := qdisctest.NewCtx(1)
		q := newPIE(t, ctx, "ecn")
		for range 3 {
			send(q, ctx, 1500, 2)
		}
		q.vars.burstTime, q.vars.prob, q.vars.qdelay = 0, c.prob, q.params.target
		marked, dropped := 0, 0
		for range 1000 {
			ctx.T += 10 * sim.Millisecond // queued packets age past target/2
			switch {
			case send(q, ctx, 1500, 2) == qdisc.XmitDrop:
				dropped++
			default:
				deq(q, ctx)
			}
		}
		marked = int(q.stats.ecnMark)
		if (marked > 0) != c.mark || (dropped > 0) == c.mark {
			t.Errorf("prob %.2f: %d marked, %d dropped", float64(c.prob)/float64(maxProb), marked, dropped)
		}
	}
	ctx := qdisctest.NewCtx(1)
	q := newPIE(t, ctx, "limit 5")
	q.vars.prob = maxProb // certain drop, but for the burst allowance
	for range 5 {
		if send(q, ctx, 1500, 0) != qdisc.XmitSuccess {
			t.Fatal("dropped within the burst allowance")
		}
	}
	if send(q, ctx, 1500, 0) != qdisc.XmitDrop || ctx.Dropped[next] != skb.DropQdiscOverlimit || q.stats.overlimit != 1 {
		t.Fatalf("over the limit: reason %q, overlimit %d", ctx.Dropped[next], q.stats.overlimit)
	}
}

// The drain-rate estimator by hand: 1000-byte packets dequeued every
// 1000 ticks (64 us) from a backlog of 20000 bytes: the 17th dequeue
// passes QUEUE_THRESHOLD with 17000 bytes over 16000 ticks,
// 17000 << 8 / 16000 = 272 (bytes per tick, << 8): the kernel reports
// 272 x 15625000 >> 8 = 16601562 bytes/s, which pie_print_xstats prints
// as a rate (tc_print_rate): 132812496 bit/s, "132812Kbit".
func TestDqRateEstimator(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newPIE(t, ctx, "dq_rate_estimator limit 1000")
	for range 40 {
		send(q, ctx, 1000, 0)
	}
	for range 17 {
		deq(q, ctx)
		ctx.T += 64 * sim.Microsecond
	}
	if q.vars.avgDqRate != 272 {
		t.Fatalf("avg_dq_rate %d, want 272", q.vars.avgDqRate)
	}
	var got string
	for _, x := range q.Stats().XStats {
		if x.Key == "avg_dq_rate" {
			got = x.Text()
		}
	}
	if got != "132812Kbit" {
		t.Fatalf("avg_dq_rate xstat %q", got)
	}
	// Little's law: 23000 bytes at 272/256 bytes a tick is 21647 ticks.
	calculateProbability(&q.params, &q.vars, uint32(q.backlog))
	if q.vars.qdelay != (23000<<8)/272 {
		t.Fatalf("qdelay %d ticks, want %d", q.vars.qdelay, (23000<<8)/272)
	}
}

// The timer: armed at HZ/2 by init, then every tupdate.
func TestTimer(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newPIE(t, ctx, "tupdate 30ms")
	if !ctx.TimerArmed || ctx.TimerAt != 500*sim.Millisecond || q.params.tupdate != 30 {
		t.Fatalf("timer %v at %d, tupdate %d", ctx.TimerArmed, ctx.TimerAt, q.params.tupdate)
	}
	ctx.T = ctx.TimerAt
	q.Timer(ctx)
	if ctx.TimerAt != 530*sim.Millisecond {
		t.Fatalf("re-armed at %d", ctx.TimerAt)
	}
}

// pie_change trims to a lowered limit from the head, counting drops
// (tc-testing 6158: pie limit 10, ten packets, change to limit 1).
func TestChangeTrims(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newPIE(t, ctx, "limit 10")
	for range 10 {
		send(q, ctx, 100, 0)
	}
	if _, err := q.Change(ctx, strings.Fields("limit 1")); err != nil {
		t.Fatal(err)
	}
	if q.q.Len() != 1 || q.drops != 9 || !strings.HasPrefix(q.Dump(), "limit 1p") {
		t.Fatalf("qlen %d drops %d dump %q", q.q.Len(), q.drops, q.Dump())
	}
}

func TestDumpAndErrors(t *testing.T) {
	for _, c := range []struct{ kind, args, want string }{
		{"pie", "", "limit 1000p target 15ms tupdate 15ms alpha 2 beta 20 "},
		{"pie", "limit 100 target 20ms tupdate 30ms ecn", "limit 100p target 20ms tupdate 30ms alpha 2 beta 20 ecn "},
		{"pie", "bytemode dq_rate_estimator alpha 4 beta 32", "limit 1000p target 15ms tupdate 15ms alpha 4 beta 32 bytemode dq_rate_estimator "},
		// tc-testing fq_pie 83be.
		{"fq_pie", "flows 65536", "limit 10240p flows 65536 "},
		{"fq_pie", "", "limit 10240p flows 1024 target 15ms tupdate 15ms alpha 2 beta 20 quantum 1514b memory_limit 32Mb ecn_prob 10 "},
	} {
		q, _ := qdisc.New(c.kind)
		if _, err := qdisctest.NewCtx(1).Init(q, qdisctest.DefaultSetup(), strings.Fields(c.args)); err != nil {
			t.Fatal(err)
		}
		if got := q.Dump(); !regexp.MustCompile("^" + regexp.QuoteMeta(c.want)).MatchString(got) {
			t.Errorf("%s %q: %q, want %q...", c.kind, c.args, got, c.want)
		}
	}
	for _, c := range []struct {
		kind, args string
		class      error
		want       string
	}{
		{"pie", "alpha 33", qdisc.ErrParse, `Illegal "alpha"`},
		{"pie", "flows 16", qdisc.ErrParse, `unknown option "flows"`},
		{"fq_pie", "ecn_prob 100", qdisc.ErrParse, `Illegal "ecn_prob"`},
		{"fq_pie", "flows 70000", qdisc.ErrKernel, "Number of flows must range in [1..65536]"},
		{"fq_pie", "quantum 2mb", qdisc.ErrKernel, "out of range"},
	} {
		q, _ := qdisc.New(c.kind)
		_, err := q.Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(c.args))
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %v containing %q", c.kind, c.args, err, c.class, c.want)
		}
	}
	// fq_pie's flows cannot change once the table exists.
	q, _ := qdisc.New("fq_pie")
	ctx := qdisctest.NewCtx(1)
	ctx.Init(q, qdisctest.DefaultSetup(), nil)
	if _, err := qdisc.Change(q, ctx, strings.Fields("flows 16")); !errors.Is(err, qdisc.ErrKernel) {
		t.Errorf("change flows: %v", err)
	}
	// The xstats line, as the man page's (tc-pie.8) first example shows
	// it, on one line here.
	p := newPIE(t, qdisctest.NewCtx(1), "")
	p.vars.prob, p.vars.qdelay = uint64(0.006161*float64(maxProb)), psched.NsToTicks(15666e3)
	var parts []string
	for _, x := range p.Stats().XStats {
		parts = append(parts, x.Key+" "+x.Text())
	}
	if got := strings.Join(parts, " "); got != "prob 0.006161 delay 15.7ms pkts_in 0 overlimit 0 dropped 0 maxq 0 ecn_mark 0" {
		t.Errorf("xstats %q", got)
	}
}

// FQ-PIE: flows served by DRR, each with its own PIE: a flow with a deep
// queue and a high probability is dropped, a thin one is not.
func TestFQPIEIsolation(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q, _ := qdisc.New("fq_pie")
	ctx.Init(q, qdisctest.DefaultSetup(), strings.Fields("flows 16"))
	fq := q.(*FQPIE)
	pkt := func(flow uint32) qdisc.Code {
		next++
		rc := make([]qdisc.Code, 1)
		q.Enqueue(ctx, []skb.Packet{{Handle: next, Len: 1500, TrueSize: 2048, Priority: 1<<16 | flow, GSOSegs: 1}}, rc)
		return rc[0]
	}
	fq.handleMajor = 1
	for range 10 {
		pkt(1)
	}
	fq.flows[0].vars.burstTime, fq.flows[0].vars.prob, fq.flows[0].vars.qdelay = 0, maxProb, fq.params.target
	// fq_pie_qdisc_enqueue's drops return NET_XMIT_CN (the sender's
	// skb counts as sent), where pie's return NET_XMIT_DROP.
	if rc := pkt(1); rc != qdisc.XmitCN || ctx.Dropped[next] != skb.DropQdiscCongested {
		t.Fatalf("the fat flow at probability 1: %v, reason %q; want NET_XMIT_CN, dropped", rc, ctx.Dropped[next])
	}
	if pkt(2) != qdisc.XmitSuccess || fq.newFlowCount != 2 {
		t.Fatalf("the thin flow was dropped, or not a new flow (%d)", fq.newFlowCount)
	}
	// DRR: a quantum of 1514 takes two 1500-byte packets of flow 1 (the
	// deficit is checked before each), then flow 2's, then flow 1 again.
	var order []uint32
	for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil) {
		order = append(order, p.Priority&0xffff)
	}
	if want := []uint32{1, 1, 2, 1}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		kind, args string
		limit      int
	}{
		{"pie", "", 1000},
		{"pie", "limit 100 target 1ms tupdate 2ms ecn bytemode", 100},
		{"pie", "limit 200 dq_rate_estimator", 200},
		{"fq_pie", "", 0},
		{"fq_pie", "limit 300 flows 8 quantum 300 memory_limit 64kb ecn ecn_prob 50 target 1ms", 300},
		{"fq_pie", "flows 1 dq_rate_estimator bytemode", 0},
	} {
		t.Run(c.kind+" "+c.args, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New(c.kind); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(c.args), Limit: c.limit, Seed: 1}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// fq_pie_qdisc_enqueue's overlimit drop returns NET_XMIT_CN too; its
// memory check sums memory_limit and truesize in a u32, so a limit near
// 4 GB wraps and counts overmemory; fq_pie_init clamps the default
// quantum (psched_mtu) to [256, 1 << 20].
func TestFQPIEKernelEdges(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     string
		mtu      int
		memLimit uint32
		sends    int
		rc       qdisc.Code // the last send's
		over     uint32     // overmemory
		quantum  uint32
	}{
		{"limit", "limit 2", 1514, 32 << 20, 3, qdisc.XmitCN, 0, 1514},
		{"memory_limit wraps", "", 1514, math.MaxUint32, 2, qdisc.XmitSuccess, 1, 1514},
		{"small mtu", "", 200, 32 << 20, 1, qdisc.XmitSuccess, 0, 256},
	} {
		ctx := qdisctest.NewCtx(1)
		s := qdisctest.DefaultSetup()
		s.MTU = tt.mtu
		q := &FQPIE{}
		if _, err := ctx.Init(q, s, strings.Fields(tt.args)); err != nil {
			t.Fatal(err)
		}
		q.memoryLimit = tt.memLimit
		var rc qdisc.Code
		for range tt.sends {
			rc = send(q, ctx, 100, 0)
		}
		if rc != tt.rc || q.overmemory != tt.over || q.quantum != tt.quantum {
			t.Errorf("%s: rc %v overmemory %d quantum %d, want %v %d %d", tt.name, rc, q.overmemory, q.quantum, tt.rc, tt.over, tt.quantum)
		}
	}
}

// The kernel's u32 arithmetic: pie_process_dequeue's dtime is a u32 of
// ticks (a 2^32 + 5 tick gap spends 5 of the burst allowance);
// pie_calculate_probability's backlog << PIE_SCALE is a u32 (16 MB and
// 1000 bytes at 1 byte a tick is 1000 ticks); struct pie_stats' u32
// counters wrap.
func TestU32Arithmetic(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newPIE(t, ctx, "")
	send(q, ctx, 100, 0)
	send(q, ctx, 100, 0)
	deq(q, ctx) // the first dequeue sets dq_tstamp
	ctx.T += sim.Time(1<<32+5) * 64
	deq(q, ctx)
	if want := psched.NsToTicks(150e6) - 5; q.vars.burstTime != want {
		t.Errorf("burst_time %d after a 2^32+5 tick gap, want %d", q.vars.burstTime, want)
	}
	p := paramsInit()
	p.dqRateEstimator = true
	v := vars{avgDqRate: 1 << pieScale}
	calculateProbability(&p, &v, 1<<24+1000)
	if v.qdelay != 1000 {
		t.Errorf("qdelay %d ticks for a backlog of 16 MB + 1000, want 1000", v.qdelay)
	}
	q.stats.packetsIn = math.MaxUint32
	send(q, ctx, 100, 0)
	if q.stats.packetsIn != 0 {
		t.Errorf("packets_in %d, want 0 (wrapped)", q.stats.packetsIn)
	}
}

// fq_pie_change applies the limit before it refuses a number of flows
// (the table exists): the new limit stays, and nothing after it is
// applied: not the target, not the trim of the queue to the limit.
func TestFQPIEChangeKeepsLimitWhenFlowsRefused(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q, _ := qdisc.New("fq_pie")
	ctx.Init(q, qdisctest.DefaultSetup(), nil)
	fq := q.(*FQPIE)
	target := fq.params.target
	rc := make([]qdisc.Code, 1)
	for i := range 10 {
		q.Enqueue(ctx, []skb.Packet{{Handle: skb.Handle(100 + i), Len: 1000, TrueSize: 2048, Hash: uint32(i) << 28, GSOSegs: 1}}, rc)
	}
	_, err := qdisc.Change(q, ctx, strings.Fields("limit 5 target 1ms flows 16"))
	var pc *qdisc.PartialChange
	if !errors.Is(err, qdisc.ErrKernel) || !strings.Contains(err.Error(), "Number of flows cannot be changed") || !errors.As(err, &pc) {
		t.Fatalf("change: %v, want the flows refusal after part of it", err)
	}
	if fq.params.limit != 5 || pc.Info.Limit != 5 || fq.params.target != target || fq.qlen != 10 || len(ctx.Dropped) != 0 {
		t.Errorf("after the refusal: limit %d (Info %d), target changed %v, qlen %d, %d dropped; want limit 5, the target as it was, 10 queued, none dropped",
			fq.params.limit, pc.Info.Limit, fq.params.target != target, fq.qlen, len(ctx.Dropped))
	}
	// The limit holds: the next packet is over it.
	q.Enqueue(ctx, []skb.Packet{{Handle: 200, Len: 1000, TrueSize: 2048, GSOSegs: 1}}, rc)
	if _, dropped := ctx.Dropped[200]; !dropped {
		t.Errorf("a packet over the new limit was queued (%v)", rc[0])
	}
}
