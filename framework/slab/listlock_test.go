package slab

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// listedSlab puts a slab on node 0's partial list with inuse objects
// handed out, on no CPU, built on CPU c (its lines c's).
func listedSlab(k *Cache, c *sim.CPU, inuse int32) int32 {
	cs := &k.cpus[c.ID]
	id := k.newSlab(c, cs, 0)
	cs.slab, cs.freelist = -1, 0
	s := k.slab(id)
	s.frozen, s.inuse, s.free = false, inuse, int32(k.ObjsPerSlab)-inuse
	k.addPartial(c, &k.nodes[0], id)
	return id
}

// __slab_free takes list_lock before its cmpxchg when the free empties a
// slab on a partial list: a CPU freeing the last object while another
// holds the lock waits for it, and frees under it. If the holder takes
// that slab for its CPU meanwhile (get_partial_node freezes it), the
// waiter's cmpxchg fails and the retry frees into a frozen slab, the
// lock dropped.
func TestSlabFreeLocksBeforeItsCmpxchg(t *testing.T) {
	for _, tc := range []struct {
		name       string
		holderTake bool // the holder runs get_partial_node (takes the slab)
		wantFrozen uint64
		wantSlabs  int
	}{
		{"emptied under the lock", false, 0, 5},
		{"frozen by the holder meanwhile", true, 1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, 1, 4)
			k := New(e, NewGeometry("x", 1152, 4, -1))
			var id int32
			var freedAt sim.Time
			e.CPUs[0].Start(0, func(c *sim.CPU) {
				// min_partial (5) others first, so an empty one is discarded
				for range k.MinPartial {
					listedSlab(k, c, 3)
				}
				id = listedSlab(k, c, 1)
			})
			e.CPUs[1].Start(100000, func(c *sim.CPU) {
				n := &k.nodes[0]
				if tc.holderTake {
					// the last listed slab is id; take the list from its head
					// until it comes: a CPU refilling while the free waits
					k.slab(id).next = -1
					n.listLock.Lock(c, k.siteAlloc)
					c.Spend(5000)
					k.removePartial(c, n, id)
					cs := &k.cpus[c.ID]
					cs.slab = id
					k.takeFreelist(c, cs, id)
					n.listLock.Unlock(c)
					return
				}
				n.listLock.Lock(c, k.siteAlloc)
				c.Spend(5000)
				n.listLock.Unlock(c)
			})
			e.CPUs[2].Start(101000, func(c *sim.CPU) {
				k.Free(c, id)
				freedAt = c.Now()
			})
			if err := e.Run(sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			if freedAt < 105000 {
				t.Errorf("the free ended at %d ns, before the holder's unlock at ~105000", freedAt)
			}
			if k.siteFree.Contended != 1 {
				t.Errorf("__slab_free contended %d times on list_lock, want 1", k.siteFree.Contended)
			}
			if k.FreeFrozen != tc.wantFrozen || k.Slabs() != tc.wantSlabs {
				t.Errorf("frees into frozen slabs %d, slabs %d; want %d, %d", k.FreeFrozen, k.Slabs(), tc.wantFrozen, tc.wantSlabs)
			}
		})
	}
}

// list_del writes its neighbours' slab_list and the node's nr_partial
// beside list_lock; list_add_tail the old tail's. Their stores go out
// together: a removal costs the slab's own line, then the slowest of
// its neighbours' and the node's.
func TestListOpsWriteNeighbours(t *testing.T) {
	for _, tc := range []struct {
		name      string
		neighbour int // CPU that last wrote the neighbours (remover: CPU 0)
		want      func(c *sim.Costs) int64
	}{
		{"neighbours here", 0, func(c *sim.Costs) int64 { return c.LineHit + c.LineHit + c.SlabListOp }},
		{"neighbours freed into on the other socket", 2, func(c *sim.Costs) int64 { return c.LineHit + c.LineRemote + c.SlabListOp }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, 2, 2)
			k := New(e, NewGeometry("x", 1152, 4, -1))
			var ids [3]int32
			var took int64
			e.CPUs[0].Start(0, func(c *sim.CPU) {
				for i := range ids {
					ids[i] = listedSlab(k, c, 3)
				}
				if tc.neighbour != 0 {
					c.Spend(int64(200000 - c.Now()))
				}
				n := &k.nodes[0]
				n.listLock.Lock(c, k.siteAlloc)
				t0 := c.Now()
				k.removePartial(c, n, ids[1])
				took = int64(c.Now() - t0)
				n.listLock.Unlock(c)
			})
			if tc.neighbour != 0 {
				e.CPUs[tc.neighbour].Start(100000, func(c *sim.CPU) {
					k.slab(ids[0]).line.Write(c) // remote frees cmpxchg them
					k.slab(ids[2]).line.Write(c)
				})
			}
			if err := e.Run(sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			if want := tc.want(e.Costs); took != want {
				t.Errorf("remove_partial took %d ns, want %d", took, want)
			}
			if got := k.Partial(); got != 2 {
				t.Errorf("%d slabs listed after the removal, want 2", got)
			}
		})
	}
}

// nr_partial and the partial list head share list_lock's line: a waiter
// spinning on the lock takes the line, and the holder's next list
// operation takes it back; with nobody waiting it is the holder's.
func TestListLockLineTakenBackFromWaiter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waiter bool
		want   func(c *sim.Costs) int64
	}{
		{"nobody waiting", false, func(c *sim.Costs) int64 { return c.LineHit + c.SlabListOp }},
		{"a waiter spinning", true, func(c *sim.Costs) int64 { return c.LineSocket + c.SlabListOp }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, 1, 4)
			k := New(e, NewGeometry("x", 1152, 4, -1))
			var id int32
			var took int64
			e.CPUs[0].Start(0, func(c *sim.CPU) {
				cs := &k.cpus[c.ID]
				id = k.newSlab(c, cs, 0)
				cs.slab, cs.freelist = -1, 0
				k.slab(id).frozen = false
				c.Spend(int64(100000 - c.Now()))
				n := &k.nodes[0]
				n.listLock.Lock(c, k.sitePut)
				c.Spend(2000)
				t0 := c.Now()
				k.addPartial(c, n, id)
				took = int64(c.Now() - t0)
				n.listLock.Unlock(c)
			})
			if tc.waiter {
				e.CPUs[1].Start(100500, func(c *sim.CPU) {
					n := &k.nodes[0]
					n.listLock.Lock(c, k.siteAlloc)
					n.listLock.Unlock(c)
				})
			}
			if err := e.Run(sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			if want := tc.want(e.Costs); took != want {
				t.Errorf("add_partial took %d ns, want %d", took, want)
			}
		})
	}
}
