// Package cls is the model's tc classifiers (net/sched/cls_*.c) and the
// two actions they carry (act_skbedit, act_gact): filters attached to a
// qdisc or a class, tried in pref order by Classify (tcf_classify), and
// printed as `tc filter show` prints them. matchall, u32 (on the IPv4 and
// UDP header of txlab's packets, key by key as the kernel compares them),
// fw (skb->mark) and flower (addresses, ports, protocol, tos).
//
// A Set is the host's filters; a classful qdisc in a plugin gets a copy
// rebuilt from Specs, so classification runs where the qdisc runs, in
// process or out, with the same result.
package cls

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// Filter is one filter element: what `tc filter show` prints a line
// (and its options) for.
type Filter struct {
	Parent   qdisc.ClassID // the qdisc (X:0) or class it is attached to
	Pref     uint16
	Protocol uint16
	Kind     string
	Handle   uint32
	ClassID  qdisc.ClassID // flowid/classid, 0 if none
	Actions  []Action
	Flags    uint32 // TCA_CLS_FLAGS_SKIP_HW / SKIP_SW
	// Words are the kind's option words as given (what Specs replays).
	Words []string

	u32    *u32Sel
	fw     *fwKey
	flower *flowerKeys
	// oldPolice is the filter's own "police" (u32's and fw's
	// TCA_*_POLICE): tcf_exts_validate makes it the one action, over
	// any "action" words, and it is dumped apart, as the old compat
	// police.
	oldPolice *Action
	flow      *flowFilter
	added     int // its place in its tcf_proto's creation order
}

// Classifier flags (TCA_CLS_FLAGS_*).
const (
	flagSkipHW   = 1 << 0
	flagSkipSW   = 1 << 1
	flagNotInHW  = 1 << 3
	defaultFlags = flagNotInHW // a software filter: dumped "not_in_hw"
)

// proto is a tcf_proto: the filters of one kind at one pref in a block.
type proto struct {
	pref     uint16
	protocol uint16
	kind     string
	elems    []*Filter    // in classify and dump order
	u32ht    uint32       // u32: its root hash table's handle (800:, 801:, ...)
	fwHead   bool         // fw: fw_head made (else skb->mark is the classid)
	fwMask   uint32       // fw: fw_head's mask, one for the whole pref
	added    int          // elements made, for fw's dump order
	flMasks  []*flMaskRef // flower: cls_fl_head's masks, in classify order
	seq      int          // creation order in the set (Specs replays it)
}

// block is a tcf_block (chain 0): a qdisc's or a class's filters.
type block struct {
	protos []*proto // by pref
}

// Set is every filter of a device, by the qdisc or class they are
// attached to.
type Set struct {
	blocks map[qdisc.ClassID]*block
	actIdx map[string]uint32
	seq    int
	// u32Last is each qdisc's tc_u_common idr_alloc_cyclic cursor.
	u32Last map[uint16]uint32
	// replay: Load rebuilds u32 prefs with the root tables their
	// handles name, as the host's set had them.
	replay bool
	// seed is where a copy that classifies draws its randomness
	// (cls_flow's hashrnd, flow_keys_secret): the qdisc's (SetSeed).
	seed      sim.Seed
	secret    [2]uint64
	secretSet bool
	// flowGens counts, in a copy, the flow filters made at each place
	// (block, pref, handle) before the one there now, over the copies
	// this one replaced (Keep): a filter deleted and added again is a
	// new one, which flow_change gives a fresh hashrnd.
	flowGens map[flowPlace]uint32
	// devices is the host's device lookup, redirBlocks the blocks
	// whose filters may carry mirred (SetDevices); adding is the block
	// Add is adding to.
	devices     func(name string) bool
	redirBlocks []qdisc.ClassID
	adding      qdisc.ClassID
}

// flowPlace is where a flow filter sits: its block, pref and handle.
type flowPlace struct {
	at     qdisc.ClassID
	pref   uint16
	handle uint32
}

// NewSet makes an empty set.
func NewSet() *Set {
	return &Set{blocks: map[qdisc.ClassID]*block{}, actIdx: map[string]uint32{}, u32Last: map[uint16]uint32{}}
}

func (s *Set) nextActionIndex(kind string) uint32 {
	s.actIdx[kind]++
	return s.actIdx[kind]
}

// Kinds are the classifiers modelled.
func Kinds() []string { return []string{"flow", "flower", "fw", "matchall", "u32"} }

// errKernel is a refusal by the kernel's tc_new_tfilter or a classifier's
// change (its extack text, or RTNETLINK's errno text).
func errKernel(format string, a ...any) error {
	return &qdisc.OptionError{Class: qdisc.ErrKernel, Msg: fmt.Sprintf(format, a...)}
}

// Add is `tc filter add|replace|change` of cmd at parent (the qdisc's
// X:0 or a class, as the host resolved cmd.Parent). It returns the
// filter element made or changed (nil for fw's old-style mark
// classification, which has none).
func (s *Set) Add(verb tc.Verb, cmd tc.Filter, parent qdisc.ClassID) (*Filter, error) {
	if !slices.Contains(Kinds(), cmd.Kind) {
		if cmd.Kind == "" {
			return nil, errKernel("Error: Filter kind is needed (matchall, u32, fw, flower, flow).")
		}
		return nil, errKernel("Error: TC classifier not found (%q; txlab has %s).", cmd.Kind, strings.Join(Kinds(), ", "))
	}
	create := verb == tc.VerbAdd || verb == tc.VerbReplace
	protocol := cmd.Protocol
	if !cmd.ProtoSet && create {
		protocol = tc.ProtoAll // tc_filter_modify: htons(ETH_P_ALL) for a new filter
	}
	b := s.blocks[parent]
	if b == nil {
		b = &block{}
	}
	s.adding = parent
	var tp *proto
	pref := cmd.Pref
	if pref == 0 {
		if !create {
			return nil, errKernel("Error: Invalid filter command with priority of zero.")
		}
		var ok bool
		if pref, ok = b.autoPref(); !ok {
			// tcf_chain_tp_find with prio_allocate meets a pref of
			// exactly 0x8000: -EINVAL.
			return nil, errKernel("Error: Filter with specified priority/protocol not found.")
		}
	} else {
		for _, p := range b.protos {
			if p.pref != pref {
				continue
			}
			if protocol != 0 && p.protocol != protocol {
				return nil, errKernel("Error: Filter with specified priority/protocol not found.")
			}
			if p.kind != cmd.Kind {
				return nil, errKernel("Error: Specified filter kind does not match existing one.")
			}
			tp = p
		}
	}
	if protocol == 0 {
		if tp == nil {
			return nil, errKernel("Error: Filter kind and protocol must be specified.")
		}
		protocol = tp.protocol
	}
	newTP := tp == nil
	if newTP {
		if !create {
			return nil, errKernel("Error: Need both RTM_NEWTFILTER and NLM_F_CREATE to create a new filter.")
		}
		s.seq++
		tp = &proto{pref: pref, protocol: protocol, kind: cmd.Kind, seq: s.seq}
		if tp.kind == "u32" {
			tp.u32ht = s.newU32HT(parent.Major())
			if s.replay && cmd.Handle != "" {
				if h, err := parseU32Handle(cmd.Handle); err == nil && h>>20 != 0 {
					tp.u32ht = h &^ 0xFFFFF
				}
				if len(cmd.Options) == 0 {
					cmd.Handle = "" // a bare u32: the handle only named its table
				}
			}
		}
	}
	f, err := tp.change(verb, cmd, parent, s)
	if err != nil {
		return nil, err
	}
	if newTP {
		b.protos = append(b.protos, tp)
		slices.SortStableFunc(b.protos, func(x, y *proto) int { return int(x.pref) - int(y.pref) })
	}
	s.blocks[parent] = b
	return f, nil
}

// autoPref is tcf_auto_prio(tcf_chain_tp_prev()): tcf_chain_tp_find
// with the placeholder prio 0x8000 stops at the first tcf_proto of pref
// 0x8000 or more, and the new pref is one below it; with none, 0xC000
// (49152). ok is false when that tcf_proto's pref is 0x8000 itself.
func (b *block) autoPref() (pref uint16, ok bool) {
	for _, p := range b.protos {
		if p.pref >= 0x8000 {
			return p.pref - 1, p.pref != 0x8000
		}
	}
	return 0xC000, true
}

// newU32HT is u32_init's root hash table handle. tc_u_common is one per
// qdisc (tc_u_common_ptr: the block's q, its classes' blocks included):
// the qdisc's first u32 pref gets 800:, later ones gen_new_htid's
// idr_alloc_cyclic ids 801: to ffe:, skipping those in use; when the
// qdisc's last u32 pref goes, so does the tc_u_common, and 800: comes
// again.
func (s *Set) newU32HT(maj uint16) uint32 {
	used := map[uint32]bool{}
	tps := s.u32Protos(maj)
	for _, tp := range tps {
		used[tp.u32ht>>20&0x7FF] = true
	}
	if len(tps) == 0 {
		s.u32Last[maj] = 0
		return 0x800 << 20
	}
	id := s.u32Last[maj]
	for range 0x7FE {
		if id++; id > 0x7FE {
			id = 1
		}
		if !used[id] {
			s.u32Last[maj] = id
			return (0x800 | id) << 20
		}
	}
	return 0x800 << 20 // idr full: unreachable with txlab's prefs
}

// change is tp->ops->change: a new element, or the one cmd.Handle names.
func (tp *proto) change(verb tc.Verb, cmd tc.Filter, parent qdisc.ClassID, s *Set) (*Filter, error) {
	f := &Filter{Parent: parent, Pref: tp.pref, Protocol: tp.protocol, Kind: tp.kind, Flags: defaultFlags,
		Words: append([]string(nil), cmd.Options...)}
	var err error
	switch tp.kind {
	case "matchall":
		err = parseMatchall(f, cmd, s)
	case "u32":
		err = parseU32(f, verb, cmd, tp, s)
	case "fw":
		err = parseFw(f, cmd, s)
	case "flower":
		err = parseFlower(f, cmd, tp, s)
	case "flow":
		err = parseFlow(f, verb, cmd, tp, parent, s)
	}
	if err != nil {
		return nil, err
	}
	if err := checkActionFlags(f); err != nil {
		return nil, err
	}
	if tp.kind == "u32" && f.u32 == nil {
		return nil, nil // u32_change without TCA_OPTIONS: the tcf_proto and its root table alone
	}
	if tp.kind == "fw" {
		if f.fw == nil {
			// fw_change with no options and no handle succeeds and
			// changes nothing: a new tcf_proto stays headless, the
			// old method, until a filter with a handle comes.
			return nil, nil
		}
		if tp.fwHead && f.fw.mask != tp.fwMask {
			// fw_set_parms: the mask is fw_head's, one for the pref.
			return nil, errKernel("RTNETLINK answers: Invalid argument (fw mask %#x is not this pref's %#x)", f.fw.mask, tp.fwMask)
		}
	}
	if tp.kind == "flower" && f.Handle == 0 {
		f.Handle = tp.flFreeHandle()
	}
	if tp.kind == "u32" && f.Handle == 0 {
		f.Handle = tp.genNewKid()
	}
	for i, e := range tp.elems {
		if e.Handle != f.Handle {
			continue
		}
		if verb == tc.VerbAdd {
			if cmd.Handle != "" {
				// tc_new_tfilter: tp->ops->get found it, NLM_F_EXCL.
				return nil, errKernel("Error: Filter already exists.")
			}
			return nil, errKernel("RTNETLINK answers: File exists (%s handle %s at pref %d)", tp.kind, f.handleText(), tp.pref)
		}
		if tp.kind == "u32" && (e.Flags^f.Flags)&^flagNotInHW != 0 {
			// u32_change on an existing knode: its flags, but for
			// IN_HW/NOT_IN_HW, must be the new ones.
			return nil, errKernel("Error: cls_u32: Key node flags do not match passed flags.")
		}
		if tp.kind == "u32" {
			// u32_init_knode copies the old node's selector;
			// u32_set_parms takes only the classid and actions of the
			// new words. (Its flags too: TERMINAL here follows the new
			// words, as a replay of f.Words would make it.)
			parms := f.u32.parmWords
			f.u32 = &u32Sel{keys: e.u32.keys, terminal: f.u32.terminal, matchWords: e.u32.matchWords, parmWords: parms}
			f.Words = append(slices.Clone(e.u32.matchWords), parms...)
		}
		if tp.kind == "flower" {
			// fl_change with fold: the new filter's mask is assigned
			// (a new one at the tail) before fold's is put; no key
			// check, as fl_ht_insert_unique lets a replace collide.
			tp.flCheckAssignMask(f.flower.mask())
			tp.flMaskPut(e.flower.mask())
			tp.added++
			f.added = tp.added
		}
		tp.elems[i] = f
		return f, nil
	}
	if verb == tc.VerbChange {
		return nil, errKernel("Error: Need both RTM_NEWTFILTER and NLM_F_CREATE to create a new filter.")
	}
	if tp.kind == "matchall" && len(tp.elems) > 0 {
		return nil, errKernel("RTNETLINK answers: File exists (matchall holds one filter per pref)")
	}
	if tp.kind == "flower" {
		// fl_ht_insert_unique: -EEXIST, no extack. Load skips the check:
		// a replace may have left two filters with one key.
		if e := tp.flLookupDup(f); e != nil && !s.replay {
			return nil, errKernel("RTNETLINK answers: File exists (flower handle 0x%x has this mask and key)", e.Handle)
		}
		tp.flCheckAssignMask(f.flower.mask())
	}
	tp.added++
	f.added = tp.added
	if tp.kind == "fw" {
		tp.fwHead, tp.fwMask = true, f.fw.mask
	}
	tp.elems = append(tp.elems, f)
	if tp.kind == "flow" {
		return f, nil // flow_change: list_add_tail, classified and dumped in that order
	}
	slices.SortStableFunc(tp.elems, func(x, y *Filter) int {
		if x.Handle < y.Handle {
			return -1
		}
		if x.Handle > y.Handle {
			return 1
		}
		return 0
	})
	return f, nil
}

// Delete is tc_del_tfilter: with no pref, a flush of the chain (refused
// with a protocol, handle or kind); with a pref, the tcf_proto of that
// pref (and protocol, when given) whole when no handle is given, or one
// element, and the tcf_proto with it when that was its last (the
// kind's delete reports *last).
func (s *Set) Delete(cmd tc.Filter, parent qdisc.ClassID) error {
	if cmd.Pref == 0 {
		if cmd.ProtoSet || cmd.Handle != "" || cmd.Kind != "" {
			return errKernel("Error: Cannot flush filters with protocol, handle or kind set.")
		}
		delete(s.blocks, parent) // tcf_chain_flush; nothing to do without a chain
		return nil
	}
	b := s.blocks[parent]
	if b == nil {
		return errKernel("Error: Cannot find specified filter chain.")
	}
	i := slices.IndexFunc(b.protos, func(tp *proto) bool { return tp.pref == cmd.Pref })
	if i < 0 || (cmd.ProtoSet && b.protos[i].protocol != cmd.Protocol) {
		return errKernel("Error: Filter with specified priority/protocol not found.")
	}
	tp := b.protos[i]
	if cmd.Kind != "" && cmd.Kind != tp.kind {
		return errKernel("Error: Specified filter kind does not match existing one.")
	}
	if cmd.Handle == "" {
		b.protos = slices.Delete(b.protos, i, i+1)
		return nil
	}
	j := slices.IndexFunc(tp.elems, func(e *Filter) bool {
		return e.handleText() == cmd.Handle || handleEqual(tp.kind, cmd.Handle, e.Handle)
	})
	if j < 0 {
		if tp.kind == "u32" && handleEqual("u32", cmd.Handle, tp.u32ht) {
			return errKernel("Error: cls_u32: Not allowed to delete root node.")
		}
		return errKernel("Error: Specified filter handle not found.")
	}
	if e := tp.elems[j]; e.flower != nil {
		tp.flMaskPut(e.flower.mask())
	}
	tp.elems = slices.Delete(tp.elems, j, j+1)
	if len(tp.elems) == 0 && (tp.kind != "u32" || len(s.u32Protos(parent.Major())) == 1) {
		// mall_delete, fw_delete and fl_delete say last when nothing is
		// left; u32_delete when this is the qdisc's only u32 (its
		// tc_u_common has one user) and no node is left.
		b.protos = slices.Delete(b.protos, i, i+1)
	}
	return nil
}

// u32Protos is the u32 tcf_protos of qdisc maj and its classes: the
// users of its tc_u_common (u32_init keys it by the block's qdisc).
func (s *Set) u32Protos(maj uint16) []*proto {
	var tps []*proto
	for at, b := range s.blocks {
		if at.Major() != maj {
			continue
		}
		for _, tp := range b.protos {
			if tp.kind == "u32" {
				tps = append(tps, tp)
			}
		}
	}
	return tps
}

// handleEqual reads a handle as the kind's parser would and compares.
func handleEqual(kind, text string, h uint32) bool {
	switch kind {
	case "u32":
		v, err := parseU32Handle(text)
		return err == nil && v == h
	default:
		v, _, _ := strings.Cut(text, "/")
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(v), "0x"), 16, 32)
		if !strings.HasPrefix(strings.ToLower(v), "0x") {
			n, err = strconv.ParseUint(v, 0, 32)
		}
		return err == nil && uint32(n) == h
	}
}

// Reset removes every filter.
func (s *Set) Reset() {
	seed, devices, redir := s.seed, s.devices, s.redirBlocks
	*s = *NewSet()
	s.seed, s.devices, s.redirBlocks = seed, devices, redir
}

// SetSeed gives a copy that classifies its randomness: the seed of the
// qdisc whose filters it holds. Its first word is the run's seed (as
// sim.Streams gives every stream's), whence flow_keys_secret, one for
// the run as the kernel's is one per boot.
func (s *Set) SetSeed(seed sim.Seed) { s.seed, s.secretSet = seed, false }

// Keep carries over the randomness of the filters old held (the copy
// this one replaces) to the same filters here (same block, pref and
// handle): cls_flow's hashrnd and perturbation timer belong to the
// filter, not to the copy, and another filter's add or delete leaves
// them be; so do police actions' buckets (new ones start at now). A flow filter old did not hold is a new one (flow_change's
// get_random_bytes for a filter without fold): one at a place an
// earlier copy had a filter at (deleted since) counts as the place's
// next, and draws its hashrnd from a stream of its own. A new or
// changed flow filter's perturbation timer is armed at now, the time
// of the tc command that made this copy (the qdisc's clock, sim.Ktime:
// flow_change's mod_timer(jiffies + perturb_period)). old is nil for a
// context's first copy.
func (s *Set) Keep(old *Set, now sim.Time) {
	s.keepActions(old)
	s.ArmActions(now)
	s.flowGens = map[flowPlace]uint32{}
	if old != nil {
		maps.Copy(s.flowGens, old.flowGens)
	}
	for _, at := range slices.Sorted(maps.Keys(s.blocks)) {
		b := s.blocks[at]
		var ob *block
		if old != nil {
			ob = old.blocks[at]
		}
		for _, tp := range b.protos {
			if tp.kind != "flow" {
				continue
			}
			i := -1
			if ob != nil {
				i = slices.IndexFunc(ob.protos, func(o *proto) bool { return o.pref == tp.pref && o.kind == tp.kind })
			}
			for _, f := range tp.elems {
				kept := false
				if i >= 0 {
					for _, of := range ob.protos[i].elems {
						if of.Handle == f.Handle {
							f.flow.keep(of, f.Words)
							kept = true
						}
					}
				}
				pl := flowPlace{at, tp.pref, f.Handle}
				if g, seen := s.flowGens[pl]; seen && !kept {
					s.flowGens[pl] = g + 1
				} else if !seen {
					s.flowGens[pl] = 0
				}
				f.flow.gen = s.flowGens[pl]
				if f.flow.perturb != 0 {
					if rt := s.flowRuntime(f); rt.next == 0 {
						rt.next = now + f.flow.period()
					}
				}
			}
		}
	}
}

// Filtered reports whether filters are attached at at: a tcf_proto in
// its chain (the qdisc's filter_list is not NULL), whether or not it
// holds an element.
func (s *Set) Filtered(at qdisc.ClassID) bool {
	b := s.blocks[at]
	return b != nil && len(b.protos) > 0
}

// DropBlock removes the filters attached at at (its class or qdisc went).
func (s *Set) DropBlock(at qdisc.ClassID) { delete(s.blocks, at) }

// DropQdisc removes every filter attached to a qdisc of major maj or its
// classes.
func (s *Set) DropQdisc(maj uint16) {
	for at := range s.blocks {
		if at.Major() == maj {
			delete(s.blocks, at)
		}
	}
}

// Attached lists where filters are attached, sorted.
func (s *Set) Attached() []qdisc.ClassID {
	var out []qdisc.ClassID
	for at, b := range s.blocks {
		if len(b.protos) > 0 {
			out = append(out, at)
		}
	}
	slices.Sort(out)
	return out
}

// Filters lists the elements attached at at in dump order.
func (s *Set) Filters(at qdisc.ClassID) []*Filter {
	var out []*Filter
	if b := s.blocks[at]; b != nil {
		for _, tp := range b.protos {
			out = append(out, tp.elems...)
		}
	}
	return out
}

// maxReclassifyLoop is __tcf_classify's max_reclassify_loop.
const maxReclassifyLoop = 16

// Classify is tcf_classify over the filters attached at at: each
// tcf_proto in pref order whose protocol is the packet's (IPv4) or all;
// the first that decides gives the verdict. An action's
// TC_ACT_RECLASSIFY (police's default for what exceeds) starts over
// from the first tcf_proto, 16 times at most; then the packet is shot
// (SKB_DROP_REASON_TC_RECLASSIFY_LOOP). It reports one WorkHash per
// filter element tried (one per tcf_proto for fw's mark method, one per
// mask for flower).
func (s *Set) Classify(ctx qdisc.Ctx, p *skb.Packet, at qdisc.ClassID) qdisc.FilterResult {
	b := s.blocks[at]
	if b == nil {
		return qdisc.FilterResult{}
	}
	for limit := 0; ; limit++ {
		r, again := s.classifyOnce(ctx, b, p, at)
		if !again {
			return r
		}
		if limit >= maxReclassifyLoop {
			return qdisc.FilterResult{Verdict: qdisc.VerdictShot, Reason: skb.DropTCReclassifyLoop}
		}
	}
}

// classifyOnce is one pass of __tcf_classify over the block; again says
// an action asked to classify again.
func (s *Set) classifyOnce(ctx qdisc.Ctx, b *block, p *skb.Packet, at qdisc.ClassID) (r qdisc.FilterResult, again bool) {
	var hdr header
	hdr.fill(p)
	for _, tp := range b.protos {
		if tp.protocol != tc.ProtoAll && tp.protocol != tc.ProtoIP {
			continue
		}
		if tp.kind == "fw" && !tp.fwHead {
			ctx.Work(qdisc.WorkHash, 1)
			// fw_classify's old method: a mark whose major is 0 or the
			// qdisc's is the classid itself.
			if id := qdisc.ClassID(p.Mark); id != 0 && (id.Major() == 0 || id.Major() == at.Major()) {
				return qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: id}, false
			}
			continue
		}
		if tp.kind == "flower" {
			f := tp.flClassify(ctx, p)
			if f == nil {
				continue
			}
			// an ActUnspec is fl_classify's return: the next tcf_proto
			if r, decided, again := result(execActions(ctx, f.Actions, p), f.ClassID); decided {
				return r, again
			}
			continue
		}
		for _, f := range tp.elems {
			ctx.Work(qdisc.WorkHash, 1)
			class := f.ClassID
			if f.flow != nil {
				// flow_classify: every element decides, with
				// the class its keys give.
				class = s.flowClassify(ctx, f, p)
			} else {
				hit, abort := f.match(p, &hdr)
				if abort {
					break // u32: a key past the packet ends this classifier
				}
				if !hit || (f.u32 != nil && !f.u32.terminal) {
					continue
				}
			}
			// an ActUnspec: the next element, then the next classifier
			if r, decided, again := result(execActions(ctx, f.Actions, p), class); decided {
				return r, again
			}
		}
	}
	return qdisc.FilterResult{}, false
}

// result is what a filter's actions' verdict means to tcf_classify:
// decided unless it is TC_ACT_UNSPEC; again for TC_ACT_RECLASSIFY.
func result(c Control, class qdisc.ClassID) (r qdisc.FilterResult, decided, again bool) {
	switch c {
	case ActUnspec:
		return r, false, false
	case ActReclassify:
		return r, true, true
	case ActShot:
		return qdisc.FilterResult{Verdict: qdisc.VerdictShot}, true, false
	case ActStolen:
		return qdisc.FilterResult{Verdict: qdisc.VerdictStolen}, true, false
	}
	return qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: class}, true, false
}

// match tries one element on p.
func (f *Filter) match(p *skb.Packet, h *header) (hit, abort bool) {
	switch {
	case f.u32 != nil:
		return f.u32.match(h)
	case f.fw != nil:
		return p.Mark&f.fw.mask == f.Handle, false
	}
	return true, false // matchall
}

// Specs are the filters of a qdisc and its classes as tc words that
// rebuild them exactly (pref and handle given): "parent 1: protocol ip
// pref 1 handle 800::800 u32 ...", each tcf_proto's in the order the
// tcf_protos were made (so u32's hash tables get the same handles).
func (s *Set) Specs(maj uint16) []string {
	type atProto struct {
		at qdisc.ClassID
		tp *proto
	}
	var all []atProto
	for _, at := range s.Attached() {
		if at.Major() != maj {
			continue
		}
		for _, tp := range s.blocks[at].protos {
			all = append(all, atProto{at, tp})
		}
	}
	slices.SortFunc(all, func(x, y atProto) int { return x.tp.seq - y.tp.seq })
	var out []string
	for _, a := range all {
		at, tp := a.at, a.tp
		{
			base := tc.Filter{Parent: tcHandle(at), Protocol: tp.protocol, ProtoSet: true, Pref: tp.pref, Kind: tp.kind}
			if len(tp.elems) == 0 { // fw's mark method, a bare u32
				if tp.kind == "u32" {
					base.Handle = u32HandleString(tp.u32ht) // for Load: its table
				}
				out = append(out, strings.Join(base.Words(), " "))
				continue
			}
			for _, f := range tp.specOrder() {
				w := base
				w.Handle = f.handleText()
				w.Options = f.Words
				out = append(out, strings.Join(w.Words(), " "))
			}
		}
	}
	return out
}

// Load builds a set from Specs' lines.
func Load(specs []string) (*Set, error) {
	s := NewSet()
	s.replay = true
	defer func() { s.replay = false }()
	for _, line := range specs {
		cmd, err := tc.ParseFilter(strings.Fields(line))
		if err != nil {
			return nil, fmt.Errorf("filter %q: %w", line, err)
		}
		if _, err := s.Add(tc.VerbAdd, cmd, qdisc.ClassID(cmd.Parent)); err != nil {
			return nil, fmt.Errorf("filter %q: %w", line, err)
		}
	}
	return s, nil
}

func tcHandle(c qdisc.ClassID) tc.Handle { return tc.Handle(c) }

// handleText is the handle as its kind's parser reads it back.
func (f *Filter) handleText() string {
	if f.Kind == "u32" {
		return u32HandleString(f.Handle)
	}
	if f.fw != nil && f.fw.maskSet {
		return fmt.Sprintf("0x%x/0x%x", f.Handle, f.fw.mask)
	}
	return fmt.Sprintf("0x%x", f.Handle)
}

// Show is `tc filter show dev DEV parent AT` for the filters attached at
// at (print_filter per dumped node): each tcf_proto's own line, then its
// nodes. withParent prints "parent X " (a show without "parent", which
// lists the root qdisc's filters).
func (s *Set) Show(at qdisc.ClassID, withParent bool) string { return s.show(at, withParent, nil) }

// ShowStats is `tc -s filter show` of the block at at: Show with each
// action's tcf_tm at d.Now and its counters.
func (s *Set) ShowStats(at qdisc.ClassID, d Dump) string { return s.show(at, false, &d) }

func (s *Set) show(at qdisc.ClassID, withParent bool, stats *Dump) string {
	b := s.blocks[at]
	if b == nil {
		return ""
	}
	var out strings.Builder
	for _, tp := range b.protos {
		head := "filter "
		if withParent {
			head += "parent " + at.String() + " "
		}
		head += "protocol " + tc.ProtoName(tp.protocol) + " pref " + strconv.Itoa(int(tp.pref)) + " " + tp.kind + " chain 0 "
		out.WriteString(head + "\n")
		if tp.kind == "u32" {
			fmt.Fprintf(&out, "%sfh %s ht divisor 1 \n", head, u32HandleString(tp.u32ht))
		}
		for _, f := range tp.dumpOrder() {
			out.WriteString(head)
			f.printOptions(&out, stats)
			out.WriteString("\n")
		}
	}
	return out.String()
}

// specOrder is the elements in the order Load must add them: flower's
// by their mask's place in the masks list (the first filter of each
// mask makes it, so the list comes back in its order), then as they
// were inserted; the others in handle order.
func (tp *proto) specOrder() []*Filter {
	if tp.kind != "flower" {
		return tp.elems
	}
	at := func(f *Filter) int {
		m := f.flower.mask()
		return slices.IndexFunc(tp.flMasks, func(r *flMaskRef) bool { return r.m == m })
	}
	out := slices.Clone(tp.elems)
	slices.SortStableFunc(out, func(x, y *Filter) int {
		if ax, ay := at(x), at(y); ax != ay {
			return ax - ay
		}
		return x.added - y.added
	})
	return out
}

// dumpOrder is the elements as the kind's walk visits them: fw_walk goes
// bucket by bucket of fw_hash, newest first within one; the others in
// handle order.
func (tp *proto) dumpOrder() []*Filter {
	if tp.kind != "fw" {
		return tp.elems
	}
	out := slices.Clone(tp.elems)
	slices.SortStableFunc(out, func(x, y *Filter) int {
		if hx, hy := fwHash(x.Handle), fwHash(y.Handle); hx != hy {
			return int(hx) - int(hy)
		}
		return y.added - x.added
	})
	return out
}

// fwHash is fw_hash: the handle folded to one of 256 buckets.
func fwHash(h uint32) uint32 {
	h ^= h >> 16
	h ^= h >> 8
	return h % 256
}

// printOptions is the kind's print_fopt, then tc_print_action; stats
// is `tc -s` (nil: without).
func (f *Filter) printOptions(b *strings.Builder, stats *Dump) {
	switch f.Kind {
	case "matchall":
		fmt.Fprintf(b, "handle 0x%x ", f.Handle)
		if f.ClassID != 0 {
			fmt.Fprintf(b, "flowid %s ", f.ClassID)
		}
		printFlagsNL(b, f.Flags)
	case "fw":
		if f.fw.maskSet && f.fw.mask != 0xFFFFFFFF {
			fmt.Fprintf(b, "handle 0x%x/0x%x ", f.Handle, f.fw.mask)
		} else {
			fmt.Fprintf(b, "handle 0x%x ", f.Handle)
		}
		if f.ClassID != 0 {
			fmt.Fprintf(b, "classid %s ", f.ClassID)
		}
		if f.oldPolice != nil {
			f.oldPolice.pol.print(b, f.oldPolice.Index, f.oldPolice.tm(stats)) // tc_print_police of TCA_FW_POLICE
			return
		}
		if len(f.Actions) > 0 {
			b.WriteString("\n") // fw_print_opt's print_nl before tc_print_action
		}
	case "u32":
		f.u32.print(b, f)
		if f.oldPolice != nil {
			b.WriteString("\n") // u32_print_opt's print_nl, then tc_print_police
			f.oldPolice.pol.print(b, f.oldPolice.Index, f.oldPolice.tm(stats))
			return
		}
	case "flower":
		f.flower.print(b, f)
	case "flow":
		f.flow.print(b, f)
	}
	for i := range f.Actions {
		f.Actions[i].print(b, i+1, stats)
	}
}

// printFlagsNL prints the skip/offload flags as matchall and flower do,
// each on its own line.
func printFlagsNL(b *strings.Builder, flags uint32) {
	if flags&flagSkipHW != 0 {
		b.WriteString("\n  skip_hw")
	}
	if flags&flagSkipSW != 0 {
		b.WriteString("\n  skip_sw")
	}
	if flags&flagNotInHW != 0 {
		b.WriteString("\n  not_in_hw")
	}
}

// parseSkip reads skip_hw / skip_sw; skip_sw means hardware only, which
// has no software path to model.
func parseSkip(kind, w string, f *Filter) (bool, error) {
	switch w {
	case "skip_hw":
		f.Flags |= flagSkipHW
		return true, nil
	case "skip_sw":
		return true, qdisc.Lacksf(kind, "skip_sw: a filter in hardware only does not classify in the software path txlab models")
	}
	return false, nil
}

// parseClassID reads a flowid/classid value as get_tc_classid.
func parseClassID(kind, w string) (qdisc.ClassID, error) {
	h, ok := tc.ParseClassID(w)
	if !ok {
		return 0, qdisc.Parsef(kind, "Illegal \"classid\" %q", w)
	}
	return qdisc.ClassID(h), nil
}

// classidArg reads a filter's "classid X" or "flowid X" (NEXT_ARG, then
// get_tc_classid), words[0] being the keyword: f.ClassID set, the words
// after the value returned. matchall, fw, u32 and flower read it alike.
func classidArg(kind string, f *Filter, words []string) ([]string, error) {
	if len(words) < 2 {
		return nil, qdisc.Parsef(kind, "%q needs a value", words[0])
	}
	id, err := parseClassID(kind, words[1])
	if err != nil {
		return nil, err
	}
	f.ClassID = id
	return words[2:], nil
}

// parseMatchall is matchall_parse_opt.
func parseMatchall(f *Filter, cmd tc.Filter, s *Set) error {
	const kind = "matchall"
	if cmd.Handle != "" {
		h, err := strconv.ParseInt(cmd.Handle, 0, 64)
		if err != nil || h < 0 || h > 0xFFFFFFFF {
			return qdisc.Parsef(kind, "Illegal handle %q, must be numeric.", cmd.Handle)
		}
		f.Handle = uint32(h)
	}
	if f.Handle == 0 {
		f.Handle = 1 // mall_change: handle 0 becomes 1
	}
	if len(cmd.Options) == 0 {
		// matchall_parse_opt sends no TCA_OPTIONS; mall_change refuses that.
		return errKernel("RTNETLINK answers: Invalid argument (matchall needs a classid or an action)")
	}
	words := cmd.Options
	for len(words) > 0 {
		w := words[0]
		switch {
		case tc.Matches(w, "classid") || w == "flowid":
			rest, err := classidArg(kind, f, words)
			if err != nil {
				return err
			}
			words = rest
		case tc.Matches(w, "action"):
			acts, rest, err := parseActions(kind, words[1:], s)
			if err != nil {
				return err
			}
			f.Actions = append(f.Actions, acts...)
			words = rest
		default:
			ok, err := parseSkip(kind, w, f)
			if err != nil {
				return err
			}
			if !ok {
				return qdisc.Parsef(kind, "What is %q?", w)
			}
			if len(words) < 2 {
				// matchall_parse_opt reads skip_hw/skip_sw with NEXT_ARG,
				// which wants a word after it.
				return qdisc.Parsef(kind, "%q: Command line is not complete", w)
			}
			words = words[1:]
		}
	}
	return nil
}

// fwKey is a fw filter's mask (TCA_FW_MASK); its handle is the mark.
type fwKey struct {
	mask    uint32
	maskSet bool
}

// parseFw is fw_parse_opt: handle MARK[/MASK], then classid, action.
func parseFw(f *Filter, cmd tc.Filter, s *Set) error {
	const kind = "fw"
	key := &fwKey{mask: 0xFFFFFFFF}
	if cmd.Handle != "" {
		v, m, slash := strings.Cut(cmd.Handle, "/")
		n, err := strconv.ParseUint(v, 0, 32)
		if err != nil {
			return qdisc.Parsef(kind, "Illegal \"handle\" %q", cmd.Handle)
		}
		f.Handle = uint32(n)
		if slash {
			mm, err := strconv.ParseUint(m, 0, 32)
			if err != nil {
				return qdisc.Parsef(kind, "Illegal \"handle\" mask %q", cmd.Handle)
			}
			key.mask, key.maskSet = uint32(mm), true
		}
	}
	if len(cmd.Options) == 0 && cmd.Handle == "" {
		return nil // the old method: f.fw stays nil
	}
	if len(cmd.Options) == 0 {
		// fw_change without TCA_OPTIONS but with a handle: -EINVAL.
		return errKernel("RTNETLINK answers: Invalid argument (fw handle %s needs a classid or an action)", cmd.Handle)
	}
	if cmd.Handle == "" || f.Handle == 0 {
		return errKernel("RTNETLINK answers: Invalid argument (a fw filter with options needs \"handle MARK\")")
	}
	words := cmd.Options
	for len(words) > 0 {
		w := words[0]
		switch {
		case tc.Matches(w, "classid") || tc.Matches(w, "flowid"):
			rest, err := classidArg(kind, f, words)
			if err != nil {
				return err
			}
			words = rest
		case tc.Matches(w, "action"):
			acts, rest, err := parseActions(kind, words[1:], s)
			if err != nil {
				return err
			}
			f.Actions = append(f.Actions, acts...)
			words = rest
		case tc.Matches(w, "police"):
			rest, err := parseOldPolice(kind, words[1:], f, s)
			if err != nil {
				return err
			}
			words = rest
		case w == "indev":
			return qdisc.Lacksf(kind, "%s is not modelled", w)
		default:
			return qdisc.Parsef(kind, "What is %q?", w)
		}
	}
	f.fw = key
	f.takeOldPolice()
	return nil
}
