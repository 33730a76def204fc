package run

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// changeable is pfifo that takes `tc qdisc change limit N` at run time.
type changeable struct {
	qdisc.PFifo
	changes int
}

func (c *changeable) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	c.changes++
	return c.PFifo.Init(nil, qdisc.Setup{TxQueueLen: 1000}, args)
}

func init() {
	qdisc.Register("test_changeable", "pfifo with Change (actions_test.go)", func() qdisc.Qdisc { return &changeable{} })
}

func actionSpec() Spec {
	return Spec{Profile: "6.19-rc1", Sockets: 1, Cores: 4, Threads: 1, Driver: "ice", Queues: 2, RateBps: 100_000_000_000,
		Qdisc:    "mq test_changeable",
		Workload: workload.Spec{Kind: workload.UDPRate, Senders: 2, PacketSize: 64, Flows: 4, Rate: 200_000},
		Duration: 4 * sim.Millisecond, Interval: sim.Millisecond, Seed: 1}
}

func TestActions(t *testing.T) {
	s := actionSpec()
	var seen []sim.Time
	s.Actions = []Action{
		{Name: "phase a", At: 0, Do: func(l *Live) error { return l.Phase("a") }},
		{Name: "faster", At: sim.Millisecond, Do: func(l *Live) error {
			if err := l.Phase("b"); err != nil {
				return err
			}
			return l.SetRate(0, 800_000)
		}},
		{Name: "stop", At: 2 * sim.Millisecond, Do: func(l *Live) error {
			if err := l.ChangeQdisc(-1, []string{"limit", "10"}); err != nil {
				return err
			}
			if err := l.ChangeQdisc(1, []string{"limit", "20"}); err != nil {
				return err
			}
			if err := l.Phase("c"); err != nil {
				return err
			}
			return l.StopSenders(0, nil)
		}},
		{Name: "start", At: 3 * sim.Millisecond, Do: func(l *Live) error {
			if st := l.Stats(); st.Running != 0 || st.Senders != 2 || st.Rate != 800_000 {
				t.Errorf("stats at 3ms: %+v", st)
			}
			if err := l.Phase("d"); err != nil {
				return err
			}
			return l.StartSenders(0, []int{0, 1})
		}},
		{Name: "tick", At: 500 * sim.Microsecond, Every: sim.Millisecond, Until: 3 * sim.Millisecond, Do: func(l *Live) error {
			seen = append(seen, l.Now())
			if _, ok := l.Store()["x"]; !ok {
				l.Store()["x"] = 1
			}
			return nil
		}},
	}
	rep, err := Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sim.Time{500_000, 1_500_000, 2_500_000}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("every: ran at %v, want %v", seen, want)
	}
	c := rep.Counters
	for name, want := range map[string]float64{"a": 200, "b": 800, "d": 800} {
		got := float64(c["phase."+name+".offered_packets"])
		if got < 0.9*want || got > 1.1*want {
			t.Errorf("phase %s offered %v, want about %v", name, got, want)
		}
	}
	if n := c["phase.c.offered_packets"]; n > 2 {
		t.Errorf("stopped senders offered %d", n)
	}
	if rep.Qdisc[1].Options != "limit 10p" || rep.Qdisc[2].Options != "limit 20p" {
		t.Errorf("qdisc options after change: %q, %q", rep.Qdisc[1].Options, rep.Qdisc[2].Options)
	}
}

// TestActionsNoneIsIdentical: actions that do nothing must not change
// the result (splitting engine steps at their times is invisible).
func TestActionsNoopKeepsResult(t *testing.T) {
	a := actionSpec()
	repA, err := Run(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := actionSpec()
	b.Actions = []Action{{Name: "noop", At: 100 * sim.Microsecond, Every: 700 * sim.Microsecond, Do: func(*Live) error { return nil }}}
	repB, err := Run(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if repA.TxPackets != repB.TxPackets || repA.OfferedPackets != repB.OfferedPackets {
		t.Errorf("no-op actions changed the run: tx %d vs %d, offered %d vs %d", repA.TxPackets, repB.TxPackets, repA.OfferedPackets, repB.OfferedPackets)
	}
}

func TestActionErrors(t *testing.T) {
	for _, tt := range []struct {
		act  Action
		spec func(*Spec)
		want string
	}{
		{Action{Name: "x"}, nil, "x: nothing to do"},
		{Action{Name: "neg", At: -1, Do: func(*Live) error { return nil }}, nil, "neg: time -1ns is negative"},
		{Action{Name: "rate", At: sim.Millisecond, Do: func(l *Live) error { return l.SetRate(0, 0) }}, nil, "rate at 1ms: workload: rate must be > 0"},
		{Action{Name: "stream", Do: func(l *Live) error { return l.SetRate(0, 5) }}, func(s *Spec) {
			s.Workload.Kind = workload.UDPStream
		}, "only udp_rate has a rate"},
		{Action{Name: "range", Do: func(l *Live) error { return l.StopSenders(0, []int{7}) }}, nil, "sender 7 out of range (senders 0-1)"},
		{Action{Name: "fixed", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"limit", "3"}) }}, func(s *Spec) {
			s.Qdisc = "mq sfq"
		}, "change qdisc sfq 0: parent 8001:1: Change operation not supported by specified qdisc"},
		{Action{Name: "bad", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"limit", "x"}) }}, nil, "change qdisc test_changeable 0: parent 8001:1: pfifo: Illegal value for \"limit\": \"x\" is not a size"},
		{Action{Name: "q", Do: func(l *Live) error { return l.ChangeQdisc(5, []string{"limit", "3"}) }}, nil, "queue 5 out of range"},
		{Action{Name: "p", Do: func(l *Live) error { _ = l.Phase("a"); return l.Phase("a") }}, nil, "phase \"a\" marked twice"},
		// tc's words for `tc qdisc change`.
		{Action{Name: "kind", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"fq", "limit", "3"}) }}, nil,
			`invalid qdisc name "fq" (it is test_changeable)`},
		{Action{Name: "kind2", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"parent", "8001:1", "pfifo", "limit", "3"}) }}, nil,
			`invalid qdisc name "pfifo" (it is test_changeable)`},
		{Action{Name: "both", Do: func(l *Live) error { return l.ChangeQdisc(1, []string{"parent", "8001:1", "limit", "3"}) }}, nil,
			"give queue or the qdisc's handle/parent, not both"},
		{Action{Name: "class", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"parent", "8001:3", "limit", "3"}) }}, nil,
			"parent 8001:3: specified class not found (mq has classes 8001:1 to 8001:2)"},
		{Action{Name: "major", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"parent", "1:1", "limit", "3"}) }}, nil,
			"parent 1:1: failed to find specified qdisc"},
		{Action{Name: "mqroot", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"root", "mq"}) }}, nil,
			"mq 8001: root: Change operation not supported by specified qdisc"},
		{Action{Name: "handle", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"handle", "2:", "limit", "3"}) }}, nil,
			"specified qdisc not found: no qdisc has handle 2:"},
		{Action{Name: "dev", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"dev", "eth1", "root", "limit", "3"}) }}, nil,
			`cannot find device "eth1"`},
		{Action{Name: "devonly", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"dev", "eth0", "limit", "3"}) }}, nil,
			"handle cannot be zero"},
		{Action{Name: "nokind", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"parent", "8001:1", "limit", "3"}) }}, nil,
			`unknown qdisc "limit", hence its options are unparsable (after root, handle or parent comes the kind: "parent 8001:1 test_changeable limit ...")`},
		{Action{Name: "est", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"root", "estimator", "1s", "8s"}) }}, nil,
			`"estimator" is not supported`},
		{Action{Name: "cakemq", Do: func(l *Live) error {
			return l.ChangeQdisc(-1, []string{"parent", "8001:1", "cake", "bandwidth", "10mbit"})
		}},
			func(s *Spec) { s.Qdisc = "cake_mq" }, "can't reconfigure cake_mq sub-qdiscs"},
	} {
		s := actionSpec()
		if tt.spec != nil {
			tt.spec(&s)
		}
		s.Actions = []Action{tt.act}
		rep, err := Run(s, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.act.Name, err, tt.want)
		}
		if rep == nil || rep.Error == "" {
			t.Errorf("%s: no partial report with the error", tt.act.Name)
		}
	}
}

// TestChangeQdiscTCWords: `tc qdisc change` words reach the qdisc they
// name, the same one the queue form reaches.
func TestChangeQdiscTCWords(t *testing.T) {
	for _, tt := range []struct {
		qdisc string
		words []string
		want  []string // options of the report's qdisc rows after the change
	}{
		{"mq test_changeable", []string{"parent", "8001:2", "test_changeable", "limit", "20"}, []string{"", "limit 1000p", "limit 20p"}},
		{"handle 1: root mq test_changeable", []string{"dev", "eth0", "parent", "1:1", "test_changeable", "limit", "5"}, []string{"", "limit 5p", "limit 1000p"}},
		{"mq test_changeable", []string{"test_changeable", "limit", "9"}, []string{"", "limit 9p", "limit 9p"}},
		{"root handle 7: test_changeable", []string{"handle", "7:", "root", "test_changeable", "limit", "3"}, []string{"limit 3p"}},
		{"test_changeable", []string{"handle", "8001:", "test_changeable", "limit", "4"}, []string{"limit 4p"}},
		{"test_changeable", []string{"root", "test_changeable"}, []string{"limit 1000p"}},
	} {
		s := actionSpec()
		s.Qdisc = tt.qdisc
		s.Actions = []Action{{Name: "change", At: sim.Millisecond, Do: func(l *Live) error { return l.ChangeQdisc(-1, tt.words) }}}
		rep, err := Run(s, nil)
		if err != nil {
			t.Errorf("%s, change %q: %v", tt.qdisc, tt.words, err)
			continue
		}
		var got []string
		for _, q := range rep.Qdisc {
			got = append(got, q.Options)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s, change %q: options %q, want %q", tt.qdisc, tt.words, got, tt.want)
		}
	}
}

// A timed `tc qdisc change` on every built-in, mid-run with packets held
// (senders faster than the link): the change takes effect (the dump shows it),
// the qdisc trims to a lowered limit or purges dropped tins with the
// kernel's drop reason, the kernel's refusals end the run, and the
// accounting holds at the end.
func TestChangeEveryBuiltin(t *testing.T) {
	cases := []struct {
		qdisc, change string
		dump, reason  string // reason: a drop the change itself makes
		refused       string
	}{
		{"mq pfifo limit 500", "limit 5", "limit 5p", "", ""},
		{"mq fq_codel limit 2000", "limit 10 target 2ms", "limit 10p flows 1024 quantum 1514 target 2ms", "NOT_SPECIFIED", ""},
		{"fq limit 5000", "limit 20 buckets 64", "limit 20p flow_limit 100p buckets 64", "NOT_SPECIFIED", ""},
		{"cake diffserv4", "besteffort bandwidth 500mbit", "bandwidth 500Mbit besteffort", "QUEUE_PURGE", ""},
		{"cake_mq diffserv4", "bandwidth 500mbit", "bandwidth 500Mbit diffserv4", "", ""},
		{"mq codel limit 2000", "limit 10 target 2ms", "limit 10p target 2ms interval 100ms", "NOT_SPECIFIED", ""},
		{"mq bfifo", "limit 3000", "limit 3000b", "", ""},
		{"mq pfifo_head_drop limit 500", "limit 5", "limit 5p", "", ""},
		{"mq sfq", "limit 10", "", "", "Change operation not supported by specified qdisc"},
		{"pfifo_fast", "limit 10", "", "", "does not support option parsing"},
	}
	for _, c := range cases {
		t.Run(c.qdisc, func(t *testing.T) {
			s := small()
			s.Qdisc = c.qdisc
			// A 1 Gbit/s link under 8 closed-loop senders of CS1 (the
			// bulk tin of diffserv4), each with up to its sndbuf queued,
			// keeps the queues full (an open-loop rate may not exceed
			// what the link carries).
			s.RateBps = 1e9
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 64, DSCP: 8}
			s.Duration, s.Warmup = 3*sim.Millisecond, sim.Millisecond
			var held, after int64
			s.Actions = []Action{{Name: "change", At: 2 * sim.Millisecond, Do: func(l *Live) error {
				held = l.Stats().BacklogPackets
				if err := l.ChangeQdisc(-1, strings.Fields(c.change)); err != nil {
					return err
				}
				after = l.Stats().BacklogPackets
				return nil
			}}}
			rep, err := Run(s, nil)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("error %v, want %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rep.AccountingOK || held == 0 {
				t.Fatalf("accounting ok %v, %d packets held at the change", rep.AccountingOK, held)
			}
			row := rep.Qdisc[len(rep.Qdisc)-1]
			if !strings.HasPrefix(row.Options, c.dump) {
				t.Errorf("options %q, want them to start %q", row.Options, c.dump)
			}
			// cake_mq's root line shows the shared configuration.
			if strings.HasPrefix(c.qdisc, "cake_mq") && rep.Qdisc[0].Options != row.Options {
				t.Errorf("cake_mq root options %q, child %q", rep.Qdisc[0].Options, row.Options)
			}
			if c.reason != "" && (rep.Drops[c.reason] == 0 || after >= held) {
				t.Errorf("%d held before, %d after, %d %s drops (all: %v)", held, after, rep.Drops[c.reason], c.reason, rep.Drops)
			}
		})
	}
}

// Actions run in (time, declaration) order, whatever their mix of once
// and every, froms and untils, and however many share a time: the order
// the runner gives is the order of every occurrence sorted by time, then
// by index (the determinism of a script's actions rests on it).
func TestActionOrder(t *testing.T) {
	us := sim.Microsecond
	for _, tt := range []struct {
		name string
		acts []Action // Do is filled in
	}{
		{"same time", []Action{{At: 100 * us}, {At: 100 * us}, {At: 0}, {At: 100 * us}, {At: 0}}},
		{"every and at", []Action{
			{At: 100 * us, Every: 100 * us},
			{At: 200 * us},
			{At: 100 * us, Every: 50 * us, Until: 600 * us},
			{At: 200 * us},
			{At: 0},
			{At: 100 * us, Every: 100 * us},
			{At: 10 * us, Every: 30 * us},
		}},
		{"until and the end", []Action{{At: 0, Every: 300 * us, Until: 900 * us}, {At: 999 * us}, {At: 0, Every: 333 * us}}},
		{"many", func() []Action {
			var out []Action
			for i := 0; i < 300; i++ {
				a := Action{At: sim.Time(i*7919%97) * us}
				if i%3 == 0 {
					a.Every = sim.Time(1+i%11) * 10 * us
				}
				if i%5 == 0 {
					a.Until = a.At + 200*us
				}
				out = append(out, a)
			}
			return out
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := actionSpec()
			s.Duration = sim.Millisecond
			type run struct {
				at sim.Time
				i  int
			}
			var got, want []run
			for i, a := range tt.acts {
				a.Name = fmt.Sprintf("a%d", i)
				a.Do = func(l *Live) error { got = append(got, run{l.Now(), i}); return nil }
				s.Actions = append(s.Actions, a)
				end := s.Duration
				if a.Until > 0 && a.Until < end {
					end = a.Until
				}
				for at := a.At; at < end; at += a.Every {
					want = append(want, run{at, i})
					if a.Every == 0 {
						break
					}
				}
			}
			sort.Slice(want, func(x, y int) bool {
				return want[x].at < want[y].at || want[x].at == want[y].at && want[x].i < want[y].i
			})
			mustRun(t, s)
			if !slices.Equal(got, want) {
				t.Errorf("ran\n  %v\nwant\n  %v", got, want)
			}
		})
	}
}

// Finding the next action costs O(log n): 200,000 actions at as many
// times run in a second or so (a scan of every action for each took
// minutes, growing as the square of their count).
func TestManyActionsQuickly(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 actions")
	}
	s := actionSpec()
	s.Duration = sim.Millisecond
	n, ran := 200_000, 0
	do := func(*Live) error { ran++; return nil }
	for i := 0; i < n; i++ {
		s.Actions = append(s.Actions, Action{Name: "x", At: sim.Time(i), Do: do})
	}
	// No clock here (speed belongs to benchmarks): a scan per firing
	// would take minutes and meet the test binary's timeout.
	mustRun(t, s)
	if ran != n {
		t.Errorf("%d of %d actions ran", ran, n)
	}
}

func TestActionRuns(t *testing.T) {
	ms := sim.Millisecond
	for _, tt := range []struct {
		a    Action
		want int64
	}{
		{Action{At: 0}, 1},
		{Action{At: 4 * ms}, 0}, // at the end: never
		{Action{At: ms, Every: ms}, 3},
		{Action{At: ms, Every: 3 * ms}, 1},
		{Action{At: 0, Every: ms, Until: 2 * ms}, 2},
		{Action{At: 0, Every: ms, Until: 9 * ms}, 4}, // until past the end
		{Action{At: 1, Every: 1}, 4*int64(ms) - 1},
	} {
		if got := tt.a.Runs(4 * ms); got != tt.want {
			t.Errorf("%+v: %d runs, want %d", tt.a, got, tt.want)
		}
	}
}

// Actions are refused before the run starts when one would never run
// (past the end) or when their runs add up to more than MaxActionRuns.
func TestActionBounds(t *testing.T) {
	do := func(*Live) error { return nil }
	every := func(name string, iv sim.Time) Action { return Action{Name: name, At: iv, Every: iv, Do: do} }
	for _, tt := range []struct {
		name string
		acts []Action
		want string
	}{
		{"at the end", []Action{{Name: "late", At: 4 * sim.Millisecond, Do: do}},
			"late: its time 4ms is not before the end of the run (duration 4ms): it would never run"},
		{"every from past the end", []Action{{Name: "tick", At: 5 * sim.Millisecond, Every: sim.Millisecond, Do: do}},
			"tick: its first run at 5ms is not before the end of the run (duration 4ms)"},
		{"one too often", []Action{every("fast", 1)}, "fast: every 1ns runs 3999999 times in 4ms, at most 1000000: use an interval of 4ns or more"},
		{"all too often", []Action{every("a", 8), every("b", 8), every("c", sim.Millisecond)},
			"3 timed actions would run 1000001 times over the run's 4ms, at most 1000000 in all: a (499999), b (499999), c (3); use longer intervals or fewer actions"},
		{"in all, named", func() []Action {
			var out []Action
			for i := 0; i < 200; i++ {
				out = append(out, every(fmt.Sprint(i), 700))
			}
			return out
		}(), "200 timed actions would run 1142800 times over the run's 4ms, at most 1000000 in all: 0 (5714), 1 (5714), 2 (5714), and 197 more"},
		{"within", []Action{every("a", 16), every("b", 16), {Name: "c", At: 0, Do: do}}, ""},
	} {
		s := actionSpec()
		s.Actions = tt.acts
		err := s.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A queue that grows without end (pfifo with a limit in the millions on
// a link that drains 10 packets a millisecond, under senders with 16 MB
// sndbufs) stops the run at the bound on live skbs: one line with the
// count, the time and the qdisc holding them; the partial report's
// accounting balances. Under the bound the same host runs to its end.
func TestLiveSKBsBound(t *testing.T) {
	for _, tt := range []struct {
		limit int
		want  string
	}{
		{5000, "5001 skbs in flight at "},
		{1_000_000, ""},
	} {
		s := backlogSpec("pfifo limit 1000000", 1, true)
		rep, err := RunWith(s, Options{MaxLiveSKBs: tt.limit})
		if tt.want == "" {
			if err != nil {
				t.Errorf("limit %d: %v", tt.limit, err)
			}
			continue
		}
		var lse *LiveSKBsError
		if !errors.As(err, &lse) || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("limit %d: %v, want one line starting %q", tt.limit, err, tt.want)
		}
		for _, w := range []string{"of simulated time, more than the 5000 a run may hold: qdisc pfifo 8001: root holds ", "lower the limit"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: want %q", err, w)
			}
		}
		if lse.At <= 0 || lse.At >= s.Duration || rep.DurationNs != int64(s.Duration) {
			t.Errorf("stopped at %v of %v", lse.At, s.Duration)
		}
		if !rep.AccountingOK || rep.Error == "" || rep.InFlightPackets < 5000 {
			t.Errorf("partial report: accounting %v %q, error %q, %d in flight", rep.AccountingOK, rep.AccountingError, rep.Error, rep.InFlightPackets)
		}
	}
}
