package i40e

import "github.com/txlab/txlab/framework/sim"

// i40e's adaptive interrupt moderation is its own, not lib/dim's: at
// every napi_complete_done, i40e_update_enable_itr runs i40e_update_itr
// on the vector's TX and RX containers (what their rings cleaned since
// the last update) and writes at most one new ITR to the hardware.
// Values are ITR register units as the driver keeps them: microseconds
// in steps of 2 (ITR_MASK), with bit 15 the latency-mode flag.

// Constants from i40e_txrx.h and i40e_txrx.c.
const (
	itrMask             = 0x1FFE // I40E_ITR_MASK
	itrAdaptiveMinInc   = 0x0002 // I40E_ITR_ADAPTIVE_MIN_INC
	itrAdaptiveMinUsecs = 0x0002 // I40E_ITR_ADAPTIVE_MIN_USECS
	itrAdaptiveMaxUsecs = 0x007e // I40E_ITR_ADAPTIVE_MAX_USECS
	itrAdaptiveLatency  = 0x8000 // I40E_ITR_ADAPTIVE_LATENCY
	itrAdaptiveBulk     = 0x0000 // I40E_ITR_ADAPTIVE_BULK
	itrCountdownStart   = 3      // ITR_COUNTDOWN_START
)

// ringContainer is struct i40e_ring_container's moderation state.
type ringContainer struct {
	dynamic      bool  // ITR_IS_DYNAMIC(ring->itr_setting)
	nextUpdate   int64 // jiffies
	totalBytes   uint32
	totalPackets uint32
	target       uint16 // target_itr
	current      uint16 // current_itr: what the hardware has
}

// itrVector is a q_vector's moderation: its two containers and
// itr_countdown.
type itrVector struct {
	rx, tx    ringContainer
	countdown int
	changes   uint64 // ITR writes (the model's counter)
}

// newITRVector is i40e_vsi_configure_msix's setup: both containers at
// their configured ITR (ITR_TO_REG drops the dynamic flag, so neither
// starts in latency mode), next update within a jiffy of jiffy 0 (the
// drivers are set up at time 0).
func newITRVector(txUsecs, rxUsecs sim.Time, txDyn, rxDyn bool) itrVector {
	c := func(usecs sim.Time, dyn bool) ringContainer {
		itr := uint16((usecs/sim.Microsecond+1)&^1) & itrMask // ITR_REG_ALIGN: up to even
		return ringContainer{dynamic: dyn, nextUpdate: 1, target: itr, current: itr}
	}
	return itrVector{tx: c(txUsecs, txDyn), rx: c(rxUsecs, rxDyn)}
}

// itrDivisor is i40e_itr_divisor for the link's speed.
func itrDivisor(rateBps int64) uint32 {
	switch {
	case rateBps >= 40_000_000_000:
		return itrAdaptiveMinInc * 1024
	case rateBps >= 20_000_000_000: // 25G and 20G
		return itrAdaptiveMinInc * 512
	case rateBps <= 1_000_000_000: // 1G and 100M
		return itrAdaptiveMinInc * 32
	}
	return itrAdaptiveMinInc * 256 // 10G, and the switch's default
}

// updateITR is i40e_update_itr on container rc (rx: the RX one) at
// jiffy now.
func (q *itrVector) updateITR(now int64, rc *ringContainer, rx bool, divisor uint32) {
	if !rc.dynamic {
		return
	}
	// RX starts from low latency and pushes the delay up; TX from the
	// longest delay and pulls it down.
	itr := uint32(itrAdaptiveMaxUsecs | itrAdaptiveLatency)
	if rx {
		itr = itrAdaptiveMinUsecs | itrAdaptiveLatency
	}
	packets, bytes := rc.totalPackets, rc.totalBytes
	switch {
	case now > rc.nextUpdate:
		// No update for 1-2 jiffies: too little traffic to measure, or
		// so much that NAPI polls on; back to the default.
		goto clearCounts
	case q.countdown > 0:
		// An ITR written in the last interrupts may fire early: throw
		// the sample away.
		itr = uint32(rc.target)
		goto clearCounts
	}
	if rx {
		// 1-3 small packets while TX is in latency mode: latency driven.
		if packets > 0 && packets < 4 && bytes < 9000 && q.tx.target&itrAdaptiveLatency != 0 {
			itr = itrAdaptiveLatency
			goto adjustBySize
		}
	} else if packets < 4 {
		// Both maxed and TX in bulk mode: let RX relax.
		if rc.target == itrAdaptiveMaxUsecs && q.rx.target&itrMask == itrAdaptiveMaxUsecs {
			goto clearCounts
		}
	} else if packets > 32 {
		rc.target &^= itrAdaptiveLatency // over 32 TX packets: bulk mode
	}
	if packets < 56 {
		// Too few packets for the delay: raise it a step.
		itr = uint32(rc.target) + itrAdaptiveMinInc
		if itr&itrMask > itrAdaptiveMaxUsecs {
			itr &= itrAdaptiveLatency
			itr += itrAdaptiveMaxUsecs
		}
		goto clearCounts
	}
	if packets <= 256 {
		itr = uint32(min(q.tx.current, q.rx.current)) & itrMask
		if packets <= 112 {
			goto clearCounts // the "goldilocks" zone: keep it
		}
		// 113-256: a slight overrun; try half the delay.
		itr = (itr / 2) & itrMask
		if itr < itrAdaptiveMinUsecs {
			itr = itrAdaptiveMinUsecs
		}
		goto clearCounts
	}
	// Over 256 packets: bulk; compute the delay from the packet size.
	itr = itrAdaptiveBulk
adjustBySize:
	{
		avg := bytes / packets
		switch {
		case avg <= 60:
			avg = 4096 // 250K interrupts a second
		case avg <= 380:
			avg = avg*40 + 1696
		case avg <= 1084:
			avg = avg*15 + 11452
		case avg <= 1980:
			avg = avg*5 + 22420
		default:
			avg = 32256 // 30K interrupts a second
		}
		if itr&itrAdaptiveLatency != 0 {
			avg /= 2
		}
		itr += (avg + divisor - 1) / divisor * itrAdaptiveMinInc // DIV_ROUND_UP
		if itr&itrMask > itrAdaptiveMaxUsecs {
			itr &= itrAdaptiveLatency
			itr += itrAdaptiveMaxUsecs
		}
	}
clearCounts:
	rc.target = uint16(itr)
	rc.nextUpdate = now + 1
	rc.totalBytes, rc.totalPackets = 0, 0
}

// updateEnableITR is i40e_update_enable_itr's moderation at jiffy now:
// both containers' targets, then at most one written, by priority (an
// RX decrease, a TX decrease or the larger TX increase, an RX
// increase); a write restarts the countdown. It reports whether an ITR
// changed.
func (q *itrVector) updateEnableITR(now int64, divisor uint32) bool {
	q.updateITR(now, &q.tx, false, divisor)
	q.updateITR(now, &q.rx, true, divisor)
	switch {
	case q.rx.target < q.rx.current:
		q.rx.current = q.rx.target
	case q.tx.target < q.tx.current ||
		int(q.rx.target)-int(q.rx.current) < int(q.tx.target)-int(q.tx.current):
		q.tx.current = q.tx.target
	case q.rx.current != q.rx.target:
		q.rx.current = q.rx.target
	default:
		if q.countdown > 0 {
			q.countdown--
		}
		return false
	}
	q.countdown = itrCountdownStart
	q.changes++
	return true
}

// usecs is the interval the hardware runs for an ITR value
// (i40e_buildreg_itr masks the flag off).
func usecs(itr uint16) sim.Time { return sim.Time(itr&itrMask) * sim.Microsecond }
