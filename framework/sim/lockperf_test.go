package sim

import "testing"

// perf lock contention sees only the waiters that queue on qspinlock's
// MCS path: the first waiter behind a holder spins on the pending bit
// untraced; one that arrives while another already waits is recorded,
// its wait counted from its arrival to its grant.
func TestLockQueuedAsPerfLockSees(t *testing.T) {
	cases := []struct {
		name    string
		arrive  []Time // CPU i calls spin_lock at arrive[i], holds 1 us
		queued  uint64 // acquisitions perf lock records
		spun    uint64 // every acquisition that waited
		minWait Time   // the recorded waits' minimum mean
	}{
		{"uncontended", []Time{0, 5000}, 0, 0, 0},
		{"one waiter: pending, not recorded", []Time{0, 100}, 0, 1, 0},
		{"two waiters: the second queues", []Time{0, 100, 200}, 1, 2, 1800},
		{"three waiters: two queue", []Time{0, 100, 200, 300}, 2, 3, 1800},
		{"queue drains, then a lone waiter again", []Time{0, 100, 200, 10000, 10100}, 1, 3, 1800},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: len(tc.arrive), ThreadsPerCore: 1})
			var l SpinLock
			site := e.LockSite("x")
			for i, at := range tc.arrive {
				e.CPUs[i].Start(at, func(c *CPU) {
					l.Lock(c, site)
					c.Spend(1000)
					l.Unlock(c)
				})
			}
			if err := e.Run(Millisecond); err != nil {
				t.Fatal(err)
			}
			if site.Contended != tc.spun || site.Queued != tc.queued {
				t.Errorf("contended %d, queued %d; want %d and %d", site.Contended, site.Queued, tc.spun, tc.queued)
			}
			if tc.queued > 0 && site.QueuedAvgWait() < tc.minWait {
				t.Errorf("queued waits average %d ns, want at least %d (the holder's rest and the pending waiter's hold)", site.QueuedAvgWait(), tc.minWait)
			}
			if site.QueuedWait > site.TotalWait || site.QueuedMax > site.MaxWait {
				t.Errorf("queued waits %d (max %d) exceed all waits %d (max %d)", site.QueuedWait, site.QueuedMax, site.TotalWait, site.MaxWait)
			}
		})
	}
}
