package sim

import "math"

// PELT (kernel/sched/pelt.c): a task's utilisation is its running time
// averaged over a geometric series of 1024 us periods whose weight
// halves every 32 periods (y^32 = 1/2). Fork balancing breaks ties
// between equally idle cores by it (update_pick_idlest's group_util),
// and a CPU's utilisation keeps the share of tasks asleep on it
// (blocked load) until it decays: a core whose task sleeps a moment is
// not a fresh one.
const (
	peltPeriod = 1024 * Microsecond
	peltShift  = 20                        // fixed point below one unit of util
	peltFull   = uint64(1024) << peltShift // SCHED_CAPACITY_SCALE: always running
	peltHalves = 32                        // LOAD_AVG_PERIOD
	peltGone   = peltHalves * 63           // periods after which anything decays to 0
	yInvOne    = uint64(1) << 32           // y^0 in runnable_avg_yN_inv's fixed point
)

// peltYInv[n] is y^n scaled by 2^32 (the kernel's runnable_avg_yN_inv),
// computed once: an integer table, so decays are exact and the same on
// every run.
var peltYInv = func() (t [peltHalves]uint64) {
	for n := range t {
		t[n] = min(uint64(math.Pow(0.5, float64(n)/peltHalves)*float64(yInvOne)), yInvOne-1)
	}
	return t
}()

// decayLoad is decay_load: val * y^n for whole periods.
func decayLoad(val uint64, n int64) uint64 {
	if n > peltGone {
		return 0
	}
	val >>= uint(n / peltHalves)
	return val * peltYInv[n%peltHalves] >> 32
}

// decay is val * y^(d / peltPeriod): whole periods as decay_load, the
// rest of a period linearly between y^0 and y^1 (the kernel accrues a
// partial period the same way, by its length).
func decay(val uint64, d Time) uint64 {
	val = decayLoad(val, int64(d/peltPeriod))
	r := uint64(d % peltPeriod)
	return val - val*((yInvOne-peltYInv[1])*r/uint64(peltPeriod))>>32
}

// pelt is one task's util_avg and when it was last brought up to date.
type pelt struct {
	util uint64 // fixed point, peltFull at most
	at   Time
}

// update accrues the time since the last update, running or not
// (___update_load_sum + ___update_load_avg for util_avg).
func (p *pelt) update(now Time, running bool) {
	if now <= p.at {
		return
	}
	d := now - p.at
	if running {
		p.util = peltFull - decay(peltFull-p.util, d)
	} else {
		p.util = decay(p.util, d)
	}
	p.at = now
}

// utilAt is the task's util_avg at now in fixed point, accrued to now
// without moving its last update.
func (t *Task) utilAt(now Time) uint64 {
	p := t.util
	p.update(now, t.state == TaskRunning)
	return p.util
}

// Util is the task's util_avg at now, 0..1024.
func (t *Task) Util(now Time) int64 { return int64(t.utilAt(now) >> peltShift) }

// cpuUtils is each CPU's cfs util_avg at now: the sum over the tasks
// attached to it, running, waiting or asleep there (blocked load), as
// cpu_util_without sees it for a task not yet placed (a fork).
func (e *Engine) cpuUtils(now Time) []uint64 {
	if cap(e.utilBuf) < len(e.CPUs) {
		e.utilBuf = make([]uint64, len(e.CPUs))
	}
	u := e.utilBuf[:len(e.CPUs)]
	clear(u)
	for _, t := range e.tasks {
		if t.cpu == nil || t.state == TaskDead {
			continue
		}
		u[t.cpu.ID] += t.utilAt(now)
	}
	return u
}
