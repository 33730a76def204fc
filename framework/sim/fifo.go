package sim

// Fifo is a queue of values in arrival order that reuses its array: the
// pending work of events that fire in the order they were scheduled, so
// that each event can take its work from the head instead of carrying a
// closure of its own.
type Fifo[T any] struct {
	q    []T
	head int
}

// Push adds v at the tail.
func (f *Fifo[T]) Push(v T) {
	if f.head > 0 && f.head == len(f.q) {
		clear(f.q)
		f.q, f.head = f.q[:0], 0
	} else if f.head >= 32 && f.head >= len(f.q)/2 {
		// Moving the rest costs no more than the pops since the last
		// move; the array stays within twice the longest queue.
		n := copy(f.q, f.q[f.head:])
		clear(f.q[n:])
		f.q, f.head = f.q[:n], 0
	}
	f.q = append(f.q, v)
}

// Pop takes the head; it panics on an empty queue.
func (f *Fifo[T]) Pop() T {
	v := f.q[f.head]
	var zero T
	f.q[f.head] = zero
	f.head++
	return v
}

// Peek is the head, left queued; it panics on an empty queue.
func (f *Fifo[T]) Peek() T { return f.q[f.head] }

// Len is the values queued.
func (f *Fifo[T]) Len() int { return len(f.q) - f.head }
