package sfq

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/plugins/internal/redalgo"
)

var knownOptions = []string{"limit", "perturb", "quantum", "divisor", "flows", "depth", "headdrop",
	"redflowlimit", "min", "max", "avpkt", "burst", "probability", "ecn", "harddrop"}

// TC_RED_* flags sfq reads.
const (
	flagECN      = 1 // TC_RED_ECN
	flagHarddrop = 2 // TC_RED_HARDDROP
)

// qopt is struct tc_sfq_qopt_v1 as tc fills it (sfq_parse_opt): a field
// not given is zero, which sfq_change reads as "keep"; sent says whether
// tc sends TCA_OPTIONS at all. The RED fields are the per-flow RED's,
// computed by tc (qthMin 0: none).
type qopt struct {
	quantum, limit, divisor, flows, depth uint32
	perturb                               int32
	headdrop                              bool
	sent                                  bool

	redLimit, qthMin, qthMax uint32 // bytes; redLimit (redflowlimit) is tc's, the kernel reads none of it
	wlog, plog               uint8
	maxP                     uint32
	flags                    uint8
}

// parse is sfq_parse_opt.
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("sfq", args)
	u32 := map[string]*uint32{"divisor": &o.divisor, "flows": &o.flows, "depth": &o.depth,
		"redflowlimit": &o.redLimit, "min": &o.qthMin, "max": &o.qthMax}
	red := false
	var burst uint32
	avpkt, probability := uint32(1000), 0.02
	for k := a.Next(); k != ""; k = a.Next() {
		var err error
		switch {
		case u32[k] != nil:
			*u32[k], err = a.Unsigned(k) // get_u32(..., 0)
		case k == "limit":
			if o.limit, err = a.Unsigned(k); err == nil && o.limit < 2 {
				err = qdisc.Parsef("sfq", "illegal \"limit\" %d, must be > 1", o.limit)
			}
		case k == "quantum":
			o.quantum, err = a.Size(k)
		case k == "perturb":
			o.perturb, err = integer(a, k)
		case k == "headdrop":
			o.headdrop = true
		case k == "burst":
			burst, err = a.Unsigned(k)
		case k == "avpkt":
			avpkt, err = a.Size(k)
		case k == "probability":
			probability, err = float(a, k)
		case k == "ecn":
			o.flags |= flagECN
		case k == "harddrop":
			o.flags |= flagHarddrop
		default:
			err = a.Unknown(k, knownOptions...)
		}
		if err != nil {
			return o, err
		}
		red = red || redWords[k]
		o.sent = true
	}
	if red {
		return o, o.redParms(burst, avpkt, probability)
	}
	return o, nil
}

// redWords are the words that make tc compute the per-flow RED.
var redWords = map[string]bool{"redflowlimit": true, "min": true, "max": true, "burst": true,
	"avpkt": true, "probability": true, "ecn": true, "harddrop": true}

// redParms is the end of sfq_parse_opt with RED words: Sally Floyd's
// defaults for what was not given, then Wlog, Plog and max_P as tc
// computes them.
func (o *qopt) redParms(burst, avpkt uint32, probability float64) error {
	if o.redLimit == 0 {
		return qdisc.Parsef("sfq", "Required parameter (redflowlimit) is missing")
	}
	if o.qthMax == 0 {
		o.qthMax = o.redLimit / 4
	}
	if o.qthMin == 0 {
		o.qthMin = o.qthMax / 3
	}
	if burst == 0 && avpkt != 0 {
		burst = (2*o.qthMin + o.qthMax) / (3 * avpkt)
	}
	if o.qthMax > o.redLimit {
		return qdisc.Parsef("sfq", "\"max\" is larger than \"limit\"")
	}
	if o.qthMin >= o.qthMax {
		return qdisc.Parsef("sfq", "\"min\" is not smaller than \"max\"")
	}
	wlog, err := redalgo.EvalEWMA(o.qthMin, burst, max(avpkt, 1))
	if err != nil {
		return qdisc.Parsef("sfq", "%v (SFQ: failed to calculate EWMA constant.)", err)
	}
	o.wlog = uint8(wlog)
	plog := redalgo.EvalP(o.qthMin, o.qthMax, probability)
	if plog < 0 {
		return qdisc.Parsef("sfq", "SFQ: failed to calculate probability.")
	}
	o.plog = uint8(plog)
	o.maxP = uint32(probability * (1 << 32))
	return nil
}

// float is sscanf("%lg") on the value of key.
func float(a *qdisc.Args, key string) (float64, error) {
	v, err := a.Value(key)
	if err != nil {
		return 0, err
	}
	f, perr := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if perr != nil {
		return 0, qdisc.Parsef("sfq", "Illegal %q", key)
	}
	return f, nil
}

// integer is get_integer(..., 0) on the value of key.
func integer(a *qdisc.Args, key string) (int32, error) {
	v, err := a.Value(key)
	if err != nil {
		return 0, err
	}
	n, err := units.GetInteger(v, 0)
	if err != nil {
		return 0, qdisc.Parsef("sfq", "illegal %q: %v", key, err)
	}
	return n, nil
}

// sfqChange is sfq_change: validate tc's fields, then work out the new
// configuration from the current one and commit it; a refused change
// leaves everything as it was. (It runs from Init only: the kernel's sfq
// has no change op.)
func (q *SFQ) sfqChange(o qopt) error {
	if o.divisor != 0 && (bits.OnesCount32(o.divisor) != 1 || o.divisor > 65536) {
		return qdisc.Refusef("sfq", "divisor %d is invalid: a power of 2, at most 65536 (EINVAL)", o.divisor)
	}
	if int32(o.quantum) < 0 {
		return qdisc.Refusef("sfq", "invalid quantum %d (at most %d)", o.quantum, 1<<31-1)
	}
	if o.perturb < 0 || int64(o.perturb) > (1<<31-1)/hz {
		return qdisc.Refusef("sfq", "invalid perturb period %d (0 to %d seconds; perturb x HZ must fit an int)", o.perturb, (1<<31-1)/hz)
	}
	if !redalgo.CheckParams(o.qthMin, o.qthMax, o.wlog, 0) {
		return qdisc.Refusef("sfq", "RED min %d, max %d with ewma %d do not fit the fixed point (EINVAL)", o.qthMin, o.qthMax, o.wlog)
	}
	limit, divisor, maxdepth, maxflows, quantum := q.limit, q.divisor, q.maxdepth, q.maxflows, q.quantum
	if o.quantum != 0 {
		quantum = o.quantum
	}
	if o.flows != 0 {
		maxflows = int(min(o.flows, sfqMaxFlows))
	}
	if o.divisor != 0 {
		divisor = o.divisor
		maxflows = min(maxflows, int(divisor))
	}
	if o.depth != 0 {
		maxdepth = int(min(o.depth, sfqMaxDepth))
	}
	if o.limit != 0 {
		limit = int(min(uint64(o.limit), uint64(maxdepth*maxflows)))
		maxflows = min(maxflows, limit)
	}
	if limit == 1 {
		return qdisc.Refusef("sfq", "invalid limit: %d clamps to 1 (depth %d x flows %d)", o.limit, maxdepth, maxflows)
	}
	q.limit, q.divisor, q.headdrop, q.maxdepth, q.maxflows = limit, divisor, o.headdrop, maxdepth, maxflows
	q.perturbPeriod = int64(o.perturb) * hz
	q.quantum = quantum
	q.flags = o.flags
	if o.qthMin != 0 {
		q.red = &redalgo.Parms{}
		q.red.Set(o.qthMin, o.qthMax, o.wlog, o.plog, 0, nil, o.maxP)
	}
	return nil
}
