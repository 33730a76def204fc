package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/htb"
	_ "github.com/txlab/txlab/plugins/prio"
)

// qdisc_bstats_update (bstats_update) counts a GSO skb as its gso_segs
// packets and its qdisc_pkt_len bytes, in every qdisc that sends it: a
// root sending it by the bypass or dequeuing it, each mq child, a
// classful root and its leaf (whose counters prio's class shows). The
// accounting still counts skbs.
func TestQdiscStatsCountGSOSegments(t *testing.T) {
	const (
		n    = 40
		segs = 4
		size = segs * 1514
	)
	tests := []struct {
		name   string
		queues int
		qd     []string
		tc     string
		spaced bool // one skb at a time: an empty root's bypass sends each
		// check names the qdiscs that each sent every skb; with sum,
		// together (mq's children, which mq_dump adds up).
		check func(h *harness) map[string]*Qdisc
		sum   bool
	}{
		{name: "root pfifo, bypass", queues: 1, qd: []string{"pfifo"}, spaced: true,
			check: func(h *harness) map[string]*Qdisc { return map[string]*Qdisc{"root": h.dev.Root} }},
		{name: "root pfifo, queued", queues: 1, qd: []string{"pfifo"},
			check: func(h *harness) map[string]*Qdisc { return map[string]*Qdisc{"root": h.dev.Root} }},
		{name: "mq children", queues: 2, qd: []string{"mq", "pfifo"}, sum: true,
			check: func(h *harness) map[string]*Qdisc {
				return map[string]*Qdisc{"mq :1": h.dev.Children[0], "mq :2": h.dev.Children[1]}
			}},
		{name: "htb root and its leaf", queues: 1, qd: []string{"pfifo"}, tc: `
qdisc replace dev eth0 root handle 1: htb default 10
class add dev eth0 parent 1: classid 1:10 htb rate 10gbit
`,
			check: func(h *harness) map[string]*Qdisc {
				return map[string]*Qdisc{"htb": h.dev.Root, "leaf 1:10": h.dev.Root.LeafOf(qdisc.MakeClassID(1, 0x10))}
			}},
		{name: "prio root and its band's leaf", queues: 1, qd: []string{"pfifo"}, tc: `
qdisc replace dev eth0 root handle 1: prio
`,
			check: func(h *harness) map[string]*Qdisc {
				return map[string]*Qdisc{"prio": h.dev.Root, "leaf 1:2": h.dev.Root.LeafOf(qdisc.MakeClassID(1, 2))}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "ice", tt.queues, tt.qd...)
			if tt.tc != "" {
				if err := h.n.TCBatch(h.dev, "t.tc", tt.tc); err != nil {
					t.Fatal(err)
				}
			}
			h.on(0, sim.Microsecond, func(c *sim.CPU) {
				for i := 0; i < n; i++ {
					if tt.spaced {
						c.SleepUntil(c.Now() + 100*sim.Microsecond)
					}
					s := h.skb(c, i)
					s.Len, s.GSOSegs = size, segs
					s.Keys = skb.FlowKeys{Src: 1, Dst: 2, SrcPort: uint16(1000 + i), DstPort: 5001, Proto: 6}
					h.n.DevQueueXmit(c, h.dev, s)
				}
			})
			h.run(20 * sim.Millisecond) // checks the accounting, in skbs
			if h.n.Offered != n {
				t.Fatalf("offered %d skbs, want %d", h.n.Offered, n)
			}
			if tt.spaced && h.n.Bypass == 0 || !tt.spaced && h.n.Bypass == n {
				t.Errorf("%d of %d skbs took the bypass", h.n.Bypass, n)
			}
			var pkts, bytes uint64
			for name, q := range tt.check(h) {
				if q == nil {
					t.Fatalf("%s: no qdisc", name)
				}
				t.Logf("%s (%s): Sent %d bytes %d pkt", name, q.Kind, q.SentBytes, q.SentPkts)
				pkts, bytes = pkts+q.SentPkts, bytes+q.SentBytes
				if !tt.sum && (q.SentPkts != n*segs || q.SentBytes != n*size) {
					t.Errorf("%s (%s): Sent %d bytes %d pkt, want %d bytes %d pkt", name, q.Kind, q.SentBytes, q.SentPkts, n*size, n*segs)
				}
			}
			if tt.sum && (pkts != n*segs || bytes != n*size) {
				t.Errorf("together: Sent %d bytes %d pkt, want %d bytes %d pkt", bytes, pkts, n*size, n*segs)
			}
			if h.dev.Root != nil && h.dev.Root.Kind == "prio" {
				for _, cl := range h.dev.Root.Classes() {
					if cl.ID == qdisc.MakeClassID(1, 2) && cl.SentPackets != n*segs {
						t.Errorf("prio class 1:2 shows %d pkt, want its leaf's %d", cl.SentPackets, n*segs)
					}
				}
			}
		})
	}
}
