package red

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/plugins/internal/redalgo"
)

var knownOptions = []string{"limit", "min", "max", "avpkt", "burst", "probability", "bandwidth", "ecn", "harddrop",
	"nodrop", "adaptive", "adaptative"}

// TC_RED_* flags.
const (
	flagECN        = 1 // TC_RED_ECN
	flagHarddrop   = 2 // TC_RED_HARDDROP
	flagAdaptative = 4 // TC_RED_ADAPTATIVE
	flagNodrop     = 8 // TC_RED_NODROP
	historicFlags  = flagECN | flagHarddrop | flagAdaptative
	supportedFlags = historicFlags | flagNodrop
)

// qopt is what tc sends for red (red_parse_opt): struct tc_red_qopt
// (its flags left 0: tc sends them in TCA_RED_FLAGS), the idle damping
// table TCA_RED_STAB, TCA_RED_MAX_P and the flags bitfield.
type qopt struct {
	limit, qthMin, qthMax uint32
	wlog, plog, scellLog  uint8
	qoptFlags             uint8
	stab                  [256]uint8
	maxP                  uint32
	flags                 uint8 // TCA_RED_FLAGS value; its selector is supportedFlags
}

// parse is red_parse_opt: tc's words, then Sally Floyd's defaults and
// the fixed-point parameters tc computes (tc_red_eval_ewma,
// tc_red_eval_P, tc_red_eval_idle_damping). speedBps is the device's
// speed, for a bandwidth in percent.
func parse(args []string, speedBps int64) (qopt, error) {
	var o qopt
	var burst, avpkt, rate uint32
	probability := 0.02
	a := qdisc.NewArgs("red", args)
	size := func(k string, dst *uint32) error {
		v, err := a.Value(k)
		if err != nil {
			return err
		}
		if *dst, err = units.GetSize(v); err != nil {
			return qdisc.Parsef("red", "Illegal %q: %q (%v)", k, v, err)
		}
		return nil
	}
	for k := a.Next(); k != ""; k = a.Next() {
		var err error
		switch k {
		case "limit":
			err = size(k, &o.limit)
		case "min":
			err = size(k, &o.qthMin)
		case "max":
			err = size(k, &o.qthMax)
		case "avpkt":
			err = size(k, &avpkt)
		case "burst":
			burst, err = a.Unsigned(k)
		case "probability":
			var v string
			if v, err = a.Value(k); err == nil {
				if probability, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					err = qdisc.Parsef("red", "Illegal \"probability\": %q", v)
				}
			}
		case "bandwidth":
			var v string
			if v, err = a.Value(k); err == nil {
				var r uint64
				if strings.Contains(v, "%") {
					r, err = psched.PercentRate64(v, speedBps)
					if err == nil && r > math.MaxUint32 {
						err = fmt.Errorf("above 32 bits")
					}
					rate = uint32(r)
				} else {
					rate, err = units.GetRate(v)
				}
				if err != nil {
					err = qdisc.Parsef("red", "Illegal \"bandwidth\": %q (%v)", v, err)
				}
			}
		case "ecn":
			o.flags |= flagECN
		case "harddrop":
			o.flags |= flagHarddrop
		case "nodrop":
			o.flags |= flagNodrop
		case "adaptive", "adaptative":
			o.flags |= flagAdaptative
		case "qevent":
			err = qdisc.Lacksf("red", "qevent is not modelled (the model has no tc blocks to run at a drop or mark)")
		default:
			err = a.Unknown(k, knownOptions...)
		}
		if err != nil {
			return o, err
		}
	}
	if o.limit == 0 || avpkt == 0 {
		return o, qdisc.Parsef("red", "Required parameter (limit, avpkt) is missing")
	}
	if o.qthMax == 0 {
		if o.qthMin != 0 {
			o.qthMax = o.qthMin * 3
		} else {
			o.qthMax = o.limit / 4
		}
	}
	if o.qthMin == 0 {
		o.qthMin = o.qthMax / 3
	}
	if burst == 0 {
		burst = (2*o.qthMin + o.qthMax) / (3 * avpkt)
	}
	if rate == 0 {
		rate = 10_000_000 / 8 // tc: "RED: set bandwidth to 10Mbit"
	}
	wlog, err := redalgo.EvalEWMA(o.qthMin, burst, avpkt)
	if err != nil {
		return o, qdisc.Parsef("red", "%v (failed to calculate EWMA constant)", err)
	}
	o.wlog = uint8(wlog)
	plog := redalgo.EvalP(o.qthMin, o.qthMax, probability)
	if plog < 0 {
		return o, qdisc.Parsef("red", "failed to calculate probability (min %d, max %d, probability %g)", o.qthMin, o.qthMax, probability)
	}
	o.plog = uint8(plog)
	clog := redalgo.EvalIdleDamping(wlog, avpkt, rate, &o.stab)
	if clog < 0 {
		return o, qdisc.Parsef("red", "failed to calculate idle damping table")
	}
	o.scellLog = uint8(clog)
	o.maxP = uint32(probability * (1 << 32))
	return o, nil
}

// validate is red_check_params and red_validate_flags, what the kernel
// refuses before it changes anything.
func (q *RED) validate(o qopt) (uint8, error) {
	if !redalgo.CheckParams(o.qthMin, o.qthMax, o.wlog, o.scellLog) {
		return 0, qdisc.Refusef("red", "min %d, max %d with ewma %d or Scell_log %d do not fit the fixed point (EINVAL)",
			o.qthMin, o.qthMax, o.wlog, o.scellLog)
	}
	for _, s := range o.stab {
		if s >= 32 {
			return 0, qdisc.Refusef("red", "idle damping table entry %d >= 32 (EINVAL)", s)
		}
	}
	flags := (q.flags &^ supportedFlags) | o.flags
	if flags&flagNodrop != 0 && flags&flagECN == 0 {
		return 0, qdisc.Refusef("red", "nodrop mode is only meaningful with ECN")
	}
	return flags, nil
}

// Dump implements qdisc.Qdisc: red_dump as red_print_opt prints it under
// tc -d.
func (q *RED) Dump() string { return q.print(true) }

func (q *RED) print(details bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %s min %s max %s ", units.SprintSize(uint64(q.limit)),
		units.SprintSize(uint64(q.parms.QthMin>>q.parms.Wlog)), units.SprintSize(uint64(q.parms.QthMax>>q.parms.Wlog)))
	for _, f := range []struct {
		bit  uint8
		word string
	}{{flagECN, "ecn"}, {flagHarddrop, "harddrop"}, {flagAdaptative, "adaptive"}, {flagNodrop, "nodrop"}} {
		if q.flags&f.bit != 0 {
			b.WriteString(f.word + " ")
		}
	}
	if details {
		fmt.Fprintf(&b, "ewma %d ", q.parms.Wlog)
		if q.parms.MaxP != 0 {
			fmt.Fprintf(&b, "probability %s ", strconv.FormatFloat(float64(q.parms.MaxP)/(1<<32), 'g', 6, 64))
		} else {
			fmt.Fprintf(&b, "Plog %d ", q.parms.Plog)
		}
		fmt.Fprintf(&b, "Scell_log %d", q.parms.ScellLog)
	}
	return b.String()
}
