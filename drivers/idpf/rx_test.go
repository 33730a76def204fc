package idpf

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
)

// The receive side the host models (drivertest.CheckRxInfo) with idpf's
// RX defaults.
func TestRxInfo(t *testing.T) {
	drivertest.CheckRxInfo(t, func() driver.Driver { return &IDPF{} }, drivertest.RxInfoWant{
		Ring: 512, ITR: 50 * sim.Microsecond, MaxQueues: 256, BufSize: 2048, LUTSize: 2048,
		QueuePackets: "rx_q-%d_pkts",
	})
}

// ethtool -C on idpf's RX side: adaptive-rx is on by default, RxInfo
// carries the vport's rx_itr_profile and IDPF_DIM_DEFAULT_PROFILE_IX for the host's RX DIM
// (no INTRL: idpf writes none); rx-usecs alone turns it off (the static
// ITR), adaptive-rx on keeps it.
func TestRxModerationOptions(t *testing.T) {
	us := sim.Microsecond
	for _, tc := range []struct {
		args    []string
		itr     sim.Time
		dim     bool
		start   sim.Time
		wantErr string
	}{
		{args: nil, itr: DfltRxITR, dim: true, start: 8 * us},
		{args: []string{"adaptive-rx", "off"}, itr: DfltRxITR, start: 50 * us},
		{args: []string{"rx-usecs", "2", "adaptive-rx", "off"}, itr: 2 * us, start: 2 * us},
		{args: []string{"rx-usecs", "3", "adaptive-rx", "off"}, itr: 2 * us, start: 2 * us}, // odd usecs rounded down to even
		{args: []string{"adaptive-rx", "on", "rx-usecs", "50"}, itr: 50 * us, dim: true, start: 8 * us},
		{args: []string{"adaptive-rx", "on", "rx-usecs", "20"}, wantErr: "idpf: rx-usecs 20: Cannot set coalesce usecs if adaptive enabled"},
		{args: []string{"adaptive-tx", "off"}, itr: DfltRxITR, dim: true, start: 8 * us},
		{args: []string{"adaptive-rx", "1"}, wantErr: `idpf: adaptive-rx "1": want on or off`},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			info, ok := drivertest.Init(t, &IDPF{}, driver.Setup{NumTxQ: 2, NumRxQ: 2, NumCPUs: 8, Costs: sim.DefaultCosts()}, tc.args, tc.wantErr)
			if !ok {
				return
			}
			want := drivertest.RxWant{ITR: tc.itr, Start: tc.start}
			if tc.dim {
				want.Profile = []sim.Time{2 * us, 8 * us, 32 * us, 0, 0} // rx_itr[] as idpf_vport_init copies it
			}
			drivertest.CheckRx(t, info.Rx, 2, want)
		})
	}
}

// idpf_set_ringparam: TX rounded up to 32, RX to 64; RX's maximum is
// 8160 aligned down to 64.
func TestRingParam(t *testing.T) {
	drivertest.CheckRings(t, func() driver.Driver { return &IDPF{} }, []drivertest.RingCase{
		{Args: nil, Tx: DfltTxQDescCount, Rx: DfltRxQDescCount},
		{Args: []string{"tx", "1000", "rx", "100"}, Tx: 1024, Rx: 128},
		{Args: []string{"rx", "8100"}, Tx: DfltTxQDescCount, Rx: 8128},
		{Args: []string{"tx", "8161"}, Err: "idpf: tx ring size 8161 must be in [64, 8160]"},
	})
}
