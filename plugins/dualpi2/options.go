package dualpi2

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

// The netlink side (include/uapi/linux/pkt_sched.h and sch_dualpi2.c).
const (
	maxProb          = math.MaxUint32 // MAX_PROB
	alphaBetaShift   = 8              // ALPHA_BETA_SHIFT: tc sends alpha and beta in 1/256
	alphaBetaGran    = 6              // ALPHA_BETA_GRANULARITY: kept in units of 64 ns
	alphaBetaScaling = alphaBetaShift - alphaBetaGran
	alphaBetaMax     = 1<<31 - 1 // the kernel's policy maximum
	maxWC            = 100       // MAX_WC: wc + wl = 100

	ecnMaskL4S = 1 // TC_DUALPI2_ECN_MASK_L4S_ECT: ECT(1)
	ecnMaskAny = 3 // TC_DUALPI2_ECN_MASK_ANY_ECT: ECT(0) or ECT(1)

	tcAlphaBetaMax = 2<<23 - 1 // q_dualpi2.c's ALPHA_BETA_MAX
	rttTypToMax    = 6         // RTT_TYP_TO_MAX
)

// opts are the TCA_DUALPI2_* attributes tc sends (dualpi2_parse_opt):
// each is sent only when given (and, for the numbers, not 0).
type opts struct {
	limit, memlimit, target, tupdate qdisc.Attr[uint32] // packets, bytes, us, us
	alpha, beta                      qdisc.Attr[uint32] // in 1/256
	stepPkts, stepUs, minQlenStep    qdisc.Attr[uint32]
	coupling                         qdisc.Attr[uint8]
	dropOverload, dropEarly          qdisc.Attr[bool]
	cProtection                      qdisc.Attr[uint8]
	ecnMask                          qdisc.Attr[uint8]
	splitGSO                         qdisc.Attr[bool]
}

// getPackets is q_dualpi2.c's get_packets: a decimal number with a
// packet suffix (p, pkt, pkts, packet, packets).
func getPackets(v string) (uint32, error) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	switch v[i:] {
	case "p", "pkt", "pkts", "packet", "packets":
	default:
		return 0, fmt.Errorf("%q is not a time or a packet count (10p)", v)
	}
	n, err := strconv.ParseUint(v[:i], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is out of range", v)
	}
	return uint32(n), nil
}

// alphaBeta is parse_alpha_beta: a float in 0..2^24-1, sent in 1/256
// (a value below 1/256 rounds to 0, which the kernel refuses).
func alphaBeta(name, v string) (uint32, error) {
	f, err := strconv.ParseFloat(v, 32) // get_float_min_max's strtof
	if err != nil || math.IsNaN(f) || f < 0 || f > tcAlphaBetaMax {
		return 0, qdisc.Parsef("dualpi2", "Illegal %q", name)
	}
	return uint32(float32(f) * 256), nil
}

// parse is dualpi2_parse_opt: tc's words and messages.
func parse(args []string) (opts, error) {
	var o opts
	var rttMax, rttTyp uint32
	var alpha, beta, tupdate, target qdisc.Attr[uint32]
	a := qdisc.NewArgs("dualpi2", args)
	illegal := func(k string) error { return qdisc.Parsef("dualpi2", "Illegal %q", k) }
	for k := a.Next(); k != ""; k = a.Next() {
		var v string
		var err error
		switch k {
		case "limit", "memlimit", "target", "tupdate", "alpha", "beta", "coupling_factor", "step_thresh",
			"min_qlen_step", "classic_protection", "max_rtt", "typical_rtt":
			if v, err = a.Value(k); err != nil {
				return o, err
			}
		}
		switch k {
		case "limit", "memlimit", "min_qlen_step":
			n, err := units.GetUnsigned(v, 10)
			if err != nil {
				return o, illegal(k)
			}
			switch k {
			case "limit":
				if n != 0 {
					o.limit.Put(n)
				}
			case "memlimit":
				if n != 0 {
					o.memlimit.Put(n)
				}
			default:
				o.minQlenStep.Put(n)
			}
		case "target", "tupdate", "max_rtt", "typical_rtt":
			n, err := units.GetTime(v)
			if err != nil {
				return o, illegal(k)
			}
			switch k {
			case "target":
				target = attrIf(n)
			case "tupdate":
				tupdate = attrIf(n)
			case "max_rtt":
				rttMax = n
			default:
				rttTyp = n
			}
		case "alpha", "beta":
			n, err := alphaBeta(k, v)
			if err != nil {
				return o, err
			}
			if k == "alpha" {
				alpha.Put(n)
			} else {
				beta.Put(n)
			}
		case "coupling_factor":
			n, err := strconv.ParseInt(v, 0, 32) // get_s32, base 0
			if err != nil || n < 0 || n > 0xFF {
				return o, illegal(k)
			}
			o.coupling.Put(uint8(n))
		case "l4s_ect":
			o.ecnMask.Put(ecnMaskL4S)
		case "any_ect":
			o.ecnMask.Put(ecnMaskAny)
		case "step_thresh":
			// a time first, then packets
			o.stepPkts, o.stepUs = qdisc.Attr[uint32]{}, qdisc.Attr[uint32]{}
			if n, err := units.GetTime(v); err == nil {
				o.stepUs = attrIf(n)
			} else if n, err := getPackets(v); err == nil {
				o.stepPkts = attrIf(n)
			} else {
				return o, illegal(k)
			}
		case "overflow", "drop_on_overload":
			o.dropOverload.Put(k == "drop_on_overload")
		case "drop_enqueue", "drop_dequeue":
			o.dropEarly.Put(k == "drop_enqueue")
		case "split_gso", "no_split_gso":
			o.splitGSO.Put(k == "split_gso")
		case "classic_protection":
			p, err := psched.Percent(v)
			if err != nil {
				return o, illegal(k)
			}
			o.cProtection.Put(uint8(math.RoundToEven(p * 100)))
		case "help":
			return o, qdisc.Parsef("dualpi2", "Usage: ... dualpi2 [limit PACKETS] [memlimit BYTES] [coupling_factor NUMBER] [step_thresh TIME|PACKETS] [min_qlen_step PACKETS] [drop_on_overload|overflow] [drop_enqueue|drop_dequeue] [classic_protection PERCENTAGE] [max_rtt TIME [typical_rtt TIME]] [target TIME] [tupdate TIME] [alpha ALPHA] [beta BETA] [split_gso|no_split_gso]")
		default:
			return o, qdisc.Parsef("dualpi2", "What is %q?", k)
		}
	}
	if rttMax != 0 || rttTyp != 0 {
		if err := autoConfig(rttMax, rttTyp, &target, &tupdate, &alpha, &beta); err != nil {
			return o, err
		}
	}
	o.target, o.tupdate, o.alpha, o.beta = target, tupdate, alpha, beta
	return o, nil
}

func attrIf(n uint32) qdisc.Attr[uint32] {
	var a qdisc.Attr[uint32]
	if n != 0 {
		a.Put(n)
	}
	return a
}

// autoConfig is dualpi2_parse_opt's max_rtt/typical_rtt: target the
// typical RTT, tupdate the smaller of it and a third of the max, alpha
// and beta from the max (in C's doubles, with the float constants 0.1f
// and 0.3f); the alpha, beta, tupdate and target given are ignored.
func autoConfig(rttMax, rttTyp uint32, target, tupdate, alpha, beta *qdisc.Attr[uint32]) error {
	switch {
	case rttTyp == 0:
		rttTyp = max(rttMax/rttTypToMax, 1)
	case rttMax == 0:
		rttMax = rttTyp * rttTypToMax
	case rttTyp > rttMax:
		return qdisc.Parsef("dualpi2", "typical_rtt must be <= max_rtt!")
	}
	tu := float64(rttMax) / float64(float32(3.0))
	if float64(rttTyp) < tu {
		tu = float64(rttTyp)
	}
	t := max(uint32(tu), 1)
	alphaF := float64(t) / float64(rttMax) / float64(rttMax) * 1e6 * float64(float32(0.1))
	betaF := float64(float32(0.3)) / float64(rttMax) * 1e6
	if betaF > tcAlphaBetaMax {
		return qdisc.Parsef("dualpi2", "max_rtt=%s is too low and cause beta to overflow!", units.SprintTime(rttMax))
	}
	if alphaF < 1.0/256 || betaF < 1.0/256 {
		return qdisc.Parsef("dualpi2", "Large max_rtt=%s rounds down alpha=%f and/or beta=%f!", units.SprintTime(rttMax), alphaF, betaF)
	}
	*target, *tupdate = attrIf(rttTyp), attrIf(t)
	alpha.Put(uint32(alphaF * 256))
	beta.Put(uint32(betaF * 256))
	return nil
}

// scaleAlphaBeta is dualpi2_scale_alpha_beta: 1/256 units to the
// kernel's (probability per 64 ns of delay).
func scaleAlphaBeta(p uint32) uint32 {
	return uint32((uint64(p) * maxProb >> alphaBetaScaling) / 1_000_000_000)
}

// unscaleAlphaBeta is dualpi2_unscale_alpha_beta, for the dump.
func unscaleAlphaBeta(p uint32) uint32 {
	return uint32((uint64(p) * 1_000_000_000 << alphaBetaScaling) / maxProb)
}

// usToNs is convert_us_to_nsec (saturating at U32_MAX).
func usToNs(us uint32) uint32 { return uint32(min(uint64(us)*1000, math.MaxUint32)) }

// nsToUs is convert_ns_to_usec.
func nsToUs(ns uint64) uint32 { return uint32(min(ns/1000, math.MaxUint32)) }

// dump is dualpi2_dump as dualpi2_print_opt prints it.
func (q *DualPI2) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp memlimit %dB ", q.limit, q.memoryLimit)
	fmt.Fprintf(&b, "target %s tupdate %s ", units.SprintTime(nsToUs(q.target)), units.SprintTime(nsToUs(uint64(q.tupdate))))
	fmt.Fprintf(&b, "alpha %f beta %f ", float32(unscaleAlphaBeta(q.alpha))/256, float32(unscaleAlphaBeta(q.beta))/256)
	if q.stepInPackets {
		fmt.Fprintf(&b, "step_thresh %dp ", q.stepThresh)
	} else {
		fmt.Fprintf(&b, "step_thresh %s ", units.SprintTime(nsToUs(uint64(q.stepThresh))))
	}
	fmt.Fprintf(&b, "min_qlen_step %dp coupling_factor %d ", q.minQlenStep, q.coupling)
	b.WriteString(pick(q.dropOverload, "drop_on_overload ", "overflow "))
	b.WriteString(pick(q.dropEarly, "drop_enqueue ", "drop_dequeue "))
	fmt.Fprintf(&b, "classic_protection %d%% ", q.wc)
	b.WriteString(pick(q.ecnMask&ecnMaskAny == ecnMaskL4S, "l4s_ect ", "any_ect "))
	b.WriteString(pick(q.splitGSO, "split_gso ", "no_split_gso "))
	return b.String()
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
