package hfsc

import "slices"

// classList is one of sch_hfsc.c's rbtrees (the eligible tree, a
// class's vt_tree and cf_tree): classes in key order, a class inserted
// after those with an equal key (the kernel's insert walks right on
// >=), so an in-order walk meets equal keys in insertion order. The
// trees hold a handful of classes; a sorted slice walks them as
// rb_first/rb_next do.
type classList []*class

// insert is *tree_insert with key k of cl.
func (l *classList) insert(cl *class, key func(*class) uint64) {
	k := key(cl)
	i, _ := slices.BinarySearchFunc(*l, k, func(c *class, k uint64) int {
		if key(c) <= k {
			return -1
		}
		return 1
	})
	*l = slices.Insert(*l, i, cl)
}

// remove is rb_erase: cl leaves the tree (the kernel erases the node
// whatever its key is now).
func (l *classList) remove(cl *class) {
	if i := slices.Index(*l, cl); i >= 0 {
		*l = slices.Delete(*l, i, i+1)
	}
}

// first is rb_first, nil when empty.
func (l classList) first() *class {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// last is rb_last, nil when empty.
func (l classList) last() *class {
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}

func keyE(c *class) uint64  { return c.e }
func keyVT(c *class) uint64 { return c.vt }
func keyF(c *class) uint64  { return c.f }
