package fq

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

var testSetup = qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000, NumTxQ: 1}

func newFQ(t testing.TB, args string) *FQ {
	t.Helper()
	q := &FQ{}
	info, err := q.Init(qdisctest.NewCtx(1), testSetup, strings.Fields(args))
	if err != nil {
		t.Fatalf("Init(%q): %v", args, err)
	}
	if info.Flags&qdisc.CanBypass != 0 {
		t.Fatalf("fq must not set TCQ_F_CAN_BYPASS")
	}
	return q
}

var nextHandle skb.Handle

// pkt makes a packet of sock (or an orphan with hash if sock < 0).
func pkt(sock int32, length uint32, mods ...func(*skb.Packet)) skb.Packet {
	nextHandle++
	p := skb.Packet{Handle: nextHandle, Len: length, TrueSize: 2048, Sock: sock, GSOSegs: 1,
		Hash: uint32(sock) * 2654435761, Keys: skb.FlowKeys{Src: 1, Dst: uint32(sock), SrcPort: 1000, DstPort: 80, Proto: 17}}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func enqueue(q qdisc.Qdisc, ctx *qdisctest.Ctx, pkts ...skb.Packet) []qdisc.Code {
	rc := make([]qdisc.Code, len(pkts))
	q.Enqueue(ctx, pkts, rc)
	return rc
}

type stamped struct {
	t sim.Time
	p skb.Packet
}

// drainTimed dequeues n packets one at a time; when fq returns nothing
// it must have armed the watchdog in the future, and the clock jumps
// there, as the host's qdisc_watchdog would.
func drainTimed(t *testing.T, q qdisc.Qdisc, ctx *qdisctest.Ctx, n int) []stamped {
	t.Helper()
	var out []stamped
	for len(out) < n {
		ctx.WDog = 0
		got := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
		if len(got) == 0 {
			if ctx.WDog+ctx.WDogSlack <= ctx.T {
				t.Fatalf("after %d packets: nothing dequeued at %d and no watchdog ahead (%d)", len(out), ctx.T, ctx.WDog)
			}
			ctx.T = ctx.WDog + ctx.WDogSlack
			continue
		}
		out = append(out, stamped{ctx.T, got[0]})
	}
	return out
}

func TestPacingSpacing(t *testing.T) {
	const n = 1100
	cases := []struct {
		name     string
		args     string
		rate     uint64 // sk_pacing_rate, bytes/s (0: none)
		want     sim.Time
		from     int  // first packet index measured (after the initial burst)
		eachGap  bool // check every gap, not only the average
		wantPace bool
	}{
		// quantum = one packet: every packet waits len/rate.
		{"maxrate 100Mbit quantum 1514", "maxrate 100Mbit quantum 1514 flow_limit 2000", 0, 121120, 12, true, true},
		// Default quantum: pacing every other packet by max(len, quantum)/rate,
		// so only the average spacing is len/rate.
		{"maxrate 100Mbit default quantum", "maxrate 100Mbit flow_limit 2000", 0, 121120, 20, false, true},
		// The socket's own rate, no qdisc maxrate (the first 8 go through
		// the internal fast path unpaced).
		{"sk_pacing_rate 100Mbit", "quantum 1514 flow_limit 2000", 12500000, 121120, 20, true, true},
		// A socket rate below low_rate_threshold paces every packet by
		// its own length whatever the quantum.
		{"low rate 400kbit", "flow_limit 2000", 50000, 30280000, 12, true, true},
		// nopacing ignores both.
		{"nopacing", "nopacing maxrate 100Mbit flow_limit 2000", 12500000, 0, 0, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newFQ(t, c.args)
			ctx := qdisctest.NewCtx(1)
			count := n
			if c.want > sim.Millisecond {
				count = 60 // slow flow: fewer packets
			}
			for i := 0; i < count; i++ {
				enqueue(q, ctx, pkt(7, 1514, func(p *skb.Packet) { p.PacingRate = c.rate }))
			}
			got := drainTimed(t, q, ctx, count)
			if !c.wantPace {
				if got[len(got)-1].t != 0 {
					t.Fatalf("nopacing: last packet left at %d, want 0", got[len(got)-1].t)
				}
				return
			}
			for i := c.from + 1; c.eachGap && i < len(got); i++ {
				gap := got[i].t - got[i-1].t
				if math.Abs(float64(gap-c.want)) > 0.01*float64(c.want) {
					t.Fatalf("gap %d->%d is %dns, want %dns within 1%%", i-1, i, gap, c.want)
				}
			}
			avg := float64(got[len(got)-1].t-got[c.from].t) / float64(len(got)-1-c.from)
			if math.Abs(avg-float64(c.want)) > 0.01*float64(c.want) {
				t.Fatalf("average spacing %.0fns, want %dns within 1%%", avg, c.want)
			}
			if qdisctest.XStat(q, "pkts_too_long") != 0 {
				t.Errorf("pkts_too_long %d", qdisctest.XStat(q, "pkts_too_long"))
			}
		})
	}
}

// The watchdog is armed for time_next_delayed_flow with timer_slack of
// slack (qdisc_watchdog_schedule_range_ns), and dequeue returns nothing
// before that.
func TestThrottledArmsWatchdog(t *testing.T) {
	q := newFQ(t, "maxrate 1Mbit timer_slack 20us")
	ctx := qdisctest.NewCtx(1)
	ctx.T = 1000
	enqueue(q, ctx, pkt(1, 1000, func(p *skb.Packet) { p.Tstamp = 1000 + 5*sim.Millisecond }))
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40}, nil); len(out) != 0 {
		t.Fatalf("EDT packet left early")
	}
	if want := 1000 + 5*sim.Millisecond; ctx.WDog != want || ctx.WDogSlack != 20*sim.Microsecond {
		t.Fatalf("watchdog %d with %d of slack, want %d with 20us", ctx.WDog, ctx.WDogSlack, want)
	}
	if qdisctest.XStat(q, "throttled") != 1 || q.statThrottled != 1 {
		t.Fatalf("throttled flows %d events %d, want 1 and 1", qdisctest.XStat(q, "throttled"), q.statThrottled)
	}
	// tc's fq_print_xstats prints next_packet_delay and latency with
	// sprint_time64.
	if got := xstatText(q, "next_packet_delay"); got != "5.02ms" {
		t.Errorf("next_packet_delay prints %q, want 5.02ms", got)
	}
	ctx.T = ctx.WDog + ctx.WDogSlack // the hard expiry, where an idle CPU's timer fires
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40}, nil); len(out) != 1 {
		t.Fatalf("got %d packets at the watchdog time, want 1", len(out))
	}
	if lat := qdisctest.XStat(q, "latency"); lat != int64(20*sim.Microsecond)>>3 {
		t.Errorf("unthrottle latency EWMA %d, want %d", lat, int64(20*sim.Microsecond)>>3)
	}
	if got := xstatText(q, "latency"); got != "2.5us" {
		t.Errorf("latency prints %q, want 2.5us", got)
	}
}

// xstatText is the named xstat as tc -s prints it.
func xstatText(q qdisc.Qdisc, key string) string {
	for _, x := range q.Stats().XStats {
		if x.Key == key {
			return x.Text()
		}
	}
	return ""
}

func TestFlowIsolation(t *testing.T) {
	// maxrate keeps packets off the internal fast path (fq_fastpath_check)
	// so that every packet is counted against its flow.
	q := newFQ(t, "flow_limit 10 maxrate 10Gbit")
	ctx := qdisctest.NewCtx(1)
	var pk []skb.Packet
	for i := 0; i < 25; i++ {
		pk = append(pk, pkt(1, 500))
		if i < 6 {
			pk = append(pk, pkt(2, 500))
		}
	}
	rc := enqueue(q, ctx, pk...)
	var drop1, drop2 int
	for i, p := range pk {
		if rc[i] != qdisc.XmitDrop {
			continue
		}
		if r := ctx.Dropped[p.Handle]; r != skb.DropFQFlowLimit {
			t.Fatalf("drop reason %q, want %q", r, skb.DropFQFlowLimit)
		}
		if p.Sock == 1 {
			drop1++
		} else {
			drop2++
		}
	}
	if drop1 != 15 || drop2 != 0 {
		t.Fatalf("drops: flow 1 %d (want 15), flow 2 %d (want 0)", drop1, drop2)
	}
	if st := q.Stats(); st.Qlen != 16 || st.Drops != 15 || qdisctest.XStat(q, "flows_plimit") != 15 {
		t.Fatalf("qlen %d drops %d flows_plimit %d", st.Qlen, st.Drops, qdisctest.XStat(q, "flows_plimit"))
	}
}

func TestBandLimit(t *testing.T) {
	q := newFQ(t, "limit 5 maxrate 10Gbit")
	ctx := qdisctest.NewCtx(1)
	var pk []skb.Packet
	for i := 0; i < 7; i++ {
		pk = append(pk, pkt(int32(10+i), 100)) // priority 0 -> band 1
	}
	for i := 0; i < 3; i++ {
		pk = append(pk, pkt(int32(20+i), 100, func(p *skb.Packet) { p.Priority = 6 })) // band 0
	}
	rc := enqueue(q, ctx, pk...)
	for i, want := range []qdisc.Code{0, 0, 0, 0, 0, 1, 1, 0, 0, 0} {
		if rc[i] != want {
			t.Fatalf("packet %d: %v, want %v", i, rc[i], want)
		}
	}
	if r := ctx.Dropped[pk[5].Handle]; r != skb.DropFQBandLimit {
		t.Fatalf("reason %q", r)
	}
	if qdisctest.XStat(q, "band1_drops") != 2 || qdisctest.XStat(q, "band0_drops") != 0 || qdisctest.XStat(q, "band1_pkts") != 5 || qdisctest.XStat(q, "band0_pkts") != 3 {
		t.Fatalf("xstats %+v", q.Stats().XStats)
	}
}

// DRR is by bytes: a flow of big packets and a flow of small packets get
// the same bandwidth while both are backlogged.
func TestDRRFairness(t *testing.T) {
	q := newFQ(t, "flow_limit 10000")
	ctx := qdisctest.NewCtx(1)
	var pk []skb.Packet
	for i := 0; i < 2000; i++ {
		if i < 400 {
			pk = append(pk, pkt(1, 1500))
		}
		pk = append(pk, pkt(2, 300))
	}
	enqueue(q, ctx, pk...)
	var b [3]int64
	for b[1]+b[2] < 600000 {
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
		if len(out) != 1 {
			t.Fatal("nothing to dequeue")
		}
		b[out[0].Sock] += int64(out[0].Len)
	}
	if d := b[1] - b[2]; d > 10000 || d < -10000 {
		t.Fatalf("bytes while both backlogged: 1500B flow %d, 300B flow %d; want equal within 10000", b[1], b[2])
	}
}

func TestBandWeights(t *testing.T) {
	cases := []struct {
		args      string
		prioA     uint32
		prioB     uint32
		wantRatio float64 // bytes of A over B while both backlogged
	}{
		{"flow_limit 10000", 6, 0, 3},                              // band 0 vs band 1: 9:3
		{"flow_limit 10000", 6, 1, 9},                              // band 0 vs band 2: 9:1
		{"flow_limit 10000 weights 65536 65536 65536", 6, 0, 1},    // equal weights
		{"flow_limit 10000 weights 131072 65536 65536", 0, 6, 0.5}, // band 1 vs band 0 at 1:2
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			q := newFQ(t, c.args)
			ctx := qdisctest.NewCtx(1)
			var pk []skb.Packet
			for i := 0; i < 7000; i++ {
				pk = append(pk, pkt(1, 1000, func(p *skb.Packet) { p.Priority = c.prioA }),
					pkt(2, 1000, func(p *skb.Packet) { p.Priority = c.prioB }))
			}
			enqueue(q, ctx, pk...)
			var n [3]float64
			for i := 0; i < 6500; i++ {
				out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
				if len(out) != 1 {
					t.Fatal("nothing to dequeue")
				}
				n[out[0].Sock]++
			}
			if r := n[1] / n[2]; math.Abs(r-c.wantRatio) > 0.1*c.wantRatio {
				t.Fatalf("ratio %.2f (%v), want %.2f within 10%%", r, n, c.wantRatio)
			}
		})
	}
}

func TestPriomap(t *testing.T) {
	q := newFQ(t, "bands 3 priomap 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 0 maxrate 10Gbit")
	ctx := qdisctest.NewCtx(1)
	for prio := uint32(0); prio < 16; prio++ {
		enqueue(q, ctx, pkt(int32(prio), 100, func(p *skb.Packet) { p.Priority = prio }))
	}
	if qdisctest.XStat(q, "band2_pkts") != 15 || qdisctest.XStat(q, "band0_pkts") != 1 || qdisctest.XStat(q, "band1_pkts") != 0 {
		t.Fatalf("xstats %+v", q.Stats().XStats)
	}
}

func TestOrphanHashing(t *testing.T) {
	cases := []struct {
		args      string
		wantFlows int64
	}{
		{"maxrate 10Gbit", 64},                 // default mask 1023: one flow per hash
		{"maxrate 10Gbit orphan_mask 3", 4},    // hashes folded to 4 pseudo sockets
		{"maxrate 10Gbit orphan_mask 0", 1},    // all orphans share one
		{"maxrate 10Gbit orphan_mask 0xf", 16}, // hex, as tc's strtoul base 0
		{"maxrate 10Gbit orphan_mask 1k", -1},  // bad value
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			q := &FQ{}
			_, err := q.Init(qdisctest.NewCtx(1), testSetup, strings.Fields(c.args))
			if c.wantFlows < 0 {
				if err == nil {
					t.Fatal("bad mask accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := qdisctest.NewCtx(1)
			for h := uint32(0); h < 64; h++ {
				enqueue(q, ctx, pkt(-1, 100, func(p *skb.Packet) { p.Hash = h }))
			}
			if f := qdisctest.XStat(q, "flows"); f != c.wantFlows {
				t.Fatalf("flows %d, want %d", f, c.wantFlows)
			}
			// An orphan pseudo key never collides with a socket: socket 0
			// and orphans of hash 0 are distinct flows.
			enqueue(q, ctx, pkt(0, 100))
			if f := qdisctest.XStat(q, "flows"); f != c.wantFlows+1 {
				t.Fatalf("socket 0 joined an orphan flow: flows %d", f)
			}
		})
	}
}

func TestHorizon(t *testing.T) {
	cases := []struct {
		args       string
		ahead      sim.Time
		wantCode   qdisc.Code
		wantDrops  int64
		wantCaps   int64
		wantLeaves sim.Time // when the packet leaves (if accepted)
	}{
		{"", 11 * sim.Second, qdisc.XmitDrop, 1, 0, 0},
		{"", 9 * sim.Second, qdisc.XmitSuccess, 0, 0, 9 * sim.Second},
		{"horizon_cap", 11 * sim.Second, qdisc.XmitSuccess, 0, 1, 10 * sim.Second},
		{"horizon 1s", 2 * sim.Second, qdisc.XmitDrop, 1, 0, 0},
		{"horizon 1s horizon_cap", 2 * sim.Second, qdisc.XmitSuccess, 0, 1, sim.Second},
	}
	for _, c := range cases {
		t.Run(c.args+" "+time.Duration(c.ahead).String(), func(t *testing.T) {
			q := newFQ(t, c.args+" timer_slack 0")
			ctx := qdisctest.NewCtx(1)
			ctx.T = 5 * sim.Millisecond
			start := ctx.T
			p := pkt(3, 1000, func(p *skb.Packet) { p.Tstamp = start + c.ahead })
			if rc := enqueue(q, ctx, p); rc[0] != c.wantCode {
				t.Fatalf("rc %v, want %v", rc[0], c.wantCode)
			}
			if qdisctest.XStat(q, "horizon_drops") != c.wantDrops || qdisctest.XStat(q, "horizon_caps") != c.wantCaps {
				t.Fatalf("horizon_drops %d caps %d", qdisctest.XStat(q, "horizon_drops"), qdisctest.XStat(q, "horizon_caps"))
			}
			if c.wantCode == qdisc.XmitDrop {
				if ctx.Dropped[p.Handle] != skb.DropFQHorizonLimit {
					t.Fatalf("reason %q", ctx.Dropped[p.Handle])
				}
				return
			}
			got := drainTimed(t, q, ctx, 1)
			if got[0].t != start+c.wantLeaves {
				t.Fatalf("left at +%v, want +%v", time.Duration(got[0].t-start), time.Duration(c.wantLeaves))
			}
		})
	}
}

// Detached flows older than 3s are freed, at most 8 per pass, while a
// lookup walks their bucket.
func TestGC(t *testing.T) {
	cases := []struct {
		after  sim.Time
		wantGC int64
	}{
		{3 * sim.Second, 0},   // not older than FQ_GC_AGE yet
		{3*sim.Second + 1, 8}, // a bucket path of ~11 stale flows: only FQ_GC_MAX of them
	}
	for _, c := range cases {
		t.Run(time.Duration(c.after).String(), func(t *testing.T) {
			q := newFQ(t, "buckets 2")
			ctx := qdisctest.NewCtx(1)
			const socks = 4000 // ~2000 per bucket: a lookup path of ~11 nodes, more than FQ_GC_MAX
			for s := int32(0); s < socks; s++ {
				enqueue(q, ctx, pkt(s, 100))
			}
			drainTimed(t, q, ctx, socks)
			// A dequeue walk with something still queued (a flow waiting
			// for its EDT time) detaches the empty flows.
			ctx.T = sim.Millisecond
			enqueue(q, ctx, pkt(5000, 100, func(p *skb.Packet) { p.Tstamp = 2 * sim.Millisecond }))
			if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil); len(out) != 0 {
				t.Fatal("EDT packet left early")
			}
			flows := qdisctest.XStat(q, "flows")
			if flows != socks-fqFastpathMax+1 || qdisctest.XStat(q, "inactive") != flows-1 {
				t.Fatalf("flows %d inactive %d before gc", flows, qdisctest.XStat(q, "inactive"))
			}
			ctx.T = sim.Millisecond + c.after
			enqueue(q, ctx, pkt(6000, 100))
			if gc := qdisctest.XStat(q, "gc"); gc != c.wantGC {
				t.Fatalf("gc %d, want %d", gc, c.wantGC)
			}
			if f := qdisctest.XStat(q, "flows"); f != flows+1-c.wantGC {
				t.Fatalf("flows %d, want %d", f, flows+1-c.wantGC)
			}
			if f, i := qdisctest.XStat(q, "flows"), qdisctest.XStat(q, "inactive"); i != f-2 {
				t.Fatalf("inactive %d of %d flows, want all but 2", i, f)
			}
		})
	}
}

func TestCEThreshold(t *testing.T) {
	cases := []struct {
		args      string
		wait      sim.Time
		ecnIn     uint8
		wantECN   uint8
		wantMarks int64
	}{
		{"ce_threshold 1ms", 2 * sim.Millisecond, 2, 3, 1},   // ECT(0) late: CE
		{"ce_threshold 1ms", 2 * sim.Millisecond, 1, 3, 1},   // ECT(1) late: CE
		{"ce_threshold 1ms", 2 * sim.Millisecond, 0, 0, 1},   // not ECT: counted, not marked
		{"ce_threshold 1ms", 500 * sim.Microsecond, 2, 2, 0}, // not late enough
		{"", 10 * sim.Second, 2, 2, 0},                       // off by default
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			q := newFQ(t, c.args+" maxrate 10Gbit") // maxrate: no internal fast path (it never marks)
			ctx := qdisctest.NewCtx(1)
			enqueue(q, ctx, pkt(1, 1000, func(p *skb.Packet) { p.ECN = c.ecnIn }))
			ctx.T += c.wait
			out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
			if len(out) != 1 || out[0].ECN != c.wantECN {
				t.Fatalf("got %+v, want ECN %d", out, c.wantECN)
			}
			if m := qdisctest.XStat(q, "ce_mark"); m != c.wantMarks {
				t.Fatalf("ce_mark %d, want %d", m, c.wantMarks)
			}
		})
	}
}

func TestFastpath(t *testing.T) {
	t.Run("empty qdisc takes the internal queue", func(t *testing.T) {
		q := newFQ(t, "")
		ctx := qdisctest.NewCtx(1)
		enqueue(q, ctx, pkt(1, 100))
		if qdisctest.XStat(q, "fastpath") != 1 || qdisctest.XStat(q, "flows") != 0 {
			t.Fatalf("fastpath %d flows %d", qdisctest.XStat(q, "fastpath"), qdisctest.XStat(q, "flows"))
		}
	})
	t.Run("at most 8 in the internal queue", func(t *testing.T) {
		q := newFQ(t, "")
		ctx := qdisctest.NewCtx(1)
		for i := 0; i < 10; i++ {
			enqueue(q, ctx, pkt(1, 100))
		}
		if qdisctest.XStat(q, "fastpath") != 8 || qdisctest.XStat(q, "flows") != 1 {
			t.Fatalf("fastpath %d flows %d", qdisctest.XStat(q, "fastpath"), qdisctest.XStat(q, "flows"))
		}
	})
	t.Run("maxrate disables it", func(t *testing.T) {
		q := newFQ(t, "maxrate 1Gbit")
		ctx := qdisctest.NewCtx(1)
		enqueue(q, ctx, pkt(1, 100))
		if qdisctest.XStat(q, "fastpath") != 0 || qdisctest.XStat(q, "flows") != 1 {
			t.Fatalf("fastpath %d flows %d", qdisctest.XStat(q, "fastpath"), qdisctest.XStat(q, "flows"))
		}
	})
	t.Run("future EDT skips it", func(t *testing.T) {
		q := newFQ(t, "")
		ctx := qdisctest.NewCtx(1)
		enqueue(q, ctx, pkt(1, 100, func(p *skb.Packet) { p.Tstamp = sim.Millisecond }))
		if qdisctest.XStat(q, "fastpath") != 0 {
			t.Fatal("future packet took the fast path")
		}
		// An eligible flow is held: no fast path for anyone.
		enqueue(q, ctx, pkt(2, 100))
		if qdisctest.XStat(q, "fastpath") != 0 {
			t.Fatal("fast path while a flow is eligible")
		}
	})
	t.Run("served before flows, while flows are throttled", func(t *testing.T) {
		q := newFQ(t, "")
		ctx := qdisctest.NewCtx(1)
		a := pkt(1, 100, func(p *skb.Packet) { p.Tstamp = 100 * sim.Microsecond })
		enqueue(q, ctx, a)
		if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil); len(out) != 0 {
			t.Fatal("EDT packet left early")
		}
		b := pkt(2, 100)
		enqueue(q, ctx, b) // the only flow is throttled: fast path
		if qdisctest.XStat(q, "fastpath") != 1 {
			t.Fatal("no fast path with every flow throttled")
		}
		ctx.T = 200 * sim.Microsecond
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil)
		if len(out) != 2 || out[0].Handle != b.Handle || out[1].Handle != a.Handle {
			t.Fatalf("order %+v, want internal packet first", out)
		}
	})
}

// A socket id reused by another connection (sk_hash differs) gets its
// credit back and loses its pacing debt.
func TestSocketReuse(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		q := newFQ(t, "maxrate 10Gbit")
		ctx := qdisctest.NewCtx(1)
		slow := func(p *skb.Packet) { p.PacingRate = 10000 } // below low_rate_threshold: pace each packet
		enqueue(q, ctx, pkt(1, 1500, slow), pkt(1, 1500, slow))
		if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil); len(out) != 1 {
			t.Fatalf("got %d, want the first packet only", len(out))
		}
		third := pkt(1, 1500, slow)
		if reuse {
			third.Keys.DstPort = 443 // same socket id, other connection
		}
		enqueue(q, ctx, third)
		f := q.fqRoot[hashPtr(2, q.fqTreesLog)][0]
		if reuse && (f.credit != q.initialQuantum || f.throttled || f.timeNextPacket != 0) {
			t.Fatalf("reused socket: credit %d throttled %v time_next_packet %d", f.credit, f.throttled, f.timeNextPacket)
		}
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil)
		if want := map[bool]int{false: 0, true: 1}[reuse]; len(out) != want {
			t.Fatalf("reuse %v: %d packets right away, want %d", reuse, len(out), want)
		}
	}
}

// TestWorkReported: socket flows are found by hash_ptr(sk), without a
// flow hash; an orphan skb is hashed (skb_get_hash) only when it
// carries no hash.
func TestWorkReported(t *testing.T) {
	q := newFQ(t, "maxrate 10Gbit buckets 2") // shared buckets: lookups walk nodes
	ctx := qdisctest.NewCtx(1)
	for i := 0; i < 10; i++ {
		enqueue(q, ctx, pkt(int32(i), 100))
	}
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 40}, nil)
	w := ctx.WorkDone
	if w[qdisc.WorkEnqueue] != 10 || w[qdisc.WorkDequeue] != 10 || w[qdisc.WorkHash] != 0 ||
		w[qdisc.WorkTstamp] < 20 || w[qdisc.WorkFlowScan] == 0 {
		t.Fatalf("work %v", w)
	}
	for i, c := range []struct {
		hash uint32
		want int // hashes so far
	}{{0, 1}, {0x9e3779b1, 1}, {0, 2}} {
		p := pkt(-1, 100, func(p *skb.Packet) { p.Hash = c.hash })
		enqueue(q, ctx, p)
		if got := ctx.WorkDone[qdisc.WorkHash]; got != c.want {
			t.Fatalf("orphan %d (hash %#x): %d hashes so far, want %d", i, c.hash, got, c.want)
		}
	}
}

// struct fq_flow's lines: an enqueue to a flow reports its two lines
// (qlen/tail, band) and, when the flow holds packets, the tail skb's
// line it links to; a flow-limit drop the line it reads; a dequeue both
// lines of the flow it takes from. The internal fast-path queue lives in
// fq's private data, but flow_queue_add still links each packet behind
// its tail skb, whose line the CPU that queued it wrote.
func TestFlowLinesReported(t *testing.T) {
	q := newFQ(t, "flow_limit 2")
	ctx := qdisctest.NewCtx(1)
	for range 8 { // fq_fastpath_check: the internal queue takes up to 8
		enqueue(q, ctx, pkt(1, 100))
	}
	if l := ctx.LineCalls; len(l) != 7 || ctx.LinesReported() != 7 || l[0].Key != l[6].Key || l[0].Key == tailKey(2) {
		t.Fatalf("fast path: %+v, want 7 lines, the internal queue's tail skb after the first packet", l)
	}
	enqueue(q, ctx, pkt(2, 100)) // internal full, flow 2 new: 2
	mark := len(ctx.LineCalls)
	enqueue(q, ctx, pkt(2, 100)) // flow 2 holds one: its pair, and its tail skb's line apart
	if l := ctx.LineCalls[mark:]; len(l) != 2 || l[0].N != 2 || l[1].N != 1 || l[0].Key == l[1].Key {
		t.Fatalf("enqueue to a backlogged flow reported %+v, want the flow's 2 lines and its tail skb's 1 under another key", l)
	}
	rc := enqueue(q, ctx, pkt(2, 100)) // flow 2 at its limit: dropped, 1
	if rc[0] != qdisc.XmitDrop || ctx.LinesReported() != 7+2+3+1 {
		t.Fatalf("enqueues: rc %v, %d lines, want a drop and 13", rc, ctx.LinesReported())
	}
	before := ctx.LinesReported()
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 20, Bytes: 1 << 40}, nil)
	if len(out) != 10 || ctx.LinesReported()-before != 2*2 {
		t.Fatalf("dequeued %d, %d lines, want 10 packets and 4 lines (flow 2's two packets)", len(out), ctx.LinesReported()-before)
	}
}

// TestDump checks Dump against `tc -s -d qdisc show` lines of a current
// kernel and tc: the default line as a Debian host running bbr3 printed
// it (MTU 1500), and the MTU 9000 one of the FQ_BAND_LIMIT report
// (quantum 18Kb initial_quantum 92120b). The rest follow fq_print_opt.
func TestDump(t *testing.T) {
	cases := []struct {
		mtu        int
		args, want string
	}{
		{1514, "", "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 " +
			"weights 589824 196608 65536 quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40ms " +
			"timer_slack 10us horizon 10s horizon_drop offload_horizon 0us"},
		{9212, "", "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 " +
			"weights 589824 196608 65536 quantum 18Kb initial_quantum 92120b low_rate_threshold 550Kbit refill_delay 40ms " +
			"timer_slack 10us horizon 10s horizon_drop offload_horizon 0us"},
		{1514, "limit 500 flow_limit 50 buckets 1000 orphan_mask 0xff nopacing quantum 65536 initial_quantum 1514 " +
			"maxrate 1gbit refill_delay 100ms ce_threshold 4ms timer_slack 1500ns horizon 2500ms horizon_cap " +
			"weights 65536 65536 16384 bands 3 priomap 0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0",
			"limit 500p flow_limit 50p buckets 1024 orphan_mask 255 nopacing bands 3 priomap 0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0 " +
				"weights 65536 65536 16384 quantum 64Kb initial_quantum 1514b maxrate 1Gbit low_rate_threshold 550Kbit refill_delay 100ms " +
				"ce_threshold 4ms timer_slack 1.5us horizon 2.5s horizon_cap offload_horizon 0us"},
		{1514, "maxrate 100Mbit low_rate_threshold 1Mbit refill_delay 1500us defrate 1gbit", "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 " +
			"bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 589824 196608 65536 quantum 3028b " +
			"initial_quantum 15140b maxrate 100Mbit low_rate_threshold 1Mbit refill_delay 2ms timer_slack 10us horizon 10s horizon_drop offload_horizon 0us"},
		{1514, "maxrate 4294967295bps low_rate_threshold 0", "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 " +
			"bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 589824 196608 65536 quantum 3028b " +
			"initial_quantum 15140b refill_delay 40ms timer_slack 10us horizon 10s horizon_drop offload_horizon 0us"},
	}
	for _, c := range cases {
		q := &FQ{}
		if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: c.mtu}, strings.Fields(c.args)); err != nil {
			t.Fatalf("Init(%q): %v", c.args, err)
		}
		if got := q.Dump(); got != c.want {
			t.Errorf("Dump after %q:\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}

func TestInitErrors(t *testing.T) {
	cases := []struct {
		args, want string
		class      error
	}{
		{"limt 5", `unknown option "limt" (known: limit, flow_limit`, qdisc.ErrParse},
		{"limit", "needs a value", qdisc.ErrParse},
		{"limit x", `illegal "limit": "x" is not an unsigned number`, qdisc.ErrParse},
		{"limit 10000p", `illegal "limit": "10000p" is not an unsigned number`, qdisc.ErrParse},
		{"limit -1", "out of range", qdisc.ErrParse},
		{"quantum 0", "invalid quantum 0", qdisc.ErrKernel},
		{"quantum 2000000", "invalid quantum", qdisc.ErrKernel},
		{"quantum 3028b", `illegal "quantum"`, qdisc.ErrParse}, // get_unsigned: no size units
		{"initial_quantum 3000000000", "netlink policy", qdisc.ErrKernel},
		{"buckets 1", "buckets 2^0", qdisc.ErrKernel},
		{"buckets 300000", "buckets 2^19", qdisc.ErrKernel},
		{"maxrate fast", `illegal "maxrate": "fast" is not a rate`, qdisc.ErrParse},
		{"maxrate 100gbit", "32-bit rate", qdisc.ErrParse},                                 // get_rate: 34.3 Gbit/s at most
		{"maxrate 10%", "the device has no speed to take a percentage of", qdisc.ErrParse}, // testSetup has none
		{"low_rate_threshold 10%", `"10%" is not a rate`, qdisc.ErrParse},                  // get_rate only
		{"maxrate -1Mbit", "negative", qdisc.ErrParse},
		{"refill_delay 5parsecs", "is not a time", qdisc.ErrParse},
		{"horizon NaN", "is not a time", qdisc.ErrParse},
		{"ce_threshold inf", "is not a time", qdisc.ErrParse},
		{"timer_slack 10s", `out of range) "timer_slack"`, qdisc.ErrParse},
		{"weights 65536 65536", "not enough elements in weights", qdisc.ErrParse},
		{"weights 100 65536 65536", `"weight" element 100 too small`, qdisc.ErrParse},
		{"weights 65536 65536 65536 weights 65536 65536 65536", `duplicate "weights"`, qdisc.ErrParse},
		{"priomap 0 1 2", `unknown option "priomap"`, qdisc.ErrParse}, // only after "bands 3"
		{"bands 3 priomap 0 1 2", "not enough elements in priomap", qdisc.ErrParse},
		{"bands 3 priomap 0 1 2 3 0 0 0 0 0 0 0 0 0 0 0 0", `"priomap" element 3 too big`, qdisc.ErrParse},
		{"bands 4 priomap", `"bands" must be 3`, qdisc.ErrParse},
		{"bands 3 weights", `"priomap" expected`, qdisc.ErrParse},
		{"offload_horizon 1ms", "invalid offload_horizon", qdisc.ErrKernel},
	}
	for _, c := range cases {
		_, err := (&FQ{}).Init(qdisctest.NewCtx(1), testSetup, strings.Fields(c.args))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.class) {
			t.Errorf("Init(%q): error %v, want %q (%v)", c.args, err, c.want, c.class)
		}
	}
}

// TestChange: fq_change mid-run keeps the flows and their packets when
// the table is resized, and trims to a lowered limit from the head (the
// peeked packet first), freeing as NOT_SPECIFIED; a refused change
// changes nothing; every packet is accounted for.
func TestChange(t *testing.T) {
	q := newFQ(t, "nopacing")
	ctx := qdisctest.NewCtx(1)
	var in []skb.Packet
	for i := 0; i < 40; i++ {
		in = append(in, pkt(int32(i%8), 1000))
		in[i].Handle = skb.Handle(i + 1)
	}
	enqueue(q, ctx, in...)
	flows := q.flows
	peeked, ok := q.Peek(ctx)
	if !ok {
		t.Fatal("nothing to peek")
	}
	info, err := q.Change(ctx, []string{"buckets", "16", "limit", "30", "quantum", "2000"})
	if err != nil || info.Limit != 30 {
		t.Fatalf("change: %+v %v", info, err)
	}
	if q.fqTreesLog != 4 || len(q.fqRoot) != 16 || q.flows != flows || q.quantum != 2000 {
		t.Fatalf("after resize: log %d, %d buckets, flows %d (was %d), quantum %d", q.fqTreesLog, len(q.fqRoot), q.flows, flows, q.quantum)
	}
	if st := q.Stats(); st.Qlen != 30 || len(ctx.Dropped) != 10 || st.Drops != 0 {
		t.Fatalf("after limit 30: qlen %d, %d freed, drops %d", st.Qlen, len(ctx.Dropped), st.Drops)
	}
	if r := ctx.Dropped[peeked.Handle]; r != skb.DropNotSpecified {
		t.Fatalf("peeked packet %d: %q, want NOT_SPECIFIED first", peeked.Handle, r)
	}
	for _, r := range ctx.Dropped {
		if r != skb.DropNotSpecified {
			t.Fatalf("drop reason %q", r)
		}
	}
	// Every flow is still found in the new table.
	for sock := int32(0); sock < 8; sock++ {
		key := uint64(uint32(sock)) << 1
		found := false
		for _, f := range q.fqRoot[hashPtr(key, q.fqTreesLog)] {
			found = found || f.key == key
		}
		if !found {
			t.Fatalf("flow of socket %d lost in the resize", sock)
		}
	}
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 100, Bytes: 1 << 40}, nil)
	if len(out)+len(ctx.Dropped) != len(in) {
		t.Fatalf("accounting: %d in, %d out, %d freed", len(in), len(out), len(ctx.Dropped))
	}
	for _, args := range []string{"limit 5 buckets 1", "limit 5 quantum 0", "limit 5 offload_horizon 1ms", "limit 5 bogus"} {
		if _, err := q.Change(ctx, strings.Fields(args)); err == nil || q.limit != 30 {
			t.Fatalf("change %q: %v, limit now %d", args, err, q.limit)
		}
	}
}

func TestConformance(t *testing.T) {
	cases := []struct {
		args  string
		limit int
	}{
		{"", 0},
		// The limit is per band, plus up to 8 in the internal queue.
		{"limit 50 flow_limit 10", 3*50 + fqFastpathMax},
		{"maxrate 100Mbit quantum 1514 buckets 16 orphan_mask 15", 0},
		{"nopacing horizon_cap ce_threshold 1ms initial_quantum 0", 0},
		{"buckets 2 weights 16384 16384 16384 bands 3 priomap 2 2 2 2 1 1 1 1 0 0 0 0 2 1 0 2 quantum 256", 0},
		{"flow_limit 1 limit 10", 3*10 + fqFastpathMax},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("fq"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(c.args), Limit: c.limit, Seed: 1}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

func FuzzInit(f *testing.F) {
	for _, s := range []string{"", "limit 100", "maxrate 1gbit quantum 1514", "buckets 2 orphan_mask 0",
		"weights 16384 16384 16384", "bands 3 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "horizon 1s horizon_cap",
		"timer_slack 0 refill_delay 0 ce_threshold 0", "quantum", "maxrate 0", "low_rate_threshold 4294967295bps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		q := &FQ{}
		if _, err := q.Init(qdisctest.NewCtx(1), testSetup, strings.Fields(args)); err != nil {
			return
		}
		// An accepted configuration must also run.
		ctx := qdisctest.NewCtx(1)
		var pk []skb.Packet
		for i := 0; i < 20; i++ {
			pk = append(pk, skb.Packet{Handle: skb.Handle(i + 1), Len: uint32(60 + 100*i), Sock: int32(i%3) - 1,
				Hash: uint32(i), Priority: uint32(i), Tstamp: sim.Time(i%2) * sim.Millisecond})
		}
		q.Enqueue(ctx, pk, make([]qdisc.Code, len(pk)))
		for i := 0; i < 50; i++ {
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 20}, nil)
			ctx.T += sim.Millisecond
		}
		_ = q.Dump()
		_ = q.Stats()
	})
}

// BenchmarkEnqueueDequeue pushes packets of 10000 sockets through fq
// alone (no host), in batches as the TX path does.
func BenchmarkEnqueueDequeue(b *testing.B) {
	const socks, batch = 10000, 64
	q := newFQ(b, "flow_limit 1000")
	ctx := qdisctest.NewCtx(1)
	pk := make([]skb.Packet, batch)
	rc := make([]qdisc.Code, batch)
	out := make([]skb.Packet, 0, batch)
	var h uint64
	// Warm up: a standing queue over all sockets.
	for i := 0; i < socks; i += batch {
		for j := range pk {
			h++
			pk[j] = skb.Packet{Handle: skb.Handle(h), Len: 1514, Sock: int32((i + j) % socks), Hash: uint32(h)}
		}
		q.Enqueue(ctx, pk, rc)
	}
	b.ResetTimer()
	start := time.Now()
	n := 0
	for n < b.N {
		for j := range pk {
			h++
			pk[j] = skb.Packet{Handle: skb.Handle(h), Len: 1514, Sock: int32(h * 7919 % socks), Hash: uint32(h)}
		}
		q.Enqueue(ctx, pk, rc)
		out = q.Dequeue(ctx, qdisc.DequeueReq{Max: batch, Bytes: 1 << 40}, out[:0])
		n += len(out)
		ctx.T += sim.Microsecond
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "pkts/s")
}

// fq takes over the pacing of the sockets it sees (SK_PACING_FQ) only
// with pacing on; nopacing leaves TCP to pace itself, also after a change.
func TestPacesSocketsFlag(t *testing.T) {
	for _, c := range []struct {
		args, change string
		want, after  bool
	}{{"", "nopacing", true, false}, {"nopacing", "pacing", false, true}} {
		q := &FQ{}
		info, err := q.Init(qdisctest.NewCtx(1), testSetup, strings.Fields(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Flags&qdisc.PacesSockets != 0; got != c.want {
			t.Errorf("fq %q: paces sockets %v, want %v", c.args, got, c.want)
		}
		info, err = q.Change(qdisctest.NewCtx(1), strings.Fields(c.change))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Flags&qdisc.PacesSockets != 0; got != c.after {
			t.Errorf("fq %q then %q: paces sockets %v, want %v", c.args, c.change, got, c.after)
		}
	}
}

// TestAddTailLinksPreviousFlow: fq_flow_add_tail links a flow behind the
// list's last one by writing that flow's next, a line of another struct
// fq_flow (its second, which its own enqueues write: f->band). An empty
// list has no last flow to write.
func TestAddTailLinksPreviousFlow(t *testing.T) {
	q := newFQ(t, "maxrate 10Gbit") // a maxrate: no fast path
	ctx := qdisctest.NewCtx(1)
	cases := []struct {
		sock int32
		want []qdisctest.LinesCall // of this enqueue
	}{
		{1, []qdisctest.LinesCall{{Key: 2, N: 2}}},                 // first new flow: its own pair
		{2, []qdisctest.LinesCall{{Key: 4, N: 2}, {Key: 2, N: 1}}}, // its own pair, then flow 1's next
		{3, []qdisctest.LinesCall{{Key: 6, N: 2}, {Key: 4, N: 1}}}, // behind flow 2
	}
	for _, c := range cases {
		mark := len(ctx.LineCalls)
		enqueue(q, ctx, pkt(c.sock, 100))
		if got := ctx.LineCalls[mark:]; !slices.Equal(got, c.want) {
			t.Fatalf("enqueue of a new flow (socket %d) reported %+v, want %+v", c.sock, got, c.want)
		}
	}
}

// TestDequeueVisitsCharged: fq_dequeue's loop reads and writes every flow
// it meets at the head of a list, not only the one it takes a packet
// from: a flow out of credit gets a quantum and goes to old_flows (its
// second line: credit, next), an empty one goes to old_flows or is
// detached (fq_peek reads head and t_root, the first line, after the
// credit on the second). Each is one flow visited (qdisc_flow_scan).
func TestDequeueVisitsCharged(t *testing.T) {
	// No fast path (maxrate), no pacing; each flow's first packet spends
	// its initial quantum.
	q := newFQ(t, "nopacing maxrate 10Gbit quantum 1000 initial_quantum 300")
	ctx := qdisctest.NewCtx(1)
	enqueue(q, ctx, pkt(1, 300), pkt(2, 300), pkt(1, 300), pkt(2, 300))
	lines, scans := len(ctx.LineCalls), ctx.WorkDone[qdisc.WorkFlowScan]
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 40}, nil)
	// Dequeues: flow 1's packet (credit 0); flow 1 to old_flows with a
	// quantum, flow 2's packet; flow 2 to old_flows behind flow 1, flow
	// 1's packet; flow 1 empty in old_flows, detached, flow 2's packet.
	want := []qdisctest.LinesCall{
		{Key: 2, N: 2},
		{Key: 2, N: 1}, {Key: 4, N: 2},
		{Key: 4, N: 1}, {Key: 2, N: 1}, {Key: 2, N: 2},
		{Key: 2, N: 2}, {Key: 4, N: 2},
	}
	if got := ctx.LineCalls[lines:]; len(out) != 4 || !slices.Equal(got, want) {
		t.Fatalf("dequeued %d packets reporting lines %+v, want 4 and %+v", len(out), got, want)
	}
	if got := ctx.WorkDone[qdisc.WorkFlowScan] - scans; got != 3 {
		t.Fatalf("dequeue visited %d flows without a packet, want 3 (two rotations, one detach)", got)
	}

	// A paced flow: its second packet waits 8ms (1000 B of quantum at
	// 1Mbit); the next dequeue gives it a quantum, then throttles it.
	q = newFQ(t, "maxrate 1Mbit quantum 1000 initial_quantum 300")
	ctx = qdisctest.NewCtx(1)
	enqueue(q, ctx, pkt(1, 300), pkt(1, 300))
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
	lines, scans = len(ctx.LineCalls), ctx.WorkDone[qdisc.WorkFlowScan]
	out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
	want = []qdisctest.LinesCall{{Key: 2, N: 1}, {Key: 2, N: 2}}
	if got := ctx.LineCalls[lines:]; len(out) != 0 || !ctx.WDogArmed || !slices.Equal(got, want) {
		t.Fatalf("paced flow: dequeued %d (watchdog %v) reporting %+v, want none, the watchdog and %+v", len(out), ctx.WDogArmed, got, want)
	}
	if got := ctx.WorkDone[qdisc.WorkFlowScan] - scans; got != 2 {
		t.Fatalf("paced flow: %d flows visited, want 2 (the rotation, the throttle into an empty tree)", got)
	}
}

// maxrate and defrate in percent are get_percent_rate's: that share of
// the device's speed, read back as a 32-bit rate.
func TestPercentRates(t *testing.T) {
	setup := testSetup
	setup.RateBps = 10e9
	for _, c := range []struct{ args, dump, err string }{
		{"maxrate 10%", "maxrate 1Gbit", ""},
		{"maxrate 2.5%", "maxrate 250Mbit", ""},
		{"maxrate 150%", "", "should be between [0,100]%"},
		{"maxrate x%", "", "could not be read or is malformed"},
	} {
		q := &FQ{}
		_, err := q.Init(qdisctest.NewCtx(1), setup, strings.Fields(c.args))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, qdisc.ErrParse) {
				t.Errorf("%s: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !strings.Contains(q.Dump(), c.dump) {
			t.Errorf("%s: %v, dump %q, want %q in it", c.args, err, q.Dump(), c.dump)
		}
		// A change reads the same speed.
		if _, err := q.Change(qdisctest.NewCtx(1), []string{"maxrate", "20%"}); err != nil || !strings.Contains(q.Dump(), "maxrate 2Gbit") {
			t.Errorf("change to maxrate 20%%: %v, dump %q", err, q.Dump())
		}
	}
	setup.RateBps = 400e9 // 100% is 50 GB/s: past get_rate's 32 bits
	if _, err := (&FQ{}).Init(qdisctest.NewCtx(1), setup, []string{"maxrate", "100%"}); err == nil || !strings.Contains(err.Error(), "32-bit rate") {
		t.Errorf("maxrate 100%% of 400 Gbit/s: error %v", err)
	}
}
