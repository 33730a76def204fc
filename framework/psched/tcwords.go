package psched

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/units"
)

// Matches is tc's matches(arg, word): arg is a non-empty prefix of word
// ("lat" matches "latency").
func Matches(arg, word string) bool { return arg != "" && strings.HasPrefix(word, arg) }

// SizeAndCell is get_size64_and_cell: "SIZE" or "SIZE/CELL", CELL a power
// of two below 2^32; cellLog is -1 when no cell is given.
func SizeAndCell(s string) (size uint64, cellLog int, err error) {
	cellLog = -1
	sz, cell, slash := strings.Cut(s, "/")
	if size, err = units.GetSize64(sz); err != nil {
		return 0, -1, err
	}
	if !slash {
		return size, -1, nil
	}
	c, err := units.GetInteger(cell, 0)
	if err != nil {
		return 0, -1, fmt.Errorf("cell %q: %v", cell, err)
	}
	for i := 0; i < 32; i++ {
		if int64(1)<<i == int64(c) {
			return size, i, nil
		}
	}
	return 0, -1, fmt.Errorf("cell %q is not a power of two", cell)
}

// Percent is parse_percent: "30%" or "30" as a fraction in [0, 1].
func Percent(s string) (float64, error) {
	f, rest, err := strtod(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage (e.g. 1%%, 0.5%%)", s)
	}
	v := f / 100
	if v > 1 || v < 0 {
		return 0, fmt.Errorf("%q is out of range: a percentage is 0 to 100", s)
	}
	if rest != "" && rest != "%" {
		return 0, fmt.Errorf("%q is not a percentage (e.g. 1%%, 0.5%%)", s)
	}
	return v, nil
}

// strtod reads the longest leading decimal number (C's strtod, without
// hex floats, inf or nan, which a percentage never is).
func strtod(s string) (float64, string, error) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, s, fmt.Errorf("no number")
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	f, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, s, err
	}
	return f, s[i:], nil
}

// Scaled is netem's set_percent: a fraction as a share of 2^32-1,
// rint(per * UINT32_MAX).
func Scaled(per float64) uint32 { return uint32(math.RoundToEven(per * math.MaxUint32)) }

// PercentRate64 is get_percent_rate64: "10%" of the device's speed.
// speedBps is the link's bits/s (sysfs speed is in Mbit/s, a whole
// number); tc prints the bits with %lf and reads them back with
// get_rate64.
func PercentRate64(s string, speedBps int64) (uint64, error) {
	bits, err := percentBits(s, speedBps)
	if err != nil {
		return 0, err
	}
	return units.GetRate64(bits)
}

// PercentRate is get_percent_rate: PercentRate64's bits read back with
// get_rate, a 32-bit rate in bytes/s (fq's maxrate and defrate).
func PercentRate(s string, speedBps int64) (uint32, error) {
	bits, err := percentBits(s, speedBps)
	if err != nil {
		return 0, err
	}
	return units.GetRate(bits)
}

// percentBits is parse_percent_rate: the bits/s "N%" of the device's
// speed makes, as tc prints them ("%lf").
func percentBits(s string, speedBps int64) (string, error) {
	if speedBps <= 0 {
		return "", fmt.Errorf("%q: the device has no speed to take a percentage of", s)
	}
	n := 0
	for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.' || s[n] == '%') {
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("%q: specified rate value could not be read or is malformed", s)
	}
	perc, err := Percent(s[:n])
	if err != nil {
		return "", fmt.Errorf("%q: invalid rate specified; should be between [0,100]%%", s)
	}
	bits := perc * float64(speedBps/1_000_000) * 1000 * 1000
	return strconv.FormatFloat(bits, 'f', 6, 64), nil
}

// Linklayer is get_linklayer: ethernet, atm or adsl (atm), by prefix.
func Linklayer(s string) (uint8, error) { return units.Linklayer(s) }

// CalcCellLog is tc_calc_rtable's cell_log: the one given, else the
// smallest that fits the mtu (2047 if none) in 256 cells. The kernel
// ignores the table and dumps cell_log 0.
func CalcCellLog(cellLog int, mtu uint32) uint8 {
	if mtu == 0 {
		mtu = 2047
	}
	if cellLog < 0 {
		cellLog = 0
		for mtu>>cellLog > 255 {
			cellLog++
		}
	}
	return uint8(cellLog)
}
