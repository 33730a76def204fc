// Package units parses the rate and count words the CLI and scripts
// share: "100G", "25Gbit", "5M", "630Kpps".
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseRate parses a link rate in bits/s: "100G", "25Gbit", "2.5g",
// "800M", "1000000000".
func ParseRate(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.TrimSuffix(strings.TrimSuffix(v, "bps"), "bit")
	f, err := parseSuffixed(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a rate (e.g. 100G, 25Gbit): %v", s, err)
	}
	if f > 1e15 {
		return 0, fmt.Errorf("%q is above 1 Pbit/s", s)
	}
	return int64(f), nil
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
