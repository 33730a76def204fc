package pcap

import (
	"encoding/binary"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/txlab/txlab/framework/skb"
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
	// TCP only (Keys.Proto 6).
	Seq, Ack uint32
	Flags    TCPFlags
	Window   uint16
}

// TCPFlags are a TCP header's flags.
type TCPFlags struct{ SYN, ACK, PSH, FIN, RST, ECE, CWR bool }

// HeadersOf is what an skb's headers carry.
func HeadersOf(p skb.Packet) Headers {
	return Headers{Keys: p.Keys, DSCP: p.DSCP, ECN: p.ECN, Len: p.Len, ID: uint16(p.Handle),
		Flags: TCPFlags{ACK: true, PSH: true}, Window: 65535}
}

// The frames' Ethernet addresses: the host's port and its next hop.
var (
	SrcMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	DstMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

const (
	ethLen = 14
	ipLen  = 20
	udpLen = 8
	tcpLen = 20
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
}

// NewBuilder makes a Builder.
func NewBuilder() *Builder {
	return &Builder{buf: gopacket.NewSerializeBuffer(),
		eth: layers.Ethernet{SrcMAC: SrcMAC, DstMAC: DstMAC, EthernetType: layers.EthernetTypeIPv4}}
}

// Frame returns the Ethernet frame of h: Ethernet, IPv4 with checksum,
// UDP or TCP (checksums over a zero payload), zero payload up to h.Len.
// The slice is valid until the next call.
func (b *Builder) Frame(h Headers) ([]byte, error) {
	l4 := 0
	switch h.Keys.Proto {
	case uint8(layers.IPProtocolUDP):
		l4 = udpLen
	case uint8(layers.IPProtocolTCP):
		l4 = tcpLen
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
	switch l4 {
	case udpLen:
		b.udp = layers.UDP{SrcPort: layers.UDPPort(h.Keys.SrcPort), DstPort: layers.UDPPort(h.Keys.DstPort)}
		_ = b.udp.SetNetworkLayerForChecksum(&b.ip)
		ls = append(ls, &b.udp)
	case tcpLen:
		f := h.Flags
		b.tcp = layers.TCP{SrcPort: layers.TCPPort(h.Keys.SrcPort), DstPort: layers.TCPPort(h.Keys.DstPort),
			Seq: h.Seq, Ack: h.Ack, DataOffset: 5, Window: h.Window,
			SYN: f.SYN, ACK: f.ACK, PSH: f.PSH, FIN: f.FIN, RST: f.RST, ECE: f.ECE, CWR: f.CWR}
		_ = b.tcp.SetNetworkLayerForChecksum(&b.ip)
		ls = append(ls, &b.tcp)
	}
	ls = append(ls, gopacket.Payload(b.payload))
	if err := gopacket.SerializeLayers(b.buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return nil, err
	}
	return b.buf.Bytes(), nil
}
