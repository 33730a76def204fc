package path

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// TestFIFOLimitIsPfifos: the bottleneck FIFO of Limit packets holds as
// many as a router's pfifo of that limit, whose qlen leaves out the
// packet on the wire (dequeued to the device): a burst gets limit+1
// through either way.
func TestFIFOLimitIsPfifos(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		qdisc []string
		burst int
		want  uint64 // delivered
	}{
		{"fifo limit 1", 1, nil, 10, 2},
		{"fifo limit 5", 5, nil, 10, 6},
		{"fifo limit 20", 20, nil, 10, 10},
		{"pfifo limit 1", 1, []string{"pfifo", "limit", "1"}, 10, 2},
		{"pfifo limit 5", 5, []string{"pfifo", "limit", "5"}, 10, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(e, Config{RTT: sim.Millisecond, RateBps: 100e6, Limit: tc.limit, Qdisc: tc.qdisc})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.burst; i++ {
				p.Up.Send(0, Pkt{Len: 1514, Deliver: func(uint8) {}})
			}
			if err := e.Run(sim.Second); err != nil {
				t.Fatal(err)
			}
			if got := p.Up.Delivered; got != tc.want || p.Up.Dropped != uint64(tc.burst)-tc.want {
				t.Errorf("delivered %d dropped %d, want %d and %d", got, p.Up.Dropped, tc.want, uint64(tc.burst)-tc.want)
			}
		})
	}
}
