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
