package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	_ "github.com/txlab/txlab/plugins/fq_codel"
	_ "github.com/txlab/txlab/plugins/sfq"
)

// tc_new_tfilter (cls_api.c) clears TCQ_F_CAN_BYPASS on the qdisc a
// filter is added to, for good: fq_codel_init and sfq_init set it (limit
// >= 1), and nothing sets it again (fq_codel_change leaves sch->flags
// alone, sfq has no change), so an empty flow qdisc with filters runs
// them on every packet rather than handing the first to the driver
// unclassified. A filter's delete does not give the bypass back.
func TestFilterClearsBypass(t *testing.T) {
	for _, tt := range []struct{ qd, change string }{
		{"fq_codel", "qdisc change dev eth0 root handle 1: fq_codel limit 100"},
		{"sfq", ""}, // sfq's ops have no change
	} {
		t.Run(tt.qd, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "ice", 1, "pfifo")
			tcLine := func(line string) {
				t.Helper()
				if err := h.n.TCBatch(h.dev, "t.tc", line); err != nil {
					t.Fatal(err)
				}
			}
			tcLine("qdisc replace dev eth0 root handle 1: " + tt.qd)
			q := h.dev.Root
			if q.Flags&qdisc.CanBypass == 0 {
				t.Fatalf("%s without filters: no TCQ_F_CAN_BYPASS", tt.qd)
			}
			for _, line := range []string{
				"filter add dev eth0 parent 1: protocol all prio 1 matchall classid 1:1 action skbedit priority 6 pipe",
				tt.change,
				"filter del dev eth0 parent 1: protocol all prio 1",
			} {
				if line == "" {
					continue
				}
				tcLine(line)
				if h.dev.Root != q || q.Flags&qdisc.CanBypass != 0 {
					t.Errorf("after %q: root changed %v, TCQ_F_CAN_BYPASS %v; want the same qdisc without it",
						line, h.dev.Root != q, q.Flags&qdisc.CanBypass != 0)
				}
			}
		})
	}
}
