package netdev

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
)

// grouped records the group its Init was given (an mq-style root's
// child, as cake under cake_mq).
type grouped struct {
	dropper
	group *[]string
}

var groupsSeen []string

func init() {
	qdisc.Register("test_grouped", "test: records its group", func() qdisc.Qdisc { return &grouped{group: &groupsSeen} })
	qdisc.Register("test_grouped_mq", "test: an mq-style root of test_grouped", func() qdisc.Qdisc { return &grouped{group: &groupsSeen} })
	qdisc.RegisterMultiQueue("test_grouped_mq", "test_grouped")
}

func (g *grouped) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*g.group = append(*g.group, s.Group)
	return g.dropper.Init(ctx, s, args)
}

// Two hosts in one process (runs side by side, -j) each with an
// mq-style root on a device of the same name: their children's groups
// differ, so a plugin keeping shared config by group name (cake_mq)
// never joins one run's children to the other's; within a host every
// child has its root's group.
func TestMultiQueueGroupsPerRoot(t *testing.T) {
	groupsSeen = nil
	newHarness(t, Config{TxQueueLen: 1000}, 4, "ice", 4, "test_grouped_mq")
	newHarness(t, Config{TxQueueLen: 1000}, 4, "ice", 4, "test_grouped_mq")
	if len(groupsSeen) != 8 {
		t.Fatalf("%d children initialised, want 8: %q", len(groupsSeen), groupsSeen)
	}
	for i, g := range groupsSeen {
		if g == "" || g != groupsSeen[i/4*4] {
			t.Fatalf("child %d in group %q: %q", i, g, groupsSeen)
		}
	}
	if groupsSeen[0] == groupsSeen[4] {
		t.Fatalf("two hosts' children share the group %q", groupsSeen[0])
	}
}

// An mq-style root (cake_mq) on a device with one TX queue is refused,
// as mq_init_common refuses a device that is not multiqueue (tc-testing
// cake_mq.json "18e0": exit 2, no qdisc shown), and nothing is made.
func TestMultiQueueRootNeedsQueues(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	groupsSeen = nil
	n := NewNet(e, Config{TxQueueLen: 1000}, localMaker{})
	_, err = n.AddDevice(DeviceSpec{Name: "eth0", Driver: "ice", Queues: 1, Qdisc: []string{"test_grouped_mq"}})
	if !errors.Is(err, qdisc.ErrKernel) || !strings.Contains(err.Error(), "multiqueue") {
		t.Errorf("test_grouped_mq on one queue: %v, want the kernel's refusal", err)
	}
	if len(groupsSeen) != 0 {
		t.Errorf("%d children made", len(groupsSeen))
	}
}

// A qdisc grafted under an mq-style root's class is refused by the
// kernel (cake_mq_graft: "can't replace cake_mq sub-qdiscs", tc-testing
// cake_mq.json "7bdc" and "038e"), not a graft the model lacks, as it
// is under plain mq.
func TestMultiQueueRootRefusesGraft(t *testing.T) {
	h := newHarness(t, Config{TxQueueLen: 1000}, 4, "ice", 4, "test_grouped_mq")
	for _, line := range []string{"qdisc add dev eth0 parent 8001:1 fq", "qdisc replace dev eth0 parent 8001:2 test_grouped"} {
		err := h.n.TCBatch(h.dev, "t.tc", line)
		if !errors.Is(err, qdisc.ErrKernel) || !strings.Contains(err.Error(), "can't replace test_grouped_mq sub-qdiscs") {
			t.Errorf("%q: %v, want cake_mq_graft's refusal", line, err)
		}
	}
}
