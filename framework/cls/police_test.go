package cls

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// clockCtx is a classification context with a clock the test moves.
type clockCtx struct {
	qdisc.Ctx
	now sim.Time
}

func (x *clockCtx) Now() sim.Time        { return x.now }
func (x *clockCtx) Work(qdisc.Work, int) {}

// policed sends 1514-byte packets through s every gap from start for
// dur and counts those the filters pass (a class verdict).
func policed(s *Set, x *clockCtx, start, gap, dur sim.Time) (passed, shot int, reasons map[skb.DropReason]int) {
	reasons = map[skb.DropReason]int{}
	for x.now = start; x.now < start+dur; x.now += gap {
		p := pkt()
		switch r := s.Classify(x, &p, root); r.Verdict {
		case qdisc.VerdictClass:
			passed++
		case qdisc.VerdictShot:
			shot++
			reasons[r.Reason]++
		}
	}
	return passed, shot, reasons
}

// act_police as tcf_police_act runs it: a byte bucket of burst's
// transmit time filled at rate, a peak bucket of one MTU at peakrate, a
// packet bucket, the MTU check, and the verdicts for what conforms and
// what exceeds (reclassify by default: the filters again, 16 times,
// then the packet is shot).
func TestPoliceBuckets(t *testing.T) {
	const ms = sim.Millisecond
	tests := []struct {
		name, action string
		gap, dur     sim.Time
		lo, hi       int // packets passed
		reason       skb.DropReason
	}{
		// 1 MB/s: 1514 us a packet, 10 packets of burst, then 660 in 1 s
		{"rate", "police rate 8mbit burst 15140 drop", 100 * sim.Microsecond, 1000 * ms, 669, 672, skb.DropNone},
		// the packet bucket starts empty at the command and has filled
		// to its 10 by the first packet, 1 s later
		{"pps", "police pkts_rate 1000 pkts_burst 10 conform-exceed drop", 100 * sim.Microsecond, 1000 * ms, 1009, 1011, skb.DropNone},
		// the peak bucket holds one MTU: 2 MB/s from the start, not a
		// burst of 67 packets at once
		{"peakrate", "police rate 8mbit burst 100k mtu 2k peakrate 16mbit drop", 10 * sim.Microsecond, 10 * ms, 13, 15, skb.DropNone},
		{"no peakrate", "police rate 8mbit burst 100k mtu 2k drop", 10 * sim.Microsecond, 10 * ms, 73, 74, skb.DropNone},
		// a packet over the mtu always exceeds
		{"mtu", "police rate 8mbit burst 100k mtu 1000 drop", 100 * sim.Microsecond, 10 * ms, 0, 0, skb.DropNone},
		{"reclassify", "police rate 8mbit burst 15140", 100 * sim.Microsecond, 1000 * ms, 669, 672, skb.DropTCReclassifyLoop},
		{"mtu only", "police mtu 2000 conform-exceed drop/ok", 100 * sim.Microsecond, 10 * ms, 100, 100, skb.DropNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSet()
			add(t, s, root, "protocol ip prio 1 matchall classid 1:1 action "+tt.action)
			s.ArmActions(sim.Second)
			x := &clockCtx{}
			passed, shot, reasons := policed(s, x, 2*sim.Second, tt.gap, tt.dur)
			if passed < tt.lo || passed > tt.hi {
				t.Errorf("passed %d, want %d..%d (shot %d)", passed, tt.lo, tt.hi, shot)
			}
			if shot > 0 && reasons[tt.reason] != shot {
				t.Errorf("shot %d with reasons %v, want %q", shot, reasons, tt.reason)
			}
		})
	}
}

// A copy of the filters made for another filter's change (what a qdisc
// plugin's context gets) keeps a police action's bucket: an emptied
// bucket stays empty at the same instant.
func TestPoliceBucketKept(t *testing.T) {
	s := NewSet()
	add(t, s, root, "protocol ip prio 1 matchall classid 1:1 action police rate 8mbit burst 15140 drop")
	s.ArmActions(0)
	x := &clockCtx{}
	if passed, _, _ := policed(s, x, sim.Second, sim.Microsecond, 20*sim.Microsecond); passed != 10 {
		t.Fatalf("burst: %d passed, want 10", passed)
	}
	for _, keep := range []bool{true, false} {
		c, err := Load(s.Specs(root.Major()))
		if err != nil {
			t.Fatal(err)
		}
		old := s
		if !keep {
			old = nil
		}
		c.Keep(old, x.now)
		p := pkt()
		got := c.Classify(x, &p, root).Verdict
		if want := map[bool]qdisc.Verdict{true: qdisc.VerdictShot, false: qdisc.VerdictClass}[keep]; got != want {
			t.Errorf("kept %v: the next packet's verdict %v, want %v", keep, got, want)
		}
	}
}

// tc's words for police (m_police.c's act_parse_police) and its print,
// checked against the kernel's tc-testing police.json patterns (iproute2
// of 2021-22; today's sprint_size prints 2^32-1 bytes as 4Gb, where
// those patterns have 4096Mb).
func TestPoliceWords(t *testing.T) {
	tests := []struct {
		action string
		show   string // the action's line, after "action order 1: "
		err    string
		class  error
	}{
		{action: "police rate 1mbit burst 100k overhead 64", show: " police 0x1 rate 1Mbit burst 100Kb mtu 2Kb action reclassify overhead 64b \n\tref 1 bind 1 \n"},
		{action: "police rate 2mbit burst 200k linklayer atm", show: " police 0x1 rate 2Mbit burst 200Kb mtu 2Kb action reclassify overhead 0b linklayer atm \n"},
		{action: "police rate 3mbit burst 250k conform-exceed continue/drop", show: " police 0x1 rate 3Mbit burst 250Kb mtu 2Kb action continue/drop "},
		{action: "police rate 3mbit burst 250k conform-exceed 0/3", show: " police 0x1 rate 3Mbit burst 250Kb mtu 2Kb action pass/pipe "},
		{action: "police rate 3mbit burst 250k conform-exceed pass / pipe", show: "action pass/pipe "},
		{action: "police rate 90kbit burst 10k mtu 2kb peakrate 100kbit", show: " police 0x1 rate 90Kbit burst 10Kb mtu 2Kb peakrate 100Kbit "},
		{action: "police rate 90kbit burst 10k mtu 1k", show: " police 0x1 rate 90Kbit burst 10Kb mtu 1Kb "},
		{action: "police rate 7mbit burst 1m ok", show: " police 0x1 rate 7Mbit burst 1Mb mtu 2Kb action pass "}, // the pattern's 1024Kb: an older sprint_size
		{action: "police rate 7mbit burst 1m d", show: "action drop "},
		{action: "police rate 7mbit burst 1m p 8mbit mtu 2k", show: "peakrate 8Mbit action reclassify "}, // "p" is peakrate's
		{action: "police pkts_rate 1000 pkts_burst 200", show: " police 0x1 rate 0bit burst 0b mtu 4Gb pkts_rate 1000 pkts_burst 200 action reclassify "},
		{action: "police rate 5kbit burst 6kb peakrate 10kbit", err: "'mtu' is required, if 'peakrate' is requested.", class: qdisc.ErrParse},
		{action: "police rate 1kbit burst 10k pkts_rate 1000 pkts_burst 200", err: "'rate' and 'pkts_rate' are not allowed in same action.", class: qdisc.ErrParse},
		{action: "police rate 1mbit", err: "'burst' requires 'rate'.", class: qdisc.ErrParse},
		{action: "police burst 10k drop", err: "'rate' or 'avrate' or 'mtu' or 'pkts_rate' MUST be specified.", class: qdisc.ErrParse},
		{action: "police pkts_rate 10", err: "'pkts_burst' requires 'pkts_rate'.", class: qdisc.ErrParse},
		{action: "police rate 3tb burst 250k", err: `argument "3tb" is wrong: rate`, class: qdisc.ErrParse},
		{action: "police rate 3kbit burst 250P", err: `argument "250P" is wrong: buffer`, class: qdisc.ErrParse},
		{action: "police rate 3mbit burst 250k conform-exceed 10/drop", err: "Invalid argument", class: qdisc.ErrParse},
		{action: "police rate 1mbit burst 1k conform-exceed pass / goto chain 42", err: `verdict "goto" is not modelled`, class: qdisc.ErrParse},
		{action: "police rate 1mbit burst 1k rate 2mbit", err: `duplicate "rate"`, class: qdisc.ErrParse},
		{action: "police avrate 1mbit", err: "police avrate needs a rate estimator", class: qdisc.ErrKernel},
		{action: "police index 4", err: "police index: shared action instances are not modelled", class: qdisc.ErrLacks},
		{action: "police", err: "bad action parsing", class: qdisc.ErrParse},
		{action: "police rate", err: `"rate": Command line is not complete`, class: qdisc.ErrParse},
	}
	for _, tt := range tests {
		cmd, err := tc.ParseFilter(strings.Fields("protocol ip prio 1 matchall classid 1:1 action " + tt.action))
		if err != nil {
			t.Fatal(err)
		}
		s := NewSet()
		_, err = s.Add(tc.VerbAdd, cmd, root)
		if (err == nil) != (tt.err == "") || (err != nil && (!strings.Contains(err.Error(), tt.err) || !errors.Is(err, tt.class))) {
			t.Errorf("%s: %v, want %q of class %v", tt.action, err, tt.err, tt.class)
			continue
		}
		want := tt.show
		if strings.HasPrefix(want, " police") {
			want = "\taction order 1: " + want
		}
		if err == nil && !strings.Contains(s.Show(root, false), want) {
			t.Errorf("%s: show\n%q\nwant it to hold\n%q", tt.action, s.Show(root, false), tt.show)
		}
	}
}

// A u32 or fw filter's own "police" (parse_police into TCA_U32_POLICE,
// TCA_FW_POLICE), as old HTB recipes write it: the compat action, the
// filter's only one (tcf_exts_validate takes it over "action" words),
// a u32 node with it terminal, dumped apart from the actions, after the
// keys (u32) or the classid (fw).
func TestOldPolice(t *testing.T) {
	for _, tt := range []struct{ filter, show string }{
		{"protocol ip prio 1 u32 match ip dport 5001 0xffff police rate 8mbit burst 15140 drop flowid 1:1",
			"flowid 1:1 not_in_hw \n  match 00001389/0000ffff at 20\n police 0x1 rate 8Mbit burst 15140b mtu 2Kb action drop overhead 0b \n\tref 1 bind 1 \n"},
		{"protocol ip prio 1 handle 1 fw classid 1:1 police rate 8mbit burst 15140 drop action pass",
			"handle 0x1 classid 1:1  police 0x1 rate 8Mbit burst 15140b mtu 2Kb action drop overhead 0b \n\tref 1 bind 1 \n"},
	} {
		s := NewSet()
		f := add(t, s, root, tt.filter)
		if len(f.Actions) != 1 || f.Actions[0].pol == nil {
			t.Fatalf("%s: actions %+v", tt.filter, f.Actions)
		}
		if got := s.Show(root, false); !strings.Contains(got, tt.show) {
			t.Errorf("%s: show\n%q\nwant it to hold\n%q", tt.filter, got, tt.show)
		}
		s.ArmActions(0)
		x := &clockCtx{}
		var shot int
		for i := 0; i < 20; i++ {
			x.now = sim.Second + sim.Time(i)*sim.Microsecond
			p := pkt()
			p.Keys.DstPort, p.Mark = 5001, 1
			if s.Classify(x, &p, root).Verdict == qdisc.VerdictShot {
				shot++
			}
		}
		if shot != 10 {
			t.Errorf("%s: %d of 20 shot, want 10 past the 10-packet burst", tt.filter, shot)
		}
		c, err := Load(s.Specs(root.Major()))
		if err != nil || c.Show(root, false) != s.Show(root, false) {
			t.Errorf("%s: the copy: %v\n%s", tt.filter, err, c.Show(root, false))
		}
	}
}

// `tc -s filter show`: each action's counters as its kernel function
// keeps them (every packet it saw, bytes by qdisc_pkt_len; gact's drops;
// police's overlimits, and its drops when exceeding drops), and print_tm's
// times on its index line: whole seconds since the add, the last use and
// the first, each left out at zero ticks.
func TestActionStats(t *testing.T) {
	for _, tt := range []struct{ action, want string }{
		{"gact drop", "\t index 1 ref 1 bind 1 installed 3 sec used 1 sec firstused 2 sec\n\tAction statistics:\n\tSent 15140 bytes 10 pkt (dropped 10, overlimits 0 requeues 0) \n\tbacklog 0b 0p requeues 0\n"},
		{"gact pass random determ drop 5", "Sent 15140 bytes 10 pkt (dropped 2, overlimits 0 requeues 0)"},
		{"skbedit mark 3 pass", "skbedit  mark 3 pass\n\t index 1 ref 1 bind 1 installed 3 sec used 1 sec firstused 2 sec\n\tAction statistics:\n\tSent 15140 bytes 10 pkt (dropped 0,"},
		// 3k of burst passes two 1514-byte packets; 100 ms at 8 kbit
		// adds 100 bytes: the other 8 exceed
		{"police rate 8kbit burst 3k conform-exceed drop", "\tref 1 bind 1  installed 3 sec used 1 sec firstused 2 sec\n\tAction statistics:\n\tSent 15140 bytes 10 pkt (dropped 8, overlimits 8 requeues 0) "},
		// exceed reclassifies: __tcf_classify runs the police again, 17
		// times in all before TC_RECLASSIFY_LOOP: 2 + 8 x 17 packets
		// seen, 8 x 17 over, none dropped by the action
		{"police rate 8kbit burst 3k", "Sent 208932 bytes 138 pkt (dropped 0, overlimits 136 requeues 0)"},
		{"police mtu 1000 conform-exceed drop", "(dropped 10, overlimits 10 requeues 0)"},
	} {
		cmd, err := tc.ParseFilter(strings.Fields("protocol ip prio 1 matchall classid 1:1 action " + tt.action))
		if err != nil {
			t.Fatal(err)
		}
		s := NewSet()
		if _, err := s.Add(tc.VerbAdd, cmd, root); err != nil {
			t.Fatalf("%s: %v", tt.action, err)
		}
		s.ArmActions(500 * sim.Millisecond)
		x := &clockCtx{}
		for i := range 10 { // from 1.5 s to 2.4 s
			x.now = 1500*sim.Millisecond + sim.Time(i)*100*sim.Millisecond
			p := pkt()
			s.Classify(x, &p, root)
		}
		if got := s.ShowStats(root, Dump{Now: 3900 * sim.Millisecond}); !strings.Contains(got, tt.want) {
			t.Errorf("%s: tc -s filter show\n%s\nwant it to hold\n%q", tt.action, got, tt.want)
		}
		if got := s.Show(root, false); strings.Contains(got, "Action statistics") || strings.Contains(got, "installed") {
			t.Errorf("%s: tc filter show (no -s) shows stats:\n%s", tt.action, got)
		}
	}
}
