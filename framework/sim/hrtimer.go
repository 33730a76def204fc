package sim

// HrTimer is an hrtimer armed on a CPU: Start arms or re-arms it (the
// latest expiry wins, as hrtimer_start replaces a queued timer's
// expiry), Cancel disarms it (hrtimer_cancel). When it expires, its
// handler runs in hardirq context on the CPU that armed it last
// (HRTIMER_MODE_ABS_PINNED); a timer re-armed or cancelled before its
// expiry does not interrupt anyone then. The zero value is disarmed.
type HrTimer struct {
	gen     uint64
	expires Time
	queued  bool
}

// Queued reports whether the timer is armed (hrtimer_is_queued) and
// for when.
func (t *HrTimer) Queued() (Time, bool) { return t.expires, t.queued }

// Start arms the timer on c for at; handler runs then.
func (t *HrTimer) Start(c *CPU, at Time, handler func(*CPU)) {
	t.gen++
	t.expires, t.queued = at, true
	c.e.scheduleAt(at, payload{kind: evHrTimer, cpu: c, h: handler, hr: t, gen: t.gen})
}

// fire is the expiry armed as generation gen.
func (t *HrTimer) fire(c *CPU, gen uint64, handler func(*CPU)) {
	if t.gen != gen {
		return // re-armed or cancelled since
	}
	t.queued = false
	c.irqs = append(c.irqs, handler)
	c.wakeForIRQ(c.e.now)
}

// Cancel disarms the timer.
func (t *HrTimer) Cancel() {
	t.gen++
	t.queued = false
}
