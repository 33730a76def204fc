package drr

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
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
	if _, dropped := ctx.Dropped[999]; rc[0] != qdisc.XmitSuccess || q.Stats().Drops != 1 || !dropped {
		t.Errorf("an unclassified packet: rc %v, drops %d", rc[0], q.Stats().Drops)
	}
	cs := q.Classes()
	if len(cs) != 2 || cs[0].Options != "quantum 1514b " || cs[1].Options != "quantum 4542b " {
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
}
