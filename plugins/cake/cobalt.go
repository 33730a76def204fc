package cake

import "github.com/txlab/txlab/framework/sim"

// cobaltParams is struct cobalt_params.
type cobaltParams struct {
	interval sim.Time
	target   sim.Time
	mtuTime  sim.Time
	pInc     uint32 // BLUE increment, 0.32 fixed point
	pDec     uint32
}

// cobaltVars is struct cobalt_vars.
type cobaltVars struct {
	count      uint32
	recInvSqrt uint32
	dropNext   sim.Time
	blueTimer  sim.Time
	pDrop      uint32 // BLUE drop probability, 0.32 fixed point
	dropping   bool
	ecnMarked  bool
}

const recInvSqrtCache = 16 // REC_INV_SQRT_CACHE

// invSqrtCache is mainline's inv_sqrt_cache: 1/sqrt(count) in Q0.32 for
// the small counts, computed offline with eight Newton steps (the old
// cobalt_cache_init ran four at boot, which gave slightly different
// values); entries 0 and 1 are ~0, as close to 1.0 as Q0.32 gets.
var invSqrtCache = [recInvSqrtCache]uint32{
	^uint32(0), ^uint32(0), 3037000500, 2479700525,
	2147483647, 1920767767, 1753413056, 1623345051,
	1518500250, 1431655765, 1358187914, 1294981364,
	1239850263, 1191209601, 1147878294, 1108955788,
}

// cobaltNewtonStep is cobalt_newton_step: one Newton iteration of
// 1/sqrt(count) in Q0.32.
func cobaltNewtonStep(v *cobaltVars) {
	invsqrt := uint64(v.recInvSqrt)
	invsqrt2 := (invsqrt * invsqrt) >> 32
	val := (uint64(3) << 32) - uint64(v.count)*invsqrt2
	val >>= 2 // avoid overflow in the multiply below
	val = (val * invsqrt) >> (32 - 2 + 1)
	v.recInvSqrt = uint32(val)
}

// cobaltInvsqrt is cobalt_invsqrt: cached for small counts.
func cobaltInvsqrt(v *cobaltVars) {
	if v.count < recInvSqrtCache {
		v.recInvSqrt = invSqrtCache[v.count]
	} else {
		cobaltNewtonStep(v)
	}
}

// reciprocalScale is reciprocal_scale(val, ep_ro): (u32)(((u64)val *
// ep_ro) >> 32), both arguments u32.
func reciprocalScale(val, epRo uint32) uint32 {
	return uint32(uint64(val) * uint64(epRo) >> 32)
}

// cobaltControl is cobalt_control: t + interval/sqrt(count). The u64
// interval is passed to reciprocal_scale's u32 parameter, so the kernel
// truncates it to its low 32 bits (an rtt above ~4.29 s wraps).
func cobaltControl(t, interval sim.Time, recInvSqrt uint32) sim.Time {
	return t + sim.Time(reciprocalScale(uint32(interval), recInvSqrt))
}

// cobaltQueueFull is cobalt_queue_full, called when a packet is dropped
// for overflow: BLUE's p rises, at most once per target interval. It
// reports whether BLUE was quiescent before. With blue false (txlab's
// lab-noblue) p never rises, so BLUE never drops; CoDel's half (dropping,
// drop_next, count) is unchanged.
func cobaltQueueFull(v *cobaltVars, p *cobaltParams, now sim.Time, blue bool) bool {
	up := false
	if blue && now-v.blueTimer > p.target {
		up = v.pDrop == 0
		v.pDrop += p.pInc
		if v.pDrop < p.pInc { // saturate at ~1
			v.pDrop = ^uint32(0)
		}
		v.blueTimer = now
	}
	v.dropping = true
	v.dropNext = now
	if v.count == 0 {
		v.count = 1
	}
	return up
}

// cobaltQueueEmpty is cobalt_queue_empty, called when the flow was
// serviced but empty: BLUE's p decays, CoDel's count winds down. It
// reports whether BLUE became quiescent.
func cobaltQueueEmpty(v *cobaltVars, p *cobaltParams, now sim.Time) bool {
	down := false
	if v.pDrop != 0 && now-v.blueTimer > p.target {
		if v.pDrop < p.pDec {
			v.pDrop = 0
		} else {
			v.pDrop -= p.pDec
		}
		v.blueTimer = now
		down = v.pDrop == 0
	}
	v.dropping = false
	if v.count != 0 && now-v.dropNext >= 0 {
		v.count--
		cobaltInvsqrt(v)
		v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
	}
	return down
}

// cobaltVerdict says what cobalt_should_drop decided.
type cobaltVerdict uint8

const (
	cobaltPass      cobaltVerdict = iota
	cobaltDropCodel               // CoDel schedule, packet not ECN-capable
	cobaltDropBlue                // BLUE's p_drop
)

// cobaltShouldDrop is cobalt_should_drop for a freshly dequeued packet.
// ect says whether the packet can be CE-marked; marked reports a mark.
func cobaltShouldDrop(v *cobaltVars, p *cobaltParams, now, enqueued sim.Time, ect bool, bulkFlows uint32, rand func() uint32) (verdict cobaltVerdict, marked bool) {
	sojourn := now - enqueued
	schedule := now - v.dropNext
	overTarget := sojourn > p.target && sojourn > p.mtuTime*sim.Time(bulkFlows)*2 && sojourn > p.mtuTime*4
	nextDue := v.count != 0 && schedule >= 0

	v.ecnMarked = false
	drop := false
	if overTarget {
		if !v.dropping {
			v.dropping = true
			v.dropNext = cobaltControl(now, p.interval, v.recInvSqrt)
		}
		if v.count == 0 {
			v.count = 1
		}
	} else if v.dropping {
		v.dropping = false
	}

	if nextDue && v.dropping {
		// Use an ECN mark if possible, otherwise drop.
		v.ecnMarked = ect
		drop = !ect
		v.count++
		if v.count == 0 {
			v.count--
		}
		cobaltInvsqrt(v)
		v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
		schedule = now - v.dropNext
	} else {
		for nextDue {
			v.count--
			cobaltInvsqrt(v)
			v.dropNext = cobaltControl(v.dropNext, p.interval, v.recInvSqrt)
			schedule = now - v.dropNext
			nextDue = v.count != 0 && schedule >= 0
		}
	}
	if drop {
		verdict = cobaltDropCodel
	}

	// Simple BLUE. Lack of ECN is deliberate. Like the kernel, draw
	// only for a packet CoDel has not dropped already.
	if v.pDrop != 0 && !drop && rand() < v.pDrop {
		verdict = cobaltDropBlue
		drop = true
	}

	// Overload drop_next as an activity timeout.
	if v.count == 0 {
		v.dropNext = now + p.interval
	} else if schedule > 0 && !drop {
		v.dropNext = now
	}
	return verdict, v.ecnMarked
}
