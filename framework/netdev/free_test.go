package netdev

import (
	"fmt"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// fcloneSock owns TCP-like skbs: fclones, whose destructor it counts.
type fcloneSock struct{ released int }

func (o *fcloneSock) Release(*sim.CPU, *skb.SKB) { o.released++ }
func (o *fcloneSock) FClones() bool              { return true }

// spentOn runs fn on CPU cpu of h and returns the CPU time it spent.
func spentOn(t *testing.T, h *harness, cpu int, fn func(c *sim.CPU)) int64 {
	t.Helper()
	var spent int64
	h.on(cpu, sim.Microsecond, func(c *sim.CPU) {
		t0 := c.Now()
		fn(c)
		spent = int64(c.Now() - t0)
	})
	if err := h.e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	return spent
}

// A NIC's TX completion is napi_consume_skb with the poll's budget
// (net/core/skbuff.c): skb_release_all, then napi_skb_cache_put, which
// keeps the sk_buff in the CPU's napi_alloc_cache and, when the 64th
// fills it, gives half back with one kmem_cache_free_bulk; an fclone
// (TCP's clone) goes to __kfree_skb, which only drops its references
// while the original waits for its ACK. veth's peer receive ends in a
// plain free. The model priced every one as a whole kfree_skb.
func TestConsumePaths(t *testing.T) {
	const k = 64
	c0 := sim.DefaultCosts()
	release := c0.KfreeSkb - c0.KfreeSkbmem
	for _, tc := range []struct {
		name     string
		wire     bool
		fclone   bool
		want     int64
		wantPuts uint64
		flushes  uint64
	}{
		{"NIC: napi_consume_skb into the cache", true, false, k*(release+c0.SkbCachePut) + napiSkbCacheHalf*c0.SlabBulk, k, 1},
		{"NIC: TCP's clone, __kfree_skb of an fclone", true, true, k * (c0.DestructorRetpoline + 2*c0.AtomicOp), 0, 0},
		{"veth: the peer's plain free", false, false, k * c0.KfreeSkb, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "pfifo")
			h.dev.Info.Wire = tc.wire
			o := &fcloneSock{}
			owner := h.n.Pool.AddOwner(o)
			spent := spentOn(t, h, 1, func(c *sim.CPU) {
				x := h.dev.ctxFor(c)
				for i := 0; i < k; i++ {
					s := h.skb(c, i)
					if tc.fclone {
						s.Owner = owner
					}
					s.Holder = driverHolder
					x.Consume(s.Handle)
				}
			})
			if spent != tc.want {
				t.Errorf("%d completions spent %d ns, want %d", k, spent, tc.want)
			}
			st := h.n.SkbCache(1)
			if st.Puts != tc.wantPuts || st.Flushes != tc.flushes {
				t.Errorf("napi_alloc_cache: %+v, want %d puts and %d flushes", st, tc.wantPuts, tc.flushes)
			}
			if tc.fclone && o.released != k {
				t.Errorf("tcp_wfree ran %d times for %d clones", o.released, k)
			}
			if h.n.TxPkts != k {
				t.Errorf("%d transmitted, want %d", h.n.TxPkts, k)
			}
		})
	}
}

// __dev_xmit_skb frees its to_free list after the root lock. 6.3 to
// 6.18 do it with kfree_skb_list_reason: skb_release_all of each, the
// sk_buffs into an array of KFREE_SKB_BULK_SIZE (16) given back by one
// kmem_cache_free_bulk when full and once at the end; an fclone is
// freed alone. net-next's tcf_kfree_skb_list frees each with
// kfree_skb_reason, each with its own reason; kfree_skb_list_reason
// gets one reason for the list, the head's (tcf_get_drop_reason), and
// traces every skb with it. The model freed every list one kfree_skb at
// a time, and then counted each bulk-freed skb with its own reason.
func TestKfreeSkbListBulk(t *testing.T) {
	const k = 20 // one full array of 16 and a flush of 4 at the end
	c0 := sim.DefaultCosts()
	release := c0.KfreeSkb - c0.KfreeSkbmem
	for _, tc := range []struct {
		name    string
		profile string
		fclone  bool
		want    int64
		// qdiscDrop: the drops counted QDISC_DROP, the rest FQ_FLOW_LIMIT.
		qdiscDrop uint64
	}{
		// kfree_skb_list_reason: one reason for all, the head's
		// (tcf_get_drop_reason(to_free)): the skb pushed last, an
		// FQ_FLOW_LIMIT here. tcf_kfree_skb_list: each its own.
		{"6.18: kfree_skb_list_reason", "6.18", false, k*release + 16*c0.SlabBulk + 4*c0.SlabBulk, 0},
		{"6.18: fclones freed alone", "6.18", true, k * (c0.DestructorRetpoline + 2*c0.AtomicOp), 0},
		{"net-next: tcf_kfree_skb_list", "net-next", false, k * c0.KfreeSkb, k / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, tc.profile), 2, "test", 1, "pfifo")
			o := &fcloneSock{}
			owner := h.n.Pool.AddOwner(o)
			var l skb.List
			h.on(0, 0, func(c *sim.CPU) {
				for i := 0; i < k; i++ {
					s := h.skb(c, i)
					if tc.fclone {
						s.Owner = owner
					}
					r := skb.DropQdiscDrop
					if i%2 == 1 {
						r = skb.DropFQFlowLimit
					}
					h.n.Pool.SetReason(s, r)
					l.Push(s)
				}
			})
			spent := spentOn(t, h, 1, func(c *sim.CPU) { h.n.kfreeSkbList(c, &l) })
			if spent != tc.want {
				t.Errorf("a to_free list of %d spent %d ns, want %d", k, spent, tc.want)
			}
			if a, b := h.n.Drops[skb.DropQdiscDrop], h.n.Drops[skb.DropFQFlowLimit]; a != tc.qdiscDrop || b != k-tc.qdiscDrop {
				t.Errorf("drops by reason: QDISC_DROP %d, FQ_FLOW_LIMIT %d; want %d and %d", a, b, tc.qdiscDrop, k-tc.qdiscDrop)
			}
			if h.n.Pool.Live() != 0 {
				t.Errorf("%d skbs still live", h.n.Pool.Live())
			}
		})
	}
}

// Forwarding: the RX clean's napi_build_skb takes each sk_buff from the
// CPU's napi_alloc_cache, refilled 16 at a time by kmem_cache_alloc_bulk
// when empty, and the TX completions on that CPU put them back: once
// the path is full, the CPU recycles its own sk_buffs and the slab is
// left alone. The cache's count is what the refills and puts brought in
// less what the gets and flushes took out, never below 0 or at 64.
func TestForwardRecyclesSkbCache(t *testing.T) {
	n, _ := rxHarness(t, profile(t, "6.18"), sim.DefaultCosts(), "ice", []string{"rx", "256"}, 2, 2, nil, 2*sim.Microsecond, "mq", "pfifo")
	if err := n.E.Run(5 * sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	var gets, puts uint64
	for cpu := range n.E.CPUs {
		st := n.SkbCache(cpu)
		gets += st.Gets
		puts += st.Puts
		count := int64(st.Refills*napiSkbCacheBulk+st.Puts) - int64(st.Gets+st.Flushes*napiSkbCacheHalf)
		if count != int64(len(n.sd[cpu].skbCache)) || count < 0 || count >= napiSkbCacheSize {
			t.Errorf("cpu %d: %+v leaves %d in the cache, which holds %d", cpu, st, count, len(n.sd[cpu].skbCache))
		}
		if st.Refills*napiSkbCacheBulk > st.Gets/20 {
			t.Errorf("cpu %d: %d refills for %d sk_buffs built, %d put back: the completions do not feed the RX side", cpu, st.Refills, st.Gets, st.Puts)
		}
		if st.Gets > 0 && st.Refills == 0 {
			t.Errorf("cpu %d built %d sk_buffs from an empty cache without a refill", cpu, st.Gets)
		}
	}
	if gets < 4000 || puts+uint64(n.InFlightPackets()) < gets {
		t.Errorf("%d sk_buffs built, %d put back, %d in flight", gets, puts, n.InFlightPackets())
	}
}

// A NIC's frames for the host's sockets are napi_build_skb'd in the RX
// poll too: each takes its sk_buff from the RX CPU's napi_alloc_cache,
// refilled 16 at a time. A segment whose reader (not modelled) consumes
// it comes back to that CPU by skb_attempt_defer_free and ends there in
// skb_defer_free_flush's napi_consume_skb: skb_release_all and a cache
// put, which feeds the next gets. The model's local receive touched no
// cache.
func TestLocalReceiveSkbCache(t *testing.T) {
	const k = 20
	n, d := steerDev(t, XPSIRQ, []int{3})
	d.Info.Wire = true
	key := skb.FlowKeys{Src: 0x0a010001, Dst: 0x0a000001, SrcPort: 5201, DstPort: 40000, Proto: 6}
	cpu := n.RxCPU(d, key)
	var spent int64
	n.E.At(1000, func() {
		for i := 0; i < k; i++ {
			n.Deliver(d, n.E.Now(), key, 0, func(c *sim.CPU) {
				t0 := c.Now()
				n.DeferFreeRx(c)
				spent += int64(c.Now() - t0)
			})
		}
	})
	if err := n.E.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	c0 := sim.DefaultCosts()
	st := n.SkbCache(cpu)
	if st.Gets != k || st.Puts != k || st.Refills != 1 {
		t.Errorf("CPU %d's napi_alloc_cache: %+v; want %d gets and puts, 1 refill (each put feeds the next get)", cpu, st, k)
	}
	if want := int64(k) * (c0.KfreeSkb - c0.KfreeSkbmem + c0.SkbCachePut); spent != want {
		t.Errorf("%d deferred frees spent %d ns, want %d", k, spent, want)
	}
}

// 4.5 to 5.11 (795bb1c00dd3): napi_consume_skb's _kfree_skb_defer puts
// the sk_buff into the CPU's napi_alloc_cache and, at
// NAPI_SKB_CACHE_SIZE, frees all 64 with one kmem_cache_free_bulk; 5.12
// on, napi_skb_cache_put frees half (NAPI_SKB_CACHE_HALF) and keeps the
// rest for napi_skb_cache_get. The 4.7 and 4.8 profiles had 5.12's.
func TestKfreeSkbDeferFlushesAll(t *testing.T) {
	c0 := sim.DefaultCosts()
	release := c0.KfreeSkb - c0.KfreeSkbmem
	for _, tc := range []struct {
		profile   string
		k         int
		slab      int64 // sk_buffs given back by kmem_cache_free_bulk
		flushes   uint64
		remaining int
	}{
		{"4.7", 64, 64, 1, 0},
		{"4.8", 70, 64, 1, 6},
		{"4.8", 63, 0, 0, 63},
		{"6.18", 64, napiSkbCacheHalf, 1, napiSkbCacheHalf},
		{"6.18", 70, napiSkbCacheHalf, 1, 38},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.profile, tc.k), func(t *testing.T) {
			h := newHarness(t, profile(t, tc.profile), 2, "test", 1, "pfifo")
			h.dev.Info.Wire = true
			spent := spentOn(t, h, 1, func(c *sim.CPU) {
				x := h.dev.ctxFor(c)
				for i := 0; i < tc.k; i++ {
					s := h.skb(c, i)
					s.Holder = driverHolder
					x.Consume(s.Handle)
				}
			})
			if want := int64(tc.k)*(release+c0.SkbCachePut) + tc.slab*c0.SlabBulk; spent != want {
				t.Errorf("%d completions spent %d ns, want %d", tc.k, spent, want)
			}
			if st := h.n.SkbCache(1); st.Puts != uint64(tc.k) || st.Flushes != tc.flushes {
				t.Errorf("napi_alloc_cache: %+v, want %d puts and %d flushes", st, tc.k, tc.flushes)
			}
			if got := len(h.n.sd[1].skbCache); got != tc.remaining {
				t.Errorf("the cache holds %d sk_buffs, want %d", got, tc.remaining)
			}
		})
	}
}

// 4.5 to 4.9's net_rx_action calls __kfree_skb_flush after its loop,
// which it leaves by a break when the budget or the time runs out (or a
// NAPI waits to be polled again): what napi_alloc_cache holds goes back
// to the slab in one kmem_cache_free_bulk. When every NAPI completed it
// returns early, before the flush, and the cache keeps its sk_buffs.
// build_skb takes each sk_buff from the slab (kmem_cache_alloc), not
// from the cache. 5.12 on has no flush, and napi_build_skb takes from
// the cache. Here k packets for a local socket arrive together and each
// one's handler frees an sk_buff into the RX CPU's cache.
func TestKfreeSkbFlushAtNetRxAction(t *testing.T) {
	const k = 40
	for _, tc := range []struct {
		profile   string
		budget    string // net.core.netdev_budget
		gets      uint64
		flushes   uint64
		remaining int
	}{
		{"4.7", "300", 0, 0, k},  // every NAPI completed: the early return
		{"4.7", "10", 0, 1, 0},   // budget spent: break, __kfree_skb_flush
		{"6.18", "10", k, 0, 16}, // no flush; the gets took from the cache (one refill of 16)
	} {
		t.Run(tc.profile+"/budget="+tc.budget, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2}, sim.DefaultCosts(), 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			n := NewNet(e, profile(t, tc.profile, "netdev_budget", tc.budget), localMaker{})
			n.ExpectLocalReceive()
			d, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: "testpairs", Queues: 4, XPS: XPSIRQ, IRQCPUs: []int{3}})
			if err != nil {
				t.Fatal(err)
			}
			d.Info.Wire = true
			key := skb.FlowKeys{Src: 0x0a010001, Dst: 0x0a000001, SrcPort: 5201, DstPort: 40000, Proto: 17}
			cpu := n.RxCPU(d, key)
			n.E.At(1000, func() {
				for i := 0; i < k; i++ {
					n.Deliver(d, n.E.Now(), key, 0, func(c *sim.CPU) { n.napiSkbCachePut(c, 0) })
				}
			})
			if err := n.E.Run(sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			st := n.SkbCache(cpu)
			if st.Puts != k || st.Gets != tc.gets || st.Flushes != tc.flushes {
				t.Errorf("CPU %d's napi_alloc_cache: %+v; want %d puts, %d gets, %d flushes", cpu, st, k, tc.gets, tc.flushes)
			}
			if got := len(n.sd[cpu].skbCache); got != tc.remaining {
				t.Errorf("the cache holds %d sk_buffs, want %d", got, tc.remaining)
			}
		})
	}
}
