package sim

import "sort"

// LockStat is perf-lock-style contention data for one call site.
type LockStat struct {
	Name      string // "caller" column, e.g. "__dev_xmit_skb (root_lock)"
	Acquired  uint64
	Contended uint64
	TotalWait Time
	MaxWait   Time
	HoldTotal Time // time the lock was held after being taken here
	// Queued, QueuedWait and QueuedMax are the contended acquisitions
	// perf lock sees: qspinlock fires lock:contention_begin only on the
	// MCS path (queued_spin_lock_slowpath after "queue:"), so the one
	// waiter that finds the lock held and nobody waiting spins on the
	// pending bit unrecorded; a waiter that finds one already waiting
	// queues and is recorded, its wait taken from its arrival.
	Queued                uint64
	QueuedWait, QueuedMax Time
}

// QueuedAvgWait is the mean wait of the acquisitions perf lock records.
func (s *LockStat) QueuedAvgWait() Time {
	if s.Queued == 0 {
		return 0
	}
	return s.QueuedWait / Time(s.Queued)
}

// AvgWait is the mean wait of contended acquisitions.
func (s *LockStat) AvgWait() Time {
	if s.Contended == 0 {
		return 0
	}
	return s.TotalWait / Time(s.Contended)
}

// LockSite returns the stats record for a call site name, creating it.
// Hold the pointer: it is looked up once, not per acquisition.
func (e *Engine) LockSite(name string) *LockStat {
	if e.lockSites == nil {
		e.lockSites = map[string]*LockStat{}
	}
	s, ok := e.lockSites[name]
	if !ok {
		s = &LockStat{Name: name}
		e.lockSites[name] = s
	}
	return s
}

// LockStats returns every call site, most total wait first (the order
// perf lock contention prints), ties by name.
func (e *Engine) LockStats() []LockStat {
	out := make([]LockStat, 0, len(e.lockSites))
	for _, s := range e.lockSites {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TotalWait != out[j].TotalWait {
			return out[i].TotalWait > out[j].TotalWait
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// SpinLock is a queued spinlock (qspinlock): waiters spin in FIFO order,
// each handoff moves the lock word to the next waiter's CPU.
//
// In a KVM guest with paravirt spinlocks (Engine.PvSpinlocks:
// CONFIG_PARAVIRT_SPINLOCKS and the host's KVM_FEATURE_PV_UNHALT, which
// switch queued_spin_lock_slowpath to __pv_queued_spin_lock_slowpath)
// two things differ: the slowpath skips the pending bit (pv_enabled()
// goes straight to pv_queue), so every contended locker queues and
// perf lock records it; and __pv_queued_spin_unlock is a locked
// cmpxchg of the locked byte, not a plain store, so an unlocker whose
// lock word a waiter is spinning on stalls while the line comes back.
// Left out: a waiter halts its vCPU (pv_wait) only after SPIN_THRESHOLD
// (1 << 15) turns of cpu_relax, a millisecond or more, and is kicked by
// a hypercall; the waits the model's runs see are microseconds.
type SpinLock struct {
	Name string
	line CacheLine
	// word is the line the lock word sits on when a structure keeps it
	// beside fields its holder writes (ShareLine); nil: its own line.
	word    *CacheLine
	held    bool
	owner   *CPU
	site    *LockStat
	since   Time
	waiters []lockWaiter
	head    int
}

type lockWaiter struct {
	cpu  *CPU
	site *LockStat
}

// Locked reports whether the lock is held (spin_is_locked).
func (l *SpinLock) Locked() bool { return l.held }

// Owner is the CPU holding the lock, or nil.
func (l *SpinLock) Owner() *CPU { return l.owner }

// Lock is spin_lock(). site collects the stats of this call site.
func (l *SpinLock) Lock(c *CPU, site *LockStat) {
	c.Sync()
	c.Spend(c.e.Costs.SpinAcquire)
	l.ln().Atomic(c)
	rec := c.lockRec // perf lock record -C: only the listed CPUs count
	if rec {
		site.Acquired++
	}
	if !l.held {
		l.held, l.owner, l.site, l.since = true, c, site, c.now
		return
	}
	if l.owner == c {
		Panicf("cpu%d: recursive spin_lock on %s (%s)", c.ID, l.Name, site.Name)
	}
	start := c.now
	// The fast path's cmpxchg failed; queued_spin_lock_slowpath's next
	// locked op on the word (queued_fetch_set_pending_acquire, or
	// xchg_tail to join the MCS queue) finds the line still here.
	c.Spend(c.e.Costs.AtomicOp)
	// A pending waiter or an MCS queue already: this one queues. A
	// paravirt lock has no pending waiter: every contended locker queues.
	queued := l.Waiters() > 0 || c.e.PvSpinlocks
	l.waiters = append(l.waiters, lockWaiter{c, site})
	c.spinUntilWoken()
	wait := c.now - start
	if rec {
		site.Contended++
		site.TotalWait += wait
		if wait > site.MaxWait {
			site.MaxWait = wait
		}
		if queued {
			site.Queued++
			site.QueuedWait += wait
			site.QueuedMax = max(site.QueuedMax, wait)
		}
	}
	if h := c.e.OnLockWait; h != nil {
		h(c, site, start, c.now)
	}
}

// Unlock is spin_unlock(): the lock goes to the first waiter, who sees it
// after the lock word's cache line reaches its CPU.
func (l *SpinLock) Unlock(c *CPU) {
	c.Sync()
	if l.owner != c {
		Panicf("cpu%d: spin_unlock of %s it does not hold", c.ID, l.Name)
	}
	c.Spend(c.e.Costs.SpinRelease)
	if c.e.PvSpinlocks {
		// __pv_queued_spin_unlock's cmpxchg: the line exclusively, at once.
		l.ln().AtomicNoSync(c)
	}
	if c.lockRec {
		l.site.HoldTotal += c.now - l.since
	}
	if l.head == len(l.waiters) {
		l.held, l.owner, l.site = false, nil, nil
		l.waiters, l.head = l.waiters[:0], 0
		return
	}
	w := l.waiters[l.head]
	l.waiters[l.head] = lockWaiter{}
	l.head++
	// The release is a store: it takes the line back to c (its
	// read-for-ownership in the background, the store buffered), and the
	// waiter, spinning on a copy that store invalidated, reads it from c.
	// So a handoff is one transfer from c, however recently the waiter
	// touched the line (its failed cmpxchg on arrival).
	l.ln().storeBuffered(c)
	grant := c.now + Time(l.ln().transfer(w.cpu, c.now))
	l.owner, l.site, l.since = w.cpu, w.site, grant
	w.cpu.e.resumeAt(w.cpu, grant)
}

// Line is the lock word's cache line, for the fields a structure keeps
// beside its lock (kmem_cache_node's nr_partial and partial list head
// share list_lock's line): a holder's store to them takes the line back
// from a waiter that arrived since and spins reading it.
func (l *SpinLock) Line() *CacheLine { return l.ln() }

// ShareLine puts the lock word on cl, a line of the structure it locks
// (struct Qdisc's q.lock sits in the line of q.qlen, bstats and the
// running flag): the holder's stores to those fields find the line
// where the last waiter's atomic or a lockless reader left it, and a
// handoff brings them with the lock word.
func (l *SpinLock) ShareLine(cl *CacheLine) { l.word = cl }

func (l *SpinLock) ln() *CacheLine {
	if l.word != nil {
		return l.word
	}
	return &l.line
}

// Waiters is the number of CPUs spinning on the lock.
func (l *SpinLock) Waiters() int { return len(l.waiters) - l.head }

// TryLock is spin_trylock(): take the lock if it is free, never wait.
// queued_spin_trylock reads the lock word first and tries its cmpxchg
// only on a free lock, so a failed trylock shares the line (a read), and
// several CPUs failing at once do not queue behind each other.
func (l *SpinLock) TryLock(c *CPU, site *LockStat) bool {
	c.Sync()
	if l.held {
		l.ln().ReadNoSync(c)
		return false
	}
	l.ln().AtomicNoSync(c)
	if c.lockRec {
		site.Acquired++
	}
	l.held, l.owner, l.site, l.since = true, c, site, c.now
	return true
}

// ResetLockStats zeroes every call site's counters (the start of a
// measurement window, like `perf lock record` starting).
func (e *Engine) ResetLockStats() {
	for _, s := range e.lockSites {
		*s = LockStat{Name: s.Name}
	}
}
