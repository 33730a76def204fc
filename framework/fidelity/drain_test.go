package fidelity

import (
	"os"
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
	script, variants, dur := envOr("ACT_SCRIPT", "e1"), envOr("ACT_VARIANTS", "6.18,6.19-rc1"), 50*sim.Millisecond
	if v := os.Getenv("ACT_DURATION"); v != "" {
		d, err := units.GetTime64(v)
		if err != nil {
			t.Fatalf("ACT_DURATION: %v", err)
		}
		dur = sim.Time(d)
	}
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
		if _, err := run.RunWith(spec, run.Options{Observe: func(n *netdev.Net, d *netdev.Device) {
			n.Prof, dev = prof, d
			obs(n, d)
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
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
