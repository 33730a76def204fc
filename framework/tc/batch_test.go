package tc

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
)

// A batch file is read as tc -batch reads it: comments, continuation
// lines, quotes, blank lines; each command keeps the line it starts on.
func TestParseBatch(t *testing.T) {
	text := "# an HTB tree\n" +
		"qdisc add dev eth0 root handle 1: htb default 20\n" +
		"\n" +
		"class add dev eth0 parent 1: classid 1:10 \\\n" +
		"    htb rate 750mbit ceil 1gbit   # the big one\n" +
		"tc cl ch dev eth0 classid 1:10 htb rate 700mbit\r\n" +
		"f a dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid \"1:10\"\n" +
		"qdisc replace dev eth0 parent 1:10 handle 10: fq_codel\n"
	cmds, err := ParseBatch(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line int
		s    string
	}{
		{2, "qdisc add dev eth0 root handle 1: htb default 20"},
		{4, "class add dev eth0 parent 1: classid 1:10 htb rate 750mbit ceil 1gbit"},
		{6, "class change dev eth0 classid 1:10 htb rate 700mbit"},
		{7, "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10"},
		{8, "qdisc replace dev eth0 parent 1:10 handle 10: fq_codel"},
	}
	if len(cmds) != len(want) {
		t.Fatalf("%d commands, want %d: %v", len(cmds), len(want), cmds)
	}
	for i, c := range cmds {
		if c.Line != want[i].line || c.String() != want[i].s {
			t.Errorf("command %d: line %d %q, want line %d %q", i, c.Line, c.String(), want[i].line, want[i].s)
		}
	}
}

func TestParseBatchErrors(t *testing.T) {
	for _, tt := range []struct {
		text, want string
	}{
		{"qdisc add dev eth0 root htb\nqdics add dev eth0 root htb", `line 2: Object "qdics" is unknown`},
		{"class frob dev eth0", `line 1: Command "frob" is unknown`},
		{"qdisc", "line 1: qdisc: a verb is needed"},
		{"filter show dev eth0", `line 1: "show" is not supported`},
		{"actions add action drop", `line 1: "actions" is not supported`},
		{"class add dev eth0 \\", "line 1: Missing continuation line"},
		{"filter add dev eth0 parent 1: u32 match ip dst \"10.0.0.1", "line 1: Unterminated quoted string"},
	} {
		_, err := ParseBatch(tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.text, err, tt.want)
		}
	}
}

func TestParseClass(t *testing.T) {
	c, err := ParseClass(strings.Fields("dev eth0 parent 1:1 classid 1:10 htb rate 1mbit"))
	if err != nil || c.Dev != "eth0" || c.Parent != MakeHandle(1, 1) || c.ClassID != MakeHandle(1, 0x10) || c.Kind != "htb" ||
		strings.Join(c.Options, " ") != "rate 1mbit" {
		t.Fatalf("%+v %v", c, err)
	}
	if got := strings.Join(c.Words(), " "); got != "dev eth0 parent 1:1 classid 1:10 htb rate 1mbit" {
		t.Errorf("Words %q", got)
	}
	for _, tt := range []struct{ in, want string }{
		{"handle 1:10 htb rate 1mbit", `try "classid" instead of "handle"`},
		{"classid 1:zz htb", `argument "1:zz" is wrong: invalid class ID`},
		{"parent 1: root htb", `"root" is duplicate parent ID.`},
		{"classid 1:1 classid 1:2 htb", `duplicate "classid"`},
		{"parent", `"parent" needs a value`},
		{"est 1s 8s htb", `"est" is not supported`},
	} {
		_, err := ParseClass(strings.Fields(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestParseFilter(t *testing.T) {
	f, err := ParseFilter(strings.Fields("dev eth0 parent 1: protocol ip prio 1 handle 5 fw classid 1:5"))
	if err != nil || f.Parent != MakeHandle(1, 0) || f.Protocol != ProtoIP || f.Pref != 1 || f.Handle != "5" || f.Kind != "fw" {
		t.Fatalf("%+v %v", f, err)
	}
	if got := strings.Join(f.Words(), " "); got != "dev eth0 parent 1: protocol ip pref 1 handle 5 fw classid 1:5" {
		t.Errorf("Words %q", got)
	}
	// clsact's egress block: "egress" is the parent ffff:fff3
	if f, err := ParseFilter(strings.Fields("dev eth0 egress matchall action drop")); err != nil || f.Parent != Egress || f.Parent.String() != "ffff:fff3" {
		t.Errorf("egress: %+v %v", f, err)
	}
	for _, tt := range []struct {
		in, want string
		class    error
	}{
		{"prio 70000 u32", `invalid priority value`, qdisc.ErrSyntax},
		{"protocol ipx u32", `invalid protocol`, qdisc.ErrSyntax},
		{"parent 1:x u32", `Invalid parent ID`, qdisc.ErrSyntax},
		{"handle 5", `Must specify filter type when using "handle"`, qdisc.ErrSyntax},
		{"egress ingress matchall", `"ingress" is duplicate parent ID`, qdisc.ErrSyntax},
		{"egress egress matchall", `"egress" is duplicate parent ID`, qdisc.ErrSyntax},
		{"block 1 matchall", `"block" is not supported`, qdisc.ErrLacks},
		{"chain 1 matchall", `only chain 0`, qdisc.ErrLacks},
	} {
		_, err := ParseFilter(strings.Fields(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q: %v, want %q of class %v", tt.in, err, tt.want, tt.class)
		}
	}
}
