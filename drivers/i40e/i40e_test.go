package i40e

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func setup(nq int) driver.Setup {
	return driver.Setup{Name: "eth0", NumTxQ: nq, NumCPUs: 8, Costs: sim.DefaultCosts()}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		args    []string
		ring    int
		numTC   int
		wantErr string
	}{
		{args: nil, ring: 512, numTC: 1},
		{args: []string{"tx", "64"}, ring: 64, numTC: 1},
		{args: []string{"tx", "4096", "tx-usecs", "20", "adaptive-tx", "off", "work", "64"}, ring: 4096, numTC: 1},
		// __i40e_set_coalesce: a change while the side stays adaptive
		// is -EINVAL; the current 50 is taken.
		{args: []string{"tx-usecs", "50", "rx-usecs", "50"}, ring: 512, numTC: 1},
		{args: []string{"tx-usecs", "20"}, wantErr: "i40e: tx-usecs 20: TX interrupt moderation cannot be changed if adaptive-tx is enabled."},
		{args: []string{"rx-usecs", "20", "adaptive-tx", "off"}, wantErr: "i40e: rx-usecs 20: RX interrupt moderation cannot be changed if adaptive-rx is enabled."},
		// RX's refusal and range, then TX's.
		{args: []string{"rx-usecs", "9000", "adaptive-rx", "off", "tx-usecs", "20"}, wantErr: "i40e: rx-usecs 9000: at most 8160"},
		{args: []string{"dcb-tc", "2", "up2tc", "0,1,0,0,0,0,0,1"}, ring: 512, numTC: 2},
		{args: []string{"tx", "32"}, wantErr: "must be in [64, 4096]"},
		{args: []string{"tx", "8160"}, wantErr: "must be in [64, 4096]"},
		// i40e_set_ringparam rounds up to I40E_REQ_DESCRIPTOR_MULTIPLE.
		{args: []string{"tx", "100"}, ring: 128, numTC: 1},
		{args: []string{"tx", "4090"}, ring: 4096, numTC: 1},
		{args: []string{"dcb-tc", "9"}, wantErr: "dcb-tc must be"},
		{args: []string{"dcb-tc", "8"}, wantErr: "needs at least as many queues"},
		{args: []string{"up2tc", "0,1"}, wantErr: "needs 8"},
		{args: []string{"up2tc", "0,1,2,3,4,5,6,9"}, wantErr: "must be a TC"},
		{args: []string{"rx-frames", "8"}, wantErr: "unknown option"},
		{args: []string{"rx", "4100"}, wantErr: "rx ring size 4100"},
		{args: []string{"tx-usecs"}, wantErr: "needs a value"},
		{args: []string{"adaptive-tx", "off", "adaptive-rx", "on"}, ring: 512, numTC: 1},
		{args: []string{"adaptive-rx", "yes"}, wantErr: `adaptive-rx "yes": want on or off`},
		{args: []string{"tx-usecs", "8162", "adaptive-tx", "off"}, wantErr: "tx-usecs 8162: at most 8160 (I40E_MAX_ITR)"},
		{args: []string{"rx-usecs", "10000", "adaptive-rx", "off"}, wantErr: "rx-usecs 10000: at most 8160"},
		{args: []string{"tx-usecs", "8160", "adaptive-tx", "off"}, ring: 512, numTC: 1},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			d := &I40E{}
			info, ok := drivertest.Init(t, d, setup(4), tc.args, tc.wantErr)
			if !ok {
				return
			}
			if info.RingSize != tc.ring || d.numTC != tc.numTC {
				t.Errorf("ring %d numtc %d; want %d %d", info.RingSize, d.numTC, tc.ring, tc.numTC)
			}
			if info.RateBps != DefaultRate || !info.BQL || info.Vectors != 4 || !info.Wire {
				t.Errorf("info %+v: want 25G, BQL, one vector per queue", info)
			}
		})
	}
}

func checker(t *testing.T, d *I40E, f *fakeCtx) func() {
	return func() {
		t.Helper()
		for i, r := range d.rings {
			held := 0
			for _, p := range f.Held {
				if int(p.Queue) == i {
					held++
				}
			}
			// One descriptor per packet: what the host sees in the driver
			// is what the ring holds. A wrapped NTU would break this.
			if u := r.Used(); u != held || u > len(r.Desc)-1 {
				t.Fatalf("q%d: ring uses %d of %d descriptors, host sees %d packets in it", i, u, len(r.Desc), held)
			}
		}
	}
}

// Ring accounting under load: stop before the ring overflows, wake at
// TX_WAKE_THRESHOLD from the clean, every packet completes, counters add
// up per queue and in total.
func TestRingAccounting(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		nq, bulk  int
		size      uint32
		bql       bool
		wantStops bool
	}{
		{"min ring", []string{"tx", "64"}, 1, 32, 60, false, true},
		{"default ring, big bulks", nil, 1, 128, 1500, false, true},
		{"4 queues bql", nil, 4, 16, 1000, true, false},
		{"4 queues no bql small ring", []string{"tx", "128"}, 4, 64, 300, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &I40E{}
			if _, err := d.Init(setup(tc.nq), tc.args); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, tc.nq, tc.bql)
			f.OnWake = func(q int) {
				if f.InPoll && d.rings[q].Unused() < TxWakeThreshold {
					t.Errorf("q%d woken with %d descriptors free, threshold %d", q, d.rings[q].Unused(), TxWakeThreshold)
				}
			}
			const total = 4000
			busy := f.Pump(d, tc.nq, total, tc.bulk, tc.size, 300, checker(t, d, f))
			st := d.Stats()
			var pkts uint64
			for i, s := range st {
				if s.Packets != f.Consumed[i] || s.Bytes != f.ConsumedB[i] || s.Packets != total {
					t.Errorf("q%d: stats %d pkts %d bytes, host consumed %d / %d, offered %d", i, s.Packets, s.Bytes, f.Consumed[i], f.ConsumedB[i], total)
				}
				if f.SentBytes[i] != f.ComplBytes[i] {
					t.Errorf("q%d: BQL sent %d completed %d", i, f.SentBytes[i], f.ComplBytes[i])
				}
				pkts += s.Packets
			}
			if pkts != uint64(total*tc.nq) {
				t.Errorf("device total %d, want %d", pkts, total*tc.nq)
			}
			hostStops := f.CheckStopsWakes(st, busy)
			if tc.wantStops && hostStops == 0 {
				t.Error("the queue never stopped")
			}
		})
	}
}

// RS every WB_STRIDE packets: the clean sees packets in strides, and the
// tail of a burst is written back by the forced write-back.
func TestRSStride(t *testing.T) {
	d := &I40E{}
	if _, err := d.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	r := d.rings[0]
	// Two packets on an idle ring: no RS yet, forced write-back.
	f.Xmit(d, 0, f.Packets(0, 2, 100))
	if r.rs[0] || r.rs[1] || r.forceWB != 1 {
		t.Fatalf("rs %v %v forceWB %d", r.rs[0], r.rs[1], r.forceWB)
	}
	// Nine more in one bulk: RS on the 4th and 8th packet overall.
	f.Xmit(d, 0, f.Packets(0, 9, 100))
	var rs []int
	for i := 0; i < 11; i++ {
		if r.rs[i] {
			rs = append(rs, i)
		}
	}
	if len(rs) != 2 || rs[0] != 3 || rs[1] != 7 {
		t.Fatalf("RS on %v, want [3 7]", rs)
	}
	if r.stats.Doorbells != 2 {
		t.Fatalf("%d doorbells, want one per bulk", r.stats.Doorbells)
	}
	late := r.Desc[10].DoneAt + sim.Millisecond
	if got := d.visible(r, r.Desc[2].DoneAt); got != 2 {
		t.Errorf("when the 3rd packet is done %d visible, want 2 (the forced write-back)", got)
	}
	if got := d.visible(r, late); got != 8 {
		t.Errorf("all done: %d visible, want 8 (up to the last RS)", got)
	}
	f.Clock = late
	f.Poll(d, 0, nil)
	if r.stats.Packets != 8 || f.Consumed[0] != 8 {
		t.Fatalf("first clean took %d packets, want 8", r.stats.Packets)
	}
	// The clean arms a forced write-back for the 3 left (i40e_arm_wb).
	if len(f.Irqs) == 0 || r.forceWB != 2 {
		t.Fatalf("no write-back armed for the tail: irqs %v forceWB %d", f.Irqs, r.forceWB)
	}
	f.Clock = max(f.Clock, f.Irqs[len(f.Irqs)-1].At)
	f.Irqs = nil
	f.Poll(d, 0, nil)
	if r.stats.Packets != 11 || r.Used() != 0 {
		t.Fatalf("after the forced write-back %d cleaned, %d used; want 11, 0", r.stats.Packets, r.Used())
	}
}

// The BUSY path: i40e_maybe_stop_tx(count + 4 + 1) refuses, the queue is
// stopped, and the tail is written when the queue stopped mid-bulk.
func TestBusyAndTail(t *testing.T) {
	for _, tc := range []struct{ frags, descNeeded int }{{0, DescNeeded}, {17, 23}, {45, 51}} {
		busyAndTail(t, tc.frags, tc.descNeeded)
	}
}

// busyAndTail runs the BUSY path with the host's MAX_SKB_FRAGS frags
// (0: unset, the default): DESC_NEEDED is MAX_SKB_FRAGS + 6.
func busyAndTail(t *testing.T, frags, descNeeded int) {
	d := &I40E{}
	s := setup(1)
	s.MaxSkbFrags = frags
	if _, err := d.Init(s, []string{"tx", "64"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	rest, rc := f.Xmit(d, 0, f.Packets(0, 100, 60))
	r := d.rings[0]
	// 63 usable slots; after a packet leaves < DESC_NEEDED free the
	// queue stops and dev_hard_start_xmit stops the bulk.
	if rc != driver.TxOK || !f.DrvXoff[0] || r.Tail != r.NTU {
		t.Fatalf("frags %d: rc %#x stopped %v tail %d ntu %d: want a stop with the tail written", frags, rc, f.DrvXoff[0], r.Tail, r.NTU)
	}
	if sent := 100 - len(rest); sent != 63-descNeeded+1 {
		t.Fatalf("frags %d: %d accepted, want %d (DESC_NEEDED %d)", frags, sent, 63-descNeeded+1, descNeeded)
	}
	// A stack that ignored the stop would fill the ring until fewer than
	// count + 4 + 1 are free; then the driver refuses with BUSY.
	for i := 0; i < 100 && rc != driver.TxBusy; i++ {
		f.DrvXoff[0] = false
		rest, rc = f.Xmit(d, 0, rest)
	}
	if rc != driver.TxBusy || r.stats.Busy != 1 || !f.DrvXoff[0] || r.Used() != 63-(1+4+1)+1 {
		t.Fatalf("rc %#x busy %d used %d: want NETDEV_TX_BUSY with %d used", rc, r.stats.Busy, r.Used(), 63-(1+4+1)+1)
	}
}

func TestSelectQueue(t *testing.T) {
	d := &I40E{}
	if _, err := d.Init(setup(8), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.SelectQueue(skb.Packet{Hash: 7}, 8); ok {
		t.Fatal("numtc 1 must fall back to netdev_pick_tx")
	}
	d = &I40E{}
	if _, err := d.Init(setup(8), []string{"dcb-tc", "2", "up2tc", "0,1,0,0,0,0,0,0"}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for i := 0; i < 4000; i++ {
		prio := uint32(i % 2)
		q, ok := d.SelectQueue(skb.Packet{Hash: uint32(i) * 2654435761, Priority: prio, Sock: -1}, 8)
		if !ok {
			t.Fatal("DCB select fell back")
		}
		lo := int(prio) * 4
		if q < lo || q >= lo+4 {
			t.Fatalf("priority %d went to queue %d, want TC%d's [%d, %d)", prio, q, prio, lo, lo+4)
		}
		seen[q]++
	}
	for q := 0; q < 8; q++ {
		if seen[q] < 300 {
			t.Errorf("queue %d got %d of 4000: the hash does not spread", q, seen[q])
		}
	}
}

// i40e_set_ringparam: both rings rounded up to 32 inside [64, 4096].
func TestRingParam(t *testing.T) {
	drivertest.CheckRings(t, func() driver.Driver { return &I40E{} }, []drivertest.RingCase{
		{Args: []string{"tx", "70", "rx", "1000"}, Tx: 96, Rx: 1024},
		{Args: []string{"rx", "4097"}, Err: "i40e: rx ring size 4097 must be in [64, 4096]"},
	})
}
