package workload

import (
	"testing"

	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// A header's payload is the skb's length less each segment's headers,
// the SACK option's room included: a pure ACK with blocks carries none
// (cake's ACK filter takes only those), a GSO skb its segments' MSS.
func TestTCPHeaderDataLen(t *testing.T) {
	a := tcp.Ack{Seq: 5, NSACK: 2}
	a.SACK[0], a.SACK[1] = tcp.Range{Start: 7, End: 9}, tcp.Range{Start: 11, End: 12}
	ack := &skb.SKB{Packet: skb.Packet{Len: a.Len(), GSOSegs: 1, TCPFlags: skb.TCPHdrACK}}
	ack.Cb.Ack = 5
	h := tcpHeader(ack, 77, a.Blocks())
	if h.DataLen != 0 || h.NSACK != 2 || h.SACK[1] != (skb.SACKBlock{Start: tcp.WireSeq(11), End: tcp.WireSeq(12)}) ||
		h.AckSeq != tcp.WireSeq(5) || h.TSecr != 77 || !h.TS {
		t.Fatalf("SACKed ACK (%d bytes): %+v", a.Len(), h)
	}
	data := &skb.SKB{Packet: skb.Packet{Len: 3 * tcp.FrameLen, GSOSegs: 3, TCPFlags: skb.TCPHdrACK}}
	if h := tcpHeader(data, 0, nil); h.DataLen != 3*tcp.MSS || h.NSACK != 0 {
		t.Fatalf("GSO data: %+v", h)
	}
}
