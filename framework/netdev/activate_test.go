package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
)

// A root graft on a device that is up: the queues point at noop_qdisc
// at once, so a packet sent meanwhile is dropped there (tx_dropped); the
// old root is reset after the grace period (every CPU idle here: at
// once) and the new one is reached only once the old is neither running
// nor scheduled, checked a jiffy at a time (some_qdisc_is_busy). Held
// scheduled here until 2.5 ms, the old root lets the graft finish at the
// first check after it, 3 ms after the command.
func TestRootGraftWaitsForTheOldRoot(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1", "bql", "off"), 2, "test", 1, "pfifo")
	old := h.dev.Root
	h.n.Up()
	const at = 10 * sim.Microsecond
	h.e.At(at, func() {
		old.state |= stateSched // as if in a softnet output queue
		if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 1: bfifo limit 100000"); err != nil {
			t.Error(err)
		}
		if h.dev.Root == old || h.dev.Queues[0].qdisc != h.dev.noopQ || old.state&stateDeactivated == 0 {
			t.Errorf("after the command: root %s, queue's qdisc %v, old deactivated %v", h.dev.Root.Name(), h.dev.Queues[0].qdisc, old.state&stateDeactivated != 0)
		}
	})
	h.e.At(2500*sim.Microsecond, func() { old.state &^= stateSched })
	var sentAt1ms *Qdisc
	h.on(1, sim.Millisecond, func(c *sim.CPU) {
		sentAt1ms = h.dev.Queues[0].qdisc
		h.n.DevQueueXmit(c, h.dev, h.skb(c, 0))
	})
	h.run(5 * sim.Millisecond)
	if h.dev.swap != nil || h.dev.Queues[0].qdisc != h.dev.Root || h.dev.Root.Kind != "bfifo" || !old.dead {
		t.Fatalf("the graft did not finish: swap %v, queue's qdisc %v, old dead %v", h.dev.swap != nil, h.dev.Queues[0].qdisc, old.dead)
	}
	if got, want := sim.Time(h.n.DeactivatedNs), 3*sim.Millisecond; got != want {
		t.Errorf("deactivated for %v, want %v (checks at 10us, 1.01 ms, 2.01 ms: busy; 3.01 ms: idle)", got, want)
	}
	if sentAt1ms != h.dev.noopQ || h.n.NoopDrops != 1 || h.dev.Link().TxDropped != 1 {
		t.Errorf("the packet sent at 1 ms met %v: noop drops %d, tx_dropped %d", sentAt1ms, h.n.NoopDrops, h.dev.Link().TxDropped)
	}
	for _, q := range h.n.Qdiscs() {
		if q == old {
			t.Error("the old root is still the host's")
		}
	}
}

// tc qdisc del: the root's delete leaves the kernel's default qdiscs
// (at once on a device that is down); a delete the kernel refuses
// (tc_get_qdisc's checks) changes nothing; a leaf's is not modelled.
func TestRootDelete(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 2, "mq", "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := tcLine("qdisc replace dev eth0 root handle 1: htb default 1\nclass add dev eth0 parent 1: classid 1:1 htb rate 1gbit"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ line, want string }{
		{"qdisc del dev eth0 handle 1:", "Classid cannot be zero"},
		{"qdisc del dev eth0 handle 7:", "Failed to find qdisc with specified handle"},
		{"qdisc del dev eth0 root handle 7:", "Invalid handle"},
		{"qdisc del dev eth0 root fq", "Invalid qdisc name"},
		{"qdisc del dev eth0 parent 1:1", "not modelled"},
	} {
		if err := tcLine(c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
		}
		if h.dev.RootKind != "htb" {
			t.Fatalf("%q changed the root to %s", c.line, h.dev.RootKind)
		}
	}
	if err := tcLine("qdisc del dev eth0 root handle 1: htb"); err != nil {
		t.Fatal(err)
	}
	if h.dev.RootKind != "mq" || h.dev.RootHandle != tc.Unspec || len(h.dev.Children) != 2 || h.dev.Children[0].Kind != "pfifo_fast" {
		t.Fatalf("after the delete: root %s %s, children %d", h.dev.RootKind, h.dev.RootHandle.QdiscString(), len(h.dev.Children))
	}
	if err := tcLine("qdisc del dev eth0 root"); err == nil || !strings.Contains(err.Error(), "Cannot delete qdisc with handle of zero") {
		t.Errorf("deleting the default root: %v", err)
	}
	// An add after the delete needs no replace: the root is the default.
	if err := tcLine("qdisc add dev eth0 root handle 2: fq_codel"); err != nil || h.dev.RootKind != "fq_codel" {
		t.Errorf("add after the delete: %v, root %s", err, h.dev.RootKind)
	}
}

// A live root replace the new root's options refuse changes nothing: no
// deactivation, the queues keep their qdiscs.
func TestFailedLiveGraftKeepsTheQueues(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 2, "mq", "pfifo")
	h.n.Up()
	before := []*Qdisc{h.dev.Queues[0].qdisc, h.dev.Queues[1].qdisc}
	if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 1: pfifo limit x"); err == nil {
		t.Fatal("no error")
	}
	if h.dev.swap != nil || h.dev.Queues[0].qdisc != before[0] || h.dev.Queues[1].qdisc != before[1] || before[0].state&stateDeactivated != 0 {
		t.Errorf("a refused graft deactivated the device: swap %v, queues %v %v", h.dev.swap != nil, h.dev.Queues[0].qdisc, h.dev.Queues[1].qdisc)
	}
}
