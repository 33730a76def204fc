package plugin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
)

// The test binary is its own plugin: started by a host, it serves the
// built-ins and plugintest's misbehaving qdiscs.
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

// What a plugin prints reaches the host's log, each line prefixed with
// the plugin's name.
func TestPluginOutputPrefixed(t *testing.T) {
	var log syncBuffer
	s := small("mq test_chatty", "ice")
	s.Plugins = plugin.Options{Paths: []string{linkPlugin(t, t.TempDir(), "test_chatty")}, Log: &log}
	if _, err := run.Run(s, nil); err != nil {
		t.Fatal(err)
	}
	want := "[plugin test_chatty] hello from init"
	for start := time.Now(); !strings.Contains(log.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("log lacks %q:\n%s", want, log.String())
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func small(qd, drv string) run.Spec {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Queues = 2
	s.Driver = drv
	s.Qdisc = qd
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 120}
	s.Duration, s.Warmup = 2*sim.Millisecond, 500*sim.Microsecond
	return s
}

func jsonOf(t *testing.T, s run.Spec) ([]byte, error) {
	t.Helper()
	rep, err := run.Run(s, nil)
	rep.SimWallNs = 0
	b, jerr := json.MarshalIndent(rep, "", "  ")
	if jerr != nil {
		t.Fatal(jerr)
	}
	return b, err
}

// In process and out of process give the same report, byte for byte.
func TestIsolateSameReport(t *testing.T) {
	// ice's static 50 us ITR: under its TX DIM (8 us at the start) the
	// ring drains fast enough that a 50-packet queue never overflows.
	iceStatic := []string{"adaptive-tx", "off"}
	// sfq's 20 a queue fill and stay full only on a ring that holds
	// fewer than the senders' share: ice's smallest (ICE_MIN_NUM_DESC).
	iceStaticShort := []string{"adaptive-tx", "off", "tx", "64"}
	cases := []struct {
		qdisc, driver string
		overload      bool     // open loop above what the device takes: drops
		driverArgs    []string // veth's NAPI path: its SyncPoints let other CPUs call in while a call waits (nested calls)
	}{
		{"mq pfifo limit 50", "ice", true, iceStatic}, {"pfifo_fast", "ice", false, nil}, {"mq fq", "ice", false, nil},
		{"mq fq_codel limit 50", "ice", true, iceStatic}, {"mq sfq limit 20", "ice", true, iceStaticShort}, {"cake memlimit 64kb", "ice", true, nil},
		{"cake_mq bandwidth 100mbit memlimit 64kb", "ice", true, nil}, {"mq pfifo", "i40e", false, nil}, {"mq pfifo", "idpf", false, nil},
		{"mq fq", "mlx5", false, nil}, {"mq pfifo", "mlx5", false, []string{"skb_tx_mpwqe", "off"}},
		{"", "veth", false, nil}, {"pfifo", "veth", true, nil},
		// veth's NAPI path under noqueue: 4 senders on 2 rqs overflow the
		// 256-slot rings (veth_xdp_rcv frees a slot per skb consumed, and
		// ptr_ring gives them back 16 at a time), a drop each.
		{"", "veth", true, []string{"napi", "on"}}, {"pfifo", "veth", true, []string{"napi", "on"}},
		{"fq_codel limit 50", "ice", true, iceStatic},
	}
	// These end with flows holding packets: tc class show lists them
	// (fq_codel_walk, sfq_walk, cake_walk), the same in and out of
	// process.
	flowsAtEnd := map[string]bool{"fq_codel limit 50": true, "mq sfq limit 20": true, "cake memlimit 64kb": true}
	for _, tc := range cases {
		t.Run(tc.qdisc+"/"+tc.driver+strings.Join(tc.driverArgs, "_"), func(t *testing.T) {
			s := small(tc.qdisc, tc.driver)
			s.DriverArgs = tc.driverArgs
			if tc.overload {
				s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, Flows: 16, PacketSize: 64, Rate: 8e6}
			}
			out := sameInAndOut(t, s)
			var rep struct {
				TxPackets      uint64 `json:"tx_packets"`
				DroppedPackets uint64 `json:"dropped_packets"`
				Classes        []struct {
					Kind           string `json:"kind"`
					BacklogPackets int    `json:"backlog_packets"`
				} `json:"classes"`
			}
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.TxPackets == 0 || tc.overload != (rep.DroppedPackets > 0) {
				t.Fatalf("tx %d dropped %d: not the run intended (overload %v)", rep.TxPackets, rep.DroppedPackets, tc.overload)
			}
			if flowsAtEnd[tc.qdisc] {
				flows := 0
				for _, c := range rep.Classes {
					if c.Kind == "fq_codel" || c.Kind == "sfq" || c.Kind == "cake" {
						flows += c.BacklogPackets
					}
				}
				if flows == 0 {
					t.Errorf("no flow class holds a packet: %+v", rep.Classes)
				}
				t.Logf("%d classes, %d packets in flows", len(rep.Classes), flows)
			}
		})
	}
}

// sameInAndOut runs s in process and then with its plugins isolated in
// their own processes, and wants the same report bytes; it returns them.
func sameInAndOut(t *testing.T, s run.Spec) []byte {
	t.Helper()
	in, err := jsonOf(t, s)
	if err != nil {
		t.Fatal(err)
	}
	s.Plugins = plugin.Options{Isolate: true}
	out, err := jsonOf(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("reports differ:\n%s", firstDiff(in, out))
	}
	return out
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  in process:     %s\n  out of process: %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// linkPlugin makes dir/txlab-qdisc-KIND, a link to this test binary.
func linkPlugin(t *testing.T, dir, kind string) string {
	return plugintest.Link(t, dir, plugin.QdiscPrefix, kind)
}

// A forwarding DUT's RX DIM runs in the host from the driver's RxInfo
// (its profile table, start and rate limit), which crosses the plugin
// boundary, and i40e's own moderation answers the host's RxComplete
// across it: the same report in process and out, the RX ITR moving in
// both (a light per-queue rate: every poll completes).
func TestIsolateSameReportForward(t *testing.T) {
	for _, drv := range []string{"ice", "idpf", "i40e"} {
		t.Run(drv, func(t *testing.T) {
			s := small("mq pfifo", drv)
			s.Cores = 8
			s.Workload = workload.Spec{Kind: workload.Forward, PacketSize: 22, Flows: 16, Rate: 1e6}
			s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
			out := sameInAndOut(t, s)
			var rep struct {
				Rx struct {
					Queues []struct {
						Changes uint64 `json:"rx_dim_changes"`
					} `json:"queues"`
				} `json:"rx"`
			}
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatal(err)
			}
			var changes uint64
			for _, q := range rep.Rx.Queues {
				changes += q.Changes
			}
			if len(rep.Rx.Queues) == 0 || changes == 0 {
				t.Fatalf("%d RX queues, %d RX DIM changes: not the run intended", len(rep.Rx.Queues), changes)
			}
		})
	}
}

// Redirected traffic through an ifb gives the same report in and out of
// process: a forwarding DUT's ingress shaped by fq_codel under htb on
// ifb0, and a host's own senders redirected from clsact's egress block
// to a multiqueue ifb with fq_codel under mq (each plugin's packets are
// the ones mirred and ifb's tasklet move between devices).
func TestIsolateSameReportIfb(t *testing.T) {
	fw := small("mq pfifo", "ice")
	fw.Workload = workload.Spec{Kind: workload.Forward, PacketSize: 1000, Flows: 16, Rate: 300e3}
	fw.Duration, fw.Warmup = 6*sim.Millisecond, sim.Millisecond
	fw.Ifb = "ifb0"
	fw.TC = []run.TCBatch{{Name: "in.tc", Text: "qdisc add dev eth0 handle ffff: ingress\n" +
		"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
		"qdisc replace dev ifb0 root handle 1: htb default 1\nclass add dev ifb0 parent 1: classid 1:1 htb rate 1gbit\n" +
		"qdisc add dev ifb0 parent 1:1 fq_codel\n"}}
	eg := small("mq pfifo", "ice")
	eg.Ifb = "ifb0 numtxqueues 2"
	eg.TC = []run.TCBatch{{Name: "eg.tc", Text: "qdisc add dev eth0 clsact\n" +
		"filter add dev eth0 egress protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
		"qdisc replace dev ifb0 root handle 1: mq\nqdisc add dev ifb0 parent 1:1 fq_codel\nqdisc add dev ifb0 parent 1:2 fq_codel\n"}}
	dl := small("fq_codel", "ice")
	dl.Queues = 1
	dl.Workload = workload.Spec{Kind: workload.TCPStream, Down: 2, CC: tcp.CCCubic, Start: 10 * sim.Millisecond,
		Path: path.Config{RTT: 5 * sim.Millisecond, Limit: path.DefaultLimit, RateBps: 100e6}}
	dl.Duration, dl.Warmup = 150*sim.Millisecond, 50*sim.Millisecond
	dl.Ifb = "ifb0"
	dl.TC = []run.TCBatch{{Name: "sqm.tc", Text: "qdisc add dev eth0 handle ffff: ingress\n" +
		"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n" +
		"qdisc replace dev ifb0 root cake bandwidth 95mbit besteffort ingress\n"}}
	for name, s := range map[string]run.Spec{"forward ingress": fw, "egress": eg, "downloads": dl} {
		t.Run(name, func(t *testing.T) {
			out := sameInAndOut(t, s)
			if !bytes.Contains(out, []byte(`"tasklet_runs"`)) {
				t.Fatalf("no ifb tasklet ran: not the run intended")
			}
		})
	}
}

// A plugin that crashes, hangs or breaks its contract ends the run with
// an error naming it and what it did; the partial report's accounting
// still balances, the packets it held counted as lost to the plugin.
func TestMisbehavingPlugins(t *testing.T) {
	cases := []struct {
		kind string
		want []string
		lost bool // it held packets when it failed
	}{
		{"test_crash", []string{"qdisc test_crash", "dequeue", "exited", "panic: test_crash: crashing on purpose"}, true},
		{"test_hang", []string{"qdisc test_hang", "dequeue", "no answer within 1s", "hangs"}, true},
		{"test_twice", []string{"qdisc test_twice", "dequeue", "twice"}, true},
		{"test_forge", []string{"qdisc test_forge", "dequeue", "never handed"}, true},
		{"test_panic", []string{"qdisc test_panic", "dequeue", "panic: test_panic: a bug in the plugin (at ", "plugintest.go:"}, true},
		// It forked a grandchild that holds the host's stdout and stderr,
		// then crashed: the host still notices at once.
		{"test_forkcrash", []string{"qdisc test_forkcrash", "dequeue", "exited", "panic: test_crash: crashing on purpose (at ", "plugintest.go:"}, true},
		{"test_garbage", []string{"qdisc test_garbage", "dequeue", "malformed frame"}, true},
		{"test_badframe", []string{"qdisc test_badframe", "dequeue", "frame type 99"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			s := small("mq "+tc.kind, "ice")
			timeout := time.Minute // a loaded machine must not turn a misbehaving plugin into a hanging one
			if tc.kind == "test_hang" {
				timeout = time.Second
			}
			s.Plugins = plugin.Options{Paths: []string{linkPlugin(t, t.TempDir(), tc.kind)}, Timeout: timeout, Log: io.Discard}
			start := time.Now()
			rep, err := run.Run(s, nil)
			if err == nil {
				t.Fatal("the run succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if rep == nil || rep.Error == "" {
				t.Fatal("no partial report carrying the error")
			}
			if !rep.AccountingOK {
				t.Fatalf("accounting broken after the failure: %s", rep.AccountingError)
			}
			if lost := rep.Drops[string(skb.DropLostToPlugin)]; tc.lost && lost == 0 {
				t.Errorf("no packets counted as %s (drops %v)", skb.DropLostToPlugin, rep.Drops)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v to notice", d)
			}
			// A panic's first frames come with the error, for after its line.
			if st := plugin.StackOf(err); strings.Contains(tc.want[len(tc.want)-1], "plugintest.go") &&
				(!strings.Contains(st, "goroutine ") || !strings.Contains(st, "plugintest.go:") || strings.Count(st, "\n") > 25) {
				t.Errorf("stack of the panic: %q", st)
			}
		})
	}
}

// A plugin that forked a grandchild holding its stdout and stderr (the
// host's pipes) is stopped at once, grandchild and all.
func TestGrandchildHoldsPipes(t *testing.T) {
	pids := t.TempDir()
	t.Setenv(plugintest.EnvPidDir, pids)
	self, err := plugin.Locate(linkPlugin(t, t.TempDir(), "test_fork"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugin.Start(self, plugin.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.NewQdisc("test_fork")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qdisctest.NewCtx(1).Init(q, qdisctest.DefaultSetup(), nil); err != nil {
		t.Fatal(err)
	}
	var sleepers []int
	for start := time.Now(); len(sleepers) == 0 && time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
		sleepers = plugintest.Pids(pids, "sleeper")
	}
	if len(sleepers) != 1 || !plugintest.Alive(sleepers[0]) {
		t.Fatalf("no grandchild: %v", sleepers)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on the grandchild's pipes")
	}
	if err := plugintest.Leftovers(pids, 3*time.Second, nil); err != nil {
		t.Fatal(err)
	}
}

// A plugin that exits before the handshake, or in its qdisc's Init: one
// line naming it, with its exit status and its last words; nothing was
// offered, nothing is lost.
func TestPluginExitsDuringSetup(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{plugintest.ExitAtStart, []string{"exited during start-up (exit status 5)", "exiting before the handshake"}},
		{"test_exitinit", []string{"qdisc test_exitinit init", "exited (exit status 4)", "exiting in Init"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			s := small("mq "+tc.kind, "ice")
			s.Plugins = plugin.Options{Paths: []string{linkPlugin(t, t.TempDir(), tc.kind)}, Timeout: time.Minute, Log: io.Discard}
			rep, err := run.Run(s, nil)
			if err == nil {
				t.Fatal("the run succeeded")
			}
			for _, w := range append(tc.want, "plugin qdisc "+tc.kind) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if rep == nil || rep.OfferedPackets != 0 || rep.TxPackets+rep.DroppedPackets != 0 || rep.InFlightPackets != 0 {
				t.Fatalf("a run that never started moved packets: %+v", rep)
			}
		})
	}
}

// countWriter counts what is written to it, keeping nothing.
type countWriter struct {
	mu sync.Mutex
	n  int
}

func (c *countWriter) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += len(b)
	return len(b), nil
}

// A plugin that floods its stdout and stderr (lines, and one line of
// 256 KB): the host passes it on, prefixed, and the run ends as usual.
func TestStderrFlood(t *testing.T) {
	t.Setenv(plugintest.EnvFloodMB, "4")
	var log countWriter
	s := small("mq test_flood", "ice")
	s.Plugins = plugin.Options{Paths: []string{linkPlugin(t, t.TempDir(), "test_flood")}, Log: &log}
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AccountingOK || rep.TxPackets == 0 {
		t.Fatalf("accounting %v (%s), tx %d", rep.AccountingOK, rep.AccountingError, rep.TxPackets)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.n < 8<<20 { // 4 MB each on stdout and stderr
		t.Fatalf("the host passed on %d bytes of the flood", log.n)
	}
}

// A driver that never completes a descriptor: its rings fill, the
// queues stop for good, and the run ends with those packets in flight on
// the ring; nothing is transmitted, and the accounting balances.
func TestDriverNeverCompletes(t *testing.T) {
	s := small("mq pfifo limit 100", "test_stuck")
	s.Plugins = plugin.Options{Paths: []string{plugintest.Link(t, t.TempDir(), plugin.DriverPrefix, "test_stuck")}, Log: io.Discard}
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AccountingOK {
		t.Fatalf("accounting: %s", rep.AccountingError)
	}
	ring := rep.InFlightWhere["driver"]
	if rep.TxPackets != 0 || ring == 0 || rep.DroppedPackets == 0 {
		t.Fatalf("tx %d, in flight %d (on the rings %d), dropped %d: the rings did not fill and stay full",
			rep.TxPackets, rep.InFlightPackets, ring, rep.DroppedPackets)
	}
}

// A plugin whose checksum does not match its manifest entry is refused
// before it starts; one with no entry is refused too.
func TestChecksumRefused(t *testing.T) {
	dir := t.TempDir()
	linkPlugin(t, dir, "test_crash")
	s := small("mq test_crash", "ice")
	s.Plugins = plugin.Options{Dir: dir, Log: io.Discard}
	_, err := run.Run(s, nil)
	if err == nil || !strings.Contains(err.Error(), "not in") || !strings.Contains(err.Error(), plugin.Manifest) {
		t.Fatalf("no manifest entry: got %v", err)
	}
	bad := strings.Repeat("ab", 32) + "  " + plugin.QdiscPrefix + "test_crash\n"
	if err := os.WriteFile(filepath.Join(dir, plugin.Manifest), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run.Run(s, nil)
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("wrong checksum: got %v", err)
	}
	t.Log(err)
}

// A driver plugin named on the command line (txlab-driver-NAME) runs
// like a built-in, with the same report but for the note that it
// replaced the built-in.
func TestExternalDriver(t *testing.T) {
	p := plugintest.Link(t, t.TempDir(), plugin.DriverPrefix, "idpf")
	s := small("mq fq", "idpf")
	in, err := jsonOf(t, s)
	if err != nil {
		t.Fatal(err)
	}
	s.Plugins = plugin.Options{Paths: []string{p}, Log: io.Discard}
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"driver idpf: " + p}; !slices.Equal(rep.PluginOverrides, want) {
		t.Fatalf("plugin_overrides %q, want %q", rep.PluginOverrides, want)
	}
	rep.PluginOverrides, rep.SimWallNs = nil, 0
	out, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("reports differ:\n%s", firstDiff(in, out))
	}
}

// The gRPC stream transport gives the same report as shared memory.
func TestGRPCTransportSameReport(t *testing.T) {
	s := small("mq fq_codel limit 50", "veth")
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, Flows: 16, PacketSize: 64, Rate: 2e6}
	s.Duration, s.Warmup = sim.Millisecond, 200*sim.Microsecond
	in, err := jsonOf(t, s)
	if err != nil {
		t.Fatal(err)
	}
	s.Plugins = plugin.Options{Isolate: true, Transport: "grpc"}
	out, err := jsonOf(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("reports differ:\n%s", firstDiff(in, out))
	}
}

// tc qdisc change crosses the boundary: a Changer's new limit comes
// back, its errors come back as errors, and a qdisc that is no Changer
// says so.
func TestChangeAcrossBoundary(t *testing.T) {
	self, err := plugin.Self()
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugin.Start(self, plugin.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	setup := qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 100, NumTxQ: 1}
	q, err := p.NewQdisc("test_change")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Init(qdisctest.NewCtx(1), setup, nil); err != nil {
		t.Fatal(err)
	}
	ctx := qdisctest.NewCtx(1)
	if info, err := q.Change(ctx, []string{"limit", "7"}); err != nil || info.Limit != 7 {
		t.Fatalf("change limit 7: %+v %v", info, err)
	}
	if _, err := q.Change(ctx, []string{"bogus"}); err == nil || !strings.Contains(err.Error(), "bogus") || !errors.Is(err, qdisc.ErrParse) {
		t.Fatalf("change bogus: %v (want a tc parse error)", err)
	}
	if q.PluginDead() != nil {
		t.Fatal("a refused change killed the plugin")
	}
	plain, err := p.NewQdisc("test_fixed") // pfifo without a change op
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Init(qdisctest.NewCtx(1), setup, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Change(ctx, []string{"limit", "7"}); !errors.Is(err, qdisc.ErrCannotChange) || !errors.Is(err, qdisc.ErrKernel) {
		t.Fatalf("change of a qdisc that is no Changer: %v", err)
	}
}

// A qdisc's own timer crosses the boundary: armed in Init (a posted op
// of the init call), run by the host's Timer call, its drop (with a
// declared reason) and re-arm applied to the host.
func TestTimerAcrossBoundary(t *testing.T) {
	self, err := plugin.Self()
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugin.Start(self, plugin.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	q, err := p.NewQdisc("test_ticker")
	if err != nil {
		t.Fatal(err)
	}
	ctx := qdisctest.NewCtx(1)
	if _, err := ctx.Init(q, qdisctest.DefaultSetup(), nil); err != nil {
		t.Fatal(err)
	}
	if !ctx.TimerArmed || ctx.TimerAt != 100*sim.Microsecond {
		t.Fatalf("timer after Init: armed %v at %d", ctx.TimerArmed, ctx.TimerAt)
	}
	q.Enqueue(ctx, []skb.Packet{{Handle: 0x101, Len: 100}, {Handle: 0x102, Len: 100}}, make([]qdisc.Code, 2))
	ctx.T = ctx.TimerAt
	ctx.TimerArmed = false
	q.Timer(ctx)
	if ctx.Dropped[0x101] != "TEST_TICK" || !ctx.TimerArmed || ctx.TimerAt != 200*sim.Microsecond+sim.Time(sim.DefaultCosts().QdiscDequeue) { // the re-arm comes after the reported dequeue
		t.Fatalf("after a tick: dropped %v, timer armed %v at %d", ctx.Dropped, ctx.TimerArmed, ctx.TimerAt)
	}
	if st := q.Stats(); st.Qlen != 1 || q.PluginDead() != nil {
		t.Fatalf("qlen %d, dead %v", st.Qlen, q.PluginDead())
	}
}

// A timed qdisc change gives the same report in and out of process: its
// drops cross the boundary as posted operations, like Reset's.
func TestIsolateSameReportWithChange(t *testing.T) {
	for _, tc := range []struct{ qdisc, change string }{
		{"mq fq_codel limit 2000", "limit 10 target 2ms"},
		{"fq limit 5000", "limit 20 buckets 64"},
		{"cake diffserv4", "besteffort bandwidth 500mbit"},
	} {
		t.Run(tc.qdisc, func(t *testing.T) {
			s := small(tc.qdisc, "ice")
			s.RateBps = 3e8                                                                           // 4 senders send about 0.6 Gbit/s of 64-byte payloads
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 64, DSCP: 8} // faster than the link: the queues fill
			s.Actions = []run.Action{{Name: "change", At: sim.Millisecond, Do: func(l *run.Live) error {
				return l.ChangeQdisc(-1, strings.Fields(tc.change))
			}}}
			out := sameInAndOut(t, s)
			var rep struct {
				Drops map[string]uint64 `json:"drops"`
			}
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Drops["NOT_SPECIFIED"]+rep.Drops["QUEUE_PURGE"] == 0 {
				t.Fatalf("the change dropped nothing: %v", rep.Drops)
			}
		})
	}
}

// A plugin in the plugin directory with a built-in's name is refused
// when a run uses that name, unless Override names it; one named with
// --plugin replaces the built-in as asked. The report says which
// built-ins were replaced, and by what.
func TestOverrideBuiltin(t *testing.T) {
	dir := t.TempDir()
	f, err := plugin.Locate(linkPlugin(t, dir, "pfifo")) // the test binary serves the built-ins too
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("%x  %s\n", f.Sum, filepath.Base(f.Path))
	if err := os.WriteFile(filepath.Join(dir, plugin.Manifest), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	note := []string{"qdisc pfifo: " + f.Path}
	for _, tc := range []struct {
		name  string
		qdisc string
		o     plugin.Options
		err   string   // the run's error ("": none)
		notes []string // the report's plugin_overrides
	}{
		{"dir refused", "mq pfifo limit 50", plugin.Options{Dir: dir},
			"has the name of the built-in qdisc pfifo: refused (rename it, or replace the built-in with --plugin-override pfifo)", nil},
		{"dir, name unused", "mq fq", plugin.Options{Dir: dir}, "", nil},
		{"dir overridden", "mq pfifo limit 50", plugin.Options{Dir: dir, Override: []string{"pfifo"}}, "", note},
		{"named on the command line", "mq pfifo limit 50", plugin.Options{Paths: []string{f.Path}}, "", note},
		{"override of no built-in", "mq fq", plugin.Options{Dir: dir, Override: []string{"pfifo2"}},
			`--plugin-override "pfifo2": no built-in qdisc or driver has that name`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := small(tc.qdisc, "ice")
			s.Plugins = tc.o
			s.Plugins.Log = io.Discard
			rep, err := run.Run(s, nil)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if !slices.Equal(rep.PluginOverrides, tc.notes) {
				t.Fatalf("plugin_overrides %q, want %q", rep.PluginOverrides, tc.notes)
			}
		})
	}
}

// Classful qdiscs out of process give the same report as in process:
// htb and prio with leaves of every kind (one of them classful itself:
// leaf queries nest), filters of every kind classifying in the plugin,
// in and out, over shared memory and gRPC.
func TestIsolateClassful(t *testing.T) {
	htbTree := `
qdisc add dev eth0 root handle 1: htb default 30 r2q 100
class add dev eth0 parent 1: classid 1:1 htb rate 200mbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 100mbit ceil 200mbit prio 1
class add dev eth0 parent 1:1 classid 1:20 htb rate 60mbit ceil 150mbit
class add dev eth0 parent 1:1 classid 1:30 htb rate 20mbit ceil 50mbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10
filter add dev eth0 parent 1: protocol ip prio 2 fw
filter add dev eth0 parent 1: protocol ip prio 3 flower ip_proto udp dst_port 5003 classid 1:30 action skbedit priority 1:2
qdisc add dev eth0 parent 1:10 handle 10: prio
qdisc add dev eth0 parent 1:20 handle 20: sfq limit 20
qdisc add dev eth0 parent 1:30 handle 30: fq_codel limit 50
`
	prioTree := `
qdisc add dev eth0 root handle 1: prio bands 3
qdisc add dev eth0 parent 1:2 handle 2: htb default 1
class add dev eth0 parent 2: classid 2:1 htb rate 80mbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip tos 0xb8 0xfc flowid 1:1
`
	drrTree := `
qdisc add dev eth0 root handle 1: drr
class add dev eth0 parent 1: classid 1:1 drr quantum 3000
class add dev eth0 parent 1: classid 1:2 drr
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1
filter add dev eth0 parent 1: protocol ip prio 2 matchall classid 1:2
qdisc add dev eth0 parent 1:2 handle 2: fq_codel
`
	etsTree := `
qdisc add dev eth0 root handle 1: ets bands 3 strict 1 quanta 3000 priomap 1 2 2 2 1 2 0 0
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1
qdisc add dev eth0 parent 1:3 handle 3: fq_codel
class change dev eth0 classid 1:2 ets quantum 1000
`
	hfscTree := `
qdisc add dev eth0 root handle 1: hfsc default 20
class add dev eth0 parent 1: classid 1:1 hfsc sc rate 200mbit ul rate 200mbit
class add dev eth0 parent 1:1 classid 1:10 hfsc rt m1 100mbit d 2ms m2 20mbit ls rate 50mbit
class add dev eth0 parent 1:1 classid 1:20 hfsc ls rate 150mbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10
qdisc add dev eth0 parent 1:10 handle 10: fq_codel
`
	// 1:1's maxpkt below the senders' frames: qfq_enqueue moves it to
	// an aggregate of their length (qfq_change_agg); 1:3's tbf holds
	// packets and shows its head only when it may send
	qfqTree := `
qdisc add dev eth0 root handle 1: qfq
class add dev eth0 parent 1: classid 1:1 qfq weight 3 maxpkt 1000
class add dev eth0 parent 1: classid 1:2 qfq weight 1
class add dev eth0 parent 1: classid 1:3 qfq weight 2 maxpkt 4000
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1
filter add dev eth0 parent 1: protocol ip prio 2 matchall classid 1:2
qdisc add dev eth0 parent 1:2 handle 2: fq_codel
qdisc add dev eth0 parent 1:3 handle 3: tbf rate 20mbit burst 10k limit 100k
`
	at := func(us int, tc string) run.Action {
		return run.Action{Name: tc, At: sim.Time(us) * sim.Microsecond, Do: func(l *run.Live) error { return l.TC(tc) }}
	}
	live := []run.Action{ // purges, qlen notifications and class changes while packets flow
		at(1000, "qdisc change dev eth0 parent 1:30 handle 30: fq_codel limit 5"),
		at(1500, "class add dev eth0 parent 1:20 classid 1:200 htb rate 30mbit ceil 150mbit"),
		at(2000, "qdisc replace dev eth0 parent 1:10 handle 11: pfifo limit 30"),
		at(2500, "class change dev eth0 classid 1:30 htb rate 40mbit ceil 50mbit"),
	}
	for _, tt := range []struct {
		name, tc, groups, transport string
		actions                     []run.Action
	}{
		{"htb tree", htbTree, "dport=5001,prio=2 mark=0x10020 dport=5003 -", "", nil},
		{"htb tree over grpc", htbTree, "dport=5001,prio=2 mark=0x10020 dport=5003 -", "grpc", nil},
		{"prio over htb", prioTree, "dscp=46 prio=0", "", nil},
		{"drr", drrTree, "dport=5001 -", "", nil},
		{"ets", etsTree, "dport=5001 prio=6 -", "", nil},
		{"sfb", "qdisc add dev eth0 root handle 1: sfb target 3 max 6\nfilter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff classid 1:7\nfilter add dev eth0 parent 1: protocol ip prio 2 matchall classid 1:9\n", "dport=5001 -", "", nil},
		{"cbs", "qdisc add dev eth0 root handle 1: cbs idleslope 50000 sendslope -950000 hicredit 30 locredit -1470\nqdisc add dev eth0 parent 1:1 handle 2: fq_codel\n", "-", "", nil},
		{"hfsc", hfscTree, "dport=5001 -", "", []run.Action{ // a curve changed and a leaf purged while packets flow
			at(1500, "class change dev eth0 classid 1:10 hfsc sc rate 30mbit ul rate 60mbit"),
			at(2000, "class add dev eth0 parent 1:20 classid 1:200 hfsc ls rate 100mbit")}},
		{"qfq", qfqTree, "dport=5001 prio=1:3 -", "", []run.Action{ // a class moved to another aggregate, and one deleted, while packets flow
			at(1500, "class change dev eth0 classid 1:2 qfq weight 5 maxpkt 3000"),
			at(2000, "class del dev eth0 classid 1:3")}},
		{"tc while running", htbTree, "dport=5001,prio=2 mark=0x10020 dport=5003 -", "", live},
		{"police on drr's filters", "qdisc add dev eth0 root handle 1: drr\nclass add dev eth0 parent 1: classid 1:1 drr\nclass add dev eth0 parent 1: classid 1:2 drr\n" +
			"filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff action police rate 30mbit burst 4k conform-exceed drop/pipe flowid 1:1\n" +
			"filter add dev eth0 parent 1: protocol ip prio 2 matchall classid 1:2\n", "dport=5001 -", "", []run.Action{
			at(2000, "filter add dev eth0 parent 1: protocol ip prio 3 matchall action police pkts_rate 2000 pkts_burst 4 drop")}}, // the first police keeps its bucket
		{"multiq", "qdisc replace dev eth0 root handle 1: multiq\nqdisc add dev eth0 parent 1:2 handle 2: fq_codel\n" +
			"filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.1.0.1/32 action skbedit queue_mapping 3\n", "-", "", nil},
		{"taprio", "qdisc replace dev eth0 root handle 100: taprio num_tc 2 map 0 1 queues 2@0 2@2 base-time 0 " +
			"sched-entry S 01 300000 sched-entry S 02 200000 sched-entry S 03 500000 clockid CLOCK_TAI\nqdisc replace dev eth0 parent 100:3 handle 3: fq_codel\n", "prio=0 prio=1", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := small("pfifo", "ice")
			s.Queues = 1
			if strings.Contains(tt.tc, "taprio") || strings.Contains(tt.tc, "multiq") {
				s.Queues = 4
			}
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 1000}
			s.Workload.Groups, _ = workload.ParseGroups(tt.groups)
			s.TC = []run.TCBatch{{Name: "t.tc", Text: tt.tc}}
			s.Actions = tt.actions
			s.Duration = 4 * sim.Millisecond
			in, err := jsonOf(t, s)
			if err != nil {
				t.Fatal(err)
			}
			s.Plugins = plugin.Options{Isolate: true, Transport: tt.transport}
			out, err := jsonOf(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in, out) {
				t.Fatalf("reports differ:\n%s", firstDiff(in, out))
			}
			if !bytes.Contains(out, []byte(`"classes"`)) || !bytes.Contains(out, []byte(`"accounting_ok": true`)) {
				t.Fatalf("no classes, or the accounting failed:\n%s", out)
			}
			if tt.actions != nil && strings.HasPrefix(tt.name, "tc") && !bytes.Contains(out, []byte(`"NOT_SPECIFIED"`)) { // what the purges freed
				t.Fatalf("the live changes purged nothing")
			}
		})
	}
}

// Filters on the flow qdiscs (fq_codel, sfq, cake: their own block)
// classify in the plugin, in and out of process alike: cls_flow's
// hashrnd comes from the qdisc's seed (its flow filters hash the
// senders into twice the flows there are, so which senders the
// out-of-range half drops, or which share a queue, is the hashrnd's
// doing), a filter added while packets flow reaches the plugin's copy
// and leaves the others' hashrnd as it was, and drops by filter are
// accounted.
func TestIsolateFlowQdiscFilters(t *testing.T) {
	at := func(us int, tc string) run.Action {
		return run.Action{Name: tc, At: sim.Time(us) * sim.Microsecond, Do: func(l *run.Live) error { return l.TC(tc) }}
	}
	for _, tt := range []struct {
		name, tc string
	}{
		{"fq_codel", `
qdisc add dev eth0 root handle 1: fq_codel limit 50 flows 64
filter add dev eth0 parent 1: protocol ip pref 1 u32 match ip dport 5003 0xffff action drop
filter add dev eth0 parent 1: protocol all pref 2 handle 1 flow hash keys src,dst,proto-src divisor 128 perturb 1
`},
		{"sfq", `
qdisc add dev eth0 root handle 1: sfq limit 20 divisor 64
filter add dev eth0 parent 1: protocol all pref 2 handle 7 flow hash keys proto-src,rxhash divisor 128
`},
		{"cake", `
qdisc add dev eth0 root handle 1: cake bandwidth 100mbit memlimit 32kb flows
filter add dev eth0 parent 1: protocol all pref 2 handle 1 flow hash keys proto-src divisor 3 baseclass 5:1
filter add dev eth0 parent 1: protocol ip pref 1 u32 match ip dport 5002 0xffff action skbedit priority 1:2 pipe
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := small("pfifo", "ice")
			s.Queues = 1
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1000}
			s.Workload.Groups, _ = workload.ParseGroups("dport=5001 dport=5002 dport=5003,prio=1:3 dport=5004")
			s.TC = []run.TCBatch{{Name: "t.tc", Text: tt.tc}}
			s.Actions = []run.Action{at(1500, "filter add dev eth0 parent 1: protocol ip pref 1 u32 match ip dport 5004 0xffff flowid 1:ffff")}
			s.Duration = 4 * sim.Millisecond
			out := sameInAndOut(t, s)
			if !bytes.Contains(out, []byte(`"accounting_ok": true`)) || !bytes.Contains(out, []byte(`flow chain 0 handle`)) {
				t.Fatalf("the accounting failed, or no flow filter is shown:\n%s", out)
			}
			if tt.name != "cake" && !bytes.Contains(out, []byte(`"QDISC_DROP"`)) {
				t.Fatalf("no packet was dropped by a filter")
			}
		})
	}
}

// Isolated runs side by side reuse each other's plugin processes (a run
// hands its process on when it closes) and give the reports they give
// one by one. Run with -race: a run must unwind its CPUs, whose tasks
// may be parked inside a plugin call, before it hands the process on,
// or the unwinding task's put of its call races with the next run.
func TestIsolatedRunAllReusesProcs(t *testing.T) {
	var log syncBuffer
	var specs []run.Spec
	for i, qd := range []string{"mq fq_codel", "mq pfifo", "mq sfq", "mq fq"} {
		s := small(qd, "ice")
		s.Name = fmt.Sprintf("%d %s", i, qd)
		s.Workload.Senders = 8 // more senders than CPUs: tasks park mid-call
		s.Plugins = plugin.Options{Isolate: true, Log: &log}
		specs = append(specs, s)
	}
	encode := func(reps []*report.Report, errs []error) []string {
		var out []string
		for i, r := range reps {
			if errs[i] != nil {
				t.Fatalf("%s: %v", specs[i].Name, errs[i])
			}
			r.StripWall()
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		return out
	}
	seq := encode(run.RunAll(specs, 1, nil, nil))
	par := encode(run.RunAll(append(specs, specs...), 2, nil, nil))
	for i := range par {
		if par[i] != seq[i%len(seq)] {
			t.Errorf("%s: -j 2 gave another report than -j 1", specs[i%len(specs)].Name)
		}
	}
	if strings.Contains(log.String(), "open") {
		t.Errorf("a run handed on its plugin process with a call open:\n%s", log.String())
	}
}

// What a qdisc writes into an skb stays the skb's, in and out of
// process alike: a filter's action (tcf_skbedit_act sets skb->priority)
// and cake's wash (cake_handle_diffserv clears the DSCP). bond0's qdisc
// edits; each slave's prio reads the edits after bond0's dequeue
// (prio_classify: its u32 filter sends DSCP EF (tos 0xb8) to band 3,
// and with no filter matching skb->priority picks the band through the
// priomap, TC_PRIO_INTERACTIVE (6) band 1, priority 0 band 2).
func TestIsolateQdiscEditsPersist(t *testing.T) {
	for _, tt := range []struct {
		root  string
		bands [3]bool // the slave bands that send
	}{
		{"fq_codel", [3]bool{true, false, true}}, // priority 6; EF's DSCP kept
		{"cake wash", [3]bool{true, false, false}},
	} {
		t.Run(tt.root, func(t *testing.T) {
			s := small("pfifo", "i40e")
			s.Queues = 1
			s.Bond = "mode balance-xor xmit_hash_policy layer3+4 slaves 2"
			s.Workload.Groups, _ = workload.ParseGroups("dport=5001,dscp=46 dport=5002")
			text := "qdisc add dev bond0 root handle 1: " + tt.root + "\n" +
				"filter add dev bond0 parent 1: protocol all pref 1 matchall classid 1:1 action skbedit priority 6 pipe\n"
			for i, eth := range []string{"eth0", "eth1"} {
				text += fmt.Sprintf("qdisc replace dev %s root handle %d: prio\n", eth, i+2) +
					fmt.Sprintf("filter add dev %s parent %d: protocol ip pref 1 u32 match ip tos 0xb8 0xfc flowid %d:3\n", eth, i+2, i+2)
			}
			s.TC = []run.TCBatch{{Name: "t.tc", Text: text}}
			rep := plugintest.SameInAndOut(t, s)
			if !rep.AccountingOK {
				t.Fatalf("the accounting failed")
			}
			var sent [3]uint64
			for _, d := range rep.Devices {
				root := map[string]string{"eth0": "2:", "eth1": "3:"}[d.Name]
				for _, q := range d.Qdisc {
					if band, ok := strings.CutPrefix(q.Parent, root); root != "" && ok {
						sent[band[0]-'1'] += q.SentPackets
					}
				}
			}
			for i, want := range tt.bands {
				if (sent[i] > 0) != want {
					t.Errorf("the slaves' band %d sent %d packets (bands %v), want some: %v", i+1, sent[i], sent, want)
				}
			}
		})
	}
}

// A flow filter deleted and added again while packets flow is a new
// filter with a fresh hashrnd (flow_change), drawn alike in and out of
// process: the plugin's copies count the filters made at its place.
func TestIsolateFlowFilterReAdded(t *testing.T) {
	at := func(us int, tc string) run.Action {
		return run.Action{Name: tc, At: sim.Time(us) * sim.Microsecond, Do: func(l *run.Live) error { return l.TC(tc) }}
	}
	const flow = "filter add dev eth0 parent 1: protocol all pref 2 handle 1 flow hash keys src,dst,proto-src divisor 128"
	s := small("pfifo", "ice")
	s.Queues = 1
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1000}
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: fq_codel limit 50 flows 64\n" + flow + "\n"}}
	s.Actions = []run.Action{at(1500, "filter del dev eth0 parent 1: protocol all pref 2"), at(1600, flow)}
	s.Duration = 4 * sim.Millisecond
	out := sameInAndOut(t, s)
	if !bytes.Contains(out, []byte(`"accounting_ok": true`)) || !bytes.Contains(out, []byte(`"QDISC_DROP"`)) {
		t.Fatalf("the accounting failed, or the flow filter dropped nothing:\n%s", out)
	}
}

// A change fq_pie refuses for its flows keeps the limit it applied
// first (fq_pie_change), in and out of process alike: the qdisc's own
// limit and the host's sch->limit both.
func TestIsolateFQPIEPartialChange(t *testing.T) {
	const change = "qdisc change dev eth0 root handle 1: fq_pie limit 7 flows 16"
	s := small("pfifo", "ice")
	s.Queues = 1
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1000}
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: fq_pie limit 500\n"}}
	s.Actions = []run.Action{{Name: change, At: 1500 * sim.Microsecond, Do: func(l *run.Live) error {
		if err := l.TC(change); err == nil || !strings.Contains(err.Error(), "Number of flows cannot be changed") {
			return fmt.Errorf("%q: %v, want the flows refusal", change, err)
		}
		return nil
	}}}
	s.Duration = 3 * sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	found := false
	for _, q := range rep.Qdisc {
		if q.Kind == "fq_pie" {
			found = true
			if !strings.HasPrefix(q.Options, "limit 7p ") {
				t.Errorf("fq_pie's options after the refused change: %q, want limit 7p", q.Options)
			}
		}
	}
	if !found {
		t.Errorf("no fq_pie in the report's qdiscs")
	}
}

// A flow filter's perturbation timer starts when tc adds it
// (flow_change), in and out of process alike: the filters call carries
// the tc command's time, and the hashrnd it draws at 1.3 s moves the
// flows to other classes the same way on both sides (a class past
// fq_codel's 64 flows drops: which flows drop is the hashrnd's).
func TestIsolateFlowFilterPerturb(t *testing.T) {
	const flow = "filter add dev eth0 parent 1: protocol all pref 2 handle 1 flow hash keys src,dst,proto-src divisor 128 perturb 1"
	s := small("pfifo", "ice")
	s.Queues = 1
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 1, Rate: 2000, Flows: 16, PacketSize: 1000}
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: fq_codel limit 50 flows 64\n"}}
	s.Actions = []run.Action{{Name: flow, At: 300 * sim.Millisecond, Do: func(l *run.Live) error { return l.TC(flow) }}}
	s.Duration = 1500 * sim.Millisecond
	out := sameInAndOut(t, s)
	if !bytes.Contains(out, []byte(`"QDISC_DROP"`)) {
		t.Fatalf("the flow filter dropped nothing:\n%s", out)
	}
}

// sfq's perturbation timer, armed by sfq_change at tc time in Init and
// re-armed by each expiry, gives the same report in and out of process:
// here sfq is a leaf of an htb class shaped below the offered rate, so
// it holds packets at every expiry (three), and each re-key rehashes
// them into other slots, which changes the order they leave in.
func TestIsolateSFQPerturbation(t *testing.T) {
	s := small("pfifo", "ice")
	s.Queues = 1
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 1, Rate: 2000, Flows: 16, PacketSize: 1000}
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: htb default 10\n" +
		"class add dev eth0 parent 1: classid 1:10 htb rate 8mbit\n" +
		"qdisc add dev eth0 parent 1:10 handle 10: sfq perturb 1 limit 40\n"}}
	s.Duration = 3500 * sim.Millisecond
	out := sameInAndOut(t, s)
	if !bytes.Contains(out, []byte(`"sfq"`)) || !bytes.Contains(out, []byte(`"QDISC_OVERLIMIT"`)) {
		t.Fatalf("the sfq leaf held nothing over its limit:\n%s", out)
	}
}

// A run that ends while a task waits inside an upcall's answer (a driver
// asking the host mid-call, the task parked at a sync point past the
// end) puts the answer's buffer back as it unwinds: the conn counts no
// call open and the process is handed on. The forwarding DUT at 21 Mpps
// ends with an RX CPU inside i40e's call.
func TestRunEndingInsideAnUpcall(t *testing.T) {
	var log syncBuffer
	s := small("cake besteffort", "i40e")
	s.Cores, s.Queues = 8, 4
	s.RateBps = 25e9
	s.Workload = workload.Spec{Kind: workload.Forward, PacketSize: 22, Flows: 16, Rate: 21e6, Arrival: "poisson"}
	s.Duration, s.Warmup = 3*sim.Millisecond, sim.Millisecond
	s.Plugins = plugin.Options{Isolate: true, Log: &log}
	if _, err := run.Run(s, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "open") {
		t.Errorf("the run handed back its plugin process with a call open:\n%s", log.String())
	}
}

// cake's ACK filter reads the TCP headers the host hands it with each
// enqueue: out of process they cross the boundary, and the run is the
// same byte for byte, with ACKs filtered.
func TestIsolateCakeAckFilter(t *testing.T) {
	s := small("cake bandwidth 1mbit ack-filter", "ice")
	s.Queues = 1
	s.RateBps = 100e6
	s.Workload = workload.Spec{Kind: workload.TCPStream, Down: 2, CC: tcp.CCCubic, Start: 100 * sim.Millisecond,
		Path: path.Config{RTT: 10 * sim.Millisecond, RateBps: 100e6, Limit: path.DefaultLimit}}
	s.Duration, s.Warmup = 600*sim.Millisecond, 300*sim.Millisecond
	out := sameInAndOut(t, s)
	if !bytes.Contains(out, []byte(`"CAKE_ACK_FILTER"`)) {
		t.Fatalf("no ACK filtered:\n%s", out)
	}
}

// graftsUnderTraffic runs four UDP senders on ice's four queues under
// `mq pfifo` with the tc commands at 2 ms and 4 ms, in and out of
// process alike, and checks the accounting and that noop_qdisc's drops
// are tx_dropped and QDISC_DROP.
func graftsUnderTraffic(t *testing.T, at2ms, at4ms string) report.Report {
	t.Helper()
	at := func(us int, tc string) run.Action {
		return run.Action{Name: tc, At: sim.Time(us) * sim.Microsecond, Do: func(l *run.Live) error { return l.TC(tc) }}
	}
	s := small("mq pfifo", "ice")
	s.Queues = 4
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 1000}
	s.Duration = 6 * sim.Millisecond
	s.Actions = []run.Action{at(2000, at2ms), at(4000, at4ms)}
	var rep report.Report
	if err := json.Unmarshal(sameInAndOut(t, s), &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Counters
	t.Logf("root grafts %d, mq grafts %d, deactivated %d ns, noop drops %d, drops %v", c["root_grafts"], c["mq_grafts"], c["graft_deactivated_ns"], c["noop_drops"], rep.Drops)
	if !rep.AccountingOK || c["graft_deactivated_ns"] == 0 {
		t.Fatalf("accounting %v (%s), counters %v", rep.AccountingOK, rep.AccountingError, c)
	}
	if len(rep.Links) == 0 || rep.Links[0].TxDropped != c["noop_drops"] || c["noop_drops"] > rep.Drops["QDISC_DROP"] {
		t.Errorf("noop drops %d, links %+v, drops %v: noop_qdisc's drops are tx_dropped and QDISC_DROP", c["noop_drops"], rep.Links, rep.Drops)
	}
	return rep
}

// An mq child grafted and deleted under traffic (mq_graft on a device
// that is up): each deactivates the whole device, as a root graft does;
// after the delete the queue's qdisc is noop_qdisc, which drops what its
// sender sends.
func TestMQChildGraftUnderTraffic(t *testing.T) {
	rep := graftsUnderTraffic(t, "qdisc replace dev eth0 parent 8001:2 handle 20: fq_codel", "qdisc del dev eth0 parent 8001:2")
	if c := rep.Counters; c["mq_grafts"] != 2 || c["root_grafts"] != 0 || c["noop_drops"] == 0 {
		t.Errorf("counters %v, want two mq grafts and the deleted child's drops", c)
	}
	if len(rep.Qdisc) != 5 || rep.Qdisc[0].Kind != "mq" || rep.Qdisc[2].Kind != "noop" || !rep.Qdisc[2].Invisible || rep.Qdisc[3].Invisible {
		t.Errorf("after the delete: %+v, want mq and its children, queue 1's noop_qdisc in no dump", rep.Qdisc)
	}
}

// mqprio grafted as the root under traffic, then a child under it
// (mqprio_graft is mq_graft): a root graft and an mq graft, each
// deactivating the device; in and out of process alike.
func TestMQPrioUnderTraffic(t *testing.T) {
	rep := graftsUnderTraffic(t, "qdisc replace dev eth0 root handle 1: mqprio num_tc 2 map 0 1 queues 2@0 2@2 hw 0", "qdisc replace dev eth0 parent 1:2 handle 20: fq_codel")
	if c := rep.Counters; c["root_grafts"] != 1 || c["mq_grafts"] != 1 {
		t.Errorf("counters %v, want a root graft and an mq graft", c)
	}
	if len(rep.Qdisc) != 5 || rep.Qdisc[0].Kind != "mqprio" || !strings.Contains(rep.Qdisc[0].Options, "queues:(0:1) (2:3)") || rep.Qdisc[2].Kind != "fq_codel" {
		t.Errorf("qdiscs %+v", rep.Qdisc)
	}
}

// A root replaced and deleted under traffic (qdisc_graft on a device
// that is up): each graft deactivates the device, whose queues drop what
// the senders hand them at noop_qdisc until the old root is reset, idle
// and replaced; the delete leaves the kernel's default mq of pfifo_fast.
func TestRootGraftUnderTraffic(t *testing.T) {
	rep := graftsUnderTraffic(t, "qdisc replace dev eth0 root handle 1: fq_codel", "qdisc del dev eth0 root")
	if c := rep.Counters; c["root_grafts"] != 2 || c["mq_grafts"] != 0 {
		t.Errorf("counters %v, want two root grafts", c)
	}
	if len(rep.Qdisc) != 5 || rep.Qdisc[0].Kind != "mq" || rep.Qdisc[0].Handle != "0:" || rep.Qdisc[1].Kind != "pfifo_fast" {
		t.Errorf("after the delete: %+v, want the kernel's default mq of pfifo_fast", rep.Qdisc)
	}
}

// dualpi2 in and out of process alike: ECT(1) senders and a u32 filter
// (dport 5003 to class 1:2, the L-queue without marks) beside classic
// ones, its PI2 timer, its step marks and its dequeue drops, and a
// change under traffic that lowers the limit (drops from the C-queue's
// head first).
func TestIsolateDualPI2(t *testing.T) {
	s := small("pfifo", "ice")
	s.Queues = 1
	s.RateBps = 1_000_000_000
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1000}
	s.Workload.Groups, _ = workload.ParseGroups("ecn=ect1,dport=5001 dport=5002 dport=5003 ecn=ect0")
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: dualpi2 target 1ms tupdate 500us\n" +
		"filter add dev eth0 parent 1: protocol ip pref 1 u32 match ip dport 5003 0xffff classid 1:2\n"}}
	s.Actions = []run.Action{{Name: "limit", At: 3 * sim.Millisecond, Do: func(l *run.Live) error {
		return l.TC("qdisc change dev eth0 root handle 1: dualpi2 limit 20")
	}}}
	s.Duration = 6 * sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	var q *report.Qdisc
	for i := range rep.Qdisc {
		if rep.Qdisc[i].Kind == "dualpi2" {
			q = &rep.Qdisc[i]
		}
	}
	if q == nil || !rep.AccountingOK {
		t.Fatalf("no dualpi2, or the accounting failed: %s", rep.AccountingError)
	}
	if n, _ := q.XStatInt("step_mark"); n == 0 || q.Dropped == 0 || !strings.HasPrefix(q.Options, "limit 20p ") {
		t.Errorf("step marks %d, dropped %d, options %q", n, q.Dropped, q.Options)
	}
}

// choke in and out of process alike: 8 UDP senders, half ECT(0) (its
// ecn marks), through a 1 Gbit/s NIC, random draws from the qdisc's
// stream matching flows, and a change under traffic to a smaller table
// (the packets past it dropped).
func TestIsolateChoke(t *testing.T) {
	s := small("pfifo", "ice")
	s.Profile = "6.18" // no llist defer bound: choke leaves sch->limit 0
	s.Queues = 1
	s.RateBps = 1_000_000_000
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1000}
	s.Workload.Groups, _ = workload.ParseGroups("ecn=ect0,dport=5001 dport=5002")
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: choke limit 400 min 20 max 200 bandwidth 1gbit ecn\n"}}
	s.Actions = []run.Action{{Name: "limit", At: 3 * sim.Millisecond, Do: func(l *run.Live) error {
		return l.TC("qdisc change dev eth0 root handle 1: choke limit 20 min 2 max 10 burst 3 bandwidth 1gbit ecn")
	}}}
	s.Duration = 6 * sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	var q *report.Qdisc
	for i := range rep.Qdisc {
		if rep.Qdisc[i].Kind == "choke" {
			q = &rep.Qdisc[i]
		}
	}
	if q == nil || !rep.AccountingOK {
		t.Fatalf("no choke, or the accounting failed: %s", rep.AccountingError)
	}
	matched, _ := q.XStatInt("matched")
	marked, _ := q.XStatInt("marked")
	t.Logf("matched %d, marked %d, dropped %d, drops %v", matched, marked, q.Dropped, rep.Drops)
	if matched == 0 || marked == 0 || rep.Drops["NOT_SPECIFIED"] == 0 || !strings.HasPrefix(q.Options, "limit 20p min 2p max 10p ecn ") {
		t.Errorf("matched %d, marked %d, drops %v, options %q", matched, marked, rep.Drops, q.Options)
	}
}

// hhf in and out of process alike: 8 UDP senders through a 1 Gbit/s
// NIC become heavy hitters (the perturbation key from the qdisc's
// stream) until hh_limit, over the limit the heavy hitters' heads are
// dropped, and a change under traffic lowers the limit (the WDRR's
// head freed).
func TestIsolateHHF(t *testing.T) {
	s := small("pfifo", "ice")
	s.Queues = 1
	s.RateBps = 1_000_000_000
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1000}
	s.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: hhf limit 200 admit_bytes 20000 hh_limit 6\n"}}
	s.Actions = []run.Action{{Name: "limit", At: 3 * sim.Millisecond, Do: func(l *run.Live) error {
		return l.TC("qdisc change dev eth0 root handle 1: hhf limit 20")
	}}}
	s.Duration = 6 * sim.Millisecond
	rep := plugintest.SameInAndOut(t, s)
	var q *report.Qdisc
	for i := range rep.Qdisc {
		if rep.Qdisc[i].Kind == "hhf" {
			q = &rep.Qdisc[i]
		}
	}
	if q == nil || !rep.AccountingOK {
		t.Fatalf("no hhf, or the accounting failed: %s", rep.AccountingError)
	}
	x := func(k string) int64 { v, _ := q.XStatInt(k); return v }
	t.Logf("tot_hh %d cur_hh %d hh_overlimit %d drop_overlimit %d, drops %v", x("tot_hh"), x("cur_hh"), x("hh_overlimit"), x("drop_overlimit"), rep.Drops)
	if x("cur_hh") != 6 || x("hh_overlimit") == 0 || x("drop_overlimit") == 0 || rep.Drops["NOT_SPECIFIED"] == 0 || !strings.HasPrefix(q.Options, "limit 20p ") {
		t.Errorf("options %q", q.Options)
	}
}
