package codel_test

import (
	"os"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// The test binary also serves the built-ins as a plugin (--isolate).
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

// host is an ice device at 100 Mbit/s under qd, with closed-loop UDP
// senders whose socket buffers keep a standing queue.
func host(qd string, queues, senders int) run.Spec {
	s := run.Default()
	s.Profile = "net-next"
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Driver, s.Queues, s.RateBps = "ice", queues, 100_000_000
	s.Qdisc = qd
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: senders, PacketSize: 1400}
	s.Duration, s.Warmup = 60*sim.Millisecond, 10*sim.Millisecond
	return s
}

func xstat(q report.Qdisc, key string) int64 {
	if v, ok := q.XStatInt(key); ok {
		return v
	}
	return -1
}

// codel as the root and under mq, target 1 ms and interval 10 ms: the
// standing queue's sojourn time stays above target, so CoDel drops at
// dequeue (QDISC_CONGESTED, count going up) well before the limit; the
// report is the same out of process.
func TestRunIsolate(t *testing.T) {
	for _, qd := range []string{"codel target 1ms interval 10ms", "mq codel target 1ms interval 10ms"} {
		s := host(qd, 2, 4)
		rep := plugintest.SameInAndOut(t, s)
		var count int64
		var overlimit int64
		for _, q := range rep.Qdisc {
			if q.Kind == "codel" {
				count += xstat(q, "count")
				overlimit += xstat(q, "drop_overlimit")
			}
		}
		t.Logf("%s: drops %v, count %d", qd, rep.Drops, count)
		if rep.Drops["QDISC_CONGESTED"] == 0 || count == 0 || overlimit != 0 || !rep.AccountingOK {
			t.Errorf("%s: no CoDel drop under a standing queue, or drops at the limit: drops %v, count %d, drop_overlimit %d, accounting %v",
				qd, rep.Drops, count, overlimit, rep.AccountingOK)
		}
	}
}

// The three new qdiscs as the leaves of prio's bands, a group of
// senders each: band 1:1's codel has the link and drops at dequeue,
// the starved bands fill up, pfifo_head_drop dropping its heads and
// bfifo its tail at its byte limit; in and out of process alike.
func TestLeavesUnderPrio(t *testing.T) {
	s := host("pfifo", 1, 3)
	s.Workload.Placement = "spread"
	s.Workload.Groups, _ = workload.ParseGroups("dport=5001 dport=5002 dport=5003")
	s.TC = []run.TCBatch{{Name: "t.tc", Text: `
qdisc add dev eth0 root handle 1: prio
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1
filter add dev eth0 parent 1: protocol ip prio 2 u32 match ip dport 5002 0xffff flowid 1:2
filter add dev eth0 parent 1: protocol ip prio 3 u32 match ip dport 5003 0xffff flowid 1:3
qdisc add dev eth0 parent 1:1 handle 10: codel target 1ms interval 10ms
qdisc add dev eth0 parent 1:2 handle 20: pfifo_head_drop limit 50
qdisc add dev eth0 parent 1:3 handle 30: bfifo limit 30kb
`}}
	rep := plugintest.SameInAndOut(t, s)
	leaf := map[string]report.Qdisc{}
	for _, q := range rep.Qdisc {
		leaf[q.Kind] = q
	}
	t.Logf("drops %v; codel %+v; head drop %+v; bfifo %+v", rep.Drops, leaf["codel"], leaf["pfifo_head_drop"], leaf["bfifo"])
	codel, hd, bf := leaf["codel"], leaf["pfifo_head_drop"], leaf["bfifo"]
	if !rep.AccountingOK || codel.Parent != "1:1" || hd.Parent != "1:2" || bf.Parent != "1:3" {
		t.Fatalf("accounting %v (%s), leaves %v", rep.AccountingOK, rep.AccountingError, leaf)
	}
	if rep.Drops["QDISC_CONGESTED"] == 0 || xstat(codel, "count") == 0 || codel.SentPackets == 0 {
		t.Errorf("codel under prio: sent %d, count %d, drops %v", codel.SentPackets, xstat(codel, "count"), rep.Drops)
	}
	if hd.Dropped == 0 || hd.BacklogPackets > 50 {
		t.Errorf("pfifo_head_drop limit 50: dropped %d, holds %d", hd.Dropped, hd.BacklogPackets)
	}
	if bf.Dropped == 0 || bf.BacklogBytes > 30<<10 {
		t.Errorf("bfifo limit 30kb: dropped %d, holds %d bytes", bf.Dropped, bf.BacklogBytes)
	}
}
