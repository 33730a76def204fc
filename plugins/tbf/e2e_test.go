package tbf_test

import (
	"math"
	"os"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
	_ "github.com/txlab/txlab/plugins/fq_codel"
	_ "github.com/txlab/txlab/plugins/tbf"
)

// The test binary also serves the built-ins as a plugin (--isolate).
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

// host is one ice queue at 10 Gbit/s under a root tbf, on a small host.
func host(qd string, w workload.Spec, dur, warm sim.Time) run.Spec {
	s := run.Default()
	s.Profile = "net-next"
	s.Sockets, s.Cores, s.Threads = 1, 8, 1
	s.Driver, s.Queues, s.RateBps = "ice", 1, 10_000_000_000
	s.Qdisc, s.Workload = qd, w
	s.Duration, s.Warmup = dur, warm
	return s
}

// tbf at 1 Gbit/s on a 10 Gbit/s link under a UDP load of about
// 1.7 Gbit/s sends 1 Gbit/s (of skb bytes, what it shapes) within 0.5%,
// and drops the rest at its byte limit.
func TestRate1Gbit(t *testing.T) {
	w := workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 1400, Flows: 16, Rate: 150000}
	rep := plugintest.MustRun(t, host("tbf rate 1gbit burst 125kb limit 500kb", w, 120*sim.Millisecond, 20*sim.Millisecond))
	gbit := rep.TxBps / 1e9
	t.Logf("tbf 1gbit: %.4f Gbit/s in the window, drops %v, qdisc %+v", gbit, rep.Drops, rep.Qdisc[0])
	if math.Abs(gbit-1) > 0.005 {
		t.Errorf("%.4f Gbit/s, want 1 Gbit/s within 0.5%%", gbit)
	}
	if rep.Drops["QDISC_DROP"] == 0 || rep.Qdisc[0].Overlimits == 0 {
		t.Errorf("an overloaded shaper should drop at its limit and throttle: drops %v", rep.Drops)
	}
}

// The first burst bytes leave at line rate: with a full bucket of 1 MB
// and senders faster than the 10 Gbit/s link, once the senders are up
// (half a millisecond in the model, as without tbf) the link runs near
// line rate until the bucket is spent, then at 1 Gbit/s; and tbf never
// sends more than its envelope, bucket + rate x time. Near: 8 Gbit/s or
// more, since tbf's child is a qdisc of its own, whose struct Qdisc and
// skb list the senders' enqueues and the dequeuer's both write (its lines
// move between their CPUs, as the kernel's bfifo's do).
func TestBurstAtLineRate(t *testing.T) {
	w := workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1400}
	s := host("tbf rate 1gbit burst 1mb limit 2mb", w, 3*sim.Millisecond, 0)
	s.Interval = 100 * sim.Microsecond
	rep := plugintest.MustRun(t, s)
	frame := float64(rep.TxBytes) / float64(rep.TxPackets)
	const bucket, rate = 1 << 20, 1e9 / 8 // bytes, bytes/s
	gbps := func(iv report.Interval) float64 {
		return float64(iv.TxPackets) * frame * 8 / float64(iv.EndNs-iv.StartNs)
	}
	var cum, atLine float64
	lineRun, best, throttled := 0, 0, -1
	for i, iv := range rep.Series {
		cum += float64(iv.TxPackets) * frame
		if g := gbps(iv); g >= 8 {
			lineRun++
			best, atLine = max(best, lineRun), cum
		} else {
			lineRun = 0
			if best > 0 && throttled < 0 && g < 1.2 {
				throttled = i
			}
		}
		if envelope := bucket + rate*float64(iv.EndNs)/1e9; cum > envelope+frame {
			t.Fatalf("by %d ns sent %.0f bytes, above the envelope %.0f", iv.EndNs, cum, envelope)
		}
	}
	t.Logf("%d intervals of 100us near line rate, %.0f bytes sent by their end; throttled from interval %d", best, atLine, throttled)
	if best < 6 || atLine < bucket {
		t.Errorf("the bucket did not go out near line rate: %d intervals at >= 8 Gbit/s, %.0f bytes by then", best, atLine)
	}
	if throttled < 0 {
		t.Fatal("never throttled to the rate")
	}
	var n uint64
	for _, iv := range rep.Series[throttled+2:] {
		n += iv.TxPackets
	}
	secs := float64(rep.Series[len(rep.Series)-1].EndNs-rep.Series[throttled+2].StartNs) / 1e9
	if g := float64(n) * frame * 8 / secs / 1e9; math.Abs(g-1) > 0.05 {
		t.Errorf("after the burst %.3f Gbit/s, want 1", g)
	}
}

// Out of process (--isolate) the report is byte for byte the same.
func TestIsolateSameReport(t *testing.T) {
	w := workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 1000, Flows: 16, Rate: 200000}
	s := host("tbf rate 500mbit burst 30kb peakrate 2gbit mtu 1514 limit 100kb", w, 10*sim.Millisecond, 2*sim.Millisecond)
	plugintest.SameInAndOut(t, s)
}

// TCP through a bucket smaller than its TSO bursts: tbf_enqueue hands a
// GSO skb past max_size to tbf_segment, so the uploads' slow-start
// bursts are queued as segments and only the child's byte limit drops
// (one packet here; dropping each GSO skb past max_size whole cost
// them 10 drops and 9 CWR episodes); in and out of process alike, as
// the segmenting is the host's on the size the plugin declares.
func TestTCPSegmentsPastMaxSize(t *testing.T) {
	w := workload.Spec{Kind: workload.TCPStream, Flows: 2, CC: tcp.CCCubic, Start: 50 * sim.Millisecond,
		Path: path.Config{RTT: 2 * sim.Millisecond, Limit: path.DefaultLimit}}
	s := host("tbf rate 500mbit burst 12kb limit 300kb", w, 600*sim.Millisecond, 300*sim.Millisecond)
	rep := plugintest.SameInAndOut(t, s)
	t.Logf("goodput %.1f Mbit/s, drops %v, gso_segments %d, cwr %d", *rep.GoodputBps/1e6, rep.Drops, rep.Counters["gso_segments"], rep.Counters["tcp_cwr"])
	if *rep.GoodputBps < 0.85*500e6 {
		t.Errorf("goodput %.1f Mbit/s through tbf at 500 Mbit/s, want at least 425", *rep.GoodputBps/1e6)
	}
	if rep.Counters["gso_segments"] == 0 || rep.Drops["QDISC_DROP"] > 2 {
		t.Errorf("GSO skbs past max_size should be queued as segments: %d segments made, %d QDISC_DROP", rep.Counters["gso_segments"], rep.Drops["QDISC_DROP"])
	}
}

// fq_codel under tbf (tc qdisc add ... parent 1:1, tbf_graft), the
// usual shaper: 64 TCP uploads through a 100 Mbit/s tbf. Each flow keeps
// about a millisecond of its pacing rate in the host's queue (TSQ), so
// tbf's own bfifo holds their sum; fq_codel in its place serves the
// ping's sparse flow first and keeps each bulk flow near CoDel's
// target, at the same rate. The report lists the child as tc qdisc show
// does, and in and out of process agree.
func TestFqCodelChild(t *testing.T) {
	w := workload.Spec{Kind: workload.TCPStream, Flows: 64, CC: tcp.CCCubic, Start: 50 * sim.Millisecond,
		Path: path.Config{RTT: 10 * sim.Millisecond, Limit: path.DefaultLimit}}
	run := func(child string) report.Report {
		s := host("pfifo", w, 2*sim.Second, sim.Second)
		s.Ping = 10 * sim.Millisecond
		s.TC = []run.TCBatch{{Name: "shaper.tc", Text: "qdisc add dev eth0 root handle 1: tbf rate 100mbit burst 32kb latency 50ms\n" + child}}
		return plugintest.SameInAndOut(t, s)
	}
	plain, fq := run(""), run("qdisc add dev eth0 parent 1:1 handle 10: fq_codel\n")
	delay := func(r report.Report) float64 { return r.Latency.Loaded.P50 - 10 }
	t.Logf("queueing delay %.1f ms (bfifo) -> %.1f ms (fq_codel); goodput %.1f -> %.1f Mbit/s", delay(plain), delay(fq),
		*plain.GoodputBps/1e6, *fq.GoodputBps/1e6)
	if delay(plain) < 3*delay(fq) || delay(fq) > 10 || *fq.GoodputBps < 0.85*100e6 {
		t.Errorf("queueing delay %.1f -> %.1f ms, goodput %.1f Mbit/s", delay(plain), delay(fq), *fq.GoodputBps/1e6)
	}
	var leaf *report.Qdisc
	for i := range fq.Qdisc {
		if fq.Qdisc[i].Kind == "fq_codel" {
			leaf = &fq.Qdisc[i]
		}
	}
	if leaf == nil || leaf.Handle != "10:" || leaf.Parent != "1:1" {
		t.Fatalf("the child is not in the report: %+v", fq.Qdisc)
	}
}
