package hhf

import (
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

// usage is q_hhf.c's explain().
const usage = "Usage: ... hhf [ limit PACKETS ] [ quantum BYTES] [ hh_limit NUMBER ] [ reset_timeout TIME ] [ admit_bytes BYTES ] [ evict_timeout TIME ] [ non_hh_weight NUMBER ]"

// qopt is what hhf_parse_opt sends: each TCA_HHF_* attribute only when
// its word gave a value other than 0; the timeouts in microseconds.
type qopt struct {
	limit, quantum, hhLimit, resetTimeout, admitBytes, evictTimeout, nonHHWeight qdisc.Attr[uint32]
}

// parse is hhf_parse_opt.
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("hhf", args)
	for k := a.Next(); k != ""; k = a.Next() {
		var dst *qdisc.Attr[uint32]
		isTime := false
		switch k {
		case "limit":
			dst = &o.limit
		case "quantum":
			dst = &o.quantum
		case "hh_limit":
			dst = &o.hhLimit
		case "reset_timeout":
			dst, isTime = &o.resetTimeout, true
		case "admit_bytes":
			dst = &o.admitBytes
		case "evict_timeout":
			dst, isTime = &o.evictTimeout, true
		case "non_hh_weight":
			dst = &o.nonHHWeight
		case "help":
			return o, qdisc.Parsef("hhf", usage)
		default:
			return o, qdisc.Parsef("hhf", "What is %q?", k)
		}
		v, err := a.Value(k)
		if err != nil {
			return o, err
		}
		var n uint32
		if isTime {
			n, err = units.GetTime(v)
		} else {
			n, err = units.GetUnsigned(v, 0)
		}
		if err != nil {
			return o, qdisc.Parsef("hhf", "Illegal %q", k)
		}
		*dst = qdisc.Attr[uint32]{}
		if n != 0 { // tc sends none for 0
			dst.Put(n)
		}
	}
	return o, nil
}

// validate is what the kernel refuses before hhf_change applies
// anything: hh_limit above its netlink policy's 2 x HH_FLOWS_CNT, and a
// non-heavy-hitter quantum (quantum, at least 256, times non_hh_weight)
// of 0 or above INT_MAX. It returns the new quantum and weight.
func (q *HHF) validate(o qopt) (quantum, weight uint32, err error) {
	if o.hhLimit.Set && o.hhLimit.V > 2*hhFlowsCnt {
		return 0, 0, qdisc.Refusef("hhf", "Error: integer out of range (hh_limit %d is above %d).", o.hhLimit.V, 2*hhFlowsCnt)
	}
	quantum, weight = q.quantum, q.nonHHWeight
	if o.quantum.Set {
		quantum = max(256, o.quantum.V)
	}
	o.nonHHWeight.Apply(&weight)
	if nonHH := uint64(quantum) * uint64(weight); nonHH == 0 || nonHH > math.MaxInt32 {
		return 0, 0, qdisc.Refusef("hhf", "RTNETLINK answers: Invalid argument (quantum %d x non_hh_weight %d is %d, not 1 to %d)",
			quantum, weight, nonHH, math.MaxInt32)
	}
	return quantum, weight, nil
}

// usecsToJiffies is usecs_to_jiffies at HZ 1000 (unsigned int, rounding
// up, wrapping near 2^32 as the kernel's does).
func usecsToJiffies(us uint32) uint32 { return (us + 999) / 1000 }

// jiffiesToUsecs is jiffies_to_usecs at HZ 1000.
func jiffiesToUsecs(j uint32) uint32 { return j * 1000 }

// Dump implements qdisc.Qdisc: hhf_dump as hhf_print_opt prints it.
func (q *HHF) Dump() string {
	return fmt.Sprintf("limit %dp quantum %s hh_limit %d reset_timeout %s admit_bytes %s evict_timeout %s non_hh_weight %d ",
		q.limit, units.SprintSize(uint64(q.quantum)), q.hhFlowsLimit, units.SprintTime(jiffiesToUsecs(q.resetTimeout)),
		units.SprintSize(uint64(q.admitBytes)), units.SprintTime(jiffiesToUsecs(q.evictTimeout)), q.nonHHWeight)
}
