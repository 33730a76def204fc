package cls

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// police is act_police (net/sched/act_police.c): a token bucket in ns
// of transmit time at a byte rate (with an optional peak rate over an
// MTU's worth) or at a packet rate, and the verdicts for the packets
// that conform and for those that exceed.
type police struct {
	// tcf_police_params
	exceed, conform Control // tcf_action, tcfp_result
	rate, peak      psched.Ratecfg
	pps             psched.Ratecfg // psched_ppscfg: rate_pkts_ps, mult, shift
	ratePresent     bool
	peakPresent     bool
	ppsPresent      bool
	burst, pktBurst int64 // tcfp_burst, tcfp_pkt_burst (ns)
	mtu             uint32
	mtuPtoks        int64
	// what tc sent, for the dump: the burst in ticks (tc_police.burst)
	// and the packet burst (TCA_POLICE_PKTBURST64).
	burstTicks    uint32
	pktBurstTicks uint64

	// the action's state (struct tcf_police), from the first packet's
	// clock (tcf_police_init sets tcfp_t_c when the action is made; the
	// model's Set is made without a clock, Arm gives it one).
	armed                  bool
	tC, toks, ptoks, pktok int64
	// lock is the host's tcfp_lock for this action, where CPUs run the
	// action concurrently (clsact's egress block): see ActionLocker.
	lock any
}

// ActionLocker is a classification context whose CPUs run the same
// actions concurrently: clsact's egress block, on every transmitting
// CPU. An action's own spinlock (act_police's tcfp_lock) is taken
// through it; slot is the action's place for the host's lock. Under a
// qdisc's root lock (a qdisc's filters) the spinlock is never contended
// and the context need not implement it.
type ActionLocker interface {
	LockAction(slot *any)
	UnlockAction(slot *any)
}

// policeMTUCheck is tcf_police_mtu_check at egress: qdisc_pkt_len, or
// for a GSO skb each segment (skb_gso_validate_mac_len; the model
// splits the length evenly over the segments).
func policeMTUCheck(p *skb.Packet, limit uint32) bool {
	if segs := uint32(p.GSOSegs); segs > 1 {
		return (p.Len+segs-1)/segs <= limit
	}
	return p.Len <= limit
}

// tcfPoliceAct is tcf_police_act: the verdict for p.
func (a *Action) tcfPoliceAct(ctx qdisc.Ctx, p *skb.Packet) Control {
	pol := a.pol
	ret := pol.exceed
	if policeMTUCheck(p, pol.mtu) {
		if !pol.ratePresent && !pol.ppsPresent {
			return pol.conform
		}
		now := int64(ctx.Now()) // read before the lock, as the kernel's
		locker, _ := ctx.(ActionLocker)
		if locker != nil {
			locker.LockAction(&pol.lock)
		}
		if !pol.armed {
			pol.arm(now)
		}
		var ptoks, ppstoks int64
		toks := min(now-pol.tC, pol.burst)
		if pol.peakPresent {
			ptoks = min(toks+pol.ptoks, pol.mtuPtoks) - int64(pol.peak.L2T(p.Len))
		}
		if pol.ratePresent {
			toks = min(toks+pol.toks, pol.burst) - int64(pol.rate.L2T(p.Len))
		} else if pol.ppsPresent {
			ppstoks = min(min(now-pol.tC, pol.pktBurst)+pol.pktok, pol.pktBurst) - int64(pol.pps.L2T(1))
		}
		conform := (toks | ptoks | ppstoks) >= 0
		if conform {
			pol.tC, pol.toks, pol.ptoks, pol.pktok = now, toks, ptoks, ppstoks
			ret = pol.conform
		}
		if locker != nil {
			locker.UnlockAction(&pol.lock)
		}
		if !conform {
			a.st.overlimits++ // inc_overlimits
		}
	} else {
		a.st.overlimits++ // over the MTU: inc_overlimits
	}
	if ret == ActShot {
		a.st.drops++ // inc_drops
	}
	return ret
}

// arm is the state tcf_police_init sets: the clock, a full bucket.
func (pol *police) arm(now int64) {
	pol.armed, pol.tC, pol.toks = true, now, pol.burst
	if pol.peakPresent {
		pol.ptoks = pol.mtuPtoks
	}
}

// ArmActions starts the buckets of the police actions made since the
// last call at now, the tc command's time (tcf_police_init: tcfp_t_c,
// a full bucket; a packet bucket starts empty and fills from then).
func (s *Set) ArmActions(now sim.Time) {
	s.eachAction(func(_ qdisc.ClassID, _ *proto, _ *Filter, a *Action) {
		a.arm(now)
		if a.pol != nil && !a.pol.armed {
			a.pol.arm(int64(now))
		}
	})
}

// eachAction calls fn for every action of the set, in a fixed order.
func (s *Set) eachAction(fn func(at qdisc.ClassID, tp *proto, f *Filter, a *Action)) {
	for _, at := range s.Attached() {
		for _, tp := range s.blocks[at].protos {
			for _, f := range tp.elems {
				for i := range f.Actions {
					fn(at, tp, f, &f.Actions[i])
				}
			}
		}
	}
}

// keepActions carries old's actions' state over to the same filters
// here (same block, pref, kind, handle and words): a police's bucket and
// every action's counters and times. A copy made for another filter's
// change leaves an action's state alone, as the kernel's, which belongs
// to the action.
func (s *Set) keepActions(old *Set) {
	if old == nil {
		return
	}
	for at, b := range s.blocks {
		for _, tp := range b.protos {
			for _, f := range tp.elems {
				of := old.sameFilter(at, tp, f)
				if of == nil {
					continue
				}
				for i := range f.Actions {
					a, o := &f.Actions[i], &of.Actions[i]
					a.st = o.st
					if a.pol != nil && o.pol != nil {
						p, op := a.pol, o.pol
						p.armed, p.tC, p.toks, p.ptoks, p.pktok = op.armed, op.tC, op.toks, op.ptoks, op.pktok
					}
				}
			}
		}
	}
}

// sameFilter is s's filter f stands for, made from the same words at
// the same place (block at, tp's pref and kind, f's handle), or nil.
func (s *Set) sameFilter(at qdisc.ClassID, tp *proto, f *Filter) *Filter {
	b := s.blocks[at]
	if b == nil {
		return nil
	}
	for _, otp := range b.protos {
		if otp.pref != tp.pref || otp.kind != tp.kind {
			continue
		}
		for _, of := range otp.elems {
			if of.Handle == f.Handle && slices.Equal(of.Words, f.Words) && len(of.Actions) == len(f.Actions) {
				return of
			}
		}
	}
	return nil
}

// parsePolice is act_parse_police, from the word after "police", then
// tcf_police_init's checks and what it computes.
func parsePolice(kind string, words []string) (Action, []string, error) {
	a := Action{Kind: "police"}
	pol := &police{exceed: ActReclassify} // tc's default: TC_POLICE_RECLASSIFY
	a.pol = pol
	errf := func(format string, v ...any) (Action, []string, error) {
		return a, nil, qdisc.Parsef(kind, "police: "+format, v...)
	}
	if len(words) == 0 {
		return errf("bad action parsing (police needs its parameters)")
	}
	var (
		rate64, prate64, buffer64, pps64, ppsBurst64 uint64
		avrate, mtu, mpu                             uint32
		overhead                                     uint16
		linklayer                                    = units.LinkEthernet
		rcellLog                                     = -1
		presult                                      Control
		n                                            int
	)
	next := func(w string) (string, bool) {
		if len(words) < 2 {
			return "", false
		}
		words = words[1:]
		return words[0], true
	}
	for len(words) > 0 {
		w := words[0]
		// a verdict word, unless it is a prefix of peakrate, which
		// act_parse_police tests first ("p")
		if c, ok, lacks := parseControl(w); ok && isPoliceControl(w) && !tc.Matches(w, "peakrate") {
			if lacks {
				return errf("verdict %q is not modelled", w)
			}
			pol.exceed = c
			words = words[1:]
			n++
			continue
		}
		var v string
		var ok bool
		if w != "help" && policeWord(w) {
			if v, ok = next(w); !ok {
				return errf(`%q: Command line is not complete. Try option "help"`, w)
			}
		}
		var err error
		switch {
		case tc.Matches(w, "index"):
			return a, nil, qdisc.Lacksf(kind, "police index: shared action instances are not modelled (each filter's actions are its own)")
		case tc.Matches(w, "burst") || w == "buffer" || w == "maxburst":
			if buffer64 != 0 {
				return errf(`duplicate "buffer/burst": %q is the second value.`, v)
			}
			if buffer64, rcellLog, err = psched.SizeAndCell(v); err != nil {
				return errf(`argument %q is wrong: buffer`, v)
			}
		case w == "mtu" || w == "minburst":
			if mtu != 0 {
				return errf(`duplicate "mtu/minburst": %q is the second value.`, v)
			}
			var m uint64
			if m, _, err = psched.SizeAndCell(v); err != nil || m > math.MaxUint32 {
				return errf(`argument %q is wrong: mtu`, v)
			}
			mtu = uint32(m)
		case w == "mpu":
			if mpu != 0 {
				return errf(`duplicate "mpu": %q is the second value.`, v)
			}
			if mpu, err = units.GetSize(v); err != nil {
				return errf(`argument %q is wrong: mpu`, v)
			}
		case w == "rate":
			if rate64 != 0 {
				return errf(`duplicate "rate": %q is the second value.`, v)
			}
			if rate64, err = units.GetRate64(v); err != nil {
				return errf(`argument %q is wrong: rate`, v)
			}
		case w == "avrate":
			if avrate != 0 {
				return errf(`duplicate "avrate": %q is the second value.`, v)
			}
			if avrate, err = units.GetRate(v); err != nil {
				return errf(`argument %q is wrong: avrate`, v)
			}
		case tc.Matches(w, "peakrate"):
			if prate64 != 0 {
				return errf(`duplicate "peakrate": %q is the second value.`, v)
			}
			if prate64, err = units.GetRate64(v); err != nil {
				return errf(`argument %q is wrong: peakrate`, v)
			}
		case w == "conform-exceed":
			ex, co, slash, rest, perr := parseControlSlash(words)
			if perr != "" {
				return errf("%s", perr)
			}
			pol.exceed = ex
			if slash {
				presult = co
			}
			words = rest
			n++
			continue
		case tc.Matches(w, "overhead"):
			o, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return errf(`argument %q is wrong: overhead`, v)
			}
			overhead = uint16(o)
		case tc.Matches(w, "linklayer"):
			if linklayer, err = units.Linklayer(v); err != nil {
				return errf(`argument %q is wrong: linklayer`, v)
			}
		case tc.Matches(w, "pkts_rate"):
			if pps64 != 0 {
				return errf(`duplicate "pkts_rate": %q is the second value.`, v)
			}
			if pps64, err = strconv.ParseUint(v, 10, 64); err != nil {
				return errf(`argument %q is wrong: pkts_rate`, v)
			}
		case tc.Matches(w, "pkts_burst"):
			if ppsBurst64 != 0 {
				return errf(`duplicate "pkts_burst": %q is the second value.`, v)
			}
			if ppsBurst64, err = strconv.ParseUint(v, 10, 64); err != nil {
				return errf(`argument %q is wrong: pkts_burst`, v)
			}
		case w == "help":
			return errf("help: Usage: ... police [ rate BPS burst BYTES[/BYTES] ] [ pkts_rate RATE pkts_burst PACKETS ] [ mtu BYTES[/BYTES] ] [ peakrate BPS ] [ avrate BPS ] [ overhead BYTES ] [ linklayer TYPE ] [ conform-exceed EXCEEDACT[/NOTEXCEEDACT] ]")
		default:
			goto done
		}
		words = words[1:]
		n++
	}
done:
	switch {
	case n == 0:
		return errf("bad action parsing (%q is not a police parameter)", firstWord(words))
	case rate64 != 0 && avrate != 0:
		return errf("bad action parsing (rate and avrate in one police)")
	case rate64 == 0 && avrate == 0 && mtu == 0 && pps64 == 0:
		return errf("'rate' or 'avrate' or 'mtu' or 'pkts_rate' MUST be specified.")
	case rate64 != 0 && buffer64 == 0:
		return errf("'burst' requires 'rate'.")
	case pps64 != 0 && ppsBurst64 == 0:
		return errf("'pkts_burst' requires 'pkts_rate'.")
	case pps64 != 0 && rate64 != 0:
		return errf("'rate' and 'pkts_rate' are not allowed in same action.")
	case prate64 != 0 && rate64 == 0:
		return errf("'peakrate' requires 'rate'.")
	case prate64 != 0 && mtu == 0:
		return errf("'mtu' is required, if 'peakrate' is requested.")
	case avrate != 0:
		// tcf_police_init: TCA_POLICE_AVRATE needs the action's rate
		// estimator, which only tc filter's "estimator" makes.
		return a, nil, errKernel("RTNETLINK answers: Invalid argument (police avrate needs a rate estimator: tc filter ... estimator, not modelled)")
	}
	if rate64 != 0 {
		pol.burstTicks = psched.CalcXmittime(rate64, buffer64)
		if pol.burstTicks == math.MaxUint32 {
			return errf("POLICE: burst out of range")
		}
		cellLog := psched.CalcCellLog(rcellLog, mtu)
		pol.rate = psched.Precompute(uint32(min(rate64, math.MaxUint32)), rate64, overhead, uint16(mpu), linklayer)
		pol.ratePresent = true
		// tcf_police_init: no mtu is 255 cells of the rate table
		pol.mtu = 255 << cellLog
		if prate64 != 0 {
			pol.peak = psched.Precompute(uint32(min(prate64, math.MaxUint32)), prate64, overhead, uint16(mpu), linklayer)
			pol.peakPresent = true
		}
	} else {
		pol.mtu = math.MaxUint32
	}
	if mtu != 0 {
		pol.mtu = mtu
	}
	pol.burst = int64(psched.TicksToNs(uint64(pol.burstTicks)))
	if pol.peakPresent {
		pol.mtuPtoks = int64(pol.peak.L2T(pol.mtu))
	}
	if pps64 != 0 {
		pol.ppsPresent = true
		pol.pktBurstTicks = uint64(psched.CalcXmittime(pps64, ppsBurst64))
		pol.pktBurst = int64(psched.TicksToNs(pol.pktBurstTicks))
		pol.pps = psched.Precompute(0, pps64, 0, 0, units.LinkUnaware)
	}
	pol.conform = presult
	return a, words, nil
}

// errOldPolice refuses a filter's own "police" where it is not
// modelled (flow's TCA_FLOW_POLICE).
func errOldPolice(kind string) error {
	return qdisc.Lacksf(kind, `a flow filter's own "police" (TCA_FLOW_POLICE) is not modelled: write "action police ..."`)
}

// parseOldPolice is a u32 or fw filter's "police" (parse_police into
// TCA_*_POLICE): the words after it, as act_parse_police reads them.
func parseOldPolice(kind string, words []string, f *Filter, s *Set) ([]string, error) {
	a, rest, err := parsePolice(kind, words)
	if err != nil {
		return nil, err
	}
	a.Index = s.nextActionIndex("police")
	f.oldPolice = &a
	return rest, nil
}

// takeOldPolice is tcf_exts_validate_ex with a police attribute: the
// compat police is the filter's one action, whatever "action" gave.
func (f *Filter) takeOldPolice() {
	if f.oldPolice != nil {
		f.Actions = []Action{*f.oldPolice}
		f.oldPolice = &f.Actions[0]
	}
}

// policeWord is whether w is a police parameter that takes a value.
func policeWord(w string) bool {
	switch {
	case tc.Matches(w, "index"), tc.Matches(w, "burst"), w == "buffer", w == "maxburst", w == "mtu", w == "minburst",
		w == "mpu", w == "rate", w == "avrate", tc.Matches(w, "peakrate"), tc.Matches(w, "overhead"),
		tc.Matches(w, "linklayer"), tc.Matches(w, "pkts_rate"), tc.Matches(w, "pkts_burst"):
		return true
	}
	return false
}

// isPoliceControl is act_parse_police's test for a bare verdict word
// (matches() against each verdict it accepts there).
func isPoliceControl(w string) bool {
	for _, v := range []string{"reclassify", "drop", "shot", "continue", "pass", "ok", "pipe", "goto"} {
		if tc.Matches(w, v) {
			return true
		}
	}
	return false
}

func firstWord(words []string) string {
	if len(words) == 0 {
		return ""
	}
	return words[0]
}

// parseControlSlash is parse_action_control_slash from the word after
// "conform-exceed": "EXCEED/CONFORM" in one word, or EXCEED [/ CONFORM]
// in words; slash says whether a conform verdict was given. errText is
// tc's complaint.
func parseControlSlash(words []string) (exceed, conform Control, slash bool, rest []string, errText string) {
	if len(words) < 2 {
		return 0, 0, false, nil, `"conform-exceed": Command line is not complete. Try option "help"`
	}
	words = words[1:]
	verdict := func(w string) (Control, string) {
		if n, err := strconv.ParseInt(w, 10, 32); err == nil {
			// action_a2n with allow_num: a number is the verdict itself
			switch c := Control(n); {
			case c >= ActUnspec && c <= ActPipe:
				return c, ""
			case c > ActPipe && c <= 8: // TC_ACT_STOLEN .. TC_ACT_TRAP
				return 0, fmt.Sprintf("verdict %d is not modelled", n)
			}
			return 0, fmt.Sprintf("RTNETLINK answers: Invalid argument (%d is no control action)", n)
		}
		c, ok, lacks := parseControl(w)
		switch {
		case !ok:
			return 0, fmt.Sprintf("Bad action type %s", w)
		case lacks:
			return 0, fmt.Sprintf("verdict %q is not modelled", w)
		}
		return c, ""
	}
	if ex, co, ok := strings.Cut(words[0], "/"); ok {
		if exceed, errText = verdict(ex); errText == "" {
			conform, errText = verdict(co)
		}
		return exceed, conform, true, words[1:], errText
	}
	if exceed, errText = verdict(words[0]); errText != "" {
		return
	}
	words = words[1:]
	if len(words) == 0 || words[0] != "/" {
		return exceed, 0, false, words, ""
	}
	if len(words) < 2 {
		return 0, 0, false, nil, `"/": Command line is not complete. Try option "help"`
	}
	conform, errText = verdict(words[1])
	return exceed, conform, true, words[2:], errText
}

// printPolice is print_police within a filter's action list.
func (pol *police) print(b *strings.Builder, index uint32, tm string) {
	fmt.Fprintf(b, " police %#x ", index)
	rate := pol.rate.RateBytesPs
	fmt.Fprintf(b, "rate %s burst %s mtu %s ", units.SprintRate(rate), units.SprintSize(psched.CalcXmitsize(rate, pol.burstTicks)), units.SprintSize(uint64(pol.mtu)))
	if pol.peakPresent {
		fmt.Fprintf(b, "peakrate %s ", units.SprintRate(pol.peak.RateBytesPs))
	}
	if pol.ppsPresent {
		fmt.Fprintf(b, "pkts_rate %d pkts_burst %d ", pol.pps.RateBytesPs, psched.CalcXmitsize(pol.pps.RateBytesPs, uint32(pol.pktBurstTicks)))
	}
	fmt.Fprintf(b, "action %s", pol.exceed)
	if pol.conform != ActOK { // TCA_POLICE_RESULT is dumped when not 0
		fmt.Fprintf(b, "/%s ", pol.conform)
	} else {
		b.WriteString(" ")
	}
	fmt.Fprintf(b, "overhead %s ", units.SprintSize(uint64(pol.rate.Overhead)))
	if pol.rate.Linklayer > units.LinkEthernet {
		fmt.Fprintf(b, "linklayer %s ", units.LinkName(pol.rate.Linklayer))
	}
	fmt.Fprintf(b, "\n\tref 1 bind 1 %s\n", tm)
}
