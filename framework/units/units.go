// Package units is tc's words for sizes, times and rates, both ways, as
// current iproute2 reads and prints them: get_size/get_size64,
// get_time/get_time64 and get_rate/get_rate64 (lib/utils.c,
// lib/utils_math.c), sprint_size (lib/json_print_math.c), print_rate
// (lib/json_print.c) and sprint_time/sprint_time64 (lib/utils.c). Every
// qdisc option, the CLI's --rate and a script's link rate read through
// here, so "100mbit" means one thing everywhere. The package also reads
// the CLI's packet counts ("5M", "630Kpps"), which are not tc words.
//
// tc's rules, kept here:
//   - the number is C's strtod (decimal or 0x hex, an exponent allowed);
//     the unit that follows must match a tc unit exactly, ignoring ASCII
//     case, or the word is refused ("100G" is not a tc rate, "100gbit" is);
//   - rates: "bit" and no unit are bits/s, "bps" is BYTES/s; k/m/g/t are
//     SI (1000), ki/mi/gi/ti IEC (1024); kept in bytes/s, as tc sends them;
//   - sizes: bytes; k/kb, m/mb, g/gb are 1024-based, kbit/mbit/gbit are
//     1024-based bits;
//   - times: no unit is microseconds (get_time) or nanoseconds
//     (get_time64).
//
// Where C leaves a value undefined (inf, nan, or a number past the type),
// these refuse it.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// unit is one tc suffix and what it multiplies by.
type unit struct {
	name  string
	scale float64
}

// rateUnits is get_rate's suffix table (lib/utils_math.c), in bits/s.
// tc compares with strcasecmp, so "KBps", "kbps" and "KBPS" are one unit:
// 1000 bytes/s.
var rateUnits = []unit{
	{"bit", 1}, {"Kibit", 1024}, {"kbit", 1000}, {"mibit", 1024 * 1024}, {"mbit", 1e6},
	{"gibit", 1024 * 1024 * 1024}, {"gbit", 1e9}, {"tibit", 1024 * 1024 * 1024 * 1024}, {"tbit", 1e12},
	{"Bps", 8}, {"KiBps", 8 * 1024}, {"KBps", 8e3}, {"MiBps", 8 * 1024 * 1024}, {"MBps", 8e6},
	{"GiBps", 8 * 1024 * 1024 * 1024}, {"GBps", 8e9}, {"TiBps", 8 * 1024 * 1024 * 1024 * 1024}, {"TBps", 8e12},
}

// sizeUnits is get_size64's suffixes, in bytes.
var sizeUnits = []unit{
	{"kb", 1024}, {"k", 1024}, {"gb", 1024 * 1024 * 1024}, {"g", 1024 * 1024 * 1024},
	{"gbit", 1024 * 1024 * 1024 / 8}, {"mb", 1024 * 1024}, {"m", 1024 * 1024}, {"mbit", 1024 * 1024 / 8},
	{"kbit", 1024 / 8}, {"b", 1},
}

// timeUnits is get_time's suffixes, in microseconds (TIME_UNITS_PER_SEC).
var timeUnits = []unit{
	{"s", 1e6}, {"sec", 1e6}, {"secs", 1e6}, {"ms", 1e3}, {"msec", 1e3}, {"msecs", 1e3},
	{"us", 1}, {"usec", 1}, {"usecs", 1},
}

// time64Units is get_time64's suffixes, in nanoseconds.
var time64Units = []unit{
	{"s", 1e9}, {"sec", 1e9}, {"secs", 1e9}, {"ms", 1e6}, {"msec", 1e6}, {"msecs", 1e6},
	{"us", 1e3}, {"usec", 1e3}, {"usecs", 1e3}, {"ns", 1}, {"nsec", 1}, {"nsecs", 1},
}

// GetRate is get_rate: a tc rate in bytes/s, at most 2^32-1 (the 32-bit
// rates of tc_ratespec, fq's maxrate, ...).
func GetRate(s string) (uint32, error) {
	b, err := rateBytes(s)
	if err != nil {
		return 0, err
	}
	if b >= 1<<32 {
		return 0, fmt.Errorf("%q is out of range: a 32-bit rate is at most 4294967295 bytes/s (%s)", s, SprintRate(math.MaxUint32))
	}
	return uint32(b), nil
}

// GetRate64 is get_rate64: a tc rate in bytes/s.
func GetRate64(s string) (uint64, error) {
	b, err := rateBytes(s)
	if err != nil {
		return 0, err
	}
	if b >= 1<<64 {
		return 0, fmt.Errorf("%q is out of range (above 2^64 bytes/s)", s)
	}
	return uint64(b), nil
}

// rateBytes reads a rate word into bytes/s (get_rate's "bps /= 8"), not
// yet truncated.
func rateBytes(s string) (float64, error) {
	f, err := number(s, rateUnits, "rate", "100mbit, 1gbit, 125MBps")
	return f / 8, err
}

// GetSize64 is get_size64: a tc size in bytes.
func GetSize64(s string) (uint64, error) {
	f, err := number(s, sizeUnits, "size", "1514, 64kb, 32mb")
	if err != nil {
		return 0, err
	}
	if f >= 1<<64 {
		return 0, fmt.Errorf("%q is out of range (above 2^64 bytes)", s)
	}
	return uint64(f), nil
}

// GetSize is get_size: a tc size in bytes, at most 2^32-1.
func GetSize(s string) (uint32, error) {
	n, err := GetSize64(s)
	if err != nil {
		return 0, err
	}
	if n > math.MaxUint32 {
		return 0, fmt.Errorf("%q is out of range: a 32-bit size is at most 4294967295 bytes (4Gb)", s)
	}
	return uint32(n), nil
}

// GetTime is get_time: a tc time in microseconds, at most 2^32-1 (about
// 71 minutes).
func GetTime(s string) (uint32, error) {
	f, err := number(s, timeUnits, "time", "5ms, 100us, 1s")
	if err != nil {
		return 0, err
	}
	if f >= 1<<32 {
		return 0, fmt.Errorf("%q is out of range: a 32-bit time is at most 4294967295us (71.6 minutes)", s)
	}
	return uint32(f), nil
}

// GetTime64 is get_time64: a tc time in nanoseconds.
func GetTime64(s string) (int64, error) {
	f, err := number(s, time64Units, "time", "10us, 1ms, 500ns")
	if err != nil {
		return 0, err
	}
	if f >= 1<<63 {
		return 0, fmt.Errorf("%q is out of range (above 2^63 ns)", s)
	}
	return int64(f), nil
}

// number reads strtod's number and one unit from units (none: scale 1),
// refusing what get_size/get_time/get_rate refuse: no number, a negative
// one, one out of double range (ERANGE), or an unknown unit.
func number(s string, units []unit, what, example string) (float64, error) {
	f, rest, err := strtod(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a %s (e.g. %s): %v", s, what, example, err)
	}
	if f < 0 {
		return 0, fmt.Errorf("%q is not a %s: it is negative", s, what)
	}
	if rest == "" {
		return f, nil
	}
	for _, u := range units {
		if asciiEqualFold(rest, u.name) {
			return f * u.scale, nil
		}
	}
	names := make([]string, len(units))
	for i, u := range units {
		names[i] = u.name
	}
	return 0, fmt.Errorf("%q is not a %s: unknown unit %q (tc's are %s)", s, what, rest, strings.Join(names, ", "))
}

var (
	errNoNumber  = errors.New("no number")
	errRange     = errors.New("the number is out of range")
	errNotFinite = errors.New("inf and nan are not numbers tc can use")
)

// strtod is C's strtod: leading space, a sign, then a decimal number
// with an optional exponent, or 0x and a hex mantissa with an optional
// binary exponent, or inf/nan (refused here: tc's conversions of them are
// undefined). It returns the value and the text after the number.
func strtod(s string) (float64, string, error) {
	start := skipSpace(s)
	i := start
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if rest := strings.ToLower(s[i:]); strings.HasPrefix(rest, "inf") || strings.HasPrefix(rest, "nan") {
		return 0, s, errNotFinite
	}
	hex := isHexPrefix(s[i:])
	if hex {
		i += 2
	}
	n := mantissa(s[i:], hex)
	if n == 0 {
		return 0, s, errNoNumber
	}
	i += n
	// An exponent counts only when digits follow it ("5e" is 5 and "e").
	e := exponent(s[i:], hex)
	i += e
	text := s[start:i]
	if hex && e == 0 {
		text += "p0" // Go wants a binary exponent on a hex float
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && (math.IsInf(f, 0) || !errors.Is(err, strconv.ErrRange)) {
		return 0, s, errRange
	}
	return f, s[i:], nil
}

// skipSpace is the length of C's isspace prefix of s.
func skipSpace(s string) int {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	return i
}

// isHexPrefix: s starts with 0x and a hex digit (or ".digit"), as strtod
// needs to read it as hex.
func isHexPrefix(s string) bool {
	if len(s) < 3 || s[0] != '0' || s[1]|0x20 != 'x' {
		return false
	}
	return isDigit(s[2], true) || (s[2] == '.' && len(s) > 3 && isDigit(s[3], true))
}

// mantissa is the length of digits[.digits] at the start of s, 0 if it
// holds no digit.
func mantissa(s string, hex bool) int {
	i, digits := 0, 0
	for ; i < len(s) && isDigit(s[i], hex); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && isDigit(s[i], hex); i++ {
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	return i
}

// exponent is the length of an exponent at the start of s ("e-3", "p+4"),
// 0 if there is none.
func exponent(s string, hex bool) int {
	mark := byte('e')
	if hex {
		mark = 'p'
	}
	if len(s) < 2 || s[0]|0x20 != mark {
		return 0
	}
	j := 1
	if s[j] == '+' || s[j] == '-' {
		j++
	}
	k := j
	for k < len(s) && isDigit(s[k], false) {
		k++
	}
	if k == j {
		return 0
	}
	return k
}

func isDigit(c byte, hex bool) bool {
	if c >= '0' && c <= '9' {
		return true
	}
	return hex && (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// asciiEqualFold is strcasecmp in the C locale: ASCII letters only (Go's
// EqualFold would also fold the Kelvin sign into "k").
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// SprintSize is sprint_size: bytes as "1514b", "64Kb", "32Mb", "4Gb" (a
// unit is used when the value is within 16 bytes of a whole Kb, or 1Kb
// of a whole Mb or Gb; rint rounds half to even).
func SprintSize(sz uint64) string {
	const kilo, mega, giga = 1024, 1024 * 1024, 1024 * 1024 * 1024
	t := float64(sz)
	g := func(v float64, u string) string { return strconv.FormatFloat(v, 'g', 6, 64) + u } // C's %g
	switch {
	case sz >= giga && math.Abs(giga*math.RoundToEven(t/giga)-t) < 1024:
		return g(math.RoundToEven(t/giga), "Gb")
	case sz >= mega && math.Abs(mega*math.RoundToEven(t/mega)-t) < 1024:
		return g(math.RoundToEven(t/mega), "Mb")
	case sz >= kilo && math.Abs(kilo*math.RoundToEven(t/kilo)-t) < 16:
		return g(math.RoundToEven(t/kilo), "Kb")
	}
	return strconv.FormatUint(sz, 10) + "b"
}

// SprintRate is print_rate as tc prints a rate by default (SI units):
// bytes/s in, bits/s out, "1Kbit", "1500Kbit", "100Gbit". A unit is
// taken while the value divides evenly, or is at least 1000 of the next
// unit.
func SprintRate(bytesPerSec uint64) string { return sprintRate(bytesPerSec, 1000, "") }

// SprintRateIEC is print_rate under tc -iec: "1Kibit" is 1024 bit/s.
func SprintRateIEC(bytesPerSec uint64) string { return sprintRate(bytesPerSec, 1024, "i") }

func sprintRate(bytesPerSec, kilo uint64, iec string) string {
	units := [...]string{"", "K", "M", "G", "T"}
	r := bytesPerSec << 3 // wraps as tc's unsigned long long does
	i := 0
	for ; i < len(units)-1; i++ {
		if r < kilo || (r%kilo != 0 && r < 1000*kilo) {
			break
		}
		r /= kilo
	}
	if i == 0 {
		iec = ""
	}
	return strconv.FormatUint(r, 10) + units[i] + iec + "bit"
}

// SprintTime is sprint_time: microseconds as "100us", "5ms", "1.5s"
// (three significant digits, %.3g).
func SprintTime(us uint32) string {
	t := float64(us)
	switch {
	case t >= 1e6:
		return strconv.FormatFloat(t/1e6, 'g', 3, 64) + "s"
	case t >= 1e3:
		return strconv.FormatFloat(t/1e3, 'g', 3, 64) + "ms"
	}
	return strconv.FormatUint(uint64(us), 10) + "us"
}

// SprintTime64 is sprint_time64: nanoseconds as "500ns", "10us", "2.5ms".
func SprintTime64(ns int64) string {
	t := float64(ns)
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(t/1e9, 'g', 3, 64) + "s"
	case ns >= 1e6:
		return strconv.FormatFloat(t/1e6, 'g', 3, 64) + "ms"
	case ns >= 1e3:
		return strconv.FormatFloat(t/1e3, 'g', 3, 64) + "us"
	}
	return strconv.FormatInt(ns, 10) + "ns"
}

// ParseRate is a link rate (the CLI's --rate, a script's device rate)
// in tc's rate words, returned in bits/s: "100gbit", "25Gbit", "2.5gbit".
// As in tc, "bps" is bytes/s ("100gbps" is 800 Gbit/s) and a bare
// number is bits/s; tc keeps whole bytes/s (get_rate truncates: "15bit"
// is 1 byte/s), and so does this. Where tc would keep 0 for a rate that
// is not 0 ("7bit", "0.1bit"), this refuses it: a link rate of 0 means
// the driver's line rate, not no rate at all.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	b, err := rateBytes(t)
	if err != nil {
		return 0, err
	}
	return wholeBytes(b, t)
}

// ParseRateBits is ParseRate for a rate that is already a number of
// bits/s (a script's `rate: 1e9`): the same whole bytes/s and the same
// refusals, the number shown as %g ("1e+40bit") in them.
func ParseRateBits(bits float64) (int64, error) {
	given := strconv.FormatFloat(bits, 'g', -1, 64) + "bit"
	switch {
	case math.IsNaN(bits) || math.IsInf(bits, 0):
		return 0, fmt.Errorf("%s is not a rate: %v", given, errNotFinite)
	case bits < 0:
		return 0, fmt.Errorf("%s is not a rate: it is negative", given)
	}
	return wholeBytes(bits/8, given)
}

// MinRate is the smallest rate other than 0 that ParseRate keeps, in
// bits/s: 1 byte/s.
const MinRate = 8

// wholeBytes is bytes/s b as whole bytes/s in bits/s, checked against
// 1 Pbit/s before it is converted; given is the rate as the user wrote
// it, for the errors.
func wholeBytes(b float64, given string) (int64, error) {
	switch {
	case b > 1e15/8:
		return 0, fmt.Errorf("%s is above 1 Pbit/s", given)
	case b > 0 && b < 1:
		return 0, fmt.Errorf("%s is below %dbit, the smallest rate (1 byte/s)", given, MinRate)
	}
	return int64(b) * 8, nil
}

// ParseCount parses a count with an SI suffix: "5M", "630K", "5Mpps".
func ParseCount(s string) (float64, error) {
	v := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "pps"))
	f, err := parseSuffixed(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a count (e.g. 5M, 630K): %v", s, err)
	}
	return f, nil
}

func parseSuffixed(v string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "k"):
		mult, v = 1e3, strings.TrimSuffix(v, "k")
	case strings.HasSuffix(v, "m"):
		mult, v = 1e6, strings.TrimSuffix(v, "m")
	case strings.HasSuffix(v, "g"):
		mult, v = 1e9, strings.TrimSuffix(v, "g")
	case strings.HasSuffix(v, "t"):
		mult, v = 1e12, strings.TrimSuffix(v, "t")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("bad number")
	}
	if f < 0 {
		return 0, fmt.Errorf("negative value")
	}
	return f * mult, nil
}
