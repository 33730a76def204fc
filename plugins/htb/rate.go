package htb

import "math"

// psched time: the kernel's PSCHED ticks are 64 ns (PSCHED_SHIFT 6), what
// tc_htb_opt's buffer and cbuffer and the xstats' tokens carry.
const psShift = 6

func ticksToNs(t uint32) int64 { return int64(t) << psShift } // PSCHED_TICKS2NS
func nsToTicks(ns int64) int64 { return ns >> psShift }       // PSCHED_NS2TICKS

// Link layers (TC_LINKLAYER_*).
const (
	linkEthernet = 1
	linkATM      = 2
)

// ratecfg is struct psched_ratecfg (net/sched/sch_generic.c): a rate
// with the multiplier and shift psched_l2t_ns uses.
type ratecfg struct {
	bytesPS   uint64
	mult      uint32
	shift     uint8
	overhead  uint16
	mpu       uint16
	linklayer uint8
}

// precompute is psched_ratecfg_precompute.
func precompute(rate uint64, overhead, mpu uint16, linklayer uint8) ratecfg {
	r := ratecfg{bytesPS: rate, overhead: overhead, mpu: mpu, linklayer: linklayer, mult: 1}
	if rate == 0 {
		return r
	}
	// psched_ratecfg_precompute__: the largest mult below 2^31 with
	// factor = NSEC_PER_SEC << shift.
	factor := uint64(1e9)
	for {
		r.mult = uint32(factor / rate)
		if r.mult&(1<<31) != 0 || factor&(1<<63) != 0 {
			break
		}
		factor <<= 1
		r.shift++
	}
	return r
}

// l2tNs is psched_l2t_ns: the time to send len bytes at the rate.
func (r *ratecfg) l2tNs(length int) int64 {
	l := length + int(r.overhead)
	if l < int(r.mpu) {
		l = int(r.mpu)
	}
	if r.linklayer == linkATM {
		l = (l + 47) / 48 * 53 // DIV_ROUND_UP(len, 48) * 53
	}
	return int64((uint64(l) * uint64(r.mult)) >> r.shift)
}

// tc's clock (tc_core.c on a kernel with high-resolution timers):
// /proc/net/psched says 1000 ns per us and 64 ns per tick, so
// tick_in_usec is 15.625, and the clock is 1 GHz, so get_hz() is 1e9.
const (
	tickInUsec      = 1000.0 / 64
	timeUnitsPerSec = 1e6
	hz              = 1e9
)

// calcXmittime is tc_calc_xmittime: ticks to send size bytes at rate
// (bytes/s), rounded up.
func calcXmittime(rate, size uint64) uint32 {
	v := math.Ceil(timeUnitsPerSec * (float64(size) / float64(rate)) * tickInUsec)
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// calcXmitsize is tc_calc_xmitsize: the bytes sent at rate in ticks.
func calcXmitsize(rate uint64, ticks uint32) uint64 {
	return uint64(float64(rate) * (float64(ticks) / tickInUsec) / timeUnitsPerSec)
}
