package netdev

import (
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// A qdisc's size table ("tc qdisc add ... stab overhead 44 linklayer
// atm ..."; tc computes the table, framework/tc's SizeSpec) sets
// qdisc_skb_cb(skb)->pkt_len as the qdisc takes each packet
// (__dev_xmit_skb for the root, qdisc_enqueue for one under a class):
// the qdisc then counts, limits and shapes by that length
// (qdisc_pkt_len), the wire by skb->len. The length stays with the skb:
// a leaf without a table sees its root's, and a parent's dequeue sees
// the last table's. A qdisc made by the kernel (mq's children, the
// defaults) has none, so an mq root's table is shown and never applied,
// as in the kernel.

// stabLogMax is STAB_SIZE_LOG_MAX.
const stabLogMax = 30

// checkStab is qdisc_get_stab's checks of the table tc sends.
func checkStab(s *tc.SizeSpec) error {
	if s != nil && (s.SizeLog > stabLogMax || s.CellLog > stabLogMax) {
		return kernelf("Error: Invalid logarithmic size of size table.")
	}
	return nil
}

// qdiscCalculatePktLen is qdisc_calculate_pkt_len(skb, q): once per skb
// as __dev_xmit_skb or qdisc_enqueue hands it to q. Not for what q's
// own enqueue makes of it: the segments of a split GSO skb get their
// own length (cake's and tbf_segment's pkt_len = segs->len), and a
// duplicate sent back to the root keeps the copied cb (netem's
// rootq->enqueue).
func qdiscCalculatePktLen(s *skb.SKB, q *Qdisc) {
	if q.stab != nil {
		s.PktLen = q.stab.PktLen(s.Len)
	}
}

// StabText is the qdisc's size table as tc -d qdisc show prints it on a
// line of its own, "" without one.
func (q *Qdisc) StabText() string {
	if q.stab == nil {
		return ""
	}
	return q.stab.String()
}
