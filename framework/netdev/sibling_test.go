package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// Ctx.ReadSibling (cake_mq's READ_ONCE of a sibling's q.qlen and
// last_active) loads the sibling's struct Qdisc line and private line:
// a transfer each from the CPU that wrote them last, a hit once this CPU
// holds them, nothing for the qdisc's own queue or outside a CPU.
func TestReadSiblingLines(t *testing.T) {
	costs := sim.DefaultCosts()
	cases := []struct {
		name   string
		writer int  // the CPU whose enqueue and run wrote queue 1's qdisc
		txq    int  // the queue CPU 0's qdisc (queue 0's) reads
		twice  bool // price the second read
		want   int64
	}{
		{"written by another core", 1, 1, false, 2 * costs.LineSocket},
		{"read again", 1, 1, true, 2 * costs.LineHit},
		{"written here", 0, 1, false, 2 * costs.LineHit},
		{"own queue", 1, 0, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "net-next"), 2, "test", 2, "mq", "pfifo")
			q, sib := h.dev.Queues[0].qdisc, h.dev.Queues[1].qdisc
			var got int64
			h.on(tc.writer, 0, func(c *sim.CPU) {
				sib.lineData.WriteMany(c, costs.QdiscDataLines) // private data: cake_dequeue's last_active
				sib.lineWrite.Write(c)                          // struct Qdisc: q.qlen, running
			})
			h.on(0, 10*sim.Microsecond, func(c *sim.CPU) {
				read := func() int64 {
					t0 := c.Now()
					q.bind(c, nil).ReadSibling(tc.txq)
					return int64(c.Now() - t0)
				}
				got = read()
				if tc.twice {
					got = read()
				}
			})
			h.run(sim.Millisecond)
			if got != tc.want {
				t.Errorf("reading queue %d's qdisc cost %d ns, want %d", tc.txq, got, tc.want)
			}
		})
	}
	h := newHarness(t, profile(t, "net-next"), 1, "test", 2, "mq", "pfifo")
	h.dev.Queues[0].qdisc.bind(nil, nil).ReadSibling(1) // Init, tc: no CPU to charge
}
