package tc

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
)

// Cases follow get_qdisc_handle in iproute2's tc/tc_util.c, strtoul(16)
// included: a 0x prefix and a sign are accepted, anything after the
// colon is ignored.
func TestParseQdiscHandle(t *testing.T) {
	tests := []struct {
		in   string
		want Handle
		ok   bool
	}{
		{"1:", 0x10000, true},
		{"1", 0x10000, true},
		{"8001:", 0x80010000, true},
		{"ffff:", 0xffff0000, true},
		{"FFFF", 0xffff0000, true},
		{"0x10:", 0x100000, true},
		{"1:5", 0x10000, true}, // the minor is ignored, as tc does
		{"1:zz", 0x10000, true},
		{"none", 0, true},
		{"0:", 0, true},
		{"+a:", 0xa0000, true},
		{"-0:", 0, true},
		{"0x", 0, false}, // the x is left: not a colon
		{"", 0, false},
		{":", 0, false},
		{":1", 0, false},
		{"10000:", 0, false},
		{"-1:", 0, false},
		{"1x", 0, false},
		{"g:", 0, false},
		{"root", 0, false},
		{"ffffffffffffffffff:", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseQdiscHandle(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseQdiscHandle(%q) = %#x, %v; want %#x, %v", tt.in, uint32(got), ok, uint32(tt.want), tt.ok)
		}
	}
}

// Cases follow get_tc_classid.
func TestParseClassID(t *testing.T) {
	tests := []struct {
		in   string
		want Handle
		ok   bool
	}{
		{"root", Root, true},
		{"none", Unspec, true},
		{"1:1", 0x10001, true},
		{"8001:1e", 0x8001001e, true},
		{"1:", 0x10000, true},
		{":1", 0x1, true},
		{":", 0, true},
		{"10", 0x10, true},              // no colon: the whole u32
		{"ffffffff", Root, true},        // which can spell root
		{"100000000", 0, true},          // truncated to the __u32, as tc does
		{"ffff:fff1", 0xfffffff1, true}, // TC_H_INGRESS
		{"0x1:0x2", 0x10002, true},
		{"", 0, false},
		{"x", 0, false},
		{"1:1:1", 0, false},
		{"1:x", 0, false},
		{"10000:1", 0, false},
		{"1:10000", 0, false},
		{"1 :1", 0, false},
		{"-1:1", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseClassID(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseClassID(%q) = %#x, %v; want %#x, %v", tt.in, uint32(got), ok, uint32(tt.want), tt.ok)
		}
	}
}

// Strings as print_tc_classid and print_qdisc print them.
func TestHandleStrings(t *testing.T) {
	tests := []struct {
		h            Handle
		class, qdisc string
	}{
		{Root, "root", "ffff:"},
		{Unspec, "none", "0:"},
		{0x1, ":1", "0:"},
		{0x1e, ":1e", "0:"},
		{0x80010000, "8001:", "8001:"},
		{0x8001001e, "8001:1e", "8001:"},
		{MakeHandle(1, 3), "1:3", "1:"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.class {
			t.Errorf("%#x.String() = %q, want %q", uint32(tt.h), got, tt.class)
		}
		if got := tt.h.QdiscString(); got != tt.qdisc {
			t.Errorf("%#x.QdiscString() = %q, want %q", uint32(tt.h), got, tt.qdisc)
		}
	}
}

func TestHashBucket(t *testing.T) {
	// hash_32(val, 4) = (val * 0x61C88647) >> 28.
	tests := []struct {
		h    Handle
		want int
	}{{0, 0}, {0x10000, 8}, {0x80010000, 0}, {0x80020000, 8}, {0xffff0000, 7}}
	for _, tt := range tests {
		if got := HashBucket(tt.h); got != tt.want {
			t.Errorf("HashBucket(%#x) = %d, want %d", uint32(tt.h), got, tt.want)
		}
	}
}

func TestParseQdisc(t *testing.T) {
	tests := []struct {
		in   string
		want Qdisc
	}{
		{"fq_codel limit 100", Qdisc{Kind: "fq_codel", Options: []string{"limit", "100"}}},
		{"handle 1: root fq_codel", Qdisc{Handle: 0x10000, Parent: Root, Kind: "fq_codel", Options: []string{}}},
		{"root handle 1: mq fq", Qdisc{Handle: 0x10000, Parent: Root, Kind: "mq", Options: []string{"fq"}}},
		{"dev eth0 parent 1:1 handle 10: pfifo limit 5", Qdisc{Dev: "eth0", Handle: 0x100000, Parent: 0x10001, Kind: "pfifo", Options: []string{"limit", "5"}}},
		{"handle 0: handle 1: cake", Qdisc{Handle: 0x10000, Kind: "cake", Options: []string{}}}, // 0 is "unset" to tc's duplicate check
		{"parent none root sfq", Qdisc{Parent: Root, Kind: "sfq", Options: []string{}}},
		{"limit 100", Qdisc{Kind: "limit", Options: []string{"100"}}},
		{"fq handle 1:", Qdisc{Kind: "fq", Options: []string{"handle", "1:"}}}, // after the kind, words are the kind's
		{"root", Qdisc{Parent: Root}},
		{"", Qdisc{}},
	}
	for _, tt := range tests {
		got, err := ParseQdisc(strings.Fields(tt.in))
		if err != nil {
			t.Errorf("ParseQdisc(%q): %v", tt.in, err)
			continue
		}
		if got.Options == nil {
			got.Options = []string{}
		}
		want := tt.want
		if want.Options == nil && want.Kind != "" {
			want.Options = []string{}
		}
		if want.Kind == "" {
			want.Options = []string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseQdisc(%q) = %+v, want %+v", tt.in, got, want)
		}
	}
}

// Bad command lines: each gives tc's message naming the word.
func TestParseQdiscErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"handle", `"handle" needs a value`},
		{"parent", `"parent" needs a value`},
		{"dev", `"dev" needs a value`},
		{"handle x: fq", `argument "x:" is wrong: invalid qdisc ID`},
		{"handle 10000: fq", `argument "10000:" is wrong: invalid qdisc ID`},
		{"handle 1:1x fq", ``}, // tc ignores what follows the colon
		{"parent 1:x fq", `argument "1:x" is wrong: invalid parent ID`},
		{"parent zz fq", `argument "zz" is wrong: invalid parent ID`},
		{"handle 1: handle 2: fq", `duplicate "handle": "handle" is the second value`},
		{"parent 1:1 parent 1:2 fq", `duplicate "parent": "1:2" is the second value`},
		{"root parent 1:1 fq", `duplicate "parent": "1:1" is the second value`},
		{"parent 1:1 root fq", `"root" is duplicate parent ID`},
		{"root root fq", `"root" is duplicate parent ID`},
		{"dev eth0 dev eth1 fq", `duplicate "dev": "eth1" is the second value`},
		{"estimator 1s 8s fq", `"estimator" is not supported: rate estimators`},
		{"est 1s 8s fq", `"est" is not supported: rate estimators`},
		{"stab overhead 4 fq", ``},
		{"stab mtu 2047 fq", `stab: nothing to adjust`},
		{"stab overhead 4 overhead 5 fq", `duplicate "overhead": "5" is the second value`},
		{"stab linklayer x fq", `argument "linklayer" is wrong: invalid linklayer`},
		{"stab linklayer atm tsize 9000 fq", `addattr_l ERROR: message exceeded bound of 16384`},
		{"stab overhead 4 stab overhead 5 fq", `duplicate "stab"`},
		{"stab", `"stab" needs a value`},
		{"ingress", ``},
		{"ingress handle ffff:", ``},
		{"root ingress", `"ingress" is a duplicate parent ID`},
		{"clsact", ``},
		{"root clsact", `"clsact" is a duplicate parent ID`},
		{"ingress_block 1 fq", `"ingress_block" is not supported`},
		{"egress_b 1 fq", `"egress_b" is not supported`},
		{"help", `"help" is not supported`},
	}
	for _, tt := range tests {
		_, err := ParseQdisc(strings.Fields(tt.in))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ParseQdisc(%q): %v", tt.in, err)
		case tt.want != "" && err == nil:
			t.Errorf("ParseQdisc(%q): no error, want %q", tt.in, tt.want)
		case tt.want != "" && !strings.Contains(err.Error(), tt.want):
			t.Errorf("ParseQdisc(%q) = %q, want it to contain %q", tt.in, err, tt.want)
		}
		// tc refuses its own command line (exit 255); the words it
		// accepts that txlab does not model are the model's lack.
		class := qdisc.ErrSyntax
		if strings.Contains(tt.want, "is not supported") && tt.in != "help" {
			class = qdisc.ErrLacks
		}
		if tt.want != "" && err != nil && !errors.Is(err, class) {
			t.Errorf("ParseQdisc(%q) = %q, want class %v", tt.in, err, class)
		}
	}
}

func TestQdiscWordsRoundTrip(t *testing.T) {
	for _, in := range []string{"fq_codel limit 100", "handle 1: root mq fq", "dev eth0 handle 8001: parent 8001:3 pfifo", "root"} {
		q, err := ParseQdisc(strings.Fields(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(q.Words(), " "); got != in {
			t.Errorf("Words(%q) = %q", in, got)
		}
	}
}

func TestIsKeyword(t *testing.T) {
	for _, w := range []string{"dev", "handle", "root", "parent", "ingress", "clsact", "est", "stab", "s", "help", "ingress_b"} {
		if !IsKeyword(w) {
			t.Errorf("IsKeyword(%q) = false", w)
		}
	}
	for _, w := range []string{"fq", "fq_codel", "mq", "pfifo", "cake_mq", "sfq", "limit", ""} {
		if IsKeyword(w) {
			t.Errorf("IsKeyword(%q) = true", w)
		}
	}
}

// TestDevParent: the words qdisc, class and filter commands share are
// read alike, each with its own tc messages.
func TestDevParent(t *testing.T) {
	parsers := []struct {
		name               string
		parse              func([]string) (Handle, string, error)
		rootDup, badParent string
	}{
		{"qdisc", func(w []string) (Handle, string, error) { q, err := ParseQdisc(w); return q.Parent, q.Dev, err },
			`"root" is duplicate parent ID`, "invalid parent ID"},
		{"class", func(w []string) (Handle, string, error) { c, err := ParseClass(w); return c.Parent, c.Dev, err },
			`"root" is duplicate parent ID.`, "invalid parent ID"},
		{"filter", func(w []string) (Handle, string, error) { f, err := ParseFilter(w); return f.Parent, f.Dev, err },
			`"root" is duplicate parent ID`, "Invalid parent ID"},
	}
	for _, p := range parsers {
		cases := []struct {
			line, want string
			parent     Handle
			dev        string
		}{
			{"dev eth1 parent 1:10", "", 0x10010, "eth1"},
			{"root dev eth0", "", Root, "eth0"},
			{"dev a dev b", `duplicate "dev": "b" is the second value`, 0, ""},
			{"dev", `"dev" needs a value: Command line is not complete`, 0, ""},
			{"parent", `"parent" needs a value: Command line is not complete`, 0, ""},
			{"root parent 1:", `duplicate "parent"`, 0, ""},
			{"parent 1: root", p.rootDup, 0, ""},
			{"parent zz", `argument "zz" is wrong: ` + p.badParent, 0, ""},
		}
		for _, c := range cases {
			parent, dev, err := p.parse(strings.Fields(c.line))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s %s: %v", p.name, c.line, err)
			case c.want == "" && (parent != c.parent || dev != c.dev):
				t.Errorf("%s %s: parent %v dev %q, want %v %q", p.name, c.line, parent, dev, c.parent, c.dev)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s %s: %v, want %q", p.name, c.line, err, c.want)
			case c.want == p.rootDup && strings.HasSuffix(err.Error(), ".") != strings.HasSuffix(p.rootDup, "."):
				t.Errorf("%s %s: %q, want tc's %q exactly", p.name, c.line, err, p.rootDup)
			}
		}
	}
}
