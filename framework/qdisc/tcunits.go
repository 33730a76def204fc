package qdisc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TcUnit is one suffix tc accepts on a number ("ms", "kb", "mbit") and
// what it multiplies by.
type TcUnit struct {
	Suf string
	M   float64
}

// TcSizeUnits are iproute2 get_size's suffixes (bytes; no suffix is
// bytes), longest first so "kb" is not read as "k" + "b".
var TcSizeUnits = []TcUnit{{"kbit", 1024 / 8}, {"mbit", 1024 * 1024 / 8}, {"gbit", 1024 * 1024 * 1024 / 8},
	{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1 << 30}, {"k", 1024}, {"m", 1024 * 1024}, {"g", 1 << 30}, {"b", 1}}

// TcTimeUnits are iproute2 get_time's suffixes, in microseconds
// (TIME_UNITS_PER_SEC = 1e6; no suffix is us), longest first so "ms" is
// not read as "m" + "s".
var TcTimeUnits = []TcUnit{{"msecs", 1e3}, {"usecs", 1}, {"secs", 1e6}, {"msec", 1e3}, {"usec", 1}, {"sec", 1e6},
	{"ms", 1e3}, {"us", 1}, {"s", 1e6}}

// ParseTcU32 reads s (option key of qdisc kind) as a number with at most
// one suffix from units, matched case-insensitively as tc's strcasecmp
// does, into the u32 tc stores. what and example ("size", "1514, 2kb")
// and unit ("bytes") word the errors.
func ParseTcU32(kind, key, s string, units []TcUnit, what, example, unit string) (uint32, error) {
	v := strings.ToLower(s)
	num, mult := v, 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.Suf) {
			num, mult = strings.TrimSuffix(v, u.Suf), u.M
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: %s %q is not a %s (e.g. %s)", kind, key, s, what, example)
	}
	f *= mult
	if f < 0 || f > math.MaxUint32 {
		return 0, fmt.Errorf("%s: %s %q is out of range (0 to 4294967295 %s)", kind, key, s, unit)
	}
	return uint32(f), nil
}

// TcSize is iproute2's sprint_size: "1514b", "64Kb", "32Mb" (rint rounds
// half to even).
func TcSize(sz uint32) string {
	f := float64(sz)
	if sz >= 1024*1024 && math.Abs(1024*1024*math.RoundToEven(f/(1024*1024))-f) < 1024 {
		return fmt.Sprintf("%gMb", math.RoundToEven(f/(1024*1024)))
	}
	if sz >= 1024 && math.Abs(1024*math.RoundToEven(f/1024)-f) < 16 {
		return fmt.Sprintf("%gKb", math.RoundToEven(f/1024))
	}
	return fmt.Sprintf("%db", sz)
}
