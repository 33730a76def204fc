package drivertest

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// RxInfoWant is what CheckRxInfo expects of a driver's RxInfo: its RX
// defaults.
type RxInfoWant struct {
	Ring         int      // the default RX ring (ethtool -g rx)
	ITR          sim.Time // the default rx-usecs
	MaxQueues    int
	BufSize      int
	LUTSize      int
	QueuePackets string // the per-queue packets key (ethtool -S)
	// RefillHalf wants RefillBatch half the ring (i40e's
	// clean_threshold); else 0, all buffers at the end of the clean.
	RefillHalf bool
	// OwnITR wants the driver's own RX moderation (i40e_update_itr, not
	// lib/dim's): OwnITR set, no DIM profile and no rate limit, starting
	// at the configured RX ITR. Else the moderation is left to the
	// driver's RX moderation options test (CheckRx).
	OwnITR bool
}

// CheckRxInfo checks the receive side the host models for the driver
// newDriver makes: with RX queues, vectors for max(tx, rx) queue pairs,
// rx queue i on vector i, the driver's RX defaults (want) or what
// ethtool -G rx and -C rx-usecs set; a vector with only an RX ring has
// no TX clean; without RX queues no receive side at all.
func CheckRxInfo(t *testing.T, newDriver func() driver.Driver, want RxInfoWant) {
	t.Helper()
	for _, tc := range []struct {
		tx, rx, vectors int
		args            []string
		ring            int
		itr             sim.Time
	}{
		{4, 0, 4, nil, 0, 0},
		{4, 6, 6, nil, want.Ring, want.ITR},
		{4, 2, 4, []string{"rx", "1024", "rx-usecs", "10", "adaptive-rx", "off"}, 1024, 10 * sim.Microsecond},
	} {
		d := newDriver()
		info, err := d.Init(driver.Setup{Name: "eth0", NumTxQ: tc.tx, NumRxQ: tc.rx, NumCPUs: 8, Costs: sim.DefaultCosts()}, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if info.Vectors != tc.vectors || len(info.QueueVec) != tc.tx {
			t.Errorf("tx %d rx %d: %d vectors, %d tx queue vectors", tc.tx, tc.rx, info.Vectors, len(info.QueueVec))
		}
		if tc.rx == 0 {
			if info.Rx != nil {
				t.Errorf("no RX queues, but a receive side %+v", info.Rx)
			}
			continue
		}
		r := info.Rx
		if r == nil || !want.matches(r, tc.ring, tc.itr) {
			t.Fatalf("tx %d rx %d: rx info %+v", tc.tx, tc.rx, r)
		}
		if err := r.Validate(tc.rx); err != nil {
			t.Fatal(err)
		}
		for q, v := range r.QueueVec {
			if v != q {
				t.Errorf("rx queue %d on vector %d", q, v)
			}
		}
		for v := tc.tx; v < tc.vectors; v++ {
			if work, done := d.Poll(nil, v, 64); work != 0 || !done {
				t.Errorf("RX-only vector %d: poll %d %v", v, work, done)
			}
		}
	}
}

// matches reports whether r has w's defaults with this ring and ITR.
func (w RxInfoWant) matches(r *driver.RxInfo, ring int, itr sim.Time) bool {
	refill := 0
	if w.RefillHalf {
		refill = ring / 2
	}
	ok := r.RingSize == ring && r.ITR == itr && r.MaxQueues == w.MaxQueues && r.BufSize == w.BufSize &&
		r.RefillBatch == refill && r.LUTSize == w.LUTSize && r.QueuePackets == w.QueuePackets
	if w.OwnITR {
		ok = ok && r.OwnITR && len(r.ITRProfile) == 0 && r.INTRL == 0 && r.StartITR() == itr
	}
	return ok
}
