package drr

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/netem" // a leaf that drops what it says it took
)

func newDRR(t *testing.T, classes ...string) (*DRR, *qdisctest.Ctx) {
	t.Helper()
	q := &DRR{}
	ctx := qdisctest.NewCtx(1)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Classes: classes}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// Classes by skb->priority; each class sends its quantum's worth per
// round: quanta 1514 and 4542 share 1:3 with packets of 1514 bytes.
func TestQuantaShare(t *testing.T) {
	q, ctx := newDRR(t, "parent 1: classid 1:1 drr", "parent 1: classid 1:2 drr quantum 4542")
	var batch []skb.Packet
	for i := 0; i < 400; i++ {
		batch = append(batch, skb.Packet{Handle: skb.Handle(i + 1), Len: 1514, Priority: uint32(0x10001 + i%2)})
	}
	rc := make([]qdisc.Code, len(batch))
	q.Enqueue(ctx, batch, rc)
	n := map[uint32]int{}
	for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 120, Bytes: 1 << 40}, nil) {
		n[p.Priority]++
	}
	if n[0x10001] != 30 || n[0x10002] != 90 {
		t.Errorf("of 120 packets, 1:1 sent %d and 1:2 %d, want 30 and 90", n[0x10001], n[0x10002])
	}
	// A packet for no class is dropped (drr has no default): counted,
	// but the sender sees NET_XMIT_SUCCESS (__NET_XMIT_BYPASS masked).
	rc = rc[:1]
	q.Enqueue(ctx, []skb.Packet{{Handle: 999, Len: 100, Priority: 0x10009}}, rc)
	if _, dropped := ctx.Dropped[999]; rc[0] != qdisc.XmitSuccess|qdisc.XmitBypass || q.Stats().Drops != 1 || !dropped {
		t.Errorf("an unclassified packet: rc %v, drops %d", rc[0], q.Stats().Drops)
	}
	// drr_dump_class_stats: the counters are the leaf's (LeafStats), so a
	// leaf's own drops (fq_codel's, codel's at dequeue) show on the class.
	cs := q.Classes()
	if len(cs) != 2 || cs[0].Options != "quantum 1514b " || cs[1].Options != "quantum 4542b " || !cs[0].LeafStats || !cs[1].LeafStats {
		t.Errorf("classes %+v", cs)
	}
}

func TestErrors(t *testing.T) {
	if _, err := (&DRR{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), []string{"quantum", "1"}); !errors.Is(err, qdisc.ErrParse) {
		t.Errorf("qdisc options: %v", err)
	}
	q, ctx := newDRR(t)
	for _, tt := range []struct{ args, want string }{
		{"quantum 0", "quantum cannot be zero"},
		{"quantum big", `Illegal "quantum"`},
		{"weight 3", `What is "weight"?`},
	} {
		err := q.ChangeClass(ctx, qdisc.ClassReq{ID: 0x10001, Parent: qdisc.RootClass, Create: true, Args: strings.Fields(tt.args)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestConformance(t *testing.T) {
	f := func() qdisc.Qdisc { return wire.WrapQdisc(&DRR{}) }
	// With classes the suite's packets carry skb->priority 1:1..1:8:
	// classes 1:1..1:7 catch all but 1:8, which drr drops.
	var classes []string
	for i := 1; i <= 7; i++ {
		classes = append(classes, "parent 1: classid 1:"+string(rune('0'+i))+" drr quantum "+string(rune('0'+i))+"00")
	}
	for _, r := range qdisctest.Run(f, qdisctest.Options{Classes: classes, Seed: 4}) {
		t.Errorf("%s: %v", r.Check, r.Err)
	}
	// Leaves without a peek of their own: drr_dequeue peeks them
	// (qdisc_peek_dequeued keeps the packet for their next dequeue).
	leaves := []string{"parent 1:1 handle 11: netem delay 1ms", "parent 1:2 handle 12: netem rate 100mbit"}
	for _, r := range qdisctest.Run(f, qdisctest.Options{Classes: classes, Leaves: leaves, Seed: 4}) {
		t.Errorf("netem leaves: %s: %v", r.Check, r.Err)
	}
}

// dropAll is a test leaf whose dequeue drops everything it holds (as a
// codel child's dequeue may) and gives nothing; its peek shows the head.
type dropAll struct{ q []skb.Packet }

func init() {
	qdisc.Register("drrtest_dropall", "test leaf: dequeue drops all", func() qdisc.Qdisc { return &dropAll{} })
}

func (d *dropAll) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{}, nil
}
func (d *dropAll) Enqueue(_ qdisc.Ctx, b []skb.Packet, _ []qdisc.Code) { d.q = append(d.q, b...) }
func (d *dropAll) Dump() string                                        { return "" }
func (d *dropAll) Peek(qdisc.Ctx) (skb.Packet, bool) {
	if len(d.q) == 0 {
		return skb.Packet{}, false
	}
	return d.q[0], true
}
func (d *dropAll) Dequeue(ctx qdisc.Ctx, _ qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	for _, p := range d.q {
		ctx.DequeueDrop(p.Handle, skb.DropQdiscDrop)
	}
	d.q = d.q[:0]
	return out
}

// peekDropAll is dropAll whose peek dequeues, as qdisc_peek_dequeued
// does over a CoDel leaf: that dequeue drops all it holds.
type peekDropAll struct{ dropAll }

func init() {
	qdisc.Register("drrtest_peekdropall", "test leaf: peek drops all", func() qdisc.Qdisc { return &peekDropAll{} })
}

func (d *peekDropAll) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	d.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
	return skb.Packet{}, false
}

func (d *dropAll) Reset(ctx qdisc.Ctx) {
	for _, p := range d.q {
		ctx.Drop(p.Handle, skb.DropQueuePurge)
	}
	d.q = d.q[:0]
}
func (d *dropAll) Stats() qdisc.Stats {
	var b int64
	for _, p := range d.q {
		b += int64(p.Len)
	}
	return qdisc.Stats{Qlen: len(d.q), Backlog: b}
}

// A class whose leaf holds nothing is never left on the active list:
// not after a leaf dropped the packet it answered NET_XMIT_SUCCESS for
// (drr_enqueue activates only on NET_XMIT_SUCCESS itself, and a leaf's
// __NET_XMIT_BYPASS is not that), nor after a leaf's dequeue dropped all
// it held (drr_qlen_notify), nor after its peek did (a dequeuing peek,
// qdisc_peek_dequeued over CoDel: the leaf tells drr inside the peek).
// Any would have stalled drr: the head of
// the active list had nothing to peek, so class 1:2 never sent.
func TestEmptyLeafNotActive(t *testing.T) {
	for _, tt := range []struct {
		name, leaf string
		calls      int // dequeue calls until 1:2's packet, as drr_dequeue gives NULL once
	}{
		{"netem loss", "parent 1:1 handle 10: netem loss 100%", 1},
		{"dequeue drops all", "parent 1:1 handle 10: drrtest_dropall", 2},
		{"peek drops all", "parent 1:1 handle 10: drrtest_peekdropall", 2},
	} {
		q := &DRR{}
		ctx := qdisctest.NewCtx(1)
		o := qdisctest.Options{Classes: []string{"parent 1: classid 1:1 drr", "parent 1: classid 1:2 drr"}, Leaves: []string{tt.leaf}}
		if _, err := qdisctest.Attach(ctx, q, o); err != nil {
			t.Fatal(err)
		}
		rc := make([]qdisc.Code, 2)
		q.Enqueue(ctx, []skb.Packet{{Handle: 1, Len: 100, Priority: 0x10001}, {Handle: 2, Len: 100, Priority: 0x10002}}, rc)
		var got []skb.Packet
		for i := 0; i < tt.calls; i++ {
			got = q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, got)
		}
		if len(got) != 1 || got[0].Handle != 2 || q.round.Len() != 0 {
			t.Errorf("%s: dequeued %v, %d classes active; want 1:2's packet and none", tt.name, got, q.round.Len())
		}
		if st := q.Stats(); st.Qlen != 0 || st.Drops != 1 {
			t.Errorf("%s: %+v, want empty with 1 drop", tt.name, st)
		}
	}
}
