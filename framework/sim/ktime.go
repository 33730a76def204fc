package sim

// BootOffset is how long the simulated host has been up when a run's
// clock starts: ktime_get() (CLOCK_MONOTONIC) never reads 0 on a live
// system, and code that keeps a zero-initialised timestamp relies on
// that. cobalt_vars_init leaves blue_timer at 0, and cobalt_queue_full
// raises BLUE's p only once now - blue_timer exceeds the target (5 ms),
// so a clock starting at 0 would ignore the first 5 ms of overflows. A
// minute of uptime is an arbitrary, plausible value; only its being far
// above every qdisc interval matters.
const BootOffset = 60 * Second

// Ktime is ktime_get() at simulated time t: t plus BootOffset. Qdiscs
// see time this way (their Ctx.Now); timers they arm in ktime are
// brought back with SimTime.
func Ktime(t Time) Time { return t + BootOffset }

// SimTime is the simulated time of ktime k (the inverse of Ktime).
func SimTime(k Time) Time { return k - BootOffset }
