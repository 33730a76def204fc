package plugin_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/plugin/shm"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// benchIsolate runs one scenario in process, with the qdisc out of
// process, and with qdisc and driver out of process (--isolate), and
// reports simulated packets per wall second for each. Process start-up
// is inside the timing, as a user sees it.
func benchIsolate(b *testing.B, s run.Spec) {
	for _, mode := range []string{"in-process", "isolate-grpc", "isolate"} {
		b.Run(mode, func(b *testing.B) {
			s := s
			switch mode {
			case "isolate":
				s.Plugins = plugin.Options{Isolate: true}
			case "isolate-grpc":
				if testing.Short() {
					b.Skip("the gRPC stream path is slow")
				}
				s.Plugins = plugin.Options{Isolate: true, Transport: "grpc"}
			}
			var pkts uint64
			st0 := shm.ReadStats()
			for b.Loop() {
				rep, err := run.Run(s, nil)
				if err != nil {
					b.Fatal(err)
				}
				pkts += rep.TxPackets
			}
			b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "simpkts/s")
			if mode == "isolate" && shm.Supported {
				// The host's side of the shared-memory channel: frames
				// received (a round trip each), how many it slept for,
				// and its wait per packet (the process start's included).
				st, p := shm.ReadStats(), float64(pkts)
				b.ReportMetric(float64(st.Recvs-st0.Recvs)/p, "recvs/pkt")
				b.ReportMetric(float64(st.Slept-st0.Slept)/p, "slept/pkt")
				b.ReportMetric(float64(st.WaitNs-st0.WaitNs)/p, "wait-ns/pkt")
			}
		})
	}
}

// BenchmarkIsolateSmall: the run package's BenchmarkSimSmall scenario
// (8 CPUs, 8 udp_stream senders, 4-queue ice, mq pfifo), 10 ms.
func BenchmarkIsolateSmall(b *testing.B) {
	s := small("mq pfifo", "ice")
	s.Sockets, s.Cores, s.Queues = 1, 8, 4
	s.Workload.Senders = 8
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchIsolate(b, s)
}

// BenchmarkIsolateCake: root cake on 8-queue ice, 16 udp_stream senders,
// 10 ms: a costly qdisc, one root lock, bulk dequeues.
func BenchmarkIsolateCake(b *testing.B) {
	s := small("cake", "ice")
	s.Sockets, s.Cores, s.Queues = 1, 16, 8
	s.Workload.Senders = 16
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchIsolate(b, s)
}

// BenchmarkIsolateSmallBusy is BenchmarkIsolateSmall on a machine busy
// with another run: as many CPU hogs as the machine has CPUs, each on
// an OS thread of its own (GOMAXPROCS raised for them), so the
// simulator, the plugin process and the hogs share the cores through
// the kernel's scheduler. In and out of process run under the same
// load; compare their simpkts/s.
func BenchmarkIsolateSmallBusy(b *testing.B) {
	hogs := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + hogs))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range hogs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			x := uint64(1)
			for !stop.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1
				}
			}
			_ = x
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	s := small("mq pfifo", "ice")
	s.Sockets, s.Cores, s.Queues = 1, 8, 4
	s.Workload.Senders = 8
	s.Duration, s.Warmup = 10*sim.Millisecond, 0
	benchIsolate(b, s)
}

// BenchmarkCallRoundTrip is one data-path call to a plugin process and
// its reply: a dequeue from an empty pfifo, over shared memory and over
// the gRPC stream.
func BenchmarkCallRoundTrip(b *testing.B) {
	for _, tr := range []string{"shm", "grpc"} {
		b.Run(tr, func(b *testing.B) {
			self, err := plugin.Self()
			if err != nil {
				b.Fatal(err)
			}
			p, err := plugin.Start(self, plugin.Options{Transport: tr})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			q, err := p.NewQdisc("pfifo")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 100, NumTxQ: 1}, nil); err != nil {
				b.Fatal(err)
			}
			ctx := qdisctest.NewCtx(1)
			var out []skb.Packet
			for b.Loop() {
				out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, out[:0])
			}
		})
	}
}
