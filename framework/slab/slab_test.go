package slab

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// The shapes SLUB gives the caches the model uses, worked from
// calculate_order, set_min_partial and set_cpu_partial (mm/slub.c 6.12);
// the 16-CPU rows are what /proc/slabinfo shows for kmalloc-256, -512
// and -1k on such a host (objperslab, pagesperslab).
func TestGeometry(t *testing.T) {
	cases := []struct {
		name                   string
		size, ncpus, partial   int
		order, objs, cpuSlabs  int
		cpuPartial, minPartial int
	}{
		{"skbuff_small_head, 45 frags, 480 CPUs", 1152, 480, -1, 3, 28, 2, 24, 5},
		{"the seed's echo 64 > cpu_partial", 1152, 480, 64, 3, 28, 5, 64, 5},
		{"skbuff_small_head, 17 frags, 480 CPUs", 704, 480, -1, 3, 46, 3, 52, 5},
		{"kmalloc-256, 16 CPUs", 256, 16, -1, 1, 32, 4, 52, 5},
		{"kmalloc-512, 16 CPUs", 512, 16, -1, 2, 32, 4, 52, 5},
		{"kmalloc-1k, 16 CPUs", 1024, 16, -1, 3, 32, 2, 24, 5},
		{"kmalloc-8k: cpu_partial 6", 8192, 16, -1, 3, 4, 3, 6, 6},
		{"cpu_partial 0: no partial slabs kept", 1152, 480, 0, 3, 28, 0, 0, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGeometry("x", tc.size, tc.ncpus, tc.partial)
			if g.Order != tc.order || g.ObjsPerSlab != tc.objs || g.CPUPartialSlabs != tc.cpuSlabs || g.CPUPartial != tc.cpuPartial || g.MinPartial != tc.minPartial {
				t.Errorf("order %d, %d objects, cpu_partial %d (%d slabs), min_partial %d; want %d, %d, %d (%d), %d",
					g.Order, g.ObjsPerSlab, g.CPUPartial, g.CPUPartialSlabs, g.MinPartial,
					tc.order, tc.objs, tc.cpuPartial, tc.cpuSlabs, tc.minPartial)
			}
		})
	}
}

func engine(t *testing.T, sockets, cores int) *sim.Engine {
	t.Helper()
	e, err := sim.NewEngine(sim.Topology{Sockets: sockets, CoresPerSocket: cores, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	e.SetLockCPUs(nil)
	return e
}

// pipe runs a producer on CPU 0 that allocates n objects, one every
// 100 ns, and a consumer on CPU cons that frees each lag objects later,
// in order: a sender and the CPU completing its packets.
func pipe(t *testing.T, e *sim.Engine, k *Cache, cons, n, lag int) {
	t.Helper()
	ids := make([]int32, 0, n)
	e.CPUs[0].Start(0, func(c *sim.CPU) {
		for range n {
			c.Sync()
			ids = append(ids, k.Alloc(c))
			c.Spend(100)
		}
	})
	e.CPUs[cons].Start(sim.Time(lag*100+50), func(c *sim.CPU) {
		for i := 0; i < n; {
			c.Sync()
			if i >= len(ids) {
				c.Spend(100)
				continue
			}
			k.Free(c, ids[i])
			i++
			c.Spend(100)
		}
	})
	if err := e.Run(sim.Second); err != nil {
		t.Fatal(err)
	}
}

// A CPU that frees what it allocates never leaves its own slab.
func TestLocalFreesStayOnTheFastPath(t *testing.T) {
	e := engine(t, 1, 1)
	k := New(e, NewGeometry("x", 1152, 1, -1))
	e.CPUs[0].Start(0, func(c *sim.CPU) {
		for range 1000 {
			k.Free(c, k.Alloc(c))
			c.Spend(100)
		}
	})
	if err := e.Run(sim.Second); err != nil {
		t.Fatal(err)
	}
	if k.AllocSlab != 1 || k.AllocSlowpath != 1 || k.FreeFastpath != 1000 || k.FreeSlowpath != 0 {
		t.Errorf("alloc_slab %d, alloc_slowpath %d, free_fastpath %d, free_slowpath %d; want 1, 1, 1000, 0",
			k.AllocSlab, k.AllocSlowpath, k.FreeFastpath, k.FreeSlowpath)
	}
}

// Frees that catch up with the producer land in its current slab, which
// is frozen: no list, no lock.
func TestFreesIntoAFrozenSlab(t *testing.T) {
	e := engine(t, 1, 2)
	k := New(e, NewGeometry("x", 1152, 2, -1))
	pipe(t, e, k, 1, 20, 2) // 20 objects of one 28-object slab
	if k.FreeFrozen != 20 || k.CPUPartialFree != 0 || k.siteFree.Acquired+k.sitePut.Acquired+k.siteAlloc.Acquired != 0 {
		t.Errorf("free_frozen %d, cpu_partial_free %d, list_lock taken %d times; want 20, 0, 0",
			k.FreeFrozen, k.CPUPartialFree, k.siteFree.Acquired+k.sitePut.Acquired+k.siteAlloc.Acquired)
	}
	if k.InUse() != 0 {
		t.Errorf("%d objects in use after every free", k.InUse())
	}
}

// A producer and a consumer far behind it: each full slab goes onto the
// consumer's partial list at its first free, every cpu_partial_slabs of
// them to the node's list under list_lock, and the producer takes them
// back from there under the same lock. A larger cpu_partial (the seed's
// echo 64) drains less often.
func TestProducerConsumerCycleThroughTheNode(t *testing.T) {
	const n, lag = 20000, 500
	drains := map[int]uint64{}
	for _, partial := range []int{-1, 64} {
		e := engine(t, 1, 2)
		k := New(e, NewGeometry("x", 1152, 2, partial))
		pipe(t, e, k, 1, n, lag)
		slabs := uint64(n / k.ObjsPerSlab)
		if k.CPUPartialFree < slabs*9/10 {
			t.Errorf("cpu_partial %d: %d slabs onto the consumer's partial list, want about %d", partial, k.CPUPartialFree, slabs)
		}
		if want := k.CPUPartialFree / uint64(k.CPUPartialSlabs); k.CPUPartialDrain < want*9/10 || k.CPUPartialDrain > want+1 {
			t.Errorf("cpu_partial %d: %d drains of %d slabs, want about %d (one every %d)", partial, k.CPUPartialDrain, k.CPUPartialFree, want, k.CPUPartialSlabs)
		}
		if k.AllocFromPartial == 0 || k.siteAlloc.Acquired == 0 || k.sitePut.Acquired == 0 {
			t.Errorf("cpu_partial %d: alloc_from_partial %d, list_lock at ___slab_alloc %d, at __put_partials %d: want all above 0",
				partial, k.AllocFromPartial, k.siteAlloc.Acquired, k.sitePut.Acquired)
		}
		// A slab drained empty goes back to the page allocator while the
		// node keeps min_partial: what is left is what the slabs in use
		// and on the lists hold.
		if k.AllocSlab-k.FreeSlab != uint64(k.Slabs()) || k.Partial() > k.MinPartial+k.CPUPartialSlabs {
			t.Errorf("cpu_partial %d: %d new slabs, %d discarded, %d held, %d on the node's list (min_partial %d)",
				partial, k.AllocSlab, k.FreeSlab, k.Slabs(), k.Partial(), k.MinPartial)
		}
		if k.InUse() != 0 {
			t.Errorf("cpu_partial %d: %d objects in use after every free", partial, k.InUse())
		}
		drains[partial] = k.CPUPartialDrain
	}
	if drains[64] >= drains[-1]/2 {
		t.Errorf("cpu_partial 64 drains %d times, the default %d: want under half", drains[64], drains[-1])
	}
}

// The consumer's frees that empty a slab on its own partial list take
// list_lock and leave it there (__slab_free's speculative lock); a slab
// emptied on the node's list goes back to the page allocator while the
// node keeps min_partial others.
func TestEmptySlabs(t *testing.T) {
	e := engine(t, 1, 2)
	k := New(e, NewGeometry("x", 1152, 2, 0)) // cpu_partial 0: every slab straight to the node
	// 10 slabs' worth allocated, then all freed by CPU 1: the producer
	// is done, so none is frozen but its last.
	pipe(t, e, k, 1, 10*k.ObjsPerSlab, 10*k.ObjsPerSlab)
	if k.FreeSlab == 0 {
		t.Errorf("no empty slab discarded (partial %d, slabs %d)", k.Partial(), k.Slabs())
	}
	if k.Partial() < k.MinPartial-1 {
		t.Errorf("the node keeps %d partial slabs, want min_partial (%d) or near", k.Partial(), k.MinPartial)
	}
	if k.siteFree.Acquired == 0 {
		t.Error("no __slab_free took list_lock for a slab it emptied")
	}
}

// Senders on two sockets take their own node's partial slabs first.
func TestNodes(t *testing.T) {
	e := engine(t, 2, 1)
	k := New(e, NewGeometry("x", 1152, 2, -1))
	if len(k.nodes) != 2 || k.nodeOf[1] != 1 {
		t.Fatalf("%d nodes, CPU 1 on node %d; want 2 and 1", len(k.nodes), k.nodeOf[1])
	}
	pipe(t, e, k, 1, 5000, 300)
	// The consumer on node 1 drains node 0's slabs to node 0's list.
	if k.nodes[0].nrPartial == 0 && k.AllocFromPartial == 0 {
		t.Error("node 0's slabs never reached node 0's partial list")
	}
	if k.nodes[1].nrPartial != 0 {
		t.Errorf("node 1 holds %d partial slabs of a cache only node 0 allocated from", k.nodes[1].nrPartial)
	}
}

// kmem_cache_free_bulk groups an array's objects by slab as
// build_detached_freelist does: the last object's slab, and every other
// object of it until three of other slabs have been passed over; each
// group is one __slab_free from another CPU.
func TestFreeBulkGroupsBySlab(t *testing.T) {
	for _, tc := range []struct {
		name   string
		order  []int // slab of each object, by index into the slabs allocated
		groups uint64
	}{
		{"two runs", []int{0, 0, 0, 0, 1, 1, 1, 1}, 2},
		{"interleaved", []int{0, 1, 0, 1, 0, 1}, 2},
		{"past the lookahead", []int{0, 1, 2, 3, 4, 0}, 6},
		{"within it", []int{0, 1, 2, 0}, 3},
		{"one", []int{3}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, 1, 2)
			k := New(e, NewGeometry("x", 1152, 2, -1))
			const per = 28
			var ids []int32
			var slabs []int32
			e.CPUs[0].Start(0, func(c *sim.CPU) {
				for i := 0; i < 5*per; i++ {
					id := k.Alloc(c)
					if i%per == 0 {
						slabs = append(slabs, id)
					}
				}
			})
			e.Run(sim.Millisecond)
			for _, s := range tc.order {
				ids = append(ids, slabs[s])
			}
			inUse := k.InUse()
			before := k.FreeSlowpath + k.FreeFastpath
			e.CPUs[1].Start(e.Now(), func(c *sim.CPU) { k.FreeBulk(c, ids) })
			e.Run(2 * sim.Millisecond)
			if got := k.FreeSlowpath + k.FreeFastpath - before; got != tc.groups {
				t.Errorf("%d do_slab_free calls for %v; want %d", got, tc.order, tc.groups)
			}
			if got := k.InUse(); got != inUse-len(tc.order) {
				t.Errorf("%d objects in use after freeing %d of %d", got, len(tc.order), inUse)
			}
		})
	}
}
