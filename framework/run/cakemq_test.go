package run

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// cake_mq: one cake per queue sharing one rate; the total stays at the
// configured bandwidth however many queues are active, with and without
// the clear-tins variant of the rate update.
func TestCakeMQSharesRate(t *testing.T) {
	for _, extra := range []string{"", " mq-clear-tins"} {
		s := small()
		s.Driver, s.Queues = "ice", 8
		s.Qdisc = "cake_mq bandwidth 200Mbit besteffort" + extra
		s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 8, PacketSize: 1000, Flows: 32, Rate: 200000}
		s.Duration, s.Warmup = 60*sim.Millisecond, 20*sim.Millisecond
		rep := mustRun(t, s)
		if rep.Qdisc[0].Kind != "cake_mq" || len(rep.Qdisc) != 9 {
			t.Fatalf("want a cake_mq root and 8 cake children, got %d rows, root %q", len(rep.Qdisc), rep.Qdisc[0].Kind)
		}
		active := int64(0)
		for _, kv := range rep.Qdisc[1].XStats {
			if kv.Key == "active_queues" {
				active, _ = kv.Value.Int64()
			}
		}
		mbit := rep.TxBps / 1e6
		t.Logf("cake_mq%s: %.1f Mbit/s, active_queues %d", extra, mbit, active)
		if active < 2 {
			t.Errorf("active_queues %d, want several", active)
		}
		if mbit < 150 || mbit > 215 {
			t.Errorf("total %.1f Mbit/s, want about the shared 200 Mbit/s", mbit)
		}
	}
}
