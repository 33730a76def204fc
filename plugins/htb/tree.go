package htb

import (
	"slices"

	"github.com/txlab/txlab/framework/qdisc"
)

// idTree is an rb_root of classes ordered by classid (a row or a feed,
// for one prio): htb_add_to_id_tree, rb_erase, rb_first, rb_next.
type idTree struct {
	nodes []*class
	prio  int
}

func (t *idTree) empty() bool { return len(t.nodes) == 0 }

// insert is htb_add_to_id_tree.
func (t *idTree) insert(c *class) {
	if c.in[t.prio] != nil {
		panic("htb: class already in an id tree for this prio")
	}
	i, _ := slices.BinarySearchFunc(t.nodes, c.id, func(x *class, id qdisc.ClassID) int { return cmpID(x.id, id) })
	t.nodes = slices.Insert(t.nodes, i, c)
	c.in[t.prio] = t
}

// erase is htb_safe_rb_erase.
func (t *idTree) erase(c *class) {
	if c.in[t.prio] != t {
		return // RB_EMPTY_NODE: the kernel WARNs and carries on
	}
	i := slices.Index(t.nodes, c)
	t.nodes = slices.Delete(t.nodes, i, i+1)
	c.in[t.prio] = nil
}

func (t *idTree) first() *class {
	if len(t.nodes) == 0 {
		return nil
	}
	return t.nodes[0]
}

// next is rb_next: the class after c, or nil.
func (t *idTree) next(c *class) *class {
	i, _ := slices.BinarySearchFunc(t.nodes, c.id, func(x *class, id qdisc.ClassID) int { return cmpID(x.id, id) })
	if i+1 < len(t.nodes) {
		return t.nodes[i+1]
	}
	return nil
}

// findNextUpper is htb_id_find_next_upper: the first class whose id is
// at least id.
func (t *idTree) findNextUpper(id qdisc.ClassID) *class {
	i, _ := slices.BinarySearchFunc(t.nodes, id, func(x *class, id qdisc.ClassID) int { return cmpID(x.id, id) })
	if i < len(t.nodes) {
		return t.nodes[i]
	}
	return nil
}

func cmpID(a, b qdisc.ClassID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hprio is struct htb_prio: a row (or an inner class's feed) for one
// prio, with the DRR pointer into it and the classid it last pointed at.
type hprio struct {
	tree      idTree
	ptr       *class
	lastPtrID qdisc.ClassID
}

// nextNode is htb_next_rb_node(&ptr).
func nextNode(ptr **class, prio int) {
	if *ptr == nil {
		return
	}
	if t := (*ptr).in[prio]; t != nil {
		*ptr = t.next(*ptr)
	} else {
		*ptr = nil // the node left its tree: rb_next of a cleared node
	}
}

// waitPQ is a level's wait_pq: classes by pq_key, an equal key after
// those already there (htb_add_to_wait_tree goes right on >=).
type waitPQ struct{ nodes []*class }

func (w *waitPQ) insert(c *class) {
	i, _ := slices.BinarySearchFunc(w.nodes, c.pqKey, func(x *class, k int64) int {
		if x.pqKey <= k {
			return -1
		}
		return 1
	})
	w.nodes = slices.Insert(w.nodes, i, c)
	c.inPQ = true
}

func (w *waitPQ) erase(c *class) {
	if !c.inPQ {
		return
	}
	i := slices.Index(w.nodes, c)
	w.nodes = slices.Delete(w.nodes, i, i+1)
	c.inPQ = false
}

func (w *waitPQ) first() *class {
	if len(w.nodes) == 0 {
		return nil
	}
	return w.nodes[0]
}
