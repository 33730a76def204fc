package sim

import "testing"

// HrTimer: re-arming moves the expiry either way (the latest call wins),
// cancelling disarms, and a timer that no longer fires interrupts no one;
// its handler runs once the idle CPU has left its C-state.
func TestHrTimerRearmAndCancel(t *testing.T) {
	cases := []struct {
		name string
		arm  func(tm *HrTimer, c *CPU, fire func(*CPU))
		want []Time // when the handler ran
	}{
		{"once", func(tm *HrTimer, c *CPU, f func(*CPU)) { tm.Start(c, 100*Microsecond, f) }, []Time{100 * Microsecond}},
		{"re-armed later", func(tm *HrTimer, c *CPU, f func(*CPU)) {
			tm.Start(c, 100*Microsecond, f)
			tm.Start(c, 300*Microsecond, f)
		}, []Time{300 * Microsecond}},
		{"re-armed earlier", func(tm *HrTimer, c *CPU, f func(*CPU)) {
			tm.Start(c, 300*Microsecond, f)
			tm.Start(c, 100*Microsecond, f)
		}, []Time{100 * Microsecond}},
		{"cancelled", func(tm *HrTimer, c *CPU, f func(*CPU)) {
			tm.Start(c, 100*Microsecond, f)
			tm.Cancel()
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1})
			c := e.CPUs[0]
			var tm HrTimer
			var ran []Time
			tc.arm(&tm, c, func(c *CPU) { ran = append(ran, c.Now()) })
			if exp, q := tm.Queued(); q != (tc.want != nil) || (q && exp != tc.want[0]) {
				t.Fatalf("Queued() = %d %v before the run", exp, q)
			}
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			// The CPU idles until the timer: it leaves its C-state first.
			lat := Time(e.Costs.WakeIdleLatency)
			if len(ran) != len(tc.want) || (len(ran) == 1 && (ran[0] < tc.want[0]+lat || ran[0] > tc.want[0]+lat+Time(2*e.Costs.HardIRQ))) {
				t.Fatalf("handler ran at %v, want %v", ran, tc.want)
			}
			if _, q := tm.Queued(); q {
				t.Fatal("still queued after it fired")
			}
			// Only a timer that fired costs its CPU a hard interrupt.
			if busy := c.Busy(); (tc.want == nil) != (busy == 0) {
				t.Fatalf("CPU busy %d ns, want %v", busy, map[bool]string{true: "none", false: "a hard irq"}[tc.want == nil])
			}
		})
	}
}

// An hrtimer armed with slack (hrtimer_start_range_ns) runs at its hard
// expiry, or earlier at another hrtimer interrupt on its CPU after its
// soft expiry; an interrupt elsewhere, or before the soft expiry, does
// not run it. It runs once either way.
func TestHrTimerRange(t *testing.T) {
	const soft, slack = 100 * Microsecond, 10 * Microsecond
	cases := []struct {
		name   string
		other  Time // another timer's expiry (0: none)
		otherC int  // and its CPU
		rearm  bool // armed twice with the same expiry
		want   Time // when the ranged timer ran
	}{
		{"alone: the hard expiry", 0, 0, false, soft + slack},
		{"another interrupt after the soft expiry", soft + 4*Microsecond, 0, false, soft + 4*Microsecond},
		{"at the soft expiry", soft, 0, false, soft},
		{"another interrupt before the soft expiry", soft - Microsecond, 0, false, soft + slack},
		{"another CPU's interrupt", soft + 4*Microsecond, 1, false, soft + slack},
		{"re-armed", soft + 4*Microsecond, 0, true, soft + 4*Microsecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
			c := e.CPUs[0]
			var ranged, other HrTimer
			var ran []Time
			arm := func() { ranged.StartRange(c, soft, slack, func(c *CPU) { ran = append(ran, c.Now()) }) }
			arm()
			if tc.rearm {
				arm()
			}
			if exp, q := ranged.Queued(); !q || exp != soft {
				t.Fatalf("Queued() = %v %v, want the soft expiry %v", exp, q, soft)
			}
			if tc.other != 0 {
				other.Start(e.CPUs[tc.otherC], tc.other, func(*CPU) {})
			}
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			lat := Time(e.Costs.WakeIdleLatency)
			if len(ran) != 1 || ran[0] < tc.want+lat || ran[0] > tc.want+lat+Time(3*e.Costs.HardIRQ) {
				t.Fatalf("ran at %v, want once at %v (+ the C-state exit %v)", ran, tc.want, lat)
			}
			if _, q := ranged.Queued(); q {
				t.Fatal("still queued after it ran")
			}
			if n := len(c.slackTimers); n > 1 {
				t.Fatalf("%d slack entries for one timer", n)
			}
		})
	}
}
