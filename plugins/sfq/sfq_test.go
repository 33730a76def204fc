package sfq

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func testSetup() qdisc.Setup {
	return qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000, NumTxQ: 1}
}

func newQ(t testing.TB, args ...string) *SFQ {
	t.Helper()
	q := &SFQ{}
	if _, err := q.Init(qdisctest.NewCtx(0), testSetup(), args); err != nil {
		t.Fatal(err)
	}
	return q
}

type pktGen struct{ h skb.Handle }

// pinned makes a packet classified to bucket b through skb->priority
// (major 1 = our handle), so tests do not depend on the hash key.
func (g *pktGen) pinned(b uint32, size uint32) skb.Packet {
	g.h++
	return skb.Packet{Handle: g.h, Len: size, Priority: 1<<16 | (b + 1), Sock: 1, GSOSegs: 1}
}

// hashed makes a packet of flow f, classified by the keyed hash.
func (g *pktGen) hashed(f int, size uint32) skb.Packet {
	g.h++
	return skb.Packet{Handle: g.h, Len: size, Sock: 1, GSOSegs: 1,
		Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a000100 + uint32(f), SrcPort: uint16(1000 + f), DstPort: 80, Proto: 6}}
}

func enqueue(q qdisc.Qdisc, ctx qdisc.Ctx, ps ...skb.Packet) []qdisc.Code {
	rc := make([]qdisc.Code, len(ps))
	q.Enqueue(ctx, ps, rc)
	return rc
}

func TestConformance(t *testing.T) {
	cases := []struct {
		args  []string
		limit int
	}{
		{nil, 127},
		{[]string{"limit", "50", "depth", "10", "flows", "16", "divisor", "64", "quantum", "600", "headdrop"}, 50},
		{[]string{"limit", "3000", "perturb", "1"}, 3000},
		{[]string{"limit", "2", "flows", "1", "depth", "2"}, 2},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("sfq"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: c.args, Limit: c.limit, Seed: 3}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

func TestDefaultsAndDump(t *testing.T) {
	q := &SFQ{}
	info, err := q.Init(qdisctest.NewCtx(1), testSetup(), nil)
	if err != nil || info.Flags != qdisc.CanBypass|qdisc.HasBlock || info.Limit != 127 {
		t.Fatalf("info %+v err %v", info, err)
	}
	if q.maxflows != 128 || q.maxdepth != 127 || q.divisor != 1024 || q.quantum != 1514 || q.perturbPeriod != 0 || q.headdrop {
		t.Errorf("defaults %+v", q)
	}
	if got, want := q.Dump(), "limit 127p quantum 1514b depth 127 flows 128 divisor 1024"; got != want {
		t.Errorf("dump %q, want %q", got, want)
	}
	q = newQ(t, "limit", "50", "depth", "10", "divisor", "64", "quantum", "2kb", "headdrop", "perturb", "10")
	if got, want := q.Dump(), "limit 50p quantum 2Kb depth 10 headdrop flows 50 divisor 64 perturb 10sec"; got != want {
		t.Errorf("dump %q, want %q", got, want)
	}
	// The `tc -s -d qdisc show` line of CVE-2025-38193's commit message,
	// after `tc qd add dev lo root sfq perturb 2000000` on lo (MTU 64K).
	q = &SFQ{}
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 65536}, []string{"perturb", "2000000"}); err != nil {
		t.Fatal(err)
	}
	if got, want := q.Dump(), "limit 127p quantum 64Kb depth 127 flows 128 divisor 1024 perturb 2000000sec"; got != want {
		t.Errorf("dump %q, want %q", got, want)
	}
	// sfq_change: limit clamped to depth*flows, flows to limit and divisor.
	q = newQ(t, "limit", "1000", "depth", "2", "flows", "4")
	if q.limit != 8 || q.maxflows != 4 {
		t.Errorf("limit %d flows %d, want 8 and 4", q.limit, q.maxflows)
	}
	q = newQ(t, "limit", "5", "divisor", "16")
	if q.limit != 5 || q.maxflows != 5 {
		t.Errorf("limit %d flows %d, want 5 and 5", q.limit, q.maxflows)
	}
	q = newQ(t, "flows", "100000", "depth", "500")
	if q.maxflows != sfqMaxFlows || q.maxdepth != 127 || q.limit != 127 {
		t.Errorf("flows %d depth %d limit %d", q.maxflows, q.maxdepth, q.limit)
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		args  []string
		want  string
		class error
	}{
		{[]string{"limt", "5"}, `unknown option "limt" (known: limit, perturb, quantum, divisor, flows, depth, headdrop, redflowlimit,`, qdisc.ErrParse},
		{[]string{"limit", "1"}, `illegal "limit" 1, must be > 1`, qdisc.ErrParse},
		{[]string{"limit", "0"}, `illegal "limit" 0, must be > 1`, qdisc.ErrParse},
		{[]string{"limit", "2", "flows", "1", "depth", "1"}, "invalid limit: 2 clamps to 1", qdisc.ErrKernel},
		{[]string{"limit"}, `option "limit" needs a value`, qdisc.ErrParse},
		{[]string{"divisor", "1000"}, "divisor 1000 is invalid: a power of 2", qdisc.ErrKernel},
		{[]string{"divisor", "131072"}, "divisor 131072 is invalid", qdisc.ErrKernel},
		{[]string{"quantum", "3gb"}, "invalid quantum 3221225472", qdisc.ErrKernel},
		{[]string{"quantum", "lots"}, `illegal "quantum": "lots" is not a size`, qdisc.ErrParse},
		// The two refusals of CVE-2025-38193's commit message.
		{[]string{"perturb", "-10"}, "invalid perturb period -10", qdisc.ErrKernel},
		{[]string{"perturb", "1000000000"}, "invalid perturb period 1000000000", qdisc.ErrKernel},
		{[]string{"perturb", "10s"}, `illegal "perturb": "10s" is not a whole number`, qdisc.ErrParse},
		{[]string{"depth", "x"}, `illegal "depth": "x" is not an unsigned number`, qdisc.ErrParse},
		// The per-flow RED: tc's checks (sfq_parse_opt) and the kernel's
		// (red_check_params).
		{[]string{"harddrop"}, "Required parameter (redflowlimit) is missing", qdisc.ErrParse},
		{[]string{"redflowlimit", "100000", "max", "200000"}, `"max" is larger than "limit"`, qdisc.ErrParse},
		{[]string{"redflowlimit", "100000", "min", "30000", "max", "30000"}, `"min" is not smaller than "max"`, qdisc.ErrParse},
		{[]string{"redflowlimit", "100000", "probability", "lots"}, `Illegal "probability"`, qdisc.ErrParse},
		{[]string{"redflowlimit", "100000", "min", "10000", "burst", "1"}, "burst 1 is too small ? Try burst 11 (SFQ: failed to calculate EWMA constant.)", qdisc.ErrParse},
		{[]string{"redflowlimit", "4000000000", "min", "1000000000", "max", "3000000000", "avpkt", "1000000", "burst", "2000", "probability", "1"},
			"do not fit the fixed point", qdisc.ErrKernel},
	}
	for _, c := range cases {
		_, err := (&SFQ{}).Init(qdisctest.NewCtx(1), testSetup(), c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.class) {
			t.Errorf("%v: error %v, want %q (%v)", c.args, err, c.want, c.class)
		}
	}
	// tc reads get_u32 with base 0: hex and octal.
	if q := newQ(t, "limit", "0x40", "depth", "010"); q.limit != 64 || q.maxdepth != 8 {
		t.Errorf("limit 0x40 depth 010: %d %d", q.limit, q.maxdepth)
	}
}

// TestChange: sfq's kernel ops have no change, so a change with options
// is refused after tc has parsed them, and the qdisc keeps its packets.
func TestChange(t *testing.T) {
	q := newQ(t, "limit", "100")
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	for i := 0; i < 10; i++ {
		enqueue(q, ctx, g.pinned(uint32(i%3), 100))
	}
	if _, err := q.Change(ctx, []string{"limit", "5"}); !errors.Is(err, qdisc.ErrCannotChange) || !errors.Is(err, qdisc.ErrKernel) {
		t.Fatalf("change limit 5: %v, want the kernel's refusal", err)
	}
	if _, err := q.Change(ctx, []string{"limit", "x"}); !errors.Is(err, qdisc.ErrParse) {
		t.Fatalf("change limit x: %v, want tc's parse error first", err)
	}
	if info, err := q.Change(ctx, nil); err != nil || info.Flags != q.info().Flags || info.Flags&qdisc.HasBlock == 0 || info.Limit != 100 {
		// qdisc_change with nothing to change leaves the qdisc as it
		// was: its flags (its block among them) and limit too.
		t.Fatalf("change without options: %+v, %v", info, err)
	}
	if st := q.Stats(); st.Qlen != 10 || len(ctx.Dropped) != 0 || q.limit != 100 {
		t.Fatalf("after refused changes: qlen %d, %d dropped, limit %d", st.Qlen, len(ctx.Dropped), q.limit)
	}
}

// TestRoundRobinFairness: backlogged slots share bytes equally whatever
// their packet sizes (allot refilled by quantum), and equal flows get
// equal packets.
func TestRoundRobinFairness(t *testing.T) {
	for _, sizes := range [][]uint32{{64, 512, 1500}, {1000, 1000, 1000, 1000}} {
		q := newQ(t, "limit", "1000")
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		sent := map[uint32]int64{} // by bucket
		for round := 0; round < 500; round++ {
			for b, sz := range sizes {
				for q.ht[b] == sfqEmptySlot || q.slots[q.ht[b]].qlen < 20 {
					enqueue(q, ctx, g.pinned(uint32(b), sz))
				}
			}
			for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40}, nil) {
				sent[p.Priority&0xffff-1] += int64(p.Len)
			}
		}
		var total int64
		for _, v := range sent {
			total += v
		}
		for b := range sizes {
			share := float64(sent[uint32(b)]) / float64(total)
			if want := 1 / float64(len(sizes)); math.Abs(share-want) > 0.03 {
				t.Errorf("sizes %v: slot of %d B packets got %.3f of the bytes, want %.3f", sizes, sizes[b], share, want)
			}
		}
		if len(ctx.Dropped) != 0 {
			t.Errorf("%d drops below the limit", len(ctx.Dropped))
		}
	}
}

// TestDepthLimit: a slot holds at most depth packets; beyond that the new
// packet is dropped (tail) or, with headdrop, the slot's oldest packet.
func TestDepthLimit(t *testing.T) {
	for _, headdrop := range []bool{false, true} {
		args := []string{"depth", "5"}
		if headdrop {
			args = append(args, "headdrop")
		}
		q := newQ(t, args...)
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		var hs []skb.Handle
		for i := 0; i < 10; i++ {
			p := g.pinned(7, 100)
			hs = append(hs, p.Handle)
			rc := enqueue(q, ctx, p)[0]
			want := qdisc.XmitSuccess
			if i >= 5 {
				want = qdisc.XmitDrop
				if headdrop {
					want = qdisc.XmitCN
				}
			}
			if rc != want {
				t.Errorf("headdrop=%v packet %d: rc %v, want %v", headdrop, i, rc, want)
			}
		}
		dropped, kept := hs[5:], hs[:5]
		if headdrop {
			dropped, kept = hs[:5], hs[5:]
		}
		for _, h := range dropped {
			if ctx.Dropped[h] != DropQdiscMaxDepth {
				t.Errorf("headdrop=%v: %#x reason %q, want QDISC_MAXDEPTH", headdrop, h, ctx.Dropped[h])
			}
		}
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)
		if len(out) != 5 {
			t.Fatalf("headdrop=%v: %d packets out, want 5", headdrop, len(out))
		}
		for i, p := range out {
			if p.Handle != kept[i] {
				t.Errorf("headdrop=%v: out[%d] %#x, want %#x", headdrop, i, p.Handle, kept[i])
			}
		}
		if st := q.Stats(); st.Drops != 5 || st.Qlen != 0 || st.Backlog != 0 {
			t.Errorf("headdrop=%v: stats %+v", headdrop, st)
		}
	}
}

// TestOverflowDropsLongestSlot: above limit, sfq_drop takes the tail (or
// with headdrop the head) of the longest slot, found through dep[].
func TestOverflowDropsLongestSlot(t *testing.T) {
	for _, headdrop := range []bool{false, true} {
		args := []string{"limit", "10"}
		if headdrop {
			args = append(args, "headdrop")
		}
		q := newQ(t, args...)
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		var long []skb.Handle
		for i := 0; i < 6; i++ {
			p := g.pinned(1, 100)
			long = append(long, p.Handle)
			enqueue(q, ctx, p)
		}
		for i := 0; i < 4; i++ {
			enqueue(q, ctx, g.pinned(2, 100))
		}
		if q.curDepth != 6 {
			t.Fatalf("cur_depth %d, want 6", q.curDepth)
		}
		if rc := enqueue(q, ctx, g.pinned(3, 100))[0]; rc != qdisc.XmitSuccess {
			t.Errorf("headdrop=%v: rc %v for a flow that was not the victim", headdrop, rc)
		}
		victim := long[5]
		if headdrop {
			victim = long[0]
		}
		if len(ctx.Dropped) != 1 || ctx.Dropped[victim] != skb.DropQdiscOverlimit {
			t.Errorf("headdrop=%v: dropped %v, want %#x as QDISC_OVERLIMIT", headdrop, ctx.Dropped, victim)
		}
		if q.curDepth != 5 || q.Stats().Qlen != 10 {
			t.Errorf("cur_depth %d qlen %d", q.curDepth, q.Stats().Qlen)
		}
		// Our own slot the longest: tail drop takes this packet, head
		// drop our oldest; sfq_enqueue returns NET_XMIT_CN for both.
		enqueue(q, ctx, g.pinned(1, 100))
		p := g.pinned(1, 100)
		rc := enqueue(q, ctx, p)[0]
		if !headdrop && (rc != qdisc.XmitCN || ctx.Dropped[p.Handle] != skb.DropQdiscOverlimit) {
			t.Errorf("tail drop of own packet: rc %v reason %q", rc, ctx.Dropped[p.Handle])
		}
		if headdrop && rc != qdisc.XmitCN {
			t.Errorf("head drop from own slot: rc %v, want NET_XMIT_CN", rc)
		}
	}
	// Every slot of depth 1: only reachable with the defaults (limit 127 <
	// 128 slots; an explicit limit also caps the slots). The slot after
	// q->tail (the next in the round) is dropped and unlinked.
	q := newQ(t)
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	var first skb.Packet
	for b := uint32(0); b < 128; b++ {
		p := g.pinned(b, 100)
		if b == 0 {
			first = p
		}
		if rc := enqueue(q, ctx, p)[0]; rc != qdisc.XmitSuccess {
			t.Fatalf("bucket %d: rc %v", b, rc)
		}
	}
	if len(ctx.Dropped) != 1 || ctx.Dropped[first.Handle] != skb.DropQdiscOverlimit || q.ht[0] != sfqEmptySlot {
		t.Errorf("depth-1 overflow: dropped %v, want the first slot's packet", ctx.Dropped)
	}
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 200, Bytes: 1 << 40}, nil)
	if len(out) != 127 || out[0].Priority&0xffff != 2 {
		t.Errorf("after depth-1 drop: %d out, first bucket %d", len(out), out[0].Priority&0xffff-1)
	}
}

// TestNoFreeSlot: a new flow with all maxflows slots busy is dropped.
func TestNoFreeSlot(t *testing.T) {
	q := newQ(t, "flows", "2")
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	enqueue(q, ctx, g.pinned(1, 100), g.pinned(2, 100))
	p := g.pinned(3, 100)
	if rc := enqueue(q, ctx, p)[0]; rc != qdisc.XmitDrop || ctx.Dropped[p.Handle] != DropQdiscMaxFlows {
		t.Errorf("rc %v reason %q, want NET_XMIT_DROP QDISC_MAXFLOWS", rc, ctx.Dropped[p.Handle])
	}
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil) // frees slot of bucket 1
	if rc := enqueue(q, ctx, g.pinned(3, 100))[0]; rc != qdisc.XmitSuccess {
		t.Errorf("rc %v after a slot was freed", rc)
	}
}

// TestPerturbationRehash: every perturb seconds the perturbation timer
// (sfq_perturbation) changes the key and moves the held packets to their
// new slots (sfq_rehash): no packet is lost or duplicated, each flow
// keeps its order, and the flows land elsewhere.
func TestPerturbationRehash(t *testing.T) {
	const flows = 40
	// sfq_change arms the timer a period after tc (t=0), and nothing
	// re-keys before it fires.
	q := &SFQ{}
	ictx := qdisctest.NewCtx(0)
	if _, err := q.Init(ictx, testSetup(), []string{"perturb", "2"}); err != nil {
		t.Fatal(err)
	}
	if !ictx.TimerArmed || ictx.TimerAt != 2*sim.Second {
		t.Fatalf("perturb 2: timer armed %v at %d, want at 2s", ictx.TimerArmed, ictx.TimerAt)
	}
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	enqueue(q, ctx, g.hashed(1, 100))
	keyBefore := q.perturbation
	ctx.T = 3 * sim.Second
	q.Peek(ctx)
	if q.perturbation != keyBefore {
		t.Fatal("re-keyed by a call, not by the timer")
	}

	q = newQ(t, "perturb", "2", "limit", "2000")
	ctx = qdisctest.NewCtx(1)
	g = &pktGen{}
	perFlow := map[int][]skb.Handle{}
	bucketsBefore := map[int]uint32{}
	for i := 0; i < 10; i++ {
		for f := 0; f < flows; f++ {
			p := g.hashed(f, uint32(100+f))
			perFlow[f] = append(perFlow[f], p.Handle)
			enqueue(q, ctx, p)
			bucketsBefore[f] = q.sfqHash(&p)
		}
	}
	held := q.Stats()
	keyBefore = q.perturbation
	ctx.T = 2 * sim.Second
	q.Timer(ctx) // the perturbation timer fires
	if q.perturbation == keyBefore {
		t.Fatal("no re-key when the timer fired")
	}
	if !ctx.TimerArmed || ctx.TimerAt != 4*sim.Second {
		t.Errorf("timer re-armed %v at %d, want at 4s", ctx.TimerArmed, ctx.TimerAt)
	}
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
	moved := 0
	for f := 0; f < flows; f++ {
		p := g.hashed(f, 100)
		if q.sfqHash(&p) != bucketsBefore[f] {
			moved++
		}
	}
	if moved < flows/2 {
		t.Errorf("only %d of %d flows changed bucket", moved, flows)
	}
	if len(ctx.Dropped) != 0 {
		t.Fatalf("rehash dropped %d packets with room for all", len(ctx.Dropped))
	}
	if st := q.Stats(); st.Qlen != held.Qlen-1 || st.Backlog != held.Backlog-int64(out[0].Len) {
		t.Errorf("after rehash qlen %d backlog %d, before %d %d", st.Qlen, st.Backlog, held.Qlen, held.Backlog)
	}
	// Each flow sits in exactly one slot, in order.
	for f := 0; f < flows; f++ {
		p := g.hashed(f, 100)
		x := q.ht[q.sfqHash(&p)]
		if x == sfqEmptySlot {
			t.Fatalf("flow %d has no slot after rehash", f)
		}
	}
	out = append(out, q.Dequeue(ctx, qdisc.DequeueReq{Max: 10000, Bytes: 1 << 40}, nil)...)
	seen := map[skb.Handle]bool{}
	next := map[int]int{}
	for _, p := range out {
		if seen[p.Handle] {
			t.Fatalf("%#x dequeued twice", p.Handle)
		}
		seen[p.Handle] = true
		f := int(p.Keys.Dst - 0x0a000100)
		if perFlow[f][next[f]] != p.Handle {
			t.Fatalf("flow %d out of order after rehash", f)
		}
		next[f]++
	}
	if len(seen) != flows*10 {
		t.Errorf("%d packets out, want %d", len(seen), flows*10)
	}
}

// TestRehashOverflow: when the new key crowds flows together past depth,
// or past the free slots, the rehash frees the excess (NOT_SPECIFIED)
// without counting qdisc drops, and the accounting stays exact.
func TestRehashOverflow(t *testing.T) {
	q := newQ(t, "perturb", "1", "divisor", "8", "flows", "8", "depth", "4", "limit", "32")
	ctx := qdisctest.NewCtx(5)
	g := &pktGen{}
	in := map[skb.Handle]uint32{}
	var offered int
	for round := 0; round < 10; round++ {
		for f := 0; f < 12; f++ {
			p := g.hashed(f, 100+uint32(f))
			offered++
			in[p.Handle] = p.Len
			enqueue(q, ctx, p)
		}
		ctx.T += 1100 * sim.Millisecond
		q.Timer(ctx) // a perturbation between rounds
	}
	var out []skb.Packet
	for {
		o := q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)
		if len(o) == 0 {
			break
		}
		out = append(out, o...)
	}
	rehashDrops := 0
	for h, r := range ctx.Dropped {
		if _, ok := in[h]; !ok {
			t.Fatalf("dropped %#x never offered", h)
		}
		if r == DropNotSpecified {
			rehashDrops++
		}
	}
	for _, p := range out {
		if _, dropped := ctx.Dropped[p.Handle]; dropped {
			t.Fatalf("%#x both dropped and sent", p.Handle)
		}
	}
	if len(out)+len(ctx.Dropped) != offered {
		t.Fatalf("offered %d, sent %d + dropped %d", offered, len(out), len(ctx.Dropped))
	}
	if rehashDrops == 0 {
		t.Error("no rehash drops: the test does not reach the path")
	}
	if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 || int(st.Drops) != len(ctx.Dropped)-rehashDrops {
		t.Errorf("stats %+v, drops counted should exclude %d rehash frees", st, rehashDrops)
	}
}

// TestPerturbationWithFilters: with filters attached (q->filter_list)
// the perturbation timer changes the key but leaves the held packets in
// their slots: the filters, not the hash, put them there.
func TestPerturbationWithFilters(t *testing.T) {
	q := newQ(t, "perturb", "1")
	ctx := qdisctest.NewCtx(1)
	s, err := cls.Load([]string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:5"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSeed(ctx.Seed)
	ctx.Filters = s
	g := &pktGen{}
	enqueue(q, ctx, g.hashed(1, 100), g.hashed(2, 100))
	key, x := q.perturbation, q.ht[4]
	if x == sfqEmptySlot || q.slots[x].qlen != 2 {
		t.Fatal("the filter did not put both packets in bucket 4")
	}
	ctx.T = sim.Second
	q.Timer(ctx)
	if q.perturbation == key {
		t.Error("no new key")
	}
	if q.ht[4] != x || q.slots[x].qlen != 2 {
		t.Error("the held packets were rehashed with filters attached")
	}
}

// TestHashSymmetricAndKeyed: both directions of a flow hash alike; a
// different key spreads flows differently.
func TestHashSymmetricAndKeyed(t *testing.T) {
	q := newQ(t)
	a := skb.Packet{Keys: skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 10, DstPort: 20, Proto: 6}}
	b := skb.Packet{Keys: skb.FlowKeys{Src: 2, Dst: 1, SrcPort: 20, DstPort: 10, Proto: 6}}
	if q.sfqHash(&a) != q.sfqHash(&b) {
		t.Error("reverse direction hashed differently")
	}
	q2 := &SFQ{}
	q2.Init(qdisctest.NewCtx(99), testSetup(), nil)
	same := 0
	for f := 0; f < 100; f++ {
		p := (&pktGen{}).hashed(f, 100)
		if q.sfqHash(&p) == q2.sfqHash(&p) {
			same++
		}
	}
	if same > 5 {
		t.Errorf("%d of 100 flows in the same bucket under two keys", same)
	}
}

func FuzzOptions(f *testing.F) {
	f.Add("limit 50 depth 10 flows 16 divisor 64 quantum 600 headdrop perturb 1")
	f.Add("limit 2 flows 1")
	f.Add("divisor 1 flows 1 limit 3")
	f.Add("quantum 0 depth 0")
	f.Add("redflowlimit 100000 min 8000 max 60000 probability 0.20 ecn headdrop")
	f.Fuzz(func(t *testing.T, args string) {
		q := &SFQ{}
		if _, err := q.Init(qdisctest.NewCtx(1), testSetup(), strings.Fields(args)); err != nil {
			return
		}
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		for i := 0; i < 60; i++ {
			enqueue(q, ctx, g.hashed(i%9, uint32(60+i*23)))
			ctx.T += 100 * sim.Millisecond
		}
		q.Dump()
		q.Peek(ctx)
		q.Dequeue(ctx, qdisc.DequeueReq{Max: 16, Bytes: 1 << 40}, nil)
		q.Reset(ctx)
		if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 {
			t.Fatalf("after reset %+v", st)
		}
	})
}

// BenchmarkEnqueueDequeue: packets per second through the qdisc alone,
// 64 flows, batches of 32 in, bulks of 32 out.
func BenchmarkEnqueueDequeue(b *testing.B) {
	q := newQ(b)
	ctx := qdisctest.NewCtx(1)
	batch := make([]skb.Packet, 32)
	rc := make([]qdisc.Code, 32)
	out := make([]skb.Packet, 0, 32)
	g := &pktGen{}
	b.ResetTimer()
	start := time.Now()
	pkts := 0
	for i := 0; i < b.N; i++ {
		for j := range batch {
			batch[j] = g.hashed(int(g.h%64), 1000)
		}
		q.Enqueue(ctx, batch, rc)
		out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 32, Bytes: 1 << 40}, out[:0])
		pkts += len(out)
	}
	b.ReportMetric(float64(pkts)/time.Since(start).Seconds(), "pkts/s")
}

// TestFilters: sfq_classify with filters attached. Their result's minor
// is the bucket (1-based, up to the divisor): two flows steered into one
// bucket share its slot; a minor of 0 or past the divisor, a drop
// action or no filter matching drops the packet, counted in the qdisc's
// drops, and the sender sees NET_XMIT_SUCCESS. skb->priority naming a
// bucket still comes first; with no filter at 1: the hash decides.
func TestFilters(t *testing.T) {
	g := &pktGen{}
	a, b := g.hashed(1, 500), g.hashed(2, 500)
	b.Keys.Dst = a.Keys.Dst // another flow to the same host
	prio := g.pinned(40, 500)
	tests := []struct {
		name    string
		args    []string
		specs   []string
		pkts    []skb.Packet
		buckets map[uint32]int // bucket -> packets in its slot
		dropped int
	}{
		{"flow hash dst: one host, one bucket", nil, []string{"parent 1: protocol all pref 1 handle 0x1 flow hash keys dst divisor 1024"},
			[]skb.Packet{a, b}, nil, 0},
		{"matchall: both in bucket 5", nil, []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:5"},
			[]skb.Packet{a, b}, map[uint32]int{4: 2}, 0},
		{"the divisor bounds the minor", []string{"divisor", "64"}, []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:65"},
			[]skb.Packet{a, b}, nil, 2},
		{"minor 64 of 64", []string{"divisor", "64"}, []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:40"},
			[]skb.Packet{a}, map[uint32]int{63: 1}, 0},
		{"no filter matching drops", nil, []string{"parent 1: protocol ip pref 1 u32 match ip dport 443 0xffff flowid 1:3"},
			[]skb.Packet{a, b}, nil, 2},
		{"a drop action", nil, []string{"parent 1: protocol all pref 1 handle 0x1 matchall action drop"},
			[]skb.Packet{a}, nil, 1},
		{"skb->priority first", nil, []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:5"},
			[]skb.Packet{prio, a}, map[uint32]int{40: 1, 4: 1}, 0},
	}
	for _, tt := range tests {
		q := newQ(t, tt.args...)
		ctx := qdisctest.NewCtx(1)
		s, err := cls.Load(tt.specs)
		if err != nil {
			t.Fatal(err)
		}
		s.SetSeed(ctx.Seed)
		ctx.Filters = s
		for i, c := range enqueue(q, ctx, tt.pkts...) {
			if want := qdisctest.BypassIfDropped(ctx, tt.pkts[i]); c != want {
				t.Errorf("%s: packet %d got %v, want %v", tt.name, i, c, want)
			}
		}
		held := map[uint32]int{}
		for bkt, x := range q.ht {
			if x != sfqEmptySlot {
				held[uint32(bkt)] = int(q.slots[x].qlen)
			}
		}
		if tt.buckets == nil && tt.dropped == 0 {
			// Where the hash puts it: one bucket for both.
			if len(held) != 1 {
				t.Errorf("%s: buckets %v, want one holding both", tt.name, held)
			}
		} else if len(held) != len(tt.buckets) {
			t.Errorf("%s: buckets %v, want %v", tt.name, held, tt.buckets)
		}
		for bkt, n := range tt.buckets {
			if held[bkt] != n {
				t.Errorf("%s: buckets %v, want %v", tt.name, held, tt.buckets)
			}
		}
		if err := ctx.CheckDrops(q.Stats(), q.qlen, len(tt.pkts), tt.dropped, skb.DropQdiscDrop); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// sfq's per-flow RED (sfq_enqueue with redflowlimit): one flow's
// standing backlog, 120 packets of 1400 bytes (below the depth limit),
// takes RED's probabilistic and then its forced actions on the flow's
// own average. With ecn an ECN-capable packet is marked instead of
// dropped (with headdrop the mark goes on the flow's head), a not-ECT
// one is dropped; without ecn every action drops (QDISC_MAXDEPTH, the
// congestion_drop sfq's depth limit shares). Every action counts an
// overlimit.
func TestRED(t *testing.T) {
	for _, c := range []struct {
		name, args       string
		ecn              uint8
		marks, headMarks bool // CE on arriving packets, on the head
	}{
		{"ecn", "ecn", 2, true, false},
		{"ecn headdrop", "ecn headdrop", 2, false, true},
		{"ecn, not-ECT packets", "ecn", 0, false, false},
		{"no ecn", "", 2, false, false},
		{"ecn harddrop", "ecn harddrop", 2, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newQ(t, append(strings.Fields("redflowlimit 200000 min 8000 max 60000 probability 0.20"), strings.Fields(c.args)...)...)
			ctx := qdisctest.NewCtx(1)
			ctx.Reasons = []skb.DropReason{DropQdiscMaxFlows, DropQdiscMaxDepth}
			for i := range 120 {
				p := skb.Packet{Handle: skb.Handle(i + 1), Len: 1400, TrueSize: 2048, Hash: 7, GSOSegs: 1, ECN: c.ecn,
					Keys: skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1, DstPort: 80, Proto: 6}}
				enqueue(q, ctx, p)
			}
			ce := 0
			for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 200, Bytes: 1 << 30}, nil) {
				if p.ECN == 3 {
					ce++
				}
			}
			r := q.stats
			marks, drops := r.probMark+r.forcedMark, r.probDrop+r.forcedDrop
			headMarks := r.probMarkHead + r.forcedMarkHead
			for h, why := range ctx.Dropped {
				if why != DropQdiscMaxDepth {
					t.Fatalf("packet %d dropped for %s", h, why)
				}
			}
			st := q.Stats()
			t.Logf("prob %d/%d/%d forced %d/%d/%d (mark/head/drop), %d CE out, %d dropped", r.probMark, r.probMarkHead, r.probDrop,
				r.forcedMark, r.forcedMarkHead, r.forcedDrop, ce, len(ctx.Dropped))
			if r.probMark+r.probMarkHead+r.probDrop == 0 || st.Overlimits != uint64(marks+drops+headMarks) || int(drops) != len(ctx.Dropped) {
				t.Errorf("overlimits %d for %d marks, %d head marks, %d drops (%d freed)", st.Overlimits, marks, headMarks, drops, len(ctx.Dropped))
			}
			if (marks > 0) != c.marks || (headMarks > 0) != c.headMarks || (drops > 0) == (c.marks || c.headMarks) && c.args != "ecn harddrop" {
				t.Errorf("marks %d, head marks %d, drops %d", marks, headMarks, drops)
			}
			if c.args == "ecn harddrop" && (r.forcedDrop == 0 || r.forcedMark != 0) {
				t.Errorf("harddrop: forced marks %d, forced drops %d: above max it drops", r.forcedMark, r.forcedDrop)
			}
			if ce != int(marks+headMarks) && !(c.headMarks && ce > 0) {
				t.Errorf("%d CE packets out for %d marks", ce, marks+headMarks)
			}
		})
	}
}
