package sim

// expGP is an expedited RCU grace period in progress.
type expGP struct {
	pending int  // CPUs yet to report a quiescent state
	end     Time // the latest report so far
	done    func()
}

// SynchronizeRCUExpedited is synchronize_rcu_expedited, started at the
// engine's now from engine context (tc's process holding RTNL: its
// synchronize_net). Every CPU that is not idle gets an IPI
// (rcu_exp_handler; an idle CPU is in an extended quiescent state and
// gets none). A CPU the IPI finds outside any BH-disabled section and
// softirq reports its quiescent state there; one inside reports it when
// it leaves that section (the handler set need_resched, so the
// local_bh_enable or softirq exit that ends it reschedules: a context
// switch, rcu_note_context_switch). done runs in engine context at the
// last report. A call during a grace period waits for the next full
// one, which starts when the current one ends and serves every call
// made meanwhile (rcu_exp_gp_seq_snap's sequence number).
func (e *Engine) SynchronizeRCUExpedited(done func()) {
	if e.expGP != nil {
		e.expNext = append(e.expNext, done)
		return
	}
	e.startExpGP(done)
}

// startExpGP starts an expedited grace period now.
func (e *Engine) startExpGP(done func()) {
	gp := &expGP{end: e.now, done: done}
	e.expGP = gp
	for _, c := range e.CPUs {
		if c.extQS() {
			continue
		}
		gp.pending++
		e.RaiseIRQ(c, e.now, rcuExpHandler)
	}
	if gp.pending == 0 {
		e.expGP = nil
		e.At(e.now, func() { e.endExpGP(gp) })
	}
}

// endExpGP runs a grace period's continuation, then starts the next one
// for the calls that waited.
func (e *Engine) endExpGP(gp *expGP) {
	gp.done()
	if next := e.expNext; len(next) > 0 && e.expGP == nil {
		e.expNext = nil
		e.startExpGP(func() {
			for _, f := range next {
				f()
			}
		})
	}
}

// extQS says the CPU is in an extended quiescent state now: in its idle
// loop, or holding a task that has not begun yet (started later than
// now: until then the CPU idles).
func (c *CPU) extQS() bool {
	switch {
	case c.curr == nil:
		return true
	case c.curr.idle:
		return c.block == blockedIdle
	}
	return c.curr.next == nil && c.now > c.e.now
}

// rcuExpHandler is rcu_exp_handler on the CPU the IPI interrupted: a
// quiescent state now, unless it interrupted a BH-disabled section or a
// softirq (preempt_count's SOFTIRQ_MASK), whose end reports it.
func rcuExpHandler(c *CPU) {
	if c.e.expGP == nil {
		return // reported already (an IPI raised twice cannot happen: one a CPU)
	}
	if c.bh == 0 && c.softirq == 0 {
		c.expQS()
		return
	}
	c.expNeedQS = true
}

// expQSIfDue reports a deferred expedited quiescent state once the CPU
// has left every BH-disabled section, softirq and interrupt.
func (c *CPU) expQSIfDue() {
	if c.expNeedQS && c.bh == 0 && c.softirq == 0 && c.hardirq == 0 {
		c.expQS()
	}
}

// expQS is rcu_report_exp_rdp: the last report ends the grace period.
func (c *CPU) expQS() {
	c.expNeedQS = false
	gp := c.e.expGP
	gp.end = max(gp.end, c.now)
	if gp.pending--; gp.pending == 0 {
		c.e.expGP = nil
		c.e.At(gp.end, func() { c.e.endExpGP(gp) })
	}
}
