package idpf_test

import (
	"testing"

	_ "github.com/txlab/txlab/drivers/idpf" // registers "idpf"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

func ethtool(q report.Queue, key string) (int64, bool) {
	for _, kv := range q.Ethtool {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return 0, false
}

// End to end through the host: the idpf model under mq pfifo and under
// a single root qdisc, accounting checked by run, per-queue counters add
// up to the device totals, the completion queue never over half full.
func TestEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name, qdisc, profile string
		rate                 int64
		set                  []string
		wantStops            bool
	}{
		{"mq", "mq pfifo", "6.18", 0, nil, false},
		{"root pfifo", "pfifo limit 10000", "6.19-rc1", 0, nil, false},
		// A slow wire without BQL: the driver's own stop/wake carries it.
		{"wire bound no bql", "mq pfifo", "6.18", 2_000_000_000, []string{"bql=off"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := run.Default()
			s.Profile = tc.profile
			s.Driver, s.DriverArgs, s.RateBps, s.Set = "idpf", []string{"tx", "256"}, tc.rate, tc.set
			s.Sockets, s.Cores, s.Threads = 1, 8, 1
			s.Queues, s.Qdisc = 4, tc.qdisc
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1400}
			s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
			rep, err := run.Run(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.AccountingOK || rep.TxPackets == 0 || (tc.rate == 0 && rep.Setup.RateBps != 200_000_000_000) || rep.Setup.RingSize != 256 {
				t.Fatalf("accounting %v tx %d rate %d ring %d", rep.AccountingOK, rep.TxPackets, rep.Setup.RateBps, rep.Setup.RingSize)
			}
			var sum uint64
			var stops int64
			for _, q := range rep.Queues {
				sum += q.TxPackets
				st, _ := ethtool(q, "tx_stopped")
				stops += st
				if p, ok := ethtool(q, "complq_max_pending"); !ok || p > 256/2+2 {
					t.Errorf("q%d: complq_max_pending %d (present %v), complq 256", q.Txq, p, ok)
				}
				if irqs, _ := ethtool(q, "irqs"); q.TxPackets > 0 && irqs == 0 {
					t.Errorf("q%d completed %d packets without interrupts", q.Txq, q.TxPackets)
				}
			}
			if tc.wantStops && stops == 0 {
				t.Error("the driver never stopped a queue on a saturated wire")
			}
			if sum != rep.TxPackets {
				t.Errorf("queues sum to %d, device sent %d", sum, rep.TxPackets)
			}
			t.Logf("%.2f Mpps, drops %v, q0 %v", rep.TxPps/1e6, rep.Drops, rep.Queues[0].Ethtool)
		})
	}
}
