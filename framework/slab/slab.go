// Package slab models SLUB's slow paths for one kmem_cache as mm/slub.c
// (6.12, CONFIG_SLUB_CPU_PARTIAL) has them: each CPU allocates from its
// own slab (c->slab) and frees into it for nothing; a free into any
// other slab is __slab_free's cmpxchg on that slab, and a slab that was
// full goes onto the freeing CPU's partial list (put_cpu_partial); a
// CPU whose partial list holds cpu_partial_slabs slabs moves them all to
// the node's partial list under the node's list_lock (__put_partials);
// a CPU whose slab runs out takes its own partial slabs first, then the
// node's under list_lock (get_partial_node), then a new slab from the
// page allocator. Senders that allocate skb heads on their CPUs while
// TX completions free them on the interrupt CPUs make the node's
// list_lock a shared lock: the ___slab_alloc rows of the llist thread's
// perf lock tables (E1), which its tester cut down by raising
// skbuff_small_head's cpu_partial to 64.
//
// Objects are counted, not tracked: a slab knows how many of its
// objects are in use and how many are on its own freelist, a CPU how
// many are on its c->freelist. A caller keeps the slab id Alloc
// returned and hands it to Free.
//
// Simplified: get_any_partial always looks at the other nodes when its
// own has no partial slab (the kernel skips them when get_cycles() %
// 1024 exceeds remote_node_defrag_ratio, about 2% of the time); the
// cache is never shrunk; a node is a socket.
package slab

import (
	"fmt"

	"github.com/txlab/txlab/framework/sim"
)

// Stats are the cache's CONFIG_SLUB_STATS counters
// (/sys/kernel/slab/NAME/alloc_fastpath and the rest), over the whole
// run.
type Stats struct {
	AllocFastpath    uint64 // from c->freelist
	AllocSlowpath    uint64 // ___slab_alloc
	AllocRefill      uint64 // c->slab's own freelist, refilled by remote frees
	CPUPartialAlloc  uint64 // a slab from this CPU's partial list
	AllocFromPartial uint64 // a slab from a node's partial list (list_lock)
	CPUPartialNode   uint64 // more node slabs onto this CPU's partial list
	AllocSlab        uint64 // a new slab from the page allocator
	FreeFastpath     uint64 // into this CPU's c->slab
	FreeSlowpath     uint64 // __slab_free
	FreeFrozen       uint64 // into another CPU's c->slab
	CPUPartialFree   uint64 // a full slab onto this CPU's partial list
	CPUPartialDrain  uint64 // a full partial list to the node (list_lock)
	FreeAddPartial   uint64 // slabs added to a node's partial list
	FreeSlab         uint64 // empty slabs back to the page allocator
}

// Map is the counters by their sysfs names.
func (s Stats) Map() map[string]uint64 {
	return map[string]uint64{
		"alloc_fastpath": s.AllocFastpath, "alloc_slowpath": s.AllocSlowpath, "alloc_refill": s.AllocRefill,
		"cpu_partial_alloc": s.CPUPartialAlloc, "alloc_from_partial": s.AllocFromPartial, "cpu_partial_node": s.CPUPartialNode,
		"alloc_slab": s.AllocSlab, "free_fastpath": s.FreeFastpath, "free_slowpath": s.FreeSlowpath, "free_frozen": s.FreeFrozen,
		"cpu_partial_free": s.CPUPartialFree, "cpu_partial_drain": s.CPUPartialDrain, "free_add_partial": s.FreeAddPartial,
		"free_slab": s.FreeSlab,
	}
}

// Geometry is a cache's shape, as kmem_cache_create and calculate_order
// make it and /sys/kernel/slab/NAME shows it.
type Geometry struct {
	Name            string
	ObjectSize      int
	Order           int
	ObjsPerSlab     int
	CPUPartial      int // objects, as sysfs takes it
	CPUPartialSlabs int // what put_cpu_partial compares
	MinPartial      int
}

const (
	pageSize     = 4096
	maxOrder     = 3  // slub_max_order: PAGE_ALLOC_COSTLY_ORDER
	minPartial   = 5  // MIN_PARTIAL
	maxPartial   = 10 // MAX_PARTIAL
	fractionMin  = 4  // calc_slab_order tries waste fractions 16, 8, 4
	fractionFrom = 16
)

// NewGeometry is the shape SLUB gives a cache of size-byte objects on a
// host with ncpus CPUs: calculate_order (min objects 4 x (fls(ncpus) +
// 1), capped by what an order-3 slab holds, the smallest order whose
// waste is under a 16th, then an 8th, then a 4th), set_min_partial
// (ilog2(size) / 2 within 5..10) and set_cpu_partial's default by
// object size. cpuPartial < 0 takes that default; otherwise it is the
// sysfs cpu_partial in objects.
func NewGeometry(name string, size, ncpus, cpuPartial int) Geometry {
	g := Geometry{Name: name, ObjectSize: size}
	minObjects := 4 * (fls(ncpus) + 1)
	minObjects = min(minObjects, (pageSize<<maxOrder)/size)
	g.Order = maxOrder
	for frac := fractionFrom; frac >= fractionMin; frac /= 2 {
		if o, ok := slabOrder(size, minObjects, frac); ok {
			g.Order = o
			break
		}
	}
	g.ObjsPerSlab = (pageSize << g.Order) / size
	g.MinPartial = min(maxPartial, max(minPartial, ilog2(size)/2))
	if cpuPartial < 0 {
		switch {
		case size >= pageSize:
			cpuPartial = 6
		case size >= 1024:
			cpuPartial = 24
		case size >= 256:
			cpuPartial = 52
		default:
			cpuPartial = 120
		}
	}
	g.CPUPartial = cpuPartial
	g.CPUPartialSlabs = (cpuPartial*2 + g.ObjsPerSlab - 1) / g.ObjsPerSlab // slub_set_cpu_partial
	return g
}

// slabOrder is calc_slab_order: the smallest order holding minObjects
// whose leftover is at most a frac-th of the slab.
func slabOrder(size, minObjects, frac int) (int, bool) {
	for o := 0; o <= maxOrder; o++ {
		slab := pageSize << o
		if slab/size < minObjects {
			continue
		}
		if slab%size <= slab/frac {
			return o, true
		}
	}
	return 0, false
}

func fls(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

func ilog2(n int) int { return fls(n) - 1 }

// slabT is one slab (struct slab): its counters, its lists and the line
// its freelist and counters share, which every CPU that frees into it
// or takes it writes.
type slabT struct {
	inuse, free int32 // objects handed out (c->freelist's included); on the slab's own freelist
	next, prev  int32 // list links: a CPU's partial list (next) or the node's (both); -1 ends
	node        int16
	frozen      bool // some CPU's c->slab
	onNode      bool // on its node's partial list (slab_test_node_partial)
	line        sim.CacheLine
}

// cpuT is a CPU's kmem_cache_cpu.
type cpuT struct {
	slab         int32 // c->slab, -1 none
	freelist     int32 // objects on c->freelist
	partial      int32 // head of the CPU's partial list, -1 none
	partialSlabs int32 // slabs on it
}

// nodeT is a node's kmem_cache_node.
type nodeT struct {
	listLock   sim.SpinLock
	head, tail int32 // the partial list, -1 empty
	nrPartial  int32
}

// slabChunk is how many slabs Cache allocates at a time.
const slabChunk = 256

// slab is slab id's record.
func (k *Cache) slab(id int32) *slabT { return &k.slabs[id/slabChunk][id%slabChunk] }

// Cache is one kmem_cache on a simulated host.
type Cache struct {
	Geometry
	Stats
	// slabs holds the slabs in chunks of slabChunk, so that one held
	// across a sync point stays where it is while another CPU adds
	// slabs, and a slab costs its own size of heap and no more.
	slabs   [][]slabT
	nslabs  int32
	freeIDs []int32
	cpus    []cpuT
	nodes   []nodeT
	nodeOf  []int16
	costs   *sim.Costs
	// the perf lock call sites of list_lock
	siteAlloc, sitePut, siteFree *sim.LockStat
}

// New builds cache g on e's CPUs, one node a socket.
func New(e *sim.Engine, g Geometry) *Cache {
	k := &Cache{Geometry: g, costs: e.Costs, cpus: make([]cpuT, len(e.CPUs)), nodeOf: make([]int16, len(e.CPUs))}
	nodes := 0
	for i, c := range e.CPUs {
		k.cpus[i] = cpuT{slab: -1, partial: -1}
		k.nodeOf[i] = int16(c.Socket)
		nodes = max(nodes, c.Socket+1)
	}
	k.nodes = make([]nodeT, nodes)
	for i := range k.nodes {
		k.nodes[i] = nodeT{listLock: sim.SpinLock{Name: fmt.Sprintf("%s node%d list_lock", g.Name, i)}, head: -1, tail: -1}
	}
	k.siteAlloc = e.LockSite("___slab_alloc (list_lock)")
	k.sitePut = e.LockSite("__put_partials (list_lock)")
	k.siteFree = e.LockSite("__slab_free (list_lock)")
	return k
}

// Alloc is slab_alloc_node on c: an object from c->freelist, else
// ___slab_alloc. It returns the object's slab.
func (k *Cache) Alloc(c *sim.CPU) int32 {
	cs := &k.cpus[c.ID]
	if cs.freelist > 0 {
		cs.freelist--
		k.AllocFastpath++
		return cs.slab
	}
	c.LocalIrqSave()
	id := k.slabAlloc(c, cs)
	c.LocalIrqRestore()
	return id
}

// slabAlloc is ___slab_alloc with an empty c->freelist, interrupts off
// throughout (the kernel turns them off for its local_lock and for the
// list_lock, and on between: the model keeps a nested free from an
// interrupt out of the CPU's state for the whole of it).
func (k *Cache) slabAlloc(c *sim.CPU, cs *cpuT) int32 {
	k.AllocSlowpath++
	c.Spend(k.costs.SlabSlowpath)
	if cs.slab >= 0 {
		// get_freelist: what remote frees left on c->slab's own freelist
		if k.takeFreelist(c, cs, cs.slab) {
			k.AllocRefill++
			return cs.slab
		}
		k.slab(cs.slab).frozen = false // full, on no list (DEACTIVATE_BYPASS)
		cs.slab = -1
	}
	if id := cs.partial; id >= 0 { // new_slab: this CPU's partial slabs
		s := k.slab(id)
		cs.partial, s.next = s.next, -1
		cs.partialSlabs--
		cs.slab = id
		k.takeFreelist(c, cs, id)
		k.CPUPartialAlloc++
		return id
	}
	// get_partial: this node, then the others (get_any_partial)
	local := k.nodeOf[c.ID]
	if id := k.getPartialNode(c, cs, local); id >= 0 {
		return id
	}
	for nd := range k.nodes {
		if int16(nd) != local && k.nodes[nd].nrPartial > int32(k.MinPartial) {
			if id := k.getPartialNode(c, cs, int16(nd)); id >= 0 {
				return id
			}
		}
	}
	return k.newSlab(c, cs, local)
}

// takeFreelist is get_freelist / freeze_slab: the slab's own freelist
// becomes c->freelist, less the object taken now, and the slab is
// frozen; false if it had none.
func (k *Cache) takeFreelist(c *sim.CPU, cs *cpuT, id int32) bool {
	s := k.slab(id)
	s.line.Atomic(c) // the cmpxchg on freelist and counters
	if s.free == 0 {
		return false
	}
	cs.freelist = s.free - 1
	s.inuse += s.free
	s.free = 0
	s.frozen = true
	return true
}

// getPartialNode is get_partial_node: under the node's list_lock, the
// first partial slab becomes c->slab and up to half the partial list's
// worth more go to the CPU's partial list. -1 if the node has none.
func (k *Cache) getPartialNode(c *sim.CPU, cs *cpuT, nd int16) int32 {
	n := &k.nodes[nd]
	if n.nrPartial == 0 { // the racy check before the lock
		return -1
	}
	n.listLock.Lock(c, k.siteAlloc)
	first, got := int32(-1), int32(0)
	for id := n.head; id >= 0; {
		next := k.slab(id).next
		k.removePartial(c, n, id)
		if first < 0 {
			first = id
			k.AllocFromPartial++
			if k.CPUPartialSlabs == 0 {
				break
			}
		} else {
			k.pushCPUPartial(cs, id) // put_cpu_partial(s, slab, 0): never drains
			k.CPUPartialNode++
			if got++; got > int32(k.CPUPartialSlabs/2) {
				break
			}
		}
		id = next
	}
	n.listLock.Unlock(c)
	if first >= 0 {
		cs.slab = first
		k.takeFreelist(c, cs, first)
	}
	return first
}

// newSlab is new_slab on c's node: a slab from the page allocator, all
// its objects c's.
func (k *Cache) newSlab(c *sim.CPU, cs *cpuT, nd int16) int32 {
	c.Spend(k.costs.SlabNew)
	var id int32
	if n := len(k.freeIDs); n > 0 {
		id = k.freeIDs[n-1]
		k.freeIDs = k.freeIDs[:n-1]
	} else {
		id = k.nslabs
		if id%slabChunk == 0 {
			k.slabs = append(k.slabs, make([]slabT, slabChunk))
		}
		k.nslabs++
	}
	s := k.slab(id)
	*s = slabT{inuse: int32(k.ObjsPerSlab), next: -1, prev: -1, node: nd, frozen: true}
	s.line.Write(c)
	cs.slab, cs.freelist = id, int32(k.ObjsPerSlab)-1
	k.AllocSlab++
	return id
}

// Free is slab_free on c of an object of slab id: into c->freelist if
// id is c->slab, else __slab_free.
func (k *Cache) Free(c *sim.CPU, id int32) { k.doSlabFree(c, id, 1) }

// FreeBulk is kmem_cache_free_bulk on c of one object of each slab in
// ids (used as scratch): build_detached_freelist takes the last
// object's slab and gathers the others of that slab, looking past at
// most three objects of other slabs before it stops, and each group is
// one do_slab_free, so one __slab_free (one cmpxchg, one list_lock at
// most) for objects of one slab freed together.
func (k *Cache) FreeBulk(c *sim.CPU, ids []int32) {
	for size := len(ids); size > 0; {
		size--
		id, cnt := ids[size], int32(1)
		same := size
		for lookahead := 3; size > 0; {
			size--
			if ids[size] == id {
				cnt++
				same--
				ids[size], ids[same] = ids[same], ids[size]
				continue
			}
			if lookahead--; lookahead == 0 {
				break
			}
		}
		k.doSlabFree(c, id, cnt)
		size = same
	}
}

// doSlabFree is do_slab_free of cnt objects of slab id: onto
// c->freelist if id is c->slab, else __slab_free.
func (k *Cache) doSlabFree(c *sim.CPU, id, cnt int32) {
	cs := &k.cpus[c.ID]
	if id == cs.slab {
		cs.freelist += cnt
		k.FreeFastpath++
		return
	}
	c.LocalIrqSave() // as in slabAlloc
	k.slabFree(c, cs, id, cnt)
	c.LocalIrqRestore()
}

// slabFree is __slab_free of cnt objects of slab id. It reads the
// slab's freelist and counters, and for a free that may change the
// node's list (the last objects of a slab no CPU holds, on a partial
// list) takes list_lock before its cmpxchg ("Speculatively acquire the
// list_lock"), so the cmpxchg is inside the hold; every other free is
// the cmpxchg alone.
func (k *Cache) slabFree(c *sim.CPU, cs *cpuT, id, cnt int32) {
	k.FreeSlowpath++
	c.Spend(k.costs.SlabSlowpath)
	s := k.slab(id)
	if !emptiesListed(s, cnt) {
		s.line.Atomic(c) // the cmpxchg on freelist and counters
		k.applyFree(c, cs, id, cnt)
		return
	}
	s.line.Write(c) // the reads of freelist and counters
	n := &k.nodes[s.node]
	n.listLock.Lock(c, k.siteFree)
	s.line.AtomicNoSync(c)
	if !emptiesListed(s, cnt) {
		// The slab changed while this CPU waited (a CPU froze it, or
		// another free came first): the cmpxchg failed, and the retry
		// drops the lock and frees as the slab now is.
		n.listLock.Unlock(c)
		k.applyFree(c, cs, id, cnt)
		return
	}
	s.inuse -= cnt
	s.free += cnt
	discard := s.onNode && n.nrPartial >= int32(k.MinPartial)
	if discard {
		k.removePartial(c, n, id)
	}
	n.listLock.Unlock(c)
	if discard {
		k.discard(c, id)
	}
}

// emptiesListed says whether freeing cnt objects empties slab s while
// it is on a partial list (a node's or a CPU's) rather than a CPU's
// c->slab: the free that takes list_lock.
func emptiesListed(s *slabT, cnt int32) bool {
	return !s.frozen && s.free > 0 && s.inuse == cnt
}

// applyFree is the rest of a __slab_free that took no list_lock: a
// frozen slab's objects just go back; a full slab goes onto this CPU's
// partial list.
func (k *Cache) applyFree(c *sim.CPU, cs *cpuT, id, cnt int32) {
	s := k.slab(id)
	prior := s.free > 0
	s.inuse -= cnt
	s.free += cnt
	switch {
	case s.frozen:
		k.FreeFrozen++
	case !prior:
		k.putCPUPartial(c, cs, id)
		k.CPUPartialFree++
	}
}

// putCPUPartial is put_cpu_partial(s, slab, 1): the slab onto c's
// partial list; a list already holding cpu_partial_slabs goes to the
// nodes first (__put_partials).
func (k *Cache) putCPUPartial(c *sim.CPU, cs *cpuT, id int32) {
	var old int32 = -1
	if cs.partial >= 0 && cs.partialSlabs >= int32(k.CPUPartialSlabs) {
		old = cs.partial
		cs.partial, cs.partialSlabs = -1, 0
	}
	k.pushCPUPartial(cs, id)
	if old >= 0 {
		k.putPartials(c, old)
		k.CPUPartialDrain++
	}
}

func (k *Cache) pushCPUPartial(cs *cpuT, id int32) {
	k.slab(id).next = cs.partial
	cs.partial = id
	cs.partialSlabs++
}

// putPartials is __put_partials: each slab of the list to its node's
// partial list under that node's list_lock (held across slabs of one
// node), an empty one back to the page allocator while the node keeps
// min_partial others.
func (k *Cache) putPartials(c *sim.CPU, head int32) {
	var n *nodeT
	var discard int32 = -1
	for id := head; id >= 0; {
		s := k.slab(id)
		next := s.next
		if n2 := &k.nodes[s.node]; n2 != n {
			if n != nil {
				n.listLock.Unlock(c)
			}
			n = n2
			n.listLock.Lock(c, k.sitePut)
		}
		if s.inuse == 0 && n.nrPartial >= int32(k.MinPartial) {
			s.next = discard
			discard = id
		} else {
			k.addPartial(c, n, id)
			k.FreeAddPartial++
		}
		id = next
	}
	if n != nil {
		n.listLock.Unlock(c)
	}
	for id := discard; id >= 0; {
		next := k.slab(id).next
		k.discard(c, id)
		id = next
	}
}

// addPartial is add_partial(n, slab, DEACTIVATE_TO_TAIL) under the
// node's list_lock: list_add_tail writes the slab's slab_list, the old
// tail's next (another slab's struct slab, last written by whichever CPU
// freed into it) and the list head's prev, and nr_partial++ the node's
// line, which holds list_lock too. The stores go out together.
func (k *Cache) addPartial(c *sim.CPU, n *nodeT, id int32) {
	s := k.slab(id)
	var tail *sim.CacheLine
	if n.tail >= 0 {
		tail = &k.slab(n.tail).line
	}
	c.Sync() // other CPUs' frees write the tail, waiters the node's line
	sim.WriteOverlapped(c, &s.line, tail, n.listLock.Line())
	c.Spend(k.costs.SlabListOp)
	s.next, s.prev, s.onNode = -1, n.tail, true
	if n.tail >= 0 {
		k.slab(n.tail).next = id
	} else {
		n.head = id
	}
	n.tail = id
	n.nrPartial++
}

// removePartial is remove_partial under the node's list_lock: list_del
// reads the slab's own slab_list, then writes its neighbours' (two other
// slabs, or the list head in the node's line at either end) and
// nr_partial-- the node's line, together.
func (k *Cache) removePartial(c *sim.CPU, n *nodeT, id int32) {
	s := k.slab(id)
	s.line.Write(c) // a sync point: other CPUs' frees write the neighbours, waiters the node's line
	var prev, next *sim.CacheLine
	if s.prev >= 0 {
		prev = &k.slab(s.prev).line
	}
	if s.next >= 0 {
		next = &k.slab(s.next).line
	}
	sim.WriteOverlapped(c, prev, next, n.listLock.Line())
	c.Spend(k.costs.SlabListOp)
	if s.prev >= 0 {
		k.slab(s.prev).next = s.next
	} else {
		n.head = s.next
	}
	if s.next >= 0 {
		k.slab(s.next).prev = s.prev
	} else {
		n.tail = s.prev
	}
	s.next, s.prev, s.onNode = -1, -1, false
	n.nrPartial--
}

// discard is discard_slab: the empty slab's pages back to the page
// allocator.
func (k *Cache) discard(c *sim.CPU, id int32) {
	c.Spend(k.costs.SlabDiscard)
	*k.slab(id) = slabT{next: -1, prev: -1}
	k.freeIDs = append(k.freeIDs, id)
	k.FreeSlab++
}

// Slabs is how many slabs the cache holds now (/sys/kernel/slab/NAME/slabs).
func (k *Cache) Slabs() int { return int(k.nslabs) - len(k.freeIDs) }

// Partial is how many slabs are on the nodes' partial lists now.
func (k *Cache) Partial() int {
	t := 0
	for i := range k.nodes {
		t += int(k.nodes[i].nrPartial)
	}
	return t
}

// InUse is how many objects are allocated now (not on any freelist).
func (k *Cache) InUse() int {
	t := 0
	for id := range k.nslabs {
		t += int(k.slab(id).inuse)
	}
	for i := range k.cpus {
		t -= int(k.cpus[i].freelist)
	}
	return t
}
