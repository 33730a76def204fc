package pcap

import (
	"encoding/binary"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// Headers is what a frame's headers carry: the flow keys (IPv4
// addresses and ports, the protocol), the IP dsfield (DSCP and ECN), the
// frame's length, and for TCP its sequence and acknowledgement numbers
// and flags.
type Headers struct {
	Keys skb.FlowKeys
	DSCP uint8 // dsfield >> 2
	ECN  uint8 // dsfield & 3: ECT(0)=2, ECT(1)=1, CE=3
	Len  uint32
	ID   uint16 // the IPv4 identification
	// TCP (Keys.Proto 6): the sequence and acknowledgement numbers;
	// ICMP (1): Seq is the echo request's sequence (its id is the source
	// port, as u32 reads it).
	Seq, Ack uint32
	Flags    TCPFlags
	Window   uint16
	// TS adds the timestamps option (NOP, NOP, TSval, TSecr: 12 bytes,
	// a 32-byte header), as the model's TCP segments have it.
	TS           bool
	TSval, TSecr uint32
	// SACK are a pure ACK's SACK blocks (NOP, NOP, kind 5 and 8 bytes a
	// block after the timestamps, as tcp_options_write lays them out).
	SACK  [skb.MaxSACKBlocks]skb.SACKBlock
	NSACK uint8
}

// TCPFlags are a TCP header's flags.
type TCPFlags struct{ SYN, ACK, PSH, FIN, RST, ECE, CWR bool }

// HeadersOf is what an skb's headers carry; o is the socket it is
// charged to (nil if none). A TCP skb of the model's sockets (its
// header's flags set, Packet.TCPFlags) has the header its socket wrote
// (skb.HeaderOwner: sequence and acknowledgement numbers, timestamps
// with their echo, a pure ACK's SACK blocks); without such a socket,
// its control block's numbers (TCP_SKB_CB, in segments: tcp.WireSeq
// makes bytes of them) and the timestamps option (TSval the skb's birth
// in ms of ktime, TSecr 0). A GSO skb is one frame with the headers
// once, as a packet socket sees it before the NIC segments it, so its
// sequence range is its segments' payload. A TCP packet without flags
// (none the model sends) shows ACK and PSH, and zero numbers.
func HeadersOf(s *skb.SKB, o skb.Owner) Headers {
	p := &s.Packet
	h := Headers{Keys: p.Keys, DSCP: p.DSCP, ECN: p.ECN, Len: p.Len, ID: uint16(p.Handle), Window: 65535}
	if p.Keys.Proto == uint8(layers.IPProtocolICMPv4) {
		h.Seq = uint32(uint16(s.Cb.Seq)) // the ping probe's sequence
		return h
	}
	if p.Keys.Proto != uint8(layers.IPProtocolTCP) {
		return h
	}
	if p.TCPFlags == 0 {
		h.Flags = TCPFlags{ACK: true, PSH: true}
		return h
	}
	if segs := uint32(max(p.GSOSegs, 1)); segs > 1 {
		h.Len -= (segs - 1) * tcp.HeaderLen // skb->len counts every segment's frame
	}
	h.TS, h.TSval = true, tcp.TSClock(sim.Ktime(s.Born))
	h.Seq, h.Ack = tcp.WireSeq(s.Cb.Seq), tcp.WireSeq(s.Cb.Ack)
	if ho, ok := o.(skb.HeaderOwner); ok {
		if th, ok := ho.TCPHeader(s); ok {
			h.Seq, h.Ack, h.TS, h.TSval, h.TSecr = th.Seq, th.AckSeq, th.TS, th.TSval, th.TSecr
			h.SACK, h.NSACK = th.SACK, th.NSACK
		}
	}
	f := p.TCPFlags
	h.Flags = TCPFlags{FIN: f&skb.TCPHdrFIN != 0, SYN: f&skb.TCPHdrSYN != 0, RST: f&skb.TCPHdrRST != 0, PSH: f&skb.TCPHdrPSH != 0,
		ACK: f&skb.TCPHdrACK != 0, ECE: f&skb.TCPHdrECE != 0, CWR: f&skb.TCPHdrCWR != 0}
	return h
}

// The frames' Ethernet addresses: the host's port and its next hop.
var (
	SrcMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	DstMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

const (
	ethLen   = 14
	ipLen    = 20
	udpLen   = 8
	icmpLen  = 8 // echo request: type, code, checksum, id, sequence
	tcpLen   = 20
	tsOptLen = 12 // NOP, NOP, kind 8 length 10 TSval TSecr
)

func ip4(v uint32) net.IP {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return net.IP(b[:])
}

// Builder serialises frames, reusing its buffers.
type Builder struct {
	buf     gopacket.SerializeBuffer
	payload []byte
	eth     layers.Ethernet
	ip      layers.IPv4
	udp     layers.UDP
	tcp     layers.TCP
	icmp    layers.ICMPv4
	tcpOpts []layers.TCPOption
	ts      [8]byte
	sack    [tcp.SACKBlockLen * skb.MaxSACKBlocks]byte
}

// NewBuilder makes a Builder.
func NewBuilder() *Builder {
	return &Builder{buf: gopacket.NewSerializeBuffer(),
		eth: layers.Ethernet{SrcMAC: SrcMAC, DstMAC: DstMAC, EthernetType: layers.EthernetTypeIPv4}}
}

// Frame returns the Ethernet frame of h: Ethernet, IPv4 with checksum,
// UDP, TCP or an ICMP echo request (checksums over a zero payload), zero
// payload up to h.Len.
// The slice is valid until the next call.
func (b *Builder) Frame(h Headers) ([]byte, error) {
	l4 := 0
	switch h.Keys.Proto {
	case uint8(layers.IPProtocolUDP):
		l4 = udpLen
	case uint8(layers.IPProtocolICMPv4):
		l4 = icmpLen
	case uint8(layers.IPProtocolTCP):
		l4 = tcpLen
		if h.TS {
			l4 += tsOptLen
		}
		l4 += int(tcp.SACKOptLen(int(h.NSACK)))
	}
	size := max(int(h.Len), ethLen+ipLen+l4)
	payload := size - ethLen - ipLen - l4
	if cap(b.payload) < payload {
		b.payload = make([]byte, payload)
	}
	b.payload = b.payload[:payload] // zeros: nothing ever writes into it
	b.ip = layers.IPv4{Version: 4, IHL: 5, TOS: h.DSCP<<2 | h.ECN&3, Id: h.ID, Flags: layers.IPv4DontFragment,
		TTL: 64, Protocol: layers.IPProtocol(h.Keys.Proto), SrcIP: ip4(h.Keys.Src), DstIP: ip4(h.Keys.Dst)}
	ls := []gopacket.SerializableLayer{&b.eth, &b.ip}
	switch h.Keys.Proto {
	case uint8(layers.IPProtocolUDP):
		b.udp = layers.UDP{SrcPort: layers.UDPPort(h.Keys.SrcPort), DstPort: layers.UDPPort(h.Keys.DstPort)}
		_ = b.udp.SetNetworkLayerForChecksum(&b.ip)
		ls = append(ls, &b.udp)
	case uint8(layers.IPProtocolICMPv4):
		b.icmp = layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0),
			Id: h.Keys.SrcPort, Seq: uint16(h.Seq)}
		ls = append(ls, &b.icmp)
	case uint8(layers.IPProtocolTCP):
		f := h.Flags
		b.tcp = layers.TCP{SrcPort: layers.TCPPort(h.Keys.SrcPort), DstPort: layers.TCPPort(h.Keys.DstPort),
			Seq: h.Seq, Ack: h.Ack, DataOffset: 5, Window: h.Window,
			SYN: f.SYN, ACK: f.ACK, PSH: f.PSH, FIN: f.FIN, RST: f.RST, ECE: f.ECE, CWR: f.CWR}
		nop := layers.TCPOption{OptionType: layers.TCPOptionKindNop}
		b.tcp.Options = b.tcpOpts[:0]
		if h.TS {
			binary.BigEndian.PutUint32(b.ts[0:], h.TSval)
			binary.BigEndian.PutUint32(b.ts[4:], h.TSecr)
			b.tcp.Options = append(b.tcp.Options, nop, nop,
				layers.TCPOption{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: b.ts[:]})
		}
		if h.NSACK > 0 {
			for i, blk := range h.SACK[:h.NSACK] {
				binary.BigEndian.PutUint32(b.sack[8*i:], blk.Start)
				binary.BigEndian.PutUint32(b.sack[8*i+4:], blk.End)
			}
			n := tcp.SACKBlockLen * int(h.NSACK)
			b.tcp.Options = append(b.tcp.Options, nop, nop,
				layers.TCPOption{OptionType: layers.TCPOptionKindSACK, OptionLength: uint8(2 + n), OptionData: b.sack[:n]})
		}
		b.tcpOpts = b.tcp.Options
		_ = b.tcp.SetNetworkLayerForChecksum(&b.ip)
		ls = append(ls, &b.tcp)
	}
	ls = append(ls, gopacket.Payload(b.payload))
	if err := gopacket.SerializeLayers(b.buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return nil, err
	}
	return b.buf.Bytes(), nil
}
