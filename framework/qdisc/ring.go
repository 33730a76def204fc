package qdisc

import "slices"

// Ring is a growable FIFO ring of values, the packet list every qdisc
// keeps per queue (sk_buff_head's role): add at the tail, take from
// either end. The zero value is empty and ready to use.
type Ring[T any] struct {
	buf     []T
	head, n int
}

// Len is the number of values held.
func (r *Ring[T]) Len() int { return r.n }

// PushTail appends v, growing the ring when full.
func (r *Ring[T]) PushTail(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

// grow makes room in a full ring: twice the size while small, an
// eighth more from 1024 values on, a thirty-second from 8192, a
// sixty-fourth from 16384, and all of the allocation's size class. A
// deep queue's ring is most of what its packets cost beside their skbs:
// doubling leaves up to half of it unused, a sixty-fourth at most a
// sixty-fifth, for sixty-four copies of each value while it grows (a
// backlog grows once; steady state copies none).
func (r *Ring[T]) grow() {
	n := len(r.buf)
	want := max(8, 2*n)
	switch {
	case n >= 16384:
		want = n + n/64
	case n >= 8192:
		want = n + n/32
	case n >= 1024:
		want = n + n/8
	}
	nb := slices.Grow([]T(nil), want)
	nb = nb[:cap(nb)]
	i := copy(nb, r.buf[r.head:])
	copy(nb[i:], r.buf[:r.head])
	r.buf, r.head = nb, 0
}

// PopHead removes and returns the oldest value; the ring must not be empty.
func (r *Ring[T]) PopHead() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}

// PopTail removes and returns the newest value; the ring must not be empty.
func (r *Ring[T]) PopTail() T {
	var zero T
	i := (r.head + r.n - 1) % len(r.buf)
	v := r.buf[i]
	r.buf[i] = zero
	r.n--
	return v
}

// Head is the oldest value; the ring must not be empty.
func (r *Ring[T]) Head() T { return r.buf[r.head] }

// Front points at the oldest value; the ring must not be empty.
func (r *Ring[T]) Front() *T { return &r.buf[r.head] }

// Back points at the newest value; the ring must not be empty.
func (r *Ring[T]) Back() *T { return &r.buf[(r.head+r.n-1)%len(r.buf)] }

// At points at the i-th oldest value (0 is the head); i must be below
// Len.
func (r *Ring[T]) At(i int) *T { return &r.buf[(r.head+i)%len(r.buf)] }

// Remove takes out the i-th oldest value, keeping the others' order (a
// list_head unlink amid the queue); i must be below Len. The values
// before it move up one place, so removing near the head is cheap.
func (r *Ring[T]) Remove(i int) T {
	v := *r.At(i)
	for k := i; k > 0; k-- {
		*r.At(k) = *r.At(k - 1)
	}
	var zero T
	*r.At(0) = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}
