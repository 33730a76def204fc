package cls

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// Control is a tc action verdict (TC_ACT_*, include/uapi/linux/pkt_cls.h).
type Control int32

// The verdicts the modelled actions give.
const (
	ActUnspec     Control = -1 // TC_ACT_UNSPEC, "continue": the filter did not decide
	ActOK         Control = 0  // TC_ACT_OK, "pass"
	ActReclassify Control = 1  // TC_ACT_RECLASSIFY: classify again from the block's first filter
	ActShot       Control = 2  // TC_ACT_SHOT, "drop"
	ActPipe       Control = 3  // TC_ACT_PIPE, "pipe": on to the next action
	ActStolen     Control = 4  // TC_ACT_STOLEN: an action took the packet (mirred's redirect)
)

// controlNames is action_n2a's table for the modelled verdicts.
var controlNames = map[Control]string{ActUnspec: "continue", ActOK: "pass", ActReclassify: "reclassify", ActShot: "drop", ActPipe: "pipe", ActStolen: "stolen"}

func (c Control) String() string {
	if s, ok := controlNames[c]; ok {
		return s
	}
	return fmt.Sprintf("%d", int32(c))
}

// a2n is action_a2n's table, in its order: a word names the first
// verdict it is a prefix of ("p" is pass, "pi" pipe). The bool marks the
// verdicts txlab models. "stolen" is not among them: tc has no word for
// it.
var a2n = []struct {
	name    string
	c       Control
	modeled bool
}{
	{"continue", ActUnspec, true}, {"drop", ActShot, true}, {"shot", ActShot, true},
	{"pass", ActOK, true}, {"ok", ActOK, true}, {"reclassify", ActReclassify, true},
	{"pipe", ActPipe, true}, {"goto", 0, false}, {"jump", 0, false}, {"trap", 0, false},
}

// parseControl is action_a2n: a verdict by name or a prefix of one. ok
// is false for a word that names no verdict; lacks is set for verdicts
// tc knows that txlab does not model.
func parseControl(w string) (c Control, ok bool, lacks bool) {
	for _, e := range a2n {
		if tc.Matches(w, e.name) {
			return e.c, true, !e.modeled
		}
	}
	return 0, false, false
}

// Action is one action bound to a filter: gact (a verdict alone),
// skbedit (priority, mark, queue_mapping), police (a token bucket) or
// mirred (to another device).
type Action struct {
	Kind    string // "gact", "skbedit", "police" or "mirred"
	Control Control
	Index   uint32
	Flags   uint32 // TCA_ACT_FLAGS_*: skip_hw

	// gact's random verdict (CONFIG_GACT_PROB): PAction instead of
	// Control for one packet in PVal, drawn (netrand) or counted
	// (determ: every PVal-th).
	RandType uint8 // PGACT_NONE, PGACT_NETRAND, PGACT_DETERM
	PAction  Control
	PVal     uint16
	packets  uint32 // gact->packets, determ's count

	// skbedit
	SetQueue    bool   // queue_mapping: on the transmit side only
	Queue       uint16 // skb->queue_mapping to set
	SetPriority bool
	Priority    uint32
	SetMark     bool
	Mark, Mask  uint32
	MaskSet     bool

	pol *police // police's parameters and bucket
	mir *mirred // mirred's target

	st actStats // tc -s filter show's counters and times
}

// actStats are an action's tcf_tm and its counters (cpu_bstats,
// cpu_qstats): what `tc -s filter show` prints under it.
type actStats struct {
	bytes, packets    uint64
	drops, overlimits uint64
	// install, lastUse and firstUse are tcf_tm's (the time of the
	// filter's add, of the last packet, of the first; firstUse 0 until
	// one).
	install, lastUse, firstUse sim.Time
}

// use is tcf_lastuse_update and bstats_update for p: qdisc_pkt_len and
// a GSO skb's segments.
func (a *Action) use(ctx qdisc.Ctx, p *skb.Packet) {
	now := ctx.Now()
	a.st.lastUse = now
	if a.st.firstUse == 0 {
		a.st.firstUse = now
	}
	a.st.bytes += uint64(p.Len)
	a.st.packets += uint64(max(p.GSOSegs, 1))
}

// arm is tcf_idr_create's tcf_tm: installed, and last used, now.
func (a *Action) arm(now sim.Time) {
	if a.st.install == 0 {
		a.st.install, a.st.lastUse = now, now
	}
}

// gact's random types (PGACT_*, include/uapi/linux/tc_act/tc_gact.h).
const (
	pgactNone = iota
	pgactNetrand
	pgactDeterm
)

var pgactNames = [...]string{"none", "netrand", "determ"}

// exec is the action's act(): it may edit p, and says what comes next.
// Each counts itself as its kernel function does: every packet
// (bstats), a gact's drops, a police's overlimits and drops, mirred's
// failures as overlimits.
func (a *Action) exec(ctx qdisc.Ctx, p *skb.Packet) Control {
	if a.mir != nil {
		return a.tcfMirredAct(ctx, p) // counts once past its nest check
	}
	a.use(ctx, p)
	if a.pol != nil {
		return a.tcfPoliceAct(ctx, p)
	}
	if a.Kind == "gact" {
		c := a.gactVerdict(ctx)
		if c == ActShot {
			a.st.drops++ // tcf_action_inc_drop_qstats
		}
		return c
	}
	if a.SetPriority {
		p.Priority = a.Priority // tcf_skbedit_act: skb->priority = params->priority
	}
	if a.SetQueue {
		// only on a device with more queues than the mapping: at tc
		// egress the queue pick is skipped (netdev_xmit_skip_txqueue)
		if e, ok := ctx.(EgressCtx); ok && e.RealNumTxQueues() > int(a.Queue) {
			e.SkipTxQueue()
			p.Queue = a.Queue
		}
	}
	if a.SetMark {
		mask := uint32(0xFFFFFFFF)
		if a.MaskSet {
			mask = a.Mask
		}
		p.Mark = p.Mark&^mask | a.Mark&mask // skb->mark &= ~mask; skb->mark |= mark & mask
	}
	return a.Control
}

// gactVerdict is tcf_gact_act's verdict: the action's, or for one packet
// in PVal its random verdict.
func (a *Action) gactVerdict(ctx qdisc.Ctx) Control {
	switch a.RandType {
	case pgactNetrand: // gact_net_rand
		if qdisc.RandBelow(ctx, uint32(a.PVal)) != 0 {
			return a.Control
		}
		return a.PAction
	case pgactDeterm: // gact_determ
		a.packets++
		if a.packets%uint32(a.PVal) != 0 {
			return a.Control
		}
		return a.PAction
	}
	return a.Control
}

// EgressCtx is a context on the transmit side, where skbedit's
// queue_mapping acts: clsact's egress block (sch_handle_egress, run by
// the host before the TX queue is picked, which the mapping then
// skips) and a qdisc's filters (whose edit the skb leaves on).
type EgressCtx interface {
	// RealNumTxQueues is skb->dev->real_num_tx_queues.
	RealNumTxQueues() int
	// SkipTxQueue is netdev_xmit_skip_txqueue(true): the queue the
	// action set is the one __dev_queue_xmit uses.
	SkipTxQueue()
}

// execActions is tcf_action_exec: each action in order while they pipe.
func execActions(ctx qdisc.Ctx, acts []Action, p *skb.Packet) Control {
	ret := ActOK
	for i := range acts {
		ret = acts[i].exec(ctx, p)
		if ret != ActPipe {
			break
		}
	}
	return ret
}

// tcActionKinds are the actions tc has an action_util for besides gact
// and skbedit (built in or m_xt.so): get_action_kind finds them.
var tcActionKinds = map[string]bool{
	"mpls": true, "nat": true, "pedit": true, "ife": true, "skbmod": true,
	"csum": true, "simple": true, "vlan": true, "connmark": true, "ctinfo": true, "bpf": true,
	"tunnel_key": true, "sample": true, "ct": true, "gate": true, "xt": true, "ipt": true,
}

// newCmd is m_action.c's new_cmd: a word that starts another command.
func newCmd(w string) bool {
	return tc.Matches(w, "change") || tc.Matches(w, "replace") || tc.Matches(w, "delete") || tc.Matches(w, "get") || tc.Matches(w, "add")
}

// Action flags (TCA_ACT_FLAGS_*).
const actSkipHW = 1 << 1 // TCA_ACT_FLAGS_SKIP_HW

// parseActions is parse_action, from the word after the filter's
// "action": it takes every word as an action (a verdict is gact's, a
// name the kind's, any other word gact's too, as get_action_kind falls
// back to gact and parse_gact reads it as a verdict) until "classid" or
// "flowid" (exact), a word of new_cmd, or the end; a further "action"
// may stand between actions. After each action its own words: cookie,
// hw_stats, no_percpu, then skip_sw / skip_hw (twice, either order) as
// the action's flags. It returns the actions and the words left for the
// filter's parser.
func parseActions(kind string, words []string, s *Set) ([]Action, []string, error) {
	if len(words) == 0 {
		// the filter's NEXT_ARG after "action"
		return nil, nil, qdisc.Parsef(kind, `"action": Command line is not complete`)
	}
	var out []Action
	eap := false // parse_action's "expect action parameters"
	for len(words) > 0 {
		w := words[0]
		if w == "action" {
			eap = true
			words = words[1:]
			continue
		}
		if w == "flowid" || w == "classid" || newCmd(w) {
			break
		}
		if w == "help" {
			return nil, nil, qdisc.Parsef(kind, `Illegal "action": help`)
		}
		eap = false
		var a Action
		var err error
		_, verdict, _ := parseControl(w)
		switch {
		case verdict:
			a, words, err = parseGact(kind, words)
		case w == "skbedit":
			a, words, err = parseSkbedit(kind, words[1:])
		case w == "gact":
			a, words, err = parseGact(kind, words[1:])
		case w == "police":
			a, words, err = parsePolice(kind, words[1:])
		case w == "mirred":
			a, words, err = parseMirred(kind, words[1:], s)
		case tcActionKinds[w]:
			return nil, nil, qdisc.Lacksf(kind, "action %q is not modelled (txlab has police, mirred, skbedit and gact: drop, pass, pipe, continue, reclassify)", w)
		default:
			a, words, err = parseGact(kind, words)
		}
		if err != nil {
			return nil, nil, err
		}
		if len(words) > 0 && (words[0] == "cookie" || tc.Matches(words[0], "hw_stats") || words[0] == "no_percpu") {
			return nil, nil, qdisc.Lacksf(kind, "action %s is not modelled", words[0])
		}
		for range 2 {
			if len(words) > 0 && words[0] == "skip_sw" {
				return nil, nil, qdisc.Lacksf(kind, "action skip_sw: an action in hardware only does not run in the software path txlab models")
			}
			if len(words) > 0 && words[0] == "skip_hw" {
				a.Flags |= actSkipHW
				words = words[1:]
			}
		}
		a.Index = s.nextActionIndex(a.Kind)
		out = append(out, a)
	}
	if eap {
		return nil, nil, qdisc.Parsef(kind, `Illegal "action": bad action empty (an action kind or verdict is needed after "action")`)
	}
	return out, words, nil
}

// checkActionFlags is tcf_action_init's check of a bound action's flags
// against its filter's: an action may not be skip_hw (or skip_sw)
// unless its filter is (fw passes no filter flags: never).
func checkActionFlags(f *Filter) error {
	for _, a := range f.Actions {
		if a.Flags&actSkipHW != 0 && f.Flags&flagSkipHW == 0 {
			return errKernel("Error: Mismatch between action and filter offload flags.")
		}
	}
	return nil
}

// parseGact is parse_gact: a verdict, then an optional index.
func parseGact(kind string, words []string) (Action, []string, error) {
	a := Action{Kind: "gact"}
	if len(words) == 0 {
		return a, nil, qdisc.Parsef(kind, `gact: a verdict is needed (drop, pass, pipe, continue)`)
	}
	if tc.Matches(words[0], "index") {
		// parse_gact binds an existing action by index
		_, err := skipIndex(kind, "gact", words)
		return a, nil, err
	}
	c, ok, lacks := parseControl(words[0])
	switch {
	case lacks:
		return a, nil, qdisc.Lacksf(kind, "gact verdict %q is not modelled", words[0])
	case !ok:
		// parse_action_control's message; parse_gact then exits with
		// its usage.
		return a, nil, qdisc.Parsef(kind, "Bad action type %s", words[0])
	}
	a.Control = c
	words = words[1:]
	if len(words) > 0 && tc.Matches(words[0], "random") {
		// random TYPE VERDICT VAL
		if len(words) < 2 {
			return a, nil, qdisc.Parsef(kind, `gact: Illegal "random type"`)
		}
		switch {
		case tc.Matches(words[1], "netrand"):
			a.RandType = pgactNetrand
		case tc.Matches(words[1], "determ"):
			a.RandType = pgactDeterm
		default:
			return a, nil, qdisc.Parsef(kind, `gact: Illegal "random type" %q`, words[1])
		}
		if len(words) < 4 {
			return a, nil, qdisc.Parsef(kind, "gact: random %s needs a verdict and a value", words[1])
		}
		pc, ok, lacks := parseControl(words[2])
		switch {
		case lacks:
			return a, nil, qdisc.Lacksf(kind, "gact verdict %q is not modelled", words[2])
		case !ok:
			return a, nil, qdisc.Parsef(kind, "Bad action type %s", words[2])
		}
		v, err := units.GetUnsigned(words[3], 10)
		if err != nil || v > 0xFFFF {
			return a, nil, qdisc.Parsef(kind, "gact: Illegal probability val %q", words[3])
		}
		if v > 10000 {
			return a, nil, qdisc.Parsef(kind, "gact: Illegal probability val  0x%x", v)
		}
		// tcf_gact_init: a value of 0 acts as 1.
		a.PAction, a.PVal = pc, uint16(max(v, 1))
		words = words[4:]
	}
	words, err := skipIndex(kind, "gact", words)
	return a, words, err
}

// parseSkbedit is parse_skbedit for priority and mark, then the
// verdict (default pipe) and an optional index.
func parseSkbedit(kind string, words []string) (Action, []string, error) {
	a := Action{Kind: "skbedit", Control: ActPipe}
	n := 0
	for len(words) > 0 {
		w := words[0]
		switch {
		case tc.Matches(w, "priority"):
			if len(words) < 2 {
				return a, nil, qdisc.Parsef(kind, `skbedit: "priority" needs a value`)
			}
			h, ok := tc.ParseClassID(words[1])
			if !ok {
				return a, nil, qdisc.Parsef(kind, "skbedit: Illegal priority %q", words[1])
			}
			a.SetPriority, a.Priority = true, uint32(h)
			words = words[2:]
			n++
		case tc.Matches(w, "mark"):
			if len(words) < 2 {
				return a, nil, qdisc.Parsef(kind, `skbedit: "mark" needs a value`)
			}
			v, m, slash := strings.Cut(words[1], "/")
			mark, err := units.GetUnsigned(v, 0)
			if err != nil {
				return a, nil, qdisc.Parsef(kind, "skbedit: Illegal mark %q", words[1])
			}
			a.SetMark, a.Mark = true, mark
			if slash {
				mask, err := units.GetUnsigned(m, 0)
				if err != nil {
					return a, nil, qdisc.Parsef(kind, "skbedit: Illegal mask %q", words[1])
				}
				a.Mask, a.MaskSet = mask, true
			}
			words = words[2:]
			n++
		case tc.Matches(w, "queue_mapping"):
			if len(words) < 2 {
				return a, nil, qdisc.Parsef(kind, `skbedit: "queue_mapping" needs a value`)
			}
			q, err := units.GetUnsigned(words[1], 10)
			if err != nil || q > 65535 {
				return a, nil, qdisc.Parsef(kind, "skbedit: Illegal queue_mapping %q", words[1])
			}
			a.SetQueue, a.Queue = true, uint16(q)
			words = words[2:]
			n++
		case tc.Matches(w, "ptype") || tc.Matches(w, "inheritdsfield"):
			return a, nil, qdisc.Lacksf(kind, "skbedit %s is not modelled (queue_mapping, priority and mark are)", w)
		default:
			goto done
		}
	}
done:
	if n == 0 {
		return a, nil, qdisc.Parsef(kind, "skbedit: nothing to edit (queue_mapping N, priority CLASSID or mark MARK[/MASK])")
	}
	if len(words) > 0 {
		if c, ok, lacks := parseControl(words[0]); ok {
			if lacks {
				return a, nil, qdisc.Lacksf(kind, "verdict %q is not modelled", words[0])
			}
			a.Control = c
			words = words[1:]
		}
	}
	words, err := skipIndex(kind, "skbedit", words)
	return a, words, err
}

// skipIndex reads an action's "index N": shared action instances are not
// modelled, so an index is refused.
func skipIndex(kind, act string, words []string) ([]string, error) {
	if len(words) > 0 && tc.Matches(words[0], "index") {
		return nil, qdisc.Lacksf(kind, "%s index: shared action instances are not modelled (each filter's actions are its own)", act)
	}
	return words, nil
}

// print is the action as tc_print_action prints it within a filter:
// "\n\taction order N: ...", its index line, and with stats (`tc -s`)
// print_tm's times on that line and tc_print_one_action's "Action
// statistics" under it.
func (a *Action) print(b *strings.Builder, order int, stats *Dump) {
	fmt.Fprintf(b, "\n\taction order %d: ", order)
	switch a.Kind {
	case "police":
		a.pol.print(b, a.Index, a.tm(stats)) // its own index and ref lines
	case "mirred":
		a.mir.print(b, a.Control, a.Index, a.tm(stats))
	case "gact":
		fmt.Fprintf(b, "gact action %s", a.Control)
		if a.RandType == pgactNone {
			b.WriteString("\n\t random type none pass val 0")
		} else {
			fmt.Fprintf(b, "\n\t random type %s %s val %d", pgactNames[a.RandType], a.PAction, a.PVal)
		}
		fmt.Fprintf(b, "\n\t index %d ref 1 bind 1%s\n", a.Index, a.tm(stats))
	case "skbedit":
		b.WriteString("skbedit ")
		if a.SetQueue {
			fmt.Fprintf(b, "queue_mapping %d", a.Queue)
		}
		if a.SetPriority {
			fmt.Fprintf(b, " priority %s", qdisc.ClassID(a.Priority))
		}
		if a.SetMark {
			fmt.Fprintf(b, " mark %d", a.Mark)
			if a.MaskSet {
				fmt.Fprintf(b, "/%#x", a.Mask)
			}
		}
		fmt.Fprintf(b, " %s", a.Control)
		fmt.Fprintf(b, "\n\t index %d ref 1 bind 1%s\n", a.Index, a.tm(stats))
	}
	if stats != nil {
		// print_tcstats2_attr with the "\t" prefix: basic and queue
		// stats (an action holds no backlog)
		fmt.Fprintf(b, "\tAction statistics:\n\tSent %d bytes %d pkt (dropped %d, overlimits %d requeues 0) \n\tbacklog 0b 0p requeues 0\n",
			a.st.bytes, a.st.packets, a.st.drops, a.st.overlimits)
	}
}

// Dump is what `tc -s filter show` adds: the time of the dump, for the
// actions' tcf_tm.
type Dump struct {
	Now sim.Time
}

// userHZ is USER_HZ, the clock_t tick tcf_tm_dump converts jiffies to.
const userHZ = 100

// tm is print_tm of the action's tcf_tm at d's time, as tcf_tm_dump
// gives it (jiffies since each, in clock_t) and tc prints it (whole
// seconds; a zero tick count not at all); "" without stats.
func (a *Action) tm(d *Dump) string {
	if d == nil {
		return ""
	}
	ticks := func(t sim.Time) int64 { // jiffies_to_clock_t(jiffies - t)
		return (int64(d.Now/sim.Jiffy) - int64(t/sim.Jiffy)) * userHZ / int64(sim.Second/sim.Jiffy)
	}
	var b strings.Builder
	if t := ticks(a.st.install); t != 0 {
		fmt.Fprintf(&b, " installed %d sec", t/userHZ)
	}
	if t := ticks(a.st.lastUse); t != 0 {
		fmt.Fprintf(&b, " used %d sec", t/userHZ)
	}
	if a.st.firstUse != 0 {
		if t := ticks(a.st.firstUse); t != 0 {
			fmt.Fprintf(&b, " firstused %d sec", t/userHZ)
		}
	}
	return b.String()
}

// EditsQueue reports whether a filter's words give an skbedit action a
// queue_mapping, which the kernel refuses on a receive block (the
// ingress one: "hardware only").
func EditsQueue(words []string) bool {
	in := false
	for _, w := range words {
		switch {
		case w == "action":
			in = false
		case w == "skbedit":
			in = true
		case in && tc.Matches(w, "queue_mapping"):
			return true
		}
	}
	return false
}
