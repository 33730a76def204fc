package i40e

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// The receive side the host models: with RX queues, vectors for
// max(tx, rx) queue pairs, rx queue i on vector i, the driver's RX
// defaults; a vector with only an RX ring has no TX clean; without RX
// queues no receive side at all. The RX moderation is i40e's own
// (i40e_update_itr, not lib/dim's): RxInfo says OwnITR, with no DIM
// profile and no rate limit, and starts at the configured RX ITR.
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
		d := &I40E{}
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
		if r == nil || r.RingSize != tc.ring || r.ITR != tc.itr || r.MaxQueues != 64 || r.BufSize != 2048 ||
			r.RefillBatch != tc.ring/2 || r.LUTSize != 512 || r.QueuePackets != "rx-%d.packets" ||
			len(r.ITRProfile) != 0 || r.INTRL != 0 || r.StartITR() != tc.itr || !r.OwnITR {
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
