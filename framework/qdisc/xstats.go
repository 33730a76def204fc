package qdisc

import (
	"fmt"
	"math"
	"strconv"

	"github.com/txlab/txlab/framework/sim"
)

// XType is how an XStat's value is read and printed.
type XType uint8

// XStat value types: a plain number, or one tc prints with its unit.
const (
	XTypeInt  XType = iota // signed, printed as is
	XTypeUint              // unsigned, printed as is
	XTypeSize              // bytes, printed as tc's sprint_size ("64Kb")
	XTypeRate              // bytes/s, printed as tc's sprint_rate in bits ("100Mbit")
	XTypeTime              // signed ns, printed as tc's sprint_time64 ("5ms")
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

// Signed reports whether the value is an int64.
func (x XStat) Signed() bool { return x.Type == XTypeInt || x.Type == XTypeTime }

// Int64 is the value as an int64 (saturated for an unsigned one above
// the int64 range).
func (x XStat) Int64() int64 {
	if x.Signed() || x.Bits <= math.MaxInt64 {
		return int64(x.Bits)
	}
	return math.MaxInt64
}

// Number is the value in decimal, signed or not as its type says: what
// a JSON report writes.
func (x XStat) Number() string {
	if x.Signed() {
		return strconv.FormatInt(int64(x.Bits), 10)
	}
	return strconv.FormatUint(x.Bits, 10)
}

// Text is the value as tc -s prints it.
func (x XStat) Text() string {
	switch x.Type {
	case XTypeSize:
		return tcSize64(x.Bits)
	case XTypeRate:
		return tcRate(x.Bits)
	case XTypeTime:
		return tcTime64(int64(x.Bits))
	}
	return x.Number()
}

// Valid reports whether the type is known (a frame from a plugin may
// carry anything).
func (t XType) Valid() bool { return t < numXTypes }

// tcSize64 is iproute2's print_size (lib/utils.c) over 64 bits.
func tcSize64(sz uint64) string {
	f := float64(sz)
	if sz >= 1024*1024 && math.Abs(1024*1024*math.RoundToEven(f/(1024*1024))-f) < 1024 {
		return fmt.Sprintf("%gMb", math.RoundToEven(f/(1024*1024)))
	}
	if sz >= 1024 && math.Abs(1024*math.RoundToEven(f/1024)-f) < 16 {
		return fmt.Sprintf("%gKb", math.RoundToEven(f/1024))
	}
	return fmt.Sprintf("%db", sz)
}

// tcRate is iproute2's print_rate without -iec: bytes/s in, bits/s out,
// a unit step only while the value divides evenly or reaches 1000 of it.
func tcRate(bytesPerSec uint64) string {
	units := []string{"", "K", "M", "G", "T"}
	rate := bytesPerSec << 3
	i := 0
	for ; i < len(units)-1; i++ {
		if rate < 1000 || (rate%1000 != 0 && rate < 1000*1000) {
			break
		}
		rate /= 1000
	}
	return fmt.Sprintf("%d%sbit", rate, units[i])
}

// tcTime64 is iproute2's print_time64 (lib/utils.c): three significant
// digits in the largest unit that fits.
func tcTime64(ns int64) string {
	f := float64(ns)
	switch {
	case ns >= 1e9:
		return cG3(f/1e9) + "s"
	case ns >= 1e6:
		return cG3(f/1e6) + "ms"
	case ns >= 1e3:
		return cG3(f/1e3) + "us"
	}
	return fmt.Sprintf("%dns", ns)
}

// cG3 is C's "%.3g" (Go writes the exponent with two digits too).
func cG3(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) }
