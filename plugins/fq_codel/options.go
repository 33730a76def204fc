package fqcodel

import (
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
)

// parseTc parses a number with one optional suffix from units (case
// insensitive, as tc's strcasecmp), into a u32 the way tc stores it.
func parseTc(key, s string, units []qdisc.TcUnit, what, example string) (uint32, error) {
	return qdisc.ParseTcU32("fq_codel", key, s, units, what, example, map[string]string{"time": "us", "size": "bytes"}[what])
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
