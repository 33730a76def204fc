package netdev

import (
	"encoding/hex"
	"fmt"
	"math"
	"testing"

	_ "github.com/txlab/txlab/drivers/i40e"
	_ "github.com/txlab/txlab/drivers/idpf"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The Microsoft RSS verification suite (the "Verifying the RSS Hash
// Calculation" table): its key, and for each IPv4 4-tuple the hash over
// the addresses alone and over addresses and ports.
func TestToeplitzVerificationSuite(t *testing.T) {
	key, _ := hex.DecodeString("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
	ip := func(a, b, c, d uint32) uint32 { return a<<24 | b<<16 | c<<8 | d }
	for _, tc := range []struct {
		src, dst          uint32
		sport, dport      uint16
		ipOnly, withPorts uint32
	}{
		{ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766, 0x323e8fc2, 0x51ccc178},
		{ip(199, 92, 111, 2), ip(65, 69, 140, 83), 14230, 4739, 0xd718262a, 0xc626b0ea},
		{ip(24, 19, 198, 95), ip(12, 22, 207, 184), 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
		{ip(38, 27, 205, 30), ip(209, 142, 163, 6), 48228, 2217, 0x82989176, 0xafc7327f},
		{ip(153, 39, 163, 191), ip(202, 188, 127, 2), 44251, 1303, 0x5d1809c5, 0x10e828a2},
	} {
		k := skb.FlowKeys{Src: tc.src, Dst: tc.dst, SrcPort: tc.sport, DstPort: tc.dport}
		if got := RSSHash(key, k); got != tc.withPorts {
			t.Errorf("%08x -> %08x ports %d/%d: hash %08x, want %08x", tc.src, tc.dst, tc.sport, tc.dport, got, tc.withPorts)
		}
		in := []byte{byte(tc.src >> 24), byte(tc.src >> 16), byte(tc.src >> 8), byte(tc.src),
			byte(tc.dst >> 24), byte(tc.dst >> 16), byte(tc.dst >> 8), byte(tc.dst)}
		if got := Toeplitz(key, in); got != tc.ipOnly {
			t.Errorf("%08x -> %08x: IPv4 hash %08x, want %08x", tc.src, tc.dst, got, tc.ipOnly)
		}
	}
}

// RSS spreads many flows evenly over the queues, for any key (each seed
// draws its own, as each boot does), and a flow always lands on the same
// queue.
func TestRSSSpreadsFlows(t *testing.T) {
	for _, tc := range []struct {
		seed        uint64
		queues, lut int
	}{{1, 8, 2048}, {2, 4, 512}, {3, 32, 2048}, {4, 3, 512}} {
		t.Run(fmt.Sprintf("seed%d/%dq", tc.seed, tc.queues), func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), tc.seed)
			if err != nil {
				t.Fatal(err)
			}
			n := NewNet(e, Config{}, localMaker{})
			const flows = 8192
			per := make([]int, tc.queues)
			for i := 0; i < flows; i++ {
				r := e.Rand("test/flows")
				k := skb.FlowKeys{Src: r.Uint32(), Dst: r.Uint32(), SrcPort: uint16(r.Uint32()), DstPort: uint16(r.Uint32())}
				q := RSSQueue(RSSHash(n.rssKey(), k), tc.lut, tc.queues)
				if q2 := RSSQueue(RSSHash(n.rssKey(), k), tc.lut, tc.queues); q2 != q {
					t.Fatalf("flow %d on queue %d then %d", i, q, q2)
				}
				per[q]++
			}
			// Binomial: within 4 standard deviations of the mean.
			want := float64(flows) / float64(tc.queues)
			tol := 4 * math.Sqrt(want*(1-1/float64(tc.queues)))
			for q, c := range per {
				if d := float64(c) - want; d > tol || d < -tol {
					t.Errorf("queue %d got %d of %d flows, want %.0f +-%.0f: %v", q, c, flows, want, tol, per)
				}
			}
		})
	}
}

// testStream is a constant-rate stream of one flow per queue.
type testStream struct {
	period sim.Time
	k      int64
	flow   int32
}

func (s *testStream) Peek() (sim.Time, int32, bool) { return sim.Time(s.k) * s.period, s.flow, true }
func (s *testStream) Pop()                          { s.k++ }

// rxHarness is a host whose device eth0 receives on rxq queues at
// period per frame per queue and forwards back out of eth0.
func rxHarness(t *testing.T, cfg Config, costs *sim.Costs, drv string, opts []string, queues, rxq int, irq []int, period sim.Time, qd ...string) (*Net, *Device) {
	t.Helper()
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 16, ThreadsPerCore: 1}, costs, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	n := NewNet(e, cfg, localMaker{})
	d, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: drv, Args: opts, Queues: queues, Qdisc: qd, XPS: XPSIRQ,
		IRQCPUs: irq, RxQueues: rxq})
	if err != nil {
		t.Fatal(err)
	}
	flows := make([]skb.FlowKeys, 64)
	for i := range flows {
		flows[i] = skb.FlowKeys{Src: 0x0a000002, Dst: 0x0a010002, SrcPort: uint16(1024 + i), DstPort: 9, Proto: 17}
	}
	err = n.AttachRx(d, RxConfig{Flows: flows, FrameLen: 64, Out: d, Streams: func(qf [][]int32) ([]RxStream, error) {
		out := make([]RxStream, len(qf))
		for q := range qf {
			out[q] = &testStream{period: period, flow: int32(q % len(flows))}
		}
		return out, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return n, d
}

// When the RX CPU cannot keep up, the ring fills and the NIC drops what
// finds no buffer: counted per queue, at the port and as RX_MISSED, and
// offered = transmitted + dropped + in flight holds with them. No clean
// takes more than the NAPI weight, and the ring never holds more than
// size - 1 frames.
func TestRxRingOverflow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		drv      string
		opts     []string
		rxClean  int64
		period   sim.Time
		wantDrop bool
	}{
		{"ice keeps up", "ice", []string{"rx", "64"}, 120, 2 * sim.Microsecond, false},
		{"ice overloaded", "ice", []string{"rx", "64"}, 4000, 200 * sim.Nanosecond, true},
		{"i40e overloaded", "i40e", []string{"rx", "128"}, 4000, 200 * sim.Nanosecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			costs := sim.DefaultCosts()
			costs.RxClean = tc.rxClean
			n, d := rxHarness(t, profile(t, "6.18"), costs, tc.drv, tc.opts, 2, 2, nil, tc.period, "mq", "pfifo")
			if err := n.E.Run(3 * sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			n.RxCatchUp(n.E.Now())
			if err := n.CheckAccounting(); err != nil {
				t.Fatal(err)
			}
			frames := uint64(2 * (3*sim.Millisecond/tc.period + 1))
			if n.Offered != frames {
				t.Errorf("offered %d, the wire sent %d", n.Offered, frames)
			}
			key, port := n.RxPortDropped(d)
			var sum uint64
			for _, q := range n.RxQueues(d, n.E.Now()) {
				sum += q.Dropped
				if q.MaxUsed > uint64(q.RingSize-1) {
					t.Errorf("rxq %d held %d frames in a ring of %d", q.Queue, q.MaxUsed, q.RingSize)
				}
			}
			for _, r := range d.rx.rings {
				if r.maxClean > napiWeight {
					t.Errorf("rxq %d: one clean took %d frames, more than the weight %d", r.idx, r.maxClean, napiWeight)
				}
			}
			if sum != port || port != n.Drops[skb.DropRxMissed] {
				t.Errorf("drops: queues %d, %s %d, RX_MISSED %d", sum, key, port, n.Drops[skb.DropRxMissed])
			}
			if (port > 0) != tc.wantDrop {
				t.Errorf("RX drops %d, want some: %v", port, tc.wantDrop)
			}
			if tc.wantDrop && n.TxPkts == 0 {
				t.Error("nothing forwarded")
			}
			t.Logf("offered %d tx %d rx drops %d in flight %d", n.Offered, n.TxPkts, port, n.InFlightPackets())
		})
	}
}

// net_rx_action: a CPU with one NAPI polls it once per round and ends
// the round on the repoll list (no time_squeeze however loaded); a CPU
// with many NAPIs runs out of netdev_budget (time_squeeze). Under
// overload a vector interrupts once and then NAPI keeps polling with its
// interrupt masked; under light load every poll completes and the next
// frame interrupts again.
func TestNetRxActionBudget(t *testing.T) {
	costs := sim.DefaultCosts()
	costs.RxClean = 2000
	// 8 RX queues, every vector on CPU 0, far more than it can clean.
	n, d := rxHarness(t, profile(t, "6.18"), costs, "ice", nil, 8, 8, []int{0}, 100*sim.Nanosecond, "mq", "pfifo")
	if err := n.E.Run(2 * sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if sq := n.Softnet(0).TimeSqueeze; sq == 0 {
		t.Errorf("8 NAPIs on one CPU never ran out of budget: time_squeeze %d", sq)
	}
	for _, q := range n.RxQueues(d, n.E.Now()) {
		if q.Irqs > 1 {
			t.Errorf("rxq %d: %d interrupts while NAPI never completed", q.Queue, q.Irqs)
		}
	}

	// One queue per CPU, overloaded: polled over and over, never squeezed.
	n, d = rxHarness(t, profile(t, "6.18"), costs, "ice", nil, 2, 2, nil, 100*sim.Nanosecond, "mq", "pfifo")
	if err := n.E.Run(2 * sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, q := range n.RxQueues(d, n.E.Now()) {
		if sq := n.Softnet(q.CPU).TimeSqueeze; sq != 0 {
			t.Errorf("cpu%d with one NAPI: time_squeeze %d", q.CPU, sq)
		}
		if q.Polls < 10 || q.Irqs > 1 {
			t.Errorf("rxq %d: %d polls, %d interrupts", q.Queue, q.Polls, q.Irqs)
		}
	}

	// Light load: a frame every 200 us, each poll completes, each frame
	// interrupts.
	n, d = rxHarness(t, profile(t, "6.18"), sim.DefaultCosts(), "ice", nil, 2, 2, nil, 200*sim.Microsecond, "mq", "pfifo")
	if err := n.E.Run(2 * sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, q := range n.RxQueues(d, n.E.Now()) {
		if q.Packets < 9 || q.Irqs < q.Packets || q.Dropped != 0 {
			t.Errorf("rxq %d light load: %d frames, %d interrupts, %d drops", q.Queue, q.Packets, q.Irqs, q.Dropped)
		}
	}
}

// A forwarded skb's truesize is its RX buffer's (napi_build_skb on a
// 2048-byte fragment), and it leaves on the TX queue of the RX queue it
// came in on (XPS on the IRQ CPU, or skb_tx_hash's recorded RX queue).
func TestForwardedSkb(t *testing.T) {
	n, d := rxHarness(t, profile(t, "6.18"), sim.DefaultCosts(), "ice", nil, 4, 4, nil, 10*sim.Microsecond, "mq", "pfifo")
	var seen int
	n.Hooks.DriverXmit = func(c *sim.CPU, txq *TxQueue, l *skb.List) {
		for s := l.Head; s != nil; s = s.Next {
			seen++
			if s.TrueSize != skb.TruesizeFrag(2048) || s.TrueSize != 2304 {
				t.Fatalf("forwarded skb truesize %d", s.TrueSize)
			}
			if int(s.RxQueue)-1 != txq.Index {
				t.Fatalf("frame from rxq %d sent on txq %d", s.RxQueue-1, txq.Index)
			}
		}
	}
	if err := n.E.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if seen < 300 || d.RxTruesize() != 2304 {
		t.Errorf("%d frames forwarded, truesize %d", seen, d.RxTruesize())
	}
}

// i40e gives RX buffers back to the NIC when half the ring waits for
// them (i40e_clean_rx_irq's clean_threshold since v6.4), checked before
// each descriptor is read, so cleaned buffers wait across polls: every
// refill returns at least half the ring, never I40E_RX_BUFFER_WRITE's 32.
// ice returns them all at the end of each clean.
func TestRxRefillBatches(t *testing.T) {
	for _, tc := range []struct {
		drv     string
		ring    int
		atLeast uint64 // buffers per refill
	}{
		{"i40e", 128, 64},
		{"i40e", 512, 256},
		{"ice", 128, 1},
	} {
		t.Run(fmt.Sprintf("%s rx %d", tc.drv, tc.ring), func(t *testing.T) {
			n, d := rxHarness(t, profile(t, "6.18"), sim.DefaultCosts(), tc.drv, []string{"rx", fmt.Sprint(tc.ring)}, 2, 2, nil, sim.Microsecond, "mq", "pfifo")
			if err := n.E.Run(5 * sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, r := range d.rx.rings {
				if r.refills == 0 || r.packets < uint64(tc.ring) {
					t.Fatalf("rxq %d: %d refills of %d frames cleaned", r.idx, r.refills, r.packets)
				}
				returned := r.packets - uint64(r.unrefilled)
				if per := returned / r.refills; per < tc.atLeast {
					t.Errorf("rxq %d: %d buffers back in %d refills (%d each), want at least %d each", r.idx, returned, r.refills, per, tc.atLeast)
				}
				if tc.atLeast > 1 && r.unrefilled >= tc.ring/2 {
					t.Errorf("rxq %d: %d cleaned buffers still wait, threshold %d", r.idx, r.unrefilled, tc.ring/2)
				}
			}
		})
	}
}

// The RX DIM (ice_net_dim's and idpf_net_dim's RX half), run by the host
// from the driver's RxInfo: at a light per-queue rate every poll
// completes, each RX vector starts at the default profile's ITR and then
// moves as lib/dim decides, always on a profile's ITR (ice's no shorter
// than its 4 us INTRL); under overload NAPI never completes, so DIM takes
// no sample and the ITR stays; adaptive-rx off or rx-usecs alone keep
// the static ITR, and so does i40e's adaptive-rx off (its own adaptive
// ITR is tested with the driver: drivers/i40e).
func TestRxDIM(t *testing.T) {
	us := sim.Microsecond
	ice := []sim.Time{4 * us, 8 * us, 16 * us, 62 * us, 126 * us}
	idpf := []sim.Time{2 * us, 8 * us, 32 * us, 0, 0} // rx_itr[] as idpf_vport_init copies it (drivers/idpf)
	for _, tc := range []struct {
		drv      string
		opts     []string
		period   sim.Time // per frame per queue
		start    sim.Time
		profiles []sim.Time // the ITRs the vector may take; nil: static
		moves    bool
	}{
		{"ice", nil, 5 * us, 8 * us, ice, true},
		{"ice", nil, 100 * sim.Nanosecond, 8 * us, ice, false},
		{"ice", []string{"adaptive-rx", "on", "rx-usecs", "50"}, 5 * us, 8 * us, ice, true},
		{"ice", []string{"adaptive-rx", "off"}, 5 * us, 50 * us, nil, false},
		{"ice", []string{"rx-usecs", "20", "adaptive-rx", "off"}, 5 * us, 20 * us, nil, false},
		{"ice", []string{"adaptive-rx", "off", "adaptive-tx", "off", "rx-usecs", "2"}, 5 * us, 2 * us, nil, false},
		{"idpf", nil, 5 * us, 8 * us, idpf, true},
		{"idpf", []string{"adaptive-rx", "off"}, 5 * us, 50 * us, nil, false},
		{"idpf", []string{"rx-usecs", "20", "adaptive-rx", "off"}, 5 * us, 20 * us, nil, false},
		{"i40e", []string{"adaptive-rx", "off", "adaptive-tx", "off"}, 5 * us, 50 * us, nil, false},
	} {
		t.Run(fmt.Sprint(tc.drv, tc.opts, tc.period), func(t *testing.T) {
			costs := sim.DefaultCosts()
			if tc.period < us {
				costs.RxClean = 2000 // far more than the CPU can clean
			}
			n, d := rxHarness(t, profile(t, "6.18"), costs, tc.drv, tc.opts, 2, 2, nil, tc.period, "mq", "pfifo")
			for v, x := range d.rx.vecs {
				if x.itr != tc.start || (x.dim != nil) != (tc.profiles != nil) {
					t.Fatalf("vector %d starts at %v (dim %v), want %v (dim %v)", v, x.itr, x.dim != nil, tc.start, tc.profiles != nil)
				}
			}
			seen := map[sim.Time]bool{}
			var check func()
			check = func() {
				for v, x := range d.rx.vecs {
					if x.dim != nil && x.itr != tc.profiles[x.dim.ProfileIx] {
						t.Fatalf("vector %d at %v on profile %d", v, x.itr, x.dim.ProfileIx)
					}
					if x.dim == nil && x.itr != tc.start {
						t.Fatalf("static vector %d moved to %v", v, x.itr)
					}
					seen[x.itr] = true
				}
				n.E.At(n.E.Now()+50*us, check)
			}
			n.E.At(0, check)
			if err := n.E.Run(20 * sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, q := range n.RxQueues(d, n.E.Now()) {
				if q.Packets < 3000 || q.Irqs == 0 {
					t.Fatalf("rxq %d: %d frames, %d interrupts", q.Queue, q.Packets, q.Irqs)
				}
				if (q.DIMChanges > 0) != tc.moves || q.ITR != d.rx.vecs[q.Vector].itr {
					t.Errorf("rxq %d: %d RX DIM changes, ITR %v", q.Queue, q.DIMChanges, q.ITR)
				}
				t.Logf("rxq %d: %d frames, %d interrupts, %d polls, ITR %v after %d changes", q.Queue, q.Packets, q.Irqs, q.Polls, q.ITR, q.DIMChanges)
			}
			if moved := len(seen) > 1; moved != tc.moves {
				t.Errorf("the RX interval moved: %v, want %v (ITRs seen %v)", moved, tc.moves, seen)
			}
		})
	}
}
