package driver

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// A clean reads each packet's completion afresh, as ice_clean_tx_irq
// reads each descriptor's DD bit: a completion written while the clean
// runs (here the second, due 20 ns after the first, while the first
// takes 25 ns to clean) is taken in the same clean; one due after the
// clean has ended is left for the next.
func TestCleanReadsEachCompletionLive(t *testing.T) {
	r := NewRing(8)
	for h := range 3 {
		r.Put(0, 100, 1)
		r.Desc[h].DoneAt = sim.Time(100 + 20*h*h) // 100, 120, 180
	}
	r.Tail = r.NTU
	clock := sim.Time(100)
	pkts, frames, bytes := r.Clean(func() sim.Time { return clock }, 64, func(*Desc) { clock += 25 })
	if pkts != 2 || frames != 2 || bytes != 200 || clock != 150 {
		t.Fatalf("cleaned %d packets (%d frames, %d bytes), clock %d: want the first two at 150", pkts, frames, bytes, clock)
	}
	if r.Used() != 1 {
		t.Errorf("%d packets left, want the third", r.Used())
	}
}

// Back to back, frames take the wire's exact time on average: 186-byte
// frames (120 bytes of UDP) at 100 Gbit take 14.88 ns each, so 1000 of
// them 14,880 ns, not 1000 x 14; an idle gap restarts the clock.
func TestWireKeepsFractions(t *testing.T) {
	w := Wire{RateBps: 100_000_000_000}
	var done sim.Time
	for i := 0; i < 1000; i++ {
		done = w.Send(0, 162)
	}
	if done != 14880 {
		t.Fatalf("1000 frames done at %v, want 14880 ns", done)
	}
	if got := w.Send(done+1000, 162); got != done+1000+14 {
		t.Fatalf("after a gap: %v, want %v", got, done+1000+14)
	}
}
