package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// ip -s link's tx_dropped: veth_get_stats64 reports priv->dropped, which
// veth_xmit's own drop bumps (a full peer ring under noqueue), not the
// peer's rx_dropped; __dev_queue_xmit's noqueue drop of a stopped queue
// bumps the device's core tx_dropped once (dev_core_stats_tx_dropped_inc).
// A NIC has no peer. The model counted neither.
func TestLinkTxDropped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		drv      string
		drop     func(h *harness, c *sim.CPU)
		own      LinkStats
		peer     LinkStats
		withPeer bool
	}{
		{"veth: the driver's drop (priv->dropped)", "veth", func(h *harness, c *sim.CPU) {
			s := h.skb(c, 0)
			s.Holder = driverHolder
			h.dev.ctxFor(c).Drop(s.Handle, skb.DropTxDevice)
		}, LinkStats{TxDropped: 1}, LinkStats{}, true},
		{"veth: noqueue, a stopped queue", "veth", func(h *harness, c *sim.CPU) {
			txq := h.dev.Queues[0]
			txq.state |= queueDrvXoff
			h.n.xmitNoQueue(c, h.dev, txq, h.skb(c, 0))
		}, LinkStats{TxDropped: 1}, LinkStats{}, true},
		{"ice: noqueue, a stopped queue", "ice", func(h *harness, c *sim.CPU) {
			txq := h.dev.Queues[0]
			txq.state |= queueDrvXoff
			h.n.xmitNoQueue(c, h.dev, txq, h.skb(c, 0))
		}, LinkStats{TxDropped: 1}, LinkStats{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, tc.drv, 1, "noqueue")
			h.on(0, 0, func(c *sim.CPU) {
				c.LocalBhDisable()
				h.n.Offered++
				h.n.unoffered--
				tc.drop(h, c)
				c.LocalBhEnable()
			})
			h.run(sim.Millisecond)
			peer, ok := h.dev.LinkPeer()
			if got := h.dev.Link(); got != tc.own || ok != tc.withPeer || peer != tc.peer {
				t.Errorf("ip -s link %+v, peer %+v (%v); want %+v, peer %+v (%v)", got, peer, ok, tc.own, tc.peer, tc.withPeer)
			}
		})
	}
}
