package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// BQL against ice's ring, with the qdisc always backlogged: the wire
// sends a posted bulk in a few us, so each 50 us TX completion (ice's
// static ITR, adaptive-tx off) finds the queue empty after it was over
// its limit, and dql_completed's
// starvation rule raises the limit, until the ring (ice_maybe_stop_tx's
// DESC_NEEDED) stops the queue before BQL does. Then a bulk bounded by
// BQL's bytes alone (before 0345552a653c) is longer than the room left
// in the ring, and its rest is requeued; with the quota a bulk is at
// most 1 + the remaining quota (BQL's limit outgrows the ring all the
// same: the quota bounds the bulk, not the limit).
func TestBQLOutgrowsRing(t *testing.T) {
	const pktLen = 162 // h.skb's
	for _, tc := range []struct {
		name     string
		quota    string
		wantBulk int  // most skbs handed to the driver at once, at most
		overrun  bool // bulks longer than the ring's room, their rest requeued
	}{
		{"bytes only", "off", 1 << 30, true},
		{"quota", "on", 1 + 64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			n := NewNet(e, profile(t, "6.18", "bulk_quota", tc.quota), localMaker{})
			dev, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: "ice", Args: []string{"tx", "256", "adaptive-tx", "off"}, Queues: 2,
				Qdisc: []string{"mq", "pfifo", "limit", "100000"}})
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t, e, n, dev}
			txq := dev.Queues[0]
			q := txq.qdisc
			most := 0
			n.Hooks.DriverXmit = func(_ *sim.CPU, _ *TxQueue, l *skb.List) { most = max(most, l.Len) }
			h.on(1, 0, func(c *sim.CPU) {
				h.fill(c, q, 40000)
				c.LocalBhDisable()
				q.lock.Lock(c, n.site.rootEnq)
				runFree, _, _ := n.qdiscRun(c, q)
				q.lock.Unlock(c)
				n.kfreeSkbList(c, &runFree)
				c.LocalBhEnable()
			})
			h.run(3 * sim.Millisecond)
			if q.Qlen() == 0 {
				t.Fatal("the qdisc ran dry: the test needs it backlogged throughout")
			}
			// ice: 256 descriptors, one kept unused, DESC_NEEDED
			// (17 frags + 6) left free when it stops the queue.
			room := 256 - 1 - (17 + 6)
			limitPkts := int(txq.DQL.Limit) / pktLen
			if limitPkts <= room {
				t.Errorf("BQL limit %d packets, within the ring's room of %d: want it grown past", limitPkts, room)
			}
			if most > tc.wantBulk {
				t.Errorf("a bulk of %d skbs, want at most %d", most, tc.wantBulk)
			}
			if tc.overrun && (most <= room || q.Requeues == 0) {
				t.Errorf("largest bulk %d (room %d), %d requeues: want bulks past the ring and their rest requeued", most, room, q.Requeues)
			}
		})
	}
}
