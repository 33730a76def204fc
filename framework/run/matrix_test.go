package run

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// Every combination of driver, qdisc, profile and workload runs, moves
// packets, and keeps the accounting identity.
func TestMatrixAccounting(t *testing.T) {
	qdiscs := map[string][]string{
		"ice":  {"mq pfifo", "mq pfifo_fast", "pfifo limit 200", "pfifo_fast", "noqueue", ""},
		"veth": {"", "pfifo", "pfifo_fast"},
	}
	workloads := []workload.Spec{
		{Kind: workload.UDPStream, Senders: 6, PacketSize: 120},
		{Kind: workload.UDPRate, Senders: 3, PacketSize: 64, Flows: 16, Rate: 4e6},
	}
	for drv, qds := range qdiscs {
		for _, qd := range qds {
			for _, prof := range []string{"6.18", "6.19-rc1", "net-next"} {
				for _, w := range workloads {
					name := strings.Join([]string{drv, qd, prof, w.Kind}, "/")
					t.Run(name, func(t *testing.T) {
						s := small()
						s.Driver, s.Qdisc, s.Profile, s.Workload = drv, qd, prof, w
						s.Duration, s.Warmup = 2*sim.Millisecond, 500*sim.Microsecond
						rep, err := Run(s, nil)
						if err != nil {
							t.Fatal(err)
						}
						if rep.TxPackets == 0 {
							t.Fatalf("nothing transmitted: %+v", rep.Drops)
						}
						if got := rep.TxPackets + rep.DroppedPackets + uint64(rep.InFlightPackets); got != rep.OfferedPackets {
							t.Fatalf("offered %d != %d", rep.OfferedPackets, got)
						}
					})
				}
			}
		}
	}
}

func TestSpecErrors(t *testing.T) {
	cases := []struct {
		mut  func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Profile = "5.4" }, `unknown profile "5.4"`},
		{func(s *Spec) { s.Driver = "e1000" }, `unknown driver "e1000"`},
		{func(s *Spec) { s.Qdisc = "fifo" }, `unknown qdisc "fifo"`},
		{func(s *Spec) { s.Qdisc = "pfifo lmit 3" }, `unknown parameter "lmit"`},
		{func(s *Spec) { s.Qdisc = "mq mq" }, "root"},
		{func(s *Spec) { s.RateBps = -1 }, "--rate (device.rate): -1bit is out of range: 0 (the driver's line rate, txlab list: DRIVERS) or 8bit..1600Gbit"},
		{func(s *Spec) { s.RateBps = 7 }, "--rate (device.rate): 7bit is out of range: 0 (the driver's line rate, txlab list: DRIVERS) or 8bit..1600Gbit"},
		{func(s *Spec) { s.Set = []string{"fast_path=maybe"} }, "fast_path"},
		{func(s *Spec) { s.Set = []string{"cost.nope=3"} }, `unknown cost "nope"`},
		{func(s *Spec) { s.Set = []string{"bogus"} }, "name=value"},
		{func(s *Spec) { s.Workload.Senders, s.Workload.Placement = 100, "spread" }, "only 8 CPUs"},
		{func(s *Spec) { s.Workload.Placement = "0-3,9" }, "CPU 9 does not exist"},
		{func(s *Spec) { s.Workload.Kind = "tcp" }, "unknown kind"},
		{func(s *Spec) { s.Warmup = s.Duration }, "warmup"},
		{func(s *Spec) { s.Queues = 0 }, "queues"},
		{func(s *Spec) { s.DriverArgs = []string{"tx", "10000"} }, "ring size 10000 must be in"},
		{func(s *Spec) { s.DriverArgs = []string{"tx-usecs", "20"} }, "cannot be changed if adaptive-tx is enabled"},
	}
	for _, c := range cases {
		s := small()
		c.mut(&s)
		rep, err := Run(s, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to mention %q", err, c.want)
		}
		if rep == nil || rep.Error == "" {
			t.Errorf("%q: no partial report with the error", c.want)
		}
	}
}
