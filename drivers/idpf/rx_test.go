package idpf

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
)

// The receive side the host models: with RX queues, vectors for
// max(tx, rx) queue pairs, rx queue i on vector i, the driver's RX
// defaults; a vector with only an RX ring has no TX clean; without RX
// queues no receive side at all.
func TestRxInfo(t *testing.T) {
	for _, tc := range []struct {
		tx, rx, vectors int
		args            []string
		ring            int
		itr             sim.Time
	}{
		{4, 0, 4, nil, 0, 0},
		{4, 6, 6, nil, 512, 50 * sim.Microsecond},
		{4, 2, 4, []string{"rx", "1024", "rx-usecs", "10"}, 1024, 10 * sim.Microsecond},
	} {
		d := &IDPF{}
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
		if r == nil || r.RingSize != tc.ring || r.ITR != tc.itr || r.MaxQueues != 256 || r.BufSize != 2048 ||
			r.RefillBatch != 0 || r.LUTSize != 2048 || r.QueuePackets != "rx_q-%d_pkts" {
			t.Fatalf("rx info %+v", r)
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

// ethtool -C on idpf's RX side: adaptive-rx is on by default, RxInfo
// carries rx_itr[] and IDPF_DIM_DEFAULT_PROFILE_IX for the host's RX DIM
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
		{args: []string{"rx-usecs", "2"}, itr: 2 * us, start: 2 * us},
		{args: []string{"rx-usecs", "3"}, itr: 2 * us, start: 2 * us}, // odd usecs rounded down to even
		{args: []string{"adaptive-rx", "on", "rx-usecs", "20"}, itr: 20 * us, dim: true, start: 8 * us},
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
				want.Profile = []sim.Time{2 * us, 8 * us, 32 * us, 96 * us, 128 * us}
			}
			drivertest.CheckRx(t, info.Rx, 2, want)
		})
	}
}
