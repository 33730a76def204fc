package netem

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

var knownOptions = []string{"limit", "delay", "latency", "distribution", "loss", "drop", "corrupt", "duplicate",
	"reorder", "gap", "rate", "slot", "seed", "ecn"}

// Structures tc sends (include/uapi/linux/pkt_sched.h).
type (
	corrSpec struct{ delay, loss, dup uint32 } // tc_netem_corr
	probCorr struct{ prob, corr uint32 }       // tc_netem_reorder, tc_netem_corrupt
	giModel  struct{ p13, p31, p32, p14, p23 uint32 }
	geModel  struct{ p, r, h, k1 uint32 }
	rateSpec struct {
		rate           uint32
		packetOverhead int32
		cellSize       uint32
		cellOverhead   int32
	}
	slotSpec struct {
		minDelay, maxDelay, distDelay, distJitter int64
		maxPackets, maxBytes                      int32
	}
	distributed struct {
		name  string
		table []int16
	}
)

// qopt is what tc sends for netem (netem_parse_opt): struct
// tc_netem_qopt (limit, loss, gap, duplicate; its latency and jitter
// are left 0) and the attributes present.
type qopt struct {
	limit, loss, gap, duplicate uint32
	latency64, jitter64         qdisc.Attr[int64]
	corr                        qdisc.Attr[corrSpec]
	reorder, corrupt            qdisc.Attr[probCorr]
	ecn                         bool
	slot                        qdisc.Attr[slotSpec]
	gi                          qdisc.Attr[giModel]
	ge                          qdisc.Attr[geModel]
	rate                        qdisc.Attr[rateSpec]
	rate64                      qdisc.Attr[uint64]
	seed                        qdisc.Attr[uint64]
	delayDist, slotDist         distributed
}

// word is the option k names as netem_parse_opt tests them, in its
// order (matches() is a prefix test), or "".
func word(k string) string {
	for _, w := range []struct{ name, word string }{
		{"limit", "limit"}, {"delay", "latency"}, {"delay", "delay"}, {"loss", "loss"}, {"loss", "drop"},
		{"seed", "seed"}, {"ecn", "ecn"}, {"reorder", "reorder"}, {"corrupt", "corrupt"}, {"gap", "gap"},
		{"duplicate", "duplicate"}, {"distribution", "distribution"}, {"rate", "rate"}, {"slot", "slot"},
	} {
		if psched.Matches(k, w.word) {
			return w.name
		}
	}
	return ""
}

// words walks the arguments with tc's NEXT_IS_NUMBER look-ahead.
type words struct {
	a []string
	i int
}

func (w *words) next() (string, bool) {
	if w.i >= len(w.a) {
		return "", false
	}
	w.i++
	return w.a[w.i-1], true
}

// nextIsNumber is NEXT_IS_NUMBER (isdigit of the next word's first
// byte); signed also takes a leading minus (NEXT_IS_SIGNED_NUMBER).
func (w *words) nextIsNumber(signed bool) bool {
	if w.i >= len(w.a) || w.a[w.i] == "" {
		return false
	}
	c := w.a[w.i][0]
	return c >= '0' && c <= '9' || signed && c == '-'
}

func illegal(what, v string, err error) error {
	return qdisc.Parsef("netem", "illegal %q: %q (%v)", what, v, err)
}

// parse is netem_parse_opt: tc's words to what it sends. speedBps is the
// device's speed, for a rate in percent.
func parse(args []string, speedBps int64) (qopt, error) {
	o := qopt{limit: 1000}
	w := &words{a: args}
	// value reads the word after key, or says it is missing (NEXT_ARG).
	value := func(key string) (string, error) {
		v, ok := w.next()
		if !ok {
			return "", qdisc.Parsef("netem", "option %q needs a value", key)
		}
		return v, nil
	}
	percent := func(what string) (uint32, error) {
		v, err := value(what)
		if err != nil {
			return 0, err
		}
		p, err := psched.Percent(v)
		if err != nil {
			return 0, illegal(what, v, err)
		}
		return psched.Scaled(p), nil
	}
	// optPercent reads an optional correlation or model parameter.
	optPercent := func(what string, dst *uint32) (bool, error) {
		if !w.nextIsNumber(false) {
			return false, nil
		}
		p, err := percent(what)
		*dst = p
		return true, err
	}
	time64 := func(what string) (int64, error) {
		v, err := value(what)
		if err != nil {
			return 0, err
		}
		t, err := units.GetTime64(v)
		if err != nil {
			return 0, illegal(what, v, err)
		}
		return t, nil
	}
	var corr corrSpec
	corrSet := false
	lossGiven := false
	for {
		k, ok := w.next()
		if !ok {
			break
		}
		var err error
		switch word(k) {
		case "limit":
			var v string
			if v, err = value(k); err == nil {
				if o.limit, err = units.GetSize(v); err != nil {
					err = illegal("limit", v, err)
				}
			}
		case "delay":
			var t int64
			if t, err = time64("latency"); err != nil {
				break
			}
			o.latency64.Put(t)
			if w.nextIsNumber(false) {
				if t, err = time64("latency"); err != nil {
					break
				}
				o.jitter64.Put(t)
				var got bool
				got, err = optPercent("latency", &corr.delay)
				corrSet = corrSet || got
			}
		case "loss":
			if o.loss > 0 || lossGiven {
				return o, qdisc.Parsef("netem", "duplicate loss argument")
			}
			lossGiven = true
			err = parseLoss(w, &o, &corr, &corrSet, value, percent, optPercent)
		case "seed":
			var v string
			if v, err = value(k); err == nil {
				var s uint64
				if s, err = strconv.ParseUint(v, 10, 64); err != nil {
					err = illegal("seed", v, fmt.Errorf("not a 64-bit unsigned number"))
				}
				o.seed.Put(s)
			}
		case "ecn":
			o.ecn = true
		case "reorder", "corrupt":
			var pc probCorr
			if pc.prob, err = percent(word(k)); err == nil {
				var got bool
				got, err = optPercent(word(k), &pc.corr)
				corrSet = corrSet || got
			}
			if word(k) == "reorder" {
				o.reorder.Put(pc)
			} else {
				o.corrupt.Put(pc)
			}
		case "gap":
			var v string
			if v, err = value(k); err == nil {
				if o.gap, err = units.GetUnsigned(v, 0); err != nil {
					err = illegal("gap", v, err)
				}
			}
		case "duplicate":
			if o.duplicate, err = percent("duplicate"); err == nil {
				_, err = optPercent("duplicate", &corr.dup)
			}
		case "distribution":
			var v string
			if v, err = value(k); err == nil {
				o.delayDist, err = distribution(v)
			}
		case "rate":
			err = parseRate(w, &o, value, speedBps)
		case "slot":
			err = parseSlot(w, &o, value, time64)
		default:
			if k == "help" {
				return o, qdisc.Parsef("netem", "help: options are %s", strings.Join(knownOptions, ", "))
			}
			return o, qdisc.Parsef("netem", "What is %q? (known: %s)", k, strings.Join(knownOptions, ", "))
		}
		if err != nil {
			return o, err
		}
	}
	if corrSet {
		o.corr.Put(corr)
	}

	if o.reorder.Set && o.reorder.V.prob != 0 {
		if o.latency64.V == 0 {
			return o, qdisc.Parsef("netem", "reordering not possible without specifying some delay")
		}
		if o.gap == 0 {
			o.gap = 1
		}
	} else if o.gap > 0 {
		return o, qdisc.Parsef("netem", "gap specified without reorder probability")
	}
	if o.ecn && o.loss == 0 && !o.gi.Set && !o.ge.Set {
		return o, qdisc.Parsef("netem", "ecn requested without loss model")
	}
	if o.delayDist.table != nil && (o.latency64.V == 0 || o.jitter64.V == 0) {
		return o, qdisc.Parsef("netem", "distribution specified but no latency and jitter values")
	}
	return o, nil
}

// parseLoss reads "loss [random] P [CORR]", "loss state P13 [P31 [P32
// [P23 [P14]]]]" or "loss gemodel P [R [1-H [1-K]]]" with tc's defaults.
func parseLoss(w *words, o *qopt, corr *corrSpec, corrSet *bool, value func(string) (string, error),
	percent func(string) (uint32, error), optPercent func(string, *uint32) (bool, error)) error {
	v, err := value("loss")
	if err != nil {
		return err
	}
	set := psched.Scaled
	frac := func(what, v string) (float64, error) {
		p, err := psched.Percent(v)
		if err != nil {
			return 0, illegal(what, v, err)
		}
		return p, nil
	}
	switch {
	case v != "" && v[0] >= '0' && v[0] <= '9', v == "random":
		if v == "random" {
			if v, err = value("loss percent"); err != nil {
				return err
			}
		}
		p, err := frac("loss percent", v)
		if err != nil {
			return err
		}
		o.loss = set(p)
		got, err := optPercent("loss correlation", &corr.loss)
		*corrSet = *corrSet || got
		return err
	case v == "state":
		if v, err = value("loss p13"); err != nil {
			return err
		}
		p13, err := frac("loss p13", v)
		if err != nil {
			return err
		}
		gi := giModel{p13: set(p13), p31: set(1 - p13), p32: 0, p23: set(1), p14: 0}
		for _, f := range []struct {
			what string
			dst  *uint32
		}{{"loss p31", &gi.p31}, {"loss p32", &gi.p32}, {"loss p23", &gi.p23}, {"loss p14", &gi.p14}} {
			if got, err := optPercent(f.what, f.dst); err != nil || !got {
				o.gi.Put(gi)
				return err
			}
		}
		o.gi.Put(gi)
	case v == "gemodel":
		if v, err = value("loss gemodel p"); err != nil {
			return err
		}
		p, err := frac("loss gemodel p", v)
		if err != nil {
			return err
		}
		ge := geModel{p: set(p), r: set(1 - p), h: 0, k1: 0}
		got, err := optPercent("loss gemodel r", &ge.r)
		if err == nil && got {
			if got, err = optPercent("loss gemodel h", &ge.h); got {
				ge.h = math.MaxUint32 - ge.h // tc takes 1-h, the kernel h
			}
			if err == nil && got {
				_, err = optPercent("loss gemodel k", &ge.k1)
			}
		}
		o.ge.Put(ge)
		return err
	default:
		return qdisc.Parsef("netem", "Unknown loss parameter: %s", v)
	}
	return nil
}

// parseRate reads "rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]".
func parseRate(w *words, o *qopt, value func(string) (string, error), speedBps int64) error {
	v, err := value("rate")
	if err != nil {
		return err
	}
	var r64 uint64
	if strings.Contains(v, "%") {
		r64, err = psched.PercentRate64(v, speedBps)
	} else {
		r64, err = units.GetRate64(v)
	}
	if err != nil {
		return illegal("rate", v, err)
	}
	var rs rateSpec
	s32 := func(dst *int32) error {
		v, _ := w.next()
		n, err := units.GetInteger(v, 0)
		if err != nil {
			return illegal("rate", v, err)
		}
		*dst = n
		return nil
	}
	if w.nextIsNumber(true) {
		if err := s32(&rs.packetOverhead); err != nil {
			return err
		}
	}
	if w.nextIsNumber(false) {
		v, _ := w.next()
		if rs.cellSize, err = units.GetUnsigned(v, 0); err != nil {
			return illegal("rate", v, err)
		}
	}
	if w.nextIsNumber(true) {
		if err := s32(&rs.cellOverhead); err != nil {
			return err
		}
	}
	if r64 >= 1<<32 {
		o.rate64.Put(r64)
		rs.rate = math.MaxUint32
	} else {
		rs.rate = uint32(r64)
	}
	o.rate.Put(rs)
	return nil
}

// parseSlot reads "slot MIN [MAX] [packets N] [bytes N]" or "slot
// distribution NAME DELAY JITTER [packets N] [bytes N]".
func parseSlot(w *words, o *qopt, value func(string) (string, error), time64 func(string) (int64, error)) error {
	var s slotSpec
	var err error
	if w.nextIsNumber(false) {
		if s.minDelay, err = time64("slot min_delay"); err != nil {
			return err
		}
		s.maxDelay = s.minDelay
		if w.nextIsNumber(false) {
			if s.maxDelay, err = time64("slot max_delay"); err != nil {
				return err
			}
			if s.maxDelay < s.minDelay {
				return qdisc.Parsef("netem", "illegal \"slot max_delay\": below min_delay")
			}
		}
	} else {
		v, err := value("slot")
		if err != nil {
			return err
		}
		if v != "distribution" {
			return qdisc.Parsef("netem", "Unknown slot parameter: %s", v)
		}
		if v, err = value("slot distribution"); err != nil {
			return err
		}
		if o.slotDist, err = distribution(v); err != nil {
			return err
		}
		if s.distDelay, err = time64("slot delay"); err != nil {
			return err
		}
		if s.distJitter, err = time64("slot jitter"); err != nil {
			return err
		}
		if s.distJitter <= 0 {
			return qdisc.Parsef("netem", "Non-positive jitter")
		}
	}
	if w.i < len(w.a) && psched.Matches(w.a[w.i], "packets") {
		w.i++
		v, ok := w.next()
		n, perr := units.GetInteger(v, 0)
		if !ok || perr != nil {
			return qdisc.Parsef("netem", "illegal \"slot packets\": %q", v)
		}
		s.maxPackets = n
	}
	if w.i < len(w.a) && psched.Matches(w.a[w.i], "bytes") {
		w.i++
		v, ok := w.next()
		n, perr := units.GetSize(v)
		if !ok || perr != nil {
			return qdisc.Parsef("netem", "illegal \"slot bytes\": %q", v)
		}
		s.maxBytes = int32(n)
	}
	o.slot.Put(s)
	return nil
}

// distribution is get_distribution: tc reads /usr/lib/tc/NAME.dist; the
// model computes the tables iproute2 ships.
func distribution(name string) (distributed, error) {
	f, ok := distTables[name]
	if !ok {
		if name == "experimental" {
			return distributed{}, qdisc.Lacksf("netem", "distribution \"experimental\" is measured data (iproute2's experimental.dat), not a definition the model can compute; use normal, pareto or paretonormal")
		}
		return distributed{}, qdisc.Parsef("netem", "No distribution data for %s (/usr/lib/tc/%s.dist: no such file; the model has normal, pareto, paretonormal)", name, name)
	}
	return distributed{name: name, table: f()}, nil
}

// percentText is tc's percentage print: (100 * per) / UINT32_MAX, %g.
func percentText(per uint32) string {
	return strconv.FormatFloat(100*float64(per)/math.MaxUint32, 'g', 6, 64) + "%"
}

// Dump implements qdisc.Qdisc: netem_dump's attributes as netem_print_opt
// prints them (the same with or without -d).
func (q *Netem) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %d", q.limit)
	if q.latency != 0 {
		fmt.Fprintf(&b, " delay %s", units.SprintTime64(q.latency))
		if q.jitter != 0 {
			fmt.Fprintf(&b, "  %s", units.SprintTime64(q.jitter))
			if q.delayCor.rho != 0 {
				b.WriteString(" " + percentText(q.delayCor.rho))
			}
		}
	}
	if q.loss != 0 {
		b.WriteString(" loss " + percentText(q.loss))
		if q.lossCor.rho != 0 {
			b.WriteString(" " + percentText(q.lossCor.rho))
		}
	}
	switch q.lossModel {
	case clg4States:
		fmt.Fprintf(&b, " loss state p13 %s p31 %s p32 %s p23 %s p14 %s", percentText(q.clg.a1), percentText(q.clg.a2),
			percentText(q.clg.a3), percentText(q.clg.a5), percentText(q.clg.a4))
	case clgGilbEll:
		fmt.Fprintf(&b, " loss gemodel p %s r %s 1-h %s 1-k %s", percentText(q.clg.a1), percentText(q.clg.a2),
			percentText(math.MaxUint32-q.clg.a3), percentText(q.clg.a4))
	}
	if q.duplicate != 0 {
		b.WriteString(" duplicate " + percentText(q.duplicate))
		if q.dupCor.rho != 0 {
			b.WriteString(" " + percentText(q.dupCor.rho))
		}
	}
	if q.reorder != 0 {
		b.WriteString(" reorder " + percentText(q.reorder))
		if q.reorderCor.rho != 0 {
			b.WriteString(" " + percentText(q.reorderCor.rho))
		}
	}
	if q.corrupt != 0 {
		b.WriteString(" corrupt " + percentText(q.corrupt))
		if q.corruptCor.rho != 0 {
			b.WriteString(" " + percentText(q.corruptCor.rho))
		}
	}
	if q.rate != 0 {
		fmt.Fprintf(&b, " rate %s", units.SprintRate(q.rate))
		if q.packetOverhead != 0 {
			fmt.Fprintf(&b, " packetoverhead %d", q.packetOverhead)
		}
		if q.cellSize != 0 {
			fmt.Fprintf(&b, " cellsize %d", q.cellSize)
		}
		if q.cellOverhead != 0 {
			fmt.Fprintf(&b, " celloverhead %d", q.cellOverhead)
		}
	}
	if s := q.slotCfg; s.minDelay|s.maxDelay|s.distJitter != 0 {
		if s.distJitter > 0 {
			fmt.Fprintf(&b, " slot distribution %s %s", units.SprintTime64(s.distDelay), units.SprintTime64(s.distJitter))
		} else {
			fmt.Fprintf(&b, " slot %s %s", units.SprintTime64(s.minDelay), units.SprintTime64(s.maxDelay))
		}
		if s.maxPackets != math.MaxInt32 {
			fmt.Fprintf(&b, " packets %d", s.maxPackets)
		}
		if s.maxBytes != math.MaxInt32 {
			fmt.Fprintf(&b, " bytes %d", s.maxBytes)
		}
	}
	fmt.Fprintf(&b, " seed %d", q.seed)
	if q.ecn {
		b.WriteString(" ecn ")
	}
	if q.gap != 0 {
		fmt.Fprintf(&b, " gap %d", q.gap)
	}
	return b.String()
}
