package fqcodel

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
	"github.com/txlab/txlab/plugins/codel"
)

var setup = qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000, NumTxQ: 1}

func newQ(t testing.TB, args ...string) *FQCodel {
	t.Helper()
	q := &FQCodel{}
	if _, err := q.Init(qdisctest.NewCtx(1), setup, args); err != nil {
		t.Fatal(err)
	}
	return q
}

// hashFor returns a hash that reciprocal_scale maps to bucket b of n.
func hashFor(b, n uint32) uint32 { return uint32((uint64(b)<<32 + uint64(1)<<31) / uint64(n)) }

type pktGen struct{ h skb.Handle }

func (g *pktGen) pkt(bucket, flows, size uint32) skb.Packet {
	g.h++
	return skb.Packet{Handle: g.h, Len: size, TrueSize: 2048, Hash: hashFor(bucket, flows), Sock: 1, GSOSegs: 1}
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
		{nil, 10240},
		{[]string{"limit", "100", "flows", "16", "quantum", "300", "target", "1ms", "interval", "10ms",
			"noecn", "drop_batch", "8"}, 100},
		{[]string{"limit", "500", "flows", "1", "memory_limit", "64kb", "ce_threshold", "500us"}, 500},
		{[]string{"limit", "1", "drop_batch", "1"}, 1},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New("fq_codel"); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: c.args, Limit: c.limit, Seed: 7}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

func TestDefaultsAndDump(t *testing.T) {
	q := newQ(t)
	info, _ := (&FQCodel{}).Init(qdisctest.NewCtx(1), setup, nil)
	if info.Flags != qdisc.CanBypass|qdisc.DequeueDrops|qdisc.HasBlock || info.Limit != 10240 {
		t.Errorf("info %+v", info)
	}
	want := "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"
	if got := q.Dump(); got != want {
		t.Errorf("dump\n got %q\nwant %q", got, want)
	}
	q = newQ(t, "limit", "2000", "flows", "64", "quantum", "100", "target", "2ms", "interval", "1s",
		"ce_threshold", "300us", "memory_limit", "4Mb", "noecn", "drop_batch", "0")
	want = "limit 2000p flows 64 quantum 256 target 2ms ce_threshold 299us interval 1e+03ms memory_limit 4Mb drop_batch 64"
	if got := q.Dump(); got != want {
		t.Errorf("dump\n got %q\nwant %q", got, want)
	}
	// The selector goes with the threshold; tc prints it as "%#x/%#x".
	for _, c := range []struct{ args, want string }{
		{"ce_threshold 1ms ce_threshold_selector 0x1/0x3", "ce_threshold 999us ce_threshold_selector 0x1/0x3 interval"},
		{"ce_threshold 1ms ce_threshold_selector 0/252", "ce_threshold 999us ce_threshold_selector 0/0xfc interval"},
		{"ce_threshold 1ms ce_threshold_selector 0/0", "ce_threshold 999us interval"},
		{"ce_threshold_selector 0x1/0x3", "target 5ms interval"},
	} {
		if got := newQ(t, strings.Fields(c.args)...).Dump(); !strings.Contains(got, c.want) {
			t.Errorf("%s: dump %q, want %q in it", c.args, got, c.want)
		}
	}
	keys := []string{}
	for _, kv := range q.Stats().XStats {
		keys = append(keys, kv.Key)
	}
	if got := strings.Join(keys, " "); got != "maxpacket drop_overlimit new_flow_count ecn_mark ce_mark memory_used drop_overmemory new_flows_len old_flows_len codel_dropping" {
		t.Errorf("xstats order %s", got)
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		args  []string
		want  string
		class error
	}{
		{[]string{"limt", "5"}, `unknown option "limt" (known: limit, flows, quantum, drop_batch, target, ce_threshold, ce_threshold_selector, memory_limit, interval, ecn, noecn)`, qdisc.ErrParse},
		{[]string{"limit"}, `option "limit" needs a value`, qdisc.ErrParse},
		{[]string{"limit", "many"}, `illegal "limit": "many" is not an unsigned number`, qdisc.ErrParse},
		{[]string{"limit", "100p"}, `illegal "limit": "100p" is not an unsigned number`, qdisc.ErrParse}, // get_unsigned takes no unit
		{[]string{"flows", "70000"}, "flows 70000 is out of range [1, 65536]", qdisc.ErrKernel},
		{[]string{"quantum", "2000000"}, "Invalid quantum", qdisc.ErrKernel},
		{[]string{"target", "5xs"}, `illegal "target": "5xs" is not a time: unknown unit "xs"`, qdisc.ErrParse},
		{[]string{"interval", "-3ms"}, `illegal "interval": "-3ms" is not a time: it is negative`, qdisc.ErrParse},
		{[]string{"memory_limit", "lots"}, `illegal "memory_limit": "lots" is not a size`, qdisc.ErrParse},
		{[]string{"memory_limit", "8Gb"}, `illegal "memory_limit": "8Gb" is out of range`, qdisc.ErrParse},
		{[]string{"drop_batch", "-1"}, `illegal "drop_batch": "-1" is out of range`, qdisc.ErrParse},
		{[]string{"ce_threshold"}, `option "ce_threshold" needs a value`, qdisc.ErrParse},
		{[]string{"ce_threshold_selector", "0x1"}, `Missing mask for "ce_threshold_selector"`, qdisc.ErrParse},
		{[]string{"ce_threshold_selector", "0x1/0x100"}, `Illegal mask for "ce_threshold_selector"`, qdisc.ErrParse},
		{[]string{"ce_threshold_selector", "0x1/"}, `Illegal mask for "ce_threshold_selector"`, qdisc.ErrParse},
		{[]string{"ce_threshold_selector", "one/3"}, `Illegal "ce_threshold_selector"`, qdisc.ErrParse},
		{[]string{"ce_threshold_selector", "-1/3"}, `Illegal "ce_threshold_selector"`, qdisc.ErrParse},
		{[]string{"ce_threshold_selector"}, `option "ce_threshold_selector" needs a value`, qdisc.ErrParse},
	}
	for _, c := range cases {
		_, err := (&FQCodel{}).Init(qdisctest.NewCtx(1), setup, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.class) {
			t.Errorf("%v: error %v, want %q (%v)", c.args, err, c.want, c.class)
		}
	}
	// Accepted spellings.
	for _, args := range [][]string{{"target", "500us"}, {"target", "5000"}, {"interval", "1s"}, {"interval", "0.1sec"},
		{"memory_limit", "32Mb"}, {"memory_limit", "512k"}, {"memory_limit", "1000000"}, {"limit", "0x100"}} {
		if _, err := (&FQCodel{}).Init(qdisctest.NewCtx(1), setup, args); err != nil {
			t.Errorf("%v rejected: %v", args, err)
		}
	}
	q := newQ(t, "target", "500us", "memory_limit", "512k")
	if q.cparams.Target != codel.US2Time(500) || q.memoryLimit != 512*1024 {
		t.Errorf("target %d memory_limit %d", q.cparams.Target, q.memoryLimit)
	}
}

// TestDRRShares: three always-backlogged flows with 64, 512 and 1500 byte
// packets get equal byte shares (deficit round robin), not equal packets.
func TestDRRShares(t *testing.T) {
	q := newQ(t, "limit", "100000")
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	sizes := []uint32{64, 512, 1500}
	sent := map[uint32]int64{}
	for round := 0; round < 200; round++ {
		for i, sz := range sizes {
			for q.flows[fqCodelHash(hashFor(uint32(10+i), 1024), 1024)].q.Len() < 40 {
				enqueue(q, ctx, g.pkt(uint32(10+i), 1024, sz))
			}
		}
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 16, Bytes: 1 << 40}, nil) {
			sent[p.Len] += int64(p.Len)
		}
	}
	var total int64
	for _, b := range sent {
		total += b
	}
	for _, sz := range sizes {
		share := float64(sent[sz]) / float64(total)
		if math.Abs(share-1.0/3) > 0.03 {
			t.Errorf("flow of %d B packets got %.3f of the bytes, want 1/3 within 3%%", sz, share)
		}
	}
	if len(ctx.Dropped) != 0 {
		t.Errorf("%d drops with no delay", len(ctx.Dropped))
	}
}

// TestNewFlowsFirst: a sparse flow arriving while a bulk flow is backlogged
// is served before the bulk flow's next packet (it joins new_flows).
func TestNewFlowsFirst(t *testing.T) {
	q := newQ(t)
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	for i := 0; i < 20; i++ {
		enqueue(q, ctx, g.pkt(1, 1024, 1500))
	}
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 2, Bytes: 1 << 40}, nil) // bulk flow moves to old_flows
	sparse := g.pkt(2, 1024, 100)
	enqueue(q, ctx, sparse)
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil); len(out) != 1 || out[0].Handle != sparse.Handle {
		t.Fatalf("sparse flow not served first: %+v", out)
	}
	if qdisctest.XStat(q, "new_flow_count") != 2 {
		t.Errorf("new_flow_count %d", qdisctest.XStat(q, "new_flow_count"))
	}
}

// codelRun holds one flow of 1000 B packets enqueued at t=0 and dequeues
// one per millisecond, so the sojourn time equals the clock. It returns
// the time of the first CoDel action (drop or mark) and the counts.
func codelRun(t *testing.T, ecnPkt uint8, args ...string) (acts []sim.Time, drops int, marks int64, q *FQCodel) {
	q = newQ(t, args...)
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	for i := 0; i < 3000; i++ {
		p := g.pkt(5, 1024, 1000)
		p.ECN = ecnPkt
		enqueue(q, ctx, p)
	}
	signals := 0
	for ms := 1; ms <= 300; ms++ {
		ctx.T = sim.Time(ms) * sim.Millisecond
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
		if len(out) != 1 {
			t.Fatalf("queue ran dry at %d ms", ms)
		}
		if n := len(ctx.Dropped) + int(qdisctest.XStat(q, "ecn_mark")); n > signals {
			signals = n
			acts = append(acts, ctx.T)
		}
		if len(acts) == 0 && qdisctest.XStat(q, "codel_dropping") != 0 {
			t.Fatalf("codel_dropping %d at %d ms, before CoDel's first signal", qdisctest.XStat(q, "codel_dropping"), ms)
		}
		if out[0].ECN == 3 && ecnPkt != 3 && qdisctest.XStat(q, "ecn_mark") == 0 {
			t.Fatal("CE without an ecn_mark")
		}
	}
	// The one flow is still far above target: in the dropping state.
	if got := qdisctest.XStat(q, "codel_dropping"); got != 1 {
		t.Errorf("codel_dropping %d after 300 ms above target, want 1", got)
	}
	for _, r := range ctx.Dropped {
		if r != skb.DropQdiscCongested {
			t.Fatalf("codel drop with reason %s", r)
		}
	}
	return acts, len(ctx.Dropped), qdisctest.XStat(q, "ecn_mark"), q
}

// TestCoDelStartsAfterInterval: nothing happens until the sojourn time has
// been above target (5 ms) for a whole interval (100 ms); then ECT
// packets are marked and not-ECT packets dropped, and with noecn even ECT
// packets are dropped.
func TestCoDelStartsAfterInterval(t *testing.T) {
	// The sojourn reaches target (4882 ticks of 1024 ns) at the 5 ms
	// dequeue, so first_above_time = 4882 + 97656 = 102538 ticks; the
	// first dequeue strictly after it is at 105 ms (102539 ticks). The
	// next signal is one interval later (count 1): 102539 + 97654 ticks
	// is 204.997 ms, so the 205 ms dequeue; then, count 2, half an
	// interval (the first Newton step from 1.0 gives 0.5, not 0.707):
	// 255 ms. Whether the tick truncations land a signal on the exact
	// millisecond depends on the values: with target 20 ms the sojourn
	// reaches 19531 ticks at 20 ms and first_above_time is 117187, which
	// is also the 120 ms tick, so strict codel_time_after waits for 121.
	cases := []struct {
		name      string
		ecn       uint8
		args      []string
		wantDrops bool
		wantMarks bool
		actsMs    []sim.Time
	}{
		{"not-ECT dropped", 0, nil, true, false, []sim.Time{105, 205, 255}},
		{"ECT(0) marked", 2, nil, false, true, []sim.Time{105, 205, 255}},
		{"ECT(1) marked", 1, nil, false, true, []sim.Time{105, 205, 255}},
		{"noecn drops ECT", 2, []string{"noecn"}, true, false, []sim.Time{105, 205, 255}},
		{"target 20ms", 0, []string{"target", "20ms"}, true, false, []sim.Time{121, 221, 271}},
		{"interval 50ms", 0, []string{"interval", "50ms"}, true, false, []sim.Time{56, 106, 131}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acts, drops, marks, q := codelRun(t, c.ecn, c.args...)
			if len(acts) < len(c.actsMs) {
				t.Fatalf("signals at %v, want at %v ms", acts, c.actsMs)
			}
			for i, ms := range c.actsMs {
				if acts[i] != ms*sim.Millisecond {
					t.Errorf("signal %d at %v, want %d ms", i+1, time.Duration(acts[i]), ms)
				}
			}
			if (drops > 0) != c.wantDrops || (marks > 0) != c.wantMarks {
				t.Errorf("drops %d marks %d", drops, marks)
			}
			if int(q.Stats().Drops) != drops {
				t.Errorf("Stats.Drops %d, dropped %d", q.Stats().Drops, drops)
			}
		})
	}
}

// TestCoDelUsesQdiscBacklog: with the whole qdisc at most one MTU, CoDel
// never drops however old the packet (codel_should_drop is given the
// qdisc-wide backlog).
func TestCoDelUsesQdiscBacklog(t *testing.T) {
	q := newQ(t)
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	for ms := 0; ms < 1000; ms++ {
		ctx.T = sim.Time(ms) * sim.Millisecond
		enqueue(q, ctx, g.pkt(3, 1024, 700))
		if ms%2 == 1 {
			ctx.T += 200 * sim.Millisecond // old by the time it leaves
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 2, Bytes: 1 << 40}, nil)
			ctx.T -= 200 * sim.Millisecond
		}
	}
	if len(ctx.Dropped) != 0 {
		t.Fatalf("%d drops with a backlog below one MTU", len(ctx.Dropped))
	}
}

// TestOverlimitDropsFattestFlow: on overflow fq_codel drops from the head of
// the flow with the largest backlog, half of it or drop_batch packets.
func TestOverlimitDropsFattestFlow(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		wantDrops int
	}{
		{"half the fat flow", []string{"limit", "100"}, 45}, // 90000 B -> until >= 45000 B
		{"drop_batch caps it", []string{"limit", "100", "drop_batch", "8"}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newQ(t, c.args...)
			ctx := qdisctest.NewCtx(1)
			g := &pktGen{}
			var fat []skb.Handle
			for i := 0; i < 90; i++ {
				p := g.pkt(100, 1024, 1000)
				fat = append(fat, p.Handle)
				enqueue(q, ctx, p)
			}
			for i := 0; i < 10; i++ {
				enqueue(q, ctx, g.pkt(200, 1024, 1000))
			}
			scans := ctx.WorkDone[qdisc.WorkFlowScan]
			if rc := enqueue(q, ctx, g.pkt(200, 1024, 1000)); rc[0] != qdisc.XmitSuccess {
				t.Errorf("rc %v for a packet of a flow that was not the victim", rc[0])
			}
			if len(ctx.Dropped) != c.wantDrops {
				t.Fatalf("dropped %d, want %d", len(ctx.Dropped), c.wantDrops)
			}
			for i, h := range fat[:c.wantDrops] { // from the head, in order
				if ctx.Dropped[h] != skb.DropQdiscOverlimit {
					t.Fatalf("fat flow packet %d not dropped as QDISC_OVERLIMIT: %q", i, ctx.Dropped[h])
				}
			}
			fi := fqCodelHash(hashFor(100, 1024), 1024)
			if q.flows[fi].cvars.Count != uint32(c.wantDrops) {
				t.Errorf("victim's codel count %d, want %d", q.flows[fi].cvars.Count, c.wantDrops)
			}
			if ctx.WorkDone[qdisc.WorkFlowScan]-scans != 64 { // 1024 u32 backlogs, 16 a line
				t.Errorf("flow scan work %d, want 64", ctx.WorkDone[qdisc.WorkFlowScan]-scans)
			}
			st := q.Stats()
			if st.Qlen != 101-c.wantDrops || st.Drops != uint64(c.wantDrops) || qdisctest.XStat(q, "drop_overlimit") != int64(c.wantDrops) {
				t.Errorf("stats %+v", st)
			}
		})
	}
	// The enqueuing flow is the fattest: its own victim, NET_XMIT_CN.
	{
		q := newQ(t, "limit", "10")
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		enqueue(q, ctx, g.pkt(9, 1024, 1000))
		for i := 0; i < 9; i++ {
			if rc := enqueue(q, ctx, g.pkt(4, 1024, 1000)); rc[0] != qdisc.XmitSuccess {
				t.Fatalf("rc %v below the limit", rc[0])
			}
		}
		if rc := enqueue(q, ctx, g.pkt(4, 1024, 1000)); rc[0] != qdisc.XmitCN {
			t.Errorf("rc %v when the enqueuing flow is the victim, want NET_XMIT_CN", rc[0])
		}
		if len(ctx.Dropped) != 5 { // 10000 B -> drop until >= 5000 B
			t.Errorf("dropped %d, want 5", len(ctx.Dropped))
		}
	}
	// A packet that is itself dropped (its flow emptied) gets
	// NET_XMIT_CN too: fq_codel_enqueue returns CN when ret == idx.
	q := newQ(t, "limit", "1")
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	enqueue(q, ctx, g.pkt(1, 1024, 100))
	p := g.pkt(2, 1024, 1500)
	if rc := enqueue(q, ctx, p); rc[0] != qdisc.XmitCN || ctx.Dropped[p.Handle] != skb.DropQdiscOverlimit {
		t.Errorf("rc %v reason %q, want NET_XMIT_CN, QDISC_OVERLIMIT", rc[0], ctx.Dropped[p.Handle])
	}
}

// TestMemoryLimit: memory_limit bounds the truesize held, for every
// packet: fq_codel_enqueue charges get_codel_cb(skb)->mem_usage =
// skb->truesize whether a socket owns the skb or not.
func TestMemoryLimit(t *testing.T) {
	q := newQ(t, "memory_limit", "20000")
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	for i := 0; i < 200; i++ {
		p := g.pkt(uint32(i%7), 1024, 1000)
		p.Sock = -1 // forwarded: charged its truesize (2048)
		enqueue(q, ctx, p)
		if mu := qdisctest.XStat(q, "memory_used"); mu > 20000 {
			t.Fatalf("memory_used %d over memory_limit after packet %d", mu, i)
		}
	}
	if qdisctest.XStat(q, "drop_overmemory") == 0 || qdisctest.XStat(q, "drop_overmemory") != qdisctest.XStat(q, "drop_overlimit") {
		t.Errorf("drop_overmemory %d drop_overlimit %d", qdisctest.XStat(q, "drop_overmemory"), qdisctest.XStat(q, "drop_overlimit"))
	}
	if n := q.Stats().Qlen; n > 20000/2048 {
		t.Errorf("holds %d packets", n)
	}
	// Drain: memory_used returns to 0.
	for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)) > 0 {
	}
	if qdisctest.XStat(q, "memory_used") != 0 {
		t.Errorf("memory_used %d after drain", qdisctest.XStat(q, "memory_used"))
	}
	// Socket-owned packets are charged alike: the memory limit binds.
	q = newQ(t, "memory_limit", "20000")
	for i := 0; i < 200; i++ {
		enqueue(q, ctx, g.pkt(uint32(i%7), 1024, 1000))
	}
	if n, mu := q.Stats().Qlen, qdisctest.XStat(q, "memory_used"); n > 20000/2048 || mu == 0 || mu > 20000 {
		t.Errorf("socket-owned: qlen %d memory_used %d, want the memory limit to bind", n, mu)
	}
}

// TestWorkReported: one enqueue and timestamp per packet in, a flow
// hash only for a packet that carries none (skb_get_hash), one dequeue
// per packet out and one timestamp per codel_dequeue.
func TestWorkReported(t *testing.T) {
	q := newQ(t)
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	for i := 0; i < 10; i++ {
		p := g.pkt(uint32(i), 1024, 100)
		if i < 3 {
			p.Hash = 0 // no RSS hash, no sk_txhash: skb_get_hash dissects
		}
		enqueue(q, ctx, p)
	}
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 40}, nil)
	w := ctx.WorkDone
	if len(out) != 10 || w[qdisc.WorkEnqueue] != 10 || w[qdisc.WorkHash] != 3 || w[qdisc.WorkDequeue] != 10 || w[qdisc.WorkTstamp] != 20 {
		t.Errorf("work %v for %d packets", w, len(out))
	}
}

// TestOverflowScanPerLine: fq_codel_drop's scan of backlogs[] is priced
// per 64-byte line of the u32 array, not per flow.
func TestOverflowScanPerLine(t *testing.T) {
	for _, c := range []struct {
		flows string
		lines int
	}{{"1024", 64}, {"16", 1}, {"100", 7}} {
		q := newQ(t, "limit", "4", "flows", c.flows)
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		for i := 0; i < 5; i++ {
			enqueue(q, ctx, g.pkt(0, 1, 100))
		}
		if got := ctx.WorkDone[qdisc.WorkFlowScan]; got != c.lines {
			t.Errorf("flows %s: one overflow scanned %d lines, want %d", c.flows, got, c.lines)
		}
	}
}

// TestPriorityClassifies: skb->priority naming one of our classes
// (major = our handle, minor 1..flows) picks the flow without hashing.
func TestPriorityClassifies(t *testing.T) {
	q := newQ(t)
	ctx := qdisctest.NewCtx(1)
	p := skb.Packet{Handle: 1, Len: 100, Priority: 1<<16 | 7, Hash: 12345}
	enqueue(q, ctx, p)
	if q.flows[6].q.Len() != 1 || ctx.WorkDone[qdisc.WorkHash] != 0 {
		t.Errorf("priority 1:7 not classified to flow 7")
	}
	// A default qdisc's handle is 0 (an mq child's "0:"), so a plain
	// priority (major 0), as IP_TOS gives a socket, picks its flow too.
	s := setup
	s.Handle, s.Parent = "0:", "1:1"
	q0 := &FQCodel{}
	if _, err := q0.Init(qdisctest.NewCtx(1), s, nil); err != nil {
		t.Fatal(err)
	}
	ctx = qdisctest.NewCtx(1)
	enqueue(q0, ctx, skb.Packet{Handle: 2, Len: 100, Priority: 6, Hash: 12345})
	if q0.flows[5].q.Len() != 1 {
		t.Errorf("handle 0: priority 6 not classified to flow 6")
	}
}

func FuzzOptions(f *testing.F) {
	f.Add("limit 100 flows 16 target 5ms interval 100ms quantum 300 memory_limit 32Mb ecn ce_threshold 1ms drop_batch 8")
	f.Add("ce_threshold 1ms ce_threshold_selector 0x1/0x3")
	f.Add("noecn target")
	f.Add("flows 0 limit 0 quantum 1")
	f.Fuzz(func(t *testing.T, args string) {
		q := &FQCodel{}
		if _, err := q.Init(qdisctest.NewCtx(1), setup, strings.Fields(args)); err != nil {
			return
		}
		ctx := qdisctest.NewCtx(1)
		g := &pktGen{}
		for i := 0; i < 50; i++ {
			p := g.pkt(uint32(i), 64, uint32(60+i*29))
			p.Sock = -1
			enqueue(q, ctx, p)
			ctx.T += sim.Millisecond
		}
		q.Dump()
		q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)
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
	var h skb.Handle
	b.ResetTimer()
	start := time.Now()
	pkts := 0
	for i := 0; i < b.N; i++ {
		for j := range batch {
			h++
			batch[j] = skb.Packet{Handle: h, Len: 1000, TrueSize: 2048, Hash: uint32(h%64) * 0x9e3779b9, Sock: 1}
		}
		q.Enqueue(ctx, batch, rc)
		out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 32, Bytes: 1 << 40}, out[:0])
		pkts += len(out)
		ctx.T += 10 * sim.Microsecond
	}
	b.ReportMetric(float64(pkts)/time.Since(start).Seconds(), "pkts/s")
}

// TestChange: fq_codel_change mid-run. A lower limit dequeues from the
// head (the peeked packet first, then DRR order) and frees those packets
// as NOT_SPECIFIED, not qdisc drops; a lower memory_limit does the same
// for the memory charged; flows cannot change once the table exists;
// every packet is accounted for.
func TestChange(t *testing.T) {
	q := newQ(t)
	ctx := qdisctest.NewCtx(1)
	g := &pktGen{}
	var in []skb.Packet
	for i := 0; i < 30; i++ {
		in = append(in, g.pkt(uint32(i%3), 1024, 100))
	}
	enqueue(q, ctx, in...)
	peeked, ok := q.Peek(ctx)
	if !ok {
		t.Fatal("nothing to peek")
	}
	drops := q.Stats().Drops
	info, err := q.Change(ctx, []string{"limit", "10", "target", "2ms", "noecn"})
	if err != nil || info.Limit != 10 || info.Flags&qdisc.CanBypass == 0 {
		t.Fatalf("change: %+v %v", info, err)
	}
	st := q.Stats()
	if st.Qlen != 10 || st.Backlog != 1000 || len(ctx.Dropped) != 20 || st.Drops != drops {
		t.Fatalf("after change: qlen %d backlog %d, %d freed, drops %d -> %d", st.Qlen, st.Backlog, len(ctx.Dropped), drops, st.Drops)
	}
	if r, ok := ctx.Dropped[peeked.Handle]; !ok || r != skb.DropNotSpecified {
		t.Fatalf("the peeked packet was not freed first: %v", ctx.Dropped)
	}
	// Dequeue order: a quantum of 1514 B serves all ten 100 B packets
	// of the first flow, then the second's; the third flow is left.
	left := q.Dequeue(ctx, qdisc.DequeueReq{Max: 100, Bytes: 1 << 40}, nil)
	for _, p := range left {
		if _, gone := ctx.Dropped[p.Handle]; gone || p.Handle%3 != 0 {
			t.Fatalf("packet %d (flow %d) survived the head drop", p.Handle, (p.Handle-1)%3)
		}
	}
	if len(left)+len(ctx.Dropped) != len(in) {
		t.Fatalf("accounting: %d in, %d out, %d freed", len(in), len(left), len(ctx.Dropped))
	}
	if d := q.Dump(); !strings.HasPrefix(d, "limit 10p flows 1024 quantum 1514 target 2ms interval") || strings.Contains(d, "ecn") {
		t.Fatalf("dump after change: %q", d)
	}

	// memory_limit counts orphans (no socket) at their truesize.
	for i := range in {
		in[i] = g.pkt(uint32(i%3), 1024, 100)
		in[i].Sock = -1
	}
	enqueue(q, ctx, in[:8]...)
	before := len(ctx.Dropped)
	if _, err := q.Change(ctx, []string{"memory_limit", "5000"}); err != nil {
		t.Fatal(err)
	}
	if got := len(ctx.Dropped) - before; got != 6 || q.memoryUsage > 5000 || q.Stats().Qlen != 2 {
		t.Fatalf("memory_limit 5000: freed %d, memory %d, qlen %d", got, q.memoryUsage, q.Stats().Qlen)
	}

	// Refused: nothing changes.
	for _, args := range [][]string{{"flows", "64"}, {"limit", "5", "quantum", "2000000"}, {"limit", "5", "bogus"}} {
		if _, err := q.Change(ctx, args); err == nil || q.limit != 10 || q.flowsCnt != 1024 {
			t.Fatalf("change %v: %v, limit %d flows %d", args, err, q.limit, q.flowsCnt)
		}
	}
	if _, err := q.Change(ctx, []string{"flows", "64"}); !errors.Is(err, qdisc.ErrKernel) {
		t.Fatalf("flows at change: %v, want the kernel's refusal", err)
	}
}

// filterCtx is a context whose filters are specs (cls.Set.Specs lines),
// as the host hands them to the qdisc's context.
func filterCtx(t *testing.T, specs ...string) *qdisctest.Ctx {
	t.Helper()
	ctx := qdisctest.NewCtx(1)
	s, err := cls.Load(specs)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSeed(ctx.Seed)
	ctx.Filters = s
	return ctx
}

// udp is a packet of the UDP flow src:sport -> 10.1.0.7:dport.
func udp(h skb.Handle, src uint32, sport, dport uint16, hash uint32) skb.Packet {
	return skb.Packet{Handle: h, Len: 1000, TrueSize: 2048, Hash: hash, Sock: 1, GSOSegs: 1, Priority: 0,
		Keys: skb.FlowKeys{Src: src, Dst: 0x0a010007, SrcPort: sport, DstPort: dport, Proto: 17}}
}

// TestFilters: fq_codel_classify with filters attached. Their result's
// minor is the flow (1-based): two flows steered into one share its
// queue; a minor of 0 or past flows_cnt, a drop action or no filter
// matching drops the packet, counted as a qdisc drop, and the sender
// sees NET_XMIT_SUCCESS (NET_XMIT_SUCCESS | __NET_XMIT_BYPASS, masked).
// skb->priority naming a flow still comes first; with no filter at
// 1: the hash decides.
func TestFilters(t *testing.T) {
	a := udp(1, 0x0a000001, 40000, 5001, hashFor(10, 1024))
	b := udp(2, 0x0a000002, 40001, 5002, hashFor(20, 1024))
	prio := udp(3, 0x0a000003, 40002, 5001, hashFor(30, 1024))
	prio.Priority = 1<<16 | 7
	tests := []struct {
		name    string
		specs   []string
		pkts    []skb.Packet
		flows   map[int]int // flow index -> packets held
		dropped int
	}{
		{"matchall: both flows in flow 5", []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:5"},
			[]skb.Packet{a, b}, map[int]int{4: 2}, 0},
		{"flow map dst: one destination, one flow", []string{"parent 1: protocol all pref 1 handle 0x1 flow map key dst and 0xff"},
			[]skb.Packet{a, b}, map[int]int{7: 2}, 0},
		{"u32 by port; no match drops", []string{"parent 1: protocol ip pref 1 u32 match ip dport 5001 0xffff flowid 1:3"},
			[]skb.Packet{a, b}, map[int]int{2: 1}, 1},
		{"a minor past flows_cnt drops", []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:1025"},
			[]skb.Packet{a, b}, nil, 2},
		{"a minor of 0 drops", []string{"parent 1: protocol all pref 1 handle 0x1 flow map key proto and 0 baseclass 1:1 addend 0xffff"},
			[]skb.Packet{a}, nil, 1},
		{"a drop action", []string{"parent 1: protocol all pref 1 handle 0x1 matchall action drop"},
			[]skb.Packet{a, b}, nil, 2},
		{"a tcf_proto with nothing in it drops all", []string{"parent 1: protocol ip pref 1 handle 800: u32"},
			[]skb.Packet{a}, nil, 1},
		{"skb->priority first", []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:5"},
			[]skb.Packet{prio, a}, map[int]int{6: 1, 4: 1}, 0},
		{"filters elsewhere: the hash", []string{"parent 2: protocol all pref 1 handle 0x1 matchall classid 2:5"},
			[]skb.Packet{a, b}, map[int]int{10: 1, 20: 1}, 0},
	}
	for _, tt := range tests {
		q := newQ(t)
		ctx := filterCtx(t, tt.specs...)
		rc := enqueue(q, ctx, tt.pkts...)
		for i, c := range rc {
			if want := qdisctest.BypassIfDropped(ctx, tt.pkts[i]); c != want {
				t.Errorf("%s: packet %d got %v, want %v", tt.name, i, c, want)
			}
		}
		held := map[int]int{}
		for i := range q.flows {
			if n := q.flows[i].q.Len(); n > 0 {
				held[i] = n
			}
		}
		if len(held) != len(tt.flows) {
			t.Errorf("%s: flows hold %v, want %v", tt.name, held, tt.flows)
		}
		for i, n := range tt.flows {
			if held[i] != n {
				t.Errorf("%s: flows hold %v, want %v", tt.name, held, tt.flows)
			}
		}
		if err := ctx.CheckDrops(q.Stats(), q.qlen, len(tt.pkts), tt.dropped, skb.DropQdiscDrop); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// ce_threshold_selector VALUE/MASK limits ce_threshold's marks to the
// packets whose DS field matches (codel_dequeue: (dsfield & mask) ==
// selector): with 0x1/0x3 (L4S's ECT(1)) a standing queue above the
// threshold marks the ECT(1) flow's packets and leaves the ECT(0) flow's
// to CoDel, which here (a target of 1 s) never acts.
func TestCEThresholdSelector(t *testing.T) {
	for _, c := range []struct {
		args       string
		ce0, ce1   bool // ECT(0) and ECT(1) packets marked
		wantCEMark bool
	}{
		{"ce_threshold 1ms target 1s", true, true, true},
		{"ce_threshold 1ms target 1s ce_threshold_selector 0x1/0x3", false, true, true},
		{"ce_threshold 1ms target 1s ce_threshold_selector 0x2/0x3", true, false, true},
		{"ce_threshold 1ms target 1s ce_threshold_selector 0xb8/0xfc", false, false, false}, // DSCP EF only
	} {
		q := newQ(t, strings.Fields(c.args)...)
		ctx := qdisctest.NewCtx(1)
		var g pktGen
		for i := range 40 {
			p := g.pkt(uint32(1+i%2), 1024, 1000)
			p.ECN = uint8(2 - i%2) // ECT(0) on flow 1, ECT(1) on flow 2
			enqueue(q, ctx, p)
		}
		marked := map[uint32]int{}
		for ms := 1; ms <= 40; ms++ {
			ctx.T = sim.Time(ms) * sim.Millisecond
			for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 20}, nil) {
				if p.ECN == 3 {
					marked[p.Hash]++
				}
			}
		}
		got0, got1 := marked[hashFor(1, 1024)] > 0, marked[hashFor(2, 1024)] > 0
		if got0 != c.ce0 || got1 != c.ce1 || (qdisctest.XStat(q, "ce_mark") > 0) != c.wantCEMark || len(ctx.Dropped) != 0 {
			t.Errorf("%s: ECT(0) marked %v, ECT(1) %v (ce_mark %d, %d dropped); want %v, %v", c.args, got0, got1,
				qdisctest.XStat(q, "ce_mark"), len(ctx.Dropped), c.ce0, c.ce1)
		}
	}
}
