package run

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
)

// tcpSpec is a small host (4 CPUs, ice with one queue) sending flows
// TCP uploads over a 20 ms path, pinging every 50 ms; the flows start
// at 1 s (before that the RTT is idle).
func tcpSpec(flows int, link string, qdisc string) Spec {
	s := Default()
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Driver, s.Queues, s.Qdisc = "ice", 1, qdisc
	s.RateBps = mustRate(link)
	s.Workload = workload.Spec{Kind: workload.TCPStream, Flows: flows, CC: tcp.CCCubic, Start: sim.Second,
		Path: path.Config{RTT: 20 * sim.Millisecond, Limit: path.DefaultLimit}}
	s.Ping = 50 * sim.Millisecond
	s.Duration, s.Warmup, s.Interval = 12*sim.Second, 5*sim.Second, 250*sim.Millisecond
	return s
}

func mustRate(r string) int64 {
	k := KnobByFlag("rate")
	var s Spec
	if err := k.Set(&s, r); err != nil {
		panic(err)
	}
	return s.RateBps
}

// queueMs is the loaded RTT's median above the base RTT.
func queueMs(rep *report.Report) float64 {
	return rep.Latency.Loaded.P50 - float64(rep.TCP.Path.RTTNs)/1e6
}

// One CUBIC flow over a 100 Mbit, 20 ms path whose bottleneck has a
// deep FIFO (1000 packets, ~120 ms): the FIFO overflows, cwnd falls to
// ~0.7 of its peak (beta 717/1024), and between losses it follows the
// cubic curve: fast growth after the loss, a plateau around the last
// peak (Wmax), fast growth beyond it.
func TestCubicSawtooth(t *testing.T) {
	if testing.Short() {
		t.Skip("60 s of simulated time")
	}
	s := tcpSpec(1, "10Gbit", "pfifo")
	s.PathRate = "100Mbit"
	s.Duration, s.Warmup, s.Interval = 60*sim.Second, sim.Second, 250*sim.Millisecond
	rep := mustRun(t, s)
	f := rep.TCP.Flows[0]
	w := f.CwndSeries
	if rep.Goodput() < 90e6 {
		t.Errorf("goodput %.1f Mbit/s, want the link's ~94", rep.Goodput()/1e6)
	}
	if f.Recoveries < 3 || f.RTOs != 0 {
		t.Fatalf("%d recoveries %d RTOs in 60 s, want a sawtooth of fast recoveries", f.Recoveries, f.RTOs)
	}
	// Epochs: from just after a drop to just before the next. A
	// recovery a sample catches halfway (PRR: cwnd is in flight +
	// sndcnt until recovery ends) goes on falling at the next sample:
	// the reduction is to the lowest sample of the fall. A fall may be
	// two reductions back to back: a segment sent early in a recovery
	// finds the FIFO still full, and when snd_una passes high_seq with
	// it lost, tcp_fastretrans_alert ends that recovery and starts the
	// next at once (tcp_time_to_recover: lost_out), from cwnd =
	// ssthresh: 0.7 twice, ~0.49. Each reduction is a recovery.
	var drops [][2]int // each fall's first and lowest sample
	reductions := 0
	for i := 1; i < len(w); i++ {
		if float64(w[i]) < 0.9*float64(w[i-1]) {
			j := i
			for j+1 < len(w) && w[j+1] < w[j] {
				j++
			}
			drops = append(drops, [2]int{i, j})
			ratio := float64(w[j]) / float64(w[i-1])
			// ~0.7 (or 0.7 twice), give or take growth before the sample.
			switch {
			case ratio >= 0.55 && ratio <= 0.85:
				reductions++
			case ratio >= 0.38 && ratio < 0.55:
				reductions += 2
			default:
				t.Errorf("cwnd %d -> %d at samples %d-%d: ratio %.2f, want ~0.7 (or ~0.49 for two recoveries back to back)",
					w[i-1], w[j], i, j, ratio)
			}
			i = j
		}
	}
	if len(drops) < 3 {
		t.Fatalf("cwnd series shows %d reductions: %v", len(drops), w)
	}
	// Every reduction the series shows is a recovery; one at the very
	// end may not show.
	if uint64(reductions) > f.Recoveries || uint64(reductions)+1 < f.Recoveries {
		t.Errorf("cwnd series shows %d reductions for %d recoveries", reductions, f.Recoveries)
	}
	cubic := false
	for k := 0; k+1 < len(drops); k++ {
		e := w[drops[k][1]:drops[k+1][0]]
		if len(e) < 12 {
			continue
		}
		third := len(e) / 3
		grow := func(a, b int) float64 { return float64(int(e[b])-int(e[a])) / float64(b-a) }
		start, mid, end := grow(0, third), grow(third, 2*third), grow(2*third, len(e)-1)
		t.Logf("epoch %d: %d samples, growth start %.1f mid %.1f end %.1f segments/sample", k, len(e), start, mid, end)
		if start > 3*mid && end > 3*mid {
			cubic = true
		}
	}
	if !cubic {
		t.Errorf("no epoch shows the cubic shape (concave, plateau, convex): %v", w)
	}
	if q := queueMs(rep); q < 60 {
		t.Errorf("queueing %.1f ms with a 1000-packet FIFO full half the time, want tens of ms", q)
	}
}

// The classic bufferbloat setup: the qdisc under test on the path's
// 100 Mbit bottleneck router. pfifo 1000 packets fills: the RTT grows
// by ~120 ms; fq_codel keeps the flows' queueing near its 5 ms target
// and the ping (a sparse flow) near the base RTT. With ECN negotiated,
// fq_codel marks instead of dropping.
func TestFqCodelVsPfifoOnThePath(t *testing.T) {
	if testing.Short() {
		t.Skip("TCP runs")
	}
	run := func(q string, ecn bool) *report.Report {
		s := tcpSpec(4, "10Gbit", "pfifo")
		s.PathRate = "100Mbit"
		s.Workload.Path.Qdisc = strings.Fields(q)
		s.Workload.ECN = ecn
		return mustRun(t, s)
	}
	fifo := run("pfifo limit 1000", false)
	codel := run("fq_codel", false)
	marks := run("fq_codel", true)
	for _, r := range []*report.Report{fifo, codel, marks} {
		if r.Goodput() < 90e6 {
			t.Errorf("goodput %.1f Mbit/s, want ~94", r.Goodput()/1e6)
		}
	}
	t.Logf("queueing over the 20 ms base: pfifo %.1f ms, fq_codel %.2f ms (ping), flows' srtt %.1f ms; fq_codel drops %d, with ECN %d marks %d drops",
		queueMs(fifo), queueMs(codel), codel.TCP.Flows[0].SrttMs, codel.TCP.Path.Up.Dropped, marks.TCP.Path.Up.Marked, marks.TCP.Path.Up.Dropped)
	if q := queueMs(fifo); q < 100 {
		t.Errorf("pfifo 1000 queues %.1f ms, want > 100 (1000 x 1538 B at 100 Mbit is 123 ms)", q)
	}
	if q := queueMs(codel); q > 15 {
		t.Errorf("fq_codel queues %.1f ms for the ping, want within a few times its 5 ms target", q)
	}
	for _, f := range codel.TCP.Flows {
		if f.SrttMs-20 > 15 {
			t.Errorf("flow %d srtt %.1f ms under fq_codel, want within 20 + 3 x 5 ms", f.ID, f.SrttMs)
		}
	}
	up := codel.TCP.Path.Up
	if up.Dropped == 0 || up.Marked != 0 {
		t.Errorf("fq_codel without ECN: %d drops %d marks, want drops", up.Dropped, up.Marked)
	}
	up = marks.TCP.Path.Up
	if up.Marked == 0 || up.Dropped > up.Marked/50 {
		t.Errorf("fq_codel with ECN: %d marks %d drops, want marks and (near) no drops", up.Marked, up.Dropped)
	}
	if marks.Counters["tcp_cwr"] == 0 || marks.Counters["tcp_retrans_segs"] > up.Dropped {
		t.Errorf("ECN: %d CWR entries, %d retransmissions", marks.Counters["tcp_cwr"], marks.Counters["tcp_retrans_segs"])
	}
}

// The qdisc on the sending host itself, at the 100 Mbit NIC: TCP small
// queues keep each flow's share of the host's queue to ~2 skbs or ~1 ms
// of its pacing rate, so a FIFO's delay grows with the number of flows
// (not with their windows); fq_codel keeps it near nothing, and with
// ECN marks instead of dropping.
func TestQdiscOnTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("TCP runs")
	}
	run := func(flows int, q string, ecn bool) *report.Report {
		s := tcpSpec(flows, "100Mbit", q)
		s.Workload.ECN = ecn
		s.Duration = 8 * sim.Second
		return mustRun(t, s)
	}
	f8, f64 := run(8, "pfifo limit 1000", false), run(64, "pfifo limit 1000", false)
	c64, e64 := run(64, "fq_codel", false), run(64, "fq_codel", true)
	t.Logf("host pfifo: 8 flows %.1f ms, 64 flows %.1f ms; fq_codel 64 flows %.2f ms (%d drops), with ECN %.2f ms (%d drops, %d CE)",
		queueMs(f8), queueMs(f64), queueMs(c64), c64.DroppedPackets, queueMs(e64), e64.DroppedPackets, e64.Counters["tcp_ce_marked_segs"])
	for _, r := range []struct {
		name string
		rep  *report.Report
	}{{"pfifo 8 flows", f8}, {"pfifo 64 flows", f64}} {
		c := r.rep.Counters
		t.Logf("host %s: tcp_autocorking %d, tcp_tsq_throttled %d, tcp_sndbuf_sleeps %d, tcp_backlog_coalesce %d, tcp_backlog_drop %d, tcp_spurious_rtx_hostqueues %d, goodput %.1f Mbit/s",
			r.name, c["tcp_autocorking"], c["tcp_tsq_throttled"], c["tcp_sndbuf_sleeps"], c["tcp_backlog_coalesce"], c["tcp_backlog_drop"],
			c["tcp_spurious_rtx_hostqueues"], r.rep.Goodput()/1e6)
	}
	// netperf's 16 KB writes while the host holds the socket's skbs are
	// corked for the TSQ tasklet (tcp_should_autocork), and the report
	// says how often (nstat's TcpExtTCPAutoCorking).
	if f8.Counters["tcp_autocorking"] == 0 {
		t.Errorf("no autocorked push with 8 uploads on the host: counters %v", f8.Counters)
	}
	if queueMs(f64) < 3*queueMs(f8) {
		t.Errorf("host FIFO delay %.1f ms with 64 flows, %.1f with 8: TSQ's per-flow share should add up", queueMs(f64), queueMs(f8))
	}
	if queueMs(c64) > 15 || queueMs(e64) > 15 {
		t.Errorf("fq_codel on the host: %.1f / %.1f ms queueing", queueMs(c64), queueMs(e64))
	}
	if e64.Counters["tcp_ce_marked_segs"] == 0 || e64.DroppedPackets > c64.DroppedPackets/10 {
		t.Errorf("fq_codel ecn on the host: %d CE marks, %d drops (without ECN %d)", e64.Counters["tcp_ce_marked_segs"], e64.DroppedPackets, c64.DroppedPackets)
	}
}

// cake's dual-srchost shares the bottleneck between source addresses
// first, then between their flows: one flow from one address gets half,
// eight flows from another share the other half.
func TestCakeDualSrchost(t *testing.T) {
	if testing.Short() {
		t.Skip("TCP runs")
	}
	for _, where := range []string{"host", "path"} {
		s := tcpSpec(9, "10Gbit", "cake bandwidth 100Mbit dual-srchost")
		if where == "path" {
			s.Qdisc = "pfifo"
			s.PathRate = "100Mbit"
			s.Workload.Path.Qdisc = []string{"cake", "dual-srchost"}
		}
		s.Workload.Hosts = []int{1, 8}
		rep := mustRun(t, s)
		one := rep.TCP.Flows[0].GoodputBps
		var eight float64
		for _, f := range rep.TCP.Flows[1:] {
			eight += f.GoodputBps
		}
		share := one / (one + eight)
		t.Logf("cake dual-srchost on the %s: 1 flow %.1f Mbit/s, 8 flows %.1f Mbit/s: %.2f", where, one/1e6, eight/1e6, share)
		if share < 0.4 || share > 0.6 {
			t.Errorf("on the %s the lone flow's host gets %.2f of the link, want ~0.5", where, share)
		}
		if s.Workload.Hosts = nil; where == "host" {
			rep = mustRun(t, s)
			if one := rep.TCP.Flows[0].GoodputBps / rep.Goodput(); one > 0.2 {
				t.Errorf("one address for all: flow 0 gets %.2f, want ~1/9", one)
			}
		}
	}
}

// TCP runs balance the accounting (retransmissions are new skbs,
// offered again; cake's split segments are offered too) and give the
// same bytes for the same seed.
func TestTCPAccountingAndDeterminism(t *testing.T) {
	s := tcpSpec(4, "1Gbit", "cake bandwidth 200Mbit")
	s.Workload.Down = 2
	s.Workload.Probes = []workload.Probe{{Kind: workload.ProbeUDPRR, DSCP: 46}}
	s.PathRate, s.PathLoss = "200Mbit", "0.1%"
	s.Duration, s.Warmup, s.Interval = 3*sim.Second, 2*sim.Second, 100*sim.Millisecond
	rep := deterministicRun(t, s)
	if rep.Counters["tcp_retrans_segs"] == 0 {
		t.Error("0.1% loss and no retransmission")
	}
	t.Logf("tcp_loss_probes %d, tcp_loss_probe_recovery %d, tcp_rtos %d, tcp_recoveries %d, tcp_spurious_rtx_hostqueues %d",
		rep.Counters["tcp_loss_probes"], rep.Counters["tcp_loss_probe_recovery"], rep.Counters["tcp_rtos"],
		rep.Counters["tcp_recoveries"], rep.Counters["tcp_spurious_rtx_hostqueues"])
	if rep.Latency == nil || rep.Latency.Loaded.Samples == 0 || rep.Latency.Idle.Samples == 0 {
		t.Fatalf("latency %+v: want idle and loaded samples", rep.Latency)
	}
	if rep.TCP.UpBps == 0 || rep.TCP.DownBps == 0 || rep.TCP.JainIndex <= 0 || rep.TCP.JainIndex > 1 {
		t.Errorf("goodput up %.0f down %.0f jain %.3f", rep.TCP.UpBps, rep.TCP.DownBps, rep.TCP.JainIndex)
	}
	p := rep.TCP.Path
	for _, l := range []report.LinkStats{p.Up, p.Down} {
		if l.Sent != l.Delivered+l.Dropped+l.Lost+l.InFlight || l.Lost == 0 {
			t.Errorf("path link %+v: sent must be delivered + dropped + lost + in flight, with losses", l)
		}
	}
}

// A lossy path (10% each way) leaves flights whose last segments, or
// the ACKs of them, are all lost: the sender's PTO (2 srtt + 2 ms)
// fires before its RTO (srtt + 200 ms or more) and a loss probe goes,
// a new skb through the host's qdisc and driver like any other
// (offered, then transmitted or dropped): the accounting still
// balances, the same seed gives the same bytes, and the probes are
// counted (nstat's TcpExtTCPLossProbes). Without tail loss probes
// (tcp_early_retrans 0) this run counts none and four RTOs.
func TestLossProbesInARun(t *testing.T) {
	s := tcpSpec(1, "1Gbit", "pfifo")
	s.PathRate, s.PathLoss = "100Mbit", "10%"
	s.Duration, s.Warmup, s.Interval = 4*sim.Second, 2*sim.Second, 100*sim.Millisecond
	rep := deterministicRun(t, s)
	c := rep.Counters
	if c["tcp_loss_probes"] == 0 || c["tcp_rtos"] >= c["tcp_loss_probes"] {
		t.Errorf("%d loss probes and %d RTOs: want the probes to take the RTOs' place", c["tcp_loss_probes"], c["tcp_rtos"])
	}
	t.Logf("tcp_loss_probes %d, tcp_loss_probe_recovery %d, tcp_rtos %d, tcp_recoveries %d, goodput %.2f Mbit/s",
		c["tcp_loss_probes"], c["tcp_loss_probe_recovery"], c["tcp_rtos"], c["tcp_recoveries"], rep.Goodput()/1e6)
}

// Under sch_fq the socket is paced (SK_PACING_FQ): TCP stamps EDT
// departure times from sk_pacing_rate and fq holds packets until then.
// fq nopacing leaves the socket unpaced (fq_classify sets SK_PACING_FQ
// only with rate_enable): CUBIC stamps no future departure, and fq
// throttles nothing.
func TestFQPacesTCP(t *testing.T) {
	for _, c := range []struct {
		qdisc string
		paced bool
	}{{"fq", true}, {"fq nopacing", false}} {
		s := tcpSpec(4, "10Gbit", c.qdisc)
		s.PathRate = "100Mbit"
		s.Duration, s.Warmup = 4*sim.Second, 2*sim.Second
		rep := mustRun(t, s)
		var throttled int64
		for _, x := range rep.Qdisc[0].XStats {
			if x.Key == "throttled" {
				throttled, _ = x.Value.Int64()
			}
		}
		if c.paced && throttled == 0 {
			t.Errorf("%s throttled no flow: TCP's EDT stamps are not honoured", c.qdisc)
		}
		if !c.paced && throttled != 0 {
			t.Errorf("%s throttled flows %d times: the sockets were paced as if SK_PACING_FQ", c.qdisc, throttled)
		}
	}
}

// tcp_stream through an htb tree: the connections' skbs carry what tc's
// filters read (protocol 6, the ports, the groups' far-end ports), so
// u32 and flower put the two groups in their classes, which share the
// 100 Mbit/s parent 3:1; the ping (ICMP) falls to the default class.
// The 3:1 class's leaf is cake, whose split-gso (its default) segments
// the GSO skbs htb hands it, as at a root: its parent counts the
// segments as packets (LeafResult.Segs), and the accounting balances.
func TestTCPThroughHTB(t *testing.T) {
	s := tcpSpec(4, "10Gbit", "pfifo")
	s.Profile = "6.18" // busylock: htb's sch->limit is 0 (see TestPrioBandZeroFirst)
	s.Workload.Groups, _ = workload.ParseGroups("dport=5001 dport=5002")
	s.Duration, s.Warmup = 6*sim.Second, 3*sim.Second
	s.TC = []TCBatch{{Name: "tcp.tc", Text: `
qdisc add dev eth0 root handle 1: htb default 30
class add dev eth0 parent 1: classid 1:1 htb rate 100mbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 75mbit ceil 100mbit
class add dev eth0 parent 1:1 classid 1:20 htb rate 25mbit ceil 100mbit
class add dev eth0 parent 1:1 classid 1:30 htb rate 1mbit ceil 100mbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff match ip dport 5001 0xffff flowid 1:10
filter add dev eth0 parent 1: protocol ip prio 2 flower ip_proto tcp dst_port 5002 classid 1:20
qdisc add dev eth0 parent 1:10 handle 10: cake besteffort
qdisc add dev eth0 parent 1:20 handle 20: fq_codel
`}}
	rep := mustRun(t, s)
	if !rep.AccountingOK {
		t.Fatal(rep.AccountingError)
	}
	c := classes(rep)
	a, b, d := c["1:10"].SentBps, c["1:20"].SentBps, c["1:30"]
	t.Logf("1:10 %.1f Mbit/s (%d packets), 1:20 %.1f Mbit/s, 1:30 %d packets; gso_segments %d, drops %v",
		a/1e6, c["1:10"].SentPackets, b/1e6, d.SentPackets, rep.Counters["gso_segments"], rep.Drops)
	if !within(a, 75e6, 0.05) || !within(b, 25e6, 0.08) {
		t.Errorf("1:10 %.1f Mbit/s, 1:20 %.1f Mbit/s: want 75 and 25", a/1e6, b/1e6)
	}
	if d.SentPackets == 0 || d.SentBps > 1e6 {
		t.Errorf("default class 1:30: %d packets, %.3f Mbit/s: want the ping's few", d.SentPackets, d.SentBps/1e6)
	}
	if rep.Counters["gso_segments"] == 0 {
		t.Error("cake as a leaf segmented no GSO skb (split-gso)")
	}
	// htb's own drops are the leaves' drops it was told of: never the
	// segments (no wrap-around, no more than the host dropped).
	if root := rep.Qdisc[0]; root.Kind != "htb" || root.Dropped > rep.DroppedPackets {
		t.Errorf("root %s dropped %d, the host %d", root.Kind, root.Dropped, rep.DroppedPackets)
	}
}

// Per-flow goodput over time (flent's tcp_nup per-flow plot): each
// flow's series_bps and cwnd_series have one entry per series interval
// of the window, the last (shorter) one included and nothing after it,
// and the flows' entries add up to the interval's goodput_bps.
func TestPerFlowGoodputSeries(t *testing.T) {
	s := tcpSpec(3, "10Gbit", "fq_codel")
	s.PathRate = "100Mbit"
	s.Duration, s.Warmup, s.Interval = 3*sim.Second, 1500*sim.Millisecond, 200*sim.Millisecond
	rep := mustRun(t, s)
	var win []report.Interval
	for _, iv := range rep.Series {
		if iv.StartNs >= int64(s.Warmup) {
			win = append(win, iv)
		}
	}
	if len(win) != 8 || win[7].EndNs != int64(s.Duration) {
		t.Fatalf("%d window intervals, want 8 ending at the run's end", len(win))
	}
	for _, f := range rep.TCP.Flows {
		if len(f.SeriesBps) != len(win) || len(f.CwndSeries) != len(win) {
			t.Fatalf("flow %d: %d goodput and %d cwnd entries for %d intervals", f.ID, len(f.SeriesBps), len(f.CwndSeries), len(win))
		}
	}
	for k, iv := range win {
		var sum float64
		for _, f := range rep.TCP.Flows {
			sum += f.SeriesBps[k]
		}
		if sum <= 0 {
			t.Errorf("interval %d: no flow delivered anything", k)
		}
		if d := sum - iv.GoodputBps; d > 1e-6*iv.GoodputBps || d < -1e-6*iv.GoodputBps {
			t.Errorf("interval %d: flows add up to %.0f bit/s, the interval has %.0f", k, sum, iv.GoodputBps)
		}
	}
}

// Downloads whose ACKs leave through cake shaped at 1 Mbit (an
// asymmetric link's upload): without the ACK filter the ACKs queue
// behind the shaper and the downloads run ACK-clocked well below the
// 100 Mbit link; with it cake keeps one ACK a connection queued (the
// newest says what the others said: cake_ack_filter), the queue stays
// short and the downloads fill the link. The filtered ACKs are counted
// as the tin's ack_drop and balance the accounting under their reason.
func TestCakeAckFilterFreesTheDownloads(t *testing.T) {
	run := func(qd string) *report.Report {
		s := tcpSpec(0, "100Mbit", qd)
		s.Workload.Down = 4
		s.Workload.Path.RateBps = s.RateBps
		s.Duration, s.Warmup = 4*sim.Second, 2*sim.Second
		rep, err := Run(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.AccountingOK {
			t.Fatalf("%s: %s", qd, rep.AccountingError)
		}
		return rep
	}
	plain := run("cake bandwidth 1mbit")
	for _, mode := range []string{"ack-filter", "ack-filter-aggressive"} {
		filtered := run("cake bandwidth 1mbit " + mode)
		acks := filtered.Drops["CAKE_ACK_FILTER"]
		t.Logf("%s: goodput %.1f -> %.1f Mbit/s, %d ACKs filtered", mode, plain.TCP.DownBps/1e6, filtered.TCP.DownBps/1e6, acks)
		if plain.Drops["CAKE_ACK_FILTER"] != 0 || acks == 0 {
			t.Errorf("%s: %d ACKs filtered, %d without the filter", mode, acks, plain.Drops["CAKE_ACK_FILTER"])
		}
		if filtered.TCP.DownBps < 1.4*plain.TCP.DownBps || filtered.TCP.DownBps < 85e6 {
			t.Errorf("%s: downloads at %.1f Mbit/s, %.1f without the filter: the ACKs still clock them", mode,
				filtered.TCP.DownBps/1e6, plain.TCP.DownBps/1e6)
		}
	}
}
