package fqcodel

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// tcUnit is one suffix of tc's get_time / get_size.
type tcUnit struct {
	suf string
	m   float64
}

var (
	// get_time: microseconds (TIME_UNITS_PER_SEC = 1e6); no suffix is us.
	timeUnits = []tcUnit{{"msecs", 1e3}, {"usecs", 1}, {"secs", 1e6}, {"msec", 1e3}, {"usec", 1}, {"sec", 1e6},
		{"ms", 1e3}, {"us", 1}, {"s", 1e6}}
	// get_size: bytes; no suffix is bytes.
	sizeUnits = []tcUnit{{"kbit", 1024 / 8}, {"mbit", 1024 * 1024 / 8}, {"gbit", 1024 * 1024 * 1024 / 8},
		{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1 << 30}, {"k", 1024}, {"m", 1024 * 1024}, {"g", 1 << 30}, {"b", 1}}
	// Both lists go longest suffix first, so "ms" is not read as "m" + "s".
)

// parseTc parses a number with one optional suffix from units (case
// insensitive, as tc's strcasecmp), into a u32 the way tc stores it.
func parseTc(key, s string, units []tcUnit, what, example string) (uint32, error) {
	v := strings.ToLower(s)
	num, mult := v, 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suf) {
			num, mult = strings.TrimSuffix(v, u.suf), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("fq_codel: %s %q is not a %s (e.g. %s)", key, s, what, example)
	}
	f *= mult
	if f < 0 || f > math.MaxUint32 {
		return 0, fmt.Errorf("fq_codel: %s %q is out of range (0 to 4294967295 %s)", key, s, map[string]string{"time": "us", "size": "bytes"}[what])
	}
	return uint32(f), nil
}

// tcTime is tc's sprint_time for a value in microseconds (three
// significant digits, so the kernel's 4999us for 5ms prints as "5ms").
func tcTime(us uint32) string {
	t := float64(us)
	switch {
	case t >= 1e6:
		return fmt.Sprintf("%.3gs", t/1e6)
	case t >= 1e3:
		return fmt.Sprintf("%.3gms", t/1e3)
	}
	return fmt.Sprintf("%dus", us)
}

// tcSize is tc's sprint_size.
func tcSize(sz uint32) string {
	f := float64(sz)
	if sz >= 1024*1024 && math.Abs(1024*1024*math.RoundToEven(f/(1024*1024))-f) < 1024 {
		return fmt.Sprintf("%gMb", math.RoundToEven(f/(1024*1024)))
	}
	if sz >= 1024 && math.Abs(1024*math.RoundToEven(f/1024)-f) < 16 {
		return fmt.Sprintf("%gKb", math.RoundToEven(f/1024))
	}
	return fmt.Sprintf("%db", sz)
}
