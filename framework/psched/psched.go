// Package psched is the packet scheduler's clock and rate arithmetic the
// shapers and htb share: psched ticks (PSCHED_SHIFT), struct
// psched_ratecfg and psched_l2t_ns (include/net/sch_generic.h,
// net/sched/sch_generic.c), and tc's side of it (tc/tc_core.c:
// tc_calc_xmittime, tc_calc_xmitsize, get_hz) with the tick_in_usec a
// kernel with high-resolution timers advertises in /proc/net/psched. It
// also holds the few tc option readers they need beyond framework/units
// (get_size_and_cell, parse_percent, get_percent_rate64, get_linklayer,
// matches).
package psched

import (
	"math"

	"github.com/txlab/txlab/framework/units"
)

// PSCHED_SHIFT: a psched tick is 64 ns.
const shift = 6

// TicksToNs is PSCHED_TICKS2NS.
func TicksToNs(ticks uint64) uint64 { return ticks << shift }

// NsToTicks is PSCHED_NS2TICKS.
func NsToTicks(ns uint64) uint64 { return ns >> shift }

// SignedNsToTicks is PSCHED_NS2TICKS of a signed count (htb's s64 tokens,
// below zero while a class is in debt): an arithmetic shift.
func SignedNsToTicks(ns int64) int64 { return ns >> shift }

// tickInUsec is tc_core_init's tick_in_usec for /proc/net/psched
// "000003e8 00000040 000f4240 3b9aca00" (psched_show: NSEC_PER_USEC,
// PSCHED_TICKS2NS(1), 1000000, NSEC_PER_SEC/hrtimer_resolution): tc's
// fscanf reads the first three, t2us/us2t * clock_res/1e6 = 1000/64.
const tickInUsec = 1000.0 / 64.0

// timeUnitsPerSec is tc's TIME_UNITS_PER_SEC (its times are in us).
const timeUnitsPerSec = 1e6

// Hz is tc's get_hz() for that /proc/net/psched: its fourth field,
// NSEC_PER_SEC / hrtimer_resolution, a 1 GHz clock.
const Hz = 1e9

// Tick2Time is tc_core_tick2time: ticks to microseconds.
func Tick2Time(ticks float64) float64 { return ticks / tickInUsec }

// Time2Tick is tc_core_time2tick: microseconds to ticks.
func Time2Tick(us float64) float64 { return us * tickInUsec }

// CalcXmittime is tc_calc_xmittime: the ticks size bytes take at rate
// bytes/s, rounded up, at most UINT_MAX.
func CalcXmittime(rate, size uint64) uint32 {
	v := math.Ceil(Time2Tick(timeUnitsPerSec * (float64(size) / float64(rate))))
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// CalcXmitsize is tc_calc_xmitsize: the bytes rate sends in ticks.
func CalcXmitsize(rate uint64, ticks uint32) uint64 {
	return uint64(float64(rate) * Tick2Time(float64(ticks)) / timeUnitsPerSec)
}

// Link layers (enum tc_link_layer): framework/units'.
const (
	LinkUnaware  = units.LinkUnaware
	LinkEthernet = units.LinkEthernet
	LinkATM      = units.LinkATM
)

// LinkName is sprint_linklayer.
func LinkName(l uint8) string { return units.LinkName(l) }

// Ratecfg is struct psched_ratecfg: a rate precomputed for a reciprocal
// divide (time_in_ns = len * mult >> shift).
type Ratecfg struct {
	RateBytesPs uint64
	Mult        uint32
	Overhead    uint16
	Mpu         uint16
	Linklayer   uint8
	Shift       uint8
}

// Precompute is psched_ratecfg_precompute with tc_ratespec's fields:
// the rate is max(rate32, rate64), as the kernel takes TCA_*_RATE64.
func Precompute(rate32 uint32, rate64 uint64, overhead, mpu uint16, linklayer uint8) Ratecfg {
	r := Ratecfg{Overhead: overhead, Mpu: mpu, RateBytesPs: max(uint64(rate32), rate64), Linklayer: linklayer}
	r.Mult, r.Shift = precompute(r.RateBytesPs)
	return r
}

// precompute is psched_ratecfg_precompute__: the largest mult below 2^31
// (or until the factor would overflow) for NSEC_PER_SEC << shift / rate.
func precompute(rate uint64) (mult uint32, sh uint8) {
	mult = 1
	if rate == 0 {
		return mult, 0
	}
	factor := uint64(1e9)
	for {
		mult = uint32(factor / rate)
		if mult&(1<<31) != 0 || factor&(1<<63) != 0 {
			return mult, sh
		}
		factor <<= 1
		sh++
	}
}

// L2T is psched_l2t_ns: the ns len bytes take at r, with the overhead,
// the minimum packet unit and ATM's 48-in-53 cells.
func (r Ratecfg) L2T(length uint32) uint64 {
	length += uint32(r.Overhead)
	length = max(length, uint32(r.Mpu))
	if r.Linklayer == LinkATM {
		return (uint64(units.AlignATM(length)) * uint64(r.Mult)) >> r.Shift
	}
	return (uint64(length) * uint64(r.Mult)) >> r.Shift
}

// Present reports whether a rate is configured (tbf_peak_present).
func (r Ratecfg) Present() bool { return r.RateBytesPs != 0 }

// Rate32 is psched_ratecfg_getrate's rate: the 32-bit tc_ratespec rate,
// saturated (the full rate goes in a *_RATE64 attribute).
func (r Ratecfg) Rate32() uint32 { return uint32(min(r.RateBytesPs, math.MaxUint32)) }
