package qdisc

import "slices"

// ClassHash is struct Qdisc_class_hash (net/sched/sch_api.c): a classful
// qdisc's classes in buckets by qdisc_class_hash, newest first in each
// (hlist_add_head), the table doubled when it passes 3/4 full
// (qdisc_class_hash_grow). Its Walk is the order cops->walk, so `tc class
// show`, lists htb's and drr's classes in.
type ClassHash[T any] struct {
	buckets [][]classEntry[T]
	elems   int
}

type classEntry[T any] struct {
	id ClassID
	v  T
}

// hashClassID is qdisc_class_hash.
func hashClassID(id ClassID, mask uint32) int {
	v := uint32(id)
	v ^= v >> 8
	v ^= v >> 4
	return int(v & mask)
}

// Insert is qdisc_class_hash_insert.
func (h *ClassHash[T]) Insert(id ClassID, v T) {
	if h.buckets == nil {
		h.buckets = make([][]classEntry[T], 4) // qdisc_class_hash_init
	}
	b := hashClassID(id, uint32(len(h.buckets)-1))
	h.buckets[b] = append([]classEntry[T]{{id, v}}, h.buckets[b]...)
	h.elems++
}

// Remove is qdisc_class_hash_remove.
func (h *ClassHash[T]) Remove(id ClassID) {
	if h.buckets == nil {
		return
	}
	b := hashClassID(id, uint32(len(h.buckets)-1))
	n := len(h.buckets[b])
	h.buckets[b] = slices.DeleteFunc(h.buckets[b], func(e classEntry[T]) bool { return e.id == id })
	h.elems -= n - len(h.buckets[b])
}

// Grow is qdisc_class_hash_grow: double past a load of 3/4, rehashing
// bucket by bucket, each entry to the head of its new bucket.
func (h *ClassHash[T]) Grow() {
	if h.elems*4 <= len(h.buckets)*3 {
		return
	}
	nb := make([][]classEntry[T], len(h.buckets)*2)
	for _, bucket := range h.buckets {
		for _, e := range bucket {
			b := hashClassID(e.id, uint32(len(nb)-1))
			nb[b] = append([]classEntry[T]{e}, nb[b]...)
		}
	}
	h.buckets = nb
}

// Walk lists the classes in hash order.
func (h *ClassHash[T]) Walk() []T {
	var out []T
	for _, bucket := range h.buckets {
		for _, e := range bucket {
			out = append(out, e.v)
		}
	}
	return out
}
