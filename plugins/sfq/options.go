package sfq

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are tc get_size's suffixes, longest first so "kb" is not
// read as "k" + "b".
var sizeUnits = []struct {
	suf string
	m   float64
}{{"kbit", 1024 / 8}, {"mbit", 1024 * 1024 / 8}, {"gbit", 1024 * 1024 * 1024 / 8},
	{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1 << 30}, {"k", 1024}, {"m", 1024 * 1024}, {"g", 1 << 30}, {"b", 1}}

// parseSize is tc's get_size: bytes, with an optional case-insensitive
// suffix, stored in a u32.
func parseSize(key, s string) (uint32, error) {
	v := strings.ToLower(s)
	num, mult := v, 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(v, u.suf) {
			num, mult = strings.TrimSuffix(v, u.suf), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("sfq: %s %q is not a size (e.g. 1514, 1514b, 2kb)", key, s)
	}
	f *= mult
	if f < 0 || f > math.MaxUint32 {
		return 0, fmt.Errorf("sfq: %s %q is out of range (0 to 4294967295 bytes)", key, s)
	}
	return uint32(f), nil
}

// tcSize is tc's sprint_size ("1514b", "64Kb", "32Mb"; rint rounds half to even).
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
