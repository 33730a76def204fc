package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// GetUnsigned is tc's get_unsigned (and get_u32): strtoul in base (0:
// 0x hex, a leading 0 octal, else decimal), the whole word, at most
// 2^32-1. As with strtoul, a leading minus negates ("-0" is 0, "-1" is
// out of range).
func GetUnsigned(s string, base int) (uint32, error) {
	neg, v, err := strtoul(s, base)
	if err != nil {
		return 0, fmt.Errorf("%q is not an unsigned number: %v", s, err)
	}
	if v > math.MaxUint32 || (neg && v != 0) {
		return 0, fmt.Errorf("%q is out of range (0 to 4294967295)", s)
	}
	return uint32(v), nil
}

// GetInteger is tc's get_integer: strtol in base, the whole word, a
// 32-bit int.
func GetInteger(s string, base int) (int32, error) {
	neg, v, err := strtoul(s, base)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number: %v", s, err)
	}
	if (!neg && v > math.MaxInt32) || (neg && v > -math.MinInt32) {
		return 0, fmt.Errorf("%q is out of range (%d to %d)", s, math.MinInt32, math.MaxInt32)
	}
	if neg {
		return int32(-int64(v)), nil
	}
	return int32(v), nil
}

var errTrailing = errors.New("not a number to its end")

// strtoul reads a whole word as C's strtoul does (space, a sign, a base
// prefix, digits), returning the sign and the magnitude; more than 64
// bits is ERANGE.
func strtoul(s string, base int) (neg bool, v uint64, err error) {
	i := skipSpace(s)
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base, skip := intBase(s[i:], base)
	i += skip
	start := i
	for ; i < len(s) && digitVal(s[i]) < base; i++ {
		d := uint64(digitVal(s[i]))
		if v > (math.MaxUint64-d)/uint64(base) {
			return neg, 0, errRange
		}
		v = v*uint64(base) + d
	}
	switch {
	case i == start:
		return neg, 0, errNoNumber
	case i != len(s):
		return neg, 0, errTrailing
	}
	return neg, v, nil
}

// intBase is strtoul's base for s (0: from the prefix) and the length of
// the 0x prefix to skip.
func intBase(s string, base int) (int, int) {
	switch {
	case (base == 0 || base == 16) && isHexPrefix(s) && s[2] != '.':
		return 16, 2
	case base == 0 && len(s) > 0 && s[0] == '0':
		return 8, 0
	case base == 0:
		return 10, 0
	}
	return base, 0
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'z':
		return int(c|0x20-'a') + 10
	}
	return 99
}

// RangeList writes ascending integers as the kernel's cpulist
// (bitmap_print_to_pagebuf: /proc/irq/N/smp_affinity_list) and sbatch's
// --array write them: runs of consecutive ones as ranges, "0-3,7,9-10".
func RangeList(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
