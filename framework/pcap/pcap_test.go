package pcap

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

func TestParseWindow(t *testing.T) {
	tests := []struct {
		in   string
		want Window
		err  bool
	}{
		{"", Window{Count: DefaultCount}, false},
		{"10ms@500ms", Window{From: 500 * sim.Millisecond, Len: 10 * sim.Millisecond}, false},
		{"1000@2ms", Window{From: 2 * sim.Millisecond, Count: 1000}, false},
		{"1000p@0s", Window{Count: 1000}, false},
		{"0@1ms", Window{}, true},
		{"10ms", Window{}, true},
		{"-1ms@0", Window{}, true},
		{"10ms@-1ms", Window{}, true},
		{"ten@1ms", Window{}, true},
	}
	for _, tt := range tests {
		got, err := ParseWindow(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseWindow(%q) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParseWindow(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// A frame decodes as what it carries: addresses and ports from the flow
// keys, the dsfield from DSCP and ECN, the lengths, valid checksums.
func TestFrameRoundTrip(t *testing.T) {
	keys := skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010203, SrcPort: 40000, DstPort: 12866, Proto: 17}
	for _, tt := range []struct {
		name string
		h    Headers
	}{
		{"udp EF CE", Headers{Keys: keys, DSCP: 46, ECN: 3, Len: 162, ID: 7}},
		{"udp short", Headers{Keys: keys, Len: 60}},
		{"tcp ECT(0)", Headers{Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a000002, SrcPort: 5001, DstPort: 443, Proto: 6},
			DSCP: 10, ECN: 2, Len: 1514, Seq: 1000, Ack: 2000, Flags: TCPFlags{ACK: true, ECE: true}, Window: 512}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := NewBuilder().Frame(tt.h)
			if err != nil {
				t.Fatal(err)
			}
			if len(frame) != int(tt.h.Len) {
				t.Fatalf("frame of %d bytes, want %d", len(frame), tt.h.Len)
			}
			p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
			ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if ip == nil {
				t.Fatal("no IPv4 layer")
			}
			if ip.SrcIP.String() != "10.0.0.1" || ip.TOS != tt.h.DSCP<<2|tt.h.ECN || int(ip.Length) != int(tt.h.Len)-14 {
				t.Errorf("ip %v -> %v tos %#x len %d", ip.SrcIP, ip.DstIP, ip.TOS, ip.Length)
			}
			// The header checksum sums to 0xffff with itself.
			var sum uint32
			for i := 14; i < 34; i += 2 {
				sum += uint32(binary.BigEndian.Uint16(frame[i:]))
			}
			for sum > 0xffff {
				sum = sum&0xffff + sum>>16
			}
			if sum != 0xffff {
				t.Errorf("bad IPv4 checksum: %#x", sum)
			}
			switch tt.h.Keys.Proto {
			case 17:
				u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
				if uint16(u.SrcPort) != tt.h.Keys.SrcPort || uint16(u.DstPort) != tt.h.Keys.DstPort || int(u.Length) != int(tt.h.Len)-34 || u.Checksum == 0 {
					t.Errorf("udp %+v", u)
				}
			case 6:
				c := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
				if c.Seq != 1000 || c.Ack != 2000 || !c.ACK || !c.ECE || c.SYN || c.Window != 512 || uint16(c.DstPort) != 443 {
					t.Errorf("tcp %+v", c)
				}
			}
		})
	}
}

func newEngine(t *testing.T) *sim.Engine {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func readNg(t *testing.T, b []byte) (ts []int64, lens []int) {
	t.Helper()
	r, err := pcapgo.NewNgReader(bytes.NewReader(b), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, ci.Timestamp.UnixNano())
		lens = append(lens, len(data))
	}
}

// Taps arrive out of time order (CPUs run ahead between sync points); the
// file is in time order, cut to the window.
func TestCaptureOrderAndWindows(t *testing.T) {
	p := func(n int) []*skb.SKB {
		out := make([]*skb.SKB, n)
		for i := range out {
			out[i] = &skb.SKB{Packet: skb.Packet{Handle: skb.Handle(i + 1), Len: 100, Keys: skb.FlowKeys{Src: 1, Dst: 2, Proto: 17}}}
		}
		return out
	}
	taps := []sim.Time{500, 100, 300, 100, 900, 700}
	for _, tt := range []struct {
		name    string
		w       Window
		snap    uint32
		want    []int64
		cut     bool
		wantLen int
	}{
		{"all", Window{Count: DefaultCount}, 0, []int64{100, 100, 100, 100, 300, 300, 500, 500, 700, 700, 900, 900}, false, 100},
		{"time", Window{From: 300, Len: 400}, 0, []int64{300, 300, 500, 500}, false, 100},
		{"count", Window{From: 200, Count: 3}, 64, []int64{300, 300, 500}, true, 64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			c, err := New(&b, Config{Window: tt.w, Snaplen: tt.snap})
			if err != nil {
				t.Fatal(err)
			}
			c.e = newEngine(t)
			for _, at := range taps {
				c.tap(at, p(2))
			}
			n, cut, err := c.Close()
			if err != nil {
				t.Fatal(err)
			}
			ts, lens := readNg(t, b.Bytes())
			if int(n) != len(tt.want) || len(ts) != len(tt.want) || cut != tt.cut {
				t.Fatalf("%d packets (cut %v), file %v, want %v (cut %v)", n, cut, ts, tt.want, tt.cut)
			}
			for i := range ts {
				if ts[i] != tt.want[i] || lens[i] != tt.wantLen {
					t.Fatalf("file %v (lengths %v), want %v of %d bytes", ts, lens, tt.want, tt.wantLen)
				}
			}
		})
	}
}

// HeadersOf a TCP skb of the model's sockets: the control block's
// segment numbers in bytes, the packet's header flags, the timestamps
// option; a GSO skb is one frame with the headers once, so its payload
// is its segments' and the next skb's sequence follows on. A UDP skb
// and a TCP packet without flags keep the plain headers.
func TestHeadersOfTCP(t *testing.T) {
	keys := skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: 32768, DstPort: 12866, Proto: 6}
	gso := &skb.SKB{Packet: skb.Packet{Len: 3 * tcp.FrameLen, GSOSegs: 3, Keys: keys, ECN: 2,
		TCPFlags: skb.TCPHdrACK | skb.TCPHdrCWR}, Born: 5 * sim.Millisecond}
	gso.Cb = skb.CB{Seq: 10}
	h := HeadersOf(gso, nil)
	if h.Seq != 1+10*1448 || h.Ack != 1 || !h.Flags.ACK || !h.Flags.CWR || h.Flags.PSH || h.Flags.ECE ||
		!h.TS || h.TSval != uint32((sim.BootOffset+5*sim.Millisecond)/sim.Millisecond) || h.Len != 66+3*1448 {
		t.Fatalf("GSO data: %+v", h)
	}
	frame, err := NewBuilder().Frame(h)
	if err != nil {
		t.Fatal(err)
	}
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	c := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if len(frame) != 66+3*1448 || c.DataOffset != 8 || len(c.Payload) != 3*1448 || c.Seq+uint32(len(c.Payload)) != tcp.WireSeq(13) {
		t.Fatalf("frame %d bytes, doff %d, payload %d, seq %d: the next skb's is %d", len(frame), c.DataOffset, len(c.Payload), c.Seq, tcp.WireSeq(13))
	}
	ack := &skb.SKB{Packet: skb.Packet{Len: tcp.AckLen, GSOSegs: 1, Keys: keys, TCPFlags: skb.TCPHdrACK | skb.TCPHdrECE}}
	ack.Cb = skb.CB{Ack: 7}
	if h := HeadersOf(ack, nil); h.Seq != 1 || h.Ack != 1+7*1448 || !h.Flags.ECE || h.Flags.CWR || h.Len != 66 {
		t.Fatalf("pure ACK: %+v", h)
	}
	other := &skb.SKB{Packet: skb.Packet{Len: 100, Keys: keys}}
	if h := HeadersOf(other, nil); h.TS || h.Seq != 0 || !h.Flags.ACK || !h.Flags.PSH {
		t.Fatalf("TCP without flags: %+v", h)
	}
	udp := &skb.SKB{Packet: skb.Packet{Len: 100, Keys: skb.FlowKeys{Proto: 17}, TCPFlags: skb.TCPHdrACK}}
	if h := HeadersOf(udp, nil); h.TS || h.Flags != (TCPFlags{}) {
		t.Fatalf("UDP: %+v", h)
	}
}

// ackOwner is a socket that says its ACK's header (skb.HeaderOwner).
type ackOwner struct{ h skb.TCPHeader }

func (ackOwner) Release(*sim.CPU, *skb.SKB)                 {}
func (o ackOwner) TCPHeader(*skb.SKB) (skb.TCPHeader, bool) { return o.h, true }

// A pure ACK of a socket that says its header carries the echoed
// timestamp and the SACK blocks after the timestamps option, each
// behind two NOPs, in a frame as long as the skb (tcp.Ack.Len).
func TestHeadersOfSACKedAck(t *testing.T) {
	keys := skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: 32768, DstPort: 12866, Proto: 6}
	a := tcp.Ack{Seq: 7, NSACK: 2}
	a.SACK[0], a.SACK[1] = tcp.Range{Start: 9, End: 12}, tcp.Range{Start: 14, End: 15}
	o := ackOwner{skb.TCPHeader{Seq: 1, AckSeq: tcp.WireSeq(7), Flags: skb.TCPHdrACK, TS: true, TSval: 100, TSecr: 90, NSACK: 2}}
	o.h.SACK[0] = skb.SACKBlock{Start: tcp.WireSeq(9), End: tcp.WireSeq(12)}
	o.h.SACK[1] = skb.SACKBlock{Start: tcp.WireSeq(14), End: tcp.WireSeq(15)}
	ack := &skb.SKB{Packet: skb.Packet{Len: a.Len(), GSOSegs: 1, Keys: keys, TCPFlags: skb.TCPHdrACK}}
	h := HeadersOf(ack, o)
	if h.TSecr != 90 || h.NSACK != 2 || h.Ack != tcp.WireSeq(7) {
		t.Fatalf("headers %+v", h)
	}
	frame, err := NewBuilder().Frame(h)
	if err != nil {
		t.Fatal(err)
	}
	c := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default).Layer(layers.LayerTypeTCP).(*layers.TCP)
	if len(frame) != 66+4+16 || int(a.Len()) != len(frame) || c.DataOffset != 13 || len(c.Payload) != 0 {
		t.Fatalf("frame %d bytes (skb %d), doff %d, payload %d", len(frame), a.Len(), c.DataOffset, len(c.Payload))
	}
	var sack []byte
	for _, opt := range c.Options {
		if opt.OptionType == layers.TCPOptionKindSACK {
			sack = opt.OptionData
		}
	}
	if len(sack) != 16 || binary.BigEndian.Uint32(sack[0:]) != tcp.WireSeq(9) || binary.BigEndian.Uint32(sack[12:]) != tcp.WireSeq(15) {
		t.Fatalf("SACK option %x", sack)
	}
}
