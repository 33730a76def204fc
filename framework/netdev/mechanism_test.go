package netdev

import (
	"strings"
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// testDriver accepts everything, completes nothing on its own, and can be
// told to refuse (NETDEV_TX_BUSY) after a number of packets.
type testDriver struct {
	held    []skb.Handle
	refuse  int // accept this many, then BUSY; <0 never refuse
	batches []int
	// taken, if set, runs after the driver takes each packet, inside
	// Xmit: what other CPUs may do at a sync point there.
	taken func(ctx driver.Ctx, p skb.Packet)
	// refused, if set, runs on the packet the driver refuses, before
	// Xmit returns NETDEV_TX_BUSY.
	refused func(ctx driver.Ctx, p skb.Packet)
}

func (d *testDriver) Init(s driver.Setup, _ []string) (driver.Info, error) {
	return driver.Info{BQL: true, Vectors: s.NumTxQ, QueueVec: make([]int, s.NumTxQ), RateBps: 1e11}, nil
}

func (d *testDriver) Xmit(ctx driver.Ctx, q int, b []skb.Packet) (int, driver.TxCode) {
	d.batches = append(d.batches, len(b))
	for i, p := range b {
		if d.refuse >= 0 && len(d.held) >= d.refuse {
			if d.refused != nil {
				d.refused(ctx, p)
			}
			return i, driver.TxBusy
		}
		d.held = append(d.held, p.Handle)
		ctx.SentQueueMore(q, int(p.Len), i < len(b)-1)
		if d.taken != nil {
			d.taken(ctx, p)
		}
	}
	return len(b), driver.TxOK
}

func (d *testDriver) Poll(ctx driver.Ctx, v, budget int) (int, bool) {
	var bytes int
	for _, h := range d.held {
		bytes += int(ctx.(*dctx).net.Pool.Lookup(h).Len)
		ctx.Consume(h)
	}
	ctx.CompletedQueue(v, len(d.held), bytes)
	d.held = d.held[:0]
	return 0, true
}

func (d *testDriver) Stats() []driver.QueueStats { return nil }

var testDrv *testDriver

func init() {
	driver.Register("test", "test driver", func() driver.Driver {
		testDrv = &testDriver{refuse: -1}
		return testDrv
	})
}

// localMaker makes registered qdiscs and drivers behind the in-process
// plugin boundary, as plugin.Local does (netdev cannot import it).
type localMaker struct{}

func (localMaker) Qdisc(kind string) (qdisc.Qdisc, error) {
	q, err := qdisc.New(kind)
	if err != nil {
		return nil, err
	}
	return wire.WrapQdisc(q), nil
}

func (localMaker) Driver(name string) (driver.Driver, error) {
	d, err := driver.New(name)
	if err != nil {
		return nil, err
	}
	return wire.WrapDriver(d), nil
}

// harness is a small host for mechanism tests.
type harness struct {
	t   *testing.T
	e   *sim.Engine
	n   *Net
	dev *Device
}

func newHarness(t *testing.T, cfg Config, cpus int, drv string, queues int, qd ...string) *harness {
	t.Helper()
	return newHarnessCosts(t, cfg, sim.DefaultCosts(), cpus, drv, queues, qd...)
}

// newHarnessCosts is newHarness on a cost table of the test's own.
func newHarnessCosts(t *testing.T, cfg Config, costs *sim.Costs, cpus int, drv string, queues int, qd ...string) *harness {
	t.Helper()
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: cpus, ThreadsPerCore: 1}, costs, 7)
	if err != nil {
		t.Fatal(err)
	}
	n := NewNet(e, cfg, localMaker{})
	dev, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: drv, Queues: queues, Qdisc: qd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return &harness{t, e, n, dev}
}

func (h *harness) skb(c *sim.CPU, i int) *skb.SKB {
	s := h.n.AllocSkb(c)
	s.Len, s.Hash = 162, uint32(i)*2654435761
	return s
}

// on runs fn on CPU cpu at time at.
func (h *harness) on(cpu int, at sim.Time, fn func(c *sim.CPU)) {
	h.e.CPUs[cpu].Start(at, fn)
}

// runOnce is one qdisc_run under q's root lock, freeing what it dropped
// after the unlock as __qdisc_run's callers do.
func (h *harness) runOnce(c *sim.CPU, q *Qdisc) {
	q.lock.Lock(c, h.n.site.rootEnq)
	runFree, _, _ := h.n.qdiscRun(c, q)
	q.lock.Unlock(c)
	h.n.kfreeSkbList(c, &runFree)
}

func (h *harness) run(until sim.Time) {
	h.t.Helper()
	if err := h.e.Run(until); err != nil {
		h.t.Fatal(err)
	}
	if err := h.n.CheckAccounting(); err != nil {
		h.t.Fatal(err)
	}
}

func profile(t *testing.T, name string, set ...string) Config {
	t.Helper()
	cfg, err := Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(set); i += 2 {
		if err := cfg.Set(set[i], set[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// The llist batch is enqueued by exactly one CPU, the one that found the
// list empty, in the order the skbs were pushed.
func TestLlistBatchOneCPUArrivalOrder(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 16, "ice", 1, "pfifo", "limit", "100000")
	pushed := map[skb.Handle]int{}
	seq := 0
	h.n.Hooks.DeferPush = func(c *sim.CPU, q *Qdisc, s *skb.SKB) { seq++; pushed[s.Handle] = seq }
	enqueued := map[skb.Handle]bool{}
	batches := 0
	h.n.Hooks.EnqueueBatch = func(c *sim.CPU, q *Qdisc, b []*skb.SKB) {
		batches++
		if int(b[0].SenderCPU) != c.ID {
			t.Errorf("batch enqueued by cpu%d but its first skb came from cpu%d (the CPU that found the list empty)", c.ID, b[0].SenderCPU)
		}
		for i, s := range b {
			if enqueued[s.Handle] {
				t.Errorf("skb %#x enqueued twice", uint64(s.Handle))
			}
			enqueued[s.Handle] = true
			if i > 0 && pushed[s.Handle] <= pushed[b[i-1].Handle] {
				t.Errorf("batch out of arrival order: push #%d after #%d", pushed[s.Handle], pushed[b[i-1].Handle])
			}
		}
	}
	for cpu := 0; cpu < 16; cpu++ {
		h.on(cpu, sim.Time(cpu), func(c *sim.CPU) {
			for i := 0; ; i++ {
				c.Spend(200)
				h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
			}
		})
	}
	h.run(2 * sim.Millisecond)
	if batches == 0 || len(enqueued) < 100 {
		t.Fatalf("too little traffic to test: %d batches, %d skbs", batches, len(enqueued))
	}
	if len(enqueued) <= batches {
		t.Fatalf("no batching happened: %d skbs in %d batches", len(enqueued), batches)
	}
	t.Logf("%d skbs in %d batches", len(enqueued), batches)
}

// The running flag is never held by two CPUs at once, in either xmit
// generation.
func TestRunningFlagExclusive(t *testing.T) {
	for _, prof := range []string{"6.18", "6.19-rc1", "net-next"} {
		h := newHarness(t, profile(t, prof), 8, "ice", 1, "pfifo")
		owner := map[*Qdisc]int{}
		runs := 0
		h.n.Hooks.RunBegin = func(c *sim.CPU, q *Qdisc) {
			if o, ok := owner[q]; ok {
				t.Errorf("%s: cpu%d began running %s while cpu%d runs it", prof, c.ID, q.Handle, o)
			}
			owner[q] = c.ID
			runs++
		}
		h.n.Hooks.RunEnd = func(c *sim.CPU, q *Qdisc) {
			if owner[q] != c.ID {
				t.Errorf("%s: cpu%d ended a run it did not begin", prof, c.ID)
			}
			delete(owner, q)
		}
		for cpu := 0; cpu < 8; cpu++ {
			h.on(cpu, 0, func(c *sim.CPU) {
				for i := 0; ; i++ {
					c.Spend(1000) // 8 Mpps at one queue: every path contends
					h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
				}
			})
		}
		h.run(sim.Millisecond)
		if runs < 10 {
			t.Fatalf("%s: only %d qdisc runs", prof, runs)
		}
	}
}

// fill enqueues n skbs straight into q (as if senders had).
func (h *harness) fill(c *sim.CPU, q *Qdisc, n int) {
	var toFree skb.List
	for i := 0; i < n; i++ {
		s := h.skb(c, i)
		h.enqueueOffered(c, q, s, &toFree)
	}
	if toFree.Len != 0 {
		h.t.Fatalf("fill dropped %d", toFree.Len)
	}
}

// Once the driver has taken a packet, the host no longer touches its skb:
// a sync point inside the driver's xmit (netdev_tx_sent_queue's line,
// netif_tx_stop_queue) lets another CPU complete it and the pool give the
// skb to the next sender, who links it into a defer list. The host used
// to walk the bulk's list after the call and cleared that skb's next
// pointer, cutting the defer list: the skbs behind it were lost (E1's
// senders slept on send buffers charged with them, for good).
func TestXmitLeavesTakenSkbsAlone(t *testing.T) {
	h := newHarness(t, profile(t, "6.18", "bql", "off"), 2, "test", 1, "pfifo")
	q := h.dev.Root
	var other skb.List
	var reused bool
	testDrv.taken = func(ctx driver.Ctx, p skb.Packet) {
		c := h.e.CPUs[0] // the CPU running the qdisc below
		testDrv.held = testDrv.held[:len(testDrv.held)-1]
		ctx.Consume(p.Handle) // completed by another CPU, at once
		ctx.(driver.SyncPoint).SyncPoint()
		s := h.n.AllocSkb(c)
		reused = uint32(s.Handle) == uint32(p.Handle) || reused // the same slot
		other.Push(s)                                           // the next sender's skb, on some list
		other.Push(h.n.AllocSkb(c))
	}
	h.on(0, 0, func(c *sim.CPU) {
		h.fill(c, q, 1)
		c.LocalBhDisable()
		h.runOnce(c, q)
		testDrv.taken = nil
		c.LocalBhEnable()
		if other.Len != 2 || other.Head == nil || other.Head.Next != other.Tail {
			t.Errorf("the list holding the reused skb was cut: len %d, head.next %p, tail %p", other.Len, other.Head.Next, other.Tail)
		}
		for s := other.Pop(); s != nil; s = other.Pop() { // hand them back
			h.n.unoffered--
			h.n.Offered++
			h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
		}
	})
	h.run(sim.Millisecond)
	if !reused {
		t.Skip("the pool did not hand the freed skb back: the test no longer reaches its case")
	}
}

// A driver that refuses a packet keeps it: one that consumed it as well
// is a driver bug the host names, rather than requeue a freed skb.
func TestXmitRefusedMustStayWithTheHost(t *testing.T) {
	h := newHarness(t, profile(t, "6.18", "bql", "off"), 2, "test", 1, "pfifo")
	q := h.dev.Root
	testDrv.refuse = 0
	testDrv.refused = func(ctx driver.Ctx, p skb.Packet) { ctx.Consume(p.Handle) }
	h.on(0, 0, func(c *sim.CPU) {
		h.fill(c, q, 1)
		c.LocalBhDisable()
		h.runOnce(c, q)
		c.LocalBhEnable()
	})
	err := h.e.Run(sim.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "refused packet") {
		t.Fatalf("run error %v, want the driver named for consuming a packet it refused", err)
	}
}

// When the quota runs out, __qdisc_run reschedules the qdisc
// (__netif_schedule -> NET_TX_SOFTIRQ) instead of draining it.
func TestQuotaReschedules(t *testing.T) {
	h := newHarness(t, profile(t, "6.18", "bql", "off"), 2, "test", 1, "pfifo")
	q := h.dev.Root
	var afterRun, qlenAfter int
	var sched bool
	var raised bool
	h.on(0, 0, func(c *sim.CPU) {
		h.fill(c, q, 200)
		c.LocalBhDisable()
		h.runOnce(c, q)
		afterRun = len(testDrv.held)
		qlenAfter = q.Qlen()
		sched = q.state&stateSched != 0
		raised = c.SoftirqPending(sim.NetTxSoftirq)
		c.LocalBhEnable() // net_tx_action runs here and sends more
	})
	h.run(sim.Millisecond)
	if afterRun != 64 {
		t.Errorf("one __qdisc_run sent %d packets, want the quota 64", afterRun)
	}
	if qlenAfter != 200-64 || !sched || !raised {
		t.Errorf("after the quota: qlen %d (want 136), SCHED %v, NET_TX raised %v", qlenAfter, sched, raised)
	}
	if len(testDrv.held) != 200 {
		t.Errorf("net_tx_action should have sent the rest: driver holds %d of 200", len(testDrv.held))
	}
	if st := h.n.Sched[SchedQuota]; st.Calls < 1 || st.Raised != st.Calls {
		t.Errorf("quota callers %+v: want every call to raise NET_TX", st)
	}
	if a := h.n.TxAction; a.Qdiscs < 1 || a.Packets != 200-64 || a.FoundRunning != 0 {
		t.Errorf("net_tx_action %+v: want it to run the qdisc and send the other 136", a)
	}
}

// Bulk dequeue respects BQL's available bytes and, with bulk_quota, the
// remaining quota (0345552a653c).
func TestBulkDequeueLimits(t *testing.T) {
	cases := []struct {
		name      string
		quota     string
		avail     uint32
		budget    int
		wantBatch int
	}{
		{"bql bytes bound", "on", 5000, 64, 31}, // 31*162 = 5022 >= 5000
		{"quota bound", "on", 1 << 20, 64, 65},  // 1 + remaining quota
		{"small remaining quota", "on", 1 << 20, 10, 11},
		{"quota off: bytes only", "off", 1 << 20, 64, 300},
		{"no BQL room: one", "on", 0, 64, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18", "bulk_quota", tc.quota), 2, "test", 2, "mq", "pfifo", "limit", "1000")
			txq := h.dev.Queues[0]
			q := txq.qdisc
			txq.DQL.Limit, txq.DQL.AdjLimit = tc.avail, tc.avail
			got := -1
			h.on(0, 0, func(c *sim.CPU) {
				h.fill(c, q, 300)
				list, _, packets := h.n.dequeueSkb(c, q, tc.budget)
				got = list.Len
				if packets != list.Len {
					t.Errorf("packets %d != list length %d", packets, list.Len)
				}
				for s := list.Pop(); s != nil; s = list.Pop() {
					h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
				}
			})
			h.run(sim.Millisecond)
			if got != tc.wantBatch {
				t.Errorf("batch of %d, want %d", got, tc.wantBatch)
			}
		})
	}
}

// A stopped queue makes sch_direct_xmit requeue to gso_skb; the requeued
// skb leaves first once the queue is woken.
func TestStoppedQueueRequeues(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "pfifo")
	q := h.dev.Root
	txq := h.dev.Queues[0]
	var requeued, qlen int
	var first, head *skb.SKB
	h.on(0, 0, func(c *sim.CPU) {
		h.fill(c, q, 3)
		c.LocalBhDisable()
		q.lock.Lock(c, h.n.site.rootEnq)
		list, _, _ := h.n.dequeueSkb(c, q, 64)
		first = list.Head
		txq.state |= queueDrvXoff // the driver stopped the queue meanwhile
		if h.n.schDirectXmit(c, &list, q, h.dev, txq, true, true) {
			t.Error("sch_direct_xmit returned true on a stopped queue")
		}
		requeued, qlen = q.gsoSkb.Len, q.Qlen()
		if l, _, _ := h.n.dequeueSkb(c, q, 64); !l.Empty() {
			t.Error("dequeue_skb returned a packet while the queue is stopped")
		}
		txq.state &^= queueDrvXoff
		l, _, _ := h.n.dequeueSkb(c, q, 64)
		head = l.Head
		for s := l.Pop(); s != nil; s = l.Pop() {
			h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
		}
		q.lock.Unlock(c)
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	if requeued != 1 || q.Requeues != 1 || qlen != 3 {
		t.Errorf("requeued %d (requeues %d), qlen %d; want 1, 1, 3", requeued, q.Requeues, qlen)
	}
	if st := h.n.Sched[SchedRequeue]; st.Calls != 1 {
		t.Errorf("requeue callers %+v: want one __netif_schedule from dev_requeue_skb", st)
	}
	if head != first {
		t.Error("the requeued skb did not leave first")
	}
	if len(testDrv.held) == 0 {
		t.Error("the qdisc was not rescheduled after the requeue")
	}
}

// A push onto a non-empty defer list fetches the list's line once, for
// ownership (READ_ONCE of the head, then the defer_count increment and
// the cmpxchg hit it): __dev_queue_xmit costs its entry, the queue pick
// and one transfer, which puts it in the seed's [128, 256) bucket.
func TestDeferPushOneTransfer(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "test", 1, "pfifo")
	q := h.dev.Root
	costs := h.e.Costs
	var took sim.Time
	h.on(1, 0, func(c *sim.CPU) {
		q.lineDefer.Write(c) // the previous pusher has the line
		q.deferHead = h.skb(c, 0)
		h.n.unoffered--
		h.n.Offered++
	})
	h.on(0, 10*sim.Microsecond, func(c *sim.CPU) {
		t0 := c.Now()
		if rc := h.n.DevQueueXmit(c, h.dev, h.skb(c, 1)); rc != qdisc.XmitSuccess {
			t.Errorf("push: rc %v", rc)
		}
		took = c.Now() - t0
		if q.deferHead == nil || q.deferHead.Next == nil || q.deferCount != 1 {
			t.Errorf("push: defer list %v, count %d; want two skbs, one counted", q.deferHead, q.deferCount)
		}
		for s := q.deferHead; s != nil; {
			nx := s.Next
			h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
			s = nx
		}
		q.deferHead, q.deferCount = nil, 0
	})
	h.run(sim.Millisecond)
	want := sim.Time(costs.XmitEntry + costs.PickTx + costs.LineSocket + 2*(costs.LineHit+costs.AtomicOp))
	if took != want {
		t.Errorf("push took %v, want %v (entry, pick, one transfer, two RMWs on the owned line)", took, want)
	}
	if took < 128 || took >= 256 {
		t.Errorf("push took %v, outside the seed's [128, 256) ns bucket", took)
	}
}

// The fast path skips __netif_schedule while defer_list is non-empty.
func TestNetifScheduleFastPath(t *testing.T) {
	for _, fast := range []string{"on", "off"} {
		h := newHarness(t, profile(t, "6.19-rc1", "fast_path", fast), 2, "test", 1, "pfifo")
		q := h.dev.Root
		var sched, raised bool
		h.on(0, 0, func(c *sim.CPU) {
			q.deferHead = h.skb(c, 0) // a CPU is on the defer path
			h.n.unoffered--
			h.n.Offered++
			c.LocalBhDisable()
			h.n.netifSchedule(c, q, SchedQuota)
			sched, raised = q.state&stateSched != 0, c.SoftirqPending(sim.NetTxSoftirq)
			s := q.deferHead
			q.deferHead = nil
			c.LocalBhEnable()
			h.n.kfreeSkb(c, s, skb.DropQdiscDrop)
		})
		h.run(sim.Millisecond)
		if st := h.n.Sched[SchedQuota]; st.Calls != 1 || (fast == "on") != (st.Skipped == 1) || (fast == "off") != (st.Raised == 1) {
			t.Errorf("fast path %s: quota callers %+v", fast, st)
		}
		if fast == "on" && (sched || raised || h.n.NetifScheduleSkipped != 1) {
			t.Errorf("fast path on: SCHED %v raised %v skipped %d; want no schedule", sched, raised, h.n.NetifScheduleSkipped)
		}
		if fast == "off" && (!sched || !raised || h.n.NetifScheduleSkipped != 0) {
			t.Errorf("fast path off: SCHED %v raised %v skipped %d; want a schedule", sched, raised, h.n.NetifScheduleSkipped)
		}
	}
}

// dropper is a FIFO that drops every other packet at dequeue and sets
// TCQ_F_DEQUEUE_DROPS.
type dropper struct {
	qdisc.PFifo
	held []skb.Packet
	n    int
}

func (d *dropper) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{Flags: qdisc.DequeueDrops, Limit: 100000}, nil
}
func (d *dropper) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) {
	d.held = append(d.held, b...)
}
func (d *dropper) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	for len(d.held) > 0 && len(out) < req.Max {
		p := d.held[0]
		d.held = d.held[1:]
		d.n++
		if d.n%2 == 0 {
			ctx.DequeueDrop(p.Handle, skb.DropQdiscCongested)
			continue
		}
		out = append(out, p)
	}
	return out
}
func (d *dropper) Stats() qdisc.Stats {
	var b int64
	for _, p := range d.held {
		b += int64(p.Len)
	}
	return qdisc.Stats{Qlen: len(d.held), Backlog: b}
}

func init() {
	qdisc.Register("test_dropper", "test: drops every other packet at dequeue", func() qdisc.Qdisc { return &dropper{} })
}

// A drop reads skb->next, the cb and at most skb->truesize, loads whose
// addresses come from the skb pointer alone, so the core has them in
// flight together: a dropped skb another CPU enqueued costs one line
// transfer however many lines the model gives an skb, where a sent one
// (without pkt_segs) costs skb_lines, qdisc_bstats_update reaching
// skb_shinfo through skb->head/end.
func TestDropCostsOneTransfer(t *testing.T) {
	spent := map[int64]sim.Time{}
	costs := sim.DefaultCosts()
	for _, lines := range []int64{2, 3} {
		costs.SkbLines = lines
		h := newHarnessCosts(t, profile(t, "6.18", "bql", "off"), costs, 2, "test", 1, "test_dropper")
		q := h.dev.Root
		h.on(1, 0, func(cpu *sim.CPU) { h.fill(cpu, q, 20) })
		h.on(0, 100*sim.Microsecond, func(cpu *sim.CPU) {
			var got []*skb.SKB
			got, spent[lines] = h.dequeueLocked(cpu, q)
			var l skb.List
			for _, s := range got {
				l.Push(s)
			}
			h.n.kfreeSkbList(cpu, &l)
		})
		h.run(sim.Millisecond)
	}
	// 8 sent and 8 dropped: a third line an skb lengthens the sends only.
	if d, want := spent[3]-spent[2], sim.Time(8*costs.LineSocket); d != want {
		t.Errorf("a dequeue of 8 sent and 8 dropped took %v with 2 lines an skb, %v with 3: %v apart, want %v",
			spent[2], spent[3], d, want)
	}
}

// With dequeue drops on, freeing happens after the root lock is
// released: the lock is held for less time per packet.
func TestDequeueDropsFreeAfterUnlock(t *testing.T) {
	hold := map[string]float64{}
	for _, dd := range []string{"off", "on"} {
		cfg := profile(t, "6.19-rc1", "dequeue_drops", dd)
		h := newHarness(t, cfg, 8, "ice", 1, "test_dropper")
		h.e.Costs.KfreeSkb = 400 // make the free visible
		for cpu := 0; cpu < 8; cpu++ {
			// A sender every 1 us per CPU: heavier, the defer list
			// outgrows what the drainer can enqueue between two
			// dequeues and the lock's hold measures the enqueue side.
			h.on(cpu, 0, func(c *sim.CPU) {
				for i := 0; ; i++ {
					c.Spend(1000)
					h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
				}
			})
		}
		h.run(2 * sim.Millisecond)
		var held sim.Time
		for _, l := range h.e.LockStats() {
			if l.Name == h.n.site.rootEnq.Name || l.Name == h.n.site.rootRun.Name || l.Name == h.n.site.txAction.Name {
				held += l.HoldTotal
			}
		}
		drops := h.n.Drops[skb.DropQdiscCongested]
		t.Logf("%s: offered %d tx %d drops %v", dd, h.n.Offered, h.n.TxPkts, h.n.Drops)
		if drops == 0 {
			t.Fatalf("dequeue_drops=%s: no drops", dd)
		}
		hold[dd] = float64(held) / float64(h.n.TxPkts+drops) // per packet through dequeue
	}
	if !(hold["on"] < 0.8*hold["off"]) {
		t.Errorf("root lock hold per packet: %.0f ns with dequeue drops, %.0f ns without; want clearly less", hold["on"], hold["off"])
	}
	t.Logf("root lock hold per dequeued packet: off %.0f ns, on %.0f ns", hold["off"], hold["on"])
}

// liar claims to hold fewer packets than it was given and never returns
// them: the accounting check must catch it.
type liar struct{ dropper }

func (l *liar) Stats() qdisc.Stats { return qdisc.Stats{} }
func (l *liar) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return out
}

// forger returns a packet it was never given.
type forger struct{ dropper }

func (f *forger) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return append(out, skb.Packet{Handle: 0xdead00000001, Len: 100})
}

func init() {
	qdisc.Register("test_liar", "test: loses packets", func() qdisc.Qdisc { return &liar{} })
	qdisc.Register("test_forger", "test: returns a packet never handed in", func() qdisc.Qdisc { return &forger{} })
}

func TestBrokenQdiscFailsLoudly(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 2, "ice", 1, "test_liar")
	h.on(0, 0, func(c *sim.CPU) {
		for i := 0; ; i++ {
			c.Spend(1000)
			h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
		}
	})
	if err := h.e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	err := h.n.CheckAccounting()
	if err == nil {
		t.Fatal("a qdisc that loses packets passed the accounting check")
	}
	t.Log(err)

	h = newHarness(t, profile(t, "6.18"), 2, "ice", 1, "test_forger")
	h.on(0, 0, func(c *sim.CPU) {
		for i := 0; ; i++ {
			c.Spend(1000)
			h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
		}
	})
	err = h.e.Run(sim.Millisecond)
	if err == nil {
		t.Fatal("a qdisc returning a forged packet was not stopped")
	}
	t.Log(err)
}

// A run can end with a CPU suspended inside a qdisc's dequeue (a drop it
// frees under the root lock waits for a slab lock) after the qdisc took
// packets off its queues that the host takes back only when the call
// returns: the accounting then lets the qdisc report fewer than the host
// handed it, never more, and only while a dequeue is under way.
func TestAccountingMidDequeue(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "test_dropper")
	q := h.dev.Root
	h.on(0, 0, func(c *sim.CPU) { h.fill(c, q, 5) })
	h.run(sim.Millisecond)
	d := q.Ops.(*wire.LocalQdisc).Q.(*dropper)
	taken := d.held[0]
	d.held = d.held[1:] // taken off for the dequeue in progress
	if err := h.n.CheckAccounting(); err == nil {
		t.Error("a qdisc holding one packet fewer than the host handed it passed outside a dequeue")
	}
	q.dequeuing = true
	if err := h.n.CheckAccounting(); err != nil {
		t.Errorf("mid-dequeue, with one packet taken off and not yet handed back: %v", err)
	}
	d.held = append(d.held, taken, taken) // one more than the host handed it
	if err := h.n.CheckAccounting(); err == nil {
		t.Error("a qdisc holding more than the host handed it passed mid-dequeue")
	}
}

// A qdisc reads the skbs it dequeues or drops under the root lock
// (dequeue_head's skb->next, the cb, skb->truesize): skbs another CPU
// enqueued cost skb_lines transfers there, dropped ones included, and the
// driver then finds them hot. Skbs the dequeuing CPU wrote cost nothing.
func TestQdiscReadsSkbLinesUnderLock(t *testing.T) {
	for _, c := range []struct {
		qd            string
		fillCPU       int
		dequeued      int   // skbs the qdisc hands out or drops in one dequeue of 8
		sent, dropped int64 // of them, read from another CPU
	}{
		{"pfifo", 1, 8, 8, 0},
		{"pfifo", 0, 8, 0, 0},
		{"test_dropper", 1, 16, 8, 8}, // every one read: skb_lines a sent skb, one line a dropped one
	} {
		h := newHarness(t, profile(t, "6.18", "bql", "off"), 2, "test", 1, c.qd)
		q := h.dev.Root
		var spent sim.Time
		var got []*skb.SKB
		h.on(c.fillCPU, 0, func(cpu *sim.CPU) { h.fill(cpu, q, 20) })
		h.on(0, 100*sim.Microsecond, func(cpu *sim.CPU) {
			got, spent = h.dequeueLocked(cpu, q)
			for _, s := range got {
				if int(s.HotCPU) != cpu.ID {
					t.Errorf("%s: a dequeued skb is not hot on the dequeuing CPU", c.qd)
				}
			}
			var l skb.List
			for _, s := range got {
				l.Push(s)
			}
			h.n.kfreeSkbList(cpu, &l)
		})
		h.run(sim.Millisecond)
		costs := h.e.Costs
		lines := sim.Time((c.sent*costs.SkbLines + c.dropped) * costs.LineSocket)
		base := spent - lines
		if base < 0 || base > sim.Time(c.dequeued)*sim.Time(costs.KfreeSkb+costs.QdiscDequeue)+sim.Time(4*costs.LineSocket) {
			t.Errorf("%s filled on cpu%d: dequeue under the lock took %d ns, want %d of skb lines plus the qdisc's own work",
				c.qd, c.fillCPU, spent, lines)
		}
	}
}

// dequeueLocked is sch_direct_xmit's dequeue of up to 8 skbs under the
// root lock, timed.
func (h *harness) dequeueLocked(cpu *sim.CPU, q *Qdisc) ([]*skb.SKB, sim.Time) {
	q.lock.Lock(cpu, h.n.site.rootRun)
	start := cpu.Now()
	got := h.n.qdiscDequeue(cpu, q, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40})
	spent := cpu.Now() - start
	q.lock.Unlock(cpu)
	return got, spent
}

// With pkt_segs (the speedup series) qdisc_bstats_update reads the
// segment count from the cb, so nothing under the root lock waits for
// skb->head/end before reaching skb_shinfo: a dequeue waits one transfer
// of each skb (its loads of line 0 and of skb->truesize or skb->end in
// flight together) and the driver's read of skb_shinfo pays the rest,
// from the CPU that enqueued it; without it the dequeue waits all
// skb_lines and the driver finds them hot. A drop waits one transfer
// either way.
func TestPktSegsDequeueReadsOneLine(t *testing.T) {
	base := map[string]sim.Time{} // what a qdisc's dequeue takes besides skb lines
	for _, c := range []struct {
		qd, pktSegs string
		read        int64 // skbs the dequeue reads: 8 sent (the dropper's 8 dropped too)
		underLock   int64 // line transfers under the root lock
		tail        int64 // lines a sent skb, in the driver
	}{
		{"pfifo", "on", 8, 8, 1},
		{"pfifo", "off", 8, 16, 0},
		{"test_dropper", "on", 16, 16, 1},
		{"test_dropper", "off", 16, 24, 0},
	} {
		h := newHarness(t, profile(t, "6.18", "bql", "off", "pkt_segs", c.pktSegs), 2, "test", 1, c.qd)
		q := h.dev.Root
		costs := h.e.Costs
		var locked, driver sim.Time
		h.on(1, 0, func(cpu *sim.CPU) { h.fill(cpu, q, 20) })
		h.on(0, 100*sim.Microsecond, func(cpu *sim.CPU) {
			var got []*skb.SKB
			got, locked = h.dequeueLocked(cpu, q)
			var l skb.List
			for _, s := range got {
				if int(s.HotCPU) != cpu.ID {
					t.Errorf("%s pkt_segs %s: a dequeued skb's first line is not on the dequeuing CPU", c.qd, c.pktSegs)
				}
				l.Push(s)
			}
			start := cpu.Now()
			for s := l.Head; s != nil; s = s.Next {
				h.n.touchSkb(cpu, s) // the driver's reads
				if s.TailSplit() {
					t.Errorf("%s pkt_segs %s: the driver left the skb's tail split", c.qd, c.pktSegs)
				}
			}
			driver = cpu.Now() - start
			h.n.kfreeSkbList(cpu, &l)
		})
		h.run(sim.Millisecond)
		if want := sim.Time(8 * c.tail * costs.LineSocket); driver != want {
			t.Errorf("%s pkt_segs %s: the driver read %d ns of skb lines, want %d (%d lines a skb)", c.qd, c.pktSegs, driver, want, c.tail)
		}
		lines := sim.Time(c.underLock * costs.LineSocket)
		if base := locked - lines; base < 0 || base > sim.Time(c.read*(costs.KfreeSkb+costs.QdiscDequeue)+4*costs.LineSocket) {
			t.Errorf("%s pkt_segs %s: dequeue under the lock took %d ns, want %d of skb lines (%d transfers) plus the qdisc's own work",
				c.qd, c.pktSegs, locked, lines, c.underLock)
		}
		// pkt_segs changes the line transfers only: the rest is the same.
		if b, ok := base[c.qd]; ok && b != locked-lines {
			t.Errorf("%s pkt_segs %s: %d ns under the lock besides %d transfers, %d with pkt_segs the other way",
				c.qd, c.pktSegs, locked-lines, c.underLock, b)
		}
		base[c.qd] = locked - lines
	}
}

// buildDeferList runs a drain of a defer list of pushed+1 skbs on a
// 3-CPU harness: CPU 2 holds the root lock while CPU 0 pushes the first
// skb (and so drains the list) and CPU 1 pushes the rest.
func (h *harness) buildDeferList(pushed int) {
	q := h.dev.Root
	h.on(2, 0, func(c *sim.CPU) { // holds the root lock while the list builds
		q.lock.Lock(c, h.n.site.rootRun)
		c.Spend(int64(50 * sim.Microsecond))
		q.lock.Unlock(c)
	})
	h.on(0, sim.Microsecond, func(c *sim.CPU) { h.n.DevQueueXmit(c, h.dev, h.skb(c, 0)) })
	h.on(1, 2*sim.Microsecond, func(c *sim.CPU) {
		for i := 1; i <= pushed; i++ {
			h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
		}
	})
	h.run(sim.Millisecond)
}

// The CPU that drains a defer_list walks it (llist_reverse_order) at
// llist_node a node, as Jonas Köppeler's profile measures the walk, and
// pays each pushed skb's lines once, in the enqueue that reads them (the
// first in full, the rest prefetched): the walk itself stalls on no line.
func TestLlistDrainWalkPerNode(t *testing.T) {
	const pushed = 32
	h := newHarness(t, profile(t, "6.19-rc1"), 3, "test", 1, "pfifo", "limit", "1000")
	var got, walked sim.Time
	h.e.OnLockWait = func(c *sim.CPU, site *sim.LockStat, _, end sim.Time) {
		if c.ID == 0 && site == h.n.site.rootEnq {
			got = end
		}
	}
	var batch int
	var hot bool
	h.n.Hooks.EnqueueBatch = func(c *sim.CPU, _ *Qdisc, b []*skb.SKB) {
		walked, batch = c.Now()-got, len(b)
		hot = true
		for _, s := range b[1:] {
			hot = hot && int(s.HotCPU) == 1 // not yet read by the drainer
		}
	}
	h.buildDeferList(pushed)
	costs := h.e.Costs
	if batch != pushed+1 {
		t.Fatalf("drained %d skbs, want %d", batch, pushed+1)
	}
	if !hot {
		t.Error("the walk moved the pushed skbs' lines to the drainer; the enqueue is where they are read")
	}
	walk := sim.Time((pushed + 1) * costs.LlistNode)
	// Besides the nodes: the list head's line (llist_del_all), the
	// qdisc's write line and its data lines, fetched once each.
	if most := walk + sim.Time((2+costs.QdiscDataLines)*(costs.LineSocket+costs.AtomicOp)); walked < walk || walked > most {
		t.Errorf("from the root lock to the enqueue of %d skbs: %v, want %v of nodes plus at most %v of the qdisc's and the list head's lines",
			batch, walked, walk, most-walk)
	}
}

// A defer list's drainer prefetches each skb after the first while it
// enqueues the one before (prefetch(next), prefetch(&next->priority)):
// a prefetched skb's lines stall it only for the part of their transfer
// that outlasts one enqueue. With an enqueue longer than a line's
// transfer only the first skb pays; with a free one each later skb
// pays one transfer for both its lines, which travel at once.
func TestLlistDrainPrefetchHidesBehindEnqueue(t *testing.T) {
	const pushed = 16
	for _, c := range []struct {
		name    string
		enqueue int64 // cost qdisc_enqueue: one skb's enqueue
		later   int64 // each prefetched skb's stall, in lines
	}{
		{"enqueue longer than a transfer", 500, 0},
		{"free enqueue", 0, 1},
	} {
		costs := sim.DefaultCosts()
		costs.QdiscEnqueue = c.enqueue
		h := newHarnessCosts(t, profile(t, "6.19-rc1"), costs, 3, "test", 1, "pfifo", "limit", "1000")
		prof := &DrainProfile{}
		h.n.Prof = prof
		h.buildDeferList(pushed)
		if prof.Calls[PhEnqueue] != 1 {
			t.Fatalf("%s: %d enqueue phases, want the one drain", c.name, prof.Calls[PhEnqueue])
		}
		line := h.e.Costs.LineSocket // CPU 1's lines on CPU 0, one socket
		// The first skb is CPU 0's own, hot; the pushed ones come after
		// it, each prefetched.
		want := pushed * c.later * line
		if got := prof.SkbLineNs[PhEnqueue]; got != want {
			t.Errorf("%s: the drain's enqueue stalled %d ns on skb lines, want %d (a line %d ns)", c.name, got, want, line)
		}
	}
}

// The skbs at the head of a deep queue were written by a CPU that has
// handled more than l2_skbs skbs since: their lines have left its L2,
// and the dequeuer reads them from the LLC (line_llc), not by a
// cross-core transfer, as Jonas Köppeler's profile of a full cake
// measures (cake_dequeue_one at half a kfree_skb). A shallow queue's
// skbs are still in the writer's L2: transfers.
func TestDeepQueueSkbLinesFromLLC(t *testing.T) {
	costs := sim.DefaultCosts()
	for _, c := range []struct {
		behind   int   // skbs CPU 1 handles after the 8 at the head
		wantLine int64 // price of each of their lines on CPU 0
	}{
		{0, costs.LineSocket},
		{int(costs.L2Skbs) - 8, costs.LineSocket},
		{int(costs.L2Skbs) + 8, costs.LineLLC},
	} {
		h := newHarness(t, profile(t, "6.18", "bql", "off"), 2, "test", 1, "pfifo", "limit", "100000")
		q := h.dev.Root
		var spent sim.Time
		h.on(1, 0, func(cpu *sim.CPU) { h.fill(cpu, q, 8+c.behind) })
		h.on(0, 10*sim.Millisecond, func(cpu *sim.CPU) {
			var got []*skb.SKB
			got, spent = h.dequeueLocked(cpu, q)
			var l skb.List
			for _, s := range got {
				l.Push(s)
			}
			h.n.kfreeSkbList(cpu, &l)
		})
		h.run(11 * sim.Millisecond)
		lines := sim.Time(8 * costs.SkbLines * c.wantLine)
		if base := spent - lines; base < 0 || base > sim.Time(8*costs.QdiscDequeue+4*costs.LineSocket) {
			t.Errorf("%d skbs behind the head: dequeuing 8 took %d ns, want %d of skb lines (%d ns a line) plus the qdisc's own work",
				c.behind, spent, lines, c.wantLine)
		}
	}
}
