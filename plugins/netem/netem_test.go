package netem

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newQ(t testing.TB, ctx *qdisctest.Ctx, args string) *Netem {
	t.Helper()
	q := &Netem{}
	if _, err := ctx.Init(q, qdisctest.DefaultSetup(), strings.Fields(args)); err != nil {
		t.Fatal(err)
	}
	return q
}

// host is the part of the host these tests need: it hands packets in,
// enqueues the clones a qdisc asks for right after (as netdev does), and
// takes packets out at the times the watchdog says.
type host struct {
	t    testing.TB
	q    qdisc.Qdisc
	ctx  *qdisctest.Ctx
	next skb.Handle
	in   map[skb.Handle]skb.Packet
	// dupped counts the duplicates asked for of each packet.
	dupped map[skb.Handle]int
	// out are the departures, in order, with their times.
	out   []skb.Packet
	outAt []sim.Time
}

func newHost(t testing.TB, args string, seed uint64) (*host, *Netem) {
	ctx := qdisctest.NewCtx(seed)
	q := newQ(t, ctx, args)
	return &host{t: t, q: q, ctx: ctx, in: map[skb.Handle]skb.Packet{}, dupped: map[skb.Handle]int{}}, q
}

func (h *host) send(n int, p skb.Packet) []qdisc.Code {
	batch := make([]skb.Packet, n)
	for i := range batch {
		h.next++
		batch[i] = p
		batch[i].Handle = h.next
		h.in[h.next] = batch[i]
	}
	rc := make([]qdisc.Code, n)
	h.q.Enqueue(h.ctx, batch, rc)
	for len(h.ctx.Dups) > 0 {
		clones := make([]skb.Packet, len(h.ctx.Dups))
		for i, d := range h.ctx.Dups {
			h.dupped[d]++
			h.next++
			clones[i] = h.in[d]
			clones[i].Handle, clones[i].Sock = h.next, -1
			h.in[h.next] = clones[i]
			clones[i].Flags |= skb.PacketDup // back at the qdisc that asked: the host marks it
		}
		h.ctx.Dups = h.ctx.Dups[:0]
		h.q.Enqueue(h.ctx, clones, make([]qdisc.Code, len(clones)))
	}
	return rc
}

// drain dequeues until the qdisc is empty, moving time to the watchdog.
func (h *host) drain() {
	for h.q.Stats().Qlen > 0 {
		out := h.q.Dequeue(h.ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)
		for _, p := range out {
			h.out = append(h.out, p)
			h.outAt = append(h.outAt, h.ctx.T)
		}
		if len(out) == 0 {
			if err := h.ctx.Idle(h.q, h.q.Stats().Qlen); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}

func pkt(size uint32) skb.Packet { return skb.Packet{Len: size, Sock: 1, GSOSegs: 1} }

// percentile of sorted values, nearest rank.
func percentile(v []float64, p float64) float64 { return v[int(p*float64(len(v)-1)+0.5)] }

// delay 50ms 10ms gives the configured distribution: with the normal
// table the 16th, 50th and 84th percentiles are mean - sd, mean and
// mean + sd (40, 50, 60 ms); without a table it is uniform on
// [40, 60) ms; with the Pareto table the median is below the mean.
// Bounds: the sample percentile's standard error at n = 20000 is at most
// about 0.11 ms for the normal and 0.07 ms for the uniform; the bound is
// 5 of them plus the table's resolution.
func TestDelayDistribution(t *testing.T) {
	const n = 20000
	cases := []struct {
		dist       string
		p16, p50   float64
		p84, tolMs float64
	}{
		{"distribution normal", 40, 50, 60, 0.6},
		{"", 43.2, 50, 56.8, 0.4},
		// Pareto (shape 3): median at 0.5^(-1/3) - 1.5 = -0.24 of the
		// shape's unit, times NIST Net's 4/3: 50 - 3.2 ms.
		{"distribution pareto", math.NaN(), 46.8, math.NaN(), 0.6},
	}
	for _, c := range cases {
		t.Run(c.dist, func(t *testing.T) {
			h, q := newHost(t, "limit 30000 delay 50ms 10ms "+c.dist, 1)
			h.send(n, pkt(100))
			h.drain()
			if len(h.out) != n || q.delayed != n {
				t.Fatalf("%d of %d out, delayed %d", len(h.out), n, q.delayed)
			}
			ms := make([]float64, n)
			for i, at := range h.outAt {
				ms[i] = float64(at) / 1e6
			}
			slices.Sort(ms)
			got := [3]float64{percentile(ms, 0.16), percentile(ms, 0.5), percentile(ms, 0.84)}
			t.Logf("%s: p16 %.2f p50 %.2f p84 %.2f ms", c.dist, got[0], got[1], got[2])
			for i, want := range []float64{c.p16, c.p50, c.p84} {
				if !math.IsNaN(want) && math.Abs(got[i]-want) > c.tolMs {
					t.Errorf("percentile %d: %.2f ms, want %.1f +- %.1f", []int{16, 50, 84}[i], got[i], want, c.tolMs)
				}
			}
		})
	}
}

// loss 1% drops 1% of packets, within 5 binomial standard deviations
// (sqrt(n p (1-p)) = 31.5 at n = 100000), for several seeds; the sender
// is told success (__NET_XMIT_BYPASS), the drop is QDISC_DROP.
func TestLossRandom(t *testing.T) {
	const n, p = 100000, 0.01
	sd := math.Sqrt(n * p * (1 - p))
	for seed := uint64(1); seed <= 3; seed++ {
		h, q := newHost(t, "limit 200000 loss 1%", seed)
		rc := h.send(n, pkt(100))
		lost := len(h.ctx.Dropped)
		if math.Abs(float64(lost)-n*p) > 5*sd || q.lossDropped != uint64(lost) || q.drops != uint64(lost) {
			t.Errorf("seed %d: lost %d of %d (xstat %d, drops %d), want %d +- %.0f", seed, lost, n, q.lossDropped, q.drops, int(n*p), 5*sd)
		}
		for hd, r := range h.ctx.Dropped {
			if r != skb.DropQdiscDrop || rc[hd-1] != qdisc.XmitSuccess|qdisc.XmitBypass {
				t.Fatalf("drop of %d: %q, code %v", hd, r, rc[hd-1])
			}
		}
		if st := q.Stats(); st.Qlen != n-lost {
			t.Fatalf("holds %d, want %d", st.Qlen, n-lost)
		}
	}
}

// The Gilbert-Elliott model: loss 1-k in the good state, 1-h in the bad
// one, p good->bad, r bad->good; the stationary loss is
// (r(1-k) + p(1-h)) / (p + r), and losses come in bursts.
func TestLossGilbertElliott(t *testing.T) {
	const n = 200000
	h, q := newHost(t, "limit 300000 loss gemodel 1% 10% 70% 0.1%", 5)
	h.send(n, pkt(100))
	p, r, h1, k1 := 0.01, 0.10, 0.70, 0.001
	want := (r*k1 + p*h1) / (p + r)
	got := float64(len(h.ctx.Dropped)) / n
	if math.Abs(got-want) > 0.1*want {
		t.Errorf("loss %.4f, want %.4f within 10%%", got, want)
	}
	if q.clg.a3 != math.MaxUint32-psched70() {
		t.Errorf("h is stored as 1 - (1-h): %d", q.clg.a3)
	}
	// Bursts: the chance the packet after a loss is lost too is far above
	// the mean loss.
	var after, both int
	for i := skb.Handle(1); i < n; i++ {
		if _, lost := h.ctx.Dropped[i]; lost {
			after++
			if _, next := h.ctx.Dropped[i+1]; next {
				both++
			}
		}
	}
	if cond := float64(both) / float64(after); cond < 5*want {
		t.Errorf("P(loss | loss before) %.3f, want bursts well above %.4f", cond, want)
	}
}

func psched70() uint32 { return uint32(math.RoundToEven(0.7 * math.MaxUint32)) }

// The 4-state model of tc-testing's "loss state 1": p13 1%, p31 99%,
// p32 0, p23 100%, p14 0. From the gap state (1) a loss moves to the
// burst state (3) with p13; from 3 the chain returns to 1 with p31 and
// stays (losing again) otherwise, so 1% of packets are lost.
func TestLoss4State(t *testing.T) {
	const n = 200000
	h, _ := newHost(t, "limit 300000 loss state 1", 9)
	h.send(n, pkt(100))
	got := float64(len(h.ctx.Dropped)) / n
	if math.Abs(got-0.01) > 0.001 {
		t.Errorf("loss %.4f, want 0.0100", got)
	}
}

// loss_4state's ranges by hand, with the draw landing exactly on a
// bound: each range is [lower, upper), so a draw equal to p14 from the
// gap state is a burst loss, one equal to p32 from the burst state
// returns to the gap, and one equal to p31 + p32 stays lost.
func TestLoss4StateBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		from      uint8
		set       func(c *clgState, rnd uint32)
		lost      bool
		wantState uint8
	}{
		{"gap, rnd = p14", txInGapPeriod, func(c *clgState, r uint32) { c.a4, c.a1 = r, 1 }, true, lostInBurstPeriod},
		{"gap, rnd = p13 + p14", txInGapPeriod, func(c *clgState, r uint32) { c.a4, c.a1 = r-1, 1 }, false, txInGapPeriod},
		{"burst loss, rnd = p32", lostInBurstPeriod, func(c *clgState, r uint32) { c.a3, c.a2 = r, 1 }, false, txInGapPeriod},
		{"burst loss, rnd = p31 + p32", lostInBurstPeriod, func(c *clgState, r uint32) { c.a3, c.a2 = 0, r }, true, lostInBurstPeriod},
	} {
		q := newQ(t, qdisctest.NewCtx(1), "loss state 1")
		peek := q.prng
		rnd := peek.prandomU32State()
		q.clg = clgState{state: c.from}
		c.set(&q.clg, rnd)
		if lost := q.loss4State(); lost != c.lost || q.clg.state != c.wantState {
			t.Errorf("%s: lost %v state %d, want %v %d", c.name, lost, q.clg.state, c.lost, c.wantState)
		}
	}
}

// Reordering with a gap, by hand: with delay 10ms reorder 100% gap 5,
// packets 1-4 are delayed and every 5th goes to the head of the queue
// at once (sch->q, a stack: the latest reordered leaves first).
func TestReorderGap(t *testing.T) {
	h, q := newHost(t, "delay 10ms reorder 100% gap 5", 1)
	h.send(10, pkt(100))
	h.drain()
	var got []skb.Handle
	for _, p := range h.out {
		got = append(got, p.Handle)
	}
	if want := []skb.Handle{10, 5, 1, 2, 3, 4, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if h.outAt[1] != 0 || h.outAt[2] != 10*sim.Millisecond || q.reordered != 2 || q.delayed != 8 {
		t.Fatalf("times %v, reordered %d delayed %d", h.outAt, q.reordered, q.delayed)
	}
}

// reorder 25% (gap 1 by tc's default) sends a quarter of the packets
// at once, within 5 binomial standard deviations.
func TestReorderProbability(t *testing.T) {
	const n = 40000
	h, q := newHost(t, "limit 50000 delay 10ms reorder 25%", 3)
	h.send(n, pkt(100))
	sd := math.Sqrt(n * 0.25 * 0.75)
	if got := float64(q.reordered); math.Abs(got-n*0.25) > 5*sd || q.reorderQ.Len() != int(q.reordered) {
		t.Fatalf("reordered %v (queue %d), want %d +- %.0f", got, q.reorderQ.Len(), n/4, 5*sd)
	}
}

// duplicate 10%: about a tenth of the packets leave twice; a clone is
// not duplicated again; every packet is accounted for.
func TestDuplicate(t *testing.T) {
	const n = 50000
	h, q := newHost(t, "limit 200000 duplicate 10%", 4)
	h.send(n, pkt(100))
	h.drain()
	sd := math.Sqrt(n * 0.1 * 0.9)
	if got := float64(q.duplicated); math.Abs(got-n*0.1) > 5*sd {
		t.Fatalf("duplicated %v, want %d +- %.0f", got, n/10, 5*sd)
	}
	if len(h.out) != n+int(q.duplicated) || len(h.in) != len(h.out) || len(h.dupped) != int(q.duplicated) {
		t.Fatalf("%d out, %d in, %d duplicated, %d packets asked for", len(h.out), len(h.in), q.duplicated, len(h.dupped))
	}
	for d, k := range h.dupped {
		if k != 1 || h.in[d].Sock == -1 {
			t.Fatalf("packet %#x (socket %d) duplicated %d times: only originals, once each", uint64(d), h.in[d].Sock, k)
		}
	}
	// duplicate 100%: each packet of one batch once more, never a third
	// time.
	h, q = newHost(t, "duplicate 100%", 4)
	h.send(10, pkt(100))
	h.drain()
	if len(h.out) != 20 || q.duplicated != 10 || len(h.dupped) != 10 {
		t.Fatalf("duplicate 100%%: %d out, %d duplicated, %d packets asked for", len(h.out), q.duplicated, len(h.dupped))
	}
	for d, k := range h.dupped {
		if k != 1 || h.in[d].Sock == -1 {
			t.Fatalf("duplicate 100%%: packet %#x (socket %d) duplicated %d times", uint64(d), h.in[d].Sock, k)
		}
	}
}

// rate 1mbit serialises packets (8 us a byte) after the last one queued;
// packet overhead and cells by hand: 1000 + 20 bytes in cells of 100
// with 5 bytes each is 11 x 105 bytes, 9.24 ms.
func TestRate(t *testing.T) {
	h, _ := newHost(t, "rate 1mbit", 1)
	h.send(3, pkt(1000))
	h.drain()
	if want := []sim.Time{8e6, 16e6, 24e6}; !slices.Equal(h.outAt, want) {
		t.Fatalf("departures %v, want %v", h.outAt, want)
	}
	h, _ = newHost(t, "rate 1mbit 20 100 5", 1)
	h.send(1, pkt(1000))
	h.drain()
	if h.outAt[0] != 9_240_000 {
		t.Fatalf("with overheads: %d, want 9.24ms", h.outAt[0])
	}
	// With a delay, the delay overlaps the serialisation of those ahead.
	h, _ = newHost(t, "delay 10ms rate 1mbit", 1)
	h.send(2, pkt(1000))
	h.drain()
	if want := []sim.Time{18e6, 26e6}; !slices.Equal(h.outAt, want) {
		t.Fatalf("delay + rate: %v, want %v", h.outAt, want)
	}
}

// Slots by hand: slot 1ms 1ms packets 2 lets two packets out per slot,
// one slot a millisecond.
func TestSlot(t *testing.T) {
	h, q := newHost(t, "slot 1ms 1ms packets 2", 1)
	h.send(5, pkt(100))
	h.drain()
	if want := []sim.Time{0, 0, 1e6, 1e6, 2e6}; !slices.Equal(h.outAt, want) {
		t.Fatalf("departures %v, want %v", h.outAt, want)
	}
	if q.slot.packetsLeft != 1 || q.slot.next != 2e6 {
		t.Fatalf("slot state %+v", q.slot)
	}
	// A byte budget: 250 bytes a slot lets out three 100-byte packets
	// (the budget goes negative on the third).
	h, _ = newHost(t, "slot 1ms 1ms bytes 250", 1)
	h.send(4, pkt(100))
	h.drain()
	if want := []sim.Time{0, 0, 0, 1e6}; !slices.Equal(h.outAt, want) {
		t.Fatalf("bytes: departures %v, want %v", h.outAt, want)
	}
}

// get_slot_next draws the next slot's delay uniformly in [min, max)
// with mul_u64_u32_shr, whose product does not overflow: slot 1s 5s
// (a 4 s range, past 2^31 ns) stays in range, its draws spread over it.
func TestSlotNextRange(t *testing.T) {
	for _, c := range []struct{ args string }{{"slot 1ms 2ms"}, {"slot 1s 5s"}, {"slot 0 10s"}} {
		ctx := qdisctest.NewCtx(5)
		q := newQ(t, ctx, c.args)
		lo, hi := q.slotCfg.minDelay, q.slotCfg.maxDelay
		var below, above int
		for range 1000 {
			q.getSlotNext(ctx, 0)
			if d := q.slot.next; d < lo || d >= hi {
				t.Fatalf("%s: next slot at %d, want [%d, %d)", c.args, d, lo, hi)
			} else if d < lo+(hi-lo)/2 {
				below++
			} else {
				above++
			}
		}
		if below < 400 || above < 400 {
			t.Errorf("%s: %d draws below the middle, %d above", c.args, below, above)
		}
	}
}

// loss 100% ecn marks ECN-capable packets CE instead of dropping them
// (counted as a drop and as ecn_marked, as the kernel does) and drops
// the others.
func TestECN(t *testing.T) {
	h, q := newHost(t, "loss 100% ecn", 1)
	ect := pkt(100)
	ect.ECN = 2
	h.send(3, ect)
	h.send(2, pkt(100))
	h.drain()
	if len(h.out) != 3 || len(h.ctx.Dropped) != 2 || q.ecnMarked != 3 || q.drops != 5 {
		t.Fatalf("out %d dropped %d marked %d drops %d", len(h.out), len(h.ctx.Dropped), q.ecnMarked, q.drops)
	}
	for _, p := range h.out {
		if p.ECN != 3 {
			t.Fatalf("packet %d left with ECN %d, want CE", p.Handle, p.ECN)
		}
	}
}

// The limit counts sch->q.qlen: past it, tail drop with NET_XMIT_DROP.
// The qlen is the tfifo's and the reordered packets' (gap 2 reorder
// 100% sends every second packet to sch->q), so a limit of 5 holds 5
// of them, whichever queue they are in.
func TestLimit(t *testing.T) {
	for _, c := range []struct {
		args           string
		tfifo, reorder int
	}{
		{"limit 5 delay 1ms", 5, 0},
		{"limit 5 delay 1ms reorder 100% gap 2", 3, 2},
	} {
		h, q := newHost(t, c.args, 1)
		rc := h.send(8, pkt(100))
		if q.tfifo.len() != c.tfifo || q.reorderQ.Len() != c.reorder || len(h.ctx.Dropped) != 3 ||
			rc[4] != qdisc.XmitSuccess || rc[5] != qdisc.XmitDrop || q.drops != 3 || q.Stats().Qlen != 5 {
			t.Fatalf("%s: held %d + %d reordered, dropped %d, rc %v", c.args, q.tfifo.len(), q.reorderQ.Len(), len(h.ctx.Dropped), rc)
		}
	}
}

// The same seed word gives the same decisions: `seed` replays the
// stream; without it the stream comes from Ctx.Rand.
func TestSeed(t *testing.T) {
	run := func(args string, ctxSeed uint64) []skb.Handle {
		h, _ := newHost(t, "limit 10000 "+args, ctxSeed)
		h.send(2000, pkt(100))
		var lost []skb.Handle
		for hd := range h.ctx.Dropped {
			lost = append(lost, hd)
		}
		slices.Sort(lost)
		return lost
	}
	a, b := run("loss 10% seed 77", 1), run("loss 10% seed 77", 2)
	if !slices.Equal(a, b) {
		t.Fatal("seed 77 gave different losses under different host streams")
	}
	if c := run("loss 10%", 1); slices.Equal(a, c) {
		t.Fatal("no seed word: the stream should come from the host")
	}
}

// netem_change reseeds the prng only when tc sends a seed: a change
// without one keeps the stream where it is and the seed tc shows; one
// with a seed restarts it (netem_init drew the first seed).
func TestChangeKeepsSeed(t *testing.T) {
	for _, c := range []struct {
		init, change string
		reseeded     bool
	}{
		{"loss 10%", "loss 20%", false},
		{"loss 10% seed 7", "loss 20%", false},
		{"loss 10%", "loss 20% seed 7", true},
	} {
		h, q := newHost(t, c.init, 1)
		h.send(10, pkt(100))
		seed, state, dump := q.seed, q.prng, q.Dump()
		if _, err := q.Change(h.ctx, strings.Fields(c.change)); err != nil {
			t.Fatal(err)
		}
		var want rndState
		want.prandomSeedState(7)
		switch {
		case !c.reseeded && (q.seed != seed || q.prng != state):
			t.Errorf("%s, then %s: seed %d -> %d, stream restarted", c.init, c.change, seed, q.seed)
		case !c.reseeded && !strings.Contains(q.Dump(), " seed "+strconv.FormatUint(seed, 10)):
			t.Errorf("%s, then %s: dump %q, was %q", c.init, c.change, q.Dump(), dump)
		case c.reseeded && (q.seed != 7 || q.prng != want):
			t.Errorf("%s, then %s: seed %d, stream not restarted from 7", c.init, c.change, q.seed)
		}
	}
}

// A change sets limit, loss, gap, duplicate and delay from what tc sends
// (a word left out is 0) but keeps the rate, ECN, the distribution and
// correlations it does not send.
func TestChange(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := newQ(t, ctx, "delay 10ms 2ms 25% distribution normal loss 1% rate 1mbit ecn")
	if _, err := q.Change(ctx, strings.Fields("loss 2%")); err != nil {
		t.Fatal(err)
	}
	if q.latency != 0 || q.jitter != 0 || q.rate != 125000 || !q.ecn || q.delayDist.name != "normal" || q.delayCor.rho == 0 || q.limit != 1000 {
		t.Fatalf("after change: %+v", q)
	}
	if _, err := q.Change(ctx, strings.Fields("reorder 5%")); err == nil {
		t.Fatal("reorder without delay was accepted")
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		args  string
		class error
		want  string
	}{
		{"reorder 10%", qdisc.ErrParse, "reordering not possible without specifying some delay"},
		{"delay 10ms gap 5", qdisc.ErrParse, "gap specified without reorder probability"},
		{"ecn", qdisc.ErrParse, "ecn requested without loss model"},
		{"delay 10ms distribution normal", qdisc.ErrParse, "distribution specified but no latency and jitter"},
		{"delay 10ms 1ms distribution uniform", qdisc.ErrParse, "No distribution data for uniform"},
		{"delay 10ms 1ms distribution experimental", qdisc.ErrLacks, "experimental"},
		{"loss 1% loss 2%", qdisc.ErrParse, "duplicate loss argument"},
		{"loss sometimes", qdisc.ErrParse, "Unknown loss parameter: sometimes"},
		{"loss 150%", qdisc.ErrParse, "out of range"},
		{"slot sometimes", qdisc.ErrParse, "Unknown slot parameter"},
		{"slot 2ms 1ms", qdisc.ErrParse, "slot max_delay"},
		{"slot distribution normal 1ms 0", qdisc.ErrParse, "Non-positive jitter"},
		{"jitter 5ms", qdisc.ErrParse, `What is "jitter"?`},
		{"delay", qdisc.ErrParse, `"latency" needs a value`},
		{"rate fast", qdisc.ErrParse, `illegal "rate"`},
		{"seed -1", qdisc.ErrParse, `illegal "seed"`},
	}
	for _, c := range cases {
		_, err := (&Netem{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(c.args))
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "netem: ") {
			t.Errorf("%q: %v, want %v containing %q", c.args, err, c.class, c.want)
		}
	}
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		args  string
		limit int
	}{
		{"", 1000},
		{"limit 50 delay 1ms 500us", 50},
		// Reordered packets wait outside the tfifo the limit counts, as
		// in the kernel: no packet limit to check.
		{"delay 2ms 1ms 30% distribution paretonormal loss 5% 20% duplicate 5% reorder 10% 10% gap 3 corrupt 1%", 0},
		{"rate 100mbit 14 64 2 limit 100", 0},
		{"delay 100us slot 500us 2ms packets 10 bytes 20000", 1000},
		{"loss gemodel 2% 20% 50% 1% ecn duplicate 20%", 0},
		{"delay 1ms 2ms slot distribution pareto 1ms 500us loss state 2% 30% 10% 40% 1%", 1000},
	} {
		t.Run(c.args, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("netem"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(c.args), Limit: c.limit, Seed: 2}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// netem's child (tc qdisc add ... parent 1:1, netem_graft): netem makes
// none of its own (its class is GraftOnly and not dumped without one);
// once grafted, every packet due goes into the child when netem is
// dequeued (what the child refuses is dropped there and counted in
// netem's drops too), and the child is dequeued. netem's qlen, which its
// limit checks, counts the child's packets.
func TestChild(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q := &Netem{}
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields("delay 1ms limit 6")}); err != nil {
		t.Fatal(err)
	}
	if cls := q.Classes(); len(cls) != 1 || !cls[0].GraftOnly || !cls[0].Leaf || q.child {
		t.Fatalf("classes %+v, child %v: want 1:1, graft only, no child", cls, q.child)
	}
	if _, _, _, ok := ctx.LeafInfo(q.class()); ok {
		t.Fatal("a default child was made")
	}
	ctx = qdisctest.NewCtx(1)
	q = &Netem{}
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields("delay 1ms limit 6"),
		Leaves: []string{"parent 1:1 handle 10: pfifo limit 3"}}); err != nil {
		t.Fatal(err)
	}
	if !q.child {
		t.Fatal("the graft was not told")
	}
	batch := make([]skb.Packet, 5)
	for i := range batch {
		batch[i] = pkt(100)
		batch[i].Handle = skb.Handle(i + 1)
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, len(batch)))
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 20}, nil); len(out) != 0 || !ctx.WDogArmed {
		t.Fatalf("%d left before their delay, watchdog %v", len(out), ctx.WDogArmed)
	}
	ctx.T += sim.Millisecond
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 20}, nil)
	_, _, child, _ := ctx.LeafInfo(q.class())
	if len(out) != 1 || out[0].Handle != 1 || child.Qlen != 2 || len(ctx.Dropped) != 2 || q.drops != 2 {
		t.Fatalf("out %v, child holds %d, dropped %v, netem drops %d: want packet 1 out, 2 in pfifo limit 3, 2 dropped",
			out, child.Qlen, ctx.Dropped, q.drops)
	}
	if st := q.Stats(); st.Qlen != 2 || st.Backlog != 200 {
		t.Fatalf("netem %+v: its qlen and backlog are the child's", st)
	}
	// The limit (6) counts the 2 in the child: 4 more fit.
	more := make([]skb.Packet, 5)
	for i := range more {
		more[i] = pkt(100)
		more[i].Handle = skb.Handle(10 + i)
	}
	rc := make([]qdisc.Code, len(more))
	q.Enqueue(ctx, more, rc)
	if rc[3] != qdisc.XmitSuccess || rc[4] != qdisc.XmitDrop {
		t.Fatalf("codes %v: the limit should count the child's packets", rc)
	}
	for range 2 {
		if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 20}, nil); len(out) != 1 {
			t.Fatal("the child's packets are not dequeued while the tfifo's head waits")
		}
	}
	if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: q.class()}); !errors.Is(err, qdisc.ErrParse) {
		t.Errorf("class change: %v", err)
	}
	if err := q.DeleteClass(ctx, q.class()); !errors.Is(err, qdisc.ErrKernel) {
		t.Errorf("class delete: %v", err)
	}
}
