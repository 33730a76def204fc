package workload

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// tcpHeader is the header of a TCP skb of the model's sockets, as
// __tcp_transmit_skb wrote it: seq and ack_seq from the control block
// (TCP_SKB_CB, in segments: tcp.WireSeq), the payload its segments
// carry, the timestamps option (TSval the skb's birth on the ms clock,
// tcp_skb_timestamp; TSecr tsecr, as the wire has it) and a pure ACK's
// SACK blocks (tcp_options_write from tp->selective_acks).
func tcpHeader(s *skb.SKB, tsecr uint32, sack []tcp.Range) skb.TCPHeader {
	segs := uint32(max(s.GSOSegs, 1))
	h := skb.TCPHeader{Seq: tcp.WireSeq(s.Cb.Seq), AckSeq: tcp.WireSeq(s.Cb.Ack), Flags: s.TCPFlags, TS: true,
		TSval: tcp.TSClock(sim.Ktime(s.Born)), TSecr: tsecr}
	hdr := tcp.HeaderLen + tcp.SACKOptLen(len(sack)) // each segment's headers, its options' room included
	if s.Len > segs*hdr {
		h.DataLen = s.Len - segs*hdr
	}
	for _, r := range sack {
		h.SACK[h.NSACK] = skb.SACKBlock{Start: tcp.WireSeq(r.Start), End: tcp.WireSeq(r.End)}
		h.NSACK++
	}
	return h
}
