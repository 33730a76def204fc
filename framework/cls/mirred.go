package cls

import (
	"fmt"
	"slices"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// Eaction is a mirred action's TCA_*_REDIR / TCA_*_MIRROR
// (include/uapi/linux/tc_act/tc_mirred.h).
type Eaction uint8

// The mirred eactions.
const (
	EgressRedir   Eaction = 1 // TCA_EGRESS_REDIR
	EgressMirror  Eaction = 2 // TCA_EGRESS_MIRROR
	IngressRedir  Eaction = 3 // TCA_INGRESS_REDIR
	IngressMirror Eaction = 4 // TCA_INGRESS_MIRROR
)

// Redirect says the eaction takes the packet away (tcf_mirred_is_act_redirect).
func (e Eaction) Redirect() bool { return e == EgressRedir || e == IngressRedir }

// String is mirred_n2a's name.
func (e Eaction) String() string {
	switch e {
	case EgressRedir:
		return "Egress Redirect"
	case EgressMirror:
		return "Egress Mirror"
	case IngressRedir:
		return "Ingress Redirect"
	case IngressMirror:
		return "Ingress Mirror"
	}
	return "unknown"
}

// mirred is act_mirred's tcf_mirred: where the packet goes, and the
// host's handle on that device (resolved at the first packet).
type mirred struct {
	eaction Eaction
	dev     string
	target  any
}

// MirredResult is what the host made of a mirred action
// (tcf_mirred_act's paths past its nest check).
type MirredResult uint8

// The outcomes of Redirector.Mirred.
const (
	// MirredSent: the packet (redirect) or its clone (mirror) went to
	// the target device.
	MirredSent MirredResult = iota
	// MirredFailed: the target was already on this CPU's mirred stack
	// (a loop: "tc mirred: loop on device"): a redirect's packet is
	// shot, a mirror sends nothing and goes on.
	MirredFailed
)

// Redirector is the host's side of mirred, implemented by the context
// of a clsact or ingress block. MirredNestFull is tcf_mirred_act's
// first check: this CPU's sched_mirred_nest at MIRRED_NEST_LIMIT
// ("Packet exceeded mirred recursion limit"). Mirred is the rest: the
// loop check, then tcf_mirred_to_dev (the skb, or a clone, out of the
// target's __dev_queue_xmit, nested on this CPU). p is the packet as
// the actions before this one left it; target is the action's slot for
// the host's device (nil until the host fills it).
type Redirector interface {
	MirredNestFull() bool
	Mirred(dev string, target *any, e Eaction, p *skb.Packet) MirredResult
}

// tcfMirredAct is tcf_mirred_act: shot at the nest limit, else counted
// and sent; then the action's verdict: a redirect steals the packet
// (TC_ACT_STOLEN, or shot when it could not be sent), a mirror gives
// its own control (pipe by default).
func (a *Action) tcfMirredAct(ctx qdisc.Ctx, p *skb.Packet) Control {
	m := a.mir
	r, ok := ctx.(Redirector)
	if !ok {
		// parseMirred refuses mirred where no host redirects (a
		// qdisc's filters, in its plugin)
		panic("cls: mirred classified without a Redirector")
	}
	if r.MirredNestFull() {
		return ActShot
	}
	a.use(ctx, p)
	if r.Mirred(m.dev, &m.target, m.eaction, p) == MirredFailed {
		a.st.overlimits++ // tcf_action_inc_overlimit_qstats
		if m.eaction.Redirect() {
			return ActShot
		}
		return a.Control
	}
	if m.eaction.Redirect() {
		return ActStolen
	}
	return a.Control
}

// parseMirred is m_mirred.c's parse_mirred and parse_direction, from
// the word after "mirred": DIRECTION ACTION dev NAME, then a mirror's
// optional verdict. The device must be one the host has (tc's
// ll_name_to_index). Only clsact's and the ingress qdisc's blocks run
// mirred in the model (s.devices set); an index, a block target and an
// ingress direction are not modelled.
func parseMirred(kind string, words []string, s *Set) (Action, []string, error) {
	a := Action{Kind: "mirred"}
	m := &mirred{}
	a.mir = m
	const usage = "Usage: mirred <DIRECTION> <ACTION> [index INDEX] <TARGET>"
	incomplete := qdisc.Parsef(kind, `mirred: Command line is not complete. Try option "help"`)
	if len(words) == 0 {
		return a, nil, incomplete
	}
	switch w := words[0]; {
	case tc.Matches(w, "index"):
		_, err := skipIndex(kind, "mirred", words)
		return a, nil, err
	case tc.Matches(w, "egress"), tc.Matches(w, "ingress"):
	case tc.Matches(w, "help"):
		return a, nil, qdisc.Parsef(kind, "mirred: %s", usage)
	default:
		return a, nil, qdisc.Parsef(kind, "mirred option not supported %s", w)
	}
	var egress, ingress, mirror, redir bool
	dev := ""
loop:
	for len(words) > 0 {
		w := words[0]
		switch {
		case tc.Matches(w, "action"):
			if len(words) < 2 {
				return a, nil, incomplete
			}
			words = words[1:]
			break loop
		case (!egress && tc.Matches(w, "egress")) || (!ingress && tc.Matches(w, "ingress")):
			switch { // the word's direction first
			case egress:
				return a, nil, qdisc.Parsef(kind, "mirred: Can't have both ingress and egress")
			case ingress:
				return a, nil, qdisc.Parsef(kind, "mirred: Can't have both egress and ingress")
			}
			egress = tc.Matches(w, "egress") // "e..." or "i...": never both
			ingress = !egress
		case tc.Matches(w, "index"):
			_, err := skipIndex(kind, "mirred", words)
			return a, nil, err
		case (!mirror && tc.Matches(w, "mirror")) || (!redir && tc.Matches(w, "redirect")):
			if mirror || redir {
				return a, nil, qdisc.Parsef(kind, "mirred: Can't have both mirror and redir")
			}
			mirror = tc.Matches(w, "mirror") // "m..." or "r...": never both
			redir = !mirror
			m.eaction, a.Control = mirredEaction(ingress, redir)
		case redir || mirror:
			if w == "blockid" {
				return a, nil, qdisc.Lacksf(kind, "mirred blockid: a block shared by devices is not modelled (name the device: dev NAME)")
			}
			if tc.Matches(w, "dev") {
				if len(words) < 2 {
					return a, nil, incomplete
				}
				dev, words = words[1], words[2:]
			}
			break loop
		}
		if len(words) < 2 {
			return a, nil, incomplete // the loop's NEXT_ARG
		}
		words = words[1:]
	}
	if ingress {
		return a, nil, qdisc.Lacksf(kind, "mirred ingress: a packet sent into a device's receive path is not modelled (egress redirect and mirror are: mirred egress redirect dev ifb0)")
	}
	if !s.redirects() {
		return a, nil, qdisc.Lacksf(kind, "mirred on a qdisc's filters is not modelled (they run in its plugin, which sends nowhere): attach it to clsact's or the ingress qdisc's block")
	}
	if dev != "" && !s.devices(dev) {
		return a, nil, qdisc.Parsef(kind, "Cannot find device %q", dev)
	}
	if mirror && len(words) > 0 {
		// parse_action_control_dflt: a verdict word, if one
		if c, isVerdict, lacks := parseControl(words[0]); isVerdict {
			if lacks {
				return a, nil, qdisc.Lacksf(kind, "verdict %q is not modelled", words[0])
			}
			a.Control, words = c, words[1:]
		}
	}
	if len(words) > 0 && tc.Matches(words[0], "index") {
		_, err := skipIndex(kind, "mirred", words)
		return a, nil, err
	}
	if dev == "" {
		// tcf_mirred_init: no ifindex and no block
		return a, nil, errKernel("Error: mirred: Must specify device or block.")
	}
	m.dev = dev
	return a, words, nil
}

// mirredEaction is the eaction and default verdict of a mirror or
// redirect in a direction (parse_direction's p.eaction and p.action).
func mirredEaction(ingress, redirect bool) (Eaction, Control) {
	switch {
	case redirect && ingress:
		return IngressRedir, ActStolen
	case redirect:
		return EgressRedir, ActStolen
	case ingress:
		return IngressMirror, ActPipe
	}
	return EgressMirror, ActPipe
}

// print is print_mirred: "mirred (Egress Redirect to device ifb0)
// stolen", then its index line.
func (m *mirred) print(b *strings.Builder, c Control, index uint32, tm string) {
	fmt.Fprintf(b, "mirred (%s to device %s) %s\n\tindex %d ref 1 bind 1%s\n", m.eaction, m.dev, c, index, tm)
}

// SetDevices gives the set the host's device lookup (ll_name_to_index
// for mirred's "dev NAME") and the blocks whose filters may carry mirred
// (clsact's and the ingress qdisc's: the host runs those; a qdisc's
// filters run in its plugin, which sends nowhere).
func (s *Set) SetDevices(exists func(name string) bool, blocks ...qdisc.ClassID) {
	s.devices, s.redirBlocks = exists, blocks
}

// redirects says mirred may run where the filter being added sits.
func (s *Set) redirects() bool {
	return s.devices != nil && slices.Contains(s.redirBlocks, s.adding)
}
