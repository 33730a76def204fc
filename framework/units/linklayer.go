package units

import (
	"fmt"
	"strings"
)

// Link layers (enum tc_link_layer, TC_LINKLAYER_*): what tc's rate
// tables (tbf, htb) and size tables (stab) adapt packet sizes to.
const (
	LinkUnaware  uint8 = 0
	LinkEthernet uint8 = 1
	LinkATM      uint8 = 2
)

// LinkName is sprint_linklayer.
func LinkName(l uint8) string {
	switch l {
	case LinkUnaware:
		return "unspec"
	case LinkEthernet:
		return "ethernet"
	case LinkATM:
		return "atm"
	}
	return "unknown"
}

// Linklayer is get_linklayer: ethernet, atm or adsl (atm), by prefix.
func Linklayer(s string) (uint8, error) {
	prefix := func(w string) bool { return s != "" && strings.HasPrefix(w, s) }
	switch {
	case prefix("ethernet"):
		return LinkEthernet, nil
	case prefix("atm"), prefix("adsl"):
		return LinkATM, nil
	}
	return 0, fmt.Errorf("%q is not a link layer (ethernet, atm, adsl)", s)
}

// AlignATM is tc_align_to_atm: the bytes size takes on an ATM link, in
// cells of 48 payload bytes sent as 53.
func AlignATM(size uint32) uint32 { return (size + 47) / 48 * 53 }

// clockIDs is tc's clockt_map (tc_util.c), in its order: the clocks a
// kernel qdisc can use (include/uapi/linux/time.h's ids).
var clockIDs = []struct {
	name string
	id   int32
}{{"BOOTTIME", 7}, {"MONOTONIC", 1}, {"REALTIME", 0}, {"TAI", 11}}

// GetClockid is tc's get_clockid: a name of clockt_map, case ignored,
// after a "CLOCK_" prefix (skipped by its length wherever strcasestr
// found it, as tc does).
func GetClockid(s string) (int32, bool) {
	if strings.Contains(strings.ToUpper(s), "CLOCK_") {
		s = s[len("CLOCK_"):]
	}
	for _, c := range clockIDs {
		if strings.EqualFold(c.name, s) {
			return c.id, true
		}
	}
	return 0, false
}

// ClockName is tc's get_clock_name.
func ClockName(id int32) string {
	for _, c := range clockIDs {
		if c.id == id {
			return c.name
		}
	}
	return "invalid"
}
