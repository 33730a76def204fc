package run

import (
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
)

// busylockDUT runs E2b's busylock DUT in small (6.18, root cake on i40e,
// 21 Mpps forwarded, 20 ms: over 10 ms its start decided more than the
// toggle did, paravirt spinlocks forwarding 3% more) with toggle set on
// or off, and checks its accounting.
func busylockDUT(t *testing.T, toggle string, on bool) *report.Report {
	t.Helper()
	s := fwd("6.18", "cake besteffort", 21e6)
	s.Duration = 20 * sim.Millisecond
	if on {
		s.Set = append(s.Set, toggle+"=on")
	}
	rep := mustRun(t, s)
	if !rep.AccountingOK {
		t.Fatalf("%s %v: accounting: %s", toggle, on, rep.AccountingError)
	}
	return rep
}

// The lockdep toggle prices a debug kernel: the report's cost table
// shows lockdep's costs added where the code takes locks, and E2b's
// busylock DUT (every packet through the busylock and the root lock)
// forwards less with it than without.
func TestLockdepSlowsTheLockedPath(t *testing.T) {
	var tx [2]uint64
	for i, on := range []bool{false, true} {
		rep := busylockDUT(t, "lockdep", on)
		tx[i] = rep.TxPackets
		want := int64(8)
		if on {
			want += 12 // spin_acquire + lockdep_acquire
		}
		if rep.Costs["spin_acquire"] != want {
			t.Errorf("lockdep %v: report's spin_acquire %d, want %d", on, rep.Costs["spin_acquire"], want)
		}
	}
	t.Logf("forwarded %d without lockdep, %d with", tx[0], tx[1])
	if tx[1] >= tx[0] {
		t.Errorf("forwarded %d packets with lockdep, %d without: a debug kernel should forward less", tx[1], tx[0])
	}
}

// The pv_spinlocks toggle runs the spinlocks as a KVM guest's: the
// report's config says so, and E2b's busylock DUT, whose busylock and
// root lock change hands with waiters spinning at nearly every packet,
// forwards less, each contended unlock a locked cmpxchg that waits for
// the lock word to come back from its waiter.
func TestPvSpinlocksSlowContendedUnlocks(t *testing.T) {
	var tx [2]uint64
	for i, on := range []bool{false, true} {
		rep := busylockDUT(t, "pv_spinlocks", on)
		if got, want := rep.Config["pv_spinlocks"], map[bool]string{false: "off", true: "on"}[on]; got != want {
			t.Errorf("report's config pv_spinlocks %q, want %q", got, want)
		}
		tx[i] = rep.TxPackets
	}
	t.Logf("forwarded %d natively, %d with paravirt spinlocks", tx[0], tx[1])
	if tx[1] >= tx[0] {
		t.Errorf("forwarded %d packets with paravirt spinlocks, %d without: a contended unlock should cost more", tx[1], tx[0])
	}
}
