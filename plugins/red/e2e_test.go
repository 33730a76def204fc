package red_test

import (
	"os"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
	_ "github.com/txlab/txlab/plugins/red"
)

// The test binary also serves the built-ins as a plugin (--isolate).
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

// host is four closed-loop UDP senders on a 100 Mbit/s ice queue under
// root qdisc qd.
func host(qd string) run.Spec {
	s := run.Default()
	s.Profile = "net-next"
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Driver, s.Queues, s.RateBps = "ice", 1, 100_000_000
	s.Qdisc = qd
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 1400}
	s.Duration, s.Warmup = 30*sim.Millisecond, 5*sim.Millisecond
	return s
}

// red on a 100 Mbit/s link under four closed-loop senders, whose socket
// buffers hold a standing queue above max: early drops (forced above
// max, QDISC_OVERLIMIT; by probability between, QDISC_CONGESTED), and
// the same report out of process.
func TestRunIsolate(t *testing.T) {
	s := host("red limit 400000 min 30000 max 90000 avpkt 1000 burst 55")
	rep := plugintest.SameInAndOut(t, s)
	t.Logf("drops %v", rep.Drops)
	if rep.Drops["QDISC_OVERLIMIT"]+rep.Drops["QDISC_CONGESTED"] == 0 {
		t.Error("no early drop under a standing queue")
	}
}

// red over a child tc grafted (tc qdisc add ... parent 1:1, red_graft):
// the child's own limit drops what RED lets through beyond it (pdrop,
// QDISC_DROP), RED still reads the child's backlog for its average, and
// the class lists the child; the same out of process.
func TestChildIsolate(t *testing.T) {
	s := host("pfifo")
	s.TC = []run.TCBatch{{Name: "red.tc", Text: "qdisc add dev eth0 root handle 1: red limit 400000 min 30000 max 90000 avpkt 1000 burst 55\n" +
		"qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 20\n"}}
	rep := plugintest.SameInAndOut(t, s)
	pdrop, _ := rep.Qdisc[0].XStatInt("pdrop")
	t.Logf("drops %v, pdrop %d, classes %+v", rep.Drops, pdrop, rep.Classes)
	if pdrop == 0 || rep.Drops["QDISC_DROP"] == 0 || len(rep.Classes) != 1 || rep.Classes[0].Leaf != "10:" {
		t.Errorf("red over a 20-packet pfifo: pdrop %d, drops %v, classes %+v", pdrop, rep.Drops, rep.Classes)
	}
}
