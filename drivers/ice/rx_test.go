package ice

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
)

// The receive side the host models (drivertest.CheckRxInfo) with ice's
// RX defaults.
func TestRxInfo(t *testing.T) {
	drivertest.CheckRxInfo(t, func() driver.Driver { return &ICE{} }, drivertest.RxInfoWant{
		Ring: 2048, ITR: 50 * sim.Microsecond, MaxQueues: 256, BufSize: 2048, LUTSize: 2048,
		QueuePackets: "rx_queue_%d_packets",
	})
}

// ethtool -C on ice's RX side: adaptive-rx is on by default, RxInfo
// carries rx_profile and ICE_DIM_DEFAULT_PROFILE_IX for the host's RX
// DIM, and the vector's 4 us INTRL while either container is dynamic;
// rx-usecs alone turns it off (the static ITR), adaptive-rx on keeps it.
func TestRxModerationOptions(t *testing.T) {
	us := sim.Microsecond
	for _, tc := range []struct {
		args    []string
		itr     sim.Time // the static ITR
		dim     bool
		intrl   sim.Time
		start   sim.Time // the vector's first RX interval
		wantErr string
	}{
		{args: nil, itr: DfltRxITR, dim: true, intrl: 4 * us, start: 8 * us},
		{args: []string{"adaptive-rx", "off"}, itr: DfltRxITR, intrl: 4 * us, start: 50 * us},
		{args: []string{"rx-usecs", "20", "adaptive-rx", "off"}, itr: 20 * us, intrl: 4 * us, start: 20 * us},
		{args: []string{"adaptive-rx", "on", "rx-usecs", "50"}, itr: 50 * us, dim: true, intrl: 4 * us, start: 8 * us},
		{args: []string{"adaptive-rx", "on", "rx-usecs", "20"}, wantErr: "ice: rx-usecs 20: rx interrupt throttling cannot be changed if adaptive-rx is enabled"},
		{args: []string{"adaptive-rx", "off", "rx-usecs", "2"}, itr: 2 * us, intrl: 4 * us, start: 4 * us},
		{args: []string{"adaptive-rx", "off", "adaptive-tx", "off", "rx-usecs", "2"}, itr: 2 * us, start: 2 * us},
		{args: []string{"adaptive-tx", "off"}, itr: DfltRxITR, dim: true, intrl: 4 * us, start: 8 * us},
		{args: []string{"adaptive-rx", "yes"}, wantErr: `ice: adaptive-rx "yes": want on or off`},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			info, ok := drivertest.Init(t, &ICE{}, driver.Setup{NumTxQ: 2, NumRxQ: 2, NumCPUs: 8, Costs: sim.DefaultCosts()}, tc.args, tc.wantErr)
			if !ok {
				return
			}
			want := drivertest.RxWant{ITR: tc.itr, INTRL: tc.intrl, Start: tc.start}
			if tc.dim {
				want.Profile = []sim.Time{2 * us, 8 * us, 16 * us, 62 * us, 126 * us}
			}
			drivertest.CheckRx(t, info.Rx, 2, want)
		})
	}
}

// ice_set_ringparam: out of [64, 8160] is refused; inside, a count is
// rounded up to ICE_REQ_DESC_MULTIPLE.
func TestRingParam(t *testing.T) {
	drivertest.CheckRings(t, func() driver.Driver { return &ICE{} }, []drivertest.RingCase{
		{Args: nil, Tx: DefaultNumTxDesc, Rx: DefaultNumRxDesc},
		{Args: []string{"tx", "100", "rx", "1000"}, Tx: 128, Rx: 1024},
		{Args: []string{"tx", "8150"}, Tx: 8160, Rx: DefaultNumRxDesc},
		{Args: []string{"tx", "63"}, Err: "ice: ring size 63 must be in [64, 8160]"},
		{Args: []string{"rx", "8161"}, Err: "ice: rx ring size 8161 must be in [64, 8160]"},
	})
}
