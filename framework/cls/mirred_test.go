package cls

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// egressBlock is where a clsact's egress filters sit in a test set.
const egressBlock = qdisc.ClassID(0xFFFFFFF3)

// mirredSet is a set whose egress block takes mirred, on a host with
// eth0, eth1 and ifb0.
func mirredSet() *Set {
	s := NewSet()
	s.SetDevices(func(name string) bool { return name == "eth0" || name == "eth1" || name == "ifb0" }, egressBlock)
	return s
}

// m_mirred.c's words and print_mirred's line, against the kernel's
// tc-testing mirred.json patterns ("mirred \(Egress Redirect to device
// lo\).*index 1 ref", "mirred \(Egress Mirror to device lo\) pipe"), and
// the refusals: tc's, the kernel's, and what the model lacks.
func TestMirredWords(t *testing.T) {
	tests := []struct {
		action string
		show   string
		err    string
		class  error
	}{
		{action: "mirred egress redirect dev ifb0", show: "action order 1: mirred (Egress Redirect to device ifb0) stolen\n\tindex 1 ref 1 bind 1\n"},
		{action: "mirred egress mirror dev eth1", show: "mirred (Egress Mirror to device eth1) pipe\n"},
		{action: "mirred egress mirror dev eth1 pass", show: "mirred (Egress Mirror to device eth1) pass\n"},
		{action: "mirred egress mirror dev eth1 reclassify", show: "(Egress Mirror to device eth1) reclassify\n"},
		{action: "mirred e r dev ifb0", show: "(Egress Redirect to device ifb0) stolen"}, // matches(): prefixes
		{action: "mirred egress redirect dev ifb0 action gact drop", show: "action order 2: gact action drop"},
		{action: "mirred egress redirect dev ifb9", err: `Cannot find device "ifb9"`, class: qdisc.ErrParse},
		{action: "mirred egress redirect", err: "Command line is not complete", class: qdisc.ErrParse},
		{action: "mirred egress redirect dev", err: "Command line is not complete", class: qdisc.ErrParse},
		{action: "mirred", err: "Command line is not complete", class: qdisc.ErrParse},
		{action: "mirred egress redirect blah", err: "Must specify device or block", class: qdisc.ErrKernel},
		{action: "mirred egress mirror redirect dev eth1", err: "Can't have both mirror and redir", class: qdisc.ErrParse},
		{action: "mirred egress ingress redirect dev eth1", err: "Can't have both ingress and egress", class: qdisc.ErrParse},
		{action: "mirred ingress egress redirect dev eth1", err: "Can't have both egress and ingress", class: qdisc.ErrParse},
		{action: "mirred egress egress redirect dev eth1", show: "(Egress Redirect to device eth1) stolen"}, // parse_direction passes a word it has no case for
		{action: "mirred sideways redirect dev eth1", err: "mirred option not supported sideways", class: qdisc.ErrParse},
		{action: "mirred help", err: "Usage: mirred <DIRECTION> <ACTION>", class: qdisc.ErrParse},
		{action: "mirred egress redirect blockid 3", err: "mirred blockid", class: qdisc.ErrLacks},
		{action: "mirred ingress redirect dev eth1", err: "mirred ingress", class: qdisc.ErrLacks},
		{action: "mirred index 5", err: "mirred index: shared action instances are not modelled", class: qdisc.ErrLacks},
		{action: "mirred egress redirect dev eth1 index 5", err: "mirred index", class: qdisc.ErrLacks},
	}
	for _, tt := range tests {
		cmd, err := tc.ParseFilter(strings.Fields("protocol ip prio 1 matchall action " + tt.action))
		if err != nil {
			t.Fatal(err)
		}
		s := mirredSet()
		_, err = s.Add(tc.VerbAdd, cmd, egressBlock)
		if (err == nil) != (tt.err == "") || (err != nil && (!strings.Contains(err.Error(), tt.err) || !errors.Is(err, tt.class))) {
			t.Errorf("%s: %v, want %q of class %v", tt.action, err, tt.err, tt.class)
			continue
		}
		if err == nil && !strings.Contains(s.Show(egressBlock, false), tt.show) {
			t.Errorf("%s: show\n%q\nwant it to hold\n%q", tt.action, s.Show(egressBlock, false), tt.show)
		}
	}
}

// Mirred runs only where the host redirects: not on a qdisc's block of
// the same set, nor in a set without the host's device lookup (a
// plugin's copy).
func TestMirredOnlyOnHostBlocks(t *testing.T) {
	cmd, err := tc.ParseFilter(strings.Fields("protocol ip prio 1 matchall action mirred egress redirect dev ifb0"))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Set{"qdisc block": mirredSet(), "no lookup": NewSet()} {
		at := root
		if name == "no lookup" {
			at = egressBlock
		}
		if _, err := s.Add(tc.VerbAdd, cmd, at); err == nil || !errors.Is(err, qdisc.ErrLacks) || !strings.Contains(err.Error(), "qdisc's filters") {
			t.Errorf("%s: %v, want the model's refusal", name, err)
		}
	}
}

// redirCtx is a host that records mirred's calls and answers with res
// (full: its nest is at the limit).
type redirCtx struct {
	clockCtx
	res   MirredResult
	full  bool
	calls []string
	prio  []uint32
}

func (x *redirCtx) MirredNestFull() bool { return x.full }

func (x *redirCtx) Mirred(dev string, target *any, e Eaction, p *skb.Packet) MirredResult {
	if *target == nil {
		*target = dev // the host keeps its handle in the slot
	}
	x.calls = append(x.calls, e.String()+" "+(*target).(string))
	x.prio = append(x.prio, p.Priority)
	return x.res
}

// tcf_mirred_act's verdicts: a redirect steals the packet, or shoots it
// when the host could not send it (a loop); a mirror goes on with its
// own control whatever became of its clone; the nest limit shoots
// either. The actions before mirred edit the packet it sends.
func TestMirredVerdicts(t *testing.T) {
	tests := []struct {
		action string
		res    MirredResult
		full   bool
		want   qdisc.Verdict
		calls  int
	}{
		{"mirred egress redirect dev ifb0", MirredSent, false, qdisc.VerdictStolen, 1},
		{"mirred egress redirect dev ifb0", MirredFailed, false, qdisc.VerdictShot, 1},
		{"mirred egress redirect dev ifb0", MirredSent, true, qdisc.VerdictShot, 0},
		{"mirred egress mirror dev eth1", MirredSent, false, qdisc.VerdictClass, 1},
		{"mirred egress mirror dev eth1", MirredFailed, false, qdisc.VerdictClass, 1},
		{"mirred egress mirror dev eth1", MirredSent, true, qdisc.VerdictShot, 0},
		{"mirred egress mirror dev eth1 drop", MirredSent, false, qdisc.VerdictShot, 1},
		{"mirred egress mirror dev eth1 action mirred egress redirect dev ifb0", MirredSent, false, qdisc.VerdictStolen, 2},
		{"skbedit priority 1:3 pipe action mirred egress redirect dev ifb0", MirredSent, false, qdisc.VerdictStolen, 1},
	}
	for _, tt := range tests {
		cmd, err := tc.ParseFilter(strings.Fields("protocol ip prio 1 matchall action " + tt.action))
		if err != nil {
			t.Fatal(err)
		}
		s := mirredSet()
		if _, err := s.Add(tc.VerbAdd, cmd, egressBlock); err != nil {
			t.Fatalf("%s: %v", tt.action, err)
		}
		x := &redirCtx{res: tt.res, full: tt.full}
		for range 2 {
			p := pkt()
			if r := s.Classify(x, &p, egressBlock); r.Verdict != tt.want {
				t.Errorf("%s, host %d (nest full %v): verdict %d, want %d", tt.action, tt.res, tt.full, r.Verdict, tt.want)
			}
		}
		if len(x.calls) != 2*tt.calls {
			t.Errorf("%s: %d calls to the host for 2 packets, want %d", tt.action, len(x.calls), 2*tt.calls)
		}
		if strings.HasPrefix(tt.action, "skbedit") && (len(x.prio) == 0 || x.prio[0] != 0x10003) {
			t.Errorf("%s: mirred sent priority %#x, want skbedit's 0x10003", tt.action, x.prio[0])
		}
	}
}
