package netdev_test

import (
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

func TestSmoke(t *testing.T) {
	for _, prof := range []string{"6.18", "6.19-rc1", "net-next"} {
		e, _ := sim.NewEngine(sim.Topology{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
		cfg, _ := netdev.Profile(prof)
		n := netdev.NewNet(e, cfg)
		dev, err := n.AddDevice(netdev.DeviceSpec{Name: "eth0", Driver: "ice", Queues: 2, Qdisc: []string{"mq", "pfifo"}, XPS: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := workload.Start(n, dev, workload.Spec{Kind: "udp_stream", Senders: 8, PacketSize: 120}); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(5 * sim.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := n.CheckAccounting(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s offered %d tx %d drops %v inflight %d events %d", prof, n.Offered, n.TxPkts, n.Drops, n.InFlightPackets(), e.Events())
		e.Close()
	}
}
