package driver

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/sim"
)

// RingOpts are the ethtool-style words every descriptor-ring model takes:
// "tx N" (ring size), "tx-usecs N" (interrupt moderation), "work N"
// (packets cleaned per poll), and for the receive side "rx N" and
// "rx-usecs N" (ethtool -G rx, ethtool -C rx-usecs).
type RingOpts struct {
	Ring     int
	RingSet  bool // "tx" was given
	ITR      sim.Time
	ITRSet   bool // "tx-usecs" was given
	Work     int
	Rx       int
	RxITR    sim.Time
	RxITRSet bool // "rx-usecs" was given
}

// ringKeys are the words ParseRingOpts reads itself.
var ringKeys = map[string]bool{"tx": true, "tx-usecs": true, "work": true, "rx": true, "rx-usecs": true}

// ParseRingOpts walks "key value" pairs into o. A key it does not know
// goes to extra, which reports whether it took it; known lists every key
// of the driver, for the error message.
func ParseRingOpts(name string, args []string, o *RingOpts, known []string, extra func(key, val string) (bool, error)) error {
	for i := 0; i < len(args); i += 2 {
		key := args[i]
		if i+1 >= len(args) {
			return fmt.Errorf("%s: option %q needs a value", name, key)
		}
		val := args[i+1]
		if !ringKeys[key] {
			ok := false
			if extra != nil {
				var err error
				if ok, err = extra(key, val); err != nil {
					return err
				}
			}
			if !ok {
				return fmt.Errorf("%s: unknown option %q (known: %s)", name, key, strings.Join(known, ", "))
			}
			continue
		}
		v, err := OptInt(name, key, val)
		if err != nil {
			return err
		}
		switch key {
		case "tx":
			o.Ring, o.RingSet = v, true
		case "tx-usecs":
			o.ITR, o.ITRSet = sim.Time(v)*sim.Microsecond, true
		case "work":
			if v < 1 {
				return fmt.Errorf("%s: work must be >= 1", name)
			}
			o.Work = v
		case "rx":
			o.Rx = v
		case "rx-usecs":
			o.RxITR, o.RxITRSet = sim.Time(v)*sim.Microsecond, true
		}
	}
	return nil
}

// MaxUsecs refuses a tx-usecs or rx-usecs above max, as the drivers'
// set_coalesce does (-EINVAL or -ERANGE); macro names the kernel's bound.
func (o RingOpts) MaxUsecs(name, macro string, max sim.Time) error {
	for _, u := range []struct {
		word  string
		usecs sim.Time
	}{{"tx-usecs", o.ITR}, {"rx-usecs", o.RxITR}} {
		if err := overMax(name, u.word, u.usecs, max, macro); err != nil {
			return err
		}
	}
	return nil
}

// overMax refuses usecs above max for word, macro naming the bound.
func overMax(name, word string, usecs, max sim.Time, macro string) error {
	if usecs > max {
		return fmt.Errorf("%s: %s %d: at most %d (%s)", name, word, usecs/sim.Microsecond, max/sim.Microsecond, macro)
	}
	return nil
}

// OptInt parses an option value as a non-negative whole number.
func OptInt(name, key, val string) (int, error) {
	v, err := strconv.Atoi(val)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: %s %q is not a non-negative whole number", name, key, val)
	}
	return v, nil
}

// RingParam is ice's, i40e's and idpf's set_ringparam for one ring: a
// requested descriptor count outside [lo, hi] is refused (word names
// the ring: "ring size", "rx ring size"), one inside is rounded up to
// the driver's multiple, ALIGN ("Requested Tx descriptor count rounded
// up to ...", netdev_info, not an error).
func RingParam(name, word string, n, lo, hi, multiple int) (int, error) {
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s: %s %d must be in [%d, %d]", name, word, n, lo, hi)
	}
	return (n + multiple - 1) / multiple * multiple, nil
}

// ITRRegAlign is ice's and idpf's ITR_REG_ALIGN: their ITR registers
// count 2 us, so a static interval is rounded down to whole even
// microseconds (setting & ICE_ITR_MASK / IDPF_ITR_MASK).
func ITRRegAlign(t sim.Time) sim.Time {
	us := t / sim.Microsecond
	return (us - us%2) * sim.Microsecond
}
