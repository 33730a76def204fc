package pie

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// fq_pie_classify's filter step is the kernel's code, reached only by a
// context that holds filters for it (a test's): the host gives it none,
// as fq_pie has no class ops to attach them (Info has no HasBlock). A
// result's minor names the flow; out of range or a drop action drops,
// counted, with NET_XMIT_SUCCESS; skb->priority comes first.
func TestFQPIEFilterStep(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec string
		prio uint32
		flow int // -1: dropped
	}{
		{"classid 1:5", "matchall classid 1:5", 0, 4},
		{"classid 1:17 of 16 flows", "matchall classid 1:11", 0, -1},
		{"a drop action", "matchall action drop", 0, -1},
		{"priority 1:3 first", "matchall classid 1:5", 1<<16 | 3, 2},
	} {
		ctx := qdisctest.NewCtx(1)
		q, _ := qdisc.New("fq_pie")
		info, err := ctx.Init(q, qdisctest.DefaultSetup(), strings.Fields("flows 16"))
		if err != nil || info.Flags&qdisc.HasBlock != 0 {
			t.Fatalf("fq_pie says it has a filter block")
		}
		f, err := cls.Load([]string{"parent 1: protocol all pref 1 handle 0x1 " + tt.spec})
		if err != nil {
			t.Fatal(err)
		}
		ctx.Filters = f
		rc := make([]qdisc.Code, 1)
		q.Enqueue(ctx, []skb.Packet{{Handle: 1, Len: 1000, TrueSize: 2048, GSOSegs: 1, Priority: tt.prio, Hash: 0x12345678}}, rc)
		fq := q.(*FQPIE)
		got := -1
		for i := range fq.flows {
			if fq.flows[i].qlen > 0 {
				got = i
			}
		}
		dropped, want := 0, qdisc.XmitSuccess
		if tt.flow < 0 {
			dropped, want = 1, qdisc.XmitSuccess|qdisc.XmitBypass
		}
		if got != tt.flow || rc[0] != want || fq.Stats().Drops != uint64(dropped) || len(ctx.Dropped) != dropped {
			t.Errorf("%s: flow %d, %v, drops %d; want flow %d, %v, %d dropped", tt.name, got, rc[0], fq.Stats().Drops, tt.flow, want, dropped)
		}
	}
}
