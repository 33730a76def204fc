package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// pairDriver is testDriver with a vector per queue pair (queue i on
// vector i), as ice and i40e lay them out.
type pairDriver struct{ testDriver }

func (d *pairDriver) Init(s driver.Setup, _ []string) (driver.Info, error) {
	qv := make([]int, s.NumTxQ)
	for i := range qv {
		qv[i] = i
	}
	return driver.Info{BQL: true, Vectors: s.NumTxQ, QueueVec: qv, RateBps: 1e11}, nil
}

// noXPSDriver is pairDriver for a driver that sets no XPS map (veth).
type noXPSDriver struct{ pairDriver }

func (d *noXPSDriver) Init(s driver.Setup, args []string) (driver.Info, error) {
	info, err := d.pairDriver.Init(s, args)
	info.NoXPS = true
	return info, err
}

func init() {
	driver.Register("testpairs", "test driver, a vector per queue", func() driver.Driver { return &pairDriver{testDriver{refuse: -1}} })
	driver.Register("testnoxps", "test driver, a vector per queue, no XPS map", func() driver.Driver {
		return &noXPSDriver{pairDriver{testDriver{refuse: -1}}}
	})
}

// steerDev is eth0 with 4 queues on 2 sockets x 4 cores x 2 threads:
// socket 0 has CPUs 0-3 (siblings 8-11), socket 1 has 4-7 (12-15);
// vector i's IRQ is on CPU irq[i].
func steerDev(t *testing.T, xps XPSMode, irq []int) (*Net, *Device) {
	t.Helper()
	e, err := sim.NewEngine(sim.Topology{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	n := NewNet(e, defaultConfig(t), localMaker{})
	n.ExpectLocalReceive()
	d, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: "testpairs", Queues: 4, XPS: xps, IRQCPUs: irq})
	if err != nil {
		t.Fatal(err)
	}
	return n, d
}

func defaultConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := Profile("6.18")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The XPS_CPUS maps: the driver's covers its IRQ CPUs only, an
// administrator's "cores" map gives each queue a group of cores with
// their siblings, socket by socket.
func TestXPSMaps(t *testing.T) {
	irq := []int{0, 1, 2, 3}
	tests := []struct {
		mode XPSMode
		want [16]int // CPU -> queue
	}{
		{XPSIRQ, [16]int{0, 1, 2, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
		{XPSCores, [16]int{0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3}},
		{XPSNone, [16]int{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
		{"", [16]int{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			_, d := steerDev(t, tt.mode, irq)
			for cpu, want := range tt.want {
				if got := d.XPSQueue(cpu); got != want {
					t.Errorf("CPU %d: queue %d, want %d", cpu, got, want)
				}
			}
		})
	}
}

// A driver that never calls netif_set_xps_queue (veth) leaves the
// device's own map empty: every CPU hashes.
func TestNoDriverXPSMap(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 4, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	n := NewNet(e, defaultConfig(t), localMaker{})
	n.ExpectLocalReceive()
	d, err := n.AddDevice(DeviceSpec{Name: "veth0", Driver: "testnoxps", Queues: 4, XPS: XPSIRQ, IRQCPUs: []int{0, 1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	for cpu := 0; cpu < 4; cpu++ {
		if q := d.XPSQueue(cpu); q != -1 {
			t.Errorf("CPU %d: XPS queue %d, want none", cpu, q)
		}
	}
}

func TestParseXPS(t *testing.T) {
	for in, want := range map[string]XPSMode{"": XPSIRQ, "irq": XPSIRQ, "cores": XPSCores, "none": XPSNone} {
		if got, err := ParseXPS(in); err != nil || got != want {
			t.Errorf("ParseXPS(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseXPS("numa"); err == nil || !strings.Contains(err.Error(), `"numa"`) {
		t.Errorf("ParseXPS(numa): %v, want an error naming it", err)
	}
}

// A received flow's interrupt comes to the IRQ CPU of the queue RSS
// picks: only IRQ CPUs, and different flows on different ones.
func TestRxCPU(t *testing.T) {
	n, d := steerDev(t, XPSIRQ, []int{8, 9, 10, 11})
	seen := map[int]int{}
	for i := 0; i < 64; i++ {
		k := skb.FlowKeys{Src: 0x0a010000 | uint32(i), Dst: 0x0a000001, SrcPort: 12865, DstPort: uint16(40000 + i), Proto: 6}
		cpu := n.RxCPU(d, k)
		if cpu < 8 || cpu > 11 {
			t.Fatalf("flow %d: interrupt on CPU %d, not an IRQ CPU", i, cpu)
		}
		if again := n.RxCPU(d, k); again != cpu {
			t.Fatalf("flow %d: CPU %d then %d", i, cpu, again)
		}
		seen[cpu]++
	}
	if len(seen) != 4 {
		t.Errorf("64 flows reached CPUs %v, want all 4 IRQ CPUs", seen)
	}
}

// Frames for the host's own sockets (TCP ACKs and downloads, ping and
// UDP_RR replies) steer by the same RSS as every other received frame:
// the local receive path runs each on the CPU RxCPU gives its keys, ICMP
// hashed over the addresses only; on a device without a wire (veth) on
// the CPU the peer sent on.
func TestDeliverSteersByRSS(t *testing.T) {
	for _, wire := range []bool{true, false} {
		n, d := steerDev(t, XPSIRQ, []int{8, 9, 10, 11})
		d.Info.Wire = wire
		type got struct{ want, ran int }
		var runs []*got
		n.E.At(1000, func() {
			for i := 0; i < 32; i++ {
				proto := uint8(6)
				if i%2 == 1 {
					proto = 1
				}
				k := skb.FlowKeys{Src: 0x0a010001, Dst: 0x0a000001 + uint32(i), SrcPort: 5201, DstPort: uint16(40000 + i), Proto: proto}
				g := &got{want: n.RxCPU(d, k), ran: -1}
				if !wire {
					g.want = i % 16
				}
				runs = append(runs, g)
				n.Deliver(d, n.E.Now(), k, i%16, func(c *sim.CPU) { g.ran = c.ID })
			}
		})
		if err := n.E.Run(sim.Millisecond); err != nil {
			t.Fatal(err)
		}
		for i, g := range runs {
			if g.ran != g.want {
				t.Errorf("wire %v, frame %d: received on CPU %d, want %d", wire, i, g.ran, g.want)
			}
		}
	}
	key := make([]byte, netdevRSSKeyLen)
	for i := range key {
		key[i] = byte(i*37 + 1)
	}
	a := skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 3, DstPort: 4, Proto: 1}
	b := a
	b.SrcPort, b.DstPort = 9, 10
	if RSSHash(key, a) != RSSHash(key, b) {
		t.Errorf("ICMP frames of one address pair hash apart by their ports")
	}
	a.Proto, b.Proto = 6, 6
	if RSSHash(key, a) == RSSHash(key, b) {
		t.Errorf("TCP frames of two port pairs hash alike")
	}
}

// connSock is a connected socket for netdev_pick_tx: it caches a queue.
type connSock struct{ TxqMapping }

func (*connSock) Release(*sim.CPU, *skb.SKB) {}

// A connected socket keeps the queue of its first packet wherever its
// thread runs next, unless the packet carries ooo_okay (d365c9bca35c:
// nothing of the socket in flight), which lets XPS choose again; with
// net.core.txq_reselection_ms the cached queue also expires that long
// after it was stamped, and choosing the same queue again restamps it
// only once it is a second old (4a7708443dec).
func TestPickTxStickyQueue(t *testing.T) {
	tests := []struct {
		name   string
		resel  int  // txq_reselection_ms
		ooo    bool // the second packet's ooo_okay
		after  sim.Time
		wantQ2 int // the queue of the packet sent from CPU 4 (XPS: queue 2)
	}{
		{"sticky", 0, false, 5 * sim.Second, 0},
		{"ooo_okay", 0, true, sim.Millisecond, 2},
		{"reselection not yet due", 1000, false, 900 * sim.Millisecond, 0},
		{"reselection due", 1000, false, 1100 * sim.Millisecond, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, d := steerDev(t, XPSCores, []int{0, 1, 2, 3})
			n.Cfg.TxqReselectionMs = tt.resel
			sock := &connSock{}
			owner := n.Pool.AddOwner(sock)
			send := func(cpu int, ooo bool) int {
				c := n.E.CPUs[cpu]
				s := n.AllocSkb(c)
				s.Owner, s.OooOkay = owner, ooo
				q := n.netdevCorePickTx(c, d, s).Index
				n.Pool.Put(s)
				return q
			}
			if q := send(0, true); q != 0 || sock.TxQueue() != 0 {
				t.Fatalf("first packet from CPU 0: queue %d, cached %d; want XPS's 0 cached", q, sock.TxQueue())
			}
			n.E.CPUs[4].Spend(int64(tt.after))
			if q := send(4, tt.ooo); q != tt.wantQ2 || sock.TxQueue() != tt.wantQ2 {
				t.Errorf("from CPU 4 %v later: queue %d, cached %d; want %d", tt.after, q, sock.TxQueue(), tt.wantQ2)
			}
		})
	}
}

// Choosing the queue the socket already has restamps the mapping only
// when the stamp is over a second old, so a busy flow that keeps
// choosing the same queue still expires every txq_reselection_ms.
func TestTxqMappingRestamp(t *testing.T) {
	var m TxqMapping
	if m.TxQueue() != -1 {
		t.Fatalf("zero mapping: queue %d, want -1 (NO_QUEUE_MAPPING)", m.TxQueue())
	}
	m.set(10*sim.Millisecond, 3)
	m.set(500*sim.Millisecond, 3)
	if m.at != 10 {
		t.Errorf("same queue 0.49 s later restamped to jiffy %d, want 10", m.at)
	}
	m.set(1020*sim.Millisecond, 3)
	if m.at != 1020 {
		t.Errorf("same queue 1.01 s later: stamp %d, want 1020", m.at)
	}
	m.set(1030*sim.Millisecond, 1)
	if m.TxQueue() != 1 || m.at != 1030 {
		t.Errorf("a new queue: %d at %d, want 1 at 1030", m.TxQueue(), m.at)
	}
}

// A frame for a local socket from the wire is an skb napi_build_skb
// built around the driver's RX buffer: its truesize is the buffer's.
// Without a wire (veth) the peer's skb arrives, whose truesize the
// sender knows (0); so too for a driver that says nothing of its RX.
func TestLocalRxTruesize(t *testing.T) {
	k := skb.FlowKeys{Src: 0x0a010001, Dst: 0x0a000001, SrcPort: 5201, DstPort: 40000, Proto: 6}
	for _, tc := range []struct {
		name string
		wire bool
		rx   *driver.RxInfo
		want uint32
	}{
		{"a NIC's 2 KB buffers", true, &driver.RxInfo{BufSize: 2048}, skb.TruesizeFrag(2048)},
		{"a NIC without RX information", true, nil, 0},
		{"veth", false, &driver.RxInfo{BufSize: 2048}, 0},
	} {
		n, d := steerDev(t, XPSIRQ, []int{8, 9, 10, 11})
		d.Info.Wire, d.Info.Rx = tc.wire, tc.rx
		if got := n.LocalRxTruesize(d, k); got != tc.want {
			t.Errorf("%s: truesize %d, want %d", tc.name, got, tc.want)
		}
	}
}
