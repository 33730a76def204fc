package sim

import "testing"

// The FIFO keeps order across its resets and compactions (Peek sees the
// head Pop takes next), and stops
// growing once its length is steady.
func TestFifo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lead, step int // values queued before, then pushed and popped per step
	}{{"drains", 0, 3}, {"always backlogged", 5000, 7}} {
		t.Run(tc.name, func(t *testing.T) {
			var f Fifo[int]
			next, want := 0, 0
			for i := 0; i < tc.lead; i++ {
				f.Push(next)
				next++
			}
			var capAt int
			for s := 0; s < 20000; s++ {
				for i := 0; i < tc.step; i++ {
					f.Push(next)
					next++
				}
				for i := 0; i < tc.step; i++ {
					if v := f.Peek(); v != want {
						t.Fatalf("step %d: peeked %d, want %d", s, v, want)
					}
					if v := f.Pop(); v != want {
						t.Fatalf("step %d: popped %d, want %d", s, v, want)
					}
					want++
				}
				if s == 10000 {
					capAt = cap(f.q)
				}
			}
			if f.Len() != tc.lead {
				t.Errorf("Len %d, want %d", f.Len(), tc.lead)
			}
			if cap(f.q) != capAt {
				t.Errorf("the array grew from %d to %d in steady state", capAt, cap(f.q))
			}
		})
	}
}
