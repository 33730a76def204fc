package cls

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

const root = qdisc.ClassID(0x10000) // 1:

func add(t *testing.T, s *Set, at qdisc.ClassID, words string) *Filter {
	t.Helper()
	cmd, err := tc.ParseFilter(strings.Fields(words))
	if err != nil {
		t.Fatalf("%q: %v", words, err)
	}
	f, err := s.Add(tc.VerbAdd, cmd, at)
	if err != nil {
		t.Fatalf("%q: %v", words, err)
	}
	return f
}

// addUntilError adds filters (tc words) to a new set at the root until
// one is refused, and returns that error.
func addUntilError(t *testing.T, filters []string) error {
	t.Helper()
	s := NewSet()
	for _, w := range filters {
		cmd, err := tc.ParseFilter(strings.Fields(w))
		if err != nil {
			t.Fatalf("%q: %v", w, err)
		}
		if _, err := s.Add(tc.VerbAdd, cmd, root); err != nil {
			return err
		}
	}
	return nil
}

// pkt is a txlab UDP packet: 10.0.0.1:40000 -> 10.1.0.7:5001.
func pkt() skb.Packet {
	return skb.Packet{Len: 1514, Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010007, SrcPort: 40000, DstPort: 5001, Proto: 17}}
}

// icmp makes p an ICMP echo request.
func icmp(p *skb.Packet) { p.Keys.Proto = 1 }

// tcpData makes p a TCP segment of tcp_stream's (ACK set).
func tcpData(p *skb.Packet) { p.Keys.Proto, p.TCPFlags = 6, skb.TCPHdrACK }

// Each classifier, on the fields txlab's workloads set, decides as the
// kernel's: the first matching filter by pref gives the class.
func TestClassify(t *testing.T) {
	tests := []struct {
		name    string
		filters []string
		edit    func(p *skb.Packet)
		want    qdisc.FilterResult
		prio    uint32 // skb->priority after the actions
	}{
		{"u32 dport", []string{"protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10010}, 0},
		{"u32 dport misses", []string{"protocol ip prio 1 u32 match ip dport 5002 0xffff flowid 1:10"}, nil,
			qdisc.FilterResult{}, 0},
		{"u32 sport masked", []string{"protocol ip prio 1 u32 match ip sport 39936 0xff00 flowid 1:11"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10011}, 0},
		{"u32 src prefix", []string{"protocol ip prio 1 u32 match ip src 10.0.0.0/8 flowid 1:12"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10012}, 0},
		{"u32 dst host", []string{"protocol ip prio 1 u32 match ip dst 10.1.0.8/32 flowid 1:13",
			"protocol ip prio 2 u32 match ip dst 10.1.0.7 flowid 1:14"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10014}, 0},
		{"u32 tos (dscp EF)", []string{"protocol ip prio 1 u32 match ip tos 0xb8 0xfc flowid 1:15"},
			func(p *skb.Packet) { p.DSCP = 46 }, qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10015}, 0},
		{"u32 protocol", []string{"protocol ip prio 1 u32 match ip protocol 6 0xff flowid 1:16",
			"protocol ip prio 2 u32 match ip protocol 17 0xff flowid 1:17"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10017}, 0},
		{"u32 two keys, both must match", []string{"protocol ip prio 1 u32 match ip dport 5001 0xffff match ip src 192.168.0.0/16 flowid 1:18"}, nil,
			qdisc.FilterResult{}, 0},
		{"u32 raw u16 at 22", []string{"protocol ip prio 1 u32 match u16 5001 0xffff at 22 flowid 1:19"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10019}, 0},
		{"u32 without flowid decides nothing", []string{"protocol ip prio 1 u32 match ip dport 5001 0xffff"}, nil,
			qdisc.FilterResult{}, 0},
		{"pref order, not add order", []string{"protocol ip prio 5 u32 match ip dport 5001 0xffff flowid 1:5",
			"protocol ip prio 2 u32 match ip dport 5001 0xffff flowid 1:2"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}, 0},
		{"fw mark", []string{"protocol ip prio 1 handle 7 fw classid 1:7"}, func(p *skb.Packet) { p.Mark = 7 },
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10007}, 0},
		{"fw mark/mask", []string{"protocol ip prio 1 handle 7/0xff fw classid 1:7"}, func(p *skb.Packet) { p.Mark = 0x307 },
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10007}, 0},
		{"fw old method: the mark is the classid", []string{"protocol ip prio 1 fw"}, func(p *skb.Packet) { p.Mark = 0x10020 },
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10020}, 0},
		{"fw old method: another qdisc's major is no class", []string{"protocol ip prio 1 fw"}, func(p *skb.Packet) { p.Mark = 0x20020 },
			qdisc.FilterResult{}, 0},
		{"flower dst_port", []string{"protocol ip prio 1 flower ip_proto udp dst_port 5001 classid 1:21"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10021}, 0},
		{"flower src_ip and tos", []string{"protocol ip prio 1 flower src_ip 10.0.0.0/24 ip_tos 0x20/0xfc classid 1:22"},
			func(p *skb.Packet) { p.DSCP = 8 }, qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10022}, 0},
		{"flower tcp misses udp", []string{"protocol ip prio 1 flower ip_proto tcp dst_port 5001 classid 1:23"}, nil,
			qdisc.FilterResult{}, 0},
		{"matchall flowid", []string{"matchall classid 1:30"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10030}, 0},
		{"matchall skbedit priority", []string{"matchall action skbedit priority 1:31"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass}, 0x10031},
		{"gact drop", []string{"protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10 action drop"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictShot}, 0},
		{"continue goes on to the next filter", []string{"protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10 action continue",
			"protocol ip prio 2 u32 match ip dport 5001 0xffff flowid 1:11"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10011}, 0},
		{"skbedit then pass", []string{"protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10 action skbedit priority 6 pass",
			"protocol ip prio 2 matchall classid 1:11"}, nil,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10010}, 6},
		{"an ipv6 filter does not see IPv4", []string{"protocol ipv6 prio 1 matchall classid 1:40"}, nil,
			qdisc.FilterResult{}, 0},
		// TCP packets as tcp_stream sends them: the ports and protocol
		// where UDP's are, the header's flags at byte 13 of it.
		{"u32 tcp protocol and dport", []string{"protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:50",
			"protocol ip prio 2 u32 match ip protocol 6 0xff match ip dport 5001 0xffff flowid 1:51"}, tcpData,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10051}, 0},
		{"u32 tcp pure ACK (flags at 33)", []string{"protocol ip prio 1 u32 match ip protocol 6 0xff match u8 0x10 0xff at 33 flowid 1:52"},
			func(p *skb.Packet) { tcpData(p); p.Len = 66 }, qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10052}, 0},
		{"u32 tcp flags: CWR is not a pure ACK", []string{"protocol ip prio 1 u32 match u8 0x10 0xff at 33 flowid 1:52"},
			func(p *skb.Packet) { tcpData(p); p.TCPFlags |= skb.TCPHdrCWR }, qdisc.FilterResult{}, 0},
		{"u32 udp has no flags at 33", []string{"protocol ip prio 1 u32 match u8 0x10 0xff at 33 flowid 1:52"}, nil,
			qdisc.FilterResult{}, 0},
		{"u32 tcp doff at 32", []string{"protocol ip prio 1 u32 match u8 0x80 0xf0 at 32 flowid 1:53"}, tcpData,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10053}, 0},
		{"flower tcp dst_port", []string{"protocol ip prio 1 flower ip_proto tcp dst_port 5001 classid 1:54"}, tcpData,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10054}, 0},
		{"flower tcp src_port", []string{"protocol ip prio 1 flower ip_proto tcp src_port 40000 classid 1:55"}, tcpData,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10055}, 0},
		{"flower udp misses tcp", []string{"protocol ip prio 1 flower ip_proto udp dst_port 5001 classid 1:56"}, tcpData,
			qdisc.FilterResult{}, 0},
		// ICMP: parse_ip's icmp_type and icmp_code are at 20 and 21;
		// parse_icmp's type and code are nexthdr+0 and +1, and in the
		// root table (off2 0) they read the network header's first
		// bytes: 0x45, not the echo request's type 8.
		{"u32 ip icmp_type", []string{"protocol ip prio 1 u32 match ip icmp_type 8 0xff match ip icmp_code 0 0xff flowid 1:60"}, icmp,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10060}, 0},
		{"u32 ip icmp_type misses", []string{"protocol ip prio 1 u32 match ip icmp_type 0 0xff flowid 1:60"}, icmp,
			qdisc.FilterResult{}, 0},
		{"u32 icmp type is nexthdr+0: off2 is 0 at the root", []string{"protocol ip prio 1 u32 match icmp type 8 0xff flowid 1:61"}, icmp,
			qdisc.FilterResult{}, 0},
		{"u32 icmp type reads the version byte at the root", []string{"protocol ip prio 1 u32 match icmp type 0x45 0xff match icmp code 0 0xff flowid 1:62"}, icmp,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10062}, 0},
		// parse_udp and parse_tcp: src and dst are nexthdr+0 and +2,
		// the IP header's first two words at the root.
		{"u32 udp dst is nexthdr+2: the IP total length at the root", []string{"protocol ip prio 1 u32 match udp dst 5001 0xffff flowid 1:63"}, nil,
			qdisc.FilterResult{}, 0},
		{"u32 tcp src reads version, IHL and tos at the root", []string{"protocol ip prio 1 u32 match tcp src 0x4500 0xffff flowid 1:64"}, tcpData,
			qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10064}, 0},
	}
	for _, tt := range tests {
		s := NewSet()
		for _, f := range tt.filters {
			add(t, s, root, f)
		}
		p := pkt()
		if tt.edit != nil {
			tt.edit(&p)
		}
		got := s.Classify(qdisc.CheckCtx(), &p, root)
		if got != tt.want || p.Priority != tt.prio {
			t.Errorf("%s: got %+v priority %#x, want %+v priority %#x", tt.name, got, p.Priority, tt.want, tt.prio)
		}
		// A copy rebuilt from the specs (what a plugin gets) decides the same.
		c, err := Load(s.Specs(1))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		p2 := pkt()
		if tt.edit != nil {
			tt.edit(&p2)
		}
		if got := c.Classify(qdisc.CheckCtx(), &p2, root); got != tt.want {
			t.Errorf("%s: the copy says %+v", tt.name, got)
		}
	}
}

// `tc filter show` as real tc prints it. Copied output loses the
// trailing space tc leaves after each node's header; lines are compared
// with it trimmed.
func TestShowRealOutput(t *testing.T) {
	tests := []struct {
		source, add string
		want        string
	}{
		{
			// chaosblade's notes: a delay on --remote-port=55111 is
			// `tc filter add dev eth0 protocol ip parent 1:0 prio 4 u32
			// match ip dport 55111 0xffff flowid 1:4`, then `tc filter
			// show dev eth0`.
			source: "chaosblade network delay notes (kernel 5.x, iproute2 5.x)",
			add:    "protocol ip prio 4 u32 match ip dport 55111 0xffff flowid 1:4",
			want: "filter parent 1: protocol ip pref 4 u32 chain 0\n" +
				"filter parent 1: protocol ip pref 4 u32 chain 0 fh 800: ht divisor 1\n" +
				"filter parent 1: protocol ip pref 4 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 flowid 1:4 not_in_hw\n" +
				"  match 0000d747/0000ffff at 20\n",
		},
		{
			// tc-testing filters/matchall.json's verify pattern and a
			// netdev report's `tc filter show` (protocol all, auto pref).
			source: "kernel tc-testing matchall.json; bugzilla tc filter show",
			add:    "matchall action drop",
			want: "filter parent 1: protocol all pref 49152 matchall chain 0\n" +
				"filter parent 1: protocol all pref 49152 matchall chain 0 handle 0x1\n" +
				"  not_in_hw\n" +
				"\taction order 1: gact action drop\n" +
				"\t random type none pass val 0\n" +
				"\t index 1 ref 1 bind 1\n\n",
		},
	}
	for _, tt := range tests {
		s := NewSet()
		add(t, s, root, tt.add)
		got := s.Show(root, true)
		var trimmed []string
		for _, l := range strings.Split(got, "\n") {
			trimmed = append(trimmed, strings.TrimRight(l, " "))
		}
		if g := strings.Join(trimmed, "\n"); g != tt.want {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", tt.source, g, tt.want)
		}
	}
}

// The kernel's tc-testing u32.json pattern for `... prio 1 u32 match ip
// src 127.0.0.1/32 flowid 1:1 action ok`, shown with `parent`.
func TestShowMatchesSelftest(t *testing.T) {
	s := NewSet()
	add(t, s, root, "protocol ip prio 1 u32 match ip src 127.0.0.1/32 flowid 1:1 action ok")
	re := regexp.MustCompile(`(?m)filter protocol ip pref 1 u32 chain (0[ ]+$|0 fh 800: ht divisor 1|0 fh 800::800 order 2048 key ht 800 bkt 0 \*?flowid 1:1.*\n\s+match 7f000001/ffffffff at 12)`)
	if n := len(re.FindAllString(s.Show(root, false), -1)); n != 3 {
		t.Errorf("pattern matched %d times, want 3:\n%s", n, s.Show(root, false))
	}
}

// Auto prefs follow tcf_auto_prio; u32 hash tables and node ids and
// flower handles count up as the kernel's.
func TestHandlesAndPrefs(t *testing.T) {
	s := NewSet()
	a := add(t, s, root, "protocol ip u32 match ip dport 1 0xffff flowid 1:1")
	b := add(t, s, root, "protocol ip u32 match ip dport 2 0xffff flowid 1:2")
	c := add(t, s, root, "protocol ip pref 7 u32 match ip dport 3 0xffff flowid 1:3")
	d := add(t, s, root, "protocol ip pref 7 u32 match ip dport 4 0xffff flowid 1:4")
	e := add(t, s, root, "protocol ip pref 9 flower ip_proto udp classid 1:5")
	f := add(t, s, root, "protocol ip pref 9 flower ip_proto udp dst_port 9 classid 1:6")
	got := []string{
		u32HandleString(a.Handle), u32HandleString(b.Handle), u32HandleString(c.Handle), u32HandleString(d.Handle),
	}
	want := []string{"800::800", "801::800", "802::800", "802::801"}
	if strings.Join(got, " ") != strings.Join(want, " ") || a.Pref != 49152 || b.Pref != 49151 || c.Pref != 7 {
		t.Errorf("u32 handles %v prefs %d %d %d, want %v 49152 49151 7", got, a.Pref, b.Pref, c.Pref, want)
	}
	if e.Handle != 1 || f.Handle != 2 {
		t.Errorf("flower handles %d %d, want 1 2", e.Handle, f.Handle)
	}
	// fl_change's idr_alloc_u32 from 1: the lowest handle free, not one
	// past the highest (a gap below an explicit handle is filled first,
	// and a deleted handle is taken again).
	add(t, s, root, "protocol ip pref 9 handle 5 flower ip_proto udp dst_port 10 classid 1:7")
	g := add(t, s, root, "protocol ip pref 9 flower ip_proto udp dst_port 11 classid 1:8")
	cmd, err := tc.ParseFilter(strings.Fields("protocol ip pref 9 handle 1 flower"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(cmd, root); err != nil {
		t.Fatal(err)
	}
	h := add(t, s, root, "protocol ip pref 9 flower ip_proto udp dst_port 12 classid 1:9")
	if g.Handle != 3 || h.Handle != 1 {
		t.Errorf("flower handles after 1, 2 and 5: %d, then with 1 deleted %d; want 3 and 1", g.Handle, h.Handle)
	}
}

// Bad filters get tc's or the kernel's message, naming the word.
func TestAddErrors(t *testing.T) {
	tests := []struct {
		filters []string
		want    string
		class   error
	}{
		{[]string{"protocol ip prio 1 bpf obj x.o"}, `TC classifier not found ("bpf"`, qdisc.ErrKernel},
		{[]string{"protocol ip prio 1 u32 match ip dport 5001"}, `Illegal "match"`, qdisc.ErrParse},
		{[]string{"protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:x"}, `Illegal "classid" "1:x"`, qdisc.ErrParse},
		{[]string{"protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1 bogus"}, `What is "bogus"?`, qdisc.ErrParse},
		{[]string{"protocol ip prio 1 u32 divisor 256"}, `divisor: u32 hash tables`, qdisc.ErrLacks},
		{[]string{"protocol ip prio 1 u32 match ip dport 1 0xffff flowid 1:1", "protocol ip prio 1 fw classid 1:1"},
			"Specified filter kind does not match existing one", qdisc.ErrKernel},
		{[]string{"protocol ip prio 1 u32 match ip dport 1 0xffff flowid 1:1", "protocol ipv6 prio 1 u32 match ip dport 1 0xffff flowid 1:1"},
			"Filter with specified priority/protocol not found", qdisc.ErrKernel},
		{[]string{"protocol ip prio 1 matchall classid 1:1", "protocol ip prio 1 matchall classid 1:2"}, "File exists", qdisc.ErrKernel},
		{[]string{"protocol ip prio 1 fw classid 1:1"}, `needs "handle MARK"`, qdisc.ErrKernel},
		{[]string{"protocol ip prio 1 flower dst_port 80 classid 1:1"}, `Illegal "dst_port"`, qdisc.ErrParse},
		{[]string{"protocol all prio 1 flower ip_proto udp classid 1:1"}, `Illegal "eth_type"`, qdisc.ErrParse},
		{[]string{"protocol ip prio 1 matchall action mirred egress redirect dev eth1"}, `mirred on a qdisc's filters is not modelled`, qdisc.ErrLacks},
		{[]string{"protocol ip prio 1 matchall action pedit ex munge ip ttl set 1"}, `action "pedit" is not modelled`, qdisc.ErrLacks},
		{[]string{"protocol ip prio 1 matchall action skbedit"}, "skbedit: nothing to edit", qdisc.ErrParse},
	}
	for _, tt := range tests {
		err := addUntilError(t, tt.filters)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%v: %v, want %q of class %v", tt.filters, err, tt.want, tt.class)
		}
	}
}

// Filters are per block: a class's filters are not the qdisc's.
func TestBlocks(t *testing.T) {
	s := NewSet()
	add(t, s, root, "matchall classid 1:1")
	add(t, s, 0x10001, "matchall classid 1:10")
	p := pkt()
	if got := s.Classify(qdisc.CheckCtx(), &p, 0x10001); got.Class != 0x10010 {
		t.Errorf("class 1:1's filters gave %+v", got)
	}
	if got := s.Classify(qdisc.CheckCtx(), &p, 0x20000); got.Verdict != qdisc.VerdictNone {
		t.Errorf("a block with no filters gave %+v", got)
	}
	cmd, _ := tc.ParseFilter(strings.Fields("pref 49152"))
	if err := s.Delete(cmd, root); err != nil {
		t.Fatal(err)
	}
	if got := s.Attached(); len(got) != 1 || got[0] != 0x10001 {
		t.Errorf("after deleting 1:'s filter, filters are attached at %v", got)
	}
}

// u32_parse_opt sends no options for a bare "u32" (u32_change then
// makes the tcf_proto and its root table alone) and no selector without
// a "match" (u32_change refuses it); the handle's bucket is ignored and
// a node of 0 asks for a new one; "order 0" leaves the handle alone.
func TestU32OptionsAndHandles(t *testing.T) {
	tests := []struct {
		filters []string
		err     string // "" when every add succeeds
		handle  string // the last element's handle
		show    string // a line Show must hold
	}{
		{[]string{"protocol ip prio 1 u32"}, "", "", "fh 800: ht divisor 1"},
		{[]string{"protocol ip prio 1 u32", "protocol ip prio 1 u32 match ip dport 1 0xffff flowid 1:1"}, "", "800::800", "fh 800::800 order 2048"},
		{[]string{"protocol ip prio 1 handle 800::1 u32"}, "Error: cls_u32: Filter handle requires options.", "", ""},
		{[]string{"protocol ip prio 1 u32 flowid 1:1"}, "Error: cls_u32: Selector not specified.", "", ""},
		{[]string{"protocol ip prio 1 u32 classid 1:1 action drop"}, "Selector not specified", "", ""},
		{[]string{"protocol ip prio 1 u32 order 0 match ip dport 1 0xffff flowid 1:1"}, "", "800::800", ""},
		// u32_get hands tc_new_tfilter the table a key-0 handle names:
		// an add finds it exists.
		{[]string{"protocol ip prio 1 handle 800: u32 match ip dport 1 0xffff flowid 1:1"}, "Error: Filter already exists.", "", ""},
		{[]string{"protocol ip prio 1 handle 800:1: u32 match ip dport 1 0xffff flowid 1:1"}, "", "800::800", ""},
		{[]string{"protocol ip prio 1 handle 800:5:7 u32 match ip dport 1 0xffff flowid 1:1"}, "", "800::7", ""},
		{[]string{"protocol ip prio 1 handle 0x80000009 u32 match ip dport 1 0xffff flowid 1:1"}, "", "800::9", ""},
		{[]string{"protocol ip prio 1 handle 800 u32 match ip dport 1 0xffff flowid 1:1"}, `Illegal filter ID "800"`, "", ""},
		// u32_parse_opt ORs any u32 order into the handle; u32_change
		// keeps the node (bits above it are the bucket, ignored, or a
		// table id, checked).
		{[]string{"protocol ip prio 1 u32 order 0x1001 match ip dport 1 0xffff flowid 1:1"}, "", "800::1", "fh 800::1 order 1 "},
		{[]string{"protocol ip prio 1 u32 order 0x1000 match ip dport 1 0xffff flowid 1:1"}, "", "800::800", ""},
		{[]string{"protocol ip prio 1 u32 order 0x80000005 match ip dport 1 0xffff order 0x80000006 flowid 1:1"}, "", "800::6", ""},
		{[]string{"protocol ip prio 1 u32 order 0x800005 match ip dport 1 0xffff flowid 1:1"}, "Handle specified hash table address mismatch", "", ""},
		{[]string{"protocol ip prio 1 handle 800::5 u32 order 0x1005 match ip dport 1 0xffff flowid 1:1"}, `"order" contradicts "handle"`, "", ""},
		// parse_icmp's keys and parse_at's nexthdr+ are offmask -1,
		// printed "at nexthdr+N"; keys merge only with the same offmask.
		{[]string{"protocol ip prio 1 u32 match icmp type 8 0xff match icmp code 0 0xff flowid 1:1"}, "", "800::800", "\n  match 08000000/ffff0000 at nexthdr+0\n"},
		{[]string{"protocol ip prio 1 u32 match u8 1 0xff at nexthdr+ 9 match u8 1 0xff at 9 flowid 1:1"}, "", "800::800", "\n  match 00010000/00ff0000 at nexthdr+8\n  match 00010000/00ff0000 at 8"},
		{[]string{"protocol ip prio 1 u32 match icmp id 1 0xffff flowid 1:1"}, `icmp "id" is not a field`, "", ""},
		{[]string{"protocol ip prio 1 u32 match udp dst 5001 0xffff match tcp src 1 0xffff flowid 1:1"}, "", "800::800", "\n  match 00011389/ffffffff at nexthdr+0\n"},
		{[]string{"protocol ip prio 1 u32 match tcp port 1 0xffff flowid 1:1"}, `"port" is not a field`, "", ""},
		// gen_new_kid: the lowest free node from 0x800.
		{[]string{"protocol ip prio 1 u32 order 5 match ip dport 1 0xffff flowid 1:1", "protocol ip prio 1 u32 match ip dport 3 0xffff flowid 1:1"}, "", "800::800", ""},
		{[]string{"protocol ip prio 1 u32 order 0x800 match ip dport 1 0xffff flowid 1:1", "protocol ip prio 1 u32 order 0x802 match ip dport 3 0xffff flowid 1:1",
			"protocol ip prio 1 u32 match ip dport 4 0xffff flowid 1:1"}, "", "800::801", ""},
		{[]string{"protocol ip prio 1 handle 801::1 u32 match ip dport 1 0xffff flowid 1:1"}, "Error: cls_u32: Handle specified hash table address mismatch", "", ""},
	}
	for _, tt := range tests {
		s := NewSet()
		var f *Filter
		var err error
		for _, w := range tt.filters {
			cmd, perr := tc.ParseFilter(strings.Fields(w))
			if perr != nil {
				t.Fatalf("%q: %v", w, perr)
			}
			if f, err = s.Add(tc.VerbAdd, cmd, root); err != nil {
				break
			}
		}
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: %v, want %q", tt.filters, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.filters, err)
			continue
		}
		if got := ""; f != nil {
			got = u32HandleString(f.Handle)
			if got != tt.handle {
				t.Errorf("%v: handle %s, want %s", tt.filters, got, tt.handle)
			}
		} else if tt.handle != "" {
			t.Errorf("%v: no element, want %s", tt.filters, tt.handle)
		}
		if !strings.Contains(s.Show(root, true), tt.show) {
			t.Errorf("%v: show lacks %q:\n%s", tt.filters, tt.show, s.Show(root, true))
		}
		p := pkt()
		p.Keys.DstPort = 2
		if got := s.Classify(qdisc.CheckCtx(), &p, root); got.Verdict != qdisc.VerdictNone {
			t.Errorf("%v: a packet no key matches got %+v", tt.filters, got)
		}
		if _, err := Load(s.Specs(1)); err != nil {
			t.Errorf("%v: the copy: %v", tt.filters, err)
		}
	}
}

// matchall_parse_opt sends no options for a bare "matchall", which
// mall_change refuses; it reads skip_hw/skip_sw with NEXT_ARG, so they
// cannot be the last word.
func TestMatchallOptions(t *testing.T) {
	tests := []struct {
		filter string
		err    string
	}{
		{"protocol ip prio 1 matchall", "RTNETLINK answers: Invalid argument"},
		{"protocol ip prio 1 handle 5 matchall", "RTNETLINK answers: Invalid argument"},
		{"protocol ip prio 1 matchall classid 1:1 skip_hw", "Command line is not complete"},
		{"protocol ip prio 1 matchall skip_hw classid 1:1", ""},
		{"protocol ip prio 1 matchall classid 1:1", ""},
	}
	for _, tt := range tests {
		cmd, err := tc.ParseFilter(strings.Fields(tt.filter))
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewSet().Add(tc.VerbAdd, cmd, root)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.filter, err, tt.err)
		}
	}
}

// flower_parse_ip_tos_ttl reads the tos in base 10 first, then base 16.
func TestFlowerTosBase(t *testing.T) {
	tests := []struct {
		tos  string
		dscp uint8
		hit  bool
	}{
		{"184", 46, true},    // 0xb8: EF
		{"0xb8", 46, true},   // hex with its prefix
		{"b8", 46, true},     // not decimal: base 16
		{"20", 5, true},      // decimal 20 is dscp 5
		{"20", 8, false},     // not 0x20 (dscp 8)
		{"32/0xfc", 8, true}, // decimal value, hex mask
		{"0x20/fc", 8, true}, // the mask is base 16
	}
	for _, tt := range tests {
		s := NewSet()
		add(t, s, root, "protocol ip prio 1 flower ip_tos "+tt.tos+" classid 1:1")
		p := pkt()
		p.DSCP = tt.dscp
		if got := s.Classify(qdisc.CheckCtx(), &p, root).Verdict == qdisc.VerdictClass; got != tt.hit {
			t.Errorf("ip_tos %s, dscp %d: hit %v, want %v", tt.tos, tt.dscp, got, tt.hit)
		}
	}
}

// fw's mask is fw_head's, one per pref (fw_set_parms refuses another);
// a pref is the mark method only while it has no fw_head: a filter with
// a handle makes one, and a bare "fw" on a pref with filters changes
// nothing. fw_walk dumps bucket by bucket of fw_hash, newest first, and
// fw_print_opt starts the actions on a line of their own.
func TestFwHead(t *testing.T) {
	tests := []struct {
		name    string
		filters []string
		mark    uint32
		err     string
		want    qdisc.FilterResult
	}{
		{"a second mask is refused", []string{"prio 1 handle 1/0xff fw classid 1:1", "prio 1 handle 2 fw classid 1:2"}, 2, "Invalid argument", qdisc.FilterResult{}},
		{"the same mask is taken", []string{"prio 1 handle 1/0xff fw classid 1:1", "prio 1 handle 2/0xff fw classid 1:2"}, 0x302, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}},
		{"a handle ends the mark method", []string{"prio 1 fw", "prio 1 handle 5 fw classid 1:5"}, 0x10020, "", qdisc.FilterResult{}},
		{"keyed after the mark method", []string{"prio 1 fw", "prio 1 handle 5 fw classid 1:5"}, 5, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10005}},
		{"a bare fw on a keyed pref changes nothing", []string{"prio 1 handle 5 fw classid 1:5", "prio 1 fw"}, 0x10020, "", qdisc.FilterResult{}},
	}
	for _, tt := range tests {
		s := NewSet()
		var err error
		for _, w := range tt.filters {
			cmd, perr := tc.ParseFilter(strings.Fields("protocol ip " + w))
			if perr != nil {
				t.Fatal(perr)
			}
			if _, err = s.Add(tc.VerbAdd, cmd, root); err != nil {
				break
			}
		}
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			continue
		}
		p := pkt()
		p.Mark = tt.mark
		if got := s.Classify(qdisc.CheckCtx(), &p, root); got != tt.want {
			t.Errorf("%s: mark %#x got %+v, want %+v", tt.name, tt.mark, got, tt.want)
		}
	}

	s := NewSet()
	for _, h := range []string{"1", "0x100", "2"} {
		add(t, s, root, "protocol ip prio 1 handle "+h+" fw classid 1:1")
	}
	add(t, s, root, "protocol ip prio 2 handle 3 fw classid 1:3 action drop")
	want := "filter parent 1: protocol ip pref 1 fw chain 0 \n" +
		"filter parent 1: protocol ip pref 1 fw chain 0 handle 0x100 classid 1:1 \n" +
		"filter parent 1: protocol ip pref 1 fw chain 0 handle 0x1 classid 1:1 \n" +
		"filter parent 1: protocol ip pref 1 fw chain 0 handle 0x2 classid 1:1 \n" +
		"filter parent 1: protocol ip pref 2 fw chain 0 \n" +
		"filter parent 1: protocol ip pref 2 fw chain 0 handle 0x3 classid 1:3 \n" +
		"\n\taction order 1: gact action drop\n\t random type none pass val 0\n\t index 1 ref 1 bind 1\n\n"
	if got := s.Show(root, true); got != want {
		t.Errorf("show:\n%q\nwant:\n%q", got, want)
	}
}

// tc_del_tfilter: a flush refuses a protocol, handle or kind; a pref's
// protocol and kind must be its own; deleting a pref's last element
// deletes the pref when the kind says last (matchall, fw, flower; u32
// only for the qdisc's one u32 pref), and u32's root table is not an
// element to delete.
func TestDelete(t *testing.T) {
	tests := []struct {
		name    string
		filters []string
		del     string
		err     string
		prefs   string // the prefs left at root, as Show lists them
	}{
		{"flush", []string{"prio 1 matchall classid 1:1", "prio 2 matchall classid 1:2"}, "", "", ""},
		{"flush with a protocol", []string{"prio 1 matchall classid 1:1"}, "protocol ip", "Cannot flush filters with protocol, handle or kind set", "1"},
		{"another protocol", []string{"prio 1 matchall classid 1:1"}, "protocol ipv6 pref 1", "Filter with specified priority/protocol not found", "1"},
		{"another kind", []string{"prio 1 matchall classid 1:1"}, "pref 1 u32", "Specified filter kind does not match existing one", "1"},
		{"the pref", []string{"prio 1 matchall classid 1:1", "prio 2 matchall classid 1:2"}, "protocol ip pref 1", "", "2"},
		{"matchall's one element", []string{"prio 1 matchall classid 1:1", "prio 2 matchall classid 1:2"}, "pref 1 handle 1 matchall", "", "2"},
		{"fw's last element", []string{"prio 1 handle 1 fw classid 1:1", "prio 1 handle 2 fw classid 1:2"}, "pref 1 handle 1 fw", "", "1"},
		{"flower's last element", []string{"prio 1 flower classid 1:1", "prio 2 matchall classid 1:2"}, "pref 1 handle 1 flower", "", "2"},
		{"u32's last element, the only u32", []string{"prio 1 u32 match ip dport 1 0xffff flowid 1:1"}, "pref 1 handle 800::800 u32", "", ""},
		{"u32's last element, another u32", []string{"prio 1 u32 match ip dport 1 0xffff flowid 1:1", "prio 2 u32 match ip dport 1 0xffff flowid 1:1"}, "pref 1 handle 800::800 u32", "", "1 2"},
		{"u32's root table", []string{"prio 1 u32 match ip dport 1 0xffff flowid 1:1"}, "pref 1 handle 800: u32", "Not allowed to delete root node", "1"},
	}
	for _, tt := range tests {
		s := NewSet()
		for _, f := range tt.filters {
			add(t, s, root, "protocol ip "+f)
		}
		cmd, err := tc.ParseFilter(strings.Fields(tt.del))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Delete(cmd, root)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
		var prefs []string
		for _, l := range strings.Split(s.Show(root, true), "\n") {
			if f := strings.Fields(l); len(f) == 10 && f[5] == "pref" {
				prefs = append(prefs, f[6])
			}
		}
		if got := strings.Join(prefs, " "); got != tt.prefs {
			t.Errorf("%s: prefs left %q, want %q", tt.name, got, tt.prefs)
		}
	}
}

// u32's root tables come from one tc_u_common per qdisc (its classes'
// blocks share it): 800: first, then idr_alloc_cyclic ids; it goes with
// the qdisc's last u32 pref. A copy rebuilt from Specs keeps the tables.
func TestU32CommonPerQdisc(t *testing.T) {
	const cl = qdisc.ClassID(0x10001)
	u32 := func(s *Set, at qdisc.ClassID, pref string) string {
		f := add(t, s, at, "protocol ip pref "+pref+" u32 match ip dport 1 0xffff flowid 1:1")
		return u32HandleString(f.Handle)
	}
	del := func(s *Set, at qdisc.ClassID, pref string) {
		cmd, _ := tc.ParseFilter(strings.Fields("pref " + pref))
		if err := s.Delete(cmd, at); err != nil {
			t.Fatal(err)
		}
	}
	s := NewSet()
	got := []string{u32(s, root, "1"), u32(s, cl, "1"), u32(s, root, "2")}
	del(s, root, "1")
	got = append(got, u32(s, root, "3"))
	add(t, s, root, "protocol ip pref 4 u32")
	if want := "800::800 801::800 802::800 803::800"; strings.Join(got, " ") != want {
		t.Errorf("handles %v, want %s", got, want)
	}
	c, err := Load(s.Specs(1))
	if err != nil {
		t.Fatalf("the copy: %v", err)
	}
	for _, at := range []qdisc.ClassID{root, cl} {
		if c.Show(at, true) != s.Show(at, true) {
			t.Errorf("the copy at %s:\n%s\nwant:\n%s", at, c.Show(at, true), s.Show(at, true))
		}
	}
	for _, p := range []string{"2", "3", "4"} {
		del(s, root, p)
	}
	del(s, cl, "1")
	if h := u32(s, root, "5"); h != "800::800" {
		t.Errorf("after the last u32 went: %s, want 800::800", h)
	}
}

// tc_new_tfilter's messages: change without a pref, change that would
// make a tcf_proto or an element, add of a handle that exists, and the
// auto pref meeting a pref of 0x8000.
func TestAddMessages(t *testing.T) {
	tests := []struct {
		setup []string
		verb  tc.Verb
		cmd   string
		want  string
	}{
		{nil, tc.VerbChange, "protocol ip u32 match ip dport 1 0xffff flowid 1:1", "Error: Invalid filter command with priority of zero."},
		{nil, tc.VerbChange, "pref 1 u32 match ip dport 1 0xffff flowid 1:1", "Error: Filter kind and protocol must be specified."},
		{nil, tc.VerbChange, "protocol ip pref 1 u32 match ip dport 1 0xffff flowid 1:1", "Error: Need both RTM_NEWTFILTER and NLM_F_CREATE to create a new filter."},
		{[]string{"protocol ip pref 1 handle 1 fw classid 1:1"}, tc.VerbChange, "pref 1 handle 2 fw classid 1:2", "Error: Need both RTM_NEWTFILTER and NLM_F_CREATE to create a new filter."},
		{[]string{"protocol ip pref 1 handle 1 fw classid 1:1"}, tc.VerbAdd, "protocol ip pref 1 handle 1 fw classid 1:2", "Error: Filter already exists."},
		{[]string{"protocol ip pref 1 matchall classid 1:1"}, tc.VerbAdd, "protocol ip pref 1 matchall classid 1:2", "RTNETLINK answers: File exists"},
		{[]string{"protocol ip pref 32768 matchall classid 1:1"}, tc.VerbAdd, "protocol ip matchall classid 1:2", "Error: Filter with specified priority/protocol not found."},
		// u32_change's own refusals carry NL_SET_ERR_MSG_MOD's "cls_u32: ".
		{nil, tc.VerbReplace, "protocol ip pref 1 handle 800: u32 match ip dport 1 0xffff flowid 1:1", "Error: cls_u32: Key node id cannot be zero."},
		{[]string{"protocol ip pref 1 u32 match ip dport 1 0xffff flowid 1:1"}, tc.VerbReplace,
			"protocol ip pref 1 handle 800::800 u32 skip_hw match ip dport 1 0xffff flowid 1:1", "Error: cls_u32: Key node flags do not match passed flags."},
		{[]string{"protocol ip pref 1 u32 match ip dport 1 0xffff flowid 1:1", "protocol ip pref 2 u32 match ip dport 1 0xffff flowid 1:1"}, tc.VerbAdd,
			"protocol ip pref 1 handle 801: u32 match ip dport 1 0xffff flowid 1:1", "Error: Filter already exists."},
	}
	for _, tt := range tests {
		s := NewSet()
		for _, w := range tt.setup {
			add(t, s, root, w)
		}
		cmd, err := tc.ParseFilter(strings.Fields(tt.cmd))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(tt.verb, cmd, root); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want %q", tt.verb, tt.cmd, err, tt.want)
		}
	}
}

// Verdicts are read as action_a2n reads them, prefixes included, and a
// verdict word is gact's before any kind; a kind is named in full, and
// any word that names no action of tc's goes to gact, whose
// parse_action_control refuses it ("stolen" is no tc word); gact's
// random takes a type, a verdict and a value up to 10000. parse_action takes words until "classid",
// "flowid" or a new_cmd word ("d" is delete's), so a filter's own words
// after an action are an action's, and skip_hw there is the action's
// flag, which tcf_action_init refuses unless the filter is skip_hw too.
func TestActionWords(t *testing.T) {
	const mall = "matchall classid 1:1 "
	tests := []struct {
		filter string // after "protocol ip prio 1"
		err    string
		class  error
		want   qdisc.Verdict
	}{
		{mall + "action dr", "", nil, qdisc.VerdictShot},
		{mall + "action s", "", nil, qdisc.VerdictShot}, // shot, not skbedit
		{mall + "action p", "", nil, qdisc.VerdictClass},
		{mall + "action skbedit priority 5 pi action dr", "", nil, qdisc.VerdictShot},
		{mall + "action gact pa", "", nil, qdisc.VerdictClass},
		{mall + "action stolen", "Bad action type stolen", qdisc.ErrParse, 0},
		{mall + "action drop random determ pass 10", "", nil, qdisc.VerdictShot},  // the 10th passes
		{mall + "action drop random netrand pass 1", "", nil, qdisc.VerdictClass}, // below(1) is 0: always
		{mall + "action drop random netrand pass 0", "", nil, qdisc.VerdictClass}, // tcf_gact_init: 0 acts as 1
		{mall + "action drop random often pass 10", `Illegal "random type"`, qdisc.ErrParse, 0},
		{mall + "action drop random determ pass 10001", "Illegal probability val  0x2711", qdisc.ErrParse, 0},
		{mall + "action drop random determ pass x", `Illegal probability val "x"`, qdisc.ErrParse, 0},
		{mall + "action drop random determ pass", "needs a verdict and a value", qdisc.ErrParse, 0},
		{mall + "action skbed priority 5", "Bad action type skbed", qdisc.ErrParse, 0},
		{mall + "action reclassify", "", nil, qdisc.VerdictShot}, // 16 reclassifications, then TC_RECLASSIFY_LOOP
		{mall + "action mirred egress redirect dev eth1", `mirred on a qdisc's filters is not modelled`, qdisc.ErrLacks, 0},
		{mall + "action vlan push id 5", `action "vlan" is not modelled`, qdisc.ErrLacks, 0},
		{mall + "action pipe drop", "", nil, qdisc.VerdictShot}, // two actions, no second "action"
		{mall + "action skbedit mark 1 action d", "bad action empty", qdisc.ErrParse, 0},
		{mall + "action d", `What is "d"?`, qdisc.ErrParse, 0},
		{mall + "action drop action", "bad action empty", qdisc.ErrParse, 0},
		{mall + "action index 3", "gact index: shared action instances are not modelled", qdisc.ErrLacks, 0},
		{mall + "action drop skip_hw", "Error: Mismatch between action and filter offload flags.", qdisc.ErrKernel, 0},
		{"matchall skip_hw classid 1:1 action drop skip_hw", "", nil, qdisc.VerdictShot},
		{"flower ip_proto udp action drop skip_hw", "Error: Mismatch between action and filter offload flags.", qdisc.ErrKernel, 0},
		{"flower skip_hw ip_proto udp action drop skip_hw", "", nil, qdisc.VerdictShot},
		{"flower ip_proto udp action drop classid 1:1 skip_hw", "", nil, qdisc.VerdictShot},
		{"flower ip_proto udp action drop ip_tos 0", "Bad action type ip_tos", qdisc.ErrParse, 0},
		{"u32 match ip dport 5001 0xffff action drop match ip sport 1 0xffff", "Bad action type match", qdisc.ErrParse, 0},
		{"u32 match ip dport 5001 0xffff action drop flowid 1:1", "", nil, qdisc.VerdictShot},
		{"handle 1 fw classid 1:1 action drop skip_hw", "Error: Mismatch between action and filter offload flags.", qdisc.ErrKernel, 0},
	}
	for _, tt := range tests {
		cmd, err := tc.ParseFilter(strings.Fields("protocol ip prio 1 " + tt.filter))
		if err != nil {
			t.Fatal(err)
		}
		s := NewSet()
		_, err = s.Add(tc.VerbAdd, cmd, root)
		if (err == nil) != (tt.err == "") || (err != nil && (!strings.Contains(err.Error(), tt.err) || !errors.Is(err, tt.class))) {
			t.Errorf("%s: %v, want %q of class %v", tt.filter, err, tt.err, tt.class)
			continue
		}
		if err != nil {
			continue
		}
		p := pkt()
		p.Mark = 1
		if got := s.Classify(qdisc.CheckCtx(), &p, root); got.Verdict != tt.want {
			t.Errorf("%s: %+v, want verdict %v", tt.filter, got, tt.want)
		}
	}
}

// fl_classify tries the masks in the order they were made
// (fl_check_assign_mask's list_add_tail; fl_mask_put removes one with
// its last filter) and answers with the first filter found, whatever
// its actions say: a "continue" goes on to the next pref, not to
// another filter of its own. fl_ht_insert_unique refuses a second
// filter with the same mask and masked key. A u32 replace of a node
// keeps its keys (u32_change's u32_init_knode copies the selector) and
// takes the new classid. A copy rebuilt from Specs answers the same.
func TestFilterOpsOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []string // "add WORDS", "replace WORDS" or "del WORDS"
		err  string   // the last op's error
		want qdisc.FilterResult
	}{
		{"the first mask made, not the lowest handle", []string{
			"add pref 1 handle 2 flower ip_proto udp classid 1:2",
			"add pref 1 handle 1 flower ip_proto udp dst_port 5001 classid 1:1",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}},
		{"continue ends the pref", []string{
			"add pref 1 flower ip_proto udp classid 1:1 action continue",
			"add pref 1 flower ip_proto udp dst_port 5001 classid 1:2",
			"add pref 2 matchall classid 1:3",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10003}},
		{"a mask goes with its last filter and comes back last", []string{
			"add pref 1 handle 3 flower ip_proto udp classid 1:1",
			"add pref 1 handle 2 flower ip_proto udp dst_port 5001 classid 1:2",
			"del pref 1 handle 3 flower",
			"add pref 1 handle 1 flower ip_proto udp classid 1:3",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}},
		{"a replace's new mask goes last", []string{
			"add pref 1 handle 1 flower ip_proto udp dst_port 5001 classid 1:1",
			"add pref 1 handle 2 flower ip_proto udp src_port 40000 classid 1:2",
			"replace pref 1 handle 1 flower ip_proto udp dst_port 5001 src_ip 10.0.0.1 classid 1:1",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}},
		{"the same mask and key", []string{
			"add pref 1 handle 1 flower ip_proto udp classid 1:1",
			"add pref 1 handle 2 flower ip_proto udp classid 1:2",
		}, "RTNETLINK answers: File exists", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10001}},
		{"the same masked key", []string{
			"add pref 1 flower src_ip 10.0.0.1/24 classid 1:1",
			"add pref 1 flower src_ip 10.0.0.2/24 classid 1:2",
		}, "RTNETLINK answers: File exists", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10001}},
		{"a u32 replace keeps the node's keys (u32_init_knode) and takes its classid", []string{
			"add pref 1 handle 800::1 u32 match ip dport 5001 0xffff classid 1:1",
			"replace pref 1 handle 800::1 u32 match ip dport 9 0xffff classid 1:2",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}},
		{"a u32 replace with no match words: the classid alone", []string{
			"add pref 1 handle 800::1 u32 match ip dport 5001 0xffff classid 1:1",
			"replace pref 1 handle 800::1 u32 classid 1:4",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10004}},
		{"and a second replace, the first's classid", []string{
			"add pref 1 handle 800::1 u32 match ip dport 9 0xffff classid 1:1",
			"replace pref 1 handle 800::1 u32 match ip dport 5001 0xffff classid 1:2",
			"replace pref 1 handle 800::1 u32 match ip dport 5001 0xffff classid 1:3",
		}, "", qdisc.FilterResult{}},
		{"another key under the same mask", []string{
			"add pref 1 flower src_ip 10.0.1.1/24 classid 1:1",
			"add pref 1 flower src_ip 10.0.0.2/24 classid 1:2",
		}, "", qdisc.FilterResult{Verdict: qdisc.VerdictClass, Class: 0x10002}},
	}
	for _, tt := range tests {
		s := NewSet()
		var err error
		for _, op := range tt.ops {
			verb, words, _ := strings.Cut(op, " ")
			cmd, perr := tc.ParseFilter(strings.Fields("protocol ip " + words))
			if perr != nil {
				t.Fatalf("%s: %q: %v", tt.name, op, perr)
			}
			switch verb {
			case "del":
				err = s.Delete(cmd, root)
			case "replace":
				_, err = s.Add(tc.VerbReplace, cmd, root)
			default:
				_, err = s.Add(tc.VerbAdd, cmd, root)
			}
			// Classify between the ops too: the masks' hashtables
			// made here must follow the next op.
			p := pkt()
			s.Classify(qdisc.CheckCtx(), &p, root)
		}
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
		p := pkt()
		if got := s.Classify(qdisc.CheckCtx(), &p, root); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
		c, err := Load(s.Specs(1))
		if err != nil {
			t.Fatalf("%s: the copy: %v", tt.name, err)
		}
		p = pkt()
		if got := c.Classify(qdisc.CheckCtx(), &p, root); got != tt.want {
			t.Errorf("%s: the copy got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// gact's random verdicts (act_gact.c with CONFIG_GACT_PROB): determ
// gives the other verdict to every VAL-th packet (gact_determ's
// atomic_inc_return(&gact->packets) % pval), netrand to a packet when
// get_random_u32_below(pval) is 0; tc prints the type, verdict and
// value in the action's random line (m_gact.c print_gact).
func TestGactRandom(t *testing.T) {
	s := NewSet()
	add(t, s, root, "protocol ip prio 1 matchall classid 1:1 action drop random determ pass 3")
	var got []qdisc.Verdict
	for i := 0; i < 7; i++ {
		p := pkt()
		got = append(got, s.Classify(qdisc.CheckCtx(), &p, root).Verdict)
	}
	shot, class := qdisc.VerdictShot, qdisc.VerdictClass
	if want := []qdisc.Verdict{shot, shot, class, shot, shot, class, shot}; !slices.Equal(got, want) {
		t.Errorf("determ 3: %v, want %v", got, want)
	}
	if show := s.Show(root, true); !strings.Contains(show, "\taction order 1: gact action drop\n\t random type determ pass val 3\n") {
		t.Errorf("show:\n%s", show)
	}
	n := NewSet()
	add(t, n, root, "protocol ip prio 1 matchall classid 1:1 action pass random netrand drop 4")
	ctx, drops := qdisc.CheckCtx(), 0
	for i := 0; i < 4000; i++ {
		p := pkt()
		if n.Classify(ctx, &p, root).Verdict == shot {
			drops++
		}
	}
	if drops < 880 || drops > 1120 { // 1000 expected, sd ~27
		t.Errorf("netrand 4: %d drops of 4000, want about 1000", drops)
	}
}

// egressCtx is clsact's egress context for a device of n queues.
type egressCtx struct {
	qdisc.Ctx
	n    int
	skip bool
}

func (x *egressCtx) Work(qdisc.Work, int) {}
func (x *egressCtx) Now() sim.Time        { return 0 }
func (x *egressCtx) RealNumTxQueues() int { return x.n }
func (x *egressCtx) SkipTxQueue()         { x.skip = true }

// skbedit queue_mapping: tc's words and print, and the action as
// tcf_skbedit_act runs it: only at tc egress (EgressCtx), and only below
// the device's real_num_tx_queues, where it sets skb->queue_mapping and
// skips the queue pick.
func TestSkbeditQueueMapping(t *testing.T) {
	s := NewSet()
	add(t, s, root, "protocol ip prio 1 matchall action skbedit queue_mapping 2 priority 1:3")
	if got := s.Show(root, false); !strings.Contains(got, "action order 1: skbedit queue_mapping 2 priority 1:3 pipe") {
		t.Errorf("show:\n%s", got)
	}
	for _, tt := range []struct {
		queues   int
		skip     bool
		wantQ    uint16
		wantPrio uint32
	}{{4, true, 2, 0x10003}, {2, false, 0, 0x10003}} {
		x := &egressCtx{n: tt.queues}
		p := pkt()
		s.Classify(x, &p, root)
		if x.skip != tt.skip || p.Queue != tt.wantQ || p.Priority != tt.wantPrio {
			t.Errorf("%d queues: skip %v queue %d priority %#x", tt.queues, x.skip, p.Queue, p.Priority)
		}
	}
	for _, tt := range []struct {
		words string
		want  bool
	}{
		{"matchall action skbedit queue_mapping 1", true},
		{"matchall action skbedit priority 1:2 q 1", true},
		{"u32 match ip dport 5001 0xffff action skbedit mark 3 action gact drop", false},
		{"matchall action gact drop action skbedit queue_mapping 3", true},
	} {
		if got := EditsQueue(strings.Fields(tt.words)); got != tt.want {
			t.Errorf("EditsQueue(%q) = %v", tt.words, got)
		}
	}
}
