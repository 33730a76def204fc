package netdev

import "testing"

// TestDQLArithmetic replays a scripted queue/complete sequence and checks
// every step against values worked out by hand from
// lib/dynamic_queue_limits.c (see the comments).
func TestDQLArithmetic(t *testing.T) {
	type step struct {
		queue, complete uint32
		jiffies         uint64
		limit           uint32 // after the step
		avail           int32
	}
	steps := []step{
		// limit starts at 0: one packet passes, then avail < 0.
		{queue: 1000, limit: 0, avail: -1000},
		// starved (ovlimit 1000, nothing in progress): limit += 1000 + 0.
		{complete: 1000, jiffies: 1, limit: 1000, avail: 1000},
		// queue 1500 over the limit, complete all: ovlimit = 1500-1000 = 500,
		// starved again: limit += posdiff(2500, prev_num_queued 1000) = 1500.
		{queue: 1500, limit: 1000, avail: -500},
		{complete: 1500, jiffies: 2, limit: 2500, avail: 2500},
		// busy interval: queue 5000, complete 1000 (4000 still in flight).
		// prev_inprogress = prev_num_queued(2500) - num_completed(2500) = 0,
		// so no slack update: limit stays.
		{queue: 5000, limit: 2500, avail: -2500},
		{complete: 1000, jiffies: 3, limit: 2500, avail: -1500},
		// now prev_inprogress = 7500 - 3500 = 4000 > 0 and in progress:
		// slack = posdiff(2500 + prev_ovlimit, 2*1000). prev_ovlimit was
		// posdiff(7500-2500, 2500) = 2500, so slack = 5000 - 2000 = 3000;
		// slack_last_objs = posdiff(5000, 2500) = 2500; lowest = 3000.
		// Hold time (HZ = 1000 jiffies) not over: limit unchanged.
		{complete: 1000, jiffies: 4, limit: 2500, avail: -500},
		// After the hold time the limit drops by the lowest slack seen.
		// This step: prev_ovlimit = posdiff(7500-4500, 2500) = 500, slack =
		// posdiff(2500+500, 2000) = 1000, slack_last_objs = posdiff(5000,
		// 500) = 4500, so slack 4500; lowest stays 3000; limit =
		// posdiff(2500, 3000) = 0.
		{complete: 1000, jiffies: 1100, limit: 0, avail: -2000},
	}
	var d DQL
	d.Init(1000, 0)
	for i, s := range steps {
		if s.queue > 0 {
			d.Queued(s.queue)
		}
		if s.complete > 0 {
			d.Completed(s.complete, s.jiffies)
		}
		if d.Limit != s.limit || d.Avail() != s.avail {
			t.Fatalf("step %d: limit %d avail %d, want limit %d avail %d (dql %+v)", i, d.Limit, d.Avail(), s.limit, s.avail, d)
		}
	}
}

// dql_reset leaves adj_limit alone (only dql_completed writes it): a
// queue reset after traffic keeps its old headroom until the next
// completion; a fresh one has 0 and stops after the first packet.
func TestDQLResetKeepsAdjLimit(t *testing.T) {
	var d DQL
	d.Init(HZ, 0)
	if d.AdjLimit != 0 || d.Avail() != 0 {
		t.Fatalf("fresh: adj_limit %d avail %d, want 0", d.AdjLimit, d.Avail())
	}
	d.Queued(1000)
	d.Completed(1000, 1) // starved: limit 1000, adj_limit 2000
	if d.AdjLimit != 2000 {
		t.Fatalf("adj_limit %d after the first completion, want 2000", d.AdjLimit)
	}
	d.MinLimit = 500
	d.Reset(2)
	if d.Limit != 500 || d.NumQueued != 0 || d.NumCompleted != 0 {
		t.Errorf("reset: limit %d queued %d completed %d, want 500 (min_limit), 0, 0", d.Limit, d.NumQueued, d.NumCompleted)
	}
	if d.AdjLimit != 2000 || d.Avail() != 2000 {
		t.Errorf("reset: adj_limit %d avail %d, want the old 2000 kept", d.AdjLimit, d.Avail())
	}
}
