package netdev

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/skb"
)

// XmitGen selects the __dev_xmit_skb generation.
type XmitGen string

// The two generations of __dev_xmit_skb for lock-based qdiscs.
const (
	XmitBusylock XmitGen = "busylock" // <= 6.18: q->busylock before the root lock
	XmitLlist    XmitGen = "llist"    // 6.19: lockless defer_list (100dfa74cad9)
)

// DeferBound is the policy bounding the llist defer_list.
type DeferBound string

// Defer bound policies.
const (
	BoundQLimit   DeferBound = "qlimit"    // defer_count > q->limit (as first merged)
	BoundThread   DeferBound = "thread"    // defer_count > 256 || defer_count + qlen > limit (the thread's follow-up)
	BoundMaxBurst DeferBound = "max_burst" // defer_count > net.core.qdisc_max_burst (ffe4ccd359d0), QDISC_BURST_DROP
)

// BulkDequeue is which qdiscs dequeue_skb bulk-dequeues from.
type BulkDequeue string

// The two rules of dequeue_skb.
const (
	// BulkOneTxQueue: only TCQ_F_ONETXQUEUE qdiscs bulk
	// (qdisc_may_bulk, 5772e9a3463b); any other dequeues one skb per
	// qdisc_restart, as before 4d202a0d1 ("net_sched: generalize bulk
	// dequeue", 4.8).
	BulkOneTxQueue BulkDequeue = "onetxqueue"
	// BulkAll: every qdisc bulks; one that is not TCQ_F_ONETXQUEUE
	// through try_bulk_dequeue_skb_slow, up to 8 more skbs of the first
	// one's txq (4d202a0d1).
	BulkAll BulkDequeue = "all"
)

// DestructorCall is how skb_release_head_state (net/core/skbuff.c) calls
// skb->destructor, sock_wfree for a UDP skb: what the kernel's build
// makes of the call.
type DestructorCall string

// The paths sock_wfree is called by.
const (
	// CONFIG_MITIGATION_RETPOLINE=y and a bare skb->destructor(skb): a
	// retpolined indirect call (cost.destructor_retpoline).
	CallRetpoline DestructorCall = "retpoline"
	// CONFIG_MITIGATION_RETPOLINE=y and INDIRECT_CALL_3(skb->destructor,
	// tcp_wfree, __sock_wfree, sock_wfree, skb): a compare and a direct
	// call (cost.destructor).
	CallDirect DestructorCall = "direct"
	// CONFIG_MITIGATION_RETPOLINE=n: INDIRECT_CALL_x is a plain indirect
	// call, predicted (cost.destructor).
	CallIndirect DestructorCall = "indirect"
)

// Config is every TX-path toggle. Profiles bundle them; each is also
// settable alone by name (see Set).
type Config struct {
	Xmit          XmitGen
	DeferBound    DeferBound
	QdiscMaxBurst int  // net.core.qdisc_max_burst
	FastPath      bool // __netif_schedule returns early while defer_list is non-empty (f8a55d5e71e6)
	DequeueDrops  bool // honour TCQ_F_DEQUEUE_DROPS: free dequeue drops after the root lock (191ff13e42a7)
	// BulkFreeList: __dev_xmit_skb's to_free list is freed by
	// kfree_skb_list_reason, which gives the sk_buffs back to the slab
	// in kmem_cache_free_bulk arrays of 16 (eedade12f4cb, "net:
	// kfree_skb_list use kmem_cache_free_bulk", 6.3). Off: one
	// kfree_skb each, as kfree_skb_list did before it and
	// tcf_kfree_skb_list does after net-next's dequeue-drops series
	// ("net_sched: add tcf_kfree_skb_list() helper", Nov 2025).
	BulkFreeList bool
	// KfreeSkbDefer: the CPU's napi_alloc_cache only defers frees, as
	// from 795bb1c00dd3 ("net: bulk free infrastructure for NAPI
	// context, use napi_consume_skb", 4.5) to 5.11: napi_consume_skb's
	// _kfree_skb_defer frees all NAPI_SKB_CACHE_SIZE (64) of a full cache
	// in one kmem_cache_free_bulk, __kfree_skb_flush frees what is left
	// when net_rx_action's loop ends in a break (in 4.5 to 4.9 not on
	// its early return, when every NAPI completed and none waits), and
	// build_skb takes each sk_buff from the slab (kmem_cache_alloc). Off
	// is 5.12 on (Alexander Lobakin's "skbuff: introduce skbuff_heads
	// bulking and reusing"): napi_build_skb takes its sk_buff from the
	// cache (napi_skb_cache_get, refilled by kmem_cache_alloc_bulk of
	// NAPI_SKB_CACHE_BULK), a full cache frees NAPI_SKB_CACHE_HALF, and
	// "skbuff: remove __kfree_skb_flush()". On in 4.7 and 4.8.
	KfreeSkbDefer bool
	// TxDeferFree: napi_consume_skb hands an skb another CPU allocated
	// back to that CPU (skb_attempt_defer_free) after running its
	// destructor, so its head and sk_buff are freed where they came
	// from ("net: fix napi_consume_skb() with alien skbs", Eric
	// Dumazet, 6 Nov 2025: "This removes contention on SLUB
	// spinlocks"). Off in every profile: the seeds' runs predate it.
	TxDeferFree bool
	// PktSegs: qdisc_skb_cb(skb)->pkt_segs, cached at enqueue time in
	// the skb's first line, where qdisc_bstats_update reads it
	// ("net_sched: speedup qdisc dequeue", 2773cb0b3120, Nov 2025: "Avoid
	// up to two cache line misses in qdisc dequeue() to fetch
	// skb_shinfo(skb)->gso_segs/gso_size while qdisc spinlock is held",
	// 120 -> 130 Mpps on idpf with 32 TX queues). A dequeue then waits
	// one line transfer of a dequeued skb under the root lock; the
	// driver's skb_shinfo read pays the rest.
	PktSegs     bool
	BulkQuota   bool // try_bulk_dequeue_skb bounded by the remaining quota (0345552a653c)
	BulkDequeue BulkDequeue
	// QdiscStatsLine: struct Qdisc's qstats sit on the line after q,
	// bstats and running (the layout before 4d202a0d1, which moved
	// state and next_sched out of the hot group so that q.qlen,
	// qstats.backlog and bstats share one line): every enqueue and
	// dequeue of a qdisc writes one line more.
	QdiscStatsLine bool
	// RunBeginReads: qdisc_run_begin reads q->running and writes it only
	// when it finds the qdisc idle ("net: sched: claim one cache line in
	// Qdisc", the llist series' patch 4, 6.19): a CPU that finds another
	// running the qdisc leaves the write group's line shared. 6.18 used
	// __test_and_set_bit on q->state2, a store either way; 4.7 and 4.8
	// read first too (qdisc_is_running on __state, then on the running
	// seqcount from f9eb8aea2a1e), so E4's profiles set it.
	RunBeginReads bool
	// DirectXmitQlen: sch_direct_xmit returns qdisc_qlen(q), and 0 once
	// the txq is frozen or stopped, so __qdisc_run stops without the
	// dequeue that would find the qdisc empty (before 29b86cdac00a,
	// 4.16, made it a bool that is true on any sent skb).
	DirectXmitQlen bool
	// PrefetchPriority: the llist's drainer prefetches the next skb's
	// second half (prefetch(&next->priority), b2e9821cff6c, 21 Nov
	// 2025) besides its first line (prefetch(next), 100dfa74cad9).
	// Without it a qdisc reading skb->priority or skb->hash at enqueue
	// (fq's band, fq_codel's and cake's classification, pfifo_fast's
	// band) waits for that half's line from the pusher's core. Every
	// profile has it on, the thread-era ones too, whose kernels did not
	// (the commit came eleven days after the thread): off, E2's knee on
	// the default processor falls below 3 Mpps and fq_codel and sfq
	// collapse at 5 Mpps, which the seed's unnamed host did not do
	// (docs/fidelity-log.md, "The second prefetch"). A known disagreement, kept until
	// E2's host is known; --set prefetch_priority=off asks the question.
	PrefetchPriority bool
	// OooOkay: skb_set_owner_w sets skb->ooo_okay when the socket had
	// no other skb in flight (d365c9bca35c, "net: control skb->ooo_okay
	// from skb_set_owner_w()", 6.19): a connected UDP socket's next
	// packet may then leave its cached queue for the one XPS gives the
	// sending CPU. Before it only TCP set ooo_okay, and a connected UDP
	// socket kept the queue of its first packet.
	OooOkay bool
	// TxqReselectionMs is net.core.txq_reselection_ms (2ddef3462b3a,
	// 4a7708443dec, 6.19; 1000 by default, 0 disables): a connected
	// socket's cached queue expires that long after it was set or last
	// refreshed, so busy flows follow XPS too. 0 in kernels without it.
	TxqReselectionMs int
	DevTxWeight      int // net.core.dev_weight * dev_weight_tx_bias: __qdisc_run quota
	// QdiscRunResched: __qdisc_run also stops, and reschedules the
	// qdisc (__netif_schedule), when need_resched() is set, not only
	// when the quota is used: "if (quota <= 0 || need_resched())" from
	// 2ba2506ca7ca until b60fa1c5d01a ("net_sched: remove
	// need_resched() from qdisc_run()", 5.5). On in 4.7 and 4.8.
	QdiscRunResched bool
	BQL             bool // byte queue limits on drivers that support them
	SockWfree       DestructorCall
	TxQueueLen      int // dev->tx_queue_len
	MaxBacklog      int // net.core.netdev_max_backlog
	NetdevBudget    int // net.core.netdev_budget (net_rx_action)
	Sndbuf          int // net.core.wmem_default: socket send buffer of senders; 0 (the toggle's "default") is the kernel's (SndbufBytes)
	// NoSmallHeadCache is a kernel before 6.3 (bf9f1baa279f): a small
	// skb's head comes from kmalloc, not skbuff_small_head, so its
	// truesize is smaller (skb.TruesizeUDPKmalloc).
	NoSmallHeadCache bool
	// BondKeepLowBit is a kernel before b5f862180d70 (Nov 2017): a
	// bond's layer3+4 hash keeps its lowest bit (bonding.Bond.KeepLowBit).
	BondKeepLowBit bool
	// MaxSkbFrags is CONFIG_MAX_SKB_FRAGS: it sizes skb_shared_info,
	// so the head a sender's skb gets and its truesize (skb package).
	MaxSkbFrags int
	// Lockdep is a debug kernel (CONFIG_PROVE_LOCKING): lockdep's
	// lock_acquire and lock_release on every lock and RCU read section,
	// its seqcount check in ktime_get (sim.Costs.ApplyLockdep, applied
	// by the run). Off in every profile: E2b's script sets it, as Jonas
	// Köppeler's profile shows his kernel had it.
	Lockdep bool
	// PvSpinlocks is a KVM guest's paravirt qspinlock
	// (sim.Engine.PvSpinlocks, set by the run): no pending bit, and a
	// locked cmpxchg to unlock. Off in every profile: E2b's script sets
	// it, as Jonas Köppeler's profile names
	// __pv_queued_spin_lock_slowpath.
	PvSpinlocks bool
	BQLLimitMin int // byte_queue_limits/limit_min of every TX queue
	// SlabCPUPartial is /sys/kernel/slab/CACHE/cpu_partial, in objects,
	// of the caches senders' skb heads come from (framework/slab), or
	// SlabCPUPartialDefault (every profile's): each cache has
	// set_cpu_partial's default for its object size. E1's tester set 64
	// on skbuff_small_head "to avoid contention in mm".
	SlabCPUPartial int
}

// Profile names.
var profiles = map[string]func() Config{
	// 6.18: busylock; the bulk-dequeue quota fix was backported to stables.
	"6.18": func() Config {
		c := base()
		c.Xmit = XmitBusylock
		c.BulkFreeList = true
		return c
	},
	// 6.19-rc1 as the seeds' thread saw it: llist bounded by q->limit,
	// with the series' patch 1 (sock_wfree through INDIRECT_CALL_3) and
	// patch 4 (qdisc_run_begin loads before it stores).
	"6.19-rc1": func() Config {
		c := base()
		c.Xmit = XmitLlist
		c.DeferBound = BoundQLimit
		c.RunBeginReads = true
		c.SockWfree = CallDirect                   // the series' patch 1: INDIRECT_CALL_3 in skb_release_head_state
		c.OooOkay, c.TxqReselectionMs = true, 1000 // "net: deal with sticky tx queues", merged 15 Oct 2025
		c.BulkFreeList = true
		return c
	},
	// 4.7 (July 2016) as E4's seed measured it before 4d202a0d1: the
	// busylock, BQL and bulk dequeue for TCQ_F_ONETXQUEUE qdiscs only
	// (5772e9a3463b, 3.18), no quota bound on a bulk (0345552a653c is
	// 2025), no retpoline (2018): sock_wfree a plain indirect call.
	"4.7": func() Config {
		c := base()
		c.Xmit = XmitBusylock
		c.BulkQuota = false
		c.BulkDequeue = BulkOneTxQueue
		c.QdiscStatsLine = true
		c.SockWfree = CallIndirect
		c.NoSmallHeadCache = true
		c.BondKeepLowBit = true
		c.DirectXmitQlen = true
		c.RunBeginReads = true // qdisc_is_running(), then __state |= RUNNING if idle
		c.QdiscRunResched = true
		c.KfreeSkbDefer = true
		return c
	},
	// 4.8: 4.7 with 4d202a0d1, every qdisc bulk-dequeues.
	"4.8": func() Config {
		c := base()
		c.Xmit = XmitBusylock
		c.BulkQuota = false
		c.SockWfree = CallIndirect
		c.NoSmallHeadCache = true
		c.BondKeepLowBit = true
		c.DirectXmitQlen = true
		c.RunBeginReads = true // qdisc_is_running(): raw_read_seqcount(&q->running), then write_seqcount_begin if idle
		c.QdiscRunResched = true
		c.KfreeSkbDefer = true
		return c
	},
	// net-next as the seeds' thread ends: llist + __netif_schedule fast
	// path + dequeue drops + the thread's bounded defer (defer_count >
	// 256 || defer_count + qlen > limit). Today's qdisc_max_burst is
	// defer_bound=max_burst.
	"net-next": func() Config {
		c := base()
		c.Xmit = XmitLlist
		c.DeferBound = BoundThread
		c.FastPath = true
		c.DequeueDrops = true
		c.PktSegs = true // the same series as dequeue drops
		c.RunBeginReads = true
		c.SockWfree = CallDirect
		c.OooOkay, c.TxqReselectionMs = true, 1000
		return c
	},
}

func base() Config {
	return Config{
		Xmit:          XmitBusylock,
		DeferBound:    BoundQLimit,
		QdiscMaxBurst: 1000,
		BulkQuota:     true,
		BulkDequeue:   BulkAll,
		DevTxWeight:   64,
		BQL:           true,
		SockWfree:     CallRetpoline,
		TxQueueLen:    1000,
		MaxBacklog:    1000,
		NetdevBudget:  300,
		MaxSkbFrags:   skb.DefaultMaxSkbFrags,
		// set_cpu_partial's, by each slab cache's object size
		SlabCPUPartial: SlabCPUPartialDefault,
		// See Config.PrefetchPriority: on everywhere for now.
		PrefetchPriority: true,
	}
}

// minSndbuf is the least sndbuf a sender takes: SOCK_MIN_SNDBUF, 2 x
// TCP_SKB_MIN_TRUESIZE (2048 + the aligned sk_buff), sock_setsockopt's
// floor.
const minSndbuf = 2 * (2048 + 256)

// SndbufBytes is the send buffer a sender's socket gets: Sndbuf if set,
// else the kernel's default for this build (skb.WmemDefault), as netperf
// leaves SO_SNDBUF alone unless given -s.
func (c Config) SndbufBytes() int {
	if c.Sndbuf > 0 {
		return c.Sndbuf
	}
	return skb.WmemDefault(c.MaxSkbFrags)
}

// TruesizeUDP is the truesize of a sender's skb carrying l3len bytes of
// IP packet: the small head cache's object (6.3 on) or kmalloc's.
func (c Config) TruesizeUDP(l3len int) uint32 {
	if c.NoSmallHeadCache {
		return skb.TruesizeUDPKmalloc(l3len, c.MaxSkbFrags)
	}
	return skb.TruesizeUDPFrags(l3len, c.MaxSkbFrags)
}

// Profile returns a named profile.
func Profile(name string) (Config, error) {
	f, ok := profiles[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(Profiles(), ", "))
	}
	return f(), nil
}

// Profiles lists the profile names.
func Profiles() []string {
	out := make([]string, 0, len(profiles))
	for k := range profiles {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type toggle struct {
	help string
	set  func(c *Config, v string) error
	get  func(c *Config) string
}

func boolToggle(help string, f func(c *Config) *bool) toggle {
	return toggle{help, func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "on", "true", "1", "yes":
			*f(c) = true
		case "off", "false", "0", "no":
			*f(c) = false
		default:
			return fmt.Errorf("%q is not on/off", v)
		}
		return nil
	}, func(c *Config) string {
		if *f(c) {
			return "on"
		}
		return "off"
	}}
}

// SysctlMax is the most an integer toggle takes: INT_MAX, what the
// kernel's proc_dointvec_minmax allows its sysctls.
const SysctlMax = math.MaxInt32

func intToggle(help string, min int, f func(c *Config) *int) toggle {
	return toggle{help + fmt.Sprintf(" [%d..%d]", min, SysctlMax), func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", v)
		}
		if n < min || n > SysctlMax {
			return fmt.Errorf("%d is out of range: %d..%d", n, min, SysctlMax)
		}
		*f(c) = n
		return nil
	}, func(c *Config) string { return strconv.Itoa(*f(c)) }}
}

// SlabCPUPartialDefault is Config.SlabCPUPartial's "default": each
// cache's own (0 is a cpu_partial of its own: no partial slabs).
const SlabCPUPartialDefault = -1

// intOrDefaultToggle is intToggle that also takes "default": def in the
// field, which stands for the kernel's own value and is shown so.
func intOrDefaultToggle(help string, min, def int, f func(c *Config) *int) toggle {
	t := intToggle(help, min, f)
	set, get := t.set, t.get
	t.set = func(c *Config, v string) error {
		if v == "default" {
			*f(c) = def
			return nil
		}
		if _, err := strconv.Atoi(v); err != nil {
			return fmt.Errorf("%q is not a whole number or default", v)
		}
		return set(c, v)
	}
	t.get = func(c *Config) string {
		if *f(c) == def {
			return "default"
		}
		return get(c)
	}
	return t
}

var toggles = map[string]toggle{
	"xmit": {"__dev_xmit_skb generation: busylock | llist", func(c *Config, v string) error {
		switch XmitGen(v) {
		case XmitBusylock, XmitLlist:
			c.Xmit = XmitGen(v)
			return nil
		}
		return fmt.Errorf("%q is not busylock or llist", v)
	}, func(c *Config) string { return string(c.Xmit) }},
	"defer_bound": {"llist bound policy: qlimit | thread | max_burst", func(c *Config, v string) error {
		switch DeferBound(v) {
		case BoundQLimit, BoundThread, BoundMaxBurst:
			c.DeferBound = DeferBound(v)
			return nil
		}
		return fmt.Errorf("%q is not qlimit, thread or max_burst", v)
	}, func(c *Config) string { return string(c.DeferBound) }},
	"qdisc_max_burst": intToggle("net.core.qdisc_max_burst", 0, func(c *Config) *int { return &c.QdiscMaxBurst }),
	"fast_path":       boolToggle("__netif_schedule fast path (skip while defer_list non-empty)", func(c *Config) *bool { return &c.FastPath }),
	"dequeue_drops":   boolToggle("honour TCQ_F_DEQUEUE_DROPS (free dequeue drops after the root lock)", func(c *Config) *bool { return &c.DequeueDrops }),
	"bulk_free_list": boolToggle("__dev_xmit_skb's to_free list freed by kfree_skb_list_reason: the sk_buffs back to the slab in kmem_cache_free_bulk arrays of 16 (eedade12f4cb, 6.3 until tcf_kfree_skb_list); off: one kfree_skb each",
		func(c *Config) *bool { return &c.BulkFreeList }),
	"kfree_skb_defer": boolToggle("the CPU's napi_alloc_cache only defers frees, as 4.5 to 5.11 (795bb1c00dd3, _kfree_skb_defer): a full cache frees all 64, net_rx_action's __kfree_skb_flush the rest when its loop breaks, build_skb allocates from the slab; off: 5.12's recycling cache (napi_skb_cache_get, a full cache frees half)",
		func(c *Config) *bool { return &c.KfreeSkbDefer }),
	"tx_defer_free": boolToggle("a NIC's TX completion (napi_consume_skb) hands an skb another CPU allocated back to it with skb_attempt_defer_free: its head goes back to the slab on the sending CPU, the defer list flushed by that CPU's net_rx_action, an IPI when it reaches half of net.core.skb_defer_max (64) and a free where it is when full (\"net: fix napi_consume_skb() with alien skbs\", Nov 2025); off: freed where completed, as the seeds' kernels did",
		func(c *Config) *bool { return &c.TxDeferFree }),
	"pkt_segs": boolToggle("qdisc_bstats_update reads the segment count cached in the skb's cb, not skb_shinfo: a dequeue reads one skb line under the root lock (2773cb0b3120)",
		func(c *Config) *bool { return &c.PktSegs }),
	"bulk_quota": boolToggle("bound bulk dequeue by the remaining quota (0345552a653c)", func(c *Config) *bool { return &c.BulkQuota }),
	"ooo_okay": boolToggle("skb_set_owner_w sets skb->ooo_okay when the socket has no other skb in flight, so a connected UDP socket may change TX queue (d365c9bca35c)",
		func(c *Config) *bool { return &c.OooOkay }),
	"txq_reselection_ms": intToggle("net.core.txq_reselection_ms: a connected socket's cached TX queue expires this long after it was set or refreshed (4a7708443dec); 0 never",
		0, func(c *Config) *int { return &c.TxqReselectionMs }),
	"dev_tx_weight": intToggle("__qdisc_run quota (net.core.dev_weight)", 1, func(c *Config) *int { return &c.DevTxWeight }),
	"qdisc_run_resched": boolToggle("__qdisc_run also yields (__netif_schedule) when need_resched() is set, as kernels before b60fa1c5d01a (5.5) did",
		func(c *Config) *bool { return &c.QdiscRunResched }),
	"bql": boolToggle("byte queue limits", func(c *Config) *bool { return &c.BQL }),
	"bql_limit_min": {fmt.Sprintf("BQL's floor in bytes on every TX queue (sysfs tx-N/byte_queue_limits/limit_min) [0..%d]", dqlMaxLimit),
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not a whole number", v)
			}
			if n < 0 || n > int(dqlMaxLimit) { // bql_set: -EINVAL above DQL_MAX_LIMIT
				return fmt.Errorf("%d is out of range: 0..%d", n, dqlMaxLimit)
			}
			c.BQLLimitMin = n
			return nil
		}, func(c *Config) string { return strconv.Itoa(c.BQLLimitMin) }},
	"bulk_dequeue": {"which qdiscs bulk-dequeue: onetxqueue (only TCQ_F_ONETXQUEUE ones, before 4d202a0d1) | all (the others through try_bulk_dequeue_skb_slow, 8 skbs of one txq)",
		func(c *Config, v string) error {
			switch BulkDequeue(v) {
			case BulkOneTxQueue, BulkAll:
				c.BulkDequeue = BulkDequeue(v)
				return nil
			}
			return fmt.Errorf("%q is not onetxqueue or all", v)
		}, func(c *Config) string { return string(c.BulkDequeue) }},
	"prefetch_priority": boolToggle("the llist drainer also prefetches the next skb's second half, prefetch(&next->priority) (b2e9821cff6c); off: only its first line (prefetch(next)), as the llist thread ran",
		func(c *Config) *bool { return &c.PrefetchPriority }),
	"run_begin_reads": boolToggle("qdisc_run_begin reads q->running and stores only when the qdisc is idle (6.19, \"claim one cache line in Qdisc\"); off: __test_and_set_bit on state2, a store either way",
		func(c *Config) *bool { return &c.RunBeginReads }),
	"qdisc_stats_line": boolToggle("struct Qdisc's qstats on a line of their own, after q/bstats/running (the layout before 4d202a0d1): each enqueue and dequeue writes one line more",
		func(c *Config) *bool { return &c.QdiscStatsLine }),
	"sock_wfree": {"how skb_release_head_state calls sock_wfree: retpoline (CONFIG_MITIGATION_RETPOLINE, bare call) | direct (retpoline + INDIRECT_CALL_3) | indirect (no retpoline)",
		func(c *Config, v string) error {
			switch DestructorCall(v) {
			case CallRetpoline, CallDirect, CallIndirect:
				c.SockWfree = DestructorCall(v)
				return nil
			}
			return fmt.Errorf("%q is not retpoline, direct or indirect", v)
		}, func(c *Config) string { return string(c.SockWfree) }},
	"lockdep": boolToggle("a debug kernel (CONFIG_PROVE_LOCKING): lockdep's lock_acquire/lock_release on every spin lock, RCU read section and local_lock, and its seqcount check in ktime_get, priced by the cost table's lockdep_* entries",
		func(c *Config) *bool { return &c.Lockdep }),
	"pv_spinlocks": boolToggle("a KVM guest's paravirt spinlocks (CONFIG_PARAVIRT_SPINLOCKS with KVM_FEATURE_PV_UNHALT: __pv_queued_spin_lock_slowpath): every contended locker queues (no pending bit) and an unlock is a locked cmpxchg that takes the lock word back from a spinning waiter",
		func(c *Config) *bool { return &c.PvSpinlocks }),
	"tx_queue_len":       intToggle("dev->tx_queue_len", 0, func(c *Config) *int { return &c.TxQueueLen }),
	"netdev_max_backlog": intToggle("net.core.netdev_max_backlog", 1, func(c *Config) *int { return &c.MaxBacklog }),
	"netdev_budget":      intToggle("net.core.netdev_budget", 1, func(c *Config) *int { return &c.NetdevBudget }),
	"sndbuf": intOrDefaultToggle(fmt.Sprintf("sender socket sndbuf in bytes (net.core.wmem_default), or default: the kernel's boot value SK_WMEM_DEFAULT, SKB_TRUESIZE(256) x 256, which grows with max_skb_frags (%d with 17, %d with 45)",
		skb.WmemDefault(17), skb.WmemDefault(45)), minSndbuf, 0, func(c *Config) *int { return &c.Sndbuf }),
	// cpu_partial_store takes it with kstrtouint: 0 and up.
	"slab_cpu_partial": intOrDefaultToggle("/sys/kernel/slab/CACHE/cpu_partial of the slab caches senders' skb heads come from (skbuff_small_head, or kmalloc-N for larger heads), in objects, or default: set_cpu_partial's by object size (24 at 1 KiB and over, 52 at 256 B)",
		0, SlabCPUPartialDefault, func(c *Config) *int { return &c.SlabCPUPartial }),
	"max_skb_frags": {fmt.Sprintf("CONFIG_MAX_SKB_FRAGS: sizes skb_shared_info, hence a sent skb's truesize [%d..%d]", skb.MinMaxSkbFrags, skb.MaxMaxSkbFrags),
		func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not a whole number", v)
			}
			if n < skb.MinMaxSkbFrags || n > skb.MaxMaxSkbFrags { // Kconfig: range 17 45
				return fmt.Errorf("%d is out of range: %d..%d (Kconfig's range)", n, skb.MinMaxSkbFrags, skb.MaxMaxSkbFrags)
			}
			c.MaxSkbFrags = n
			return nil
		}, func(c *Config) string { return strconv.Itoa(c.MaxSkbFrags) }},
}

// removedToggles named one thing twice; setting one says the name that
// stays.
var removedToggles = map[string]string{
	"retpoline":             "toggle retpoline was merged into sock_wfree: retpoline=on is sock_wfree=retpoline (or direct with indirect_call_wrapper=on), retpoline=off is sock_wfree=indirect",
	"indirect_call_wrapper": "toggle indirect_call_wrapper was merged into sock_wfree: indirect_call_wrapper=on is sock_wfree=direct",
}

// Set sets one toggle by name.
func (c *Config) Set(name, value string) error {
	if msg, ok := removedToggles[name]; ok {
		return errors.New(msg)
	}
	t, ok := toggles[name]
	if !ok {
		return fmt.Errorf("unknown toggle %q (known: %s)", name, strings.Join(ToggleNames(), ", "))
	}
	if err := t.set(c, value); err != nil {
		return fmt.Errorf("toggle %s: %v", name, err)
	}
	return nil
}

// Get returns one toggle's value as text.
func (c *Config) Get(name string) string { return toggles[name].get(c) }

// ToggleNames lists every toggle.
func ToggleNames() []string {
	out := make([]string, 0, len(toggles))
	for k := range toggles {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ToggleHelp is a toggle's description.
func ToggleHelp(name string) string { return toggles[name].help }
