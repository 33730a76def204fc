package netem

import (
	"container/heap"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

// item is a queued packet with netem_skb_cb's time_to_send.
type item struct {
	pkt        skb.Packet
	timeToSend int64
	seq        uint64 // insertion order: the rb-tree keeps equal times in it
}

// tfifo is netem's time-ordered queue: a linear list (t_head..t_tail) for
// packets that come in time order, which is most of them, and an rb-tree
// for the rest (here a heap on time, then insertion order, which is the
// order the rb-tree's in-order walk gives, since equal keys go right).
type tfifo struct {
	list   qdisc.Ring[item]
	tree   itemHeap
	treeHi int64 // the tree's latest time_to_send (skb_rb_last), while it holds any
	seq    uint64
}

func (t *tfifo) len() int { return t.list.Len() + len(t.tree) }

// enqueue is tfifo_enqueue: at the list's tail if not earlier than it,
// else into the tree. It returns the tree's depth visited, for the cost.
func (t *tfifo) enqueue(it item) int {
	t.seq++
	it.seq = t.seq
	if t.list.Len() == 0 || it.timeToSend >= t.list.Back().timeToSend {
		t.list.PushTail(it)
		return 0
	}
	if len(t.tree) == 0 || it.timeToSend >= t.treeHi {
		t.treeHi = it.timeToSend
	}
	heap.Push(&t.tree, it)
	depth := 1
	for n := len(t.tree); n > 1; n >>= 1 {
		depth++
	}
	return depth
}

// peek is netem_peek: the tree's first unless the list's head is not
// later.
func (t *tfifo) peek() (*item, bool) {
	switch {
	case len(t.tree) == 0 && t.list.Len() == 0:
		return nil, false
	case len(t.tree) == 0:
		return t.list.Front(), false
	case t.list.Len() == 0:
		return &t.tree[0], true
	case t.tree[0].timeToSend < t.list.Front().timeToSend:
		return &t.tree[0], true
	}
	return t.list.Front(), false
}

// eraseHead is netem_erase_head for what peek returned.
func (t *tfifo) eraseHead(fromTree bool) item {
	if fromTree {
		return heap.Pop(&t.tree).(item)
	}
	return t.list.PopHead()
}

// last is the latest time_to_send held (skb_rb_last and t_tail), for the
// rate's reference point.
func (t *tfifo) last() (int64, bool) {
	var hi int64
	ok := false
	if len(t.tree) > 0 {
		hi, ok = t.treeHi, true
	}
	if t.list.Len() > 0 && (!ok || t.list.Back().timeToSend > hi) {
		hi, ok = t.list.Back().timeToSend, true
	}
	return hi, ok
}

// itemHeap orders by time_to_send, then insertion.
type itemHeap []item

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if h[i].timeToSend != h[j].timeToSend {
		return h[i].timeToSend < h[j].timeToSend
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)   { *h = append(*h, x.(item)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
