package netdev

// ip -s link's drop columns: dev_get_stats (net/core/dev.c) is the
// driver's ndo_get_stats64 plus dev->core_stats, which the stack bumps
// itself: dev_core_stats_rx_dropped_inc in enqueue_to_backlog for the
// skb's device (skb->dev, the device that received it),
// dev_core_stats_tx_dropped_inc in __dev_queue_xmit's drops (noqueue's
// stopped queue or "Virtual device asks to queue packet!", the
// recursion limit) and bond_tx_drop. veth_get_stats64
// (drivers/net/veth.c) reports its priv->dropped, bumped by veth_xmit's
// drops (NET_RX_DROP from __netif_rx, a full peer ring under noqueue),
// as tx_dropped. A veth's peer is not one of the model's devices, but
// its counters are known: it received what this veth sent (its
// rx_dropped counts enqueue_to_backlog's drops of them) and sent what
// this veth received (its priv->dropped counts their drops).

// linkCounters are one device's counters behind LinkStats.
type linkCounters struct {
	coreRxDropped, coreTxDropped uint64 // dev->core_stats
	drvTxDropped                 uint64 // the driver's own tx_dropped (veth's priv->dropped)
	peerRxDropped                uint64 // a veth's peer's core rx_dropped
	peerDrvDropped               uint64 // a veth's peer's priv->dropped
}

// LinkStats are a device's ip -s link drop columns the model counts.
type LinkStats struct {
	RxDropped, TxDropped uint64
}

// hasPeer says d is a veth: a device without a wire that is not a bond
// or an ifb hands what it sends to a peer.
func (d *Device) hasPeer() bool { return !d.Info.Wire && d.Bond == nil && d.Ifb == nil }

// Link is d's ip -s link drop columns (dev_get_stats; an ifb's
// ifb_stats64 adds its dev->stats drops).
func (d *Device) Link() LinkStats {
	l := &d.link
	ls := LinkStats{RxDropped: l.coreRxDropped, TxDropped: l.coreTxDropped + l.drvTxDropped}
	if d.Ifb != nil {
		ls.RxDropped += d.Ifb.RxDropped
		ls.TxDropped += d.Ifb.TxDropped
	}
	return ls
}

// LinkPeer is, for a veth, its peer's ip -s link drop columns; false
// for a device without a peer.
func (d *Device) LinkPeer() (LinkStats, bool) {
	if !d.hasPeer() {
		return LinkStats{}, false
	}
	return LinkStats{RxDropped: d.link.peerRxDropped, TxDropped: d.link.peerDrvDropped}, true
}
