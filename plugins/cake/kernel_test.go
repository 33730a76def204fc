package cake

import (
	"math"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The cache is mainline's constant table: 1/sqrt(count) in Q0.32, with
// entries 0 and 1 at ~0.
func TestInvSqrtCache(t *testing.T) {
	if invSqrtCache[0] != ^uint32(0) || invSqrtCache[1] != ^uint32(0) {
		t.Fatalf("entries 0 and 1 = %d, %d, want ~0", invSqrtCache[0], invSqrtCache[1])
	}
	for c := 2; c < recInvSqrtCache; c++ {
		want := math.Exp2(32) / math.Sqrt(float64(c))
		if d := math.Abs(float64(invSqrtCache[c]) - want); d > 2 {
			t.Errorf("count %d: %d, want 2^32/sqrt(%d) = %.1f", c, invSqrtCache[c], c, want)
		}
		v := cobaltVars{count: uint32(c)}
		cobaltInvsqrt(&v)
		if v.recInvSqrt != invSqrtCache[c] {
			t.Errorf("cobalt_invsqrt(%d) = %d, want the table's %d", c, v.recInvSqrt, invSqrtCache[c])
		}
	}
	// Above the table, one Newton step from the previous value.
	v := cobaltVars{count: 16, recInvSqrt: invSqrtCache[15]}
	cobaltInvsqrt(&v)
	if want := math.Exp2(32) / 4; math.Abs(float64(v.recInvSqrt)-want)/want > 3e-3 {
		t.Errorf("count 16: %d, want about %.0f", v.recInvSqrt, want)
	}
}

// reciprocal_scale takes a u32: cobalt_control's u64 interval keeps only
// its low 32 bits.
func TestCobaltControlTruncatesInterval(t *testing.T) {
	cases := []struct {
		interval sim.Time
		inv      uint32
		want     sim.Time
	}{
		{100 * sim.Millisecond, 1 << 31, 50 * sim.Millisecond},
		{100 * sim.Millisecond, ^uint32(0), 100*sim.Millisecond - 1},
		{1<<32 + 1000, ^uint32(0), 999}, // 4.29 s + 1 us wraps to 1 us
		{1000 * sim.Second, ^uint32(0), 1000*sim.Second%(1<<32) - 1},
	}
	for _, c := range cases {
		if got := cobaltControl(0, c.interval, c.inv); got != c.want {
			t.Errorf("cobalt_control(0, %d, %#x) = %d, want %d", c.interval, c.inv, got, c.want)
		}
	}
}

// cake_reconfigure: max_t(u32, rate * rtt / 250000, 4 MB) truncates the
// product to u32 before the max.
func TestBufferLimitTruncation(t *testing.T) {
	cases := []struct {
		args []string
		want uint32
	}{
		// 100 Mbit for 100 ms: 12.5 MB/s * 100000 / 250000 = 5 MB.
		{[]string{"bandwidth", "100mbit", "limit", "100000"}, 5_000_000},
		// (2^32 + 4096) B/s for 250 ms: t = 2^32 + 4096, which wraps to
		// 4096; the 4 MB floor wins.
		{[]string{"bandwidth", "34359771136bit", "rtt", "250ms", "limit", "100000"}, 4 << 20},
		// A modest rate: the 4 MB floor.
		{[]string{"bandwidth", "10mbit"}, 4 << 20},
		// Unlimited: limit * mtu.
		{[]string{"unlimited"}, 10240 * 1514},
	}
	for _, c := range cases {
		q := newCake(t, c.args...)
		if q.bufferLimit != c.want {
			t.Errorf("%v: buffer_limit %d, want %d", c.args, q.bufferLimit, c.want)
		}
	}
}

// Host bulk-flow counts move only in the modes that isolate that host,
// never below zero: in flows mode a host's count stays 0 and every flow
// gets the whole quantum; in triple-isolate, n bulk flows of one host
// pair share it n ways.
func TestBulkHostCounts(t *testing.T) {
	flows := make([]flowSpec, 4)
	for i := range flows {
		flows[i] = flowSpec{src: 1, dst: 2, port: uint16(10 + i), size: 64}
	}
	for _, c := range []struct {
		mode      string
		wantCount uint16
		wantShare int32 // the quantum a bulk flow gets per round, +-1 for the dither
	}{
		{"flows", 0, 1514},
		{"dual-srchost", 4, 1514 / 4},
		{"triple-isolate", 4, 1514 / 4},
	} {
		q := newCake(t, c.mode, "besteffort")
		ctx := qdisctest.NewCtx(1)
		var next uint64
		feed(q, ctx, flows, 200, &next)
		for i := 0; i < 400; i++ { // every flow goes bulk
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
		}
		b := q.tins[0]
		var src uint16
		for i := range b.hosts {
			src = max(src, b.hosts[i].srchostBulkFlowCount)
		}
		if src != c.wantCount || b.bulkFlowCount != 4 {
			t.Errorf("%s: srchost bulk count %d, bulk flows %d; want %d and 4", c.mode, src, b.bulkFlowCount, c.wantCount)
		}
		for i := range b.flows {
			f := &b.flows[i]
			if f.set != setBulk {
				continue
			}
			if got := q.flowQuantum(ctx, b, f); got < c.wantShare-1 || got > c.wantShare+1 {
				t.Errorf("%s: flow quantum %d, want %d", c.mode, got, c.wantShare)
			}
		}
		// Drain, with another host's trickle so dequeue keeps visiting
		// the emptied flows: each host's count stays the number of its
		// bulk flows (0 outside the host-isolating modes).
		other := []flowSpec{{src: 9, dst: 8, port: 1, size: 64}}
		for i := 0; i < 3000; i++ {
			if i%4 == 0 {
				feed(q, ctx, other, 1, &next)
			}
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
			ctx.T += sim.Millisecond
		}
		want := map[uint16]uint16{}
		for i := range b.flows {
			if b.flows[i].set == setBulk && cakeDsrc(q.flowMode) {
				want[b.flows[i].srchost]++
			}
		}
		for i := range b.hosts {
			if n := b.hosts[i].srchostBulkFlowCount; n != want[uint16(i)] {
				t.Errorf("%s: host %d bulk count %d after draining, want %d (its bulk flows)", c.mode, i, n, want[uint16(i)])
			}
		}
		f := &b.flows[0]
		b.hosts[f.srchost].srchostBulkFlowCount = 0
		q.decBulkHosts(b, f) // already 0: stays 0 (the kernel's floor)
		if b.hosts[f.srchost].srchostBulkFlowCount != 0 {
			t.Errorf("%s: decrement below zero", c.mode)
		}
	}
}

// cake_get_flow_quantum adds get_random_u16() before the shift: the
// quantum is floor or ceiling of the exact share, ceiling with the
// fractional part's probability, so the average is exact.
func TestFlowQuantumDither(t *testing.T) {
	q := newCake(t, "triple-isolate", "besteffort")
	ctx := qdisctest.NewCtx(7)
	b := q.tins[0]
	f := &b.flows[0]
	b.hosts[f.srchost].srchostBulkFlowCount = 3
	exact := float64(1514) * float64(quantumDiv[3]) / 65536 // 504.66
	sum, n := 0.0, 20000
	seen := map[int32]bool{}
	for i := 0; i < n; i++ {
		v := q.flowQuantum(ctx, b, f)
		seen[v] = true
		sum += float64(v)
	}
	if len(seen) != 2 || !seen[int32(exact)] || !seen[int32(exact)+1] {
		t.Errorf("quanta %v, want %d and %d", seen, int32(exact), int32(exact)+1)
	}
	if avg := sum / float64(n); math.Abs(avg-exact) > 0.02 {
		t.Errorf("average quantum %.3f, want %.3f", avg, exact)
	}
	// A new flow at enqueue gets a dithered quantum too, and draws one
	// random number for it.
	cc := &randCounter{Ctx: ctx}
	q.Enqueue(cc, []skb.Packet{{Handle: 1, Len: 64, TrueSize: 2048, GSOSegs: 1, Hash: 77,
		Keys: skb.FlowKeys{Src: 5, Dst: 6, SrcPort: 1, DstPort: 80, Proto: 17}}}, make([]qdisc.Code, 1))
	if cc.n != 1 {
		t.Errorf("a new flow's quantum drew %d random numbers, want 1", cc.n)
	}
}

// lab-noblue: under the overload that drives BLUE to drop, p stays 0
// and there are no CAKE_FLOOD drops; overflow drops still happen.
func TestLabNoBlue(t *testing.T) {
	run := func(args ...string) (float64, int, int) {
		q := newCake(t, args...)
		ctx := qdisctest.NewCtx(1)
		ctx.T = sim.Ktime(0)
		flows := []flowSpec{{src: 1, dst: 2, port: 1, size: 100}}
		var next uint64
		for step := 0; step < 4000; step++ {
			feed(q, ctx, flows, 4, &next)
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
			ctx.T += 50 * sim.Microsecond
		}
		flood, over := 0, 0
		for _, r := range ctx.Dropped {
			switch r {
			case skb.DropCakeFlood:
				flood++
			case skb.DropQdiscOverlimit:
				over++
			}
		}
		return q.BlueMax(), flood, over
	}
	p, flood, over := run("besteffort", "flows", "memlimit", "64kb")
	if p < 0.1 || flood == 0 || over == 0 {
		t.Fatalf("with BLUE: p %.3f, %d CAKE_FLOOD, %d QDISC_OVERLIMIT; want p up and both drops", p, flood, over)
	}
	p, flood, over = run("besteffort", "flows", "memlimit", "64kb", "lab-noblue")
	if p != 0 || flood != 0 || over == 0 {
		t.Errorf("lab-noblue: p %.3f, %d CAKE_FLOOD, %d QDISC_OVERLIMIT; want p 0, no BLUE drops, overflow drops", p, flood, over)
	}
	q := newCake(t, "lab-noblue")
	if d := q.Dump(); d[len(d)-len("lab-noblue"):] != "lab-noblue" {
		t.Errorf("dump %q does not show lab-noblue", d)
	}
	if len(qdisc.LabOptions("cake")) != 3 {
		t.Errorf("cake's lab-only options %v, want limit, mq-clear-tins, lab-noblue", qdisc.LabOptions("cake"))
	}
}

// With the clock at ktime's boot offset, BLUE acts on the first
// overflow: blue_timer starts at 0, far more than a target in the past.
// At a clock of 0 the first 5 ms of overflows would not raise p.
func TestBlueFromBoot(t *testing.T) {
	for _, c := range []struct {
		start sim.Time
		want  bool
	}{{sim.Ktime(0), true}, {0, false}} {
		var v cobaltVars
		p := cobaltParams{target: 5 * sim.Millisecond, pInc: 1 << 24}
		cobaltQueueFull(&v, &p, c.start+sim.Millisecond, true)
		if got := v.pDrop != 0; got != c.want {
			t.Errorf("clock starting at %d: p after the first overflow %#x, want raised %v", c.start, v.pDrop, c.want)
		}
	}
}

// The xstats are cake_dump_stats's fields in tc's units: way_inds is
// the indirect hits (not the direct ones), sp_flows counts decaying
// flows too, quantum is the flow quantum, memory and thresholds are
// sizes and rates. Plain cake dumps active_queues too (0: only
// cake_mq's children count them), which q_cake.c prints before the
// average header offset.
func TestXStatsFields(t *testing.T) {
	q := newCake(t, "besteffort", "flows", "bandwidth", "100mbit")
	ctx := qdisctest.NewCtx(1)
	var next uint64
	feed(q, ctx, []flowSpec{{src: 1, dst: 2, port: 1, size: 500}, {src: 1, dst: 3, port: 2, size: 500}}, 5, &next)
	b := q.tins[0]
	b.wayDirects, b.wayHits, b.decayingFlowCount = 100, 7, 3
	b.flows[3].cvars.dropping, b.flows[9].cvars.dropping = true, true
	q.avgNetoff = 14 << 16
	st := q.Stats()
	get := func(k string) qdisc.XStat {
		for _, x := range st.XStats {
			if x.Key == k {
				return x
			}
		}
		t.Fatalf("no xstat %q", k)
		return qdisc.XStat{}
	}
	for _, c := range []struct {
		key  string
		typ  qdisc.XType
		want string
	}{
		{"memory_limit", qdisc.XTypeSize, "5000000b"}, // 4 x 12.5 MB/s x 100 ms
		{"tin0_thresh", qdisc.XTypeRate, "100Mbit"},
		{"tin0_target", qdisc.XTypeTime, "5ms"},
		{"tin0_interval", qdisc.XTypeTime, "100ms"},
		{"tin0_way_inds", qdisc.XTypeUint, "7"},
		{"tin0_sp_flows", qdisc.XTypeUint, "5"},
		{"tin0_quantum", qdisc.XTypeUint, "1514"},
		{"avg_hdr_offset", qdisc.XTypeUint, "14"},
		{"active_queues", qdisc.XTypeUint, "0"},
		{"tin0_codel_dropping", qdisc.XTypeUint, "2"},
	} {
		if x := get(c.key); x.Type != c.typ || x.Text() != c.want {
			t.Errorf("%s: %q (type %d), want %q (type %d)", c.key, x.Text(), x.Type, c.want, c.typ)
		}
	}
	keys := qdisctest.XStatKeys(st.XStats[:9])
	if got := strings.Join(keys, " "); got != "memory_used memory_limit capacity_estimate min_network_size max_network_size min_adj_size max_adj_size active_queues avg_hdr_offset" {
		t.Errorf("the first xstats in q_cake.c's order: %s", got)
	}
}

// randCounter counts the qdisc's random draws.
type randCounter struct {
	*qdisctest.Ctx
	n int
}

func (c *randCounter) Rand() uint32 { c.n++; return c.Ctx.Rand() }

// autorate-ingress estimates the arrival rate from the gaps between
// bursts (cake_enqueue): bursts of ten 1000-byte packets every 8 ms
// arrive at 1.25 MB/s, the capacity estimate (tc -s's
// capacity_estimate) climbs there from 0, and the shaper takes 15/16
// of it. Without the flag the estimate stays what the options gave.
func TestAutorateIngress(t *testing.T) {
	for _, c := range []struct {
		args    []string
		wantEst float64 // bytes/s, within 2%
	}{
		{[]string{"autorate-ingress", "besteffort"}, 1.25e6},
		{[]string{"bandwidth", "100mbit", "besteffort"}, 12.5e6},
	} {
		q := newCake(t, c.args...)
		ctx := qdisctest.NewCtx(1)
		ctx.T = sim.BootOffset
		var h uint64
		for burst := range 250 {
			ctx.T = sim.BootOffset + sim.Time(burst)*8*sim.Millisecond
			for range 10 {
				h++
				p := skb.Packet{Handle: skb.Handle(h), Len: 1000, TrueSize: 2048, GSOSegs: 1, Hash: 7,
					Keys: skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1, DstPort: 80, Proto: 17}}
				q.Enqueue(ctx, []skb.Packet{p}, make([]qdisc.Code, 1))
			}
			for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 20}, nil)) > 0 {
			}
		}
		est := float64(qdisctest.XStatOf(q.Stats().XStats, "capacity_estimate"))
		if est < 0.98*c.wantEst || est > 1.02*c.wantEst {
			t.Errorf("%v: capacity estimate %.0f B/s, want %.0f", c.args, est, c.wantEst)
		}
		if c.args[0] == "autorate-ingress" {
			if q.rateBps != q.avgPeakBandwidth*15>>4 || !strings.Contains(q.Dump(), "autorate-ingress") {
				t.Errorf("shaper at %d B/s for an estimate of %d; dump %q", q.rateBps, q.avgPeakBandwidth, q.Dump())
			}
		} else if q.rateBps != 12_500_000 {
			t.Errorf("without autorate the shaper moved to %d B/s", q.rateBps)
		}
	}
}
