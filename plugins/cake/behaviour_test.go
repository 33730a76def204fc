package cake

import (
	"math"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newCake(t *testing.T, args ...string) *Cake {
	t.Helper()
	q := &Cake{}
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514, TxQueueLen: 1000}, args); err != nil {
		t.Fatal(err)
	}
	return q
}

type flowSpec struct {
	src, dst uint32
	port     uint16
	dscp     uint8
	size     uint32
}

// feed keeps every flow backlogged with n packets.
func feed(q *Cake, ctx *qdisctest.Ctx, flows []flowSpec, n int, next *uint64) {
	for i := 0; i < n; i++ {
		for _, f := range flows {
			*next++
			p := skb.Packet{Handle: skb.Handle(*next), Len: f.size, TrueSize: 2048, DSCP: f.dscp,
				Keys: skb.FlowKeys{Src: f.src, Dst: f.dst, SrcPort: f.port, DstPort: 80, Proto: 17}, GSOSegs: 1}
			p.Hash = uint32(f.src*7919 + f.dst*104729 + uint32(f.port)*31 + 1)
			q.Enqueue(ctx, []skb.Packet{p}, make([]qdisc.Code, 1))
		}
	}
}

// In triple-isolate, two hosts with 1 and 8 flows get equal shares.
func TestTripleIsolateHostFairness(t *testing.T) {
	q := newCake(t, "triple-isolate", "besteffort")
	ctx := qdisctest.NewCtx(1)
	var flows []flowSpec
	flows = append(flows, flowSpec{src: 1, dst: 100, port: 1, size: 1000})
	for i := 0; i < 8; i++ {
		flows = append(flows, flowSpec{src: 2, dst: uint32(200 + i), port: uint16(10 + i), size: 1000})
	}
	var next uint64
	feed(q, ctx, flows, 500, &next)
	bytes := map[uint32]int{}
	for i := 0; i < 800; i++ { // all nine flows stay backlogged
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil) {
			bytes[p.Keys.Src] += int(p.Len)
		}
		ctx.T += sim.Microsecond
	}
	ratio := float64(bytes[1]) / float64(bytes[2])
	t.Logf("host 1 (1 flow) %d bytes, host 2 (8 flows) %d bytes, ratio %.3f", bytes[1], bytes[2], ratio)
	if math.Abs(ratio-1) > 0.1 {
		t.Errorf("host shares %d vs %d (ratio %.2f), want equal within 10%%", bytes[1], bytes[2], ratio)
	}
	// Per-flow isolation would give host 2 eight times more.
	qf := newCake(t, "flows", "besteffort")
	ctx = qdisctest.NewCtx(1)
	next = 0
	feed(qf, ctx, flows, 500, &next)
	bytes = map[uint32]int{}
	for i := 0; i < 800; i++ {
		for _, p := range qf.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil) {
			bytes[p.Keys.Src] += int(p.Len)
		}
	}
	if r := float64(bytes[2]) / float64(bytes[1]); r < 7 || r > 9 {
		t.Errorf("flows mode: host 2/host 1 = %.2f, want about 8", r)
	}
}

// diffserv3: DSCP maps to the three tins and the tins' thresholds are
// R, R/16, R/4; a saturating bulk (CS1) tin gets about 1/16 of a shaped
// link when best effort competes.
func TestDiffserv3Tins(t *testing.T) {
	q := newCake(t, "bandwidth", "100Mbit", "diffserv3")
	for dscp, want := range map[uint8]int{0: 0, 8: 1, 1: 1, 46: 2, 44: 2, 48: 2, 56: 2, 4: 2, 10: 0, 34: 0} {
		p := skb.Packet{DSCP: dscp}
		if got := q.selectTin(&p); got != want {
			t.Errorf("DSCP %d -> tin %d, want %d", dscp, got, want)
		}
	}
	rate := uint64(100e6 / 8)
	for i, want := range []uint64{rate, rate >> 4, rate >> 2} {
		if q.tins[i].tinRateBps != want {
			t.Errorf("tin %d threshold %d B/s, want %d", i, q.tins[i].tinRateBps, want)
		}
	}
	if q.tins[0].tinQuantum != 1024 || q.tins[1].tinQuantum != 64 || q.tins[2].tinQuantum != 256 {
		t.Errorf("tin quanta %d %d %d, want 1024 64 256", q.tins[0].tinQuantum, q.tins[1].tinQuantum, q.tins[2].tinQuantum)
	}
	ctx := qdisctest.NewCtx(1)
	flows := []flowSpec{{src: 1, dst: 2, port: 1, dscp: 0, size: 1500}, {src: 1, dst: 3, port: 2, dscp: 8, size: 1500}}
	var next uint64
	bytes := map[uint8]int{}
	for step := 0; step < 20000; step++ {
		if step%50 == 0 {
			feed(q, ctx, flows, 10, &next)
		}
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil) {
			bytes[p.DSCP] += int(p.Len)
		}
		ctx.T += 10 * sim.Microsecond // 100 Mbit/s moves 1500 B in 120 us
	}
	share := float64(bytes[8]) / float64(bytes[0]+bytes[8])
	t.Logf("best effort %d B, bulk %d B, bulk share %.3f", bytes[0], bytes[8], share)
	if share < 0.04 || share > 0.09 {
		t.Errorf("bulk tin share %.3f, want about 1/16", share)
	}
	total := float64(bytes[0]+bytes[8]) * 8 / (float64(ctx.T) / 1e9)
	if total < 90e6 || total > 101e6 {
		t.Errorf("shaped throughput %.1f Mbit/s, want about 100", total/1e6)
	}
}

// BLUE's p rises by p_inc at most once per target while the queue
// overflows, and decays by p_dec per target once the flow runs empty.
func TestBlueRisesAndDecays(t *testing.T) {
	p := cobaltParams{target: 5 * sim.Millisecond, interval: 100 * sim.Millisecond, pInc: 1 << 24, pDec: 1 << 20}
	var v cobaltVars
	now := sim.Time(0)
	for i := 0; i < 10; i++ { // overflow every 1 ms: p rises every 6th call
		now += sim.Millisecond
		cobaltQueueFull(&v, &p, now, true)
	}
	if v.pDrop != 1<<24 {
		t.Errorf("after 10 overflows 1 ms apart p = %#x, want one increment (%#x)", v.pDrop, 1<<24)
	}
	for i := 0; i < 300; i++ { // sustained overload: saturates at ~1
		now += 6 * sim.Millisecond
		cobaltQueueFull(&v, &p, now, true)
	}
	if v.pDrop != ^uint32(0) {
		t.Errorf("p after sustained overflow = %#x, want saturated", v.pDrop)
	}
	before := v.pDrop
	for i := 0; i < 10; i++ {
		now += 6 * sim.Millisecond
		cobaltQueueEmpty(&v, &p, now)
	}
	if before-v.pDrop != 10*(1<<20) {
		t.Errorf("p decayed by %#x over 10 empty services, want 10*p_dec", before-v.pDrop)
	}

	// In the qdisc: a small memlimit under overload drives p up; BLUE
	// then drops at dequeue with CAKE_FLOOD; draining lets it decay.
	q := newCake(t, "besteffort", "flows", "memlimit", "64kb")
	ctx := qdisctest.NewCtx(1)
	flows := []flowSpec{{src: 1, dst: 2, port: 1, size: 100}}
	var next uint64
	for step := 0; step < 4000; step++ {
		feed(q, ctx, flows, 4, &next)
		q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
		ctx.T += 50 * sim.Microsecond
	}
	up := q.BlueMax()
	floods := 0
	for _, r := range ctx.Dropped {
		if r == skb.DropCakeFlood {
			floods++
		}
	}
	if up < 0.1 || floods == 0 {
		t.Fatalf("under overload p = %.3f with %d CAKE_FLOOD drops; want p rising and BLUE drops", up, floods)
	}
	// Stop the flood and drain it; another flow's trickle keeps the
	// qdisc non-empty, so dequeue keeps finding the flooded flow empty
	// (cobalt_queue_empty) and p decays by p_dec per target.
	other := []flowSpec{{src: 1, dst: 9, port: 9, size: 100}}
	for step := 0; step < 2000; step++ {
		feed(q, ctx, other, 1, &next)
		q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
		ctx.T += 6 * sim.Millisecond
	}
	if down := q.BlueMax(); down >= up {
		t.Errorf("p did not decay once empty: %.3f -> %.3f", up, down)
	}
	t.Logf("BLUE p under overload %.3f, after draining %.3f, CAKE_FLOOD drops %d", up, q.BlueMax(), floods)
}

// Overflow drops come from the fattest flow, with QDISC_OVERLIMIT.
func TestOverflowDropsFattest(t *testing.T) {
	q := newCake(t, "besteffort", "flows", "memlimit", "100kb")
	ctx := qdisctest.NewCtx(1)
	fat := []flowSpec{{src: 1, dst: 2, port: 1, size: 1000}}
	thin := []flowSpec{{src: 1, dst: 3, port: 2, size: 100}}
	var next uint64
	feed(q, ctx, thin, 5, &next)
	feed(q, ctx, fat, 200, &next)
	for h, r := range ctx.Dropped {
		if r != skb.DropQdiscOverlimit {
			t.Errorf("drop reason %s, want QDISC_OVERLIMIT", r)
		}
		if h <= 5 {
			t.Errorf("packet %d of the thin flow was dropped", h)
		}
	}
	if len(ctx.Dropped) == 0 {
		t.Fatal("no overflow drops")
	}
}

// cake_hash dissects a packet once (a qdisc_hash unit: the dissection
// and one siphash of its keys); its host hashes are two siphashes of the
// keys it dissected, besides the flow's own unless the NIC's L4 hash
// stands in for it (use_skbhash): the unit covers one of them, each
// other is a WorkSiphash. Work reported per packet enqueued into a fresh
// flow of each mode.
func TestHashWorkPerMode(t *testing.T) {
	for _, c := range []struct {
		mode          string
		skbHash       bool
		hash, siphash int
	}{
		{"flows", true, 0, 0},           // skip_hash: the RSS hash is the flow hash
		{"flows", false, 1, 0},          // dissection + the flow's siphash
		{"triple-isolate", true, 1, 1},  // dissection + the two host siphashes
		{"triple-isolate", false, 1, 2}, // + the flow's siphash
		{"dsthost", false, 1, 1},        // both host hashes, no flow hash
		{"dual-srchost", true, 1, 1},
	} {
		q := newCake(t, c.mode, "besteffort")
		ctx := qdisctest.NewCtx(1)
		p := skb.Packet{Handle: 1, Len: 64, TrueSize: 768, GSOSegs: 1,
			Keys: skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 3, DstPort: 4, Proto: 17}}
		if c.skbHash {
			p.Hash = 12345
		}
		q.Enqueue(ctx, []skb.Packet{p}, make([]qdisc.Code, 1))
		if got, sip := ctx.WorkDone[qdisc.WorkHash], ctx.WorkDone[qdisc.WorkSiphash]; got != c.hash || sip != c.siphash {
			t.Errorf("%s, skb hash %v: %d WorkHash and %d WorkSiphash, want %d and %d", c.mode, c.skbHash, got, sip, c.hash, c.siphash)
		}
	}
}

// The collapse's mechanism at dequeue (Toke, llist thread): once an
// unresponsive flow's overflows have driven BLUE's p to 1, one
// cake_dequeue pulls and drops (CAKE_FLOOD) every packet of the flow it
// serves but the last ("Last packet in queue may be marked, shouldn't be
// dropped"), so a single dequeue's work, under the root lock, grows with
// the flow's backlog: a cake_dequeue_one (and a get_random_u32) per
// packet pulled. With lab-noblue the same state sends one packet for one
// pulled. p stays up while the flow never runs empty (cobalt_queue_empty
// is the only way down).
func TestBlueAtOneDropsTheFlowAtDequeue(t *testing.T) {
	for _, noblue := range []bool{false, true} {
		args := []string{"besteffort", "flows", "memlimit", "64kb"}
		if noblue {
			args = append(args, "lab-noblue")
		}
		q := newCake(t, args...)
		ctx := qdisctest.NewCtx(1)
		ctx.T = sim.Ktime(0)
		flows := []flowSpec{{src: 1, dst: 2, port: 1, size: 100}}
		var next uint64
		// Overflow every 50 us for 1.5 s: p rises 1/256 per 5 ms target.
		for step := 0; step < 30000; step++ {
			feed(q, ctx, flows, 2, &next)
			ctx.T += 50 * sim.Microsecond
		}
		p := q.BlueMax()
		backlog := q.qlen
		clear(ctx.Dropped)
		ctx.WorkDone = [qdisc.NumWork]int{}
		got := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
		floods := 0
		for _, r := range ctx.Dropped {
			if r == skb.DropCakeFlood {
				floods++
			}
		}
		pulled := ctx.WorkDone[qdisc.WorkDequeue]
		switch {
		case noblue && (p != 0 || floods != 0 || len(got) != 1 || pulled != 1):
			t.Errorf("lab-noblue: p %.3f, one dequeue pulled %d, dropped %d, sent %d; want p 0 and one pulled and sent", p, pulled, floods, len(got))
		case !noblue && (p < 0.999 || floods != backlog-1 || len(got) != 1 || pulled != backlog):
			t.Errorf("BLUE: p %.3f, one dequeue of a %d-packet flow pulled %d, dropped %d (CAKE_FLOOD), sent %d; want p at 1 and all but the last dropped",
				p, backlog, pulled, floods, len(got))
		}
	}
}

// In a host-only mode a packet's skb hash does not separate its flows:
// flow_hash stays 0 and the host hash alone picks the queue, so every
// flow of one source shares a queue in srchost (and splits in flows).
func TestHostModesIgnoreSkbHash(t *testing.T) {
	for _, c := range []struct {
		mode   string
		queues int
	}{{"srchost", 1}, {"dsthost", 4}, {"hosts", 4}, {"flows", 4}} {
		q := newCake(t, c.mode, "besteffort")
		ctx := qdisctest.NewCtx(1)
		seen := map[uint16]bool{}
		for i := 0; i < 4; i++ {
			p := skb.Packet{Keys: skb.FlowKeys{Src: 1, Dst: uint32(10 + i), SrcPort: uint16(1000 + i), DstPort: 80, Proto: 17},
				Hash: uint32(0x9e3779b9 * uint32(i+1))}
			seen[q.hash(ctx, q.tins[0], &p, 0, 0)] = true
		}
		if len(seen) != c.queues {
			t.Errorf("%s: 4 flows from one host to 4 hosts take %d queues, want %d", c.mode, len(seen), c.queues)
		}
	}
}

// cake_select_tin: a masked fwmark, then skb->priority with this
// qdisc's major, then the DSCP.
func TestSelectTinMarkAndPriority(t *testing.T) {
	q := &Cake{}
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{Handle: "8001:", MTU: 1514}, []string{"diffserv4", "fwmark", "0xf0"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		mark, priority uint32
		dscp           uint8
		want           int
	}{
		{"DSCP alone", 0, 0, 8, int(q.tinIndex[8])},
		{"mark 0x20: the second tin in order", 0x20, 0, 0, int(q.tinOrder[1])},
		{"mark outside the mask: DSCP", 0x0f, 0, 46, int(q.tinIndex[46])},
		{"mark above the tin count: DSCP", 0x50, 0, 0, int(q.tinIndex[0])},
		{"priority 8001:3", 0, 0x80010003, 0, int(q.tinOrder[2])},
		{"priority of another qdisc's major: DSCP", 0, 0x80020003, 0, int(q.tinIndex[0])},
		{"minor-only priority: DSCP", 0, 3, 0, int(q.tinIndex[0])},
		{"mark before priority", 0x40, 0x80010001, 0, int(q.tinOrder[3])},
	} {
		p := skb.Packet{Mark: c.mark, Priority: c.priority, DSCP: c.dscp}
		if got := q.selectTin(&p); got != c.want {
			t.Errorf("%s: tin %d, want %d", c.name, got, c.want)
		}
	}
}
