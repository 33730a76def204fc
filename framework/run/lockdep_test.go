package run

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// The lockdep toggle prices a debug kernel: the report's cost table
// shows lockdep's costs added where the code takes locks, and E2b's
// busylock DUT (every packet through the busylock and the root lock)
// forwards less with it than without.
func TestLockdepSlowsTheLockedPath(t *testing.T) {
	var tx [2]uint64
	for i, on := range []bool{false, true} {
		s := fwd("6.18", "cake besteffort", 21e6)
		s.Duration = 10 * sim.Millisecond
		if on {
			s.Set = append(s.Set, "lockdep=on")
		}
		rep := mustRun(t, s)
		if !rep.AccountingOK {
			t.Fatalf("lockdep %v: accounting: %s", on, rep.AccountingError)
		}
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
