package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// bulk_dequeue: before 4d202a0d1 a qdisc that is not TCQ_F_ONETXQUEUE (a
// root over several queues) gives one skb per qdisc_restart; after it,
// try_bulk_dequeue_skb_slow adds up to 8 of the same txq and parks the
// first of another in skb_bad_txq. An mq child bulks by BQL either way.
func TestBulkDequeueToggle(t *testing.T) {
	cases := []struct {
		name, bulk string
		qd         []string
		queues     []uint16 // the txq of each skb enqueued, in order
		want       int      // the first bulk
		bad        bool     // an skb parked in skb_bad_txq
	}{
		{"root, onetxqueue", "onetxqueue", []string{"pfifo"}, []uint16{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1, false},
		{"root, all", "all", []string{"pfifo"}, []uint16{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 9, false},
		{"root, all, txq changes", "all", []string{"pfifo"}, []uint16{0, 0, 0, 1, 0, 0}, 3, true},
		{"mq child, onetxqueue", "onetxqueue", []string{"mq", "pfifo"}, []uint16{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 12, false},
		{"mq child, all", "all", []string{"mq", "pfifo"}, []uint16{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 12, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "4.7", "bulk_dequeue", tc.bulk), 2, "test", 2, tc.qd...)
			q := h.dev.Queues[0].qdisc
			for _, txq := range h.dev.Queues {
				txq.DQL.Limit, txq.DQL.AdjLimit = 1<<20, 1<<20 // room for any bulk BQL allows
			}
			got, packets := -1, -1
			var bad bool
			h.on(0, 0, func(c *sim.CPU) {
				var toFree skb.List
				for i, qi := range tc.queues {
					s := h.skb(c, i)
					s.Queue = qi
					h.enqueueOffered(c, q, s, &toFree)
				}
				var list skb.List
				list, _, packets = h.n.dequeueSkb(c, q, 64)
				got, bad = list.Len, q.skbBadTxq != nil
				for s := list.Pop(); s != nil; s = list.Pop() {
					h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
				}
			})
			h.run(sim.Millisecond)
			if got != tc.want || packets != got {
				t.Errorf("first bulk %d skbs (packets %d), want %d", got, packets, tc.want)
			}
			if bad != tc.bad {
				t.Errorf("skb_bad_txq holds an skb: %v, want %v", bad, tc.bad)
			}
		})
	}
}

// A bad value is one line naming the toggle and the values it takes.
func TestBulkDequeueBadValue(t *testing.T) {
	cfg := profile(t, "6.18")
	err := cfg.Set("bulk_dequeue", "some")
	if err == nil || err.Error() != `toggle bulk_dequeue: "some" is not onetxqueue or all` {
		t.Fatalf("got %v", err)
	}
}

// Before 29b86cdac00a (4.16) sch_direct_xmit returned qdisc_qlen(q), so
// __qdisc_run stopped when it sent the last skb; since, it returns true
// and the loop's next qdisc_restart dequeues from an empty qdisc. Three
// skbs, one a restart (a root pfifo before 4d202a0d1): three dequeues
// in 4.7, four in 6.18 (with 4.7's one-skb restarts).
func TestDirectXmitReturnsQlen(t *testing.T) {
	for _, tc := range []struct {
		prof     string
		dequeues int
	}{{"4.7", 3}, {"6.18", 4}} {
		t.Run(tc.prof, func(t *testing.T) {
			cfg := profile(t, tc.prof, "bulk_dequeue", "onetxqueue")
			h := newHarness(t, cfg, 2, "test", 2, "pfifo")
			q := h.dev.Queues[0].qdisc
			for _, txq := range h.dev.Queues {
				txq.DQL.Limit, txq.DQL.AdjLimit = 1<<20, 1<<20 // BQL never stops the queue
			}
			h.n.Prof = &DrainProfile{}
			h.on(0, 0, func(c *sim.CPU) {
				h.fill(c, q, 3)
				h.runOnce(c, q)
			})
			h.run(sim.Millisecond)
			if got := int(h.n.Prof.Calls[PhDequeue]); got != tc.dequeues || q.SentPkts != 3 {
				t.Errorf("%d dequeues, %d sent; want %d dequeues, 3 sent", got, q.SentPkts, tc.dequeues)
			}
		})
	}
}
