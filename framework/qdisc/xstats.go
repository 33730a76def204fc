package qdisc

import (
	"math"
	"strconv"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
)

// XType is how an XStat's value is read and printed.
type XType uint8

// XStat value types: a plain number, or one tc prints with its unit.
const (
	XTypeInt   XType = iota // signed, printed as is
	XTypeUint               // unsigned, printed as is
	XTypeSize               // bytes, printed as tc's sprint_size ("64Kb")
	XTypeRate               // bytes/s, printed as tc's sprint_rate in bits ("100Mbit")
	XTypeTime               // signed ns, printed as tc's sprint_time64 ("5ms")
	XTypeFloat              // a float64's bits, printed as tc's %lg ("0.0125"); never NaN or infinite
	numXTypes
)

// XStat is one qdisc-specific statistic (a field of tc_*_xstats): tc -s
// prints Key and the value in its unit; JSON reports keep the number.
type XStat struct {
	Key  string
	Type XType
	Bits uint64 // the value; for XTypeInt and XTypeTime an int64's bits
}

// XInt is a signed statistic.
func XInt(key string, v int64) XStat { return XStat{key, XTypeInt, uint64(v)} }

// XUint is an unsigned statistic.
func XUint(key string, v uint64) XStat { return XStat{key, XTypeUint, v} }

// XSize is a size in bytes.
func XSize(key string, bytes uint64) XStat { return XStat{key, XTypeSize, bytes} }

// XRate is a rate in bytes per second (as the kernel reports rates).
func XRate(key string, bytesPerSec uint64) XStat { return XStat{key, XTypeRate, bytesPerSec} }

// XTime is a duration in ns.
func XTime(key string, ns sim.Time) XStat { return XStat{key, XTypeTime, uint64(ns)} }

// XFloat is a fraction or a ratio tc prints with %lg (pie's prob). NaN
// and infinities are stored as 0: JSON has no word for them.
func XFloat(key string, v float64) XStat {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return XStat{key, XTypeFloat, math.Float64bits(v)}
}

// Signed reports whether the value is an int64.
func (x XStat) Signed() bool { return x.Type == XTypeInt || x.Type == XTypeTime }

// Int64 is the value as an int64 (saturated for an unsigned one above
// the int64 range).
func (x XStat) Int64() int64 {
	if x.Type == XTypeFloat {
		return int64(math.Float64frombits(x.Bits))
	}
	if x.Signed() || x.Bits <= math.MaxInt64 {
		return int64(x.Bits)
	}
	return math.MaxInt64
}

// Number is the value in decimal, signed or not as its type says: what
// a JSON report writes.
func (x XStat) Number() string {
	if x.Type == XTypeFloat {
		return strconv.FormatFloat(math.Float64frombits(x.Bits), 'g', -1, 64)
	}
	if x.Signed() {
		return strconv.FormatInt(int64(x.Bits), 10)
	}
	return strconv.FormatUint(x.Bits, 10)
}

// Text is the value as tc -s prints it (framework/units' printers).
func (x XStat) Text() string {
	switch x.Type {
	case XTypeSize:
		return units.SprintSize(x.Bits)
	case XTypeRate:
		return units.SprintRate(x.Bits)
	case XTypeTime:
		return units.SprintTime64(int64(x.Bits))
	case XTypeFloat:
		return strconv.FormatFloat(math.Float64frombits(x.Bits), 'g', 6, 64)
	}
	return x.Number()
}

// Valid reports whether the type is known (a frame from a plugin may
// carry anything).
func (t XType) Valid() bool { return t < numXTypes }
