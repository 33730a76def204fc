package pie

import (
	"github.com/txlab/txlab/framework/qdisc"
)

const alphaMax, betaMax = 32, 32 // tc's ALPHA_MAX, BETA_MAX

// qopt is the TCA_PIE_* / TCA_FQ_PIE_* attributes tc sends
// (pie_parse_opt, fq_pie_parse_opt): a number only when given and not 0,
// a flag only when its word (or its no- word) was given.
type qopt struct {
	limit, target, tupdate, alpha, beta  qdisc.Attr[uint32] // target and tupdate in us
	flows, quantum, memoryLimit, ecnProb qdisc.Attr[uint32] // fq_pie
	ecn, bytemode, dqRateEstimator       qdisc.Attr[bool]
}

// parse reads pie's or fq_pie's words (kind says which).
func parse(kind string, args []string) (qopt, error) {
	var o qopt
	fq := kind == "fq_pie"
	known := []string{"limit", "target", "tupdate", "alpha", "beta", "ecn", "noecn", "bytemode", "nobytemode",
		"dq_rate_estimator", "no_dq_rate_estimator"}
	if fq {
		known = append(known, "flows", "quantum", "memory_limit", "ecn_prob")
	}
	a := qdisc.NewArgs(kind, args)
	illegal := func(k string) error { return qdisc.Parsef(kind, "Illegal %q", k) }
	for k := a.Next(); k != ""; k = a.Next() {
		var v uint32
		var err error
		switch {
		case k == "limit" || fq && k == "flows":
			v, err = a.Unsigned(k)
			if k == "limit" {
				o.limit.Put(v)
			} else {
				o.flows.Put(v)
			}
		case k == "target" || k == "tupdate":
			v, err = a.Time(k)
			if k == "target" {
				o.target.Put(v)
			} else {
				o.tupdate.Put(v)
			}
		case k == "alpha" || k == "beta":
			if v, err = a.Unsigned(k); err == nil && v > alphaMax {
				err = illegal(k)
			}
			if k == "alpha" {
				o.alpha.Put(v)
			} else {
				o.beta.Put(v)
			}
		case fq && (k == "quantum" || k == "memory_limit"):
			v, err = a.Size(k)
			if k == "quantum" {
				o.quantum.Put(v)
			} else {
				o.memoryLimit.Put(v)
			}
		case fq && k == "ecn_prob":
			if v, err = a.Unsigned(k); err == nil && v >= 100 {
				err = illegal(k)
			}
			o.ecnProb.Put(v)
		case k == "ecn" || k == "noecn":
			o.ecn.Put(k == "ecn")
		case k == "bytemode" || k == "nobytemode":
			o.bytemode.Put(k == "bytemode")
		case k == "dq_rate_estimator" || k == "no_dq_rate_estimator":
			o.dqRateEstimator.Put(k == "dq_rate_estimator")
		default:
			return o, a.Unknown(k, known...)
		}
		if err != nil {
			return o, err
		}
	}
	for _, at := range []*qdisc.Attr[uint32]{&o.limit, &o.target, &o.tupdate, &o.alpha, &o.beta, &o.flows, &o.quantum,
		&o.memoryLimit, &o.ecnProb} {
		at.Set = at.Set && at.V != 0 // tc sends none of them when 0
	}
	return o, nil
}

// apply sets the parameters pie_change and fq_pie_change set alike.
func (o qopt) apply(p *params) {
	if o.target.Set {
		p.target = (uint64(o.target.V) * 1000) >> 6 // PSCHED_NS2TICKS(target us)
	}
	if o.tupdate.Set {
		p.tupdate = usecsToJiffies(o.tupdate.V)
	}
	o.limit.Apply(&p.limit)
	o.alpha.Apply(&p.alpha)
	o.beta.Apply(&p.beta)
	o.ecn.Apply(&p.ecn)
	o.bytemode.Apply(&p.bytemode)
	o.dqRateEstimator.Apply(&p.dqRateEstimator)
}
