package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// napi_poll's own cost by what is behind the NAPI: a NIC's poll ends by
// re-arming its interrupt (ice_enable_interrupt's MMIO write, in
// napi_poll's 250 ns); veth_poll (drivers/net/veth.c) is a software
// NAPI, no interrupt and no DIM, and costs veth_poll. The model charged
// every driver's poll napi_poll.
func TestNapiPollCostByDevice(t *testing.T) {
	for _, tc := range []struct {
		name string
		drv  string
		args []string
		want func(c *sim.Costs) int64
	}{
		{"ice: napi_poll with its re-arm", "ice", nil, func(c *sim.Costs) int64 { return c.NapiPoll }},
		{"veth, gro on: veth_poll", "veth", []string{"gro", "on"}, func(c *sim.Costs) int64 { return c.VethPoll }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			e.Costs.NapiPoll, e.Costs.VethPoll = 1000, 30
			n := NewNet(e, profile(t, "6.18"), localMaker{})
			dev, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: tc.drv, Args: tc.args, Queues: 1})
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t, e, n, dev}
			spent := spentOn(t, h, 0, func(c *sim.CPU) {
				c.LocalBhDisable()
				x := dev.napis[0]
				x.scheduled = true
				if work, done := n.napiPoll(c, x); work != 0 || !done {
					t.Errorf("an empty poll: %d done %v, want 0, done", work, done)
				}
				x.scheduled = false
				c.LocalBhEnable()
			})
			if want := tc.want(e.Costs); spent != want {
				t.Errorf("an empty poll took %d ns, want %d", spent, want)
			}
		})
	}
}
