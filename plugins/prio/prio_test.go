package prio

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

func newPrio(t *testing.T, args string) (*Prio, *qdisctest.Ctx, qdisctest.Options) {
	t.Helper()
	q := &Prio{}
	o := qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}
	ctx := qdisctest.NewCtx(1)
	if _, err := qdisctest.Attach(ctx, q, o); err != nil {
		t.Fatal(err)
	}
	return q, ctx, o
}

// The dump as tc prints it (q_prio.c's prio_print_opt: "bands 3 priomap
// 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1", the pfifo_fast map by default).
func TestDump(t *testing.T) {
	q, _, _ := newPrio(t, "")
	if got, want := q.Dump(), "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	// "multiqueue" reaches the kernel as TCA_PRIO_MQ, which prio_tune
	// ignores: the same qdisc, the same dump.
	q, _, _ = newPrio(t, "bands 4 priomap 3 3 2 2 1 1 0 0 multiqueue")
	if got, want := q.Dump(), "bands 4 priomap 3 3 2 2 1 1 0 0 1 1 1 1 1 1 1 1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if cs := q.Classes(); len(cs) != 4 || cs[0].ID.String() != "1:1" || cs[3].ID.String() != "1:4" || cs[0].Parent.String() != "1:" || !cs[0].LeafStats {
		t.Errorf("classes %+v, want 1:1..1:4 under 1:, with their leaves' stats", cs)
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		args, want string
		class      error
	}{
		{"bands 1", "bands 1: prio has 2 to 16", qdisc.ErrKernel},
		{"bands 17", "bands 17: prio has 2 to 16", qdisc.ErrKernel},
		{"bands 2", "priomap[1] is band 2 of 2 bands", qdisc.ErrKernel},
		{"bands 3 priomap 0 1 3", `"priomap" element 3 is out of bands (3)`, qdisc.ErrParse},
		{"priomap 0 priomap 1", "duplicate priomap", qdisc.ErrParse},
		{"bands x", `Illegal "bands" "x"`, qdisc.ErrParse},
		{"flows 3", `What is "flows"?`, qdisc.ErrParse},
	} {
		_, err := (&Prio{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q: %v, want %q of class %v", tt.args, err, tt.want, tt.class)
		}
	}
	q, ctx, _ := newPrio(t, "")
	if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: 0x10001}); err == nil || !strings.Contains(err.Error(), `Qdisc "prio" is classless`) {
		t.Errorf("class change: %v, want tc's refusal", err)
	}
}

// prio_classify: skb->priority whose major is the qdisc's names the band
// (1:2 is band 1), any other priority goes through the priomap
// (TC_PRIO_*, low 4 bits); dequeue serves band 0 first, always.
func TestStrictPriority(t *testing.T) {
	q, ctx, _ := newPrio(t, "")
	prios := []uint32{
		0,       // TC_PRIO_BESTEFFORT -> band 1
		6,       // TC_PRIO_INTERACTIVE -> band 0
		0x10003, // 1:3 -> band 2
		1,       // TC_PRIO_FILLER -> band 2
		7,       // TC_PRIO_CONTROL -> band 0
		0x20001, // another qdisc's major: priomap[0] -> band 1
		0x10001, // 1:1 -> band 0
	}
	batch := make([]skb.Packet, len(prios))
	for i, p := range prios {
		batch[i] = skb.Packet{Handle: skb.Handle(i + 1), Len: 100, Priority: p}
	}
	rc := make([]qdisc.Code, len(batch))
	q.Enqueue(ctx, batch, rc)
	var order []int
	for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 16, Bytes: 1 << 40}, nil) {
		order = append(order, int(p.Handle))
	}
	// band 0: 2, 5, 7; band 1: 1, 6; band 2: 3, 4.
	if got, want := order, []int{2, 5, 7, 1, 6, 3, 4}; !equal(got, want) {
		t.Errorf("dequeue order %v, want %v", got, want)
	}
	if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 {
		t.Errorf("after draining: %+v", st)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A band that holds packets is served before any later one even while
// packets keep arriving in the later band.
func TestBandZeroFirst(t *testing.T) {
	q, ctx, _ := newPrio(t, "bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1")
	h := skb.Handle(0)
	send := func(prio uint32, n int) {
		batch := make([]skb.Packet, n)
		for i := range batch {
			h++
			batch[i] = skb.Packet{Handle: h, Len: 1000, Priority: prio}
		}
		q.Enqueue(ctx, batch, make([]qdisc.Code, n))
	}
	send(0, 50) // band 1
	send(6, 10) // band 0
	got := q.Dequeue(ctx, qdisc.DequeueReq{Max: 12, Bytes: 1 << 40}, nil)
	for i, p := range got {
		if (i < 10) != (p.Handle > 50) {
			t.Fatalf("packet %d of the bulk is %#x: band 0's ten must come first", i, p.Handle)
		}
	}
}

// Growing and shrinking bands changes the classes; the dropped bands'
// packets are counted as dropped.
func TestChangeBands(t *testing.T) {
	q, ctx, _ := newPrio(t, "bands 4 priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3")
	batch := []skb.Packet{{Handle: 1, Len: 100}, {Handle: 2, Len: 100}}
	q.Enqueue(ctx, batch, make([]qdisc.Code, 2))
	// tc sends its whole tc_prio_qopt: "bands 2" comes with tc's
	// default priomap, which names band 2.
	if _, err := q.Change(ctx, strings.Fields("bands 2")); err == nil || q.bands != 4 {
		t.Fatalf("bands 2 with the default priomap: %v, bands %d (a refused change changes nothing)", err, q.bands)
	}
	if _, err := q.Change(ctx, strings.Fields("bands 2 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1")); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Qlen != 0 || st.Drops != 2 || len(q.Classes()) != 2 {
		t.Errorf("after shrinking to 2 bands: %+v, %d classes", st, len(q.Classes()))
	}
}

func TestConformance(t *testing.T) {
	for _, args := range []string{"", "bands 2 priomap 1 0 1 0 1 0 1 0", "bands 16"} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&Prio{}) }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(args), Seed: 5, Limit: 3000}) {
			t.Errorf("%q: %s: %v", args, r.Check, r.Err)
		}
	}
}

// filterCtx is the suite's context with one filter verdict for every
// packet (the suite itself has no filters).
type filterCtx struct {
	*qdisctest.Ctx
	res qdisc.FilterResult
}

func (x filterCtx) Classify(*skb.Packet, qdisc.ClassID) qdisc.FilterResult { return x.res }

// prio_classify with filters: a filter's class names the band (out of
// range: priomap[0]); no match falls back on the priomap; TC_ACT_SHOT
// drops the packet, counted in the qdisc's drops, but prio_enqueue's
// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS reaches the sender as
// NET_XMIT_SUCCESS (dev_qdisc_enqueue masks it).
func TestFilterVerdicts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		res   qdisc.FilterResult
		prio  uint32
		band  int // -1: dropped
		rc    qdisc.Code
		drops uint64
	}{
		{"shot", qdisc.FilterResult{Verdict: qdisc.VerdictShot}, 6, -1, qdisc.XmitSuccess | qdisc.XmitBypass, 1},
		{"no match", qdisc.FilterResult{}, 6, 0, qdisc.XmitSuccess, 0},
		{"class 1:3", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10003}, 6, 2, qdisc.XmitSuccess, 0},
		{"class 1:9", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10009}, 6, 1, qdisc.XmitSuccess, 0},
		{"own major skips filters", qdisc.FilterResult{Verdict: qdisc.VerdictShot}, 0x10001, 0, qdisc.XmitSuccess, 0},
	} {
		q, ctx, _ := newPrio(t, "")
		x := filterCtx{ctx, tt.res}
		rc := []qdisc.Code{qdisc.XmitSuccess}
		q.Enqueue(x, []skb.Packet{{Handle: 7, Len: 100, Priority: tt.prio}}, rc)
		band := -1
		for b := 0; b < q.bands; b++ {
			if q.leaves.Get(q.class(b)).Qlen > 0 {
				band = b
			}
		}
		_, dropped := ctx.Dropped[7]
		if rc[0] != tt.rc || q.Stats().Drops != tt.drops || band != tt.band || dropped != (tt.band < 0) {
			t.Errorf("%s: rc %v drops %d band %d dropped %v, want %v %d %d %v", tt.name, rc[0], q.Stats().Drops, band, dropped, tt.rc, tt.drops, tt.band, tt.band < 0)
		}
	}
}

// peekDrops is a leaf whose peek dequeues and drops all it holds, as
// qdisc_peek_dequeued does over a CoDel leaf that drops.
type peekDrops struct{ n int }

func init() {
	qdisc.Register("priotest_peekdrops", "test leaf: peek drops all", func() qdisc.Qdisc { return &peekDrops{} })
}

func (d *peekDrops) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{}, nil
}
func (d *peekDrops) Enqueue(_ qdisc.Ctx, b []skb.Packet, _ []qdisc.Code) { d.n += len(b) }
func (d *peekDrops) Dump() string                                        { return "" }
func (d *peekDrops) Dequeue(_ qdisc.Ctx, _ qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return out
}
func (d *peekDrops) Stats() qdisc.Stats { return qdisc.Stats{Qlen: d.n, Backlog: int64(d.n) * 100} }
func (d *peekDrops) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	for ; d.n > 0; d.n-- {
		ctx.DequeueDrop(skb.Handle(d.n), skb.DropQdiscDrop)
	}
	return skb.Packet{}, false
}

// A band whose leaf drops in its peek: prio_peek's answer comes from
// the next band, and the drops reach prio's counters and qlen at once
// (the leaf's qdisc_tree_reduce_backlog), not at a later dequeue.
func TestPeekDropsCounted(t *testing.T) {
	q := &Prio{}
	ctx := qdisctest.NewCtx(1)
	o := qdisctest.Options{Args: strings.Fields("bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1"), Setup: qdisctest.DefaultSetup(), Leaves: []string{"parent 1:1 handle 10: priotest_peekdrops"}}
	if _, err := qdisctest.Attach(ctx, q, o); err != nil {
		t.Fatal(err)
	}
	q.Enqueue(ctx, []skb.Packet{{Handle: 1, Len: 100, Priority: 0x10001}, {Handle: 2, Len: 100, Priority: 0x10001}, {Handle: 3, Len: 100, Priority: 0x10002}}, make([]qdisc.Code, 3))
	p, ok := q.Peek(ctx)
	if !ok || p.Handle != 3 {
		t.Fatalf("peek gave %v %v, want band 1's packet 3", p.Handle, ok)
	}
	if st := q.Stats(); st.Qlen != 1 || st.Drops != 2 {
		t.Errorf("after the peek: %+v, want qlen 1 and 2 drops", st)
	}
}
