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
			f.OnWake = func(q int) {
				if f.InPoll && d.rings[q].Unused() < TxWakeThreshold {
					t.Errorf("q%d woken with %d free", q, d.rings[q].Unused())
				}
			}
			check := func() {
				for i, r := range d.rings {
					held := 0
					for _, p := range f.Held {
						if int(p.Queue) == i {
							held++
						}
					}
					if r.Used() != held {
						t.Fatalf("q%d: ring uses %d, host sees %d in the driver", i, r.Used(), held)
					}
				}
				for _, x := range f.Irqs {
					if x.V < 0 || x.V >= tc.nq {
						t.Fatalf("interrupt on vector %d", x.V)
					}
				}
			}
			f.Pump(d, tc.nq, 3000, tc.bulk, 500, 300, check)
			for i, s := range d.Stats() {
				if s.Packets != 3000 || s.Packets != f.Consumed[i] || f.ComplBytes[i] != f.SentBytes[i] || f.ComplBytes[i] != f.ConsumedB[i] {
					t.Errorf("q%d: %d packets, consumed %d, BQL sent %d completed %d", i, s.Packets, f.Consumed[i], f.SentBytes[i], f.ComplBytes[i])
				}
				if s.Restart != f.Wakes[i] || s.Stopped != f.Stops[i] || f.Stops[i] != f.Wakes[i] {
					t.Errorf("q%d: restarts %d/%d stops %d/%d", i, s.Restart, f.Wakes[i], s.Stopped, f.Stops[i])
				}
			}
		})
	}
}
