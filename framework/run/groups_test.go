package run

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
)

// mixedSpec is 8 TCP uploads and a ping (the first group) with 240
// netperf UDP_STREAMs beside them (Also), through mq fq on 8 queues.
func mixedSpec() Spec {
	s := Default()
	s.Sockets, s.Cores, s.Threads = 1, 8, 2
	s.Driver, s.Queues, s.Qdisc = "ice", 8, "mq fq"
	s.RateBps = mustRate("10Gbit")
	s.Workload = workload.Spec{Kind: workload.TCPStream, Flows: 8, CC: tcp.CCCubic, Start: 40 * sim.Millisecond,
		Path: path.Config{RTT: 2 * sim.Millisecond, Limit: path.DefaultLimit}}
	s.Ping = 5 * sim.Millisecond
	udp := Default().Workload
	udp.Senders = 240
	s.Also = []workload.Spec{udp}
	s.Duration, s.Warmup, s.Interval = 200*sim.Millisecond, 100*sim.Millisecond, 20*sim.Millisecond
	return s
}

// Sender groups add up: 240 UDP senders, 8 TCP flows and a ping on one
// host. Every group sends; the accounting balances over all of them;
// the UDP group's sockets (what sch_fq tells flows apart by) and tasks
// are numbered after the TCP connections; the report lists the UDP group
// beside the first; the same spec gives the same bytes.
func TestSenderGroupsAddUp(t *testing.T) {
	s := mixedSpec()
	a, b := jsonOf(t, s), jsonOf(t, s)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs of one spec differ")
	}
	var rep report.Report
	if err := json.Unmarshal(a, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.AccountingOK {
		t.Fatal(rep.AccountingError)
	}
	if rep.TCP == nil || rep.TCP.UpBps <= 0 || len(rep.TCP.Flows) != 8 {
		t.Fatalf("TCP: %+v", rep.TCP)
	}
	if rep.Latency == nil || rep.Latency.Loaded.Samples == 0 || rep.Latency.Idle.Samples == 0 {
		t.Fatalf("latency %+v: want idle and loaded ping samples", rep.Latency)
	}
	tcpPkts := rep.TCP.UpBps / 8 / tcp.MSS * float64(rep.WindowNs) / 1e9
	if float64(rep.Window.TxPackets) < 2*tcpPkts {
		t.Errorf("%d packets sent in the window, TCP's ~%.0f: the UDP senders sent little", rep.Window.TxPackets, tcpPkts)
	}
	if len(rep.Setup.Also) != 1 || rep.Setup.Also[0].Workload != workload.UDPStream || rep.Setup.Also[0].Senders != 240 ||
		rep.Setup.Workload != workload.TCPStream {
		t.Fatalf("setup %+v", rep.Setup)
	}
	h, err := setup(&s)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if len(h.also) != 1 || len(h.also[0].Sockets) != 240 || h.also[0].Sockets[0].ID != 8 || h.also[0].Tasks[0].Name != "netperf/8" {
		t.Fatalf("the UDP group's first socket %d, task %q: want them numbered after the 8 TCP connections", h.also[0].Sockets[0].ID, h.also[0].Tasks[0].Name)
	}
	// The UDP group's own counters: its sockets sleep on a full sndbuf
	// or see fq's drops (-ENOBUFS), whichever the drainers' pace gives
	// (with the TCP ACKs' softirq where RSS puts it, maybe neither: a
	// pfifo of 16 packets on each queue makes them see drops).
	s.Qdisc = "mq pfifo limit 16"
	rep = *mustRun(t, s)
	if rep.Counters["sender_sndbuf_sleeps"]+rep.Counters["sender_xmit_drop_seen"] == 0 {
		t.Error("the UDP group's sockets never slept nor saw a drop: its counters are not in the report")
	}
}

// Bad sender groups: a line naming the group and what is wrong.
func TestSenderGroupsBad(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(s *Spec)
		want string
	}{
		{"tcp beside", func(s *Spec) { s.Also = append(s.Also, s.Workload) }, "senders group 3 (tcp_stream): only udp_stream and udp_rate groups run beside"},
		{"forward first", func(s *Spec) {
			s.Workload = workload.Spec{Kind: workload.Forward, Flows: 16, Rate: 1e6, PacketSize: 22}
		},
			"senders group 2 (udp_stream): forward's traffic comes from the wire"},
		{"bad count", func(s *Spec) { s.Also[0].Senders = 0 }, "senders group 2 (udp_stream): workload: senders must be 1..8192, got 0"},
		{"bad placement", func(s *Spec) { s.Also[0].Placement = "0-99" }, "senders group 2 (udp_stream): placement: "},
		{"late launch", func(s *Spec) { s.Also[0].Launch = sim.Millisecond }, "senders group 2 (udp_stream): launch: the last of 240 senders would start at 239ms"},
		// Each group within --senders' range, all of them together not.
		{"threads in all", func(s *Spec) {
			s.Also[0].Senders = workload.MaxSenders
			s.Also = append(s.Also, s.Also[0], s.Also[0])
		}, "24576 sender threads in 3 groups, at most 8192 in all (--senders (senders.count): its range is for every group together)"},
		// No placement given: the count is what is too big.
		{"default placement", func(s *Spec) { s.Also[0].Kind = workload.UDPRate },
			"senders group 2 (udp_rate): count: 240 senders but only 16 CPUs, and udp_rate's default placement (spread) pins one sender per CPU: give at most 16, or placement unpinned"},
	} {
		s := mixedSpec()
		tt.edit(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// More senders than CPUs under a placement that pins one a CPU names
// what the user gave: the count when the placement is the kind's
// default, the placement when it was given.
func TestPlacementBlame(t *testing.T) {
	for _, tt := range []struct {
		kind, placement string
		want            string
	}{
		{workload.UDPRate, "", "--senders (senders.count): 240 senders but only 8 CPUs, and udp_rate's default placement (spread) pins one sender per CPU: give at most 8, or --placement unpinned to let them share CPUs"},
		{workload.UDPRate, workload.Spread, "--placement (senders.placement): workload: 240 senders but only 8 CPUs (spread pins one sender per CPU"},
		{workload.UDPStream, "0-3", "--placement (senders.placement): workload: placement \"0-3\" has 4 CPUs for 240 senders"},
		{workload.UDPStream, "", ""}, // unpinned: they share
	} {
		s := small()
		s.Workload.Kind, s.Workload.Senders, s.Workload.Placement = tt.kind, 240, tt.placement
		s.Workload.Flows, s.Workload.Rate = 16, 1e6
		err := s.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s %q: %v", tt.kind, tt.placement, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s %q: %v, want %q", tt.kind, tt.placement, err, tt.want)
		}
	}
}

// Timed actions on a tcp_stream run: the live stats count its tasks
// (none paused); stop and start are refused with a line saying why.
func TestActionsOnTCP(t *testing.T) {
	s := tcpSpec(2, "100Mbit", "fq_codel")
	s.Duration, s.Warmup, s.Interval = 300*sim.Millisecond, 100*sim.Millisecond, 50*sim.Millisecond
	var running int
	s.Actions = []Action{{Name: "look", At: 50 * sim.Millisecond, Do: func(l *Live) error { running = l.Stats().Running; return nil }}}
	mustRun(t, s)
	if running != 3 {
		t.Errorf("%d senders running, want the 2 netperf tasks and the ping", running)
	}
	s.Actions = []Action{{Name: "stop", At: 50 * sim.Millisecond, Do: func(l *Live) error { return l.StopSenders(0, nil) }}}
	if _, err := Run(s, nil); err == nil || !strings.Contains(err.Error(), "stop at 50ms: stop and start act on UDP senders; tcp_stream's connections") {
		t.Errorf("stop on tcp_stream: %v", err)
	}
}

// A timed action names a sender group (1 the first) or acts on every
// group it applies to: stop with no group pauses the UDP group beside
// the TCP one; start in group 2 resumes that group's sender; a group
// that does not exist, or a TCP group named for stop, is a one-line
// error naming it.
func TestActionsNameAGroup(t *testing.T) {
	s := mixedSpec()
	s.Duration, s.Warmup = 120*sim.Millisecond, 40*sim.Millisecond
	var paused, resumed int
	s.Actions = []Action{
		{Name: "stop", At: 50 * sim.Millisecond, Do: func(l *Live) error {
			if err := l.StopSenders(0, nil); err != nil {
				return err
			}
			for i := range l.also[0].CPUs {
				if l.also[0].Paused(i) {
					paused++
				}
			}
			if st := l.Stats(); st.Senders != 249 || st.Running != 9 {
				t.Errorf("live: %d senders, %d running; want 249 (8 flows, the ping, 240 UDP) and the 9 TCP", st.Senders, st.Running)
			}
			return nil
		}},
		{Name: "start", At: 60 * sim.Millisecond, Do: func(l *Live) error {
			if err := l.StartSenders(2, []int{3}); err != nil {
				return err
			}
			for i := range l.also[0].CPUs {
				if !l.also[0].Paused(i) {
					resumed++
				}
			}
			return nil
		}},
	}
	mustRun(t, s)
	if paused != 240 || resumed != 1 {
		t.Errorf("%d of group 2's 240 senders paused, then %d running, want 240 and 1", paused, resumed)
	}
	for _, tt := range []struct {
		do   func(l *Live) error
		want string
	}{
		{func(l *Live) error { return l.StopSenders(3, nil) }, "act at 50ms: senders group 3 does not exist (groups 1-2)"},
		{func(l *Live) error { return l.StartSenders(1, nil) }, "act at 50ms: senders group 1: stop and start act on UDP senders"},
		{func(l *Live) error { return l.SetRate(2, 1e5) }, "act at 50ms: senders group 2: rate changes need udp_rate senders (these are udp_stream)"},
		{func(l *Live) error { return l.StopSenders(2, []int{240}) }, "act at 50ms: sender 240 out of range (senders 0-239)"},
	} {
		s.Actions = []Action{{Name: "act", At: 50 * sim.Millisecond, Do: tt.do}}
		if _, err := Run(s, nil); err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v, want one line with %q", err, tt.want)
		}
	}
}
