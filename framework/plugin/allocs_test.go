package plugin_test

import (
	"runtime"
	"testing"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
)

// The host makes no heap allocation per data-path call to a plugin
// process: a run with qdisc and driver out of process allocates well
// under one object per packet, set-up and report included (5.3 when
// each call built its name, its driver answerer and its decoder on the
// heap).
func TestIsolateHostAllocs(t *testing.T) {
	s := small("mq pfifo", "ice")
	s.Sockets, s.Cores, s.Queues = 1, 8, 4
	s.Workload.Senders = 8
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	s.Plugins = plugin.Options{Isolate: true}
	if _, err := run.Run(s, nil); err != nil { // start the plugin processes
		t.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	if rep.TxPackets < 1000 {
		t.Fatalf("only %d packets sent", rep.TxPackets)
	}
	if per := float64(m1.Mallocs-m0.Mallocs) / float64(rep.TxPackets); per > 0.5 {
		t.Errorf("%.2f heap allocations per packet out of process, want under 0.5", per)
	}
}
