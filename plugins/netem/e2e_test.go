package netem_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
	_ "github.com/txlab/txlab/plugins/netem"
)

// The test binary also serves the built-ins as a plugin (--isolate).
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

func host(qd string) run.Spec {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 1, 8, 1
	s.Driver, s.Queues, s.RateBps = "ice", 4, 10_000_000_000
	s.Qdisc = qd
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 200, Flows: 16, Rate: 200000}
	s.Duration, s.Warmup = 30*sim.Millisecond, 5*sim.Millisecond
	return s
}

func xstat(q report.Qdisc, key string) int64 {
	for _, x := range q.XStats {
		if x.Key == key {
			v, _ := x.Value.Int64()
			return v
		}
	}
	return -1
}

// A run through netem: the duplicates are new packets the accounting
// counts (offered = tx + dropped + in flight, with the clones offered),
// loss drops about its share, and the delay holds packets in flight.
func TestRunAccounting(t *testing.T) {
	for _, qd := range []string{"netem delay 2ms 1ms distribution normal duplicate 10% loss 2% reorder 5% 10%", "mq netem delay 1ms duplicate 20%"} {
		rep, err := run.Run(host(qd), nil)
		if err != nil {
			t.Fatal(err)
		}
		var dups, lost int64
		for _, q := range rep.Qdisc {
			if q.Kind == "netem" {
				dups += xstat(q, "duplicated")
				lost += xstat(q, "dropped")
			}
		}
		t.Logf("%s: offered %d tx %d drops %v clones %d in flight %d", qd, rep.OfferedPackets, rep.TxPackets, rep.Drops,
			rep.Counters["qdisc_clones"], rep.InFlightPackets)
		if !rep.AccountingOK || uint64(dups) != rep.Counters["qdisc_clones"] || dups == 0 {
			t.Fatalf("accounting %v (%s), duplicated %d, clones %d", rep.AccountingOK, rep.AccountingError, dups, rep.Counters["qdisc_clones"])
		}
		senders := float64(rep.OfferedPackets - uint64(dups))
		if share := float64(dups) / senders; (qd[0] == 'n' && math.Abs(share-0.10) > 0.02) || (qd[0] == 'm' && math.Abs(share-0.20) > 0.02) {
			t.Errorf("duplicated %.3f of the senders' packets", share)
		}
		if qd[0] == 'n' && math.Abs(float64(lost)/float64(rep.OfferedPackets)-0.02) > 0.005 {
			t.Errorf("lost %d of %d", lost, rep.OfferedPackets)
		}
		if rep.InFlightPackets == 0 {
			t.Error("a 1-2 ms delay at 200 Kpps holds packets at the end")
		}
	}
}

// Out of process (--isolate) the report is byte for byte the same,
// duplicates included.
func TestIsolateSameReport(t *testing.T) {
	s := host("netem delay 1ms 500us 25% distribution paretonormal duplicate 5% loss gemodel 1% 20% rate 500mbit slot 100us 300us packets 20")
	s.Duration = 10 * sim.Millisecond
	in := jsonOf(t, s)
	s.Plugins = plugin.Options{Isolate: true}
	if out := jsonOf(t, s); !bytes.Equal(in, out) {
		t.Fatal("--isolate changed the report")
	}
}

func jsonOf(t *testing.T, s run.Spec) []byte {
	t.Helper()
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.SimWallNs = 0
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
