package fqcodel

import (
	"fmt"
	"math"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/plugins/codel"
)

var knownOptions = []string{"limit", "flows", "quantum", "drop_batch", "target", "ce_threshold",
	"ce_threshold_selector", "memory_limit", "interval", "ecn", "noecn"}

// qopt is the TCA_FQ_CODEL_* attributes tc sends (fq_codel_parse_opt):
// an attribute only when its word was given, and tc leaves out a zero
// limit, flows, quantum, drop_batch, target and interval, a ce_threshold
// or memory_limit of ~0U.
type qopt struct {
	limit, flows, quantum, dropBatch, target, interval qdisc.Attr[uint32]
	ceThreshold, memoryLimit                           qdisc.Attr[uint32]
	ecn                                                qdisc.Attr[bool]
	// ceSelector and ceMask are TCA_FQ_CODEL_CE_THRESHOLD_SELECTOR and
	// _MASK: tc sends both when ce_threshold_selector VALUE/MASK was
	// given.
	ceSelector, ceMask qdisc.Attr[uint8]
}

// parse is fq_codel_parse_opt: tc's words to attributes.
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("fq_codel", args)
	u32 := map[string]*qdisc.Attr[uint32]{"limit": &o.limit, "flows": &o.flows, "quantum": &o.quantum, "drop_batch": &o.dropBatch}
	times := map[string]*qdisc.Attr[uint32]{"target": &o.target, "interval": &o.interval, "ce_threshold": &o.ceThreshold}
	for k := a.Next(); k != ""; k = a.Next() {
		var v uint32
		var err error
		switch {
		case u32[k] != nil:
			v, err = a.Unsigned(k)
			u32[k].Put(v)
		case times[k] != nil:
			v, err = a.Time(k)
			times[k].Put(v)
		case k == "memory_limit":
			v, err = a.Size(k)
			o.memoryLimit.Put(v)
		case k == "ecn" || k == "noecn":
			o.ecn.Put(k == "ecn")
		case k == "ce_threshold_selector":
			err = parseSelector(a, &o)
		default:
			err = a.Unknown(k, knownOptions...)
		}
		if err != nil {
			return o, err
		}
	}
	for _, at := range []*qdisc.Attr[uint32]{&o.limit, &o.flows, &o.quantum, &o.dropBatch, &o.target, &o.interval} {
		at.Set = at.Set && at.V != 0
	}
	for _, at := range []*qdisc.Attr[uint32]{&o.ceThreshold, &o.memoryLimit} {
		at.Set = at.Set && at.V != math.MaxUint32
	}
	return o, nil
}

// parseSelector reads ce_threshold_selector's VALUE/MASK as
// fq_codel_parse_opt does: the mask after the slash first, each a u8
// in strtoul's bases (get_u8).
func parseSelector(a *qdisc.Args, o *qopt) error {
	w, err := a.Value("ce_threshold_selector")
	if err != nil {
		return err
	}
	value, mask, ok := strings.Cut(w, "/")
	if !ok {
		return qdisc.Parsef("fq_codel", "Missing mask for \"ce_threshold_selector\"")
	}
	m, err := getU8(mask)
	if err != nil {
		return qdisc.Parsef("fq_codel", "Illegal mask for \"ce_threshold_selector\"")
	}
	v, err := getU8(value)
	if err != nil {
		return qdisc.Parsef("fq_codel", "Illegal \"ce_threshold_selector\"")
	}
	o.ceMask.Put(m)
	o.ceSelector.Put(v)
	return nil
}

// getU8 is tc's get_u8(val, arg, 0).
func getU8(w string) (uint8, error) {
	v, err := units.GetUnsigned(w, 0)
	if err != nil || v > math.MaxUint8 {
		return 0, fmt.Errorf("%q is not a u8", w)
	}
	return uint8(v), nil
}

// validate is fq_codel_change's checks before it takes the tree lock: a
// flow count only before the flow table exists (at init), in [1, 65536];
// a quantum at most FQ_CODEL_QUANTUM_MAX. A refused change changes
// nothing.
func (q *FQCodel) validate(o qopt) error {
	if o.flows.Set {
		if q.flows != nil {
			return qdisc.Refusef("fq_codel", "flows %d: the flow table exists; flows can only be set when the qdisc is created (EINVAL)", o.flows.V)
		}
		if o.flows.V > maxFlows {
			return qdisc.Refusef("fq_codel", "flows %d is out of range [1, %d] (EINVAL)", o.flows.V, maxFlows)
		}
	}
	if o.quantum.Set && o.quantum.V > quantumMax {
		return qdisc.Refusef("fq_codel", "Invalid quantum: %d is above %d", o.quantum.V, quantumMax)
	}
	return nil
}

// apply is the rest of fq_codel_change, under the tree lock.
func (q *FQCodel) apply(o qopt) {
	if o.flows.Set {
		q.flowsCnt = o.flows.V
	}
	if o.target.Set {
		q.cparams.Target = codel.US2Time(uint64(o.target.V))
	}
	if o.ceThreshold.Set {
		q.cparams.CEThreshold = codel.US2Time(uint64(o.ceThreshold.V))
	}
	if o.ceSelector.Set {
		q.cparams.CEThresholdSelector = o.ceSelector.V
	}
	if o.ceMask.Set {
		q.cparams.CEThresholdMask = o.ceMask.V
	}
	if o.interval.Set {
		q.cparams.Interval = codel.US2Time(uint64(o.interval.V))
	}
	if o.limit.Set {
		q.limit = o.limit.V
	}
	if o.ecn.Set {
		q.cparams.ECN = o.ecn.V
	}
	if o.quantum.Set {
		q.quantum = max(minQuantum, o.quantum.V)
	}
	if o.dropBatch.Set {
		q.dropBatch = max(1, o.dropBatch.V)
	}
	if o.memoryLimit.Set {
		q.memoryLimit = min(memoryLimitMax, o.memoryLimit.V)
	}
}

// Dump implements qdisc.Qdisc: fq_codel_dump as tc's fq_codel_print_opt
// prints it.
func (q *FQCodel) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp flows %d quantum %d target %s", q.limit, q.flowsCnt, q.quantum,
		units.SprintTime(codel.ToUs(q.cparams.Target)))
	if q.cparams.CEThreshold != codel.DisabledThreshold {
		fmt.Fprintf(&b, " ce_threshold %s", units.SprintTime(codel.ToUs(q.cparams.CEThreshold)))
		// fq_codel_dump sends the selector and mask with the
		// threshold; tc prints them when either is not 0, "%#x".
		if sel, mask := q.cparams.CEThresholdSelector, q.cparams.CEThresholdMask; sel != 0 || mask != 0 {
			fmt.Fprintf(&b, " ce_threshold_selector %s/%s", cHex(sel), cHex(mask))
		}
	}
	fmt.Fprintf(&b, " interval %s memory_limit %s", units.SprintTime(codel.ToUs(q.cparams.Interval)),
		units.SprintSize(uint64(q.memoryLimit)))
	if q.cparams.ECN {
		b.WriteString(" ecn")
	}
	if q.dropBatch != 0 {
		fmt.Fprintf(&b, " drop_batch %d", q.dropBatch)
	}
	return b.String()
}

// cHex is C's "%#x": 0 without a prefix.
func cHex(v uint8) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
