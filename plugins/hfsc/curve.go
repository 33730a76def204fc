package hfsc

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

// The kernel's fixed point (sch_hfsc.c with PSCHED_SHIFT 6): x is in
// psched ticks of 64 ns, y in bytes; slopes are scaled by SM_SHIFT,
// inverse slopes by ISM_SHIFT.
const (
	ticksPerSec = 1_000_000_000 >> 6 // PSCHED_TICKS_PER_SEC
	smShift     = 30 - 6             // SM_SHIFT
	ismShift    = 8 + 6              // ISM_SHIFT
	smMask      = 1<<smShift - 1
	ismMask     = 1<<ismShift - 1
	htInfinity  = math.MaxUint64 // HT_INFINITY
)

// serviceCurve is struct tc_service_curve as tc sends it: m1 and m2 in
// bytes/s, d in us.
type serviceCurve struct{ m1, d, m2 uint32 }

// internalSC is struct internal_sc.
type internalSC struct{ sm1, ism1, dx, dy, sm2, ism2 uint64 }

// runtimeSC is struct runtime_sc: a curve from (x, y).
type runtimeSC struct{ x, y, sm1, ism1, dx, dy, sm2, ism2 uint64 }

// segX2Y is seg_x2y: x*sm >> SM_SHIFT without overflowing.
func segX2Y(x, sm uint64) uint64 {
	return (x>>smShift)*sm + ((x&smMask)*sm)>>smShift
}

// segY2X is seg_y2x.
func segY2X(y, ism uint64) uint64 {
	switch {
	case y == 0:
		return 0
	case ism == htInfinity:
		return htInfinity
	}
	return (y>>ismShift)*ism + ((y&ismMask)*ism)>>ismShift
}

// m2sm is m2sm: bytes/s to scaled bytes/tick, rounded up.
func m2sm(m uint32) uint64 { return (uint64(m)<<smShift + ticksPerSec - 1) / ticksPerSec }

// m2ism is m2ism: bytes/s to scaled ticks/byte, rounded up.
func m2ism(m uint32) uint64 {
	if m == 0 {
		return htInfinity
	}
	return (uint64(ticksPerSec)<<ismShift + uint64(m) - 1) / uint64(m)
}

// d2dx is d2dx: us to ticks, rounded up.
func d2dx(d uint32) uint64 { return (uint64(d)*ticksPerSec + 1_000_000 - 1) / 1_000_000 }

// sm2m is sm2m, for the dump.
func sm2m(sm uint64) uint32 { return uint32((sm * ticksPerSec) >> smShift) }

// dx2d is dx2d, for the dump.
func dx2d(dx uint64) uint32 { return uint32(dx * 1_000_000 / ticksPerSec) }

// sc2isc is sc2isc.
func sc2isc(sc serviceCurve) internalSC {
	isc := internalSC{sm1: m2sm(sc.m1), ism1: m2ism(sc.m1), dx: d2dx(sc.d), sm2: m2sm(sc.m2), ism2: m2ism(sc.m2)}
	isc.dy = segX2Y(isc.dx, isc.sm1)
	return isc
}

// dump is hfsc_dump_sc's tc_service_curve.
func (isc internalSC) dump() serviceCurve {
	return serviceCurve{m1: sm2m(isc.sm1), d: dx2d(isc.dx), m2: sm2m(isc.sm2)}
}

// rtscInit is rtsc_init: isc starting at (x, y).
func rtscInit(isc *internalSC, x, y uint64) runtimeSC {
	return runtimeSC{x: x, y: y, sm1: isc.sm1, ism1: isc.ism1, dx: isc.dx, dy: isc.dy, sm2: isc.sm2, ism2: isc.ism2}
}

// y2x is rtsc_y2x: when the curve reaches y.
func (r *runtimeSC) y2x(y uint64) uint64 {
	switch {
	case y < r.y:
		return r.x
	case y <= r.y+r.dy: // the first segment
		if r.dy == 0 {
			return r.x + r.dx
		}
		return r.x + segY2X(y-r.y, r.ism1)
	}
	return r.x + r.dx + segY2X(y-r.y-r.dy, r.ism2) // the second
}

// x2y is rtsc_x2y: the curve's y at x.
func (r *runtimeSC) x2y(x uint64) uint64 {
	switch {
	case x <= r.x:
		return r.y
	case x <= r.x+r.dx: // the first segment
		return r.y + segX2Y(x-r.x, r.sm1)
	}
	return r.y + r.dy + segX2Y(x-r.x-r.dx, r.sm2)
}

// min is rtsc_min: r becomes the minimum of itself and isc from (x, y).
func (r *runtimeSC) min(isc *internalSC, x, y uint64) {
	if isc.sm1 <= isc.sm2 { // convex
		if r.x2y(x) < y {
			return // the current curve is smaller
		}
		r.x, r.y = x, y
		return
	}
	// concave: the current curve's y at x and at x + dx
	y1 := r.x2y(x)
	if y1 <= y {
		return // below isc: no change
	}
	if y2 := r.x2y(x + isc.dx); y2 >= y+isc.dy {
		r.x, r.y, r.dx, r.dy = x, y, isc.dx, isc.dy // above: isc replaces it
		return
	}
	// They intersect: the offset where seg_x2y(dx, sm1) ==
	// seg_x2y(dx, sm2) + (y1 - y).
	dx := ((y1 - y) << smShift) / (isc.sm1 - isc.sm2)
	if r.x+r.dx > x { // (x, y1) on r's first segment: add the offset
		dx += r.x + r.dx - x
	}
	r.x, r.y, r.dx, r.dy = x, y, dx, segX2Y(dx, isc.sm1)
}

// String is hfsc_print_sc's text after the curve's name: "m1 0bit d
// 0us m2 10Mbit ".
func (sc serviceCurve) String() string {
	return fmt.Sprintf("m1 %s d %s m2 %s ", units.SprintRate(uint64(sc.m1)), units.SprintTime(sc.d), units.SprintRate(uint64(sc.m2)))
}

// errNoCurve is hfsc_get_sc's failure, which its caller reports as
// explain1's `HFSC: Illegal "rt"`; why says what tc found first.
type errNoCurve struct{ why string }

func (e *errNoCurve) Error() string { return e.why }

// curveWords reads one SC after "rt", "ls", "sc" or "ul" (hfsc_get_sc):
// "[m1 BPS] [d SEC] m2 BPS" (hfsc_get_sc1) or "[umax BYTES] [dmax SEC]
// rate BPS" (hfsc_get_sc2, turned into m1 d m2). words start at the SC;
// it returns how many it took. devSpeed is the link's bits/s, for a
// rate in percent.
func curveWords(words []string, devSpeed int64) (serviceCurve, int, error) {
	sc, n, err := curveM1DM2(words, devSpeed)
	if err != nil {
		var nc *errNoCurve
		if !errors.As(err, &nc) {
			return sc, 0, err
		}
		var err2 error
		sc, n, err2 = curveUmaxDmaxRate(words, devSpeed)
		if err2 != nil {
			var nc2 *errNoCurve
			if errors.As(err2, &nc2) { // neither form
				return sc, 0, &errNoCurve{"an SC is [m1 RATE] [d TIME] m2 RATE, or [umax BYTES] [dmax TIME] rate RATE"}
			}
			return sc, 0, err2
		}
	}
	if sc.m1 == 0 && sc.m2 == 0 {
		return sc, 0, qdisc.Parsef("hfsc", "HFSC: Service Curve has two zero slopes")
	}
	return sc, n, nil
}

// errIncomplete is tc's incomplete_command (NEXT_ARG at the end of the
// words), which exits.
func errIncomplete(after string) error {
	return qdisc.Parsef("hfsc", "Command line is not complete after %q. Try option \"help\"", after)
}

// rateWord is get_rate, or get_percent_rate for "N%": bytes/s in 32
// bits.
func rateWord(v string, devSpeed int64) (uint32, error) {
	if strings.Contains(v, "%") {
		return psched.PercentRate(v, devSpeed)
	}
	return units.GetRate(v)
}

// scWords walks one SC's words as hfsc_get_sc1 and hfsc_get_sc2 do.
type scWords struct {
	w []string
	i int
}

// value is the word after keyword key (NEXT_ARG).
func (s *scWords) value(key string) (string, error) {
	if s.i+1 >= len(s.w) {
		return "", errIncomplete(s.w[s.i])
	}
	s.i += 2
	return s.w[s.i-1], nil
}

// opt reads "KEY VALUE" when the next word is a prefix of key; a word
// must follow the value (the NEXT_ARG after it).
func (s *scWords) opt(key string, read func(string) error) error {
	if s.i >= len(s.w) || !psched.Matches(s.w[s.i], key) {
		return nil
	}
	v, err := s.value(key)
	if err != nil {
		return err
	}
	if err := read(v); err != nil {
		return qdisc.Parsef("hfsc", "HFSC: Illegal %q %q: %v", key, v, err)
	}
	if s.i >= len(s.w) {
		return errIncomplete(v)
	}
	return nil
}

// last reads the curve's closing "KEY VALUE" (m2, rate), which it must
// have.
func (s *scWords) last(key string, read func(string) error) error {
	if s.i >= len(s.w) || !psched.Matches(s.w[s.i], key) {
		return &errNoCurve{fmt.Sprintf("no %q ends the curve", key)}
	}
	v, err := s.value(key)
	if err != nil {
		return err
	}
	if err := read(v); err != nil {
		return qdisc.Parsef("hfsc", "HFSC: Illegal %q %q: %v", key, v, err)
	}
	return nil
}

// curveM1DM2 is hfsc_get_sc1.
func curveM1DM2(w []string, devSpeed int64) (serviceCurve, int, error) {
	var sc serviceCurve
	rate := func(dst *uint32) func(string) error {
		return func(v string) (err error) { *dst, err = rateWord(v, devSpeed); return err }
	}
	s := scWords{w: w}
	if err := s.opt("m1", rate(&sc.m1)); err != nil {
		return sc, 0, err
	}
	if err := s.opt("d", func(v string) (err error) { sc.d, err = units.GetTime(v); return err }); err != nil {
		return sc, 0, err
	}
	// d is tc_core_time2ktime's: us, clock_factor 1
	if err := s.last("m2", rate(&sc.m2)); err != nil {
		return serviceCurve{}, 0, err
	}
	return sc, s.i, nil
}

// curveUmaxDmaxRate is hfsc_get_sc2: a concave curve of slope umax/dmax
// up to dmax when that is above rate, else a convex one, 0 until dmax -
// umax/rate.
func curveUmaxDmaxRate(w []string, devSpeed int64) (serviceCurve, int, error) {
	var umax, dmax, rate uint32
	s := scWords{w: w}
	if err := s.opt("umax", func(v string) (err error) { umax, err = units.GetSize(v); return err }); err != nil {
		return serviceCurve{}, 0, err
	}
	if err := s.opt("dmax", func(v string) (err error) { dmax, err = units.GetTime(v); return err }); err != nil {
		return serviceCurve{}, 0, err
	}
	if err := s.last("rate", func(v string) (err error) { rate, err = rateWord(v, devSpeed); return err }); err != nil {
		return serviceCurve{}, 0, err
	}
	if umax != 0 && dmax == 0 {
		return serviceCurve{}, 0, qdisc.Parsef("hfsc", "HFSC: umax given but dmax is zero.")
	}
	if m1 := math.Ceil(float64(umax) * 1e6 / float64(dmax)); dmax != 0 && m1 > float64(rate) {
		return serviceCurve{m1: uint32(m1), d: dmax, m2: rate}, s.i, nil // concave: umax/dmax up to dmax
	}
	// convex: 0 until dmax - umax/rate (a double tc converts to an
	// unsigned: negative when umax/rate exceeds dmax)
	d := math.Ceil(float64(dmax) - float64(umax)*1e6/float64(rate))
	return serviceCurve{d: cUint(d), m2: rate}, s.i, nil
}

// cUint is C's conversion of a double to an unsigned int as x86-64
// compiles it (through a 64-bit signed integer, truncated): tc's
// tc_core_time2ktime(ceil(...)) of a negative or NaN difference.
func cUint(d float64) uint32 {
	if math.IsNaN(d) || d >= 1<<63 || d < -(1<<63) {
		return 0 // cvttsd2si's integer indefinite, 1<<63, truncated
	}
	return uint32(int64(d))
}
