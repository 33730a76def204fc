package choke

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/plugins/internal/redalgo"
)

// TC_RED_* flags: tc sends ECN only (q_choke.c has no harddrop word),
// the kernel honours both.
const (
	flagECN      = 1 // TC_RED_ECN
	flagHarddrop = 2 // TC_RED_HARDDROP
)

// maxQueue is CHOKE_MAX_QUEUE: the table's bound, in packets.
const maxQueue = 128*1024 - 1

// usage is q_choke.c's explain().
const usage = "Usage: ... choke limit PACKETS bandwidth KBPS [ecn] [ min PACKETS ] [ max PACKETS ] [ burst PACKETS ]"

// qopt is what choke_parse_opt sends: struct tc_red_qopt (thresholds
// in packets), TCA_CHOKE_STAB and TCA_CHOKE_MAX_P.
type qopt struct {
	limit, qthMin, qthMax uint32
	wlog, plog, scellLog  uint8
	flags                 uint8
	stab                  [256]uint8
	maxP                  uint32
}

// scanLg is sscanf(s, "%lg"): leading blanks, then the longest prefix
// that reads as a number (trailing words are ignored, as by sscanf).
func scanLg(s string) (float64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if i := strings.IndexByte(s, '_'); i >= 0 { // C reads no digit separators
		s = s[:i]
	}
	for n := len(s); n > 0; n-- {
		if v, err := strconv.ParseFloat(s[:n], 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return v, true
		}
	}
	return 0, false
}

// parse is choke_parse_opt: tc's words, Sally Floyd's defaults, then
// the fixed-point parameters (tc_red_eval_ewma, tc_red_eval_P and
// tc_red_eval_idle_damping over qth x avpkt bytes). speedBps is the
// device's speed, for a bandwidth in percent.
func parse(args []string, speedBps int64) (qopt, error) {
	var o qopt
	var burst, rate uint32
	avpkt := uint32(1000)
	probability := 0.02
	a := qdisc.NewArgs("choke", args)
	for k := a.Next(); k != ""; k = a.Next() {
		var dst *uint32
		switch k {
		case "limit":
			dst = &o.limit
		case "min":
			dst = &o.qthMin
		case "max":
			dst = &o.qthMax
		case "burst":
			dst = &burst
		case "ecn":
			o.flags |= flagECN
			continue
		case "avpkt", "bandwidth", "probability":
		case "help":
			return o, qdisc.Parsef("choke", usage)
		default:
			return o, qdisc.Parsef("choke", "What is %q?", k)
		}
		v, err := a.Value(k)
		if err != nil {
			return o, err
		}
		switch k {
		case "avpkt":
			avpkt, err = units.GetSize(v)
		case "bandwidth":
			if strings.Contains(v, "%") {
				rate, err = psched.PercentRate(v, speedBps)
			} else {
				rate, err = units.GetRate(v)
			}
		case "probability":
			var ok bool
			if probability, ok = scanLg(v); !ok {
				err = fmt.Errorf("not a number")
			}
		default:
			*dst, err = units.GetUnsigned(v, 0)
		}
		if err != nil {
			return o, qdisc.Parsef("choke", "Illegal %q", k)
		}
	}
	if rate == 0 || o.limit == 0 {
		return o, qdisc.Parsef("choke", "Required parameter (bandwidth, limit) is missing")
	}
	if o.qthMax == 0 {
		o.qthMax = o.limit / 4
	}
	if o.qthMin == 0 {
		o.qthMin = o.qthMax / 3
	}
	if burst == 0 {
		burst = (2*o.qthMin + o.qthMax) / 3
	}
	if o.qthMax > o.limit {
		return o, qdisc.Parsef("choke", `"max" is larger than "limit"`)
	}
	if o.qthMin >= o.qthMax {
		return o, qdisc.Parsef("choke", `"min" is not smaller than "max"`)
	}
	// tc's unsigned int products, wrapping as in C.
	wlog, err := redalgo.EvalEWMA(o.qthMin*avpkt, burst, avpkt)
	if err != nil {
		return o, qdisc.Parsef("choke", "CHOKE: failed to calculate EWMA constant. (tc_red_eval_ewma() %v)", err)
	}
	o.wlog = uint8(wlog)
	plog := redalgo.EvalP(o.qthMin*avpkt, o.qthMax*avpkt, probability)
	if plog < 0 {
		return o, qdisc.Parsef("choke", "CHOKE: failed to calculate probability.")
	}
	o.plog = uint8(plog)
	clog := redalgo.EvalIdleDamping(wlog, avpkt, rate, &o.stab)
	if clog < 0 {
		return o, qdisc.Parsef("choke", "CHOKE: failed to calculate idle damping table.")
	}
	o.scellLog = uint8(clog)
	o.maxP = uint32(probability * (1 << 32))
	return o, nil
}

// validate is what choke_change refuses before it changes anything:
// red_check_params (with the table) and a limit above CHOKE_MAX_QUEUE.
func validate(o qopt) error {
	if !redalgo.CheckParams(o.qthMin, o.qthMax, o.wlog, o.scellLog) {
		return qdisc.Refusef("choke", "min %d, max %d with ewma %d or Scell_log %d do not fit the fixed point (EINVAL)",
			o.qthMin, o.qthMax, o.wlog, o.scellLog)
	}
	for _, s := range o.stab {
		if s >= 32 {
			return qdisc.Refusef("choke", "idle damping table entry %d >= 32 (EINVAL)", s)
		}
	}
	if o.limit > maxQueue {
		return qdisc.Refusef("choke", "limit %d is above CHOKE_MAX_QUEUE %d (EINVAL)", o.limit, maxQueue)
	}
	return nil
}

// Dump implements qdisc.Qdisc: choke_dump as choke_print_opt prints it
// under tc -d.
func (q *Choke) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp min %dp max %dp ", q.limit, q.parms.QthMin>>q.parms.Wlog, q.parms.QthMax>>q.parms.Wlog)
	if q.flags&flagECN != 0 { // tc_red_print_flags
		b.WriteString("ecn ")
	}
	if q.flags&flagHarddrop != 0 {
		b.WriteString("harddrop ")
	}
	fmt.Fprintf(&b, "ewma %d ", q.parms.Wlog)
	if q.parms.MaxP != 0 {
		fmt.Fprintf(&b, "probability %s ", strconv.FormatFloat(float64(q.parms.MaxP)/(1<<32), 'g', 6, 64))
	} else {
		fmt.Fprintf(&b, "Plog %d ", q.parms.Plog)
	}
	fmt.Fprintf(&b, "Scell_log %d", q.parms.ScellLog)
	return b.String()
}
