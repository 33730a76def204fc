package cake

import (
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// dropAckFilter is the reason the model gives an ACK the filter took
// out. The kernel frees it with consume_skb, not kfree_skb: no
// skb:kfree_skb event and no dropwatch line, but tc -s counts it among
// the qdisc's drops and the tin's ack_drop. The accounting needs a
// name: cake declares this one.
const dropAckFilter skb.DropReason = "CAKE_ACK_FILTER"

// before and after compare sequence numbers modulo 2^32 (tcp.h).
func before(a, b uint32) bool { return int32(a-b) < 0 }
func after(a, b uint32) bool  { return before(b, a) }

// ecnFlags are the header flags the filter must not lose (ECE, CWR).
const ecnFlags = skb.TCPHdrECE | skb.TCPHdrCWR

// findRedundantAck is cake_ack_filter: flow's tail, just queued with
// header th, may make an older pure ACK of the same connection in the
// queue redundant. It returns that ACK's place in the flow's queue, the
// one nearest the head: in the conservative mode only once a second
// such ACK is found (the tail then carries what both said), in the
// aggressive mode also a single one right before the tail with the
// same ECN flags.
func (q *Cake) findRedundantAck(ctx qdisc.Ctx, flow *cakeFlow, th *skb.TCPHeader) (int, bool) {
	n := flow.q.Len()
	if n < 2 { // flow->head == flow->tail
		return 0, false
	}
	tail := flow.q.At(n - 1)
	// Only an ACK triggers (no SYN: no ACK before it to filter).
	if th.Flags&(skb.TCPHdrACK|skb.TCPHdrSYN) != skb.TCPHdrACK {
		return 0, false
	}
	var tsval, tsecr uint32
	if th.TS {
		tsval, tsecr = th.TSval, th.TSecr
	}
	elig, found := -1, 0
	var eligFlags uint8
	i := 0
	for ; i < n-1; i++ {
		c := flow.q.At(i)
		// Only TCP packets of the same 5-tuple (cake's flow hash may
		// put several connections in one queue). A packet that is not
		// kept aside is not a pure ACK: its flags or its payload
		// would fail the checks below. (The kernel's ECN-flag reset
		// just below looks at a data packet of the connection too;
		// the model's connections carry data one way only, so an
		// ACK's connection has only pure ACKs in this direction.)
		hc, ok := q.acks[c.Handle]
		if !ok || c.Keys != tail.Keys {
			continue
		}
		ch := &hc
		// The ECN flags changed since the eligible ACK: dropping it
		// would lose that.
		if elig >= 0 && ch.Flags&ecnFlags != eligFlags {
			elig = -1
			found--
		}
		if !mayDropAck(ch, tsval, tsecr) || ch.DataLen != 0 || after(ch.AckSeq, th.AckSeq) {
			continue
		}
		// The tail must SACK more, or the same with a larger
		// cumulative ACK.
		cmp := sackCompare(ch, th)
		if cmp < 0 || (ch.AckSeq == th.AckSeq && cmp == 0) {
			continue
		}
		if elig < 0 {
			elig, eligFlags = i, ch.Flags&ecnFlags
		}
		if found++; found > 1 {
			i++
			break
		}
	}
	// Each packet looked at is two skb_header_pointer reads and a few
	// comparisons: a node visited.
	ctx.Work(qdisc.WorkFlowScan, i)
	if found > 1 {
		return elig, true
	}
	// One eligible ACK: the aggressive mode drops it when it is right
	// before the tail and their ECN flags match.
	if elig >= 0 && q.ackFilter == ackAggressive && elig == n-2 && eligFlags == th.Flags&ecnFlags {
		return elig, true
	}
	return 0, false
}

// mayDropAck is cake_tcph_may_drop: a pure ACK (no flag but ACK, ECE
// and CWR) with only options that do not change state: SACK, and
// timestamps no newer than the triggering packet's.
func mayDropAck(h *skb.TCPHeader, tsval, tsecr uint32) bool {
	if h.Flags&^ecnFlags != skb.TCPHdrACK || h.Other {
		return false
	}
	if h.TS && (after(h.TSval, tsval) || after(h.TSecr, tsecr)) {
		return false
	}
	return true
}

// sackCompare is cake_tcph_sack_compare: -1 when a SACKs something b
// does not (or a is a DSACK, below its own cumulative ACK), 1 when b
// covers all of a and SACKs more bytes, 0 when they SACK the same.
func sackCompare(a, b *skb.TCPHeader) int {
	sa, sb := a.Blocks(), b.Blocks()
	switch {
	case len(sa) > 0 && len(sb) == 0:
		return -1
	case len(sb) > 0 && len(sa) == 0:
		return 1
	case len(sa) == 0:
		return 0
	}
	var bytesA, bytesB uint32
	first := true
	for _, x := range sa {
		if before(x.Start, a.AckSeq) { // a DSACK: never drop it
			return -1
		}
		bytesA += x.End - x.Start
		covered := false
		for _, y := range sb {
			if first { // the first pass counts b's bytes
				bytesB += y.End - y.Start
			}
			if !after(y.Start, x.Start) && !before(y.End, x.End) {
				covered = true
				if !first {
					break
				}
			}
		}
		if !covered {
			return -1
		}
		first = false
	}
	if bytesB > bytesA {
		return 1
	}
	return 0
}

// filterAck takes the ACK at place i out of flow (cake_enqueue after
// cake_ack_filter): counted as the tin's ack_drop and the qdisc's drop,
// its bytes in the tin's total though it never leaves, its backlog and
// memory given back, the ingress shaper charged, and freed. It returns
// the ACK's length (ack_pkt_len).
func (q *Cake) filterAck(ctx qdisc.Ctx, b *cakeTin, flow *cakeFlow, idx uint16, i int, now sim.Time) uint32 {
	p := flow.q.Remove(i)
	q.forgetAck(p.Handle)
	b.ackDrops++
	q.drops++
	b.backlogs[idx] -= p.Len
	b.tinBacklog -= p.Len
	q.backlog -= int64(p.Len)
	q.bufferUsed -= p.TrueSize
	q.qlen--
	if q.rateFlags&flagIngress != 0 {
		q.advanceShaper(b, &p, now, true)
	}
	ctx.Drop(p.Handle, dropAckFilter)
	return p.Len
}

// keepAck keeps a just-queued packet's header aside when the filter
// could take it out later: a pure ACK (cake_tcph_may_drop's flags, no
// payload, no option but SACK and timestamps).
func (q *Cake) keepAck(h skb.Handle, th *skb.TCPHeader) {
	if th.Flags&^ecnFlags != skb.TCPHdrACK || th.DataLen != 0 || th.Other {
		return
	}
	if q.acks == nil {
		q.acks = map[skb.Handle]skb.TCPHeader{}
	}
	q.acks[h] = *th
}

// forgetAck drops a packet's header when it leaves the queue.
func (q *Cake) forgetAck(h skb.Handle) {
	if len(q.acks) != 0 {
		delete(q.acks, h)
	}
}
