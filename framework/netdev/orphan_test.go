package netdev

import (
	"testing"

	_ "github.com/txlab/txlab/plugins/netem"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// orphanSock is a chargedSock whose destructor skb_orphan_partial may
// run early (skb.Orphaner); it records when each of its skbs was given
// back and how.
type orphanSock struct {
	chargedSock
	orphaned     int // bytes given back by skb_orphan_partial
	orphanedAt   []sim.Time
	freedOrphans int // skbs freed after their orphaning (sock_efree)
}

func (o *orphanSock) Release(c *sim.CPU, s *skb.SKB) {
	if s.Orphaned() {
		o.freedOrphans++
		return
	}
	o.chargedSock.Release(c, s)
}

func (o *orphanSock) Orphan(c *sim.CPU, s *skb.SKB) {
	o.orphaned += int(s.TrueSize)
	o.orphanedAt = append(o.orphanedAt, c.Now())
}

// netem_enqueue orphans what it delays (skb_orphan_partial when latency,
// jitter or rate is set): the socket gets each skb's charge back at the
// enqueue, a millisecond before the skb leaves, and the skb's free is
// then sock_efree's, which gives nothing back twice. A packet netem's
// loss took is not orphaned (loss is decided first): its charge comes
// back at its free. Without a delay netem orphans nothing.
func TestNetemOrphansWhatItDelays(t *testing.T) {
	const pkts = 20
	truesize := skb.TruesizeUDP(1000)
	for _, tt := range []struct {
		name           string
		qd             []string
		orphans, drops int
	}{
		{"delay", []string{"netem", "delay", "1ms"}, pkts, 0},
		{"rate", []string{"netem", "rate", "100mbit"}, pkts, 0},
		{"delay and loss", []string{"netem", "delay", "1ms", "loss", "100%"}, 0, pkts},
		{"no delay", []string{"netem", "limit", "100"}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.19-rc1", "bql", "off"), 2, "test", 1, tt.qd...)
			o := &orphanSock{}
			o.owner = h.n.Pool.AddOwner(o)
			sentAt := sim.Time(10 * sim.Microsecond)
			h.on(0, sentAt, func(c *sim.CPU) {
				for i := 0; i < pkts; i++ {
					s := h.skb(c, i)
					s.Len, s.TrueSize, s.Owner = 1000, truesize, o.owner
					o.charged += int(truesize)
					h.n.DevQueueXmit(c, h.dev, s)
				}
			})
			h.run(5 * sim.Millisecond)
			if len(testDrv.held) != pkts-tt.drops {
				t.Fatalf("the driver got %d packets, want %d", len(testDrv.held), pkts-tt.drops)
			}
			h.on(1, 6*sim.Millisecond, func(c *sim.CPU) { // the TX completions
				x := h.dev.ctxFor(c)
				for _, hd := range testDrv.held {
					x.Consume(hd)
				}
				testDrv.held = testDrv.held[:0]
			})
			h.run(7 * sim.Millisecond)
			if o.orphaned != tt.orphans*int(truesize) || o.freedOrphans != tt.orphans {
				t.Errorf("orphaned %d bytes, %d freed after it; want %d skbs' bytes, all freed", o.orphaned, o.freedOrphans, tt.orphans)
			}
			for _, at := range o.orphanedAt {
				if at > sentAt+50*sim.Microsecond {
					t.Errorf("orphaned at %v, not at the enqueue (%v)", at, sentAt)
				}
			}
			if back := o.orphaned + o.released; back != o.charged {
				t.Errorf("%d bytes given back (%d orphaned, %d at free), %d charged", back, o.orphaned, o.released, o.charged)
			}
		})
	}
}
