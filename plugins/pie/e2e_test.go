package pie_test

import (
	"os"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
	_ "github.com/txlab/txlab/plugins/pie"
)

// The test binary also serves the built-ins as a plugin (--isolate).
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

// pie and fq_pie on a 100 Mbit/s link under four closed-loop senders
// for 1.2 s: their 1 MB socket buffers (sk_wmem_alloc counts each skb's
// truesize) hold a hundred ms of queue, the timers
// run (from 500 ms), the probability rises and PIE drops early
// (QDISC_CONGESTED) well before its limit; the report is the same out
// of process, timers and all.
func TestRunIsolate(t *testing.T) {
	for _, qd := range []string{"pie limit 10000", "fq_pie limit 10000"} {
		s := run.Default()
		s.Profile = "net-next"
		s.Sockets, s.Cores, s.Threads = 1, 4, 1
		s.Driver, s.Queues, s.RateBps = "ice", 1, 100_000_000
		s.Qdisc = qd
		s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 1400}
		s.Set = []string{"sndbuf=1048576"}
		s.Duration, s.Warmup = 1200*sim.Millisecond, 100*sim.Millisecond
		rep := plugintest.SameInAndOut(t, s)
		t.Logf("%s: drops %v", qd, rep.Drops)
		if rep.Drops["QDISC_CONGESTED"] == 0 {
			t.Errorf("%s: no early drop under a standing queue", qd)
		}
	}
}
