package tbf

import (
	"fmt"
	"math"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

var knownOptions = []string{"limit", "latency", "burst", "buffer", "maxburst", "mtu", "minburst", "mpu", "rate",
	"peakrate", "overhead", "linklayer"}

// ratespec is struct tc_ratespec as tc fills it.
type ratespec struct {
	rate      uint32
	overhead  uint16
	mpu       uint16
	linklayer uint8
	cellLog   uint8
}

// qopt is what tc sends for tbf (tbf_parse_opt): struct tc_tbf_qopt
// (limit, rate, peakrate, buffer and mtu in psched ticks) and the
// TCA_TBF_BURST, TCA_TBF_PBURST, TCA_TBF_RATE64, TCA_TBF_PRATE64
// attributes.
type qopt struct {
	limit          uint32
	rate, peakrate ratespec
	buffer, mtu    uint32 // ticks
	burst, pburst  qdisc.Attr[uint32]
	rate64         qdisc.Attr[uint64]
	prate64        qdisc.Attr[uint64]
}

// word is the option k names, as tbf_parse_opt tests it (matches() is
// a prefix test, strcmp an exact one), or "" for none; burst, buffer and
// maxburst are one option, as are mtu and minburst.
func word(k string) string {
	switch {
	case psched.Matches(k, "limit"):
		return "limit"
	case psched.Matches(k, "latency"):
		return "latency"
	case psched.Matches(k, "burst"), k == "buffer", k == "maxburst":
		return "burst"
	case k == "mtu", k == "minburst":
		return "mtu"
	case k == "mpu", k == "rate":
		return k
	case psched.Matches(k, "peakrate"):
		return "peakrate"
	case psched.Matches(k, "overhead"):
		return "overhead"
	case psched.Matches(k, "linklayer"):
		return "linklayer"
	}
	return ""
}

// parse is tbf_parse_opt: tc's words to what it sends. speedBps is the
// device's speed, for rates given in percent.
func parse(args []string, speedBps int64) (qopt, error) {
	var o qopt
	var mtu, mpu, latency uint32
	var rate64, prate64, buffer64 uint64
	var overhead uint16
	rcellLog, pcellLog := -1, -1
	linklayer := psched.LinkEthernet
	a := qdisc.NewArgs("tbf", args)
	illegal := func(k, v string, err error) error {
		return qdisc.Parsef("tbf", "illegal value for %q: %q (%v)", k, v, err)
	}
	for k := a.Next(); k != ""; k = a.Next() {
		name := word(k)
		if name == "" {
			return o, a.Unknown(k, knownOptions...)
		}
		v, err := a.Value(name)
		if err != nil {
			return o, err
		}
		switch name {
		case "limit":
			if o.limit != 0 {
				return o, qdisc.Parsef("tbf", "duplicate \"limit\" specification")
			}
			if latency != 0 {
				return o, qdisc.Parsef("tbf", "specifying both \"latency\" and \"limit\" is not allowed")
			}
			if o.limit, err = units.GetSize(v); err != nil {
				return o, illegal("limit", v, err)
			}
		case "latency":
			if latency != 0 {
				return o, qdisc.Parsef("tbf", "duplicate \"latency\" specification")
			}
			if o.limit != 0 {
				return o, qdisc.Parsef("tbf", "specifying both \"limit\" and \"latency\" is not allowed")
			}
			if latency, err = units.GetTime(v); err != nil {
				return o, illegal("latency", v, err)
			}
		case "burst":
			if buffer64 != 0 {
				return o, qdisc.Parsef("tbf", "duplicate \"buffer/burst/maxburst\" specification")
			}
			if buffer64, rcellLog, err = psched.SizeAndCell(v); err != nil {
				return o, illegal(k, v, err)
			}
		case "mtu":
			if mtu != 0 {
				return o, qdisc.Parsef("tbf", "duplicate \"mtu/minburst\" specification")
			}
			var m uint64
			if m, pcellLog, err = psched.SizeAndCell(v); err == nil && m > math.MaxUint32 {
				err = fmt.Errorf("%q is above 4294967295 bytes", v)
			}
			if err != nil {
				return o, illegal(k, v, err)
			}
			mtu = uint32(m)
		case "mpu":
			if mpu != 0 {
				return o, qdisc.Parsef("tbf", "duplicate \"mpu\" specification")
			}
			if mpu, err = units.GetSize(v); err != nil {
				return o, illegal("mpu", v, err)
			}
		case "rate", "peakrate":
			dst := &rate64
			if name == "peakrate" {
				dst = &prate64
			}
			if *dst != 0 {
				return o, qdisc.Parsef("tbf", "duplicate %q specification", name)
			}
			if strings.Contains(v, "%") {
				*dst, err = psched.PercentRate64(v, speedBps)
			} else {
				*dst, err = units.GetRate64(v)
			}
			if err != nil {
				return o, illegal(name, v, err)
			}
		case "overhead":
			if overhead != 0 {
				return o, qdisc.Parsef("tbf", "duplicate \"overhead\" specification")
			}
			n, perr := units.GetUnsigned(v, 10)
			if perr != nil || n > math.MaxUint16 {
				return o, illegal("overhead", v, fmt.Errorf("want 0 to 65535"))
			}
			overhead = uint16(n)
		case "linklayer":
			if linklayer, err = psched.Linklayer(v); err != nil {
				return o, illegal("linklayer", v, err)
			}
		}
	}

	// tc reports every missing word at once.
	var missing []string
	if rate64 == 0 {
		missing = append(missing, `the "rate" parameter is mandatory`)
	}
	if buffer64 == 0 {
		missing = append(missing, `the "burst" parameter is mandatory`)
	}
	if prate64 != 0 && mtu == 0 {
		missing = append(missing, `when "peakrate" is specified, "mtu" must also be specified`)
	}
	if o.limit == 0 && latency == 0 {
		missing = append(missing, `either "limit" or "latency" is required`)
	}
	if len(missing) > 0 {
		return o, qdisc.Parsef("tbf", "%s", strings.Join(missing, "; "))
	}

	o.rate.rate = uint32(min(rate64, math.MaxUint32))
	o.peakrate.rate = uint32(min(prate64, math.MaxUint32))
	if o.limit == 0 {
		// tc turns a latency into a byte limit: what the rate sends in
		// that time plus the bucket (or the peak rate's, if smaller).
		lim := float64(rate64)*float64(latency)/1e6 + float64(buffer64)
		if prate64 != 0 {
			lim = min(lim, float64(prate64)*float64(latency)/1e6+float64(mtu))
		}
		o.limit = uint32(min(lim, math.MaxUint32))
	}
	o.rate.mpu, o.rate.overhead = uint16(mpu), overhead
	o.rate.cellLog, o.rate.linklayer = psched.CalcCellLog(rcellLog, mtu), linklayer
	o.buffer = psched.CalcXmittime(rate64, buffer64)
	if o.buffer == math.MaxUint32 {
		return o, qdisc.Parsef("tbf", "burst out of range")
	}
	if o.peakrate.rate != 0 {
		o.peakrate.mpu, o.peakrate.overhead = uint16(mpu), overhead
		o.peakrate.cellLog, o.peakrate.linklayer = psched.CalcCellLog(pcellLog, mtu), linklayer
		o.mtu = psched.CalcXmittime(prate64, uint64(mtu))
	}
	if buffer64 < 1<<32 {
		o.burst.Put(uint32(buffer64))
	}
	if rate64 >= 1<<32 {
		o.rate64.Put(rate64)
	}
	if o.peakrate.rate != 0 {
		if prate64 >= 1<<32 {
			o.prate64.Put(prate64)
		}
		o.pburst.Put(mtu)
	}
	return o, nil
}

// config is what tbf_change works out from qopt before it commits.
type config struct {
	limit       uint32
	maxSize     uint32
	buffer, mtu int64 // ns
	rate, peak  psched.Ratecfg
}

// validate is tbf_change up to sch_tree_lock: the rates, the bucket
// sizes in ns, max_size; a refused change changes nothing.
func validate(o qopt) (config, error) {
	c := config{limit: o.limit}
	buffer := min(psched.TicksToNs(uint64(o.buffer)), math.MaxUint32)
	mtu := min(psched.TicksToNs(uint64(o.mtu)), math.MaxUint32)
	c.rate = psched.Precompute(o.rate.rate, o.rate64.V, o.rate.overhead, o.rate.mpu, o.rate.linklayer)
	var maxSize uint64
	if o.burst.Set {
		maxSize = uint64(o.burst.V)
		buffer = c.rate.L2T(o.burst.V)
	} else {
		maxSize = min(nsT2L(c.rate, buffer), math.MaxUint32)
	}
	if o.peakrate.rate != 0 {
		c.peak = psched.Precompute(o.peakrate.rate, o.prate64.V, o.peakrate.overhead, o.peakrate.mpu, o.peakrate.linklayer)
		if c.peak.RateBytesPs <= c.rate.RateBytesPs {
			return c, qdisc.Refusef("tbf", "peakrate %d is lower than or equals to rate %d ! (EINVAL)",
				c.peak.RateBytesPs, c.rate.RateBytesPs)
		}
		if o.pburst.Set {
			maxSize = min(maxSize, uint64(o.pburst.V))
			mtu = c.peak.L2T(o.pburst.V)
		} else {
			maxSize = min(maxSize, nsT2L(c.peak, mtu))
		}
	}
	if maxSize == 0 {
		return c, qdisc.Refusef("tbf", "the bucket holds no whole byte at this rate: max_size 0 (EINVAL)")
	}
	c.maxSize = uint32(maxSize)
	// With TCA_TBF_BURST the kernel keeps the ns it worked out; without
	// it, qopt's ticks as they came.
	c.buffer, c.mtu = int64(buffer), int64(mtu)
	if !o.burst.Set {
		c.buffer = int64(psched.TicksToNs(uint64(o.buffer)))
	}
	if !o.pburst.Set {
		c.mtu = int64(psched.TicksToNs(uint64(o.mtu)))
	}
	return c, nil
}

// nsT2L is psched_ns_t2l: the bytes r sends in ns, less the overhead.
func nsT2L(r psched.Ratecfg, ns uint64) uint64 {
	l := ns * r.RateBytesPs / 1e9 // a u64 product, wrapping as the kernel's does
	if r.Linklayer == psched.LinkATM {
		l = l / 53 * 48
	}
	if l > uint64(r.Overhead) {
		return l - uint64(r.Overhead)
	}
	return 0
}

// Dump implements qdisc.Qdisc: what tbf_dump sends, as tbf_print_opt
// prints it under tc -d.
func (q *TBF) Dump() string { return q.print(true) }

// print is tbf_print_opt over tbf_dump's tc_tbf_qopt: details is tc -d.
func (q *TBF) print(details bool) string {
	var b strings.Builder
	rate64 := q.cfg.rate.RateBytesPs
	buffer := uint32(psched.NsToTicks(uint64(q.cfg.buffer)))
	mtu := uint32(psched.NsToTicks(uint64(q.cfg.mtu)))
	fmt.Fprintf(&b, "rate %s ", units.SprintRate(rate64))
	burst := psched.CalcXmitsize(rate64, buffer)
	if details {
		// psched_ratecfg_getrate dumps cell_log 0: "/1".
		fmt.Fprintf(&b, "burst %s/1 mpu %s ", units.SprintSize(uint64(uint32(burst))), units.SprintSize(uint64(q.cfg.rate.Mpu)))
	} else {
		fmt.Fprintf(&b, "burst %s ", units.SprintSize(uint64(uint32(burst))))
	}
	prate64 := q.cfg.peak.RateBytesPs
	if prate64 != 0 {
		fmt.Fprintf(&b, "peakrate %s ", units.SprintRate(prate64))
		if mtu != 0 || q.cfg.peak.Mpu != 0 {
			m := uint64(uint32(psched.CalcXmitsize(prate64, mtu)))
			if details {
				fmt.Fprintf(&b, "mtu %s/1 mpu %s ", units.SprintSize(m), units.SprintSize(uint64(q.cfg.peak.Mpu)))
			} else {
				fmt.Fprintf(&b, "minburst %s ", units.SprintSize(m))
			}
		}
	}
	latency := 1e6*(float64(q.cfg.limit)/float64(rate64)) - psched.Tick2Time(float64(buffer))
	if prate64 != 0 {
		latency = max(latency, 1e6*(float64(q.cfg.limit)/float64(prate64))-psched.Tick2Time(float64(mtu)))
	}
	if latency >= 0 {
		fmt.Fprintf(&b, "lat %s ", units.SprintTime(uint32(min(latency, math.MaxUint32))))
	} else {
		fmt.Fprintf(&b, "limit %s ", units.SprintSize(uint64(q.cfg.limit)))
	}
	if q.cfg.rate.Overhead != 0 {
		fmt.Fprintf(&b, "overhead %d ", q.cfg.rate.Overhead)
	}
	if q.cfg.rate.Linklayer > psched.LinkEthernet || details {
		fmt.Fprintf(&b, "linklayer %s ", psched.LinkName(q.cfg.rate.Linklayer))
	}
	return b.String()
}
