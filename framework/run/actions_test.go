package run

import (
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
	return c.PFifo.Init(qdisc.Setup{TxQueueLen: 1000}, args)
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
			return l.SetRate(800_000)
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
			return l.StopSenders(nil)
		}},
		{Name: "start", At: 3 * sim.Millisecond, Do: func(l *Live) error {
			if st := l.Stats(); st.Running != 0 || st.Senders != 2 || st.Rate != 800_000 {
				t.Errorf("stats at 3ms: %+v", st)
			}
			if err := l.Phase("d"); err != nil {
				return err
			}
			return l.StartSenders([]int{0, 1})
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
	if !rep.AccountingOK {
		t.Error(rep.AccountingError)
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
		{Action{Name: "rate", At: sim.Millisecond, Do: func(l *Live) error { return l.SetRate(0) }}, nil, "rate at 1ms: workload: rate must be > 0"},
		{Action{Name: "stream", Do: func(l *Live) error { return l.SetRate(5) }}, func(s *Spec) {
			s.Workload.Kind = workload.UDPStream
		}, "only udp_rate has a rate"},
		{Action{Name: "range", Do: func(l *Live) error { return l.StopSenders([]int{7}) }}, nil, "sender 7 out of range (senders 0-1)"},
		{Action{Name: "fixed", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"limit", "3"}) }}, func(s *Spec) {
			s.Qdisc = "mq sfq"
		}, "change qdisc sfq 8001:1: Change operation not supported by specified qdisc"},
		{Action{Name: "bad", Do: func(l *Live) error { return l.ChangeQdisc(-1, []string{"limit", "x"}) }}, nil, "change qdisc test_changeable 8001:1: pfifo: illegal \"limit\": \"x\" is not a size"},
		{Action{Name: "q", Do: func(l *Live) error { return l.ChangeQdisc(5, []string{"limit", "3"}) }}, nil, "queue 5 out of range"},
		{Action{Name: "p", Do: func(l *Live) error { _ = l.Phase("a"); return l.Phase("a") }}, nil, "phase \"a\" marked twice"},
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
