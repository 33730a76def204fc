package wire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
)

// Class dumps, class changes and leaf queries survive the frames.
func TestClassFramesRoundTrip(t *testing.T) {
	cs := []qdisc.Class{
		{ID: 0x10010, Parent: 0x10001, Leaf: true, Filters: true, Options: "prio 0 rate 1Mbit ", SentPackets: 5, SentBytes: 7000,
			Drops: 2, Overlimits: 3, XStats: []qdisc.XStat{qdisc.XUint("lended", 5), qdisc.XInt("tokens", -40)}},
		{ID: 0x10001, Parent: qdisc.RootClass, LeafStats: true},
		{ID: 0x10002, Parent: qdisc.RootClass, LeafQstats: true, SentPackets: 4, SentBytes: 6000},
		// A flow class (qdisc.FlowClasses): its own queue.
		{ID: 7, Qlen: 3, Backlog: 4500, Drops: 1, XStats: []qdisc.XStat{qdisc.XInt("deficit", -200), qdisc.XInt("drop_next", -1024)}},
	}
	var e Enc
	EncodeClasses(&e, cs)
	d := Dec{B: e.B}
	got, err := DecodeClasses(&d)
	if err != nil || !reflect.DeepEqual(got, cs) {
		t.Fatalf("%+v %v", got, err)
	}
	req := qdisc.ClassReq{ID: 0x10010, Parent: qdisc.RootClass, Create: true, Args: []string{"rate", "1mbit"}}
	e.Reset()
	EncodeClassReq(&e, req)
	d = Dec{B: e.B}
	if r := DecodeClassReq(&d); d.End() != nil || !reflect.DeepEqual(r, req) {
		t.Fatalf("%+v", r)
	}
	// A leaf enqueue answer: every code a leaf may give, the bypass
	// bit (netem's loss) kept for the parent; a code no qdisc answers.
	res := []qdisc.LeafResult{
		{Code: qdisc.XmitSuccess, Leaf: qdisc.LeafState{Qlen: 1, Backlog: 100}, Segs: 1},
		{Code: qdisc.XmitSuccess | qdisc.XmitBypass, Leaf: qdisc.LeafState{Qlen: 1, Backlog: 100}, Segs: 1},
		{Code: qdisc.XmitCN, Leaf: qdisc.LeafState{Qlen: 1, Backlog: 200}, Segs: 1},
		{Code: qdisc.XmitDrop, Leaf: qdisc.LeafState{Qlen: 1, Backlog: 200}, Segs: 4},
	}
	e.Reset()
	EncodeLeafEnqueue(&e, res)
	d = Dec{B: e.B}
	got2 := make([]qdisc.LeafResult, len(res))
	if err := DecodeLeafEnqueue(&d, got2); err != nil || !reflect.DeepEqual(got2, res) {
		t.Fatalf("leaf results %+v %v", got2, err)
	}
	res[2].Code = qdisc.XmitCN | qdisc.XmitBypass
	e.Reset()
	EncodeLeafEnqueue(&e, res)
	d = Dec{B: e.B}
	if err := DecodeLeafEnqueue(&d, got2); err == nil {
		t.Errorf("code %v decoded", res[2].Code)
	}
	// A bad xstat type, a truncated dump.
	e.Reset()
	cs[0].XStats[0].Type = 99
	EncodeClasses(&e, cs)
	d = Dec{B: e.B}
	if _, err := DecodeClasses(&d); err == nil || !strings.Contains(err.Error(), "of type 99") {
		t.Errorf("xstat type 99: %v", err)
	}
	d = Dec{B: e.B[:len(e.B)-3]}
	if _, err := DecodeClasses(&d); err == nil {
		t.Errorf("a truncated dump decoded")
	}
}
