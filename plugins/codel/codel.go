// Package codel is the Controlled-Delay AQM shared by the CoDel-based
// qdiscs: codel_params, codel_vars, codel_stats, the control law, the
// reciprocal-sqrt Newton step, codel_should_drop and the codel_dequeue
// state machine, in the kernel's fixed-point arithmetic
// (include/net/codel.h, include/net/codel_impl.h). The codel qdisc
// itself (net/sched/sch_codel.c, one queue) is sch_codel.go here;
// plugins/fq_codel runs one instance per flow.
//
// Reference version: codel_impl.h as in intel-lab-lkp ceaf75c4 (the copy
// KERNEL-FACTS.md names). Against older trees it adds two things, both kept
// here: the control-law increment is clamped to at least one tick, and one
// codel_dequeue call drops at most CODEL_MAX_DROPS_PER_DEQUEUE packets
// (torvalds codel.h 0b9828c7 defines the constant); and an empty queue also
// clears first_above_time.
//
// Time is codel_time_t: a u32 count of 1024 ns units with RFC 1982 serial
// compares, so values wrap every ~4398 s exactly as in the kernel.
package codel

import (
	"math"

	"github.com/txlab/txlab/framework/skb"
)

// Time is codel_time_t: nanoseconds >> CODEL_SHIFT, in a u32.
type Time uint32

// CODEL_SHIFT and friends (include/net/codel.h).
const (
	Shift = 10 // CODEL_SHIFT: 1024 ns units

	RecInvSqrtBits  = 16                  // REC_INV_SQRT_BITS: rec_inv_sqrt is a u16
	RecInvSqrtShift = 32 - RecInvSqrtBits // REC_INV_SQRT_SHIFT: u16 -> Q0.32

	// DisabledThreshold is CODEL_DISABLED_THRESHOLD (INT_MAX): ce_threshold off.
	DisabledThreshold Time = math.MaxInt32

	// MaxDropsPerDequeue is CODEL_MAX_DROPS_PER_DEQUEUE: bounds the drop
	// loop, whose length otherwise depends on the idle gap and backlog.
	MaxDropsPerDequeue = 256
)

// GetTime is codel_get_time: the caller's ktime_get_ns() in codel units.
func GetTime(ns int64) Time { return Time(uint64(ns) >> Shift) }

// MS2Time is MS2TIME.
func MS2Time(ms uint64) Time { return Time((ms * 1000000) >> Shift) }

// US2Time converts microseconds the way fq_codel_change does:
// (us * NSEC_PER_USEC) >> CODEL_SHIFT, truncated to u32.
func US2Time(us uint64) Time { return Time((us * 1000) >> Shift) }

// ToUs is codel_time_to_us (what the dump hands to tc).
func ToUs(t Time) uint32 { return uint32((uint64(t) << Shift) / 1000) }

// After is codel_time_after(a, b): a is after b, modulo wrap.
func After(a, b Time) bool { return int32(a-b) > 0 }

// AfterEq is codel_time_after_eq.
func AfterEq(a, b Time) bool { return int32(a-b) >= 0 }

// Before is codel_time_before.
func Before(a, b Time) bool { return After(b, a) }

// Params is struct codel_params.
type Params struct {
	Target      Time
	CEThreshold Time
	Interval    Time
	MTU         uint32 // below this qdisc backlog, never drop
	ECN         bool
	// CE threshold selector/mask on the dsfield (DSCP<<2 | ECN); mask 0
	// applies ce_threshold to every packet.
	CEThresholdSelector uint8
	CEThresholdMask     uint8
}

// ParamsInit is codel_params_init: 100 ms interval, 5 ms target, no
// ce_threshold, ECN off (callers such as fq_codel turn it on).
func ParamsInit() Params {
	return Params{Interval: MS2Time(100), Target: MS2Time(5), CEThreshold: DisabledThreshold}
}

// Vars is struct codel_vars, one per CoDel queue (per flow in fq_codel).
type Vars struct {
	Count          uint32 // drops since entering the dropping state
	LastCount      uint32 // count at entry to the dropping state
	Dropping       bool
	RecInvSqrt     uint16 // 1/sqrt(count) in Q0.16
	FirstAboveTime Time   // when we went (or will go) above target for interval
	DropNext       Time   // next drop, or the last one
	LDelay         Time   // sojourn time of the last dequeued packet
}

// Stats is struct codel_stats, shared by all queues of one qdisc.
type Stats struct {
	MaxPacket uint32
	DropCount uint32 // drops in the current dequeue (the caller resets it)
	DropLen   uint32
	ECNMark   uint32
	CEMark    uint32
}

// Item is a held packet with its codel_skb_cb (include/net/codel_qdisc.h):
// the enqueue time in codel units and the bytes charged to the qdisc's
// memory accounting.
type Item struct {
	Pkt         skb.Packet
	EnqueueTime Time
	MemUsage    uint32
}

// Queue is what codel_dequeue calls back into: the qdisc's dequeue_func
// and drop_func, and codel_get_time (so the caller can price ktime_get).
type Queue interface {
	// Dequeue removes the head packet and does the caller's qlen,
	// backlog and memory accounting (dequeue_func). ok is false if empty.
	Dequeue() (it Item, ok bool)
	// Drop frees a packet codel decided to drop (drop_func). It takes
	// the item by value so the caller's copy does not escape to the heap.
	Drop(it Item)
	// Now is codel_get_time().
	Now() Time
}

// NewtonStep is codel_Newton_step: one Newton iteration of
// rec_inv_sqrt = 1/sqrt(count), new = (inv/2) * (3 - count*inv^2), in
// Q0.32 with the kernel's truncations and u64 wrap-around.
func NewtonStep(v *Vars) {
	invsqrt := uint32(v.RecInvSqrt) << RecInvSqrtShift
	invsqrt2 := uint32((uint64(invsqrt) * uint64(invsqrt)) >> 32)
	val := (uint64(3) << 32) - uint64(v.Count)*uint64(invsqrt2)
	val >>= 2 // avoids overflow in the multiply below
	val = (val * uint64(invsqrt)) >> (32 - 2 + 1)
	v.RecInvSqrt = uint16(val >> RecInvSqrtShift)
}

// reciprocalScale is reciprocal_scale(): (val * ep_ro) >> 32.
func reciprocalScale(val, epRo uint32) uint32 { return uint32((uint64(val) * uint64(epRo)) >> 32) }

// ControlLaw is codel_control_law: t + interval/sqrt(count), using the
// stored reciprocal so there is neither sqrt nor divide. The increment is
// at least one tick so a tiny interval cannot stall the drop loop.
func ControlLaw(t, interval Time, recInvSqrt uint16) Time {
	return t + Time(max(1, reciprocalScale(uint32(interval), uint32(recInvSqrt)<<RecInvSqrtShift)))
}

// ShouldDrop is codel_should_drop. backlog is the qdisc-wide backlog
// after it was dequeued (fq_codel passes sch->qstats.backlog, not the
// flow's), so a single fat flow on an otherwise empty qdisc is still
// spared while the whole qdisc holds at most one MTU.
func ShouldDrop(it *Item, v *Vars, p *Params, st *Stats, backlog uint32, now Time) bool {
	if it == nil {
		v.FirstAboveTime = 0
		return false
	}
	v.LDelay = now - it.EnqueueTime
	if it.Pkt.Len > st.MaxPacket {
		st.MaxPacket = it.Pkt.Len
	}
	if Before(v.LDelay, p.Target) || backlog <= p.MTU {
		// went below: stay below for at least interval
		v.FirstAboveTime = 0
		return false
	}
	if v.FirstAboveTime == 0 {
		// just went above: drop only if it stays above for interval
		v.FirstAboveTime = now + p.Interval
		return false
	}
	return After(now, v.FirstAboveTime)
}

// Dequeue is codel_dequeue: it takes packets from q until one is to be
// sent, dropping (or CE-marking) on the control-law schedule. backlog
// points at the qdisc-wide backlog, which q.Dequeue keeps current.
func Dequeue(q Queue, backlog *uint32, p *Params, v *Vars, st *Stats) (Item, bool) {
	it, ok := q.Dequeue()
	if !ok {
		v.FirstAboveTime = 0
		v.Dropping = false
		return Item{}, false
	}
	now := q.Now()
	drop := ShouldDrop(&it, v, p, st, *backlog, now)
	if v.Dropping {
		if !drop {
			// sojourn time below target: leave the dropping state
			v.Dropping = false
		} else if AfterEq(now, v.DropNext) {
			// Time for the next drop; a large backlog can make several
			// drops due now, hence the loop, bounded per call.
			drops := 0
			for v.Dropping && AfterEq(now, v.DropNext) {
				drops++
				if drops > MaxDropsPerDequeue {
					// fell far behind the schedule: resync
					v.DropNext = ControlLaw(now, p.Interval, v.RecInvSqrt)
					break
				}
				v.Count++ // wrap is harmless: no divide uses it
				NewtonStep(v)
				if p.ECN && it.Pkt.SetCE() {
					st.ECNMark++
					v.DropNext = ControlLaw(v.DropNext, p.Interval, v.RecInvSqrt)
					goto end
				}
				st.DropLen += it.Pkt.Len
				q.Drop(it)
				st.DropCount++
				it, ok = q.Dequeue()
				var next *Item
				if ok {
					next = &it
				}
				if !ShouldDrop(next, v, p, st, *backlog, now) {
					v.Dropping = false
				} else {
					v.DropNext = ControlLaw(v.DropNext, p.Interval, v.RecInvSqrt)
				}
			}
		}
	} else if drop {
		if p.ECN && it.Pkt.SetCE() {
			st.ECNMark++
		} else {
			st.DropLen += it.Pkt.Len
			q.Drop(it)
			st.DropCount++
			it, ok = q.Dequeue()
			var next *Item
			if ok {
				next = &it
			}
			ShouldDrop(next, v, p, st, *backlog, now)
		}
		v.Dropping = true
		// If we went above target soon after leaving the dropping state,
		// the drop rate that controlled the queue last time is a good
		// start; the next Newton steps correct the estimate quadratically.
		delta := v.Count - v.LastCount
		if delta > 1 && Before(now-v.DropNext, 16*p.Interval) {
			v.Count = delta
			NewtonStep(v)
		} else {
			v.Count = 1
			v.RecInvSqrt = ^uint16(0) // ~0U >> REC_INV_SQRT_SHIFT: ~1.0
		}
		v.LastCount = v.Count
		v.DropNext = ControlLaw(now, p.Interval, v.RecInvSqrt)
	}
end:
	if ok && After(v.LDelay, p.CEThreshold) {
		setCE := true
		if p.CEThresholdMask != 0 {
			ds := it.Pkt.DSCP<<2 | it.Pkt.ECN&3
			setCE = ds&p.CEThresholdMask == p.CEThresholdSelector
		}
		if setCE && it.Pkt.SetCE() {
			st.CEMark++
		}
	}
	return it, ok
}
