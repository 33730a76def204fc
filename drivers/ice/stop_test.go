package ice

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// ice_xmit_frame_ring on one bulk (xmit_more on all but the last), as
// the kernel has it: a packet goes in only with count + ICE_DESCS_PER_
// CACHE_LINE + ICE_DESCS_FOR_CTX_DESC descriptors free (else tx_busy and
// NETDEV_TX_BUSY); after each one ice_tx_map stops the queue once fewer
// than DESC_NEEDED (MAX_SKB_FRAGS + 6) are free. A bulk that ends on the
// stop leaves the queue stopped for the qdisc to see before its next
// dequeue; one that runs past it stops where the queue stopped, and
// dev_hard_start_xmit (netif_tx_queue_stopped with skbs left) turns the
// rest into NETDEV_TX_BUSY, which sch_direct_xmit requeues. Bulks bounded
// only by BQL (before 0345552a653c) overrun the ring this way.
func TestXmitStopsProactively(t *testing.T) {
	for _, tc := range []struct {
		name             string
		frags            int // CONFIG_MAX_SKB_FRAGS
		used             int // descriptors in use before the bulk
		bulk             int
		wantSent         int
		wantRC           driver.TxCode
		wantStop, wantBz bool
	}{
		// 63 free: DESC_NEEDED 23 stops after the 41st (22 free).
		{"fits", 17, 0, 10, 10, driver.TxOK, false, false},
		{"ends on the stop", 17, 0, 41, 41, driver.TxOK, true, false},
		{"one short of the stop", 17, 0, 40, 40, driver.TxOK, false, false},
		{"runs past the stop", 17, 0, 50, 41, driver.TxOK, true, false},
		// MAX_SKB_FRAGS 45: DESC_NEEDED 51, so 13 packets fill it.
		{"frags 45 runs past", 45, 0, 20, 13, driver.TxOK, true, false},
		// 5 free: fewer than the 6 one linear skb needs.
		{"no room for one", 17, 58, 3, 0, driver.TxBusy, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &ICE{}
			if _, err := d.Init(driver.Setup{NumTxQ: 1, NumCPUs: 2, Costs: sim.DefaultCosts(), MaxSkbFrags: tc.frags},
				[]string{"tx", "64"}); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, true)
			r := d.rings[0]
			for i := 0; i < tc.used; i++ {
				r.Put(0, 100, 1)
			}
			rest, rc := f.Xmit(d, 0, f.Packets(0, tc.bulk, 162))
			sent := tc.bulk - len(rest)
			if sent != tc.wantSent || rc != tc.wantRC {
				t.Fatalf("sent %d rc %#x, want %d %#x", sent, rc, tc.wantSent, tc.wantRC)
			}
			if got := f.QueueStopped(0); got != tc.wantStop {
				t.Errorf("queue stopped %v, want %v", got, tc.wantStop)
			}
			if got := d.rings[0].stats.Busy > 0; got != tc.wantBz {
				t.Errorf("tx_busy %d, want busy %v", d.rings[0].stats.Busy, tc.wantBz)
			}
			need := tc.frags + 1 + DescsPerCacheLn + DescsForCtxDesc
			if tc.wantStop && !tc.wantBz && r.Unused() >= need {
				t.Errorf("stopped with %d free, DESC_NEEDED %d", r.Unused(), need)
			}
		})
	}
}

// A TSO skb takes its head and its payload split at 12 KB a descriptor
// (ice_xmit_desc_count), and ice_tso's context descriptor: a 45-segment
// GSO skb of 68,130 bytes takes 1 + 6 + 1 slots, so a 64-descriptor
// ring holds a few of them, not 64; a linear skb still takes one.
func TestTSODescriptors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		segs      uint16
		len       uint32
		wantSlots int
	}{{"linear", 1, 162, 1}, {"TSO 45 x 1514", 45, 45 * 1514, 8}, {"TSO 2 x 1514", 2, 2 * 1514, 3}} {
		d := &ICE{}
		if _, err := d.Init(driver.Setup{NumTxQ: 1, NumCPUs: 2, Costs: sim.DefaultCosts()}, []string{"tx", "64"}); err != nil {
			t.Fatal(err)
		}
		f := newFake(t, 1, true)
		p := f.Packets(0, 1, tc.len)
		p[0].GSOSegs = tc.segs
		before := d.rings[0].Unused()
		if rest, rc := f.Xmit(d, 0, p); len(rest) != 0 || rc != driver.TxOK {
			t.Fatalf("%s: refused (rc %#x)", tc.name, rc)
		}
		if used := before - d.rings[0].Unused(); used != tc.wantSlots {
			t.Errorf("%s: %d descriptors used, want %d", tc.name, used, tc.wantSlots)
		}
	}
}

// A reprieve: the queue stopped for want of descriptors, and the
// re-check after the barrier finds that a clean on another CPU freed
// some. ice restarts it with netif_tx_start_queue ("A reprieve! - use
// start_queue because it doesn't call schedule"): the queue runs on and
// the qdisc is not rescheduled (no __netif_schedule, no NET_TX raised).
func TestReprieveDoesNotReschedule(t *testing.T) {
	d := &ICE{}
	if _, err := d.Init(driver.Setup{NumTxQ: 1, NumCPUs: 2, Costs: sim.DefaultCosts()}, []string{"tx", "64"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, true)
	r := d.rings[0]
	for range 40 { // 23 free: under DESC_NEEDED (23) after one more
		r.Put(0, 100, 1)
	}
	f.OnStop = func(int) { r.NTC = (r.NTC + 32) % len(r.Desc) } // another CPU's clean
	rest, rc := f.Xmit(d, 0, f.Packets(0, 1, 162))
	if len(rest) != 0 || rc != driver.TxOK {
		t.Fatalf("rest %d rc %#x", len(rest), rc)
	}
	if f.QueueStopped(0) || f.Stops[0] != 1 || r.stats.Restart != 1 {
		t.Errorf("stopped %v, stops %d, restart_q %d: want the reprieve's restart", f.QueueStopped(0), f.Stops[0], r.stats.Restart)
	}
	if f.Scheds[0] != 0 || f.Wakes[0] != 0 {
		t.Errorf("%d reschedules, %d wakes: netif_tx_start_queue reschedules nothing", f.Scheds[0], f.Wakes[0])
	}
}

// NAPI leaving wb_on_itr: a run of polls that went over the clean budget
// ends with a software interrupt (ice_enable_interrupt's SWINT_TRIG,
// rate-limited to ICE_ITR_20K after the last interrupt) whatever is
// pending; a run that completed at once, or a vector whose RX ring the
// host polls, raises none.
func TestWbOnITRSoftwareInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pkts, rxq int
		wantSW    bool
	}{
		{"over budget", 300, 0, true},
		{"within budget", 100, 0, false},
		{"a vector with an RX ring", 300, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &ICE{}
			if _, err := d.Init(driver.Setup{NumTxQ: 1, NumRxQ: tc.rxq, NumCPUs: 2, Costs: sim.DefaultCosts()},
				[]string{"tx", "1024", "adaptive-tx", "off", "adaptive-rx", "off"}); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, true)
			if rest, _ := f.Xmit(d, 0, f.Packets(0, tc.pkts, 162)); len(rest) != 0 {
				t.Fatalf("%d packets left out", len(rest))
			}
			f.Clock += 10 * sim.Millisecond // every packet completed
			f.Irqs = nil
			polls := d.vecs[0].Polls
			f.Poll(d, 0, nil)
			if got := d.vecs[0].Polls - polls; (got > 1) != (tc.pkts > d.work) {
				t.Fatalf("%d polls for %d packets, budget %d", got, tc.pkts, d.work)
			}
			if sw := len(f.Irqs) == 1 && f.Irqs[0].At == f.Clock; sw != tc.wantSW || len(f.Irqs) > 1 {
				t.Errorf("interrupts after the poll run %v (clock %d), want a software one now: %v", f.Irqs, f.Clock, tc.wantSW)
			}
		})
	}
}
