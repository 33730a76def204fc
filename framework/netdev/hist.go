package netdev

import "math/bits"

// Log2Hist is a bpftrace hist(): power-of-two buckets.
type Log2Hist struct {
	Buckets [64]uint64 // bucket i counts values in [2^(i-1), 2^i); 0 counts 0
	Count   uint64
	Sum     int64
}

// Add records one value.
func (h *Log2Hist) Add(v int64) {
	if v < 0 {
		v = 0
	}
	b := 0
	if v > 0 {
		b = bits.Len64(uint64(v))
	}
	h.Buckets[b]++
	h.Count++
	h.Sum += v
}

// Reset clears the histogram.
func (h *Log2Hist) Reset() { *h = Log2Hist{} }
