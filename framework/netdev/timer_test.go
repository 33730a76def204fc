package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// ticker is a FIFO with a timer of its own, armed in Init: every tick it
// frees its oldest packet (kfree_skb under the lock, as sfq_rehash does)
// and re-arms. It never dequeues, so only the timer empties it.
type ticker struct {
	dropper
	ticks []sim.Time
}

const tick = 100 * sim.Microsecond

var lastTicker *ticker

func (q *ticker) Init(ctx qdisc.Ctx, _ qdisc.Setup, _ []string) (qdisc.Info, error) {
	ctx.ModTimer(ctx.Now() + tick)
	return qdisc.Info{Limit: 1000}, nil
}
func (q *ticker) Dequeue(_ qdisc.Ctx, _ qdisc.DequeueReq, out []skb.Packet) []skb.Packet { return out }
func (q *ticker) Timer(ctx qdisc.Ctx) {
	q.ticks = append(q.ticks, ctx.Now())
	if len(q.held) > 0 {
		ctx.Drop(q.held[0].Handle, "NOT_SPECIFIED")
		q.held = q.held[1:]
	}
	ctx.ModTimer(ctx.Now() + tick)
}

// badReason drops with a reason the kernel does not have and it did not
// declare; declared drops with one it did declare.
type badReason struct {
	dropper
	reason skb.DropReason
}

func (q *badReason) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{Limit: 1000, DropReasons: []skb.DropReason{"TEST_DECLARED"}}, nil
}
func (q *badReason) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) {
	for i, p := range b {
		ctx.Drop(p.Handle, q.reason)
		rc[i] = qdisc.XmitDrop
	}
}

func init() {
	qdisc.Register("test_ticker", "test: a timer that frees a packet per tick", func() qdisc.Qdisc {
		lastTicker = &ticker{}
		return lastTicker
	})
	qdisc.Register("test_undeclared", "test: an undeclared drop reason", func() qdisc.Qdisc {
		return &badReason{reason: "TEST_UNDECLARED"}
	})
	qdisc.Register("test_declared", "test: a declared drop reason", func() qdisc.Qdisc {
		return &badReason{reason: "TEST_DECLARED"}
	})
}

// The qdisc's own timer fires at each expiry it set, on CPU 0 (armed in
// Init, where tc runs), in TIMER_SOFTIRQ under the root lock, and what it
// frees is accounted.
func TestQdiscTimer(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 1, "test_ticker")
	q := lastTicker
	h.on(1, 0, func(c *sim.CPU) {
		for i := 0; i < 5; i++ {
			c.Spend(1000)
			h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
		}
	})
	h.run(sim.Millisecond + tick/2)
	if len(q.ticks) != 10 {
		t.Fatalf("timer ran %d times (%v), want 10 in 1.05 ms at one per 100 us", len(q.ticks), q.ticks)
	}
	// The qdisc reads ktime: the simulated time plus the host's uptime
	// (sim.BootOffset), and its timer fires at the simulated time that
	// ktime stands for.
	prev := sim.Ktime(0)
	for i, at := range q.ticks {
		// Each tick re-arms from its own time: a little drift is the
		// idle CPU's C-state exit, the interrupt and softirq entry.
		if at < prev+tick || at > prev+tick+sim.Time(h.e.Costs.WakeIdleLatency)+2*sim.Microsecond {
			t.Errorf("tick %d at %d, want just after %d", i, at, prev+tick)
		}
		prev = at
	}
	if n := h.n.Drops["NOT_SPECIFIED"]; n != 5 || len(q.held) != 0 {
		t.Errorf("timer freed %d packets, %d still held; want all 5 freed", n, len(q.held))
	}
	acquired := uint64(0)
	for _, l := range h.e.LockStats() {
		if l.Name == h.n.site.timer.Name {
			acquired = l.Acquired
		}
	}
	if acquired != 10 {
		t.Errorf("the timer took the root lock %d times, want 10", acquired)
	}
}

// A drop reason must be the kernel's or one the qdisc declared.
func TestDropReasonChecked(t *testing.T) {
	for kind, bad := range map[string]bool{"test_undeclared": true, "test_declared": false} {
		h := newHarness(t, profile(t, "6.18"), 1, "ice", 1, kind)
		h.on(0, 0, func(c *sim.CPU) { h.n.DevQueueXmit(c, h.dev, h.skb(c, 0)) })
		err := h.e.Run(sim.Millisecond)
		if !bad {
			if err != nil || h.n.Drops["TEST_DECLARED"] != 1 {
				t.Errorf("%s: %v, drops %v", kind, err, h.n.Drops)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `qdisc test_undeclared 8001:: drop reason "TEST_UNDECLARED" is not a kernel`) {
			t.Errorf("%s: %v", kind, err)
		}
	}
}

// WatchdogRange is qdisc_watchdog_schedule_range_ns: a watchdog already
// armed with its soft expiry in [at, at + slack] is left alone, any
// other is re-armed for at (Watchdog is the slack-0 case: only the same
// expiry is left alone).
func TestWatchdogRangeKeepsArmedWithinSlack(t *testing.T) {
	const slack = 10 * sim.Microsecond
	us := func(n int64) sim.Time { return sim.Time(n) * sim.Microsecond }
	cases := []struct {
		at, slack sim.Time
		want      sim.Time // the soft expiry armed after the call
	}{
		{us(100), slack, us(100)}, // the same expiry
		{us(95), slack, us(100)},  // armed 5us into the new range: kept
		{us(90), slack, us(100)},  // at the range's end: kept
		{us(89), slack, us(89)},   // past it: re-armed
		{us(101), slack, us(101)}, // armed before the new expiry: re-armed
		{us(100), 0, us(100)},     // no slack, the same expiry: kept
		{us(99), 0, us(99)},       // no slack, any other: re-armed
	}
	for _, tc := range cases {
		h := newHarness(t, profile(t, "6.19-rc1"), 1, "ice", 1, "pfifo")
		x := &h.dev.Queues[0].Qdisc().ctx
		x.WatchdogRange(sim.Ktime(us(100)), slack)
		x.WatchdogRange(sim.Ktime(tc.at), tc.slack)
		if soft, queued := x.q.watchdog.Queued(); !queued || soft != tc.want {
			t.Errorf("armed for 100us with 10us of slack, then for %v with %v: armed for %v (%v), want %v", tc.at, tc.slack, soft, queued, tc.want)
		}
	}
}
