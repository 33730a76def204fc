package netdev

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// splitGSO replaces every GSO skb of batch by its segments for a qdisc
// that asked for them (qdisc.SplitGSO: cake's split-gso). It is
// skb_gso_segment as tcp_gso_segment does it: the first segment keeps
// the skb, the others are new skbs (offered, so the accounting
// balances) with the same owner; the payload, the length and the
// truesize are shared out evenly, the owner's charge is unchanged
// (tcp_gso_segment moves the destructor to every segment), Cb.Seq
// counts up and Cb.FirstFlags stay on the first segment (TCP's CWR).
// It returns batch itself, and false, when nothing needs splitting.
func (n *Net) splitGSO(c *sim.CPU, q *Qdisc, batch []*skb.SKB) ([]*skb.SKB, bool) {
	if q.Flags&qdisc.SplitGSO == 0 {
		return batch, false
	}
	split := false
	for _, s := range batch {
		split = split || s.GSOSegs > 1
	}
	if !split {
		return batch, false
	}
	out := q.segBuf[:0]
	for _, s := range batch {
		segs := int(s.GSOSegs)
		if segs <= 1 {
			out = append(out, s)
			continue
		}
		c.Spend(n.E.Costs.GSOSegment * int64(segs))
		l, ts := s.Len/uint32(segs), s.TrueSize/uint32(segs)
		lastLen, firstTs := s.Len-l*uint32(segs-1), s.TrueSize-ts*uint32(segs-1)
		s.GSOSegs = 1
		s.Len, s.TrueSize = l, firstTs
		out = append(out, s)
		for i := 1; i < segs; i++ {
			d := n.Pool.Get()
			h := d.Handle
			d.Packet = s.Packet
			d.Handle = h
			d.Len, d.TrueSize = l, ts
			if i == segs-1 {
				d.Len = lastLen
			}
			d.Born, d.XmitAt, d.SenderCPU, d.HotCPU = s.Born, s.XmitAt, s.SenderCPU, int32(c.ID)
			d.Owner, d.RxQueue = s.Owner, s.RxQueue
			d.Cb = skb.CB{Seq: s.Cb.Seq + int64(i), Flags: s.Cb.Flags}
			n.Offered++
			n.GSOSegments++
			out = append(out, d)
		}
	}
	q.segBuf = out[:0]
	return out, true
}
