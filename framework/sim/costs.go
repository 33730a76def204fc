package sim

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Costs is the one table of nanosecond costs the whole model uses. Every
// field is overridable by name (`--set cost.<name>=<ns>`), from 0 to its
// max tag, or MaxCost. The defaults stand for a 2-socket Xeon 6 (Granite
// Rapids, the seeds' 6985P-C) with an E810 NIC; each comment says what
// the number stands for, where it comes from (a seed's profile or
// measurement, the kernel's code, a public figure) or that it is the
// model's own estimate, and why it is plausible. "The llist thread" is
// /work/shared/seeds/llist-adoption-thread.txt. Nothing else in the model
// holds a tunable cost (TestCostsSourced checks that every entry is
// named in a comment here).
type Costs struct {
	// Cache-line transfer by topology distance (see Distance*): the time a
	// CPU stalls to get a line another CPU wrote.
	//
	// line_hit (1 ns) is an L1 hit, a few cycles. line_smt (12 ns) is a
	// line the SMT sibling wrote: the two share the core's L1 and L2, so
	// about an L2 hit's latency. line_socket (110 ns) and line_remote
	// (300 ns) are a modified line snooped out of another core's cache
	// across the socket's mesh, and over UPI from the other socket;
	// line_memory (110 ns) a line nobody holds, read from DRAM (the usual
	// order of a server's idle DRAM latency). All five are the model's
	// estimates: no source here measures them on the 6985P-C. line_socket
	// and line_remote were 75 and 190 ns until 1481b24 raised them, in the
	// commit that raised stack_per_packet and added a temporary E1 harness
	// (see stack_per_packet): they may have been set against E1 as well.
	// A host that names its processor gets measured figures for
	// line_socket, line_remote and line_memory instead (cpumodel.go).
	LineSMT    int64 `cost:"line_smt" help:"line from the SMT sibling (shared L1/L2)"`
	LineSocket int64 `cost:"line_socket" help:"line from another core of the same socket (mesh + LLC snoop)"`
	LineRemote int64 `cost:"line_remote" help:"line from the other socket over UPI"`
	LineMemory int64 `cost:"line_memory" help:"line nobody holds (DRAM)"`
	LineHit    int64 `cost:"line_hit" help:"access to a line this CPU already owns"`
	// lines_overlapped (2) is how many lines of one structure, written in
	// one pass, move at the cost of one transfer: the L2's spatial
	// prefetcher completes the 128-byte-aligned pair of a line that
	// misses (Intel 64 and IA-32 Architectures Optimization Reference
	// Manual, "Data Prefetching": the L2 spatial prefetcher), and the
	// stores to both wait in the store buffer with their two requests
	// in flight together. struct fq_flow is such a pair (112 bytes in a
	// SLAB_HWCACHE_ALIGN cache of 128-byte objects). Priced this way: a
	// qdisc's per-flow lines (qdisc.Ctx.Lines), and since session 39 a
	// qdisc's private data (qdisc_data_lines): its fields are at fixed
	// offsets from the qdisc, touched at different points of one enqueue
	// or dequeue, but none of their addresses waits on another miss and
	// the function (a few hundred instructions, no locked op under the
	// root lock) fits the reorder buffer (512 entries on Golden Cove and
	// its successors), so the loads and the stores' read-for-ownership
	// requests are in flight together as a pair's are (before, they
	// moved one transfer a line; docs/fidelity-log.md's "E4 in the
	// model" had named the overlap as left since session 24). A task's
	// cold lines (task_lines)
	// still move one transfer a line. 1 prices every line apart.
	LinesOverlapped int64 `cost:"lines_overlapped" max:"64" help:"lines of one structure written in one pass that move for one transfer (the L2 spatial prefetcher's 128-byte pair)"`
	// line_llc and l2_skbs: a line another core wrote long enough ago
	// that the core has since evicted it from its private L2 is read
	// from the shared LLC, not snooped out of that core (Intel's
	// server parts since Skylake-SP keep a non-inclusive LLC that takes
	// L2 victims): the skbs at the head of a deep qdisc queue. Jonas
	// Köppeler's profile of a full cake (llist thread) measures it:
	// cake_dequeue_one, which reads the head skb's next, cb and
	// truesize, is 0.91% beside 1.82% for freeing the skb it pulls
	// (sk_skb_reason_drop, one per pulled skb while BLUE drops them
	// all), i.e. half a kfree_skb (~45 ns) for the dequeue and its two
	// lines: LLC hits (~25 ns on those parts, the two loads in flight
	// together) and its bookkeeping, not the 2 x 110 ns of cross-core
	// transfers. l2_skbs is how many skbs a core handles
	// before the first one's lines are gone from its L2: 2 MB of L2
	// (Granite Rapids; 1 MB on Cascade Lake) over ~1 KB a forwarded or
	// sent skb brings in (the sk_buff's 4 lines, shared info, the
	// packet's data, the page_pool page, ring descriptors, the
	// socket's and stack's lines).
	//
	// atomic_op (8 ns) is what a locked read-modify-write adds to the
	// line's own transfer (priced apart by distance): a LOCK-prefixed
	// instruction waits for the store buffer to drain and takes about 20
	// cycles on an owned line on Intel cores since Skylake (Agner Fog's
	// instruction tables), 7-10 ns at 2-3 GHz.
	LineLLC  int64 `cost:"line_llc" help:"line another core wrote and has since evicted from its L2, read from the shared LLC"`
	L2Skbs   int64 `cost:"l2_skbs" max:"10000000" help:"skbs a core handles before the lines of the first are evicted from its L2 (skbs, not ns)"`
	AtomicOp int64 `cost:"atomic_op" help:"extra cost of a locked RMW (cmpxchg, xadd) on an owned line"`

	// Spinlocks (qspinlock). spin_acquire (8 ns) and spin_release (4 ns)
	// are the uncontended fast paths' own instructions; the lock word's
	// transfer and its locked cmpxchg are priced apart (line_* and
	// atomic_op). queued_spin_lock is preempt_disable and one
	// atomic_try_cmpxchg_acquire of the lock word; queued_spin_unlock an
	// smp_store_release of the locked byte (a plain store on x86) and
	// preempt_enable (include/asm-generic/qspinlock.h): a call and a
	// handful of instructions each. The model's estimates.
	SpinAcquire int64 `cost:"spin_acquire" help:"uncontended spin_lock fast path, excluding the line transfer"`
	SpinRelease int64 `cost:"spin_release" help:"spin_unlock"`

	// Sender side (udp_sendmsg down to dev_queue_xmit).
	//
	// stack_per_packet (600 ns) is one netperf UDP_STREAM sendmsg() of a
	// small datagram up to __dev_queue_xmit, less skb_alloc (250 ns:
	// sock_alloc_send_skb's two slab allocations, the sk_buff's
	// initialisation and the payload's copy, ip_generic_getfrag, the
	// model's estimate); skb_set_owner_w's refcount_add on sk_wmem_alloc
	// is priced apart, as the socket line's atomic. It is measured from
	// Toke Høiland-Jørgensen's single netperf UDP_STREAM -m 64 (llist
	// thread: "A single netperf instance gets me back to the ~600k PPS
	// range"): one sender's whole path on its CPU, syscall to doorbell,
	// 1/600K = 1.67 us a packet. Like every netperf UDP_STREAM without
	// -R (scan_omni_args: routing_allowed = 0, so create_data_socket sets
	// SO_DONTROUTE), its socket routes each send: udp_sendmsg's
	// ip_sendmsg_scope gives RT_SCOPE_LINK, which turns the connected
	// fast path off even with -n, and ip_route_output_flow runs per
	// packet; that lookup is inside this figure. That netperf ran where xdp-trafficgen
	// had, on his traffic generator, whose qdisc and NIC are not named,
	// and his DUT forwarded all of it (it forwards 630 Kpps of 16 flows);
	// the model's rest of the path is priced through the DUT's own root
	// cake on ice instead: 1.06 us, E2n's one local netperf with
	// stack_per_packet=0 sends 868 Kpps (`txlab run scripts/e2n.tengo
	// --set cost.stack_per_packet=0`, "1 local netperf/6.18"); 1.67 -
	// 1.06 = 0.6 us, and with 600 that sender makes 605 Kpps. A
	// generator's mq with a cheaper child would leave a little more to
	// the sender; the figure is good to its first digit. Eric Dumazet's
	// perf lock tables before the llist (E1's host, same thread) agree:
	// the senders on CPUs 0-7 waited on the busylock 6.79 s and 7.10 s
	// of every 8 CPU-seconds, unpinned and pinned (85-89% of their
	// time), so a sender's own path is a small part of its cycle. Toke's CPUs are not named (E2n is
	// judged on its ratios, not this rate). It was 2600 (with skb_alloc
	// 250, 2.85 us), set in 1481b24 against a temporary E1 harness, i.e.
	// fitted to a figure the model is judged on; with it a single sender
	// made 273 Kpps and E1's senders waited on the busylock ~9% of their
	// time.
	StackPerPacket int64 `cost:"stack_per_packet" help:"syscall + udp_sendmsg + ip_output per packet, before __dev_queue_xmit"`
	SkbAlloc       int64 `cost:"skb_alloc" help:"sock_alloc_send_skb + copy of a small payload"`
	// xmit_entry (40 ns) is __dev_queue_xmit's own work before the qdisc
	// (net/core/dev.c: skb_reset_mac_header, rcu_read_lock_bh,
	// skb_update_prio, qdisc_pkt_len_init, the egress hooks behind a
	// static key, skb_dst_drop) and pick_tx (25 ns) netdev_core_pick_tx
	// (ndo_select_queue or netdev_pick_tx: the socket's cached queue, the
	// sending CPU's XPS map, else skb_tx_hash). Both are the model's
	// estimates. Bounds from the seeds: Eric Dumazet's @__dev_queue_xmit_ns
	// histogram after the llist (E1's host, llist thread) has 32% of
	// calls under 256 ns and 79% under 512 ns, whole calls that also push
	// to the defer list or run the qdisc; in Jonas Köppeler's profile
	// (llist thread) netdev_core_pick_tx is 1.99%, 1.30 of it lockdep's
	// lock_acquire and lock_release, so at most ~0.7% beside cake_hash's
	// 3.17% (qdisc_hash, 40 ns): ~9 ns through i40e_lan_select_queue,
	// under the model's 25.
	PickTx    int64 `cost:"pick_tx" help:"netdev_core_pick_tx (XPS / hash)"`
	XmitEntry int64 `cost:"xmit_entry" help:"__dev_queue_xmit entry: rcu_read_lock_bh, prio, egress hooks"`
	// wake_up (600 ns) is try_to_wake_up as the waker pays it
	// (select_task_rq, the runqueue lock, enqueue_task, the preemption
	// check): the model's estimate, split with context_switch out of the
	// same perf bench sched pipe round trip (see context_switch below):
	// two wake-ups (1.2 us) and two switches (2 us) leave ~1.8 us of the
	// ~5 us loop to its pipe syscalls.
	WakeUp int64 `cost:"wake_up" help:"try_to_wake_up of a sleeping task, paid by the waker (select_task_rq, enqueue)"`

	// Scheduler (sim/sched.go): context_switch, wake_idle_latency, tick,
	// newidle_balance, task_lines and smt_share_pct; each default below
	// says where it comes from.
	ContextSwitch   int64 `cost:"context_switch" help:"__schedule: pick the next task, switch_mm and switch_to, on the switching CPU"`
	WakeIdleLatency int64 `cost:"wake_idle_latency" help:"an idle CPU leaving its C-state (C1E) before it runs a task woken there (no IPI: the idle loop polls need_resched) or takes an interrupt"`
	Tick            int64 `cost:"tick" help:"the local timer interrupt and sched_tick on a CPU with tasks waiting"`
	NewidleBalance  int64 `cost:"newidle_balance" help:"sched_balance_newidle: a CPU going idle scans the runqueues for a task to pull"`
	TaskLines       int64 `cost:"task_lines" max:"64" help:"cache lines of a task's own state (stack, task_struct, its buffers) it finds cold after running on another core (lines, not ns)"`
	SMTSharePct     int64 `cost:"smt_share_pct" max:"400" help:"percent more time work takes on a hardware thread while its SMT sibling executes too (percent, not ns)"`

	// Qdisc layer.
	//
	// qdisc_rand: get_random_u32 (and get_random_u16) take the per-CPU
	// batch under local_lock_irqsave and refill it with ChaCha20 every 24
	// draws (96 bytes, ~400 ns): ~25 ns a draw. Jonas Köppeler's profile
	// of cake_dequeue (llist thread) puts get_random_u32 at 1.64% beside
	// sk_skb_reason_drop's 1.82%, about one call each per dropped packet,
	// i.e. 0.9x kfree_skb; that kernel ran lockdep (lock_acquire and
	// seqcount_lockdep_reader_access show in its profile), which inflates
	// local_lock, so 25 ns (0.28x kfree_skb) rather than 80. It was 8 ns,
	// a bare per-CPU read.
	//
	// skb_lines are first read, when another CPU wrote the skb, where the
	// kernel first reads them: by a qdisc that dequeues or drops it, under
	// the root lock (dequeue_head's skb->next and qdisc_pkt_len's cb,
	// cake_dequeue_one's and cake_drop's skb->truesize, qdisc_bstats_update
	// reaching skb_shinfo through skb->head/end; sch_cake.c, sch_generic.h),
	// else by the driver. They used to be read only by the driver, outside
	// the lock, and never for a dropped skb. Two of the sk_buff's four
	// lines: the first (next, cb) and the one with head/end and truesize;
	// counted from those reads, not measured. They are priced as
	// latencies, not lines: loads whose addresses come from the skb
	// pointer alone are in flight together, so a drop (next, cb,
	// truesize) waits for one transfer, and a dequeue for two only while
	// bstats' skb_shinfo read waits for skb->head/end (netdev's
	// touchSkbDrop and touchSkbDequeue).
	//
	// A defer list's drainer prefetches the skbs it drains
	// (__dev_xmit_skb's llist_for_each_entry_safe: prefetch(next), and
	// prefetch(&next->priority) since b2e9821cff6c, while it enqueues the
	// current skb): a prefetched skb's lines stall it only for the part
	// of their transfer that outlasts one enqueue (netdev's
	// stallPrefetched). That is the mechanism, not a cost; prefetch_pct,
	// a flat 15% of the transfer until session 43, is gone (it was 35
	// until f8baa08 set 15 without a stated reason, in the commit that
	// added E2's tests for fq_codel and sfq).
	//
	// llist_node is llist_reverse_order's work per node (lib/llist.c: load
	// node->next, store the new next) as the drainer of a defer_list pays
	// it under the root lock. Each node's line was last written by its
	// pusher, so a cache-line model prices a transfer per node (~110 ns,
	// more than cake_enqueue's own work); Jonas Köppeler's call graph of
	// __dev_queue_xmit after the llist (llist thread) does not show
	// llist_reverse_order at all, in a listing down to 0.52%, beside
	// dev_qdisc_enqueue's 10.00%: under a twentieth of the per-packet
	// enqueue, i.e. under ~10 ns against the model's ~190 ns cake enqueue.
	// Priced from that profile: an L1/L2 hit's load and store.
	//
	// qdisc_hash is one dissect-and-hash unit: cake_hash of a packet
	// without an L4 skb hash in flows mode, i.e. Jonas Köppeler's
	// (llist thread): __skb_flow_dissect 2.85%, __siphash_unaligned
	// 1.17% and cake_hash's own 0.88%, 3.17% once lockdep's 1.73% is
	// taken out of the dissection. qdisc_siphash is one more siphash of
	// the keys that dissection made (flow_hash_from_keys), as cake's
	// host-isolating modes do twice (dsthost and srchost keys, besides
	// the flow hash unless the NIC's L4 hash stands in for it): 1.17 /
	// 3.17 of qdisc_hash. It was a whole qdisc_hash for the pair.
	//
	// bond_hash (8 ns) is bond_xmit_hash for layer2+3 and layer3+4,
	// which do not run the flow dissector (drivers/net/bonding/
	// bond_main.c, bond_flow_dissect): bond_flow_ip loads the IP
	// addresses, skb_flow_get_ports the ports, bond_ip_hash folds them
	// with a few XORs and shifts. The model's estimate from Jonas
	// Köppeler's profile (qdisc_hash above): __skb_flow_dissect without
	// lockdep is 1.12% (~14 ns at 12.6 ns a percent); this open-coded
	// read of the same two headers, with no key table and no RCU
	// section, about half of it, plus the fold. The skb's lines are
	// priced apart (skb_lines). It was a whole qdisc_hash.
	//
	// qdisc_enqueue and qdisc_dequeue (25 ns each) are a simple qdisc's
	// own per-packet instructions (a FIFO's list append or unlink, its
	// qlen, backlog and bstats: qdisc_enqueue_tail, qdisc_dequeue_head,
	// qdisc_bstats_update in include/net/sch_generic.h); the lines they
	// write are priced apart. qdisc_data_lines (2) is how many lines of a
	// qdisc's private data (qdisc_priv: flow-list heads, counters, time
	// state) an enqueue or dequeue writes, moved from the CPU that wrote
	// them last, lines_overlapped at a time; struct Qdisc's write group
	// (q.qlen, backlog, bstats, beside the root lock's word) is a line
	// of its own, its store in flight with theirs (the same allocation);
	// a qdisc's per-flow lines (qdisc.Ctx.Lines: fq's struct
	// fq_flow, two lines, and the tail skb it links to) move the same
	// way, each flow on its own, at line_socket / line_remote a line.
	// qdisc_flow_scan (4 ns) is one flow, slot or tree node
	// visited while scanning: a load and a compare on a cached line.
	// cake_clear_tin's walk (cake_mq's mq-clear-tins) is priced so, one
	// a flow: struct cake_flow is 80 bytes, so each flow's head is on a
	// line of its own (1024 a tin); an unused tin's flows are never
	// written, and the walk reads them in address order, so the
	// prefetchers stream them from the L2 or the LLC (line_llc's latency
	// overlapped), not as transfers from another core. All
	// three are the model's estimates; the first two are part of the
	// ~350 ns uncontended TX path that the receive side's comment below
	// checks against forwarding rates per core.
	//
	// qdisc_tstamp (18 ns) is one ktime_get(): a TSC read under the
	// timekeeper's seqcount, the model's estimate. Jonas Köppeler's
	// profile (llist thread) would put it lower: ktime_get is 2.20% in
	// cake_enqueue, 1.94 of it lockdep's seqcount_lockdep_reader_access,
	// and the 0.26% left, about one call a packet, beside cake_hash's
	// 3.17% (40 ns) is ~3 ns. Kept at 18 until a profile of a kernel
	// without lockdep says the same: one lockdep profile is a thin base.
	LlistNode      int64 `cost:"llist_node" help:"llist_reverse_order per node of a drained defer_list (calibrated to a kernel profile)"`
	QdiscEnqueue   int64 `cost:"qdisc_enqueue" help:"base per-packet enqueue work of a simple qdisc"`
	QdiscDequeue   int64 `cost:"qdisc_dequeue" help:"base per-packet dequeue work of a simple qdisc"`
	QdiscHash      int64 `cost:"qdisc_hash" help:"flow hash / classification of one packet (flow dissector + hash)"`
	BondHash       int64 `cost:"bond_hash" help:"bond_xmit_hash for layer2+3 / layer3+4: bond_flow_ip, skb_flow_get_ports and bond_ip_hash's fold, no flow dissector"`
	QdiscSiphash   int64 `cost:"qdisc_siphash" help:"one more siphash (flow_hash_from_keys) of keys already dissected: cake's host hashes (calibrated to a kernel profile)"`
	QdiscFlowScan  int64 `cost:"qdisc_flow_scan" help:"visiting one flow/slot while scanning"`
	QdiscTstamp    int64 `cost:"qdisc_tstamp" help:"one ktime_get()"`
	QdiscRand      int64 `cost:"qdisc_rand" help:"one get_random_u32()"`
	QdiscDataLines int64 `cost:"qdisc_data_lines" max:"64" help:"private qdisc cache lines touched by an enqueue or dequeue (lines, not ns)"`
	SkbLines       int64 `cost:"skb_lines" max:"64" help:"cache lines of an skb another CPU reads when it handles it first (lines, not ns)"`
	// kfree_skb (90 ns) is freeing one skb: skb_release_head_state
	// (the destructor apart), skb_release_data (the head back to its
	// slab) and kfree_skbmem (the sk_buff back to skbuff_head_cache), two
	// SLUB frees; the skb's lines are priced apart. The model's estimate,
	// and the yardstick other entries are scaled by through Jonas
	// Köppeler's profile (qdisc_rand, line_llc, llist_node): there the
	// free of a dropped skb, sk_skb_reason_drop, is 1.82%, split
	// skb_release_data 1.10 and kfree_skbmem 0.65 (llist thread), the
	// shares of a head free and an sk_buff free. If kfree_skb is off,
	// they are off by the same factor.
	KfreeSkb int64 `cost:"kfree_skb" help:"freeing one skb (skb + data + slab)"`
	// kfree_skbmem (32 ns) is the sk_buff's own part of kfree_skb: the
	// kmem_cache_free of the sk_buff to skbuff_head_cache
	// (net/core/skbuff.c: kfree_skbmem), from the split above: 0.65 /
	// 1.82 of kfree_skb's 90 ns. The rest of kfree_skb (58 ns by
	// default; none if kfree_skbmem is set above kfree_skb) is
	// skb_release_all: what every free pays, the sk_buff's own slab free
	// or not. The paths that do not give the sk_buff back to the slab
	// one at a time pay that rest and, in place of kfree_skbmem:
	//
	// skb_cache_put (2 ns): napi_skb_cache_put, napi_consume_skb's store
	// of the sk_buff into the CPU's napi_alloc_cache (an array store
	// under local_lock_nested_bh, which is only a lockdep annotation off
	// PREEMPT_RT). The model's estimate, from the code.
	//
	// slab_bulk (13 ns) is one object of a kmem_cache_free_bulk or
	// kmem_cache_alloc_bulk on skbuff_head_cache: napi_skb_cache_put's
	// flush of half the cache (32), kfree_skb_list_reason's array of 16,
	// napi_skb_cache_get's refill of 16. Jesper Brouer's SLUB bulk
	// benchmark (slab_bulk_test01, in the message of fbd02630c6e3,
	// "slub: initial bulk free implementation", i7-4790K) has an
	// alloc+free pair at 10.8 ns alone and 4.5 ns in bulks of 16: 0.41
	// of the single cost, applied to kfree_skbmem. The model's estimate:
	// the benchmark's objects are hot and its 32-object bulks, which
	// outgrow the per-CPU slab, cost more (14.6 ns a pair); one figure
	// stands for every bulk size.
	//
	// Kernels before 5.12 (the netdev toggle kfree_skb_defer) take a
	// received frame's sk_buff with build_skb's kmem_cache_alloc of one
	// object, not from the cache: priced as kfree_skbmem, the same
	// slab's single-object free (the model's estimate).
	//
	// TCP's clone (an fclone) is freed by __kfree_skb while its original
	// waits for the ACK: the destructor and two atomic_op, shared info's
	// dataref and the pair's fclone_ref, neither of which frees
	// anything; the original's free at the ACK is the whole kfree_skb.
	KfreeSkbmem int64 `cost:"kfree_skbmem" help:"the sk_buff's own kmem_cache_free inside kfree_skb (the rest of kfree_skb is skb_release_all)"`
	SkbCachePut int64 `cost:"skb_cache_put" help:"napi_skb_cache_put: the sk_buff into the CPU's napi_alloc_cache"`
	SlabBulk    int64 `cost:"slab_bulk" help:"one sk_buff of a kmem_cache_free_bulk / kmem_cache_alloc_bulk on skbuff_head_cache"`
	// SLUB's slow paths for a sender's skb head (framework/slab,
	// mm/slub.c): the fast paths, an object from or back to the CPU's
	// own slab, are inside skb_alloc and kfree_skb. slab_slowpath (30
	// ns) is one ___slab_alloc refill or one __slab_free into another
	// slab: local_lock_irqsave and the cmpxchg16b on the slab's freelist
	// and counters (that line's transfer priced apart, by distance, from
	// the CPU that last wrote it), the freelist walk setup and the stat.
	// slab_list_op (10 ns) is one add_partial or remove_partial under
	// the node's list_lock: list_add_tail or list_del on the slab's
	// slab_list and nr_partial (the slab's line priced apart).
	// slab_new (700 ns) is allocate_slab of an order-3 slab: an order-3
	// block from the zone's per-CPU free lists (rmqueue_pcplist,
	// __GFP_COMP's compound page set-up over 8 struct pages: ~300 ns)
	// and the freelist laid through its ~28 objects (a store into each
	// object's free pointer, fresh memory: ~400 ns). slab_discard (300
	// ns) is discard_slab: the compound page torn down and freed to the
	// per-CPU lists. All four are the model's estimates from the work
	// each does; no profile in the seeds prices them.
	SlabSlowpath int64 `cost:"slab_slowpath" help:"one SLUB ___slab_alloc refill or __slab_free into a slab that is not the CPU's (the slab's line priced apart)"`
	SlabListOp   int64 `cost:"slab_list_op" help:"one add_partial / remove_partial under a node's list_lock (the slab's line priced apart)"`
	SlabNew      int64 `cost:"slab_new" help:"allocate_slab: an order-3 slab from the page allocator and its freelist laid"`
	SlabDiscard  int64 `cost:"slab_discard" help:"discard_slab: an empty slab's pages back to the page allocator"`
	// destructor (25 ns) is sock_wfree for a UDP socket
	// (net/core/sock.c: SOCK_RCU_FREE with sock_def_write_space, one
	// __refcount_sub_and_test on sk_wmem_alloc, priced apart as the
	// socket line's atomic, then sock_def_write_space_wfree's writeable
	// and waiter checks), called through skb_release_head_state's
	// INDIRECT_CALL_3; destructor_retpoline (60 ns) is the same through a
	// retpolined indirect call, whose thunk forces a misprediction. Both
	// are the model's estimates. Eric Dumazet's patch 1/5 (llist thread)
	// is why the two are apart: "a very high cost (20%) in sock_wfree()
	// due to CONFIG_MITIGATION_RETPOLINE=y" on the CPUs doing TX
	// completions, a share of their time that gives no ns per call.
	Destructor          int64 `cost:"destructor" help:"sock_wfree called directly (INDIRECT_CALL wrapper hit)"`
	DestructorRetpoline int64 `cost:"destructor_retpoline" help:"sock_wfree through a retpolined indirect call"`
	// validate_xmit (30 ns) is validate_xmit_skb for a small skb without
	// GSO and with the checksum offloaded (net/core/dev.c:
	// netif_skb_features, validate_xmit_vlan, sk_validate_xmit_skb, the
	// GSO and checksum tests that fall through, validate_xmit_xfrm): flag
	// tests on lines already hot. net_tx_action (60 ns) is
	// net_tx_action's work per qdisc it takes off the CPU's output_queue
	// (the list taken with interrupts off, the walk, qdisc_run's entry;
	// the root lock and the clear_bit of __QDISC_STATE_SCHED are priced
	// apart). softirq_entry (80 ns) is handle_softirqs' entry and exit
	// (kernel/softirq.c: the pending mask taken, interrupts enabled
	// around the handlers, the accounting). hardirq (600 ns) is one
	// device interrupt: entry (with the kernel's speculation
	// mitigations), the MSI-X handler (napi_schedule_irqoff), irq_exit
	// and the APIC EOI. All four are the model's estimates; no seed
	// profiles them.
	ValidateXmit int64 `cost:"validate_xmit" help:"validate_xmit_skb per packet (no GSO, csum offloaded)"`
	NetTxAction  int64 `cost:"net_tx_action" help:"net_tx_action entry per qdisc taken off output_queue"`
	SoftirqEntry int64 `cost:"softirq_entry" help:"__do_softirq entry/exit"`
	HardIRQ      int64 `cost:"hardirq" help:"hard interrupt entry, handler and exit"`

	// Driver (descriptor ring). The functions named are ice's, in
	// drivers/net/ethernet/intel/ice/ice_txrx.c.
	//
	// driver_xmit (90 ns) is ice_xmit_frame_ring and ice_tx_map for a
	// linear skb: ice_tx_csum's header parsing, dma_map_single, one data
	// descriptor written, wmb(), next_to_watch, ice_maybe_stop_tx and
	// BQL's __netdev_tx_sent_queue. doorbell (160 ns) is the tail write
	// ice_tx_map makes unless netdev_xmit_more() (writel(i,
	// tx_ring->tail), an uncached MMIO store; the RX refill's tail write
	// is priced the same): the cost xmit_more and bulk dequeue exist to
	// amortise. desc_clean (35 ns) is ice_clean_tx_irq's work per packet:
	// next_to_watch and the DD bit read, dma_unmap_single, the tx_buf
	// cleared (the free is kfree_skb; BQL's netdev_tx_completed_queue
	// runs once a poll). napi_poll (250 ns) is one NAPI poll's own
	// overhead: napi_poll's bookkeeping, napi_complete_done, ice_net_dim
	// and ice_enable_interrupt's MMIO write of GLINT_DYN_CTL (about a
	// doorbell). dma_latency (900 ns) is the NIC's delay from the tail
	// write to the frame's first byte on the wire: two dependent PCIe
	// reads, the descriptor then the data, each a round trip of several
	// hundred ns on server hosts (pcie-bench: Neugebauer et al.,
	// "Understanding PCIe performance for end host networking", SIGCOMM
	// 2018). peer_rx (400 ns) is veth's receive of a frame on the peer
	// (veth_xmit's hand-over, the backlog or the NAPI ring,
	// __netif_receive_skb and ip_rcv), of the order of what a NIC's local
	// receive sums to below (rx_clean, gro_receive, netif_receive_skb and
	// ip_rcv: 325 ns) with veth's hand-over in place of the descriptor
	// work. backlog_poll (90 ns) is a poll of a CPU's softnet backlog
	// NAPI (net/core/dev.c's process_backlog under napi_poll): napi_poll
	// less its interrupt re-arm, the MMIO write priced as a doorbell
	// (250 - 160), for the backlog has no device to re-arm; what is left
	// is napi_poll's bookkeeping and, in place of ice_net_dim, the
	// input_pkt_queue lock taken with interrupts off to test and splice
	// the queue and the inline __napi_complete. veth_poll (90 ns) is a
	// poll of a veth peer rx queue's NAPI (drivers/net/veth.c: napi_poll
	// -> veth_poll): a software NAPI, so napi_poll less the same MMIO
	// re-arm (250 - 160), no interrupt and no DIM behind it; what is
	// left is napi_poll's bookkeeping, napi_complete_done and, in place
	// of ice_net_dim, veth_poll's smp_store_mb of rx_notify_masked, its
	// ring re-check (__ptr_ring_empty) and the peer txq's stopped test.
	// All eight are the model's estimates: no seed measures them.
	DriverXmit  int64 `cost:"driver_xmit" help:"ndo_start_xmit per packet: DMA map, descriptor write"`
	Doorbell    int64 `cost:"doorbell" help:"tail bump: one uncached MMIO write"`
	DescClean   int64 `cost:"desc_clean" help:"per-packet TX clean: unmap, BQL bookkeeping"`
	NapiPoll    int64 `cost:"napi_poll" help:"NAPI poll entry/exit and interrupt re-arm"`
	BacklogPoll int64 `cost:"backlog_poll" help:"softnet backlog NAPI poll entry/exit (process_backlog: no interrupt to re-arm)"`
	VethPoll    int64 `cost:"veth_poll" help:"veth peer NAPI poll entry/exit (veth_poll: software NAPI, no interrupt to re-arm)"`
	PeerRx      int64 `cost:"peer_rx" help:"veth: per-packet receive on the peer (netif_rx + backlog + stack)"`
	DMALatency  int64 `cost:"dma_latency" help:"device latency from doorbell to the first byte on the wire (descriptor fetch + DMA read over PCIe)"`

	// Receive side and IPv4 forwarding (framework/netdev/rx.go), per
	// frame on the RX CPU in NET_RX_SOFTIRQ: rx_clean, rx_refill,
	// gro_receive, netif_receive_skb, ip_rcv, ip_forward and
	// neigh_output. Their sum, 455 ns, plus the TX path's own costs for
	// the same frame (about 350 ns uncontended: xmit entry, a simple
	// qdisc, driver xmit, TX clean, free) puts plain forwarding of 64 B
	// frames at ~0.8 us per frame, ~1.2 Mpps per core:
	// inside the 1-2 Mpps per core reported for the kernel's IPv4
	// forwarding of 64 B frames on recent Xeons (A. Toonk, "Linux kernel
	// and measuring network throughput", 2020, X710 on 5.0; J. D. Brouer's
	// netdev talks comparing kernel forwarding with XDP_REDIRECT; the XDP
	// paper, Høiland-Jørgensen et al., CoNEXT 2018). How the sum splits
	// over the functions is the model's estimate: no profile of the seeds'
	// DUTs gives it.
	//
	// rx_clean's napi_build_skb takes its sk_buff from the CPU's
	// napi_alloc_cache (napi_skb_cache_get): priced in rx_clean when the
	// cache has one; an empty cache's refill, one kmem_cache_alloc_bulk
	// of 16, is slab_bulk a sk_buff more.
	RxClean         int64 `cost:"rx_clean" help:"driver RX clean per frame: descriptor write-back, DMA sync, napi_build_skb on the buffer (from the CPU's sk_buff cache), skb fields (hash, csum, queue), eth_type_trans"`
	RxRefill        int64 `cost:"rx_refill" help:"one RX buffer back to the NIC: page_pool allocation from its cache and a descriptor write (the tail write is a doorbell)"`
	GROReceive      int64 `cost:"gro_receive" help:"napi_gro_receive of a frame GRO does not merge (UDP): dev_gro_receive miss, gro_normal_one"`
	NetifReceiveSkb int64 `cost:"netif_receive_skb" help:"__netif_receive_skb_list_core per skb: protocol handlers, delivery to ip_list_rcv"`
	IPRcv           int64 `cost:"ip_rcv" help:"ip_rcv_core header checks and ip_rcv_finish_core: ip_route_input_noref, the FIB lookup"`
	IPForward       int64 `cost:"ip_forward" help:"ip_forward + ip_forward_finish + ip_output/ip_finish_output: TTL, checksum, skb_cow, dst"`
	NeighOutput     int64 `cost:"neigh_output" help:"neigh_output -> neigh_hh_output: the cached L2 header copied in front, then dev_queue_xmit"`

	// tc mirred and ifb (the ingress-shaping path: a filter's mirred
	// redirect to an ifb, whose tasklet gives the skb back). mirred
	// (40 ns) is tcf_mirred_act's own work: the nest and loop checks on
	// softnet_data.xmit, tcf_lastuse_update and the per-CPU bstats, the
	// target's READ_ONCE and skb_set_redirected (a clone, where one is
	// made, is priced as netem's: kfree_skb's figure). ifb_xmit (20 ns)
	// is ifb_xmit: the u64_stats update, __skb_queue_tail and the
	// tasklet_pending test. tasklet_run (50 ns) is one tasklet run by
	// tasklet_action_common (the CPU's list taken with interrupts off,
	// tasklet_trylock, the SCHED bit's test_and_clear, the call) with
	// ifb_ri_tasklet's skb_peek; the _xmit_lock it takes is priced as
	// a lock. ifb_tasklet_skb (30 ns) is ifb_ri_tasklet's work for each
	// skb it gives back: the stats, dev_get_by_index_rcu's hash lookup,
	// skb_pull_rcsum for one redirected from ingress. All four are the
	// model's estimates, by the length of the code against the entries
	// above (validate_xmit 30, net_tx_action 60): no seed profiles ifb.
	Mirred        int64 `cost:"mirred" help:"tcf_mirred_act: nest and loop checks, stats, skb_set_redirected"`
	IfbXmit       int64 `cost:"ifb_xmit" help:"ifb_xmit: stats, __skb_queue_tail on the queue's rq, the tasklet_pending test"`
	TaskletRun    int64 `cost:"tasklet_run" help:"one tasklet run by tasklet_action_common (list, trylock, SCHED bit, call)"`
	IfbTaskletSkb int64 `cost:"ifb_tasklet_skb" help:"ifb_ri_tasklet per skb given back: stats, dev_get_by_index_rcu, skb_pull_rcsum"`

	// TCP and the probes (framework/workload's tcp_stream, ping,
	// udp_rr). A kernel sender with TSO moves ~40 Gbit/s per core
	// (netperf TCP_STREAM on a recent Xeon, 64 KB skbs): ~13 us per
	// 64 KB, most of it the user copy (tcp_copy_per_kb); the fixed parts
	// below (tcp_sendmsg, tcp_xmit, tcp_rcv, sock_rcv, gso_segment) are
	// the model's split of the rest.
	TCPSendmsg   int64 `cost:"tcp_sendmsg" help:"one sendmsg on a TCP socket: syscall entry and exit, lock_sock/release_sock, tcp_sendmsg_locked's fixed part and tcp_push (the copy is tcp_copy_per_kb)"`
	TCPCopyPerKB int64 `cost:"tcp_copy_per_kb" help:"copying 1 KiB of user data into the socket's page fragments (copy_from_user, ~12 GB/s)"`
	TCPXmit      int64 `cost:"tcp_xmit" help:"one skb out of tcp_write_xmit: tcp_transmit_skb (clone, header and options), ip_queue_xmit, ip_output, neigh_output, up to __dev_queue_xmit"`
	TCPRcv       int64 `cost:"tcp_rcv" help:"tcp_v4_rcv and tcp_rcv_established for one segment after ip_rcv: the socket lookup, then tcp_ack (scoreboard, RTT, cwnd) for an ACK or tcp_data_queue for data"`
	SockRcv      int64 `cost:"sock_rcv" help:"udp_rcv or ping_rcv: one datagram queued on its socket after ip_rcv"`
	GSOSegment   int64 `cost:"gso_segment" help:"skb_gso_segment per segment made (cake's split-gso): an skb, the headers copied, the TCP header fixed up"`

	// Lockdep: what a debug kernel (CONFIG_PROVE_LOCKING, with
	// CONFIG_DEBUG_SPINLOCK) adds, applied by the lockdep toggle
	// (ApplyLockdep). Jonas Köppeler's profile of __dev_queue_xmit on
	// E2b's DUT (llist thread) was taken on such a kernel and shows each
	// about once a packet: lock_acquire and lock_release under
	// netdev_pick_tx's RCU read section (0.78% and 0.52%) and under
	// __skb_flow_dissect's (1.08% and 0.65%), and
	// seqcount_lockdep_reader_access under cake_enqueue's ktime_get
	// (1.94%). Scaled as the rest of that profile is, by cake_hash's
	// 3.17% = qdisc_hash's 40 ns (12.6 ns a percent): lockdep_acquire 12
	// ns (the two lock_acquire figures' mean), lockdep_release 7 ns,
	// lockdep_seqcount 24 ns. do_raw_spin_lock's own checks (0.24%
	// beside _raw_spin_lock's lock_acquire's 0.71%, ~3 ns) are left out.
	LockdepAcquire  int64 `cost:"lockdep_acquire" help:"lockdep's lock_acquire on a spin lock, RCU read section or local_lock (the lockdep toggle; calibrated to a kernel profile)"`
	LockdepRelease  int64 `cost:"lockdep_release" help:"lockdep's lock_release (the lockdep toggle; calibrated to a kernel profile)"`
	LockdepSeqcount int64 `cost:"lockdep_seqcount" help:"seqcount_lockdep_reader_access in ktime_get (the lockdep toggle; calibrated to a kernel profile)"`
}

// DefaultCosts returns the calibrated defaults.
func DefaultCosts() *Costs {
	return &Costs{
		LineSMT:         12,
		LineSocket:      110,
		LineRemote:      300,
		LineMemory:      110,
		LineHit:         1,
		LinesOverlapped: 2,
		LineLLC:         25,
		L2Skbs:          2048,
		AtomicOp:        8,

		SpinAcquire: 8,
		SpinRelease: 4,

		StackPerPacket: 600,
		SkbAlloc:       250,
		PickTx:         25,
		XmitEntry:      40,
		WakeUp:         600,

		// context_switch: about a fifth of a `perf bench sched pipe`
		// round trip (two wake-ups, two context switches, two pipe
		// syscalls: ~5 us per loop with both tasks on one CPU of a
		// recent Xeon), in line with LMbench lat_ctx's 1-2 us for two
		// processes.
		ContextSwitch: 1000,
		// wake_idle_latency: intel_idle's exit_latency for C1E on
		// Sapphire/Granite Rapids (spr_cstates: C1 1 us, C1E 2 us, C6
		// 290 us); deeper C-states are not modelled. A task woken on an
		// idle CPU and an interrupt delivered to one (a device's, a
		// timer's, an IPI) wait for it alike.
		WakeIdleLatency: 2000,
		// tick: the local APIC timer interrupt with sched_tick, timers
		// and RCU work on a busy CPU: about a microsecond.
		Tick: 800,
		// newidle_balance: sched_balance_newidle walks the LLC's
		// runqueues; the kernel tracks its cost (max_newidle_lb_cost), a
		// few us on large LLCs.
		NewidleBalance: 2000,
		// task_lines: a syscall loop's hot set: a few stack frames,
		// task_struct and thread_info, the user buffer (120 B), the file
		// and socket lines: about 1 KiB.
		TaskLines: 16,
		// smt_share_pct: two busy hyperthreads give about 1.2-1.3x one
		// thread's throughput on Intel cores (Intel's own "up to 30%"),
		// so each runs at ~60% speed: work takes ~1.6x. It lengthens
		// execution only: a cache line's transfer (the line_* costs)
		// takes the interconnect's time whatever the sibling does
		// (CPU.Stall).
		SMTSharePct: 60,

		LlistNode:           8,
		QdiscEnqueue:        25,
		QdiscDequeue:        25,
		QdiscHash:           40,
		QdiscSiphash:        15,
		BondHash:            8,
		QdiscFlowScan:       4,
		QdiscTstamp:         18,
		QdiscRand:           25,
		QdiscDataLines:      2,
		SkbLines:            2,
		KfreeSkb:            90,
		KfreeSkbmem:         32,
		SkbCachePut:         2,
		SlabBulk:            13,
		SlabSlowpath:        30,
		SlabListOp:          10,
		SlabNew:             700,
		SlabDiscard:         300,
		Destructor:          25,
		DestructorRetpoline: 60,
		ValidateXmit:        30,
		NetTxAction:         60,
		SoftirqEntry:        80,
		HardIRQ:             600,

		DriverXmit:  90,
		Doorbell:    160,
		DescClean:   35,
		NapiPoll:    250,
		PeerRx:      400,
		BacklogPoll: 90,
		VethPoll:    90,
		DMALatency:  900,

		RxClean:         120,
		RxRefill:        25,
		GROReceive:      45,
		NetifReceiveSkb: 50,
		IPRcv:           110,
		IPForward:       70,
		NeighOutput:     35,

		Mirred:        40,
		IfbXmit:       20,
		TaskletRun:    50,
		IfbTaskletSkb: 30,

		TCPSendmsg:   1000,
		TCPCopyPerKB: 80,
		TCPXmit:      900,
		TCPRcv:       700,
		SockRcv:      300,
		GSOSegment:   150,

		LockdepAcquire:  12,
		LockdepRelease:  7,
		LockdepSeqcount: 24,
	}
}

// ApplyLockdep adds lockdep's costs (the lockdep toggle: a kernel built
// with CONFIG_PROVE_LOCKING) to the entries whose code takes a lock or
// enters an RCU read section, counted in the kernel's code: every spin
// lock the model takes (lock_acquire before it, lock_release before
// the unlock); one RCU read section each in __dev_queue_xmit
// (rcu_read_lock_bh), netdev_pick_tx, __skb_flow_dissect,
// netif_receive_skb_list_internal, ip_route_input_noref and
// ip_finish_output2 (so in the UDP and TCP senders' output path and in
// neigh_output's); get_random_u32's local_lock; lock_sock and
// release_sock in tcp_sendmsg; p->pi_lock and the runqueue lock in
// try_to_wake_up, the runqueue lock in __schedule; and the timekeeper's
// seqcount reader in ktime_get. Applied after --set, so it adds to
// the values set.
func (c *Costs) ApplyLockdep() {
	pair := c.LockdepAcquire + c.LockdepRelease
	c.SpinAcquire += c.LockdepAcquire
	c.SpinRelease += c.LockdepRelease
	for _, e := range []*int64{&c.XmitEntry, &c.PickTx, &c.QdiscHash, &c.QdiscRand,
		&c.NetifReceiveSkb, &c.IPRcv, &c.NeighOutput, &c.StackPerPacket, &c.TCPSendmsg, &c.TCPXmit, &c.ContextSwitch} {
		*e += pair
	}
	c.WakeUp += 2 * pair
	c.QdiscTstamp += c.LockdepSeqcount
}

// Line returns the transfer cost for a distance class.
func (c *Costs) Line(dist int) int64 {
	switch dist {
	case DistSelf:
		return c.LineHit
	case DistSMT:
		return c.LineSMT
	case DistSocket:
		return c.LineSocket
	case DistRemote:
		return c.LineRemote
	default:
		return c.LineMemory
	}
}

// MaxCost bounds a cost in ns: one second for one operation.
const MaxCost = int64(Second)

// CostInfo describes one entry of the table.
type CostInfo struct {
	Name  string
	Value int64
	Max   int64 // the most Set takes (the least is 0)
	Help  string
}

func costMax(f reflect.StructField) int64 {
	if m := f.Tag.Get("max"); m != "" {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			panic("sim: bad max tag on cost " + f.Name)
		}
		return n
	}
	return MaxCost
}

// List returns every entry, sorted by name.
func (c *Costs) List() []CostInfo {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	out := make([]CostInfo, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		out = append(out, CostInfo{Name: f.Tag.Get("cost"), Value: v.Field(i).Int(), Max: costMax(f), Help: f.Tag.Get("help")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Set overrides one cost by name, within 0..its max.
func (c *Costs) Set(name, value string) error {
	n, err := strconv.ParseInt(strings.TrimSuffix(value, "ns"), 10, 64)
	if err != nil {
		return fmt.Errorf("cost %s: %q is not a whole number of nanoseconds", name, value)
	}
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("cost") == name {
			if most := costMax(t.Field(i)); n < 0 || n > most {
				return fmt.Errorf("cost %s: %d is out of range: must be >= 0 and <= %d", name, n, most)
			}
			v.Field(i).SetInt(n)
			return nil
		}
	}
	names := make([]string, 0, t.NumField())
	for _, ci := range c.List() {
		names = append(names, ci.Name)
	}
	return fmt.Errorf("unknown cost %q (known: %s)", name, strings.Join(names, ", "))
}
