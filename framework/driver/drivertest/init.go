package drivertest

import (
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// Init runs d.Init(s, args) for a table-driven options test: with
// wantErr set it wants an error containing it and returns false; else
// it wants none and returns the driver's Info and true.
func Init(t *testing.T, d driver.Driver, s driver.Setup, args []string, wantErr string) (driver.Info, bool) {
	t.Helper()
	info, err := d.Init(s, args)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want %q", err, wantErr)
		}
		return info, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return info, true
}

// RxWant is what an RX moderation options test expects of a driver's
// RxInfo: the static ITR, the interrupt rate limit, the vector's first
// interval, and the DIM profile (nil: no RX DIM; else it starts at
// index 1).
type RxWant struct {
	ITR, INTRL, Start sim.Time
	Profile           []sim.Time
}

// CheckRx validates r for nrx queues and compares it with want.
func CheckRx(t *testing.T, r *driver.RxInfo, nrx int, want RxWant) {
	t.Helper()
	if err := r.Validate(nrx); err != nil {
		t.Fatal(err)
	}
	if r.ITR != want.ITR || r.INTRL != want.INTRL || r.StartITR() != want.Start {
		t.Errorf("itr %v intrl %v start %v, want %v %v %v", r.ITR, r.INTRL, r.StartITR(), want.ITR, want.INTRL, want.Start)
	}
	if !slices.Equal(r.ITRProfile, want.Profile) || (want.Profile != nil && r.DIMStart != 1) {
		t.Errorf("rx profile %v from %d, want %v from 1", r.ITRProfile, r.DIMStart, want.Profile)
	}
}
