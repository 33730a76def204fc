package netdev

// DQL is struct dql (include/linux/dynamic_queue_limits.h) with the exact
// unsigned arithmetic of lib/dynamic_queue_limits.c. Time is in jiffies.
type DQL struct {
	NumQueued      uint32
	AdjLimit       uint32
	LastObjCnt     uint32
	Limit          uint32
	NumCompleted   uint32
	PrevOvlimit    uint32
	PrevNumQueued  uint32
	PrevLastObjCnt uint32
	LowestSlack    uint32
	SlackStartTime uint64
	MaxLimit       uint32
	MinLimit       uint32
	SlackHoldTime  uint64
}

const (
	dqlMaxObject = ^uint32(0) / 16                      // DQL_MAX_OBJECT
	dqlMaxLimit  = (^uint32(0) / 2) - (^uint32(0) / 16) // DQL_MAX_LIMIT
)

// posdiff is POSDIFF(A, B): max((int)(A-B), 0).
func posdiff(a, b uint32) uint32 {
	if d := int32(a - b); d > 0 {
		return uint32(d)
	}
	return 0
}

// afterEq is AFTER_EQ(A, B): (int)(A-B) >= 0.
func afterEq(a, b uint32) bool { return int32(a-b) >= 0 }

// timeAfter is time_after(a, b) on jiffies.
func timeAfter(a, b uint64) bool { return int64(b-a) < 0 }

// Init is dql_init(dql, hold_time).
func (d *DQL) Init(holdTime uint64, jiffies uint64) {
	d.MaxLimit = dqlMaxLimit
	d.MinLimit = 0
	d.SlackHoldTime = holdTime
	d.Reset(jiffies)
}

// Reset is dql_reset.
func (d *DQL) Reset(jiffies uint64) {
	d.Limit = d.MinLimit
	d.NumQueued = 0
	d.NumCompleted = 0
	d.LastObjCnt = 0
	d.PrevNumQueued = 0
	d.PrevLastObjCnt = 0
	d.PrevOvlimit = 0
	d.LowestSlack = ^uint32(0)
	d.SlackStartTime = jiffies
	// adj_limit is left alone, as dql_reset leaves it: only
	// dql_completed sets it. A fresh queue has it at 0 (the zeroed
	// netdev_queue); a reset one keeps its old value until the next
	// completion.
}

// Queued is dql_queued: count objects (bytes) handed to the hardware.
func (d *DQL) Queued(count uint32) {
	if count > dqlMaxObject {
		count = dqlMaxObject // the kernel BUG_ONs; the model clamps
	}
	d.LastObjCnt = count
	d.NumQueued += count
}

// Avail is dql_avail: adj_limit - num_queued, as an int.
func (d *DQL) Avail() int32 { return int32(d.AdjLimit - d.NumQueued) }

// Inflight is num_queued - num_completed.
func (d *DQL) Inflight() uint32 { return d.NumQueued - d.NumCompleted }

// Completed is dql_completed(dql, count) at time jiffies.
func (d *DQL) Completed(count uint32, jiffies uint64) {
	numQueued := d.NumQueued
	// Can't complete more than what's in queue.
	if count > numQueued-d.NumCompleted {
		count = numQueued - d.NumCompleted // kernel BUG_ON
	}
	completed := d.NumCompleted + count
	limit := d.Limit
	ovlimit := posdiff(numQueued-d.NumCompleted, limit)
	inprogress := numQueued - completed
	prevInprogress := d.PrevNumQueued - d.NumCompleted
	allPrevCompleted := afterEq(completed, d.PrevNumQueued)

	if (ovlimit != 0 && inprogress == 0) || (d.PrevOvlimit != 0 && allPrevCompleted) {
		// Queue considered starved: increase the limit by the amount of
		// work completed past the previous interval plus the overlimit.
		limit += posdiff(completed, d.PrevNumQueued) + d.PrevOvlimit
		d.SlackStartTime = jiffies
		d.LowestSlack = ^uint32(0)
	} else if inprogress != 0 && prevInprogress != 0 && !allPrevCompleted {
		// Queue was busy the whole interval: the excess is slack.
		slack := posdiff(limit+d.PrevOvlimit, 2*(completed-d.NumCompleted))
		var slackLastObjs uint32
		if d.PrevOvlimit != 0 {
			slackLastObjs = posdiff(d.PrevLastObjCnt, d.PrevOvlimit)
		}
		slack = max(slack, slackLastObjs)
		if slack < d.LowestSlack {
			d.LowestSlack = slack
		}
		if timeAfter(jiffies, d.SlackStartTime+d.SlackHoldTime) {
			limit = posdiff(limit, d.LowestSlack)
			d.SlackStartTime = jiffies
			d.LowestSlack = ^uint32(0)
		}
	}

	// Enforce bounds on limit.
	limit = min(max(limit, d.MinLimit), d.MaxLimit)
	if limit != d.Limit {
		d.Limit = limit
		ovlimit = 0
	}
	d.AdjLimit = limit + completed
	d.PrevOvlimit = ovlimit
	d.PrevLastObjCnt = d.LastObjCnt
	d.NumCompleted = completed
	d.PrevNumQueued = numQueued
}
