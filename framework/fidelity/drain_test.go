package fidelity

import (
	"os"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
)

// drainProfile runs one variant of a shipped script (full size, for dur) with
// the qdisc owners' time split by phase.
func drainProfile(t *testing.T, name, variant string, dur sim.Time, params map[string]string) (*netdev.DrainProfile, *netdev.Device) {
	t.Helper()
	for _, spec := range scriptPlan(t, name, params).Specs {
		if spec.Name != variant {
			continue
		}
		spec.Duration = dur
		if set := os.Getenv("DRAIN_SET"); set != "" {
			spec.Set = append(spec.Set, strings.Fields(set)...)
		}
		prof := &netdev.DrainProfile{}
		var dev *netdev.Device
		if _, err := run.RunWith(spec, run.Options{Observe: func(n *netdev.Net, d *netdev.Device) { n.Prof, dev = prof, d }}); err != nil {
			t.Fatal(err)
		}
		return prof, dev
	}
	t.Fatalf("%s: no variant %q", name, variant)
	return nil, nil
}

// TestDrainBreakdown prints where the qdisc owners' time goes per packet
// in E1's llist run (DRAIN_PROFILE=1 go test -run DrainBreakdown -v;
// DRAIN_VARIANT names another variant, DRAIN_RING sets tx_ring, DRAIN_SET
// adds toggles or costs, "cost.skb_lines=1").
func TestDrainBreakdown(t *testing.T) {
	if os.Getenv("DRAIN_PROFILE") == "" {
		t.Skip("a measurement on a large host: DRAIN_PROFILE=1 go test ./framework/fidelity -run DrainBreakdown -v")
	}
	variant := "6.19-rc1 pinned"
	if v := os.Getenv("DRAIN_VARIANT"); v != "" {
		variant = v
	}
	var params map[string]string
	if r := os.Getenv("DRAIN_RING"); r != "" {
		params = map[string]string{"tx_ring": r}
	}
	p, dev := drainProfile(t, "e1", variant, 50*sim.Millisecond, params)
	t.Logf("E1 %s:\n%s", variant, p)
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
