package cls

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// nowCtx is a context at a time of the test's choosing.
type nowCtx struct {
	qdisc.Ctx
	t sim.Time
}

func (c *nowCtx) Now() sim.Time { return c.t }

// flow_classify's result for the txlab packet 10.0.0.1:40000 ->
// 10.1.0.7:5001 (UDP), worked out by hand: hash mode is jhash2 of the
// keys in FLOW_KEY_* order with the filter's hashrnd (set here), map
// mode ((key & mask) ^ xor) >> rshift + addend; then modulo the divisor,
// and TC_H_MAKE(baseclass, baseclass + classid): the minor wraps at 16
// bits, the major stays the baseclass's.
func TestFlowClassify(t *testing.T) {
	tests := []struct {
		name    string
		at      qdisc.ClassID
		filters []string
		hashrnd uint32
		edit    func(p *skb.Packet)
		want    qdisc.FilterResult
	}{
		{"hash src,dst divisor 1024: jhash2 %#x %% 1024 = 823, + baseclass 1:1", root,
			[]string{"handle 1 flow hash keys src,dst divisor 1024"}, 0x12345678, nil, class(0x10338)},
		{"keys in FLOW_KEY_* order, not the words'", root,
			[]string{"handle 1 flow hash keys dst,src divisor 1024"}, 0x12345678, nil, class(0x10338)},
		{"no divisor: the minor wraps", root,
			[]string{"handle 1 flow hash keys src"}, 0, nil, class(0x1bc85)},
		{"five keys, baseclass 1:10", root,
			[]string{"handle 1 flow hash keys src,dst,proto,proto-src,proto-dst divisor 1024 baseclass 1:10"}, 0x9e3779b9, nil, class(0x10043)},
		{"nfct-* fall back to the packet's keys (no conntrack)", root,
			[]string{"handle 1 flow hash keys nfct-src,nfct-dst divisor 1024"}, 0x12345678, nil, class(0x10338)},
		{"map dst and 0xff", root, []string{"handle 1 flow map key dst and 0xff"}, 0, nil, class(0x10008)},
		{"map with every op", root,
			[]string{"handle 1 flow map key dst and 0xff xor 3 rshift 1 addend 10 divisor 16 baseclass 1:20"}, 0, nil, class(0x1002c)},
		{"map mark or 0x100", root, []string{"handle 1 flow map key mark or 0x100"}, 0,
			func(p *skb.Packet) { p.Mark = 5 }, class(0x10106)},
		{"map priority", root, []string{"handle 1 flow map key priority and 0xffff"}, 0,
			func(p *skb.Packet) { p.Priority = 0x10003 }, class(0x10004)},
		{"map proto-dst", root, []string{"handle 1 flow map key proto-dst"}, 0, nil, class(0x1138a)},
		{"map rxhash divisor 8", root, []string{"handle 1 flow map key rxhash divisor 8"}, 0,
			func(p *skb.Packet) { p.Hash = 0xdeadbeef }, class(0x10008)},
		{"an address addend", root, []string{"handle 1 flow map key dst addend -10.1.0.0"}, 0, nil, class(0x10008)},
		{"sk-uid of a root's socket", root, []string{"handle 1 flow map key sk-uid"}, 0, nil, class(0x10001)},
		{"vlan-tag of an untagged packet", root, []string{"handle 1 flow map key vlan-tag"}, 0, nil, class(0x10001)},
		{"rt-classid without realms", root, []string{"handle 1 flow map key rt-classid"}, 0, nil, class(0x10001)},
		{"at a class: baseclass's major is its qdisc's", 0x20005, []string{"handle 1 flow map key dst and 0xff"}, 0, nil, class(0x20008)},
		{"a drop action", root, []string{"handle 1 flow map key dst action drop"}, 0, nil, qdisc.FilterResult{Verdict: qdisc.VerdictShot}},
		{"continue: on to the next element", root,
			[]string{"pref 5 handle 1 flow map key dst action continue", "pref 5 handle 2 flow map key proto and 0xff"}, 0, nil, class(0x10012)},
		{"the elements in the order they were added", root,
			[]string{"pref 5 handle 9 flow map key proto", "pref 5 handle 2 flow map key dst and 0xff"}, 0, nil, class(0x10012)},
	}
	for _, tt := range tests {
		s := NewSet()
		for _, w := range tt.filters {
			add(t, s, tt.at, w)
		}
		for _, f := range s.Filters(tt.at) {
			f.flow.rt = &flowRT{hashrnd: tt.hashrnd}
		}
		p := pkt()
		if tt.edit != nil {
			tt.edit(&p)
		}
		if got := s.Classify(qdisc.CheckCtx(), &p, tt.at); got != tt.want {
			t.Errorf("%s: got %+v (%s), want %s", tt.name, got, got.Class, tt.want.Class)
		}
	}
}

func class(c qdisc.ClassID) qdisc.FilterResult {
	return qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: c}
}

// Where the packet has no ports (ICMP), proto-src is the socket's
// addr_fold and proto-dst the route's ^ htons(ETH_P_IP): one per
// socket, one for every packet.
func TestFlowFallbacks(t *testing.T) {
	s := NewSet()
	add(t, s, root, "handle 1 flow map key proto-src")
	add(t, s, 0x10001, "handle 1 flow map key proto-dst")
	got := func(at qdisc.ClassID, sock int32) qdisc.ClassID {
		p := pkt()
		icmp(&p)
		p.Sock = sock
		return s.Classify(qdisc.CheckCtx(), &p, at).Class
	}
	if a, b, c := got(root, 3), got(root, 3), got(root, 4); a != b || a == c {
		t.Errorf("proto-src of ICMP: socket 3 %s then %s, socket 4 %s: want one value per socket", a, b, c)
	}
	if a, b := got(0x10001, 3), got(0x10001, -1); a != b || a != qdisc.ClassID(0x10000|(1+(s.addrFold(dstAddr)^ethPIPBE))&0xFFFF) {
		t.Errorf("proto-dst of ICMP: %s and %s, want the route's fold", a, b)
	}
}

// hashrnd is drawn from the set's seed when the filter first classifies
// and again every perturb seconds after (in a copy no host armed, the
// timer armed by the first packet, its phase kept); a copy that
// replaces the set keeps it.
func TestFlowPerturb(t *testing.T) {
	mk := func(seed uint64) *Set {
		s, err := Load([]string{"parent 1: protocol all pref 1 handle 0x1 flow hash keys src,dst divisor 1024 perturb 10"})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSeed(sim.Seed{seed, 2})
		return s
	}
	rnd := hashrndAt(&nowCtx{Ctx: qdisc.CheckCtx()})
	a := mk(1)
	h0 := rnd(a, 5*sim.Second)
	if h0 != rnd(mk(1), 0) || h0 == rnd(mk(9), 0) {
		t.Errorf("hashrnd %#x: not the seed's alone", h0)
	}
	if h := rnd(a, 14*sim.Second); h != h0 {
		t.Errorf("hashrnd changed before its period: %#x -> %#x", h0, h)
	}
	h1 := rnd(a, 15*sim.Second)
	if h1 == h0 {
		t.Errorf("hashrnd did not change at its period")
	}
	if h := rnd(a, 24*sim.Second); h != h1 {
		t.Errorf("hashrnd changed twice in one period")
	}
	// The host's set changes (another filter comes); the copy that
	// replaces this one keeps the filter's hashrnd and timer.
	b, err := Load(append(a.Specs(1), "parent 1: protocol all pref 2 handle 0x1 flow map key dst"))
	if err != nil {
		t.Fatal(err)
	}
	b.SetSeed(sim.Seed{1, 2})
	b.Keep(a, 24*sim.Second)
	if h := rnd(b, 24*sim.Second); h != h1 {
		t.Errorf("the reloaded copy's hashrnd %#x, want %#x", h, h1)
	}
	if h := rnd(b, 25*sim.Second); h == h1 {
		t.Errorf("the reloaded copy lost the timer's phase")
	}
}

// flow_print_opt's text, and Specs that rebuild the same filters; a
// change keeps what it does not name (flow_change copies fold), but tc
// always sends the mode.
func TestFlowShowAndSpecs(t *testing.T) {
	s := NewSet()
	add(t, s, root, "handle 1 flow hash keys src,dst divisor 1024")
	add(t, s, root, "pref 49152 handle 2 flow map key dst and 0xff")
	add(t, s, root, "pref 49152 handle 3 flow map key mark or 0x100 xor 1 rshift 2 addend 5 baseclass 1:10")
	add(t, s, root, "pref 49152 handle 4 flow hash keys proto-dst,rxhash perturb 10 action drop")
	want := "filter parent 1: protocol all pref 49152 flow chain 0 \n" +
		"filter parent 1: protocol all pref 49152 flow chain 0 handle 0x1 hash keys src,dst divisor 1024 baseclass 1:1 \n" +
		"filter parent 1: protocol all pref 49152 flow chain 0 handle 0x2 map keys dst and 0x000000ff baseclass 1:1 \n" +
		"filter parent 1: protocol all pref 49152 flow chain 0 handle 0x3 map keys mark and 0xfffffeff xor 0x00000001 or 0x00000100 rshift 2 addend 0x5 baseclass 1:10 \n" +
		"filter parent 1: protocol all pref 49152 flow chain 0 handle 0x4 hash keys proto-dst,rxhash baseclass 1:1 perturb 10sec \n" +
		"\n\taction order 1: gact action drop\n\t random type none pass val 0\n\t index 1 ref 1 bind 1\n\n"
	if got := s.Show(root, true); got != want {
		t.Errorf("show:\n%q\nwant\n%q", got, want)
	}
	c, err := Load(s.Specs(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Show(root, true); got != want {
		t.Errorf("the copy shows:\n%s", got)
	}
	cmd, _ := tc.ParseFilter(strings.Fields("pref 49152 handle 1 flow divisor 64"))
	if _, err := s.Add(tc.VerbChange, cmd, root); err != nil {
		t.Fatal(err)
	}
	f := s.Filters(root)[0]
	if f.flow.mode != flowModeMap || f.flow.keyList() != "src,dst" || f.flow.divisor != 64 || f.flow.baseclass != 0x10001 {
		t.Errorf("after the change: %+v", *f.flow)
	}
	c, err = Load(s.Specs(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Show(root, true), s.Show(root, true); got != want {
		t.Errorf("the copy after a change shows:\n%s\nwant\n%s", got, want)
	}
	// Specs always name the baseclass; a spec that does not gets
	// flow_change's default, as a tc command does.
	c, err = Load([]string{"parent 1: protocol all pref 1 handle 0x1 flow map key dst"})
	if err != nil || c.Filters(root)[0].flow.baseclass != 0x10001 {
		t.Errorf("a spec without baseclass: %v %+v", err, c.Filters(root)[0].flow)
	}
	cmd, _ = tc.ParseFilter(strings.Fields("pref 49152 handle 9 flow divisor 64"))
	if _, err := s.Add(tc.VerbChange, cmd, root); err == nil || !strings.Contains(err.Error(), "Need both RTM_NEWTFILTER and NLM_F_CREATE") {
		t.Errorf("a change of a flow filter that is not there: %v", err)
	}
	if !slices.Contains(Kinds(), "flow") {
		t.Errorf("Kinds() = %v lacks flow", Kinds())
	}
}

// Bad flow filters get tc's (f_flow.c) or the kernel's (flow_change)
// answer.
func TestFlowAddErrors(t *testing.T) {
	tests := []struct {
		filters []string
		want    string
		class   error
	}{
		{[]string{"handle 1 flow hash keys src,foo"}, `flow: Unknown flow key "foo"`, qdisc.ErrParse},
		{[]string{"handle 1 flow map keys src,dst"}, `flow: Invalid mode "map" for multiple keys`, qdisc.ErrParse},
		{[]string{"handle 1 flow hash keys src bogus"}, `flow: What is "bogus"?`, qdisc.ErrParse},
		{[]string{"handle 1 flow hash keys src divisor x"}, `flow: Illegal "divisor"`, qdisc.ErrParse},
		{[]string{"handle 1 flow map key dst and x"}, `flow: Illegal "mask"`, qdisc.ErrParse},
		{[]string{"handle 1 flow map key dst or -1"}, `flow: Illegal "or"`, qdisc.ErrParse},
		{[]string{"handle 1 flow map key dst rshift 1.5"}, `flow: Illegal "rshift"`, qdisc.ErrParse},
		{[]string{"handle 1 flow map key dst baseclass 1:0"}, `flow: Illegal "baseclass"`, qdisc.ErrParse},
		{[]string{"handle 1 flow map key mark addend 10.0.0.1"}, `flow: Illegal "addend"`, qdisc.ErrParse},
		{[]string{"handle 1 flow hash keys src perturb 1s"}, `flow: Illegal "perturb"`, qdisc.ErrParse},
		{[]string{"handle x flow hash keys src"}, `flow: Illegal "handle"`, qdisc.ErrParse},
		{[]string{"handle 1 flow hash keys"}, `"keys": Command line is not complete`, qdisc.ErrParse},
		{[]string{"flow hash keys src"}, "RTNETLINK answers: Invalid argument", qdisc.ErrKernel},
		{[]string{"handle 1 flow hash divisor 4"}, "RTNETLINK answers: Invalid argument", qdisc.ErrKernel},
		{[]string{"handle 1 flow map key dst perturb 10"}, "RTNETLINK answers: Invalid argument", qdisc.ErrKernel},
		{[]string{"handle 1 flow map key dst rshift 32"}, "RTNETLINK answers: Numerical result out of range", qdisc.ErrKernel},
		{[]string{"pref 1 handle 1 flow hash keys src", "pref 1 handle 1 flow hash keys dst"}, "Error: Filter already exists.", qdisc.ErrKernel},
		{[]string{"handle 1 flow hash keys iif"}, "key iif (skb->skb_iif) is not modelled", qdisc.ErrLacks},
		{[]string{"handle 1 flow hash keys src match meta(priority eq 1)"}, "ematches are not modelled", qdisc.ErrLacks},
		{[]string{"handle 1 flow hash keys src police rate 1mbit burst 10k"}, `own "police" (TCA_FLOW_POLICE) is not modelled`, qdisc.ErrLacks},
	}
	for _, tt := range tests {
		err := addUntilError(t, tt.filters)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%v: %v, want %q of class %v", tt.filters, err, tt.want, tt.class)
		}
	}
}

// Filtered is a block with a tcf_proto, whether it holds an element or
// not (a bare u32 makes one): what a flow qdisc asks before its hash.
func TestFiltered(t *testing.T) {
	s := NewSet()
	if s.Filtered(root) {
		t.Error("an empty set is filtered")
	}
	add(t, s, root, "protocol ip pref 1 u32")
	if !s.Filtered(root) || s.Filtered(0x20000) {
		t.Errorf("a bare u32 at 1: gives Filtered %v at 1:, %v at 2:", s.Filtered(root), s.Filtered(0x20000))
	}
}

// A flow filter deleted and added again is a new filter, which
// flow_change gives a fresh hashrnd (get_random_bytes without fold); the
// copies that replace each other along the way (one per tc command,
// Set.Keep) keep a filter's hashrnd while it stays, whatever else comes
// and goes. The draws are the seed's, so the same commands give the same
// numbers.
func TestFlowReAddedDrawsAgain(t *testing.T) {
	const flow = "parent 1: protocol all pref 1 handle 0x1 flow hash keys src,dst divisor 1024"
	const other = "parent 1: protocol all pref 2 handle 0x1 flow map key dst"
	ctx := &nowCtx{Ctx: qdisc.CheckCtx()}
	// run replays the host's sets, one per command, into copies, and
	// returns the filter's hashrnd in each copy that holds it.
	run := func(sets ...[]string) []uint32 {
		var old *Set
		var out []uint32
		for _, specs := range sets {
			s, err := Load(specs)
			if err != nil {
				t.Fatal(err)
			}
			s.SetSeed(sim.Seed{1, 2})
			s.Keep(old, 0)
			old = s
			fs := s.Filters(root)
			if len(fs) == 0 || fs[0].Pref != 1 {
				continue
			}
			p := pkt()
			s.Classify(ctx, &p, root)
			out = append(out, fs[0].flow.rt.hashrnd)
		}
		return out
	}
	got := run([]string{flow}, []string{flow, other}, []string{other}, []string{other, flow}, []string{flow}, nil, []string{flow})
	if len(got) != 5 {
		t.Fatalf("hashrnds %#x", got)
	}
	if got[0] != got[1] || got[2] != got[3] {
		t.Errorf("hashrnd changed while the filter stayed: %#x", got)
	}
	if got[0] == got[2] || got[2] == got[4] || got[0] == got[4] {
		t.Errorf("a filter added again kept an earlier one's hashrnd: %#x", got)
	}
	if again := run([]string{flow}, []string{flow, other}, []string{other}, []string{other, flow}, []string{flow}, nil, []string{flow}); !slices.Equal(again, got) {
		t.Errorf("the same commands drew %#x, then %#x", got, again)
	}
}

// flow_change arms the perturbation timer when tc adds the filter, and
// again when tc changes it: a filter added at 0 s with perturb 10 has
// drawn a new hashrnd by its first packet at 15 s, and one changed at
// 20 s keeps its hashrnd until 30 s. Another filter's add leaves the
// timer be.
func TestFlowPerturbArmedByTC(t *testing.T) {
	spec := "parent 1: protocol all pref 1 handle 0x1 flow hash keys src,dst divisor 1024 perturb 10"
	load := func(old *Set, at sim.Time, specs ...string) *Set {
		s, err := Load(specs)
		if err != nil {
			t.Fatal(err)
		}
		s.SetSeed(sim.Seed{1, 2})
		s.Keep(old, at)
		return s
	}
	rnd := hashrndAt(&nowCtx{Ctx: qdisc.CheckCtx()})
	first := rnd(load(nil, 15*sim.Second, spec), 15*sim.Second) // added at 15 s: the first draw
	a := load(nil, 0, spec)
	h := rnd(a, 15*sim.Second)
	if h == first {
		t.Fatalf("a filter added at 0 s still has its first hashrnd at 15 s: its timer was not armed by tc")
	}
	b := load(a, 20*sim.Second, strings.Replace(spec, "divisor 1024", "divisor 512", 1))
	if got := rnd(b, 29*sim.Second); got != h {
		t.Errorf("changed at 20 s: hashrnd %#x at 29 s, want %#x kept until 30 s", got, h)
	}
	h30 := rnd(b, 30*sim.Second)
	if h30 == h {
		t.Errorf("changed at 20 s: hashrnd not drawn again at 30 s")
	}
	c := load(b, 35*sim.Second, append(b.Specs(1), "parent 1: protocol all pref 2 handle 0x1 flow map key dst")...)
	if got := rnd(c, 41*sim.Second); got == h30 {
		t.Errorf("another filter's add at 35 s re-armed the timer: no new hashrnd at 40 s")
	}
}

// hashrndAt classifies a packet at a time through a set with a flow
// filter at root, and returns that filter's hashrnd then.
func hashrndAt(ctx *nowCtx) func(s *Set, at sim.Time) uint32 {
	return func(s *Set, at sim.Time) uint32 {
		ctx.t = at
		p := pkt()
		s.Classify(ctx, &p, root)
		return s.Filters(root)[0].flow.rt.hashrnd
	}
}
