package qfq

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/codel"    // leaves that drop at dequeue
	_ "github.com/txlab/txlab/plugins/fq_codel" // leaves whose peek dequeues
	_ "github.com/txlab/txlab/plugins/netem"    // leaves that delay
	_ "github.com/txlab/txlab/plugins/prio"     // leaves whose head a packet may displace
	_ "github.com/txlab/txlab/plugins/tbf"      // leaves that shape
)

func newQFQ(t *testing.T, s qdisc.Setup, classes ...string) (*QFQ, *qdisctest.Ctx) {
	t.Helper()
	q := &QFQ{}
	ctx := qdisctest.NewCtx(1)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Setup: s, Classes: classes}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// send enqueues n packets of size bytes for class prio (skb->priority),
// numbered on from *h.
func send(q *QFQ, ctx qdisc.Ctx, h *skb.Handle, prio uint32, n int, size uint32) []qdisc.Code {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: size, Priority: prio, GSOSegs: 1}
	}
	rc := make([]qdisc.Code, n)
	q.Enqueue(ctx, batch, rc)
	return rc
}

// interleave enqueues n packets to each of the classes in turn, one
// batch, as senders on several CPUs would.
func interleave(q *QFQ, ctx qdisc.Ctx, h *skb.Handle, n int, prios []uint32, sizes []uint32) {
	var batch []skb.Packet
	for i := 0; i < n; i++ {
		for k, prio := range prios {
			*h++
			batch = append(batch, skb.Packet{Handle: *h, Len: sizes[k], Priority: prio, GSOSegs: 1})
		}
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, len(batch)))
}

// Two backlogged classes share the link by weight, in bytes, whatever
// their packets' sizes and whatever their lmax: weight 3 gets three
// times weight 1's bytes; equal weights with lmax 1514 and 9000 (each
// its own aggregate and group) get equal bytes.
func TestWeightsShare(t *testing.T) {
	for _, tt := range []struct {
		name         string
		class1       string // 1:1's words
		class2       string // 1:2's words
		size1, size2 uint32
		want         float64 // bytes of 1:2 / bytes of 1:1
	}{
		{"weights 1:3", "weight 1", "weight 3", 1514, 1514, 3},
		{"weights 1:3, the heavier with small packets", "weight 1", "weight 3", 1514, 200, 3},
		{"weights 1:3, the lighter with small packets", "weight 1", "weight 3", 200, 1514, 3},
		{"weights 10:1", "weight 10", "weight 1", 1000, 1000, 0.1},
		{"equal weights, lmax 1514 and 9000", "weight 1 maxpkt 1514", "weight 1 maxpkt 9000", 1514, 9000, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, ctx := newQFQ(t, qdisctest.DefaultSetup(), "parent 1: classid 1:1 qfq "+tt.class1, "parent 1: classid 1:2 qfq "+tt.class2)
			var h skb.Handle
			sent := map[uint32]uint64{}
			// keep both backlogged: refill before each round of dequeues
			for round := 0; round < 40; round++ {
				interleave(q, ctx, &h, 20, []uint32{0x10001, 0x10002}, []uint32{tt.size1, tt.size2})
				for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 20, Bytes: 1 << 40}, nil) {
					sent[p.Priority] += uint64(p.Len)
				}
			}
			got := float64(sent[0x10002]) / float64(sent[0x10001])
			if got < tt.want*0.97 || got > tt.want*1.03 {
				t.Errorf("bytes 1:1 %d, 1:2 %d: ratio %.3f, want %.3f within 3%%", sent[0x10001], sent[0x10002], got, tt.want)
			}
			if st := q.Stats(); st.Drops != 0 {
				t.Errorf("drops %d", st.Drops)
			}
		})
	}
}

// Classes of one weight and lmax share an aggregate, up to 8 (with a
// txqueuelen of 7 or more); its budget is their lmax summed and its
// weight theirs summed; the group comes from the first class's lmax
// over weight. Another weight, another aggregate; the 9th class of a
// kind, another too.
func TestAggregates(t *testing.T) {
	var classes []string
	for i := 1; i <= 9; i++ {
		classes = append(classes, fmt.Sprintf("parent 1: classid 1:%x qfq weight 2 maxpkt 3000", i))
	}
	classes = append(classes, "parent 1: classid 1:a qfq weight 4 maxpkt 3000")
	q, _ := newQFQ(t, qdisctest.DefaultSetup(), classes...)
	a := q.byID[0x10001].agg
	for i := 2; i <= 8; i++ {
		if q.byID[qdisc.MakeClassID(1, uint16(i))].agg != a {
			t.Errorf("1:%x is not in 1:1's aggregate", i)
		}
	}
	if a.numClasses != 8 || a.budgetmax != 8*3000 || a.invW != oneFP/16 || a.inNonfull {
		t.Errorf("aggregate: %d classes, budgetmax %d, inv_w %d, nonfull %v", a.numClasses, a.budgetmax, a.invW, a.inNonfull)
	}
	// lmax 3000 over weight 2 scaled: 3000 * 2^29 >> 25 = 48000, 16 bits
	if a.grp.index != 16 || q.minSlotShift != 25 || q.maxAggClasses != 8 {
		t.Errorf("group %d, min_slot_shift %d, max classes %d; want 16, 25, 8", a.grp.index, q.minSlotShift, q.maxAggClasses)
	}
	if b := q.byID[0x10009].agg; b == a || b.numClasses != 1 || !b.inNonfull {
		t.Errorf("the 9th class shares the full aggregate, or its own is wrong")
	}
	if c := q.byID[0x1000a].agg; c == a || c.classWeight != 4 {
		t.Errorf("a class of weight 4 in weight 2's aggregate")
	}
	if q.wsum != 9*2+4 || q.iwsum != oneFP/22 {
		t.Errorf("wsum %d iwsum %d", q.wsum, q.iwsum)
	}
	// a txqueuelen of 2: at most 2 classes an aggregate (floor(log2 3))
	s := qdisctest.DefaultSetup()
	s.TxQueueLen = 2
	q, _ = newQFQ(t, s, classes[:3]...)
	if q.maxAggClasses != 2 || q.byID[0x10001].agg != q.byID[0x10002].agg || q.byID[0x10003].agg == q.byID[0x10001].agg {
		t.Errorf("txqueuelen 2: max %d classes an aggregate", q.maxAggClasses)
	}
}

// tc's words and the kernel's refusals, with their messages.
func TestErrors(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"foo", `What is "foo"?`},
		{"he", "Usage: ... qfq"},
	} {
		_, err := (&QFQ{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(tt.args))
		if !errors.Is(err, qdisc.ErrParse) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("qdisc %q: %v, want %q", tt.args, err, tt.want)
		}
	}
	small := qdisctest.DefaultSetup()
	small.MTU = 300 // psched_mtu below QFQ_MIN_LMAX
	for _, tt := range []struct {
		args  string
		setup *qdisc.Setup
		class error
		want  string
	}{
		{args: "weight 0", class: qdisc.ErrKernel, want: "Error: integer out of range"},
		{args: "weight 1025", class: qdisc.ErrKernel, want: "Error: integer out of range"},
		{args: "maxpkt 511", class: qdisc.ErrKernel, want: "Error: integer out of range"},
		{args: "maxpkt 65537", class: qdisc.ErrKernel, want: "Error: integer out of range"},
		{args: "weight 3 maxpkt 100000", class: qdisc.ErrKernel, want: "Error: integer out of range"},
		{args: "weight x", class: qdisc.ErrParse, want: `Illegal "weight"`},
		{args: "maxpkt 1.5k", class: qdisc.ErrParse, want: `Illegal "maxpkt"`},
		{args: "weight -1", class: qdisc.ErrParse, want: `Illegal "weight"`},
		{args: "weight", class: qdisc.ErrParse, want: `Command line is not complete after "weight"`},
		{args: "quantum 1514", class: qdisc.ErrParse, want: `What is "quantum"? Usage: ... qfq weight NUMBER maxpkt BYTES`},
		{args: "help", class: qdisc.ErrParse, want: "Usage: ... qfq weight NUMBER maxpkt BYTES"},
		{args: "", setup: &small, class: qdisc.ErrKernel, want: "Error: sch_qfq: MTU size out of bounds for qfq"},
		{args: "weight 2", setup: &small, class: qdisc.ErrKernel, want: "MTU size out of bounds"},
	} {
		s := qdisctest.DefaultSetup()
		if tt.setup != nil {
			s = *tt.setup
		}
		q := &QFQ{}
		ctx := qdisctest.NewCtx(1)
		_, err := qdisctest.Attach(ctx, q, qdisctest.Options{Setup: s, Classes: []string{"parent 1: classid 1:1 qfq " + tt.args}})
		if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("class %q: %v, want %q", tt.args, err, tt.want)
		}
	}
	// A small MTU with maxpkt given is fine; tc's prefixes; the last
	// of a repeated word counts (the kernel reads the last attribute).
	q, _ := newQFQ(t, small, "parent 1: classid 1:1 qfq w 5 m 600 weight 7")
	if got := q.Classes()[0].Options; got != "weight 7 maxpkt 600 " {
		t.Errorf("dump %q", got)
	}
}

// The weights sum to at most QFQ_MAX_WSUM (64 * 1024): the 65th class
// of weight 1024 is refused, with the kernel's message; a change counts
// only its weight's difference, and a class deleted frees its weight.
func TestTotalWeight(t *testing.T) {
	var classes []string
	for i := 1; i <= 64; i++ {
		classes = append(classes, fmt.Sprintf("parent 1: classid 1:%x qfq weight 1024", i))
	}
	q, ctx := newQFQ(t, qdisctest.DefaultSetup(), classes...)
	if q.wsum != qfqMaxWSum {
		t.Fatalf("wsum %d", q.wsum)
	}
	add := func(id uint16, words string) error {
		return q.ChangeClass(ctx, qdisc.ClassReq{ID: qdisc.MakeClassID(1, id), Parent: qdisc.RootClass, Create: true, Args: strings.Fields(words)})
	}
	if err := add(0x100, "weight 1"); !errors.Is(err, qdisc.ErrKernel) || err.Error() != "qfq: Error: sch_qfq: total weight out of range (1 + 65536)." {
		t.Errorf("the 65th class: %v", err)
	}
	if err := add(1, "weight 1025"); err == nil || !strings.Contains(err.Error(), "integer out of range") {
		t.Errorf("a change to 1025: %v", err)
	}
	if err := add(1, "weight 1023"); err != nil || q.wsum != qfqMaxWSum-1 {
		t.Errorf("a change down to 1023: %v, wsum %d", err, q.wsum)
	}
	if err := add(0x100, "weight 2"); err == nil || !strings.Contains(err.Error(), "(2 + 65535)") {
		t.Errorf("weight 2 with 1 left: %v", err)
	}
	if err := q.DeleteClass(ctx, qdisc.MakeClassID(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := add(0x100, "weight 1025"); err == nil {
		t.Errorf("weight 1025 after a delete: accepted")
	}
	if err := add(0x100, "weight 1024"); err != nil || q.wsum != qfqMaxWSum-1 {
		t.Errorf("weight 1024 after a delete: %v, wsum %d", err, q.wsum)
	}
}

// A packet longer than its class's lmax moves the class to an
// aggregate of that lmax (qfq_change_agg, the dump shows it); one past
// QFQ_MAX_LMAX is dropped (NET_XMIT_DROP, the qdisc's drop). A packet
// of no class is dropped too, NET_XMIT_SUCCESS | __NET_XMIT_BYPASS.
// The class counts what it took as its leaf took it (bstats at
// enqueue), its drops are its leaf's (LeafQstats).
func TestEnqueueDrops(t *testing.T) {
	q, ctx := newQFQ(t, qdisctest.DefaultSetup(), "parent 1: classid 1:1 qfq maxpkt 512", "parent 1: classid 1:2 qfq maxpkt 512")
	var h skb.Handle
	old := q.byID[0x10001].agg
	rc := send(q, ctx, &h, 0x10001, 3, 1514)
	cl := q.byID[0x10001]
	if rc[0] != qdisc.XmitSuccess || cl.agg == old || cl.agg.lmax != 1514 || q.byID[0x10002].agg != old || old.numClasses != 1 {
		t.Errorf("a 1514-byte packet: rc %v, aggregate lmax %d", rc, cl.agg.lmax)
	}
	if cs := q.Classes(); cs[0].Options != "weight 1 maxpkt 1514 " && cs[1].Options != "weight 1 maxpkt 1514 " {
		t.Errorf("dump %+v", cs)
	}
	rc = send(q, ctx, &h, 0x10001, 1, 70000)
	if r, dropped := ctx.Dropped[h]; rc[0] != qdisc.XmitDrop || !dropped || q.Stats().Drops != 1 || r != skb.DropQdiscDrop {
		t.Errorf("a 70000-byte packet: rc %v, drops %d", rc[0], q.Stats().Drops)
	}
	rc = send(q, ctx, &h, 0x10009, 1, 100)
	if _, dropped := ctx.Dropped[h]; rc[0] != qdisc.XmitSuccess|qdisc.XmitBypass || !dropped || q.Stats().Drops != 2 {
		t.Errorf("a packet of no class: rc %v, drops %d", rc[0], q.Stats().Drops)
	}
	for _, c := range q.Classes() {
		if c.ID == 0x10001 && (c.SentPackets != 3 || c.SentBytes != 3*1514 || !c.LeafQstats || c.LeafStats || c.Parent != qdisc.RootClass || !c.Leaf) {
			t.Errorf("1:1 before any dequeue: %+v; want 3 packets counted", c)
		}
	}
}

// A class is changed and deleted while it has packets: a new weight
// moves it to another aggregate, still served; a change without maxpkt
// sets lmax back to the MTU (the kernel reads both every time); the
// class in service deleted purges its leaf (the qdisc's drops) and
// service goes on to the other, which sends all it holds.
func TestChangeDeleteInUse(t *testing.T) {
	q, ctx := newQFQ(t, qdisctest.DefaultSetup(), "parent 1: classid 1:1 qfq weight 1 maxpkt 3000", "parent 1: classid 1:2 qfq weight 1 maxpkt 3000")
	var h skb.Handle
	interleave(q, ctx, &h, 50, []uint32{0x10001, 0x10002}, []uint32{1000, 1000})
	if q.byID[0x10001].agg != q.byID[0x10002].agg {
		t.Fatal("equal classes in two aggregates")
	}
	got := len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 40}, nil))
	change := func(id uint16, words string) {
		t.Helper()
		if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: qdisc.MakeClassID(1, id), Parent: qdisc.RootClass, Create: true, Args: strings.Fields(words)}); err != nil {
			t.Fatal(err)
		}
	}
	change(2, "weight 4")
	c1, c2 := q.byID[0x10001], q.byID[0x10002]
	if c2.agg == c1.agg || !c2.active || c2.agg.classWeight != 4 || c2.agg.lmax != 1514 || c1.agg.numClasses != 1 || q.wsum != 5 {
		t.Errorf("after weight 4: own aggregate %v, active %v, weight %d lmax %d, wsum %d", c2.agg != c1.agg, c2.active, c2.agg.classWeight, c2.agg.lmax, q.wsum)
	}
	sent := map[uint32]int{}
	for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 30, Bytes: 1 << 40}, nil) {
		sent[p.Priority]++
	}
	if sent[0x10002] < 2*sent[0x10001] {
		t.Errorf("after weight 4: 1:1 sent %d, 1:2 %d", sent[0x10001], sent[0x10002])
	}
	got += 30
	in := q.inServAgg
	victim := q.byID[0x10001]
	if in == c2.agg {
		victim = c2
	}
	held := q.leaves.Get(victim.id).Qlen
	if err := q.DeleteClass(ctx, victim.id); err != nil {
		t.Fatal(err)
	}
	other := c1
	if victim == c1 {
		other = c2
	}
	if st := q.Stats(); st.Drops != uint64(held) || q.inServAgg == in || q.byID[victim.id] != nil || q.wsum != other.agg.classWeight {
		t.Errorf("after deleting the class in service: %+v, %d held, in service %p (was %p), wsum %d", st, held, q.inServAgg, in, q.wsum)
	}
	left := q.leaves.Get(other.id).Qlen
	n := len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 200, Bytes: 1 << 40}, nil))
	if n != left || q.Stats().Qlen != 0 {
		t.Errorf("the other class sent %d of %d", n, left)
	}
	if got+n+held != 100 {
		t.Errorf("sent %d, purged %d of 100", got+n, held)
	}
	// the empty qdisc's next dequeue ends the service (in_serv_agg NULL)
	if q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil); q.inServAgg != nil {
		t.Errorf("empty, yet an aggregate in service")
	}
}

// With leaves that delay, shape, drop at dequeue or dequeue when peeked,
// qfq stays exact: everything it takes comes out or is dropped and
// counted, and no class stays active with an empty leaf.
func TestConformance(t *testing.T) {
	// The suite's packets carry skb->priority 1:1..1:8: classes 1:1..1:7
	// catch all but 1:8, which qfq drops.
	var classes []string
	for i := 1; i <= 7; i++ {
		classes = append(classes, fmt.Sprintf("parent 1: classid 1:%d qfq weight %d maxpkt %d", i, 1+(i%3)*7, 600+i*300))
	}
	for _, tt := range []struct {
		name   string
		leaves []string
	}{
		{"pfifo leaves", nil},
		{"netem and tbf leaves", []string{"parent 1:1 handle 11: netem delay 1ms 500us duplicate 20%", "parent 1:2 handle 12: tbf rate 50mbit burst 20k limit 100k"}},
		{"codel and fq_codel leaves", []string{"parent 1:3 handle 13: codel target 100us interval 1ms", "parent 1:4 handle 14: fq_codel target 100us interval 1ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := func() qdisc.Qdisc { return wire.WrapQdisc(&QFQ{}) }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Classes: classes, Leaves: tt.leaves, Seed: 3, Pkts: 3000}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// The scheduler's fixed point: a group's index is the bit length of
// the slot size (lmax * ONE_FP / weight) over min_slot_shift, one
// lower for an exact power of two.
func TestCalcIndex(t *testing.T) {
	for _, tt := range []struct {
		lmax, weight uint32
		want         int
	}{
		{1514, 1, 16},      // 1514 * 2^30 >> 25 = 48448: 16 bits
		{3000, 2, 16},      // 3000 * 2^29 >> 25 = 48000
		{512, 1024, 4},     // 2^29 >> 25 = 16, a power of two: 5 bits less one
		{65536, 1, 21},     // 2^46 >> 25 = 2^21
		{65536 * 8, 1, 24}, // 8 classes of the largest lmax, weight 1: the last group
		{16, 1024, 0},      // 2^24: below the first slot
	} {
		if got := qfqCalcIndex(oneFP/tt.weight, tt.lmax, 25); got != tt.want {
			t.Errorf("lmax %d weight %d: group %d, want %d", tt.lmax, tt.weight, got, tt.want)
		}
	}
}

// An aggregate with an idle time between its packets restarts at V
// (its F stale), not at its old finish: two classes of weight 1, one
// always backlogged, one sending a packet now and then, each burst of
// the second is served within a round of the first's, not queued
// behind all it missed.
func TestIdleClassRestartsAtV(t *testing.T) {
	q, ctx := newQFQ(t, qdisctest.DefaultSetup(), "parent 1: classid 1:1 qfq", "parent 1: classid 1:2 qfq")
	var h skb.Handle
	send(q, ctx, &h, 0x10001, 500, 1514)
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 200, Bytes: 1 << 40}, nil)
	send(q, ctx, &h, 0x10002, 1, 1514)
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 3, Bytes: 1 << 40}, nil)
	found := false
	for _, p := range out {
		found = found || p.Priority == 0x10002
	}
	if !found {
		t.Errorf("the waking class's packet is not among the next 3: %v", out)
	}
}

// qfq_enqueue's case of a packet that becomes its active class's head
// (a prio leaf puts it in a higher band) while the class is at the
// front of its aggregate without the deficit for it: the class goes to
// the tail, so the next packet is the other class's; left at the front
// it would send the new head on a deficit it does not have.
func TestNewHeadMovesClassToTail(t *testing.T) {
	q := &QFQ{}
	ctx := qdisctest.NewCtx(1)
	o := qdisctest.Options{Setup: qdisctest.DefaultSetup(),
		Classes: []string{"parent 1: classid 1:1 qfq", "parent 1: classid 1:2 qfq"},
		Leaves:  []string{"parent 1:1 handle 10: prio"}}
	if _, err := qdisctest.Attach(ctx, q, o); err != nil {
		t.Fatal(err)
	}
	f, err := cls.Load([]string{"parent 1: protocol all pref 1 handle 1 fw classid 1:1", "parent 1: protocol all pref 2 handle 2 fw classid 1:2"})
	if err != nil {
		t.Fatal(err)
	}
	ctx.Filters = f
	enq := func(h skb.Handle, mark uint32, size uint32, prio uint32) {
		q.Enqueue(ctx, []skb.Packet{{Handle: h, Len: size, Mark: mark, Priority: prio, GSOSegs: 1}}, make([]qdisc.Code, 1))
	}
	enq(1, 1, 1000, 0) // 1:1, prio's band 1 (priomap[0])
	enq(2, 1, 400, 0)
	enq(3, 2, 1000, 0) // 1:2, behind 1:1 in the one aggregate
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil); len(out) != 1 || out[0].Handle != 1 {
		t.Fatalf("first out %v, want packet 1", out)
	}
	c1 := q.byID[0x10001]
	if c1.deficit != 514 || c1.agg.active[0] != c1 {
		t.Fatalf("1:1 deficit %d, first %v; want 514 and at the front", c1.deficit, c1.agg.active[0] == c1)
	}
	enq(4, 1, 1200, 6) // band 0 (priomap[6]): the leaf's new head, 1200 > 514
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil); len(out) != 1 || out[0].Handle != 3 {
		t.Errorf("after a longer new head at 1:1: %v, want 1:2's packet 3", out)
	}
}
