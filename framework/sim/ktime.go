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

// Clock ids (include/uapi/linux/time.h) of the clocks a qdisc may run on
// (taprio, etf) and a socket may stamp its transmit times with
// (SO_TXTIME).
const (
	ClockRealtime  = 0
	ClockMonotonic = 1
	ClockBoottime  = 7
	ClockTAI       = 11
)

// RealtimeAtBoot is CLOCK_REALTIME at the host's boot (ktime 0): 1 Jan
// 2026, 00:00:00 UTC. Like a real host's, the wall clock is far from the
// monotonic one, so a time stamped on one and read on the other is
// beyond any horizon (fq's, with a CLOCK_TAI txtime), as in the kernel.
const RealtimeAtBoot = 1_767_225_600 * Second

// TAIMinusUTC is CLOCK_TAI's lead over CLOCK_REALTIME (37 s since 2017).
const TAIMinusUTC = 37 * Second

// ClockOffset is ktime_mono_to_any's offset: clock id less
// CLOCK_MONOTONIC (BOOTTIME's is 0: the host never suspends), and ok is
// false for a clock the model does not know.
func ClockOffset(id int) (Time, bool) {
	switch id {
	case ClockRealtime:
		return RealtimeAtBoot, true
	case ClockTAI:
		return RealtimeAtBoot + TAIMinusUTC, true
	case ClockMonotonic, ClockBoottime:
		return 0, true
	}
	return 0, false
}
