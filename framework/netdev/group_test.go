package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
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
