package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
)

// toQueue sends one packet that skb_tx_hash puts on queue i of 4.
func (h *harness) toQueue(c *sim.CPU, i int) {
	s := h.skb(c, i)
	s.Hash = uint32(i) << 30 // reciprocal_scale(hash, 4) = i
	h.n.DevQueueXmit(c, h.dev, s)
}

// tc qdisc add|replace|del under an mq root's classes (mq_graft, on a
// device that is down: at once): the queue's qdisc is the new one,
// tc_modify_qdisc's and tc_get_qdisc's refusals hold, and a deleted
// child leaves noop_qdisc on its queue, which drops what is sent there.
func TestMQChildGraft(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 4, "mq", "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := tcLine("qdisc replace dev eth0 root handle 1: mq\nqdisc add dev eth0 parent 1:2 handle 20: fq_codel limit 50"); err != nil {
		t.Fatal(err)
	}
	if q := h.dev.Queues[1].qdisc; q.Kind != "fq_codel" || q.Handle != tc.MakeHandle(0x20, 0) || h.dev.Children[1] != q || q.Parent.String() != "1:2" {
		t.Fatalf("queue 1's qdisc %s parent %s, want fq_codel 20: under 1:2", q.Name(), q.Parent)
	}
	for _, c := range []struct{ line, want string }{
		{"qdisc add dev eth0 parent 1:5 fq", "Specified class not found"},
		{"qdisc add dev eth0 parent 1:2 fq", "Exclusivity flag on, cannot modify"},
		{"qdisc add dev eth0 parent 1:2 handle 21: fq", "NLM_F_REPLACE needed to override"},
		{"qdisc replace dev eth0 parent 1:3 handle 20: fq", "Exclusivity flag on, cannot override"},
		{"qdisc del dev eth0 parent 1:1", "Cannot delete qdisc with handle of zero"},
		{"qdisc del dev eth0 parent 1:2 handle 21:", "Invalid handle"},
		{"qdisc del dev eth0 parent 1:2 fq", "Invalid qdisc name"},
		{"qdisc add dev eth0 parent 1:3 fq_codel limmit 5", `"limmit"`},
	} {
		if err := tcLine(c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
		}
	}
	// The mq root has no change operation: tc's replace of it fails
	// (txlab's "mq CHILD" words build it anew).
	if err := tcLine("qdisc replace dev eth0 root handle 1: mq"); err == nil || !strings.Contains(err.Error(), "Change operation not supported") {
		t.Errorf("a replace of the mq root: %v", err)
	}
	if q := h.dev.Queues[1].qdisc; q.Kind != "fq_codel" || h.dev.Queues[2].qdisc.Kind != "pfifo_fast" {
		t.Fatalf("a refused command changed the tree: %s, %s", q.Name(), h.dev.Queues[2].qdisc.Name())
	}
	// A replace without a handle makes a new qdisc in place of the
	// shown one (tc_modify_qdisc's create_n_graft), an automatic handle.
	if err := tcLine("qdisc replace dev eth0 parent 1:2 sfq"); err != nil {
		t.Fatal(err)
	}
	if q := h.dev.Queues[1].qdisc; q.Kind != "sfq" || q.Handle.Major() < 0x8000 {
		t.Fatalf("after the replace: %s", q.Name())
	}
	if err := tcLine("qdisc del dev eth0 parent 1:2"); err != nil {
		t.Fatal(err)
	}
	if q := h.dev.Queues[1].qdisc; !q.noop || h.dev.Children[1] != q {
		t.Fatalf("after the delete queue 1 has %s, want noop_qdisc", q.Name())
	}
	if err := tcLine("qdisc del dev eth0 parent 1:2"); err == nil || !strings.Contains(err.Error(), "Cannot find specified qdisc") {
		t.Errorf("a second delete: %v", err)
	}
	h.on(0, sim.Microsecond, func(c *sim.CPU) {
		h.toQueue(c, 1)
		h.toQueue(c, 2)
	})
	h.run(sim.Millisecond)
	if h.n.NoopDrops != 1 || h.dev.Link().TxDropped != 1 || h.n.MQGrafts != 0 {
		t.Errorf("noop drops %d, tx_dropped %d, live grafts %d: want the one packet for queue 1 dropped, no deactivation (the device was down)",
			h.n.NoopDrops, h.dev.Link().TxDropped, h.n.MQGrafts)
	}
}

// An mq child grafted while the device is up: mq_graft deactivates the
// whole device (dev_deactivate), so every queue meets noop_qdisc until
// the activation and every queue's qdisc is reset, the other children's
// packets purged with the replaced one's; the other children come back,
// the replaced one is destroyed.
func TestMQChildGraftUnderTraffic(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1", "bql", "off"), 2, "test", 4, "mq", "pfifo")
	testDrv.refuse = 0 // the NIC takes nothing: the qdiscs hold what is sent
	kept := h.dev.Children[3]
	h.on(0, sim.Microsecond, func(c *sim.CPU) {
		for i := 0; i < 4; i++ {
			h.toQueue(c, 1)
			h.toQueue(c, 3)
		}
	})
	old := h.dev.Children[1]
	h.n.Up()
	h.e.At(100*sim.Microsecond, func() {
		if old.Qlen() == 0 || kept.Qlen() == 0 {
			t.Errorf("before the graft the children hold %d and %d packets, want some", old.Qlen(), kept.Qlen())
		}
		if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 parent 8001:2 handle 20: bfifo"); err != nil {
			t.Error(err)
		}
		for i, txq := range h.dev.Queues {
			if txq.qdisc != h.dev.noopQ {
				t.Errorf("after the command queue %d has %s, want noop_qdisc", i, txq.qdisc.Name())
			}
		}
	})
	h.on(1, 200*sim.Microsecond, func(c *sim.CPU) { h.toQueue(c, 0) })
	h.run(5 * sim.Millisecond)
	if h.dev.swap != nil || h.n.MQGrafts != 1 || h.n.RootGrafts != 0 || h.n.DeactivatedNs == 0 {
		t.Fatalf("the graft did not finish: swap %v, mq grafts %d, root grafts %d, deactivated %d ns", h.dev.swap != nil, h.n.MQGrafts, h.n.RootGrafts, h.n.DeactivatedNs)
	}
	if q := h.dev.Queues[1].qdisc; q.Kind != "bfifo" || !old.dead || kept.dead || h.dev.Queues[3].qdisc != kept || kept.state&stateDeactivated != 0 {
		t.Errorf("queue 1 has %s (old dead %v), queue 3 %s (kept dead %v, deactivated %v)", q.Name(), old.dead, h.dev.Queues[3].qdisc.Name(), kept.dead, kept.state&stateDeactivated != 0)
	}
	if kept.Qlen() != 0 || kept.held != 0 {
		t.Errorf("the kept child still holds %d packets: dev_reset_queue resets every queue's qdisc", kept.Qlen())
	}
	if h.n.NoopDrops != 1 {
		t.Errorf("noop drops %d, want the packet sent to queue 0 while deactivated", h.n.NoopDrops)
	}
	for _, q := range h.n.Qdiscs() {
		if q == old {
			t.Error("the replaced child is still the host's")
		}
	}
}
