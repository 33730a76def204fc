package netdev_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

func TestE1Tmp(t *testing.T) {
	if os.Getenv("E1") == "" {
		t.Skip()
	}
	senders, _ := strconv.Atoi(os.Getenv("E1"))
	for _, prof := range []string{"6.18", "6.19-rc1"} {
		wall := time.Now()
		costs := sim.DefaultCosts()
		for _, kv := range strings.Split(os.Getenv("COSTS"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				if err := costs.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		e, _ := sim.NewEngine(sim.Topology{Sockets: 2, CoresPerSocket: 120, ThreadsPerCore: 2}, costs, 1)
		cfg, _ := netdev.Profile(prof)
		n := netdev.NewNet(e, cfg)
		irq := make([]int, 30)
		for i := range irq {
			irq[i] = i
		}
		dev, err := n.AddDevice(netdev.DeviceSpec{Name: "eth0", Driver: "ice", Queues: 30, Qdisc: []string{"mq", os.Getenv("QD")}, XPS: true, IRQCPUs: irq})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := workload.Start(n, dev, workload.Spec{Kind: "udp_stream", Senders: senders, PacketSize: 120}); err != nil {
			t.Fatal(err)
		}
		d := 10 * sim.Millisecond
		if err := e.Run(d); err != nil {
			t.Fatal(err)
		}
		var busy sim.Time
		for _, c := range e.CPUs {
			busy += c.Busy()
		}
		t.Logf("%s: %.2f Mpps, cpu/pkt %.0f ns, busy %.1f%%, drops %v, events %d, wall %v, %.0f sim pkt/s", prof, float64(n.TxPkts)/float64(d)*1e3, float64(busy)/float64(n.TxPkts),
			100*float64(busy)/float64(d)/480, n.Drops, e.Events(), time.Since(wall), float64(n.TxPkts)/time.Since(wall).Seconds())
		for _, l := range e.LockStats()[:3] {
			t.Logf("   %-40s acq %8d cont %8d wait %8.2fms max %6.1fus", l.Name, l.Acquired, l.Contended, float64(l.TotalWait)/1e6, float64(l.MaxWait)/1e3)
		}
		e.Close()
	}
}
