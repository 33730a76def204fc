package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// A sender's small skb takes its sk_buff from skbuff_head_cache and its
// head from skbuff_small_head on its CPU, and gives them back where its
// completion frees it: the head on another CPU, a remote free into a
// slab that is not that CPU's, which puts the full slab on the freeing
// CPU's partial list and, every cpu_partial_slabs, all of them on the
// node's list under list_lock; the sender takes them back from there
// under the same lock. A larger head goes to its kmalloc cache; a head
// from the page allocator, and an skb the host did not give a head (a
// received frame's page fragment), none. The sk_buff goes to the
// completing CPU's napi_alloc_cache, and back to its slab by half a
// cache at a time, one __slab_free for each run of objects of one slab
// (kmem_cache_free_bulk).
func TestSenderHeadsFromSlab(t *testing.T) {
	for _, tc := range []struct {
		name       string
		frags      int
		l3len      int
		cache      string
		objectSize int
	}{
		{"120-byte UDP, 17 frags: skbuff_small_head", 17, 148, "skbuff_small_head", 704},
		{"120-byte UDP, 45 frags: skbuff_small_head", 45, 148, "skbuff_small_head", 1152},
		{"1472-byte UDP: kmalloc-2k", 17, 1500, "kmalloc-2k", 2048},
		{"64 KiB: pages, no cache", 17, 65535, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := profile(t, "6.19-rc1")
			cfg.MaxSkbFrags = tc.frags
			h := newHarness(t, cfg, 2, "test", 1, "pfifo")
			h.e.SetLockCPUs(nil)
			const n = 2000
			h.sendAndComplete(n, cfg.TruesizeUDP(tc.l3len))
			ks := h.n.SlabCaches()
			want := 2
			if tc.cache == "" {
				want = 1
			}
			if len(ks) != want || ks[0].Name != "skbuff_head_cache" || ks[0].ObjectSize != 256 {
				t.Fatalf("%d caches, the first %s of %d-byte objects; want %d, skbuff_head_cache of 256", len(ks), ks[0].Name, ks[0].ObjectSize, want)
			}
			sk := ks[0]
			cached := 0
			for cpu := range h.e.CPUs {
				cached += len(h.n.sd[cpu].skbCache)
			}
			freed := n - cached
			if sk.AllocFastpath+sk.AllocSlowpath != n || sk.InUse() != cached || cached == 0 {
				t.Errorf("sk_buffs: %d allocations, %d in use, %d in napi_alloc_cache; want %d allocations, as many in use as cached, some",
					sk.AllocFastpath+sk.AllocSlowpath, sk.InUse(), cached, n)
			}
			if calls := sk.FreeSlowpath + sk.FreeFastpath; calls == 0 || calls*4 > uint64(freed) {
				t.Errorf("%d do_slab_free calls for %d sk_buffs freed in bulk: want runs of a slab freed together", calls, freed)
			}
			if tc.cache == "" {
				return
			}
			k := ks[1]
			if k.Name != tc.cache || k.ObjectSize != tc.objectSize {
				t.Fatalf("head cache %s of %d-byte objects, want %s of %d", k.Name, k.ObjectSize, tc.cache, tc.objectSize)
			}
			if k.AllocFastpath+k.AllocSlowpath != n || k.FreeSlowpath+k.FreeFastpath != n || k.InUse() != 0 {
				t.Errorf("%d allocations, %d frees, %d in use; want %d, %d, 0", k.AllocFastpath+k.AllocSlowpath, k.FreeSlowpath+k.FreeFastpath, k.InUse(), n, n)
			}
			if k.FreeFastpath != 0 || k.CPUPartialFree == 0 || k.CPUPartialDrain == 0 || k.AllocFromPartial == 0 {
				t.Errorf("free_fastpath %d, cpu_partial_free %d, cpu_partial_drain %d, alloc_from_partial %d: want the remote cycle",
					k.FreeFastpath, k.CPUPartialFree, k.CPUPartialDrain, k.AllocFromPartial)
			}
			acquired := uint64(0)
			for _, l := range h.e.LockStats() {
				switch l.Name {
				case "___slab_alloc (list_lock)", "__put_partials (list_lock)":
					acquired += l.Acquired
				}
			}
			if acquired == 0 {
				t.Error("no list_lock acquisitions at ___slab_alloc or __put_partials")
			}
		})
	}
}

// With tx_defer_free the completing CPU runs the destructor and hands
// the skb back to the CPU that allocated it (skb_attempt_defer_free):
// an IPI at half of skb_defer_max raises that CPU's NET_RX_SOFTIRQ and
// its net_rx_action frees the heads into its own slabs, so the
// completing CPU takes the node's list_lock no more.
func TestTxDeferFree(t *testing.T) {
	listLock := map[bool]uint64{}
	for _, deferFree := range []bool{false, true} {
		cfg := profile(t, "6.19-rc1")
		cfg.TxDeferFree = deferFree
		h := newHarness(t, cfg, 2, "test", 1, "pfifo")
		h.e.SetLockCPUs([]int{1}) // the completing CPU's acquisitions only
		const n = 4000
		h.sendAndComplete(n, cfg.TruesizeUDP(148))
		k := h.n.SlabCaches()[0]
		for _, l := range h.e.LockStats() {
			switch l.Name {
			case "___slab_alloc (list_lock)", "__put_partials (list_lock)", "__slab_free (list_lock)":
				listLock[deferFree] += l.Acquired
			}
		}
		if h.n.TxPkts != n {
			t.Errorf("defer %v: %d sent, want %d", deferFree, h.n.TxPkts, n)
		}
		if !deferFree {
			if h.n.Deferred != 0 {
				t.Errorf("%d skbs handed back with tx_defer_free off", h.n.Deferred)
			}
			continue
		}
		// All but the last half list went back through CPU 0's flushes.
		if h.n.Deferred+h.n.DeferFull != n || h.n.DeferIPIs < n/skbDeferMax {
			t.Errorf("handed back %d, freed on a full list %d, IPIs %d; want %d in all and about one IPI every %d",
				h.n.Deferred, h.n.DeferFull, h.n.DeferIPIs, n, skbDeferMax/2)
		}
		if k.InUse() > skbDeferMax {
			t.Errorf("%d heads still in use: the defer list was not flushed", k.InUse())
		}
		if len(h.n.sd[1].deferred.skbs) != 0 {
			t.Errorf("CPU 1's own defer list holds %d: it allocated nothing", len(h.n.sd[1].deferred.skbs))
		}
	}
	if listLock[true] != 0 || listLock[false] == 0 {
		t.Errorf("the completing CPU took list_lock %d times with the hand-back, %d without: want none, and some", listLock[true], listLock[false])
	}
}

// sendAndComplete has CPU 0 build n skbs of this truesize, one every
// 200 ns, their heads from the slab, and CPU 1 complete each 500 skbs
// later (napi_consume_skb), then runs the host.
func (h *harness) sendAndComplete(n int, truesize uint32) {
	var sent []*skb.SKB
	h.on(0, 0, func(c *sim.CPU) {
		for i := range n {
			s := h.skb(c, i)
			s.TrueSize = truesize
			h.n.AllocSkbSlabs(c, s)
			h.n.unoffered-- // handed on, as DevQueueXmit counts it
			h.n.Offered++
			sent = append(sent, s)
			c.Spend(200)
			c.Sync()
		}
	})
	h.on(1, 100*sim.Microsecond, func(c *sim.CPU) {
		for i := 0; i < n; {
			c.Sync()
			if i >= len(sent) {
				c.Spend(200)
				continue
			}
			h.n.napiConsumeSkb(c, sent[i])
			i++
			c.Spend(200)
		}
	})
	h.run(sim.Second)
}

// A dropped skb's sk_buff goes back to skbuff_head_cache on the CPU
// that frees it: alone (kfree_skbmem), or with the rest of a to_free
// list in kfree_skb_list_reason's arrays of 16, one __slab_free for a
// run of one slab. Either way none stays out of the slab.
func TestDroppedSkbuffsBackToTheirSlab(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		cfg := profile(t, "6.19-rc1")
		cfg.BulkFreeList = bulk
		h := newHarness(t, cfg, 2, "test", 1, "pfifo")
		h.e.SetLockCPUs(nil)
		const n = 640
		var l skb.List
		h.on(0, 0, func(c *sim.CPU) {
			for i := range n {
				s := h.skb(c, i)
				s.TrueSize = cfg.TruesizeUDP(148)
				h.n.AllocSkbSlabs(c, s)
				h.n.unoffered-- // handed on, as DevQueueXmit counts it
				h.n.Offered++
				h.n.Pool.SetReason(s, skb.DropQdiscDrop)
				l.Push(s)
				c.Spend(100)
				c.Sync()
			}
		})
		h.on(1, 200*sim.Microsecond, func(c *sim.CPU) { h.n.kfreeSkbList(c, &l) })
		h.run(sim.Second)
		k := h.n.SlabCaches()[0]
		calls := k.FreeSlowpath + k.FreeFastpath
		if k.Name != "skbuff_head_cache" || k.InUse() != 0 || calls == 0 {
			t.Fatalf("bulk %v: %s holds %d in use after every drop was freed (%d do_slab_free calls)", bulk, k.Name, k.InUse(), calls)
		}
		if bulk && calls*4 > n || !bulk && calls != n {
			t.Errorf("bulk %v: %d do_slab_free calls for %d sk_buffs", bulk, calls, n)
		}
		if h.n.Drops[skb.DropQdiscDrop] != n {
			t.Errorf("bulk %v: %d drops counted, want %d", bulk, h.n.Drops[skb.DropQdiscDrop], n)
		}
	}
}
