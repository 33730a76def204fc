package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// A sender's small skb takes its head from skbuff_small_head on its CPU
// and gives it back where its completion frees it: on another CPU, a
// remote free into a slab that is not that CPU's, which puts the full
// slab on the freeing CPU's partial list and, every cpu_partial_slabs,
// all of them on the node's list under list_lock; the sender takes them
// back from there under the same lock. A larger head goes to its
// kmalloc cache; a head from the page allocator, and an skb the host
// did not give a head (a received frame's page fragment), none.
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
			if tc.cache == "" {
				if len(ks) != 0 {
					t.Fatalf("%d slab caches, want none", len(ks))
				}
				return
			}
			if len(ks) != 1 || ks[0].Name != tc.cache || ks[0].ObjectSize != tc.objectSize {
				t.Fatalf("caches %v, want one %s of %d-byte objects", ks, tc.cache, tc.objectSize)
			}
			k := ks[0]
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
		if len(h.n.sd[1].deferred.heads) != 0 {
			t.Errorf("CPU 1's own defer list holds %d: it allocated nothing", len(h.n.sd[1].deferred.heads))
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
			h.n.AllocHead(c, s)
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
