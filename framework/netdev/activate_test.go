package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
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
// (tc_get_qdisc's checks) changes nothing.
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
		{"qdisc del dev eth0 parent 1:1", "Cannot delete qdisc with handle of zero"}, // htb's default pfifo
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

// tc qdisc del of a leaf (qdisc_graft of NULL under its class): htb's
// class gets a default pfifo, tbf's noop_qdisc (tbf_graft), which drops
// every packet it is handed, and netem's none, so netem sends what is
// due itself again; each old leaf's packets are purged and its parent
// counts them. A default leaf (handle 0:) cannot be deleted.
func TestLeafDelete(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1", "bql", "off"), 2, "test", 1, "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := tcLine(`qdisc replace dev eth0 root handle 1: htb default 1
class add dev eth0 parent 1: classid 1:1 htb rate 10gbit
class add dev eth0 parent 1: classid 1:2 htb rate 10gbit
qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1gbit burst 10k latency 10ms
qdisc add dev eth0 parent 10:1 handle 11: pfifo limit 100
qdisc add dev eth0 parent 1:2 handle 20: netem delay 1ms
qdisc add dev eth0 parent 20:1 handle 21: pfifo limit 100`); err != nil {
		t.Fatal(err)
	}
	root := h.dev.Root
	tbf, netem := root.LeafOf(qdisc.MakeClassID(1, 1)), root.LeafOf(qdisc.MakeClassID(1, 2))
	if err := tcLine("qdisc del dev eth0 parent 10:1 handle 11:"); err != nil {
		t.Fatal(err)
	}
	if l := tbf.LeafOf(qdisc.MakeClassID(0x10, 1)); l == nil || !l.noop {
		t.Fatalf("tbf's class holds %v after the delete, want noop_qdisc", l)
	}
	if err := tcLine("qdisc del dev eth0 parent 20:1"); err != nil {
		t.Fatal(err)
	}
	if l := netem.LeafOf(qdisc.MakeClassID(0x20, 1)); l != nil {
		t.Fatalf("netem's class holds %v after the delete, want nothing", l)
	}
	if err := tcLine("qdisc del dev eth0 parent 1:2 netem"); err != nil {
		t.Fatal(err)
	}
	if l := root.LeafOf(qdisc.MakeClassID(1, 2)); l == nil || l.Kind != "pfifo" || !l.invisible {
		t.Fatalf("htb's class holds %v after the delete, want a default pfifo", l)
	}
	for _, c := range []struct{ line, want string }{
		{"qdisc del dev eth0 parent 1:2", "Cannot delete qdisc with handle of zero"},
		{"qdisc del dev eth0 parent 1:9", "Specified class not found"},
		{"qdisc del dev eth0 parent 5:1", "Failed to find qdisc with specified classid"},
		{"qdisc del dev eth0 parent 1:1 handle 12:", "Invalid handle"},
		{"qdisc del dev eth0 parent 1:1 pfifo", "Invalid qdisc name"},
	} {
		if err := tcLine(c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
		}
	}
	// Packets to 1:1 meet tbf's noop child: dropped there, counted by
	// tbf, htb and the link.
	h.on(0, 10*sim.Microsecond, func(c *sim.CPU) {
		for i := 0; i < 5; i++ {
			s := h.skb(c, i)
			s.Priority = uint32(qdisc.MakeClassID(1, 1))
			h.n.DevQueueXmit(c, h.dev, s)
		}
	})
	h.run(sim.Millisecond)
	if st := tbf.Ops.Stats(); st.Drops != 5 || h.n.NoopDrops != 5 || h.dev.Link().TxDropped != 5 {
		t.Errorf("tbf drops %d, noop drops %d, tx_dropped %d: want the 5 packets sent to 1:1", st.Drops, h.n.NoopDrops, h.dev.Link().TxDropped)
	}
}
