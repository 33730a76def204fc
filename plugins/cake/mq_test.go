package cake

import (
	"fmt"
	"slices"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

// cake_mq's sync (cake_dequeue) reads each sibling's q.qlen and
// last_active without a lock: one Ctx.ReadSibling per other TX queue, by
// its queue, priced by the host as the lines those siblings' CPUs
// write, not as a flat flow scan; none within sync_time.
func TestSyncReadsSiblings(t *testing.T) {
	cases := []struct {
		size, own int // children, and the syncing child's TX queue
		want      []int
	}{
		{1, 0, nil},
		{2, 0, []int{1}},
		{4, 2, []int{0, 1, 3}},
		{8, 7, []int{0, 1, 2, 3, 4, 5, 6}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d children, queue %d", tc.size, tc.own), func(t *testing.T) {
			group := fmt.Sprintf("test-sync-%d-%d", tc.size, tc.own)
			kids := make([]*Cake, tc.size)
			for i := range kids {
				kids[i] = &Cake{}
				s := qdisc.Setup{MTU: 1514, Parent: fmt.Sprintf("8001:%x", i+1), Group: group, GroupSize: tc.size}
				if _, err := kids[i].Init(qdisctest.NewCtx(1), s, []string{"bandwidth", "2Gbit", "besteffort"}); err != nil {
					t.Fatal(err)
				}
			}
			q, ctx := kids[tc.own], qdisctest.NewCtx(1)
			ctx.T = 10 * syncTime
			q.mqSyncRate(ctx, ctx.T)
			if !slices.Equal(ctx.SiblingReads, tc.want) {
				t.Errorf("read the qdiscs of queues %v, want %v", ctx.SiblingReads, tc.want)
			}
			if n := ctx.WorkDone[qdisc.WorkFlowScan]; n != 0 {
				t.Errorf("%d flow scans reported for the siblings, want their lines", n)
			}
			ctx.SiblingReads = nil
			q.mqSyncRate(ctx, ctx.T+syncTime-1)
			if len(ctx.SiblingReads) != 0 {
				t.Errorf("read queues %v within sync_time", ctx.SiblingReads)
			}
		})
	}
}

// tc -s's capacity estimate is avg_peak_bandwidth: cake_init sets it to
// the bandwidth its options gave and a change leaves it (only
// autorate-ingress moves it); a cake_mq child is made by
// qdisc_create_dflt with no options and handed the shared configuration
// after (cake_config_replace), so it shows 0.
func TestCapacityEstimate(t *testing.T) {
	q := newCake(t, "bandwidth", "100mbit")
	if c := qdisctest.XStat(q, "capacity_estimate"); c != 100_000_000/8 {
		t.Errorf("cake bandwidth 100mbit: capacity estimate %d bytes/s", c)
	}
	if _, err := q.Change(qdisctest.NewCtx(1), []string{"bandwidth", "1gbit"}); err != nil {
		t.Fatal(err)
	}
	if c := qdisctest.XStat(q, "capacity_estimate"); c != 100_000_000/8 {
		t.Errorf("after a change to 1gbit: capacity estimate %d bytes/s, want the init's", c)
	}
	kid := &Cake{}
	s := qdisc.Setup{MTU: 1514, Parent: "8001:1", Group: "test-capacity", GroupSize: 1}
	if _, err := kid.Init(qdisctest.NewCtx(1), s, []string{"bandwidth", "2gbit"}); err != nil {
		t.Fatal(err)
	}
	if c := qdisctest.XStat(kid, "capacity_estimate"); c != 0 {
		t.Errorf("cake_mq child: capacity estimate %d bytes/s, want 0", c)
	}
}

// cake_clear_tin frees what it purges with kfree_skb_reason alone: the
// packets leave (QUEUE_PURGE) but the qdisc's drop counter, tc -s's
// dropped, does not count them.
func TestPurgeCountsNoDrop(t *testing.T) {
	q := newCake(t, "diffserv4", "bandwidth", "100mbit")
	ctx := qdisctest.NewCtx(1)
	var next uint64
	feed(q, ctx, []flowSpec{{src: 1, dst: 2, port: 1, size: 500}, {src: 1, dst: 3, port: 2, dscp: 8, size: 500}}, 5, &next)
	if _, err := q.Change(ctx, []string{"besteffort"}); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); len(ctx.Dropped) != 5 || st.Qlen != 5 || st.Drops != 0 {
		t.Errorf("after besteffort: %d purged, qlen %d, dropped %d (want 5, 5, 0)", len(ctx.Dropped), st.Qlen, st.Drops)
	}
}
