package netdev

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// splitGSO replaces every GSO skb of batch by its segments for a qdisc
// that asked for them (qdisc.SplitGSO: cake's split-gso), or those past
// its Info.SegmentOver whose segments fit (tbf_segment). It is
// skb_gso_segment as tcp_gso_segment does it: the first segment keeps
// the skb, the others are new skbs (offered, so the accounting
// balances) with the same owner; the payload and the length are shared
// out evenly, Cb.Seq counts up and CWR stays on the first segment
// (tcp_gso_segment). Each segment is an sk_buff with a small head of
// its own (skb_segment's __alloc_skb of the headers and headroom) and
// its share of the frags, so its truesize is a head's plus its
// payload's (nskb->truesize += data_len): together the segments weigh
// segs-1 heads more than the GSO skb, and tcp_gso_segment charges that
// to the socket (the destructor moves to every segment; skb.Charger).
// A clone's segments are clones of the same qdisc's asking.
// It returns batch itself, and false, when nothing needs splitting.
// For a leaf of a classful qdisc it records what each split skb became
// (Net.gsoSplit), for the ancestors' counts.
func (n *Net) splitGSO(c *sim.CPU, q *Qdisc, batch []*skb.SKB) ([]*skb.SKB, bool) {
	q.segIdx = q.segIdx[:0]
	if q.Flags&qdisc.SplitGSO == 0 && q.segmentOver == 0 {
		return batch, false
	}
	split := false
	for _, s := range batch {
		split = split || q.splits(s)
	}
	if !split {
		return batch, false
	}
	// cake_enqueue classifies a GSO skb once and segments it after:
	// the qdisc learns which packets are one skb's segments
	// (qdisc.GSOSkbLen). tbf_segment enqueues each segment into its
	// child on its own: segmentOver's are independent skbs.
	group := q.Flags&qdisc.SplitGSO != 0
	out := q.segBuf[:0]
	for _, s := range batch {
		if !q.splits(s) {
			out = append(out, s)
			if group {
				q.segIdx = append(q.segIdx, 0)
			}
			continue
		}
		segs := int(s.GSOSegs)
		c.Spend(n.E.Costs.GSOSegment * int64(segs))
		if q.parentQ != nil {
			if n.gsoSplit == nil {
				n.gsoSplit = map[skb.Handle]gsoSplit{}
			}
			n.gsoSplit[s.Handle] = gsoSplit{segs: segs, len: s.Len, by: q}
		}
		l := s.Len / uint32(segs)
		lastLen := s.Len - l*uint32(segs-1)
		ts, firstTs := segTruesize(s.TrueSize, segs)
		// An orphaned skb's destructor is sock_efree, not tcp_wfree:
		// tcp_gso_segment copies no destructor and charges nothing.
		if ch, ok := n.Pool.Owner(s).(skb.Charger); ok && !s.Orphaned() {
			ch.Charge(c, s, int64(firstTs)+int64(ts)*int64(segs-1)-int64(s.TrueSize))
		}
		s.GSOSegs = 1
		s.Len, s.TrueSize = l, firstTs
		// pkt_len = segs->len (cake_enqueue, tbf_segment): a size table
		// the GSO skb met does not follow its segments.
		s.PktLen = 0
		out = append(out, s)
		if group {
			q.segIdx = append(q.segIdx, 1)
		}
		for i := 1; i < segs; i++ {
			d := n.Pool.Get()
			h := d.Handle
			d.Packet = s.Packet
			d.Handle = h
			d.Len, d.TrueSize = l, ts
			if i == segs-1 {
				d.Len = lastLen
			}
			d.Born, d.SenderCPU = s.Born, s.SenderCPU
			n.ownSkb(c, d)
			d.Owner, d.RxQueue = s.Owner, s.RxQueue
			d.DupOf, d.DupDepth = s.DupOf, s.DupDepth
			d.Cb = s.Cb
			d.Cb.Seq += int64(i)
			d.TCPFlags &^= skb.TCPHdrCWR
			n.Offered++
			n.GSOSegments++
			out = append(out, d)
			if group {
				q.segIdx = append(q.segIdx, uint16(i+1))
			}
		}
	}
	q.segBuf = out[:0]
	return out, true
}

// segTruesize is the truesize of each segment of a GSO skb of truesize
// ts cut into segs, and of the first (which takes the remainder): a
// head as the model's TCP skbs have (tcp_stream_alloc_skb's
// MAX_TCP_HEADER from the small head cache) and an even share of the
// rest. A GSO skb lighter than that head (none is built) is shared
// out evenly.
func segTruesize(ts uint32, segs int) (each, first uint32) {
	head := skb.TruesizeAllocSkb(skb.MaxTCPHeader)
	if ts <= head {
		each = ts / uint32(segs)
		return each, ts - each*uint32(segs-1)
	}
	pay := (ts - head) / uint32(segs)
	return head + pay, head + (ts - head) - pay*uint32(segs-1)
}

// gsoSplit is what a GSO skb a leaf segmented became: the segs skbs it
// kept (keptSegs; 1 if none), the first keeping its handle, of len
// bytes in all; by is the leaf that segmented it.
type gsoSplit struct {
	segs int
	len  uint32
	by   *Qdisc
}

// leafSegs is how many packets, and bytes, leaf holds of skb s after
// enqueueing it: its segments if the leaf, or one below it, segmented
// it. A split by one of leaf's ancestors (tbf segmenting a GSO skb
// for its own child) is not the leaf's: its first segment keeps the
// skb's handle, and is one packet to the child.
func (n *Net) leafSegs(s *skb.SKB, leaf *Qdisc) (int, uint32) {
	if g, ok := n.gsoSplit[s.Handle]; ok && leaf.holds(g.by) {
		return g.segs, g.len
	}
	return 1, s.Len
}

// holds reports whether x is q or in q's tree below it.
func (q *Qdisc) holds(x *Qdisc) bool {
	for ; x != nil; x = x.parentQ {
		if x == q {
			return true
		}
	}
	return false
}

// splits reports whether q is handed skb s as its segments: every GSO
// skb with qdisc.SplitGSO (cake_enqueue's split-gso), else one longer
// than Info.SegmentOver whose segments each fit in it (tbf_enqueue:
// qdisc_pkt_len past max_size and skb_gso_validate_mac_len; the last
// segment, which takes the remainder, is the longest).
func (q *Qdisc) splits(s *skb.SKB) bool {
	segs := uint32(s.GSOSegs)
	if segs <= 1 {
		return false
	}
	if q.Flags&qdisc.SplitGSO != 0 {
		return true
	}
	last := s.Len - s.Len/segs*(segs-1)
	return q.segmentOver > 0 && s.Len > q.segmentOver && last <= q.segmentOver
}

// gsoCode is the NET_XMIT code of a split GSO skb, given its
// segments' codes: the caller's one skb is all of its segments.
// Split by qdisc.SplitGSO (cake), it is NET_XMIT_SUCCESS |
// __NET_XMIT_BYPASS if every segment was (cake_enqueue classifies the
// skb before it segments it, so a filter's drop is the whole skb's,
// and cake answers it for every segment), dropped only if every segment
// was, congested if any was dropped or congested. Split past
// SegmentOver (tbf_segment), it is sent if any segment was queued
// (NET_XMIT_SUCCESS exactly: a leaf's bypass drop is not), else
// dropped.
func (q *Qdisc) gsoCode(rc []qdisc.Code) qdisc.Code {
	if q.Flags&qdisc.SplitGSO == 0 {
		for _, c := range rc {
			if c == qdisc.XmitSuccess {
				return qdisc.XmitSuccess
			}
		}
		return qdisc.XmitDrop
	}
	code, drops, bypass := qdisc.XmitSuccess, 0, 0
	for _, c := range rc {
		switch c {
		case qdisc.XmitDrop:
			drops++
			code = qdisc.XmitCN
		case qdisc.XmitCN:
			code = qdisc.XmitCN
		case qdisc.XmitSuccess | qdisc.XmitBypass:
			bypass++
		}
	}
	switch {
	case bypass == len(rc):
		return qdisc.XmitSuccess | qdisc.XmitBypass
	case drops == len(rc):
		return qdisc.XmitDrop
	}
	return code
}

// keptSegs is how many of a split skb's segments, and their bytes, its
// leaf may hold, by their codes (NET_XMIT_SUCCESS or NET_XMIT_CN): what
// the leaf's ancestors take in for the skb. One that kept none is one
// skb for them, which they count dropped (net_xmit_drop_count).
func keptSegs(segs []*skb.SKB, rc []qdisc.Code) (int, uint32) {
	n, bytes := 0, uint32(0)
	for i, c := range rc {
		if c == qdisc.XmitSuccess || c == qdisc.XmitCN {
			n++
			bytes += segs[i].Len
		}
	}
	if n == 0 {
		return 1, 0
	}
	return n, bytes
}

// readTCPHeaders gives a qdisc that reads TCP headers
// (qdisc.ReadsTCPHeaders) each batch packet's, as the socket that built
// it wrote it (skb.HeaderOwner); the zero header for one without.
// Reading them is the qdisc's work, priced where it reports it.
func (n *Net) readTCPHeaders(q *Qdisc, batch []*skb.SKB) {
	q.tcpHdrs = q.tcpHdrs[:0]
	if q.Flags&qdisc.ReadsTCPHeaders == 0 {
		return
	}
	some := false
	for _, s := range batch {
		var h skb.TCPHeader
		if o, ok := n.Pool.Owner(s).(skb.HeaderOwner); ok && s.Keys.Proto == 6 {
			h, _ = o.TCPHeader(s)
		}
		some = some || h.Flags != 0
		q.tcpHdrs = append(q.tcpHdrs, h)
	}
	if !some {
		q.tcpHdrs = q.tcpHdrs[:0]
	}
}
