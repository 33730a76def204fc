package i40e

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// i40e_update_itr on one container, each case worked by hand from the
// kernel's function (25G: i40e_itr_divisor 1024). Targets and currents
// are register values: microseconds, bit 15 latency mode.
func TestUpdateITR(t *testing.T) {
	const lat = itrAdaptiveLatency
	for _, tc := range []struct {
		name          string
		rx            bool
		pkts, bytes   uint32
		now           int64  // jiffies (the container's next update is 1)
		countdown     int    // itr_countdown
		target        uint16 // the container's target before
		txTarget      uint16 // the TX container's (for an RX update)
		rxTarget      uint16 // the RX container's (for a TX update; 0: 50)
		txCur, rxCur  uint16
		want          uint16
		wantCountdown int
	}{
		// No update for over a jiffy: the defaults, RX low latency, TX
		// the longest delay, both in latency mode.
		{name: "rx stale", rx: true, pkts: 500, bytes: 32000, now: 2, target: 50, want: 2 | lat},
		{name: "tx stale", pkts: 500, bytes: 32000, now: 2, target: 50, want: 126 | lat},
		// A write in the last interrupts: the sample is thrown away.
		{name: "countdown", rx: true, pkts: 500, bytes: 32000, now: 1, countdown: 2, target: 40, want: 40, wantCountdown: 2},
		// RX, 1-3 small frames with TX in latency mode: latency, sized
		// for 64 B: 64*40+1696 = 4256, halved 2128, /1024 up = 3 steps.
		{name: "rx latency", rx: true, pkts: 2, bytes: 128, target: 50, txTarget: 50 | lat, want: lat | 6},
		// The same with TX in bulk mode: too few frames, a step up.
		{name: "rx few, tx bulk", rx: true, pkts: 2, bytes: 128, target: 50, txTarget: 50, want: 52},
		// An idle RX container climbs a step per update to 126.
		{name: "rx idle", rx: true, target: 124, want: 126},
		{name: "rx idle at the top", rx: true, target: 126, want: 126},
		{name: "rx idle, latency kept", rx: true, target: lat | 126, want: lat | 126},
		// TX under 4 packets with both targets at the top: back to the
		// TX default, 126 in latency mode (so that RX can relax).
		{name: "tx few, both maxed", pkts: 3, target: 126, rxTarget: 126, want: lat | 126},
		// ... with RX's target lower: a step up, clamped, no flag.
		{name: "tx few, rx lower", pkts: 3, target: 126, rxTarget: 50, want: 126},
		// TSO: 10 skbs of 45 segments of 1514 B are 450 packets of
		// 1514 B: bulk, 1514*5+22420 = 29990 -> 30 steps, 60 us.
		{name: "tx tso bulk", pkts: 450, bytes: 450 * 1514, target: 50, want: 60},
		// TX over 32 packets leaves latency mode; 40 < 56: a step up
		// from the target without the flag.
		{name: "tx 40", pkts: 40, bytes: 2560, target: lat | 20, want: 22},
		// 56-112: the goldilocks zone keeps min(tx, rx current).
		{name: "rx 100", rx: true, pkts: 100, bytes: 6400, target: 50, txCur: 30, rxCur: 50, want: 30},
		// 113-256: half of it, no less than 2.
		{name: "tx 200", pkts: 200, bytes: 12800, target: 50, txCur: 50, rxCur: 50, want: 24},
		{name: "tx 200 at 2", pkts: 200, bytes: 12800, target: 2, txCur: 2, rxCur: 2, want: 2},
		// Over 256: bulk, sized: 64 B is 4256 -> 5 steps of 2 = 10 us.
		{name: "rx bulk 64 B", rx: true, pkts: 300, bytes: 19200, target: 50, want: 10},
		// 1500 B: 1500*5+22420 = 29920 -> 30 steps, 60 us.
		{name: "rx bulk 1500 B", rx: true, pkts: 300, bytes: 450000, target: 50, want: 60},
		// 60 B and under: 4096 -> 4 steps.
		{name: "tx bulk 60 B", pkts: 1000, bytes: 60000, target: 50, want: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newITRVector(50*sim.Microsecond, 50*sim.Microsecond, true, true)
			q.countdown = tc.countdown
			q.tx.current, q.rx.current = tc.txCur, tc.rxCur
			q.tx.target = tc.txTarget
			if tc.rxTarget != 0 {
				q.rx.target = tc.rxTarget
			}
			rc := &q.tx
			if tc.rx {
				rc = &q.rx
			}
			rc.target, rc.totalPackets, rc.totalBytes = tc.target, tc.pkts, tc.bytes
			q.updateITR(tc.now, rc, tc.rx, itrDivisor(DefaultRate))
			if rc.target != tc.want || q.countdown != tc.wantCountdown {
				t.Errorf("target %#x countdown %d, want %#x %d", rc.target, q.countdown, tc.want, tc.wantCountdown)
			}
			if rc.totalPackets != 0 || rc.totalBytes != 0 || rc.nextUpdate != tc.now+1 {
				t.Errorf("counts %d/%d, next update %d: want cleared, %d", rc.totalPackets, rc.totalBytes, rc.nextUpdate, tc.now+1)
			}
		})
	}
}

// A static container (adaptive off) is left alone.
func TestUpdateITRStatic(t *testing.T) {
	q := newITRVector(20*sim.Microsecond, 25*sim.Microsecond, false, false)
	if q.tx.target != 20 || q.rx.target != 26 {
		t.Fatalf("targets %d, %d: want 20 and 25 aligned up to 26", q.tx.target, q.rx.target)
	}
	q.rx.totalPackets, q.rx.totalBytes = 300, 19200
	if q.updateEnableITR(1, itrDivisor(DefaultRate)) || q.rx.current != 26 || q.rx.totalPackets != 300 {
		t.Fatalf("static vector changed: %+v", q)
	}
}

// i40e_update_enable_itr writes at most one ITR an interrupt, by
// priority, and each write holds the next samples off for three
// interrupts.
func TestUpdateEnableITR(t *testing.T) {
	div := itrDivisor(DefaultRate)
	q := newITRVector(50*sim.Microsecond, 50*sim.Microsecond, true, true)
	// RX bulk (target 10, a decrease) and TX idle (a step up, 52): the
	// RX decrease goes first.
	q.rx.totalPackets, q.rx.totalBytes = 300, 19200
	if !q.updateEnableITR(1, div) || q.rx.current != 10 || q.tx.current != 50 || q.tx.target != 52 || q.countdown != 3 {
		t.Fatalf("first: %+v", q)
	}
	// The next three samples are thrown away (target kept), TX's
	// pending increase is written next, the countdown restarts.
	q.rx.totalPackets, q.rx.totalBytes = 300, 19200
	if !q.updateEnableITR(1, div) || q.tx.current != 52 || q.rx.current != 10 || q.countdown != 3 {
		t.Fatalf("second: %+v", q)
	}
	for i := 0; i < 3; i++ {
		if q.updateEnableITR(1, div) {
			t.Fatalf("update %d wrote: %+v", i, q)
		}
	}
	if q.countdown != 0 || q.changes != 2 {
		t.Fatalf("after three quiet interrupts: %+v", q)
	}
	// Samples count again: an idle RX container climbs 10 -> 12.
	if !q.updateEnableITR(1, div) || q.rx.current != 12 {
		t.Fatalf("idle RX: %+v", q)
	}
	// Over a jiffy without an update: both back to their defaults in
	// latency mode, RX 2 us and TX 126 us, each an increase as compared
	// (the flag is bit 15); TX's is the larger, so TX is written first,
	// then RX at the next interrupt (its target kept by the countdown).
	q.countdown = 0
	if !q.updateEnableITR(3, div) || q.tx.current != itrAdaptiveLatency|126 || q.rx.current != 12 {
		t.Fatalf("stale: %+v", q)
	}
	if !q.updateEnableITR(3, div) || q.rx.current != itrAdaptiveLatency|2 || usecs(q.rx.current) != 2*sim.Microsecond ||
		usecs(q.tx.current) != 126*sim.Microsecond {
		t.Fatalf("after stale: %+v", q)
	}
}

func TestITRDivisor(t *testing.T) {
	for _, tc := range []struct {
		rate int64
		want uint32
	}{{40e9, 2048}, {25e9, 1024}, {20e9, 1024}, {10e9, 512}, {5e9, 512}, {1e9, 64}, {1e8, 64}} {
		if got := itrDivisor(tc.rate); got != tc.want {
			t.Errorf("%v bit/s: %d, want %d", tc.rate, got, tc.want)
		}
	}
}

// On a device without RX queues the vector's TX container moves at each
// completed poll (its RX container idle, climbing): every update sees
// 300 completions, "bulk" (over 256 packets), sized for 1000-byte
// frames: 1000*15+11452 = 26452 -> 26 steps, 52 us. The report's
// tx_itr_usecs follows the vector. A TSO packet counts its segments.
func TestTxITRMoves(t *testing.T) {
	d, f := txOnly(t)
	for i := 0; i < 20; i++ {
		if rest, _ := f.Xmit(d, 0, f.Packets(0, 300, 1000)); len(rest) > 0 {
			t.Fatalf("bulk %d: %d not taken", i, len(rest))
		}
		f.Clock += 200 * sim.Microsecond // all on the wire and done
		f.Poll(d, 0, nil)
	}
	if d.mod[0].changes == 0 || d.vecs[0].ITR != 52*sim.Microsecond {
		t.Fatalf("TX ITR stayed at %v (%d changes)", d.vecs[0].ITR, d.mod[0].changes)
	}
	st := d.Stats()[0]
	if c := counter(st.Extra, "tx_itr_usecs"); c != uint64(d.vecs[0].ITR/sim.Microsecond) {
		t.Errorf("tx_itr_usecs %d, ITR %v", c, d.vecs[0].ITR)
	}
	if c := counter(st.Extra, "itr_changes"); c != d.mod[0].changes {
		t.Errorf("itr_changes %d, want %d", c, d.mod[0].changes)
	}
	t.Logf("TX ITR %v after %d changes (RX container %v)", d.vecs[0].ITR, d.mod[0].changes, usecs(d.mod[0].rx.current))
}

func counter(cs []driver.Counter, name string) uint64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return 1<<64 - 1
}

// TSO skbs count as their segments, as i40e_clean_tx_irq adds
// tx_buf->gso_segs to total_packets: ten 45-segment skbs an interrupt
// are 450 packets of 1514 bytes, "bulk": 60 us at 25G, where counting
// skbs (10, under 56) would step the ITR up towards 126.
func TestTxITRCountsSegments(t *testing.T) {
	d, f := txOnly(t)
	for i := 0; i < 10; i++ {
		batch := f.Packets(0, 10, 45*1514)
		for j := range batch {
			batch[j].GSOSegs = 45
		}
		if rest, _ := f.Xmit(d, 0, batch); len(rest) > 0 {
			t.Fatalf("bulk %d: %d not taken", i, len(rest))
		}
		f.Clock += 2 * sim.Millisecond / 3 // done, and an update within the jiffy
		f.Poll(d, 0, nil)
	}
	if d.vecs[0].ITR != 60*sim.Microsecond {
		t.Fatalf("TX ITR %v after %d changes, want 60us", d.vecs[0].ITR, d.mod[0].changes)
	}
}

// txOnly is one TX queue of 1024 descriptors, no RX rings, on the fake
// host.
func txOnly(t *testing.T) (*I40E, *fakeCtx) {
	t.Helper()
	d := &I40E{}
	if _, err := d.Init(setup(1), []string{"tx", "1024"}); err != nil {
		t.Fatal(err)
	}
	return d, newFake(t, 1, false)
}
