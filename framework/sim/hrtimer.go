package sim

import (
	"cmp"
	"slices"
)

// HrTimer is an hrtimer armed on a CPU: Start arms or re-arms it (the
// latest expiry wins, as hrtimer_start replaces a queued timer's
// expiry), Cancel disarms it (hrtimer_cancel). When it expires, its
// handler runs in hardirq context on the CPU that armed it last
// (HRTIMER_MODE_ABS_PINNED); a timer re-armed or cancelled before its
// expiry does not interrupt anyone then. The zero value is disarmed.
//
// StartRange arms it with slack (hrtimer_start_range_ns): a soft expiry
// and a hard one delta later. The CPU's timer hardware is programmed
// for the hard expiry, but any hrtimer interrupt on that CPU in between
// (another timer's expiry, the tick) runs it early: __hrtimer_run_queues
// runs every timer whose soft expiry has passed.
type HrTimer struct {
	gen     uint64
	soft    Time // hrtimer_get_softexpires
	expires Time // the hard expiry
	queued  bool
	cpu     *CPU       // where it is armed
	h       func(*CPU) // its handler, for an early run
	seq     uint64     // arming order, for equal hard expiries
}

// Queued reports whether the timer is armed (hrtimer_is_queued) and
// its soft expiry (hrtimer_get_softexpires; the expiry when armed
// without slack).
func (t *HrTimer) Queued() (Time, bool) { return t.soft, t.queued }

// Start arms the timer on c for at; handler runs then.
func (t *HrTimer) Start(c *CPU, at Time, handler func(*CPU)) {
	t.StartRange(c, at, 0, handler)
}

// StartRange arms the timer on c for soft, with delta of slack: handler
// runs at soft + delta, or at the first hrtimer interrupt on c after
// soft.
func (t *HrTimer) StartRange(c *CPU, soft, delta Time, handler func(*CPU)) {
	t.gen++
	t.soft, t.expires, t.queued, t.cpu, t.h = soft, soft+delta, true, c, handler
	c.e.scheduleAt(t.expires, payload{kind: evHrTimer, cpu: c, h: handler, hr: t, gen: t.gen})
	if delta > 0 {
		c.e.hrSeq++
		t.seq = c.e.hrSeq
		c.addSlack(t)
	}
}

// addSlack lists t, armed with slack, on c (once: a re-armed timer's
// entry takes its new generation).
func (c *CPU) addSlack(t *HrTimer) {
	for i := range c.slackTimers {
		if c.slackTimers[i].t == t {
			c.slackTimers[i].gen = t.gen
			return
		}
	}
	c.slackTimers = append(c.slackTimers, slackTimer{t, t.gen})
}

// fire is the expiry armed as generation gen.
func (t *HrTimer) fire(c *CPU, gen uint64, handler func(*CPU)) {
	if t.gen != gen {
		return // re-armed or cancelled since
	}
	t.queued = false
	c.irqs = append(c.irqs, handler)
	c.expireSlack()
	c.wakeForIRQ(c.e.now)
}

// Cancel disarms the timer.
func (t *HrTimer) Cancel() {
	t.gen++
	t.queued = false
}

// slackTimer is a timer armed with slack on a CPU, as armed then (gen).
type slackTimer struct {
	t   *HrTimer
	gen uint64
}

// expireSlack is the part of __hrtimer_run_queues that an interrupt on
// c runs for the timers armed there with slack: each whose soft expiry
// has passed runs now, in the order of their hard expiries. (The kernel
// stops at the first queued timer, in that order, whose soft expiry is
// still ahead, slack or not; a timer without slack never holds back one
// with slack here.) Entries re-armed, cancelled or run since are
// dropped.
func (c *CPU) expireSlack() {
	if len(c.slackTimers) == 0 {
		return
	}
	now := c.e.now
	due := c.slackDue[:0]
	kept := c.slackTimers[:0]
	for _, s := range c.slackTimers {
		t := s.t
		switch {
		case t.gen != s.gen || !t.queued || t.cpu != c:
		case t.soft <= now:
			due = append(due, t)
		default:
			kept = append(kept, s)
		}
	}
	clear(c.slackTimers[len(kept):])
	c.slackTimers = kept
	slices.SortFunc(due, func(a, b *HrTimer) int { // no allocation: this runs in interrupts
		return cmp.Or(cmp.Compare(a.expires, b.expires), cmp.Compare(a.seq, b.seq))
	})
	for _, t := range due {
		t.queued = false
		t.gen++ // its hard-expiry event finds it run
		c.irqs = append(c.irqs, t.h)
	}
	clear(due)
	c.slackDue = due[:0]
}
