package ice

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
)

// TX completions through the host's hooks: interrupts on the queue's own
// vector, every completed byte reported to BQL, wakes only from the
// clean at TX_WAKE_THRESHOLD, counters adding up.
func TestCompletions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		nq, bulk int
		bql      bool
	}{
		{"min ring", []string{"tx", "64"}, 1, 32, false},
		{"4 queues bql", nil, 4, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &ICE{}
			if _, err := d.Init(driver.Setup{NumTxQ: tc.nq, NumCPUs: 8, Costs: sim.DefaultCosts()}, tc.args); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, tc.nq, tc.bql)
			f.onWake = func(q int) {
				if f.inPoll && d.rings[q].Unused() < TxWakeThreshold {
					t.Errorf("q%d woken with %d free", q, d.rings[q].Unused())
				}
			}
			check := func() {
				for i, r := range d.rings {
					held := 0
					for _, p := range f.held {
						if int(p.Queue) == i {
							held++
						}
					}
					if r.Used() != held {
						t.Fatalf("q%d: ring uses %d, host sees %d in the driver", i, r.Used(), held)
					}
				}
				for _, x := range f.irqs {
					if x.v < 0 || x.v >= tc.nq {
						t.Fatalf("interrupt on vector %d", x.v)
					}
				}
			}
			f.pump(d, tc.nq, 3000, tc.bulk, 500, 300, check)
			for i, s := range d.Stats() {
				if s.Packets != 3000 || s.Packets != f.consumed[i] || f.complBytes[i] != f.sentBytes[i] || f.complBytes[i] != f.consumedB[i] {
					t.Errorf("q%d: %d packets, consumed %d, BQL sent %d completed %d", i, s.Packets, f.consumed[i], f.sentBytes[i], f.complBytes[i])
				}
				if s.Restart != f.wakes[i] || s.Stopped != f.stops[i] || f.stops[i] != f.wakes[i] {
					t.Errorf("q%d: restarts %d/%d stops %d/%d", i, s.Restart, f.wakes[i], s.Stopped, f.stops[i])
				}
			}
		})
	}
}
