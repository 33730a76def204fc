package skb

// MaxSACKBlocks is how many SACK blocks a header carries beside the
// timestamps option: 3 (TCP_NUM_SACKS is 4, but with the 12 bytes of
// timestamps only three 8-byte blocks fit in the 40 bytes of options).
const MaxSACKBlocks = 3

// SACKBlock is one SACK block as the header carries it
// (tcp_sack_block_wire): sequence numbers in bytes, modulo 2^32.
type SACKBlock struct{ Start, End uint32 }

// TCPHeader is what a qdisc reads of a TCP packet's headers with
// skb_header_pointer (cake_get_tcphdr, cake_tcph_get_tstamp,
// cake_get_tcpopt): the numbers as the wire has them, the payload's
// length (the IP total length less the IP and TCP headers) and the two
// options the model's segments carry, timestamps (every segment has
// them) and SACK. A header with other options would say so in Other.
type TCPHeader struct {
	Seq, AckSeq  uint32
	DataLen      uint32 // payload bytes of this skb (its segments' for a GSO skb)
	TSval, TSecr uint32 // the timestamps option, when TS
	SACK         [MaxSACKBlocks]SACKBlock
	NSACK        uint8
	Flags        uint8 // TCPHdr*
	TS           bool  // the timestamps option is there
	// Other says the header has an option besides timestamps and SACK
	// (MSS, window scale, SACK-permitted on a SYN; none the model sends
	// after its handshake).
	Other bool
}

// Blocks are the header's SACK blocks.
func (h *TCPHeader) Blocks() []SACKBlock { return h.SACK[:h.NSACK] }

// HeaderOwner is an Owner that can say what its skbs' TCP headers hold:
// the model's TCP sockets, whose control block and ACK state are the
// header's source. The host asks it for a qdisc that reads TCP headers
// (qdisc.ReadsTCPHeaders).
type HeaderOwner interface {
	Owner
	TCPHeader(s *SKB) (TCPHeader, bool)
}
