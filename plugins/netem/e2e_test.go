package netem_test

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
	_ "github.com/txlab/txlab/plugins/drr"
	_ "github.com/txlab/txlab/plugins/htb"
	_ "github.com/txlab/txlab/plugins/netem"
	_ "github.com/txlab/txlab/plugins/tbf"
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
	if v, ok := q.XStatInt(key); ok {
		return v
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
	plugintest.SameInAndOut(t, s)
}

// netem and tbf as leaves under htb, in and out of process: netem's
// duplicates go to htb (the root), which classifies them back to
// netem's class; the clones are offered and accounted for, netem
// duplicates its share of the originals only, tbf shapes its class, and
// --isolate gives the same bytes. netem's limit is above what the
// senders queue in the run: it orphans what it delays, so their send
// buffers do not hold them back, and a limit drop would take a
// duplicate's draw with it.
func TestLeavesUnderHTB(t *testing.T) {
	s := host("pfifo")
	s.Queues = 1
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 1000, Placement: "spread"}
	s.Workload.Groups, _ = workload.ParseGroups("dport=5001 dport=5002")
	s.Duration, s.Warmup = 20*sim.Millisecond, 5*sim.Millisecond
	s.TC = []run.TCBatch{{Name: "t.tc", Text: `
qdisc add dev eth0 root handle 1: htb default 20
class add dev eth0 parent 1: classid 1:1 htb rate 2gbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 1gbit ceil 2gbit
class add dev eth0 parent 1:1 classid 1:20 htb rate 500mbit ceil 2gbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10
qdisc add dev eth0 parent 1:10 handle 10: netem delay 500us duplicate 20% limit 100000
qdisc add dev eth0 parent 1:20 handle 20: tbf rate 200mbit burst 20k latency 5ms
`}}
	rep := plugintest.SameInAndOut(t, s)
	var netem, tbf *report.Qdisc
	for i, q := range rep.Qdisc {
		switch q.Kind {
		case "netem":
			netem = &rep.Qdisc[i]
		case "tbf":
			tbf = &rep.Qdisc[i]
		}
	}
	if netem == nil || tbf == nil || netem.Parent != "1:10" || tbf.Parent != "1:20" {
		t.Fatalf("leaves: netem %v, tbf %v", netem, tbf)
	}
	dups := xstat(*netem, "duplicated")
	if !rep.AccountingOK || dups <= 0 || uint64(dups) != rep.Counters["qdisc_clones"] {
		t.Fatalf("accounting %v (%s), duplicated %d, clones %d", rep.AccountingOK, rep.AccountingError, dups, rep.Counters["qdisc_clones"])
	}
	took := int64(netem.SentPackets) + int64(netem.Dropped) + int64(netem.BacklogPackets) - dups
	if share := float64(dups) / float64(took); math.Abs(share-0.20) > 0.02 {
		t.Errorf("netem duplicated %d of %d originals (%.3f), want 20%%", dups, took, share)
	}
	t.Logf("offered %d, clones %d of %d originals at netem; classes %v", rep.OfferedPackets, dups, took, rep.Classes)
	for _, c := range rep.Classes {
		if c.ClassID == "1:20" && (c.SentBps > 1.05*200e6 || c.SentBps < 0.9*200e6) {
			t.Errorf("tbf's class sent %.1f Mbit/s, want tbf's 200", c.SentBps/1e6)
		}
	}
}

// A leaf's own drop under a classful qdisc, in and out of process (the
// code crosses both plugin boundaries: netem's answer to the host, the
// host's LeafResult to htb or drr). netem's loss answers NET_XMIT_SUCCESS
// | __NET_XMIT_BYPASS: htb_enqueue counts it in the qdisc's drops and
// the class's (cl->drops, net_xmit_drop_count), drr_enqueue in the
// qdisc's (its class dump shows the leaf's qstats, netem's own count).
// A pfifo_head_drop leaf's NET_XMIT_CN is counted the same way:
// net_xmit_drop_count is 1 for every code but __NET_XMIT_STOLEN.
func TestLeafDropsInClassStats(t *testing.T) {
	for _, tt := range []struct{ name, root, class string }{
		{"htb", "htb", "htb rate 1gbit"},
		{"drr", "drr", "drr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := host("pfifo")
			s.Queues = 1
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 1000, Placement: "spread"}
			s.Workload.Groups, _ = workload.ParseGroups("dport=5001 dport=5002")
			s.Duration, s.Warmup = 10*sim.Millisecond, 2*sim.Millisecond
			s.TC = []run.TCBatch{{Name: "t.tc", Text: `
qdisc add dev eth0 root handle 1: ` + tt.root + `
class add dev eth0 parent 1: classid 1:10 ` + tt.class + `
class add dev eth0 parent 1: classid 1:20 ` + tt.class + `
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5002 0xffff flowid 1:20
qdisc add dev eth0 parent 1:10 handle 10: netem loss 30%
qdisc add dev eth0 parent 1:20 handle 20: pfifo_head_drop limit 5
`}}
			rep := plugintest.SameInAndOut(t, s)
			if !rep.AccountingOK {
				t.Fatalf("accounting: %s", rep.AccountingError)
			}
			leaf := map[string]uint64{}
			var root uint64
			for _, q := range rep.Qdisc {
				switch q.Parent {
				case "1:10", "1:20":
					leaf[q.Parent] = q.Dropped
				case "root":
					root = q.Dropped
				}
			}
			if leaf["1:10"] == 0 || leaf["1:20"] == 0 {
				t.Fatalf("leaves dropped %v: want netem's loss and head drops", leaf)
			}
			if want := leaf["1:10"] + leaf["1:20"]; root != want {
				t.Errorf("%s dropped %d, want its leaves' %d", tt.root, root, want)
			}
			for _, c := range rep.Classes {
				if w, ok := leaf[c.ClassID]; ok && c.Dropped != w {
					t.Errorf("class %s dropped %d, want its leaf's %d", c.ClassID, c.Dropped, w)
				}
			}
			t.Logf("%s dropped %d; leaves %v; classes %+v", tt.root, root, leaf, rep.Classes)
		})
	}
}

// tcpHost is a small host sending flows cubic uploads over one ice queue
// at rate bit/s and a 1 ms path.
func tcpHost(rate int64, flows int) run.Spec {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Driver, s.Queues, s.RateBps = "ice", 1, rate
	s.Workload = workload.Spec{Kind: workload.TCPStream, Flows: flows, CC: tcp.CCCubic, Start: 10 * sim.Millisecond,
		Path: path.Config{RTT: sim.Millisecond, Limit: path.DefaultLimit}}
	return s
}

// An upload through netem's delay on its own host, the usual way to
// emulate a long path: netem orphans what it delays (skb_orphan_partial),
// so TCP small queues do not count the 20 ms of packets netem holds, and
// one flow fills the 100 Mbit/s link. Were the packets charged to the
// socket until they left, TSQ would keep a millisecond of the flow's
// rate in the host and the flow would send about a twentieth of that
// (1.2 Mbit/s when last measured so). In and out of process alike: the
// flag crosses the plugin boundary with netem's Info.
func TestTCPThroughDelay(t *testing.T) {
	s := tcpHost(100_000_000, 1)
	s.Qdisc = "netem delay 20ms limit 10000"
	s.Duration, s.Warmup = 1200*sim.Millisecond, 600*sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	t.Logf("goodput %.1f Mbit/s, tsq throttled %d", *rep.GoodputBps/1e6, rep.Counters["tcp_tsq_throttled"])
	if *rep.GoodputBps < 0.85*100e6 {
		t.Errorf("goodput %.1f Mbit/s through netem delay 20ms at 100 Mbit/s, want at least 85", *rep.GoodputBps/1e6)
	}
}

// netem with a child, the usual WAN emulation (tc qdisc add dev eth0
// root handle 1: netem delay 10ms loss 1% ecn; tc qdisc add dev eth0
// parent 1:1 handle 10: tbf rate 20mbit ...): two ECN uploads on a
// 1 Gbit/s link see the delay and the shaper's rate, and netem's CE
// marks, made at its enqueue, reach the receiver through the child (the
// host carries a packet's ECN field to the leaf). The class shows as tc
// class show prints it, with no stats of its own; in and out of
// process alike.
func TestChildShapes(t *testing.T) {
	s := tcpHost(1_000_000_000, 2)
	s.Qdisc = "pfifo"
	s.Ping = 50 * sim.Millisecond
	s.Workload.ECN = true
	s.TC = []run.TCBatch{{Name: "wan.tc", Text: "qdisc add dev eth0 root handle 1: netem delay 10ms loss 1% ecn\n" +
		"qdisc add dev eth0 parent 1:1 handle 10: tbf rate 20mbit burst 32kb latency 50ms\n"}}
	s.Duration, s.Warmup = 1500*sim.Millisecond, 700*sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	t.Logf("goodput %.2f Mbit/s, idle RTT %.1f ms, loaded %.1f ms, CE segs %d, retrans %d, classes %+v", *rep.GoodputBps/1e6,
		rep.Latency.Idle.P50, rep.Latency.Loaded.P50, rep.Counters["tcp_ce_marked_segs"], rep.Counters["tcp_retrans_segs"], rep.Classes)
	if g := *rep.GoodputBps / 1e6; g < 0.85*20 || g > 20 {
		t.Errorf("goodput %.2f Mbit/s, want the child's 20 Mbit/s", g)
	}
	if rep.Latency.Idle.P50 < 11 {
		t.Errorf("idle RTT %.1f ms, want netem's 10 ms over the path's 1", rep.Latency.Idle.P50)
	}
	if rep.Counters["tcp_ce_marked_segs"] == 0 {
		t.Error("no CE mark reached the receiver through the child")
	}
	if len(rep.Classes) != 2 || rep.Classes[0].ClassID != "1:1" || rep.Classes[0].Leaf != "10:" || rep.Classes[0].BacklogPackets != 0 {
		t.Errorf("classes %+v: want netem's 1:1 with leaf 10: and no stats, then tbf's", rep.Classes)
	}
}

// The child deleted under traffic (tc qdisc del dev eth0 parent 1:1,
// netem_graft of NULL): netem sends what is due itself again, so the
// uploads leave the 20 Mbit/s the shaper held them to; the packets the
// child held are purged. In and out of process alike (the delete
// reaches the plugin as a graft of nothing).
func TestChildDeleted(t *testing.T) {
	s := tcpHost(1_000_000_000, 2)
	s.Qdisc = "pfifo"
	s.TC = []run.TCBatch{{Name: "wan.tc", Text: "qdisc add dev eth0 root handle 1: netem delay 10ms limit 10000\n" +
		"qdisc add dev eth0 parent 1:1 handle 10: tbf rate 20mbit burst 32kb latency 50ms\n"}}
	del := "qdisc del dev eth0 parent 1:1 handle 10:"
	s.Actions = []run.Action{{Name: del, At: 400 * sim.Millisecond, Do: func(l *run.Live) error { return l.TC(del) }}}
	s.Duration, s.Warmup = 1500*sim.Millisecond, 700*sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	t.Logf("goodput after the delete %.1f Mbit/s, drops %v, qdiscs %d", *rep.GoodputBps/1e6, rep.Drops, len(rep.Qdisc))
	if *rep.GoodputBps < 3*20e6 || len(rep.Qdisc) != 1 || len(rep.Classes) != 0 {
		t.Errorf("after the child's delete: goodput %.1f Mbit/s, qdiscs %+v, classes %+v: want netem alone, well above the shaper's 20 Mbit/s",
			*rep.GoodputBps/1e6, rep.Qdisc, rep.Classes)
	}
}
