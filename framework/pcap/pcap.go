// Package pcap writes what a simulated host transmits as a packet
// capture tcpdump and Wireshark read: pcapng (or classic pcap, by the
// file's extension) with nanosecond timestamps in simulated time and
// real Ethernet/IPv4/UDP/TCP headers carrying the flow keys, DSCP and
// ECN. The format is gopacket's pcapgo.
//
// The capture point is dev_queue_xmit_nit, where a packet socket on
// the device (tcpdump -i eth0) sees outgoing packets: in xmit_one, just
// before ndo_start_xmit (netdev.Hooks.Tap). A packet the driver refuses
// with NETDEV_TX_BUSY was tapped, and is tapped again when the qdisc
// retries it, as on a real host. With no capture the hook stays nil.
//
// Timestamps: simulated time 0 is the Unix epoch, so `tcpdump -tt`
// prints simulated seconds; the same run and seed give the same bytes.
package pcap

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Snaplen bounds: tcpdump's default and largest.
const (
	DefaultSnaplen = 262144
	MaxSnaplen     = 262144
)

// DefaultCount is how many packets a capture without a packet-count
// window keeps: a full-rate run transmits tens of millions.
const DefaultCount = 1_000_000

// Window is what a capture keeps: packets tapped from From on, for Len
// of simulated time (0: to the end), at most Count of them.
type Window struct {
	From  sim.Time
	Len   sim.Time
	Count uint64
}

// ParseWindow parses LEN@START: LEN a duration ("10ms": that much
// simulated time) or a packet count ("1000" or "1000p": that many
// packets), START a duration. "" is everything, up to DefaultCount
// packets.
func ParseWindow(s string) (Window, error) {
	w := Window{Count: DefaultCount}
	if s == "" {
		return w, nil
	}
	l, at, ok := strings.Cut(s, "@")
	if !ok {
		return w, fmt.Errorf("pcap window %q: want LEN@START, LEN a duration or a packet count, e.g. 10ms@500ms or 1000@500ms", s)
	}
	if n, err := strconv.ParseUint(strings.TrimSuffix(l, "p"), 10, 64); err == nil {
		if n == 0 {
			return w, fmt.Errorf("pcap window %q: a count of 0 packets keeps nothing", s)
		}
		w.Count = n
	} else {
		d, err := time.ParseDuration(l)
		if err != nil || d <= 0 {
			return w, fmt.Errorf("pcap window %q: bad length %q: want a duration (10ms) or a packet count (1000)", s, l)
		}
		w.Len, w.Count = sim.Time(d), 0
	}
	d, err := time.ParseDuration(at)
	if err != nil || d < 0 {
		return w, fmt.Errorf("pcap window %q: bad start %q", s, at)
	}
	w.From = sim.Time(d)
	return w, nil
}

// String is the window as ParseWindow reads it.
func (w Window) String() string {
	if w.Len > 0 {
		return time.Duration(w.Len).String() + "@" + time.Duration(w.From).String()
	}
	return strconv.FormatUint(w.Count, 10) + "@" + time.Duration(w.From).String()
}

// Format is a capture file format.
type Format int

// Formats.
const (
	PcapNG Format = iota // pcapng, nanosecond if_tsresol
	Pcap                 // classic pcap, the nanosecond magic
)

// FormatOf picks the format by the file's name: .pcap is classic pcap,
// anything else pcapng.
func FormatOf(path string) Format {
	if strings.HasSuffix(strings.ToLower(path), ".pcap") {
		return Pcap
	}
	return PcapNG
}

// Config is one capture.
type Config struct {
	Format  Format
	Snaplen uint32 // 0: DefaultSnaplen
	Window  Window
	// Interface names the device in the file (pcapng if_name) and
	// Description says which run it is (if_description).
	Interface, Description string
	Version                string // txlab's, for the section header
}

// Validate checks a config with clear messages.
func (c Config) Validate() error {
	if c.Snaplen > MaxSnaplen {
		return fmt.Errorf("--pcap-snaplen: %d is out of range: 1..%d", c.Snaplen, MaxSnaplen)
	}
	return nil
}

// record is one tapped packet waiting for its turn: CPUs run ahead of
// each other between sync points, so taps arrive a little out of time
// order.
type record struct {
	at  sim.Time
	seq uint64
	h   Headers
}

type recHeap []record

func (h recHeap) Len() int { return len(h) }
func (h recHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h recHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recHeap) Push(x any)   { *h = append(*h, x.(record)) }
func (h *recHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// packetWriter is pcapgo's Writer or NgWriter.
type packetWriter interface {
	WritePacket(ci gopacket.CaptureInfo, data []byte) error
}

// Capture writes one device's tapped packets.
type Capture struct {
	cfg     Config
	w       packetWriter
	ng      *pcapgo.NgWriter
	buf     *bufio.Writer
	e       *sim.Engine
	dev     *netdev.Device
	pool    *skb.Pool // whose owners write the TCP headers
	b       *Builder
	pending recHeap
	seq     uint64
	written uint64
	full    bool // Count reached: later packets are later in time
	cut     bool // a packet in the window was left out for Count
	err     error
}

// New starts a capture file on out.
func New(out io.Writer, cfg Config) (*Capture, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Snaplen == 0 {
		cfg.Snaplen = DefaultSnaplen
	}
	if cfg.Interface == "" {
		cfg.Interface = "eth0"
	}
	c := &Capture{cfg: cfg, b: NewBuilder()}
	switch cfg.Format {
	case Pcap:
		c.buf = bufio.NewWriterSize(out, 1<<16)
		w := pcapgo.NewWriterNanos(c.buf)
		if err := w.WriteFileHeader(cfg.Snaplen, layers.LinkTypeEthernet); err != nil {
			return nil, err
		}
		c.w = w
	default:
		ng, err := pcapgo.NewNgWriterInterface(out, pcapgo.NgInterface{Name: cfg.Interface, Description: cfg.Description,
			OS: "txlab " + cfg.Version, LinkType: layers.LinkTypeEthernet, TimestampResolution: 9, SnapLength: cfg.Snaplen},
			pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Hardware: "txlab simulated host",
				OS: "txlab " + cfg.Version, Application: "txlab (simulated time; 0 is the epoch)"}})
		if err != nil {
			return nil, err
		}
		c.ng, c.w = ng, ng
	}
	return c, nil
}

// Attach taps dev's transmissions on the host it belongs to.
func (c *Capture) Attach(n *netdev.Net, dev *netdev.Device) {
	c.e, c.dev, c.pool = n.E, dev, &n.Pool
	prev := n.Hooks.Tap
	n.Hooks.Tap = func(cpu *sim.CPU, txq *netdev.TxQueue, p []*skb.SKB) {
		if prev != nil {
			prev(cpu, txq, p)
		}
		if txq.Device() == dev {
			c.tap(cpu.Now(), p)
		}
	}
}

func (c *Capture) inWindow(t sim.Time) bool {
	w := c.cfg.Window
	return t >= w.From && (w.Len == 0 || t < w.From+w.Len)
}

func (c *Capture) tap(t sim.Time, p []*skb.SKB) {
	if c.err != nil || !c.inWindow(t) {
		return
	}
	if c.full {
		c.cut = true
		return
	}
	for i := range p {
		c.seq++
		heap.Push(&c.pending, record{at: t, seq: c.seq, h: HeadersOf(p[i], c.pool.Owner(p[i]))})
	}
	// Every tap from now on is at or after the engine's clock (a CPU
	// runs from the event that resumed it): what is older goes out.
	c.flush(c.e.Now())
}

// flush writes the pending packets older than before, in time order.
func (c *Capture) flush(before sim.Time) {
	for len(c.pending) > 0 && c.pending[0].at < before && !c.full {
		r := heap.Pop(&c.pending).(record)
		c.write(r)
	}
	if c.full && len(c.pending) > 0 {
		c.pending, c.cut = nil, true
	}
}

func (c *Capture) write(r record) {
	if c.err != nil {
		return
	}
	frame, err := c.b.Frame(r.h)
	if err != nil {
		c.err = err
		return
	}
	n := min(len(frame), int(c.cfg.Snaplen))
	ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(r.at)).UTC(), CaptureLength: n, Length: len(frame)}
	if err := c.w.WritePacket(ci, frame[:n]); err != nil {
		c.err = err
		return
	}
	c.written++
	if c.cfg.Window.Count > 0 && c.written >= c.cfg.Window.Count {
		c.full = true
	}
}

// Close writes what is pending and flushes. It returns how many packets
// the file holds and whether the packet count cut the capture short.
func (c *Capture) Close() (packets uint64, cut bool, err error) {
	c.flush(1<<62 - 1)
	if c.err == nil {
		if c.ng != nil {
			c.err = c.ng.Flush()
		} else {
			c.err = c.buf.Flush()
		}
	}
	if c.err != nil {
		return c.written, c.cut, fmt.Errorf("pcap: %w", c.err)
	}
	return c.written, c.cut, nil
}
