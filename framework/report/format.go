package report

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/units"
)

// perfTime formats nanoseconds the way perf lock contention's
// lock_stat_key_print_time does: the largest unit the value reaches, two
// decimals, the number right-aligned in width-3 so the column is width
// wide. perf pads the one-letter units ("s ", "m ", "h ") to two chars.
func perfTime(ns int64, width int) string {
	units := []struct {
		base float64
		unit string
	}{
		{1e9 * 3600, "h "},
		{1e9 * 60, "m "},
		{1e9, "s "},
		{1e6, "ms"},
		{1e3, "us"},
	}
	for _, u := range units {
		if float64(ns) < u.base {
			continue
		}
		return fmt.Sprintf("%*.2f %s", width-3, float64(ns)/u.base, u.unit)
	}
	return fmt.Sprintf("%*d %s", width-3, ns, "ns")
}

// PerfTime is perfTime without column padding, for inline use: a wait
// as perf lock prints it ("162.47 ms", "8.12 us").
func PerfTime(ns int64) string {
	return strings.TrimSpace(perfTime(ns, 3))
}

// tcSize is iproute2's sprint_size (framework/units).
func tcSize(sz int64) string { return units.SprintSize(uint64(max(sz, 0))) }

// histIndex maps a bucket's lower bound to bpftrace's hist() slot:
// 0 is negative values, 1 is [0], 2 is [1], 3 is [2, 4), ...
func histIndex(lo int64) int {
	switch {
	case lo < 0:
		return 0
	case lo == 0:
		return 1
	}
	return 1 + bits.Len64(uint64(lo)) // floor(log2(lo)) + 2
}

// histLabel is the bucket label bpftrace prints for slot i.
func histLabel(i int) string {
	switch i {
	case 0:
		return "(..., 0)"
	case 1:
		return "[0]"
	case 2:
		return "[1]"
	}
	return "[" + pow2Label(i-2) + ", " + pow2Label(i-1) + ")"
}

// pow2Label is bpftrace's hist_index_label: 2^p with a K/M/G/T suffix.
func pow2Label(p int) string {
	suffix := ""
	for _, s := range []struct {
		p      int
		suffix string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if p >= s.p {
			p -= s.p
			suffix = s.suffix
			break
		}
	}
	return strconv.FormatUint(uint64(1)<<uint(p), 10) + suffix
}

// mpps formats packets per second as millions with 3 decimals.
func mpps(pps float64) string { return fmt.Sprintf("%.3f", pps/1e6) }

// gbps formats bits per second as Gbit with 3 decimals.
func gbps(bps float64) string { return fmt.Sprintf("%.3f", bps/1e9) }

// ms formats nanoseconds as milliseconds with one decimal.
func ms(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e6) }
