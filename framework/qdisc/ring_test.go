package qdisc

import (
	"slices"
	"testing"
)

// Remove takes a value out from anywhere in the ring, wrapped or not,
// and the rest keep their order; At indexes from the head.
func TestRingRemove(t *testing.T) {
	for _, tc := range []struct {
		name    string
		popped  int   // values popped, then as many pushed: the ring wraps
		n       int   // values pushed first (8 fill the first buffer)
		remove  []int // positions, in order
		want    []int
		wantLen int
	}{
		{"head", 0, 5, []int{0}, []int{1, 2, 3, 4}, 4},
		{"tail", 0, 5, []int{4}, []int{0, 1, 2, 3}, 4},
		{"middle", 0, 5, []int{2}, []int{0, 1, 3, 4}, 4},
		{"wrapped middle", 6, 8, []int{3, 3}, []int{6, 7, 8, 11, 12, 13}, 6},
		{"wrapped across the end", 6, 8, []int{1, 2, 5}, []int{6, 8, 10, 11, 12}, 5},
		{"all", 3, 8, []int{1, 0, 1, 0, 3, 0, 1, 0}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Ring[int]
			for i := range tc.n {
				r.PushTail(i)
			}
			for i := range tc.popped {
				r.PopHead()
				r.PushTail(tc.n + i)
			}
			if tc.popped > 0 && r.head+r.n <= len(r.buf) {
				t.Fatalf("head %d, %d values in %d: not wrapped", r.head, r.n, len(r.buf))
			}
			for _, i := range tc.remove {
				r.Remove(i)
			}
			var got []int
			for i := range r.Len() {
				got = append(got, *r.At(i))
			}
			if !slices.Equal(got, tc.want) || r.Len() != tc.wantLen {
				t.Fatalf("ring holds %v (len %d), want %v", got, r.Len(), tc.want)
			}
			r.PushTail(99) // still a working FIFO
			if *r.Back() != 99 || r.Len() != tc.wantLen+1 {
				t.Fatalf("push after removes: back %d len %d", *r.Back(), r.Len())
			}
		})
	}
}
