package cake

import (
	"testing"
	"time"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
)

// TestFlowClasses: cake_walk lists the flows on a flowchain, tin by tin
// in tin_order (diffserv3 dumps Bulk first, then Best Effort), as
// classes tin*CAKE_QUEUES + flow + 1, each with cake_dump_class_stats'
// qlen, backlog, drops and class xstats.
func TestFlowClasses(t *testing.T) {
	q := newCake1(t) // diffserv3
	var _ qdisc.FlowClasses = q
	ctx := qdisctest.NewCtx(1)
	if cs := q.FlowClasses(); len(cs) != 0 {
		t.Fatalf("empty qdisc lists %d classes", len(cs))
	}
	var next uint64
	// Two best-effort packets of one flow, one CS1 (bulk) packet.
	feed(q, ctx, []flowSpec{{src: 1, dst: 2, port: 5, size: 1000}}, 2, &next)
	feed(q, ctx, []flowSpec{{src: 3, dst: 4, port: 6, dscp: 8, size: 700}}, 1, &next)
	cs := q.FlowClasses()
	if len(cs) != 2 {
		t.Fatalf("%d classes, want 2: %+v", len(cs), cs)
	}
	bulk, be := cs[0], cs[1]
	if m := bulk.ID.Minor(); m < 1 || m > cakeQueues || bulk.Qlen != 1 || bulk.Backlog != 700 {
		t.Errorf("bulk flow class %s qlen %d backlog %d, want 1:1..1:400 (tin_order 0) 1 700", bulk.ID, bulk.Qlen, bulk.Backlog)
	}
	if m := be.ID.Minor(); m <= cakeQueues || m > 2*cakeQueues || be.Qlen != 2 || be.Backlog != 2000 {
		t.Errorf("best effort flow class %s qlen %d backlog %d, want 1:401..1:800 (tin_order 1) 2 2000", be.ID, be.Qlen, be.Backlog)
	}
	b := q.tins[q.tinOrder[1]]
	f := &b.flows[int(be.ID.Minor()-1)%cakeQueues]
	if f.q.Len() != 2 {
		t.Fatalf("class %s is not the flow holding the packets", be.ID)
	}
	keys := qdisctest.XStatKeys(be.XStats)
	if len(keys) != 4 || keys[0] != "deficit" || keys[1] != "count" || keys[2] != "dropping" || keys[3] != "blue_prob" {
		t.Errorf("xstats %v, want deficit count dropping blue_prob", keys)
	}
	if got := qdisctest.XStatOf(be.XStats, "deficit"); got != int64(f.deficit) || got <= 0 {
		t.Errorf("deficit %d, want the flow's %d", got, f.deficit)
	}
	// COBALT dropping, BLUE probability: drop_next is now - drop_next
	// (negative while ahead), blue_timer now - blue_timer, in us.
	ctx.T = sim.Time(10 * time.Millisecond)
	q.Enqueue(ctx, nil, nil)
	f.cvars.dropping, f.cvars.dropNext = true, ctx.T+sim.Time(3*time.Millisecond)
	f.cvars.pDrop, f.cvars.blueTimer = 12345, ctx.T-sim.Time(2500*time.Microsecond)
	f.dropped = 4
	be = q.FlowClasses()[1]
	if qdisctest.XStatOf(be.XStats, "dropping") != 1 || qdisctest.XStatOf(be.XStats, "drop_next") != -3000 ||
		qdisctest.XStatOf(be.XStats, "blue_prob") != 12345 || qdisctest.XStatOf(be.XStats, "blue_timer") != 2500 || be.Drops != 4 {
		t.Errorf("dropping flow: drops %d %+v", be.Drops, be.XStats)
	}
}
