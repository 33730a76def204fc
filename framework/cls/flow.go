package cls

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// The flow classifier (net/sched/cls_flow.c, tc/f_flow.c): a class from
// the packet's keys, by a jhash of them ("hash keys src,dst") or by
// arithmetic on one ("map key dst and 0xff"), the usual companion of
// sfq and fq_codel, whose flows it names by the result's minor.

// FLOW_KEY_* (include/uapi/linux/pkt_cls.h), f_flow.c's names in order.
const (
	flowKeySrc = iota
	flowKeyDst
	flowKeyProto
	flowKeyProtoSrc
	flowKeyProtoDst
	flowKeyIIF
	flowKeyPriority
	flowKeyMark
	flowKeyNfct
	flowKeyNfctSrc
	flowKeyNfctDst
	flowKeyNfctProtoSrc
	flowKeyNfctProtoDst
	flowKeyRTClassID
	flowKeySkUID
	flowKeySkGID
	flowKeyVlanTag
	flowKeyRxhash
	flowKeyMax = flowKeyRxhash
)

var flowKeyNames = [flowKeyMax + 1]string{"src", "dst", "proto", "proto-src", "proto-dst", "iif", "priority",
	"mark", "nfct", "nfct-src", "nfct-dst", "nfct-proto-src", "nfct-proto-dst", "rt-classid", "sk-uid", "sk-gid",
	"vlan-tag", "rxhash"}

// FLOW_MODE_*.
const (
	flowModeMap  = 0
	flowModeHash = 1
)

// flowFilter is struct flow_filter.
type flowFilter struct {
	keymask   uint32
	nkeys     int
	mode      uint32
	mask, xor uint32
	rshift    uint32
	addend    uint32
	divisor   uint32
	baseclass uint32
	perturb   uint32 // seconds: perturb_period / HZ
	// rt is the filter's randomness where it classifies (a plugin's
	// copy): its hashrnd, drawn when it first classifies, and its
	// perturbation. gen counts the filters at its place before it
	// (Set.Keep): its stream is its own.
	rt  *flowRT
	gen uint32
}

// flowRT is a flow filter's hashrnd and perturb_timer in a copy that
// classifies. The stream is the filter's own, seeded from the qdisc's
// seed and the filter's place (parent, pref, handle), so a copy in
// another process draws the same numbers, and the qdisc's own stream
// (Ctx.Rand) is not touched.
type flowRT struct {
	rnd     *sim.Rand
	hashrnd uint32
	next    sim.Time // when the perturbation timer fires next; 0: not armed yet
	words   []string // the filter it was made for (a change re-arms the timer)
}

// flowAttrs are the TCA_FLOW_* attributes flow_parse_opt sends.
type flowAttrs struct {
	keys                 uint32
	nkeys                int
	keysSet              bool
	mode                 uint32 // always sent
	mask, xor            uint32
	rshift, addend       uint32
	rshiftSet, addendSet bool
	divisor, baseclass   uint32
	divisorSet, baseSet  bool
	perturb              uint32
	perturbSet           bool
	actStart             int // where the action words start in the options (len: none)
}

// flowParseKeys is flow_parse_keys: a comma-separated list, each word a
// prefix of a key name (the first in order it matches).
func flowParseKeys(arg string) (uint32, int, error) {
	var keys uint32
	n := 0
	for _, s := range strings.Split(arg, ",") {
		i := slices.IndexFunc(flowKeyNames[:], func(name string) bool { return tc.Matches(s, name) })
		if i < 0 {
			return 0, 0, qdisc.Parsef("flow", "Unknown flow key %q", s)
		}
		keys |= 1 << i
		n++
	}
	return keys, n, nil
}

// transferBitop is f_flow.c's transfer_bitop: and, or and xor folded
// into one mask and xor.
func transferBitop(mask, xor *uint32, m, x uint32) {
	*xor = x ^ (*xor & m)
	*mask &= m
}

// flowGetAddend is get_addend: a number, negated after a '-', or, when
// the keys so far include an address (as f_flow.c tests them: the
// FLOW_KEY_* values of src, dst, nfct-src and nfct-dst or'ed into a
// mask of bits 0, 1 and 3, that is src, dst or proto-dst), an address's
// last 32 bits.
func flowGetAddend(arg string, keys uint32) (uint32, bool) {
	neg := strings.HasPrefix(arg, "-")
	if neg {
		arg = arg[1:]
	}
	v, err := units.GetUnsigned(arg, 0)
	if err != nil {
		const addrKeys = flowKeySrc | flowKeyDst | flowKeyNfctSrc | flowKeyNfctDst
		a, aerr := netip.ParseAddr(arg)
		if keys&addrKeys == 0 || aerr != nil || a.Zone() != "" {
			return 0, false
		}
		b := a.AsSlice()
		v = uint32(b[len(b)-4])<<24 | uint32(b[len(b)-3])<<16 | uint32(b[len(b)-2])<<8 | uint32(b[len(b)-1])
	}
	if neg {
		v = -v
	}
	return v, true
}

// flowParseOpt is flow_parse_opt: the words into attributes, and the
// action words.
func flowParseOpt(f *Filter, opts []string, s *Set) (flowAttrs, error) {
	const kind = "flow"
	a := flowAttrs{mode: flowModeMap, mask: ^uint32(0), actStart: len(opts)}
	words := opts
	// value is NEXT_ARG and the word after it; u32 reads it with get_u32.
	value := func() (string, error) {
		if len(words) < 2 {
			return "", qdisc.Parsef(kind, `%q: Command line is not complete. Try option "help"`, words[0])
		}
		words = words[1:]
		return words[0], nil
	}
	u32 := func(what string) (uint32, error) {
		v, err := value()
		if err != nil {
			return 0, err
		}
		n, err := units.GetUnsigned(v, 0)
		if err != nil {
			return 0, qdisc.Parsef(kind, "Illegal %q", what)
		}
		return n, nil
	}
	for len(words) > 0 {
		w := words[0]
		var err error
		var v uint32
		switch {
		case tc.Matches(w, "map"):
			a.mode = flowModeMap
		case tc.Matches(w, "hash"):
			a.mode = flowModeHash
		case tc.Matches(w, "keys"):
			var arg string
			if arg, err = value(); err == nil {
				a.keys, a.nkeys, err = flowParseKeys(arg)
			}
			a.keysSet = true
		case tc.Matches(w, "and"):
			if v, err = u32("mask"); err == nil {
				transferBitop(&a.mask, &a.xor, v, 0)
			}
		case tc.Matches(w, "or"):
			if v, err = u32("or"); err == nil {
				transferBitop(&a.mask, &a.xor, ^v, v)
			}
		case tc.Matches(w, "xor"):
			if v, err = u32("xor"); err == nil {
				transferBitop(&a.mask, &a.xor, ^uint32(0), v)
			}
		case tc.Matches(w, "rshift"):
			a.rshift, err = u32("rshift")
			a.rshiftSet = true
		case tc.Matches(w, "addend"):
			var arg string
			if arg, err = value(); err == nil {
				var ok bool
				if a.addend, ok = flowGetAddend(arg, a.keys); !ok {
					err = qdisc.Parsef(kind, `Illegal "addend"`)
				}
			}
			a.addendSet = true
		case tc.Matches(w, "divisor"):
			a.divisor, err = u32("divisor")
			a.divisorSet = true
		case tc.Matches(w, "baseclass"):
			var arg string
			if arg, err = value(); err == nil {
				h, ok := tc.ParseClassID(arg)
				if !ok || uint32(h)&0xFFFF == 0 {
					err = qdisc.Parsef(kind, `Illegal "baseclass"`)
				}
				a.baseclass, a.baseSet = uint32(h), true
			}
		case tc.Matches(w, "perturb"):
			a.perturb, err = u32("perturb")
			a.perturbSet = true
		case tc.Matches(w, "police"):
			return a, errOldPolice(kind)
		case tc.Matches(w, "action"):
			if _, err = value(); err != nil {
				return a, err
			}
			a.actStart = len(opts) - len(words) - 1
			acts, rest, err := parseActions(kind, words, s)
			if err != nil {
				return a, err
			}
			f.Actions = append(f.Actions, acts...)
			words = rest // parse_action stops at classid, flowid or a new command
			continue
		case tc.Matches(w, "match"):
			return a, qdisc.Lacksf(kind, "match: ematches are not modelled")
		case tc.Matches(w, "help"):
			return a, qdisc.Parsef(kind, "help: Usage: ... flow ... [mapping mode]: map key KEY [ OPS ] ... [hashing mode]: hash keys KEY-LIST ... [ perturb SECS ]")
		default:
			return a, qdisc.Parsef(kind, "What is %q?", w)
		}
		if err != nil {
			return a, err
		}
		words = words[1:]
	}
	if a.nkeys > 1 && a.mode != flowModeHash && !s.replay {
		return a, qdisc.Parsef(kind, `Invalid mode "map" for multiple keys`)
	}
	if a.keys&(1<<flowKeyIIF) != 0 {
		return a, qdisc.Lacksf(kind, "key iif (skb->skb_iif) is not modelled: a qdisc's packet does not carry the device it came in on")
	}
	return a, nil
}

// parseFlow is flow_parse_opt, then flow_change: a new filter from the
// attributes, or the one at the handle (fold) changed by them.
func parseFlow(f *Filter, verb tc.Verb, cmd tc.Filter, tp *proto, at qdisc.ClassID, s *Set) error {
	const kind = "flow"
	if cmd.Handle != "" {
		h, err := units.GetUnsigned(cmd.Handle, 0)
		if err != nil {
			return qdisc.Parsef(kind, `Illegal "handle"`)
		}
		f.Handle = h
	}
	a, err := flowParseOpt(f, cmd.Options, s)
	if err != nil {
		return err
	}
	var fold *flowFilter
	for _, e := range tp.elems {
		if e.Handle == f.Handle && f.Handle != 0 {
			fold = e.flow
		}
	}
	if fold != nil && verb == tc.VerbAdd || fold == nil && verb == tc.VerbChange {
		// tc_new_tfilter refuses it before flow_change runs:
		// NLM_F_EXCL on a filter that exists, no NLM_F_CREATE for
		// one that does not.
		f.flow = &flowFilter{}
		return nil
	}
	inval := func(why string) error {
		return errKernel("RTNETLINK answers: Invalid argument (%s)", why)
	}
	// flow_policy: TCA_FLOW_RSHIFT at most 31 (nla_parse, no extack).
	if a.rshiftSet && a.rshift > 31 {
		return errKernel("RTNETLINK answers: Numerical result out of range (flow rshift %d: at most 31)", a.rshift)
	}
	nf := &flowFilter{}
	mode := a.mode // tc always sends TCA_FLOW_MODE
	var perturb uint32
	if fold != nil {
		*nf = *fold // "Copy fold into fnew", hashrnd with it
		if nf.rt != nil {
			rt := *nf.rt
			rt.next = 0 // flow_change's mod_timer: re-armed
			nf.rt = &rt
		}
		if mode != flowModeHash && a.nkeys > 1 && !s.replay {
			return inval("flow: map mode takes one key")
		}
		if mode == flowModeHash {
			perturb = fold.perturb
		}
		if a.perturbSet {
			if mode != flowModeHash {
				return inval("flow: perturb needs hash mode")
			}
			perturb = a.perturb
		}
	} else {
		switch {
		case f.Handle == 0:
			return inval(`flow: a new flow filter needs "handle N"`)
		case !a.keysSet:
			return inval(`flow: a new flow filter needs "keys"`)
		case mode != flowModeHash && a.nkeys > 1 && !s.replay:
			return inval("flow: map mode takes one key")
		}
		if a.perturbSet {
			if mode != flowModeHash {
				return inval("flow: perturb needs hash mode")
			}
			perturb = a.perturb
		}
		if !s.replay || !a.baseSet { // a copy's words name the final baseclass
			if a.baseclass>>16 == 0 {
				a.baseclass = uint32(at.Major())<<16 | a.baseclass // TC_H_MAKE(q->handle, baseclass)
			}
			if a.baseclass&0xFFFF == 0 {
				a.baseclass |= 1
			}
		}
		nf.mask = ^uint32(0)
	}
	if a.keysSet {
		nf.keymask, nf.nkeys = a.keys, a.nkeys
	}
	nf.mode = mode
	if a.maskSet() {
		nf.mask, nf.xor = a.mask, a.xor
	}
	if a.rshiftSet {
		nf.rshift = a.rshift
	}
	if a.addendSet {
		nf.addend = a.addend
	}
	if a.divisorSet {
		nf.divisor = a.divisor
	}
	if a.baseclass != 0 {
		nf.baseclass = a.baseclass
	}
	nf.perturb = perturb
	f.flow = nf
	f.Words = append(nf.words(), cmd.Options[a.actStart:]...)
	return nil
}

// maskSet: flow_parse_opt sends TCA_FLOW_MASK and TCA_FLOW_XOR when
// mask != ~0 || xor != 0.
func (a *flowAttrs) maskSet() bool { return a.mask != ^uint32(0) || a.xor != 0 }

// words are the filter's state as tc words that make it again (for
// Specs): what flow_dump gives back, said as flow_parse_opt reads it.
func (ff *flowFilter) words() []string {
	w := []string{"map"}
	if ff.mode == flowModeHash {
		w[0] = "hash"
	}
	w = append(w, "keys", ff.keyList())
	if ff.mask != ^uint32(0) || ff.xor != 0 {
		w = append(w, "and", fmt.Sprintf("%#x", ff.mask), "xor", fmt.Sprintf("%#x", ff.xor))
	}
	if ff.rshift != 0 {
		w = append(w, "rshift", strconv.FormatUint(uint64(ff.rshift), 10))
	}
	if ff.addend != 0 {
		w = append(w, "addend", strconv.FormatUint(uint64(ff.addend), 10))
	}
	if ff.divisor != 0 {
		w = append(w, "divisor", strconv.FormatUint(uint64(ff.divisor), 10))
	}
	if ff.baseclass != 0 {
		w = append(w, "baseclass", qdisc.ClassID(ff.baseclass).String())
	}
	if ff.perturb != 0 {
		w = append(w, "perturb", strconv.FormatUint(uint64(ff.perturb), 10))
	}
	return w
}

// keyList is the keys as flow_print_opt lists them: "src,dst".
func (ff *flowFilter) keyList() string {
	var names []string
	for i := 0; i <= flowKeyMax; i++ {
		if ff.keymask&(1<<i) != 0 {
			names = append(names, flowKeyNames[i])
		}
	}
	return strings.Join(names, ",")
}

// print is flow_print_opt.
func (ff *flowFilter) print(b *strings.Builder, f *Filter) {
	fmt.Fprintf(b, "handle %#x ", f.Handle)
	if ff.mode == flowModeHash {
		b.WriteString("hash ")
	} else {
		b.WriteString("map ")
	}
	fmt.Fprintf(b, "keys %s ", ff.keyList())
	if ff.mask != ^uint32(0) || ff.xor != 0 {
		or := (ff.mask & ff.xor) ^ ff.xor
		xor := ff.mask & ff.xor
		if ff.mask != ^uint32(0) {
			fmt.Fprintf(b, "and 0x%.8x ", ff.mask)
		}
		if xor != 0 {
			fmt.Fprintf(b, "xor 0x%.8x ", xor)
		}
		if or != 0 {
			fmt.Fprintf(b, "or 0x%.8x ", or)
		}
	}
	if ff.rshift != 0 {
		fmt.Fprintf(b, "rshift %d ", ff.rshift)
	}
	if ff.addend != 0 {
		fmt.Fprintf(b, "addend %#x ", ff.addend)
	}
	if ff.divisor != 0 {
		fmt.Fprintf(b, "divisor %d ", ff.divisor)
	}
	if ff.baseclass != 0 {
		fmt.Fprintf(b, "baseclass %s ", qdisc.ClassID(ff.baseclass))
	}
	if ff.perturb != 0 {
		fmt.Fprintf(b, "perturb %dsec ", ff.perturb)
	}
	if len(f.Actions) > 0 {
		b.WriteString("\n") // print_nl before tc_print_action
	}
}

// flowClassify is flow_classify for one filter: its keys, jhash2'ed with
// hashrnd (hash mode) or masked, xor'ed, shifted and added to (map
// mode), modulo the divisor, added to the baseclass's minor.
func (s *Set) flowClassify(ctx qdisc.Ctx, f *Filter, p *skb.Packet) qdisc.ClassID {
	ff := f.flow
	var keys [flowKeyMax + 1]uint32
	n := 0
	for m := ff.keymask; n < ff.nkeys && m != 0; n++ {
		k := bits.TrailingZeros32(m) // ffs(keymask) - 1
		m &^= 1 << k
		keys[n] = s.flowKeyGet(k, p)
	}
	var classid uint32
	if ff.mode == flowModeHash {
		classid = khash.Jhash2(keys[:n], s.flowHashrnd(ctx, f))
	} else {
		classid = (keys[0]&ff.mask ^ ff.xor) >> ff.rshift
		classid += ff.addend
	}
	if ff.divisor != 0 {
		classid %= ff.divisor
	}
	// TC_H_MAKE(f->baseclass, f->baseclass + classid)
	return qdisc.ClassID(ff.baseclass&0xFFFF0000 | (ff.baseclass+classid)&0xFFFF)
}

// flowRuntime is f's hashrnd and timer in this copy, made the first
// time it is asked for: the hashrnd is the first draw of the filter's
// own stream (flow_change's get_random_bytes).
func (s *Set) flowRuntime(f *Filter) *flowRT {
	if rt := f.flow.rt; rt != nil {
		return rt
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "cls_flow %x %d %x", uint32(f.Parent), f.Pref, f.Handle)
	if f.flow.gen > 0 {
		fmt.Fprintf(h, " %d", f.flow.gen) // a filter made again at the place
	}
	rt := &flowRT{rnd: sim.NewRand(sim.Seed{s.seed[0], s.seed[1] ^ h.Sum64()}), words: f.Words}
	rt.hashrnd = rt.rnd.Uint32()
	f.flow.rt = rt
	return rt
}

// flowHashrnd is the filter's hashrnd now, drawn again each time its
// perturbation timer fires (flow_perturbation). The timer is armed
// when tc adds or changes the filter (Set.Keep's now: flow_change's
// mod_timer); a copy no host armed (a test's) arms it at its first
// packet. Like sfq's, it fires lazily, at the first packet after it
// was due; however many periods passed, one new hashrnd is as good as
// several, and the timer keeps its phase. The draws are the kernel's
// timer's, not the packet's: they cost the packet nothing.
func (s *Set) flowHashrnd(ctx qdisc.Ctx, f *Filter) uint32 {
	rt := s.flowRuntime(f)
	if f.flow.perturb == 0 {
		return rt.hashrnd
	}
	now := ctx.Now()
	switch {
	case rt.next == 0:
		rt.next = now + f.flow.period()
	case now >= rt.next:
		period := f.flow.period()
		rt.next += ((now-rt.next)/period + 1) * period
		rt.hashrnd = rt.rnd.Uint32()
	}
	return rt.hashrnd
}

// period is perturb_period: perturb seconds (perturb * HZ jiffies).
func (ff *flowFilter) period() sim.Time { return sim.Time(ff.perturb) * sim.Second }

// keep takes over old's randomness (the same filter in the set before a
// reload): its hashrnd stays (flow_change copies fold's), and a change
// of the filter re-arms its timer.
func (ff *flowFilter) keep(old *Filter, words []string) {
	if old.flow == nil || old.flow.rt == nil {
		return
	}
	rt := old.flow.rt
	if !slices.Equal(rt.words, words) {
		rt.next, rt.words = 0, words
	}
	ff.rt = rt
}

// Model stand-ins for the pointers cls_flow folds into keys where the
// packet lacks an address or ports: skb->sk and skb_dst(skb).
func sockAddr(p *skb.Packet) uint64 {
	if p.Sock < 0 {
		return 0 // no socket: NULL
	}
	return uint64(p.Sock) + 1
}

// dstAddr is the packet's route: every packet the model sends has one,
// its device's.
const dstAddr = 1

// ethPIPBE is (__force u16)htons(ETH_P_IP) on a little-endian CPU.
const ethPIPBE = 0x0008

// flowKeyGet is flow_key_get on the model's packet: IPv4 keys as the
// flow dissector gives them, ports only for the protocols that have
// them (__skb_flow_get_ports: proto_ports_offset). The model has no
// conntrack (nfct-* fall back to the packet's own keys, nfct is an
// untracked skb's), no route realms (rt-classid 0), no VLANs (vlan-tag
// 0) and no credentials (its senders run as root: sk-uid, sk-gid 0).
func (s *Set) flowKeyGet(key int, p *skb.Packet) uint32 {
	k := &p.Keys
	switch key {
	case flowKeySrc, flowKeyNfctSrc:
		if k.Src != 0 {
			return k.Src
		}
		return s.addrFold(sockAddr(p))
	case flowKeyDst, flowKeyNfctDst:
		if k.Dst != 0 {
			return k.Dst
		}
		return s.addrFold(dstAddr) ^ ethPIPBE
	case flowKeyProto:
		return uint32(k.Proto)
	case flowKeyProtoSrc, flowKeyNfctProtoSrc:
		if flowPorts(k) != 0 {
			return uint32(k.SrcPort)
		}
		return s.addrFold(sockAddr(p))
	case flowKeyProtoDst, flowKeyNfctProtoDst:
		if flowPorts(k) != 0 {
			return uint32(k.DstPort)
		}
		return s.addrFold(dstAddr) ^ ethPIPBE
	case flowKeyPriority:
		return p.Priority
	case flowKeyMark:
		return p.Mark
	case flowKeyNfct:
		return s.addrFold(0) // skb_nfct of an untracked skb: NULL
	case flowKeyRxhash:
		return p.Hash
	}
	return 0 // rt-classid, sk-uid, sk-gid, vlan-tag (iif is refused)
}

// flowPorts is the dissector's ports word: the transport header's first
// four bytes for the protocols proto_ports_offset knows, else 0.
func flowPorts(k *skb.FlowKeys) uint32 {
	switch k.Proto {
	case 6, 17, 33, 50, 132, 136: // TCP, UDP, DCCP, ESP, SCTP, UDPLITE
		return uint32(k.SrcPort)<<16 | uint32(k.DstPort)
	}
	return 0
}

// addrFold is addr_fold: siphash_1u64 of a pointer with flow_keys_secret
// (net_get_random_once: one per boot), here one per run, drawn from the
// run's seed, so every qdisc's copy of the filters folds alike.
func (s *Set) addrFold(addr uint64) uint32 {
	if !s.secretSet {
		r := sim.NewRand(sim.Seed{s.seed[0], 0x666c6f775f6b6579}) // "flow_key"
		s.secret = [2]uint64{r.Uint64(), r.Uint64()}
		s.secretSet = true
	}
	return uint32(khash.SipHash(s.secret, []uint64{addr}))
}
