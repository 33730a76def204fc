package run

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
)

// Ingress shaping on a forwarding DUT, as the recipes set it up: the
// ingress qdisc's filter redirects every frame to ifb0 (`action mirred
// egress redirect dev ifb0`), whose root shapes it; ifb's tasklet gives
// each back to netif_receive_skb on eth0 and the forwarding path goes
// on. What exceeds the shaper is dropped in ifb0's qdisc, the forwarded
// rate is the shaper's, and every frame ifb0 took came back (its
// tasklet ran). Without the redirect the same DUT forwards all 2 Gbit/s
// it is offered.
func TestForwardIngressShapingThroughIfb(t *testing.T) {
	for _, shaper := range []string{"tbf rate 1gbit burst 64k latency 10ms", "htb default 1\nclass add dev ifb0 parent 1: classid 1:1 htb rate 1gbit"} {
		s := fwd("6.18", "mq pfifo", 250e3)
		s.Duration, s.Warmup = 20*sim.Millisecond, 5*sim.Millisecond
		s.Workload.PacketSize = 1000
		s.Ifb = "ifb0"
		s.TC = []TCBatch{{Name: "ifb.tc", Text: "qdisc add dev eth0 handle ffff: ingress\n" +
			"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
			"qdisc replace dev ifb0 root handle 1: " + shaper + "\n"}}
		rep := mustRun(t, s)
		ifb := device(t, rep, "ifb0")
		var shaped report.Qdisc
		for _, q := range ifb.Qdisc {
			if q.Kind == strings.Fields(shaper)[0] {
				shaped = q
			}
		}
		if !rep.AccountingOK || !within(rep.TxBps, 1e9, 0.05) || rep.Drops["QDISC_DROP"] == 0 || shaped.Dropped != rep.Drops["QDISC_DROP"] || len(rep.Drops) != 1 ||
			ifb.TaskletRuns == 0 || rep.Setup.Ifb != "ifb0" {
			t.Errorf("%s: accounting %v %s; forwarded %.3f Gbit/s; drops %v; ifb0's %s %+v; tasklet runs %d",
				shaper, rep.AccountingOK, rep.AccountingError, rep.TxBps/1e9, rep.Drops, shaped.Kind, shaped, ifb.TaskletRuns)
		}
	}
	s := fwd("6.18", "mq pfifo", 250e3)
	s.Duration, s.Warmup = 20*sim.Millisecond, 5*sim.Millisecond
	s.Workload.PacketSize = 1000
	if rep := mustRun(t, s); !within(rep.TxBps, 2e9, 0.05) {
		t.Errorf("without the redirect the DUT forwards %.3f Gbit/s, want the offered 2", rep.TxBps/1e9)
	}
}

// Shaping a host's own traffic through an ifb (clsact's egress block
// redirecting to it) takes the senders' backpressure away: mirred sends
// a clone and the hook consumes the original, whose sock_wfree gives the
// socket its charge back at once, so the UDP senders never sleep on
// their send buffers and the shaper's queue drops what they offer; the
// same shaper as eth0's root holds the senders to its rate by their
// send buffers.
func TestEgressIfbLosesBackpressure(t *testing.T) {
	run := func(viaIfb bool) *report.Report {
		s := Default()
		s.Profile = "6.18"
		s.Sockets, s.Cores, s.Threads = 1, 4, 1
		s.Driver, s.Queues = "ice", 4
		s.Workload.Senders, s.Workload.PacketSize = 4, 1472
		s.Duration, s.Warmup = 20*sim.Millisecond, 5*sim.Millisecond
		text := "qdisc replace dev eth0 root tbf rate 1gbit burst 64k latency 50ms\n"
		if viaIfb {
			s.Ifb = "ifb0"
			text = "qdisc add dev eth0 clsact\nfilter add dev eth0 egress protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
				"qdisc replace dev ifb0 root tbf rate 1gbit burst 64k latency 50ms\n"
		}
		s.TC = []TCBatch{{Name: "shape.tc", Text: text}}
		return mustRun(t, s)
	}
	root, ifb := run(false), run(true)
	for _, rep := range []*report.Report{root, ifb} {
		if !rep.AccountingOK || !within(rep.TxBps, 1e9, 0.05) {
			t.Fatalf("accounting %v %s, sent %.3f Gbit/s: want 1", rep.AccountingOK, rep.AccountingError, rep.TxBps/1e9)
		}
	}
	if root.Counters["sender_sndbuf_sleeps"] == 0 || root.Drops["QDISC_DROP"] != 0 {
		t.Errorf("tbf as eth0's root: %d send-buffer sleeps, drops %v: want the senders held back and nothing dropped",
			root.Counters["sender_sndbuf_sleeps"], root.Drops)
	}
	if ifb.Counters["sender_sndbuf_sleeps"] != 0 || ifb.Drops["QDISC_DROP"] == 0 {
		t.Errorf("tbf on ifb0: %d send-buffer sleeps, drops %v: want no sleep and tbf dropping the excess",
			ifb.Counters["sender_sndbuf_sleeps"], ifb.Drops)
	}
}

// --ifb's bad input: one line naming the flag, before anything runs.
func TestIfbBadInput(t *testing.T) {
	for _, tt := range []struct{ ifb, tcText, want string }{
		{ifb: "ifb0 numtxqueues 0", want: "--ifb (device.ifb): ifb0: Error: Invalid number of transmit queues"},
		{ifb: "eth0", want: "--ifb (device.ifb): eth0: RTNETLINK answers: File exists"},
		{ifb: "ifb0", tcText: "qdisc add dev eth0 clsact\nfilter add dev eth0 egress matchall action mirred egress redirect dev ifb1\n", want: `Cannot find device "ifb1"`},
		{ifb: "ifb0", tcText: "qdisc replace dev eth0 root handle 1: htb\nfilter add dev eth0 parent 1: matchall action mirred egress redirect dev ifb0\n", want: "mirred on a qdisc's filters is not modelled"},
	} {
		s := Default()
		s.Ifb = tt.ifb
		s.Duration, s.Warmup = sim.Millisecond, 0
		if tt.tcText != "" {
			s.TC = []TCBatch{{Name: "t.tc", Text: tt.tcText}}
		}
		_, err := Run(s, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--ifb %q: %v, want one line with %q", tt.ifb, err, tt.want)
		}
	}
}

// sqm's download shaping on a host: 4 TCP downloads over a 100 Mbit/s
// path whose bottleneck FIFO (1000 packets) the host cannot touch; the
// ingress qdisc's mirred hands every received segment to ifb0, whose
// cake in ingress mode at 95 Mbit/s keeps the bottleneck's queue empty
// (the downloads slow to its rate), and ifb's tasklet gives each to the
// socket. The loaded RTT falls from the FIFO's ~100 ms of queue to
// cake's few ms, at 5% of the goodput; the local path's balance holds
// (cake's drops counted as local_tc_dropped, not as the host's
// transmit drops).
func TestDownloadShapingThroughIfb(t *testing.T) {
	run := func(viaIfb bool) *report.Report {
		s := tcpSpec(0, "10Gbit", "fq_codel")
		s.Workload.Down = 4
		s.Workload.Path.RateBps = 100e6
		s.Duration, s.Warmup = 4*sim.Second, 2*sim.Second
		if viaIfb {
			s.Ifb = "ifb0"
			s.TC = []TCBatch{{Name: "sqm.tc", Text: "qdisc add dev eth0 handle ffff: ingress\n" +
				"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
				"qdisc replace dev ifb0 root cake bandwidth 95mbit besteffort ingress\n"}}
		}
		rep := mustRun(t, s)
		if !rep.AccountingOK {
			t.Fatalf("ifb %v: %s", viaIfb, rep.AccountingError)
		}
		return rep
	}
	fifo, sqm := run(false), run(true)
	t.Logf("loaded RTT queue %.1f -> %.1f ms, goodput %.1f -> %.1f Mbit/s, local_tc_dropped %d",
		queueMs(fifo), queueMs(sqm), fifo.TCP.DownBps/1e6, sqm.TCP.DownBps/1e6, sqm.Counters["local_tc_dropped"])
	if queueMs(fifo) < 50 || queueMs(sqm) > 10 {
		t.Errorf("loaded RTT above the path's: %.1f ms through the FIFO, %.1f ms shaped by ifb0's cake: want > 50 and < 10", queueMs(fifo), queueMs(sqm))
	}
	if sqm.TCP.DownBps < 85e6 || sqm.TCP.DownBps > 95e6 || len(sqm.Drops) != 0 {
		t.Errorf("shaped: %.1f Mbit/s (want 85-95), transmit drops %v (want none: the drops are the local path's)", sqm.TCP.DownBps/1e6, sqm.Drops)
	}
	if ifb := device(t, sqm, "ifb0"); ifb.TaskletRuns == 0 || ifb.TxPackets == 0 {
		t.Errorf("ifb0 gave back %d packets in %d tasklet runs", ifb.TxPackets, ifb.TaskletRuns)
	}
}

// Ingress police on a host's downloads: the ingress block runs on the
// packets for the host's sockets too (a NIC's local NAPI poll, veth's
// backlog), and what exceeds is dropped there (local_tc_dropped), so the
// downloads settle below the police's rate.
func TestIngressPoliceOnDownloads(t *testing.T) {
	for _, drv := range []string{"ice", "veth"} {
		s := tcpSpec(0, "10Gbit", "fq_codel")
		s.Driver = drv
		s.Workload.Down = 2
		s.Workload.Path.RateBps = 100e6
		s.Duration, s.Warmup = 4*sim.Second, 2*sim.Second
		s.TC = []TCBatch{{Name: "police.tc", Text: "qdisc add dev eth0 ingress\n" +
			"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action police rate 20mbit burst 100k drop\n"}}
		rep := mustRun(t, s)
		t.Logf("%s: downloads %.1f Mbit/s, local_tc_dropped %d", drv, rep.TCP.DownBps/1e6, rep.Counters["local_tc_dropped"])
		if !rep.AccountingOK || rep.Counters["local_tc_dropped"] == 0 || rep.TCP.DownBps > 21e6 || rep.TCP.DownBps < 10e6 || len(rep.Drops) != 0 {
			t.Errorf("%s: accounting %v %s; downloads %.1f Mbit/s (want 10-21), local_tc_dropped %d, transmit drops %v",
				drv, rep.AccountingOK, rep.AccountingError, rep.TCP.DownBps/1e6, rep.Counters["local_tc_dropped"], rep.Drops)
		}
	}
}
