package workload

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
)

// ping's RTT ends at the reply's SO_TIMESTAMP: skb->tstamp, which
// veth's netif_rx takes as the reply arrives (netdev_tstamp_prequeue)
// and a NIC's NAPI poll as it hands the reply to the stack; neither
// the wait for NET_RX_SOFTIRQ on veth nor ping_rcv's queueing is in it.
func TestPingRTTEndsAtTheReceiveStamp(t *testing.T) {
	const sent, arrive, poll = 0, sim.Millisecond, sim.Millisecond + 200*sim.Microsecond
	for _, tc := range []struct {
		name string
		wire bool
		want sim.Time
	}{
		{"veth: netif_rx", false, arrive},
		{"nic: napi poll", true, poll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			tr := &Traffic{e: e, costs: e.Costs, dev: &netdev.Device{Info: driver.Info{Wire: tc.wire}}}
			ps := &ProbeSock{Probe: Probe{Kind: ProbePing}, tr: tr, sent: map[int64]sim.Time{1: sent}}
			e.At(arrive, func() { ps.arrived(e.Now(), 1) })
			e.NewTask("softirq", []int{0}, func(tk *sim.Task) {
				c := tk.CPU()
				c.SleepUntil(poll)
				c.Sync()
				ps.answer(c, 1)
			}).Start(0)
			if err := e.Run(10 * sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			if len(ps.Samples) != 1 || ps.Samples[0].RTT != tc.want {
				t.Errorf("samples %v, want one of RTT %v", ps.Samples, tc.want)
			}
		})
	}
}
