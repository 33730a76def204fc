package fidelity

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
)

// TestDrainBreakdown prints where the qdisc owners' time goes per packet
// in E1's llist run (DRAIN_PROFILE=1 go test -run DrainBreakdown -v;
// DRAIN_SCRIPT names another shipped script, e2, DRAIN_VARIANT another
// variant, DRAIN_RING sets tx_ring, DRAIN_SET adds toggles or costs,
// "cost.skb_lines=1").
func TestDrainBreakdown(t *testing.T) {
	if os.Getenv("DRAIN_PROFILE") == "" {
		t.Skip("a measurement on a large host: DRAIN_PROFILE=1 go test ./framework/fidelity -run DrainBreakdown -v")
	}
	script, variant := envOr("DRAIN_SCRIPT", "e1"), envOr("DRAIN_VARIANT", "6.19-rc1 pinned")
	p, dev := runObserved(t, script, variant, 50*sim.Millisecond, func(*netdev.Net, *netdev.Device) {})
	t.Logf("%s %s:\n%s", script, variant, p)
	logQueues(t, dev, 4)
	if p.Pkts == 0 || p.Total() <= 0 {
		t.Fatalf("nothing profiled: %+v", p)
	}
}

// logQueues logs the first n queues' driver and BQL state.
func logQueues(t *testing.T, dev *netdev.Device, n int) {
	st := dev.Drv.Stats()
	var pk, db, irq uint64
	for _, q := range st {
		pk, db, irq = pk+q.Packets, db+q.Doorbells, irq+q.Irqs
	}
	t.Logf("all queues: %d packets, %d doorbells, %d irqs", pk, db, irq)
	for i := 0; i < n && i < len(st) && i < len(dev.Queues); i++ {
		q := dev.Queues[i]
		t.Logf("queue %d: %+v; bql limit %d; stops %d wakes %d requeues %d", i, st[i], q.DQL.Limit, q.Stops, q.Wakes, q.Requeues)
	}
}

// TestActBreakdown prints where every CPU's busy time goes per packet
// sent, by activity, in E1's runs (ACT_PROFILE=1 go test
// ./framework/fidelity -run ActBreakdown -v; ACT_VARIANTS lists the
// variants, comma-separated, default "6.18,6.19-rc1").
func TestActBreakdown(t *testing.T) {
	if os.Getenv("ACT_PROFILE") == "" {
		t.Skip("a measurement on a large host: ACT_PROFILE=1 go test ./framework/fidelity -run ActBreakdown -v")
	}
	script, variants, dur := envOr("ACT_SCRIPT", "e1"), envOr("ACT_VARIANTS", "6.18,6.19-rc1"), actDuration(t, 50*sim.Millisecond)
	for _, variant := range strings.Split(variants, ",") {
		var ap *sim.ActProfile
		var net *netdev.Net
		prof, dev := runObserved(t, script, variant, dur, func(n *netdev.Net, _ *netdev.Device) {
			ap, net = n.E.EnableActProfile(), n
		})
		var busy sim.Time
		for _, c := range net.E.CPUs {
			busy += c.Busy()
		}
		t.Logf("%s %s: %d packets sent, %d offered, %.1f ns busy a packet\n%s", script, variant, prof.Pkts, net.Offered,
			float64(busy)/float64(max(prof.Pkts, 1)), ap.Format(prof.Pkts))
		drains := prof.Calls[netdev.PhReverse]
		t.Logf("defer drains %d (%.1f offered skbs a drain), %.1f skbs a bulk dequeue, %d restarts (%.1f packets a restart), %d requeued",
			drains, float64(net.Offered)/float64(max(drains, 1)), float64(prof.BulkPkts)/float64(max(prof.Bulks, 1)),
			prof.Restarts, float64(prof.Pkts)/float64(max(prof.Restarts, 1)), prof.Requeued)
		for _, ls := range net.E.LockStats() {
			if ls.Contended > 0 {
				t.Logf("lock %-36s acquired %8d contended %8d (perf lock: %d, avg %.2f us) avg wait %6.2f us, %6.2f us held a take", ls.Name, ls.Acquired, ls.Contended, ls.Queued, float64(ls.QueuedAvgWait())/1e3,
					float64(ls.AvgWait())/1e3, float64(ls.HoldTotal)/1e3/float64(max(ls.Acquired, 1)))
			}
		}
		t.Logf("owners' phases:\n%s", prof)
		for i, q := range dev.Queues {
			if qd := q.Qdisc(); qd != nil && qd.SentPkts > 0 {
				t.Logf("queue %2d (%s %v): sent %7d, %.1f a restart, qlen %5d, defer max %4d, requeues %6d, bql limit %d", i, qd.Kind, qd.Args, qd.SentPkts,
					float64(qd.RestartPkts)/float64(max(qd.Restarts, 1)), qd.Qlen(), qd.DeferMax, qd.Requeues, q.DQL.Limit)
			}
		}
		var cs uint64
		for _, c := range net.E.CPUs {
			cs += c.SchedStat().Switches
		}
		t.Logf("context switches %d (%.0f/s over the run)", cs, float64(cs)/(50e-3))
		t.Logf("at the end: %d skbs live (charged to sockets), in flight by place %v, drops %v", net.Pool.Live(), net.InFlight(), net.Drops)
		if prof.Pkts == 0 {
			t.Fatal("nothing sent")
		}
	}
}

// TestTxActionBreakdown splits the net_tx_action root-lock takes on the
// perf lock CPUs (the script's lock_cpus) by the queue of the qdisc and
// the caller of the __netif_schedule that put it on the output_queue,
// with their mean wait, over the run after its warmup. It is how the
// session-26 reading of E1's after-llist tables was taken:
// TXA_PROFILE=1 ACT_SCRIPT=e1 ACT_VARIANTS="6.19-rc1 pinned" ACT_DURATION=70ms
// go test ./framework/fidelity -run TxActionBreakdown -v
func TestTxActionBreakdown(t *testing.T) {
	if os.Getenv("TXA_PROFILE") == "" {
		t.Skip("a measurement on a large host: TXA_PROFILE=1 go test ./framework/fidelity -run TxActionBreakdown -v")
	}
	script, variants, dur := envOr("ACT_SCRIPT", "e1"), envOr("ACT_VARIANTS", "6.19-rc1"), actDuration(t, 70*sim.Millisecond)
	type key struct {
		cpu, queue int
		from       netdev.SchedCaller
	}
	type agg struct {
		n          int
		wait, maxW sim.Time
	}
	for _, variant := range strings.Split(variants, ",") {
		m := map[key]*agg{}
		from := planWarmup(t, script, variant)
		runObserved(t, script, variant, dur, func(n *netdev.Net, d *netdev.Device) {
			queueOf := map[*netdev.Qdisc]int{}
			for i, q := range d.Queues {
				queueOf[q.Qdisc()] = i
			}
			n.OnTxAction = func(c *sim.CPU, q *netdev.Qdisc, caller netdev.SchedCaller, wait sim.Time) {
				if !c.LockRecorded() || c.Now() < from {
					return
				}
				qi, ok := queueOf[q]
				if !ok {
					qi = -1 // a root over several queues
				}
				k := key{c.ID, qi, caller}
				a := m[k]
				if a == nil {
					a = &agg{}
					m[k] = a
				}
				a.n++
				a.wait += wait
				a.maxW = max(a.maxW, wait)
			}
		})
		keys := make([]key, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.cpu != b.cpu {
				return a.cpu < b.cpu
			}
			if a.queue != b.queue {
				return a.queue < b.queue
			}
			return a.from < b.from
		})
		secs := float64(dur-from) / float64(sim.Second)
		t.Logf("%s %s: net_tx_action's root-lock takes on the perf lock CPUs, %v to %v", script, variant, from, dur)
		for _, k := range keys {
			a := m[k]
			t.Logf("cpu%-3d queue %2d %-9v %7.0f/s  wait avg %7.2f us, max %7.2f us", k.cpu, k.queue, k.from,
				float64(a.n)/secs, float64(a.wait)/float64(a.n)/1e3, float64(a.maxW)/1e3)
		}
	}
}

// runObserved runs one variant of a shipped script (full size, for dur)
// with the drain profile on and obs called on the net at its start.
// DRAIN_RING sets tx_ring, DRAIN_DRIVER_OPTS the driver's options
// (ethtool words, "tx 2048"), DRAIN_SET adds toggles or costs and ACT_CHILD
// replaces an mq root's children (tc words, a lab what-if: "fq
// flow_limit 1000").
func runObserved(t *testing.T, name, variant string, dur sim.Time, obs func(*netdev.Net, *netdev.Device)) (*netdev.DrainProfile, *netdev.Device) {
	t.Helper()
	var params map[string]string
	if r := os.Getenv("DRAIN_RING"); r != "" {
		params = map[string]string{"tx_ring": r}
	}
	for _, spec := range scriptPlan(t, name, params).Specs {
		if spec.Name != variant {
			continue
		}
		spec.Duration = dur
		// The whole run, as the drain profile counts it: the run's
		// activity profile restarts at the warmup's end.
		spec.Warmup = 0
		if opts := os.Getenv("DRAIN_DRIVER_OPTS"); opts != "" {
			spec.DriverArgs = strings.Fields(opts)
		}
		if set := os.Getenv("DRAIN_SET"); set != "" {
			spec.Set = append(spec.Set, strings.Fields(set)...)
		}
		if child := os.Getenv("ACT_CHILD"); child != "" {
			if !strings.HasPrefix(spec.Qdisc, "mq ") {
				t.Fatalf("ACT_CHILD: %s's root is %q, not mq", variant, spec.Qdisc)
			}
			spec.Qdisc = "mq " + child
		}
		prof := &netdev.DrainProfile{}
		var dev *netdev.Device
		if _, err := run.RunWith(spec, run.Options{Observe: func(n *netdev.Net, d *netdev.Device) error {
			n.Prof, dev = prof, d
			obs(n, d)
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		return prof, dev
	}
	t.Fatalf("%s: no variant %q", name, variant)
	return nil, nil
}

// envOr is the environment variable name, or def when it is unset or
// empty: the measurement tests' knobs.
// planWarmup is the shipped script's warmup for variant (runObserved
// runs without it, so that the drain profile sees the whole run).
func planWarmup(t *testing.T, script, variant string) sim.Time {
	t.Helper()
	for _, spec := range scriptPlan(t, script, nil).Specs {
		if spec.Name == variant {
			return spec.Warmup
		}
	}
	t.Fatalf("%s has no variant %q", script, variant)
	return 0
}

// actDuration is ACT_DURATION (a tc time word), else def.
func actDuration(t *testing.T, def sim.Time) sim.Time {
	v := os.Getenv("ACT_DURATION")
	if v == "" {
		return def
	}
	d, err := units.GetTime64(v)
	if err != nil {
		t.Fatalf("ACT_DURATION: %v", err)
	}
	return sim.Time(d)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
