package sfb

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newSFB(t *testing.T, args string) (*SFB, *qdisctest.Ctx) {
	t.Helper()
	q := &SFB{}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Second
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// send enqueues n packets of flow port (ECN field ecn), numbered on
// from *h, and returns their codes.
func send(q *SFB, ctx qdisc.Ctx, h *skb.Handle, port uint16, ecn uint8, n int) []qdisc.Code {
	rc := make([]qdisc.Code, n)
	for i := range n {
		*h++
		p := []skb.Packet{{Handle: *h, Len: 1000, ECN: ecn, GSOSegs: 1,
			Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: port, DstPort: 5001, Proto: 17}}}
		q.Enqueue(ctx, p, rc[i:i+1])
	}
	return rc
}

// tc's defaults (sfb_parse_opt sends its own struct: rehash 600 s, db
// 60 s, max 25 and target 20 from each other, increment 0.0005,
// decrement 0.00005) and the limit tx_queue_len, as tc prints them.
func TestDump(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"", "rehash 600s db 60s limit 1000p max 25p target 20p increment 0.000503548 decrement 4.57771e-05 penalty_rate 10pps penalty_burst 20p "},
		{"limit 100 target 40 increment 0.01 penalty_rate 100", "rehash 600s db 60s limit 100p max 50p target 40p increment 0.00999466 decrement 4.57771e-05 penalty_rate 100pps penalty_burst 20p "},
		{"max 10", "rehash 600s db 60s limit 1000p max 10p target 8p increment 0.000503548 decrement 4.57771e-05 penalty_rate 10pps penalty_burst 20p "},
	} {
		q, _ := newSFB(t, tt.args)
		if got := q.Dump(); got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.want)
		}
	}
	for _, tt := range []struct{ args, want string }{
		{"foo 1", `What is "foo"?`},
		{"increment 2", `Illegal "increment"`},
		{"limit x", `Illegal "limit"`},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &SFB{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// BLUE in the bins: a flow that keeps `target` packets queued raises
// its bins' probability by `increment` at each enqueue; once every bin
// of an unresponsive flow is at 1 it is rate limited (penalty_rate 10
// pps, burst 20: penaltydrop), while another flow, in other bins, is
// queued untouched; empty bins decay by `decrement`.
func TestBlueBins(t *testing.T) {
	q, ctx := newSFB(t, "target 5 max 2000 increment 0.25")
	var h skb.Handle
	send(q, ctx, &h, 1000, 0, 5) // fills the flow's bins to target
	rc := send(q, ctx, &h, 1000, 0, 200)
	st := q.Stats()
	pen := qdisctest.XStatOf(st.XStats, "penaltydrop")
	if pen == 0 || pen > 200-20 || qdisctest.XStatOf(st.XStats, "earlydrop") == 0 {
		t.Errorf("penaltydrop %d, earlydrop %d of 200: want the penalty box after the burst", pen, qdisctest.XStatOf(st.XStats, "earlydrop"))
	}
	if rc[len(rc)-1] != qdisc.XmitCN {
		t.Errorf("last code %v, want NET_XMIT_CN", rc[len(rc)-1])
	}
	// a flow in other bins goes through
	rc = send(q, ctx, &h, 2000, 0, 3)
	if rc[0] != qdisc.XmitSuccess || rc[2] != qdisc.XmitSuccess {
		t.Errorf("another flow's codes %v", rc)
	}
	// after the queue drains, an empty bin's probability falls
	for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil)) > 0 {
	}
	before := qdisctest.XStatOf(q.Stats().XStats, "maxqlen")
	send(q, ctx, &h, 1000, 0, 1)
	if before != 0 {
		t.Errorf("bins still count %d packets after the queue drained", before)
	}
	if q.bins[q.slot].bins[0][khash.HashPerturb(&skb.Packet{Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: 1000, DstPort: 5001, Proto: 17}}, q.bins[q.slot].perturbation)&bucketMask].pMark == 0 {
		t.Error("the flow's bin lost its whole probability to one decrement")
	}
}

// An ECN-capable flow is marked where a not-ECT one is dropped early.
func TestMarks(t *testing.T) {
	q, ctx := newSFB(t, "target 5 max 2000 increment 0.002")
	var h skb.Handle
	send(q, ctx, &h, 1000, 2, 150) // ECT(0): p stays under 0.5 (131 an enqueue)
	st := q.Stats()
	if qdisctest.XStatOf(st.XStats, "marked") == 0 || qdisctest.XStatOf(st.XStats, "earlydrop") != 0 {
		t.Errorf("marked %d, earlydrop %d: want marks, no drops below p 0.5", qdisctest.XStatOf(st.XStats, "marked"), qdisctest.XStatOf(st.XStats, "earlydrop"))
	}
}

// sfb conforms, behind the plugin boundary's wrapper, with its pfifo
// and with a grafted fq_codel.
func TestConformance(t *testing.T) {
	for _, args := range [][]string{nil, {"limit", "300", "target", "5", "max", "8"}} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&SFB{}) }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: args, Seed: 4, Pkts: 2000}) {
			t.Errorf("%v: %s: %v", args, r.Check, r.Err)
		}
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"sfb"}, "limit 10 max 2 target 1", "increment 1 decrement 1 penalty_rate 0", "rehash 1 db 1")
}
