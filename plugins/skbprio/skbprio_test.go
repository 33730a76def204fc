package skbprio

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// Highest priority first; when full, an arrival above the lowest
// priority held pushes that queue's tail out (NET_XMIT_CN), one at or
// below it is dropped itself; priorities of 63 and above share a queue.
func TestPriorities(t *testing.T) {
	q := &SKBPrio{}
	ctx := qdisctest.NewCtx(1)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields("limit 4"), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	var h skb.Handle
	send := func(prio uint32) qdisc.Code {
		h++
		rc := make([]qdisc.Code, 1)
		q.Enqueue(ctx, []skb.Packet{{Handle: h, Len: 100, Priority: prio, GSOSegs: 1}}, rc)
		return rc[0]
	}
	for _, p := range []uint32{3, 5, 3, 1} {
		send(p)
	}
	if rc := send(1); rc != qdisc.XmitDrop { // the lowest: dropped itself
		t.Errorf("an arrival at the lowest priority when full: %v", rc)
	}
	if rc := send(0x10010); rc != qdisc.XmitCN || ctx.Dropped[4] != skb.DropQdiscDrop { // priority 63 pushes the 1 out
		t.Errorf("a high arrival when full: %v, dropped %v", rc, ctx.Dropped)
	}
	var got []uint32
	for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 30}, nil) {
		got = append(got, p.Priority)
	}
	if want := []uint32{0x10010, 5, 3, 3}; len(got) != 4 || got[0] != want[0] || got[1] != 5 || got[3] != 3 {
		t.Errorf("dequeue order %v, want %v", got, want)
	}
	if q.Dump() != "limit 4 " || q.Stats().Drops != 2 {
		t.Errorf("dump %q drops %d", q.Dump(), q.Stats().Drops)
	}
}

func TestConformance(t *testing.T) {
	for _, args := range [][]string{nil, {"limit", "300"}} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&SKBPrio{}) }
		o := qdisctest.Options{Args: args, Seed: 5, Pkts: 2000}
		if args != nil {
			o.Limit = 300
		}
		for _, r := range qdisctest.Run(f, o) {
			t.Errorf("%v: %s: %v", args, r.Check, r.Err)
		}
	}
	for _, tt := range []struct{ args, want string }{
		{"limit x", `skbprio: Illegal "limit" value:"x"`},
		{"foo", `skbprio: unknown parameter "foo"`},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &SKBPrio{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"skbprio"}, "limit 1", "limit 0", "")
}
