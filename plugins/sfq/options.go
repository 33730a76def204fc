package sfq

import (
	"math/bits"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

var knownOptions = []string{"limit", "perturb", "quantum", "divisor", "flows", "depth", "headdrop"}

// redOptions are tc-sfq's RED words; the model has no RED in sfq.
var redOptions = map[string]bool{"redflowlimit": true, "min": true, "max": true, "burst": true,
	"avpkt": true, "probability": true, "ecn": true, "harddrop": true}

// qopt is struct tc_sfq_qopt_v1 as tc fills it (sfq_parse_opt): a field
// not given is zero, which sfq_change reads as "keep"; sent says whether
// tc sends TCA_OPTIONS at all.
type qopt struct {
	quantum, limit, divisor, flows, depth uint32
	perturb                               int32
	headdrop                              bool
	sent                                  bool
}

// parse is sfq_parse_opt.
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("sfq", args)
	u32 := map[string]*uint32{"divisor": &o.divisor, "flows": &o.flows, "depth": &o.depth}
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
		case redOptions[k]:
			err = qdisc.Lacksf("sfq", "RED option %q is not modelled (sfq here has no RED; use %v)", k, knownOptions)
		default:
			err = a.Unknown(k, knownOptions...)
		}
		if err != nil {
			return o, err
		}
		o.sent = true
	}
	return o, nil
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
	return nil
}
