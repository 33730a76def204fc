package netdev

import (
	"fmt"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/cake"
	_ "github.com/txlab/txlab/plugins/fq_codel"
	_ "github.com/txlab/txlab/plugins/htb"
	_ "github.com/txlab/txlab/plugins/sfq"
)

// What a qdisc writes into an skb is the skb's from then on, as the
// kernel's qdiscs edit the one skb they hold: a flow qdisc's filter
// action (tcf_skbedit_act sets skb->priority and skb->mark), cake's wash
// (cake_handle_diffserv's ipv4_change_dsfield) and a CE mark. The TX
// path after the root's dequeue (the driver, the report), and a parent
// dequeuing a leaf (qdisc_dequeue_peeked), see the edited packet.
func TestQdiscEditsPersist(t *testing.T) {
	const edit = "protocol all prio 1 matchall classid %s action skbedit priority 5:7 mark 0x2a pipe"
	for _, tt := range []struct {
		name, tc string
		prio     uint32
		mark     uint32
		dscp     uint8
	}{
		{"fq_codel", "qdisc replace dev eth0 root handle 1: fq_codel\n" +
			"filter add dev eth0 parent 1: " + fmt.Sprintf(edit, "1:3") + "\n", 0x50007, 0x2a, 46},
		{"sfq", "qdisc replace dev eth0 root handle 1: sfq\n" +
			"filter add dev eth0 parent 1: " + fmt.Sprintf(edit, "1:3") + "\n", 0x50007, 0x2a, 46},
		{"cake", "qdisc replace dev eth0 root handle 1: cake\n" +
			"filter add dev eth0 parent 1: " + fmt.Sprintf(edit, "1:3") + "\n", 0x50007, 0x2a, 46},
		{"cake wash", "qdisc replace dev eth0 root handle 1: cake wash\n", 0, 0, 0},
		{"fq_codel under htb", "qdisc replace dev eth0 root handle 1: htb default 1\n" +
			"class add dev eth0 parent 1: classid 1:1 htb rate 10gbit\n" +
			"qdisc add dev eth0 parent 1:1 handle 10: fq_codel\n" +
			"filter add dev eth0 parent 10: " + fmt.Sprintf(edit, "10:3") + "\n", 0x50007, 0x2a, 46},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "ice", 1, "pfifo")
			if err := h.n.TCBatch(h.dev, "t.tc", tt.tc); err != nil {
				t.Fatal(err)
			}
			q := h.dev.Root
			var got []string
			h.n.Hooks.Dequeue = func(c *sim.CPU, dq *Qdisc, bulk []*skb.SKB) {
				for _, s := range bulk {
					got = append(got, fmt.Sprintf("prio %#x mark %#x dscp %d", s.Priority, s.Mark, s.DSCP))
				}
			}
			h.on(0, 0, func(c *sim.CPU) {
				var toFree skb.List
				for i := 0; i < 3; i++ {
					s := h.flowSkb(c, i)
					s.DSCP = 46
					h.enqueueOffered(c, q, s, &toFree)
				}
				c.LocalBhDisable()
				h.runOnce(c, q)
				c.LocalBhEnable()
			})
			h.run(sim.Millisecond)
			want := fmt.Sprintf("prio %#x mark %#x dscp %d", tt.prio, tt.mark, tt.dscp)
			if len(got) != 3 {
				t.Fatalf("dequeued %d packets, want 3", len(got))
			}
			for _, g := range got {
				if g != want {
					t.Errorf("dequeued %s, want %s", g, want)
				}
			}
		})
	}
}
