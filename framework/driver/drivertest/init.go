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

// RingCase is one ethtool -G request and what the driver makes of it:
// the TX and RX ring sizes it reports, or (Err) its error.
type RingCase struct {
	Args   []string
	Tx, Rx int
	Err    string
}

// CheckRings runs each case through a fresh driver with two TX and two
// RX queues: the Intel drivers check a request's range, then round it
// up to their multiple (set_ringparam's ALIGN).
func CheckRings(t *testing.T, newDriver func() driver.Driver, cases []RingCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(strings.Join(c.Args, "_"), func(t *testing.T) {
			info, ok := Init(t, newDriver(), driver.Setup{NumTxQ: 2, NumRxQ: 2, NumCPUs: 8, Costs: sim.DefaultCosts()}, c.Args, c.Err)
			if !ok {
				return
			}
			if info.RingSize != c.Tx || info.Rx == nil || info.Rx.RingSize != c.Rx {
				t.Errorf("tx ring %d, rx %+v; want tx %d rx %d", info.RingSize, info.Rx, c.Tx, c.Rx)
			}
		})
	}
}
