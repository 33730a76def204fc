package sfq

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

// TestFlowClasses: sfq_walk lists the hash buckets that hold a slot as
// classes bucket+1, with sfq_dump_class_stats' slot qlen, backlog and
// allot; a slot that empties frees its bucket and leaves the walk.
func TestFlowClasses(t *testing.T) {
	q := newQ(t)
	var _ qdisc.FlowClasses = q
	ctx := qdisctest.NewCtx(0)
	var g pktGen
	enqueue(q, ctx, g.pinned(3, 1000), g.pinned(3, 400), g.pinned(200, 300))
	cs := q.FlowClasses()
	if err := qdisctest.CheckFlowClasses(cs, []qdisctest.FlowClassWant{{ID: 4, Qlen: 2, Backlog: 1400}, {ID: 201, Qlen: 1, Backlog: 300}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if len(c.XStats) != 1 || qdisctest.XStatOf(c.XStats, "allot") != 1514 {
			t.Errorf("class %s xstats %+v, want allot 1514 (the quantum)", c.ID, c.XStats)
		}
	}
	// The first dequeue serves one slot and charges its allot; drain
	// it and its bucket is free again.
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
	if len(out) != 1 {
		t.Fatal("no packet")
	}
	var allot int64
	for _, c := range q.FlowClasses() {
		allot += qdisctest.XStatOf(c.XStats, "allot")
	}
	if allot != 2*1514-int64(out[0].Len) {
		t.Errorf("allots sum %d after a %d-byte dequeue", allot, out[0].Len)
	}
	for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64}, nil)) > 0 {
	}
	if cs := q.FlowClasses(); len(cs) != 0 {
		t.Errorf("drained qdisc lists %+v", cs)
	}
}
