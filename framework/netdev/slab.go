package netdev

import (
	"fmt"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/slab"
)

// A sender's skb head comes from a SLUB cache (kmalloc_reserve): the
// small head cache for a small one (6.3 on), a kmalloc cache for the
// rest up to KMALLOC_MAX_CACHE_SIZE, whole pages beyond (not modelled:
// the page allocator's own locks are not). The host keeps each slot's
// cache and slab in the skb (skb.SKB.Head), packed as below, and
// gives the object back where skb_release_data frees the head.
const (
	headSlabBits = 26 // the slab id's bits in a head reference
	headSlabMask = 1<<headSlabBits - 1
	kmallocMax   = 8192 // KMALLOC_MAX_CACHE_SIZE
)

// skbuffObjSize is skbuff_head_cache's object: sizeof(struct sk_buff)
// rounded up to the cache line (kmem_cache_create_usercopy with
// SLAB_HWCACHE_ALIGN, skb_init).
const skbuffObjSize = (skb.SizeofSkBuff + skb.L1CacheBytes - 1) / skb.L1CacheBytes * skb.L1CacheBytes

// AllocSkbSlabs is __alloc_skb's two slab allocations on c for a sender's
// skb (sock_alloc_send_pskb): its struct sk_buff from skbuff_head_cache
// (kmem_cache_alloc_node), then its head from the cache its truesize
// says (kmalloc_reserve). The fast paths' cost is in skb_alloc, the slow
// paths' are the caches'. Call it once s.TrueSize is set.
func (n *Net) AllocSkbSlabs(c *sim.CPU, s *skb.SKB) {
	if n.skbuff == nil {
		// The cache's own cpu_partial (set_cpu_partial's): the seed's
		// echo 64 (slab_cpu_partial) was for skbuff_small_head.
		n.skbuff = slab.New(n.E, slab.NewGeometry("skbuff_head_cache", skbuffObjSize, len(n.E.CPUs), SlabCPUPartialDefault))
		n.slabs = append(n.slabs, n.skbuff)
	}
	s.Skbuff = n.allocSkbuff(c)
	i := n.headCache(s.TrueSize)
	if i < 0 {
		return
	}
	id := n.slabs[i].Alloc(c)
	if id > headSlabMask {
		sim.Panicf("slab %s: more than %d slabs", n.slabs[i].Name, headSlabMask)
	}
	s.Head = uint32(i+1)<<headSlabBits | uint32(id)
}

// allocSkbuff is kmem_cache_alloc of a struct sk_buff on c, by its slab
// record (slab id + 1); 0 while the model follows no skbuff_head_cache
// (no sender has made an skb).
func (n *Net) allocSkbuff(c *sim.CPU) uint32 {
	if n.skbuff == nil {
		return 0
	}
	return uint32(n.skbuff.Alloc(c)) + 1
}

// freeSkbuff is kfree_skbmem's kmem_cache_free of the sk_buff whose
// slab record is ref (0: none followed).
func (n *Net) freeSkbuff(c *sim.CPU, ref uint32) {
	if ref != 0 {
		n.skbuff.Free(c, int32(ref-1))
	}
}

// freeHead is skb_free_head of the head AllocSkbSlabs took (the skb's
// record of it, SKB.Head): back to its slab; 0, a head from no slab,
// frees nothing.
func (n *Net) freeHead(c *sim.CPU, ref uint32) {
	if ref != 0 {
		n.slabs[ref>>headSlabBits-1].Free(c, int32(ref&headSlabMask))
	}
}

// headCache is the index in n.slabs of the cache a head of this
// truesize comes from, made on first use; -1 for a head from the page
// allocator.
func (n *Net) headCache(truesize uint32) int {
	if truesize == n.headTruesize && truesize != 0 {
		return n.headIdx
	}
	size := int(truesize) - skb.DataAlign(skb.SizeofSkBuff)
	if size <= 0 || size > kmallocMax {
		return -1
	}
	name := kmallocName(size)
	if !n.Cfg.NoSmallHeadCache && size == skb.SmallHeadCacheSizeFrags(n.Cfg.MaxSkbFrags) {
		name = "skbuff_small_head"
	}
	i := -1
	for j, k := range n.slabs {
		if k.Name == name {
			i = j
		}
	}
	if i < 0 {
		n.slabs = append(n.slabs, slab.New(n.E, slab.NewGeometry(name, size, len(n.E.CPUs), n.Cfg.SlabCPUPartial)))
		i = len(n.slabs) - 1
	}
	n.headTruesize, n.headIdx = truesize, i
	return i
}

// kmallocName is the kmalloc cache's name for a size it serves exactly
// (kmalloc-96, kmalloc-512, kmalloc-1k, ...).
func kmallocName(size int) string {
	if size >= 1024 && size%1024 == 0 {
		return fmt.Sprintf("kmalloc-%dk", size/1024)
	}
	return fmt.Sprintf("kmalloc-%d", size)
}

// SlabCaches are the slab caches senders' skbs came from (their heads'
// and skbuff_head_cache), in the order first used.
func (n *Net) SlabCaches() []*slab.Cache { return n.slabs }

// skbDeferMax is net.core.skb_defer_max's default (sysctl_skb_defer_max).
const skbDeferMax = 64

// deferList is a CPU's softnet_data defer_list, defer_count and
// defer_lock: what other CPUs' TX completions handed back to it
// (Cfg.TxDeferFree). An entry is what the free still needs, the skb's
// slab records: the skb itself left the pool at its completion, its
// destructor run, its packet counted as sent.
type deferList struct {
	lock         sim.SpinLock
	skbs, spare  []deferredSkb
	ipiScheduled bool // defer_ipi_scheduled
}

// deferredSkb is a deferred skb's slab records: its head and its
// sk_buff.
type deferredSkb struct{ head, skbuff uint32 }

// skbAttemptDeferFree is napi_consume_skb's hand-back of an skb another
// CPU allocated (skb_attempt_defer_free, after skb_release_head_state):
// onto that CPU's defer list, an IPI raising its NET_RX_SOFTIRQ when the
// list reaches half of skb_defer_max; a full list, and no hand-back at
// all, frees it here (kfree_skb_napi_cache).
func (n *Net) skbAttemptDeferFree(c *sim.CPU, s *skb.SKB) {
	cpu := int(s.SenderCPU)
	d := &n.sd[cpu].deferred
	e := deferredSkb{s.Head, s.Skbuff}
	n.Pool.Put(s)
	if len(d.skbs) >= skbDeferMax { // READ_ONCE(sd->defer_count) >= defer_max: nodefer
		n.DeferFull++
		n.consumeDeferred(c, e)
		return
	}
	n.Deferred++
	d.lock.Lock(c, n.site.deferLock) // spin_lock_bh(&sd->defer_lock)
	kick := len(d.skbs) == skbDeferMax/2
	d.skbs = append(d.skbs, e)
	d.lock.Unlock(c)
	if kick && !d.ipiScheduled { // kick_defer_list_purge: one IPI in flight at most
		d.ipiScheduled = true
		n.DeferIPIs++
		n.E.RaiseIRQ(n.E.CPUs[cpu], c.Now(), n.deferKick)
	}
}

// deferKickIRQ is the defer list's IPI on its CPU (trigger_rx_softirq):
// NET_RX_SOFTIRQ raised, its net_rx_action flushes the list.
func (n *Net) deferKickIRQ(c *sim.CPU) {
	n.sd[c.ID].deferred.ipiScheduled = false
	c.RaiseSoftirq(sim.NetRxSoftirq)
}

// skbDeferFreeFlush is skb_defer_free_flush, at each turn of
// net_rx_action's loop: the CPU takes its defer list under defer_lock
// and frees each skb as napi_consume_skb(skb, 1) of its own.
func (n *Net) skbDeferFreeFlush(c *sim.CPU) {
	d := &n.sd[c.ID].deferred
	if len(d.skbs) == 0 { // READ_ONCE(sd->defer_list)
		return
	}
	d.lock.Lock(c, n.site.deferFlush)
	skbs := d.skbs
	d.skbs, d.spare = d.spare[:0], nil
	d.lock.Unlock(c)
	for _, e := range skbs {
		n.consumeDeferred(c, e)
	}
	d.spare = skbs[:0]
}

// consumeDeferred frees, on the CPU that allocated it, an skb whose
// destructor already ran (skb_defer_free_flush's napi_consume_skb, or
// kfree_skb_napi_cache): skb_release_data (its head back to its slab,
// if it has one) and napi_skb_cache_put of its sk_buff.
func (n *Net) consumeDeferred(c *sim.CPU, e deferredSkb) {
	c.Spend(n.releaseDataCost())
	n.freeHead(c, e.head)
	n.napiSkbCachePut(c, e.skbuff)
}
