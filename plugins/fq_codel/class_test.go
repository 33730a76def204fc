package fqcodel

import (
	"testing"
	"time"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/plugins/codel"
)

// TestFlowClasses: fq_codel_walk lists the flows on a flowchain as
// classes idx+1 (fq_codel_dump_class), with fq_codel_dump_class_stats'
// qlen, backlog and tc_fq_codel_cl_stats; an idle flow is left out.
func TestFlowClasses(t *testing.T) {
	q := newQ(t)
	var _ qdisc.FlowClasses = q
	ctx := qdisctest.NewCtx(1)
	if cs := q.FlowClasses(); len(cs) != 0 {
		t.Fatalf("empty qdisc lists %d classes", len(cs))
	}
	g := pktGen{}
	enqueue(q, ctx, g.pkt(6, 1024, 1000), g.pkt(6, 1024, 500), g.pkt(99, 1024, 300))
	cs := q.FlowClasses()
	if err := qdisctest.CheckFlowClasses(cs, []qdisctest.FlowClassWant{{ID: 7, Qlen: 2, Backlog: 1500}, {ID: 100, Qlen: 1, Backlog: 300}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if got := qdisctest.XStatOf(c.XStats, "deficit"); got != 1514 {
			t.Errorf("class %s deficit %d, want the quantum 1514", c.ID, got)
		}
		keys := qdisctest.XStatKeys(c.XStats)
		if len(keys) != 6 || keys[0] != "deficit" || keys[3] != "ldelay" || keys[5] != "drop_next" {
			t.Errorf("class %s xstats %v", c.ID, keys)
		}
	}
	// Dequeue the first flow's head 3 ms later: its deficit pays for
	// it and ldelay is the sojourn (us).
	ctx.T = sim.Time(3 * time.Millisecond)
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil)
	if len(out) != 1 || out[0].Len != 1000 {
		t.Fatalf("dequeued %+v", out)
	}
	c := q.FlowClasses()[0]
	if c.ID != 7 || c.Qlen != 1 || c.Backlog != 500 || qdisctest.XStatOf(c.XStats, "deficit") != 514 {
		t.Errorf("after a dequeue: %+v", c)
	}
	if ld := qdisctest.XStatOf(c.XStats, "ldelay"); ld < 2990 || ld > 3000 {
		t.Errorf("ldelay %d us, want ~3000", ld)
	}
	// In CoDel's dropping state: dropping 1 and drop_next in us from
	// the last call, negative once past (as fq_codel_dump_class_stats).
	f := &q.flows[6]
	f.cvars.Dropping = true
	f.cvars.DropNext = q.now + codel.US2Time(2048)
	c = q.FlowClasses()[0]
	if qdisctest.XStatOf(c.XStats, "dropping") != 1 || qdisctest.XStatOf(c.XStats, "drop_next") != 2048 {
		t.Errorf("dropping: %+v", c.XStats)
	}
	f.cvars.DropNext = q.now - codel.US2Time(1024)
	if got := qdisctest.XStatOf(q.FlowClasses()[0].XStats, "drop_next"); got != -1024 {
		t.Errorf("drop_next past: %d, want -1024", got)
	}
	f.cvars.Dropping = false
	// Drained flows leave the walk once fq_codel_dequeue unlinks them.
	for len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64}, nil)) > 0 {
	}
	if cs := q.FlowClasses(); len(cs) != 0 {
		t.Errorf("drained qdisc lists %+v", cs)
	}
}
