package netem

import (
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

// The kernel's tc-testing cases for netem
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/netem.json, by
// id): the options, an optional change, and the pattern `tc qdisc show`
// must match after "qdisc netem 1: root refcnt N ".
func TestTcTesting(t *testing.T) {
	cases := []struct{ id, args, change, want string }{
		{"cb28", "", "", "limit"},
		{"a089", "limit 200", "", "limit 200"},
		{"3449", "delay 100ms", "", ".*delay 100ms"},
		{"3782", "delay 100ms 10ms distribution normal corrupt 1%", "", ".*delay 100ms  10ms corrupt 1%"},
		{"2b82", "delay 100ms 10ms distribution normal duplicate 1%", "", ".*delay 100ms  10ms duplicate 1%"},
		{"a932", "delay 100ms 10ms distribution pareto loss 1%", "", ".*delay 100ms  10ms loss 1%"},
		{"e01a", "delay 100ms 10ms distribution paretonormal loss state 1", "", ".*delay 100ms  10ms loss state p13 1% p31 99% p32 0% p23 100% p14 0%"},
		{"ba29", "loss gemodel 1%", "", ".*loss gemodel p 1%"},
		{"0492", "delay 100ms 10ms reorder 2% gap 100", "", ".*reorder 2%"},
		{"7862", "rate 20000", "", ".*rate 20Kbit"},
		{"7235", "slot 10 200 packets 2000 bytes 9000", "", ".*slot 10ns 200ns packets 2000 bytes 9000"},
		{"5439", "slot distribution pareto 1ms 0.1ms", "", ".*slot distribution 1ms 100us"},
		{"5029", "delay 100ms 10ms distribution normal loss 1%", "delay 100ms 10ms distribution normal loss 2%", ".*loss 2%"},
		{"3785", "delay 100ms 10ms distribution normal loss 1%", "delay 200ms 10ms", ".*delay 200ms  10ms"},
	}
	for _, c := range cases {
		ctx := qdisctest.NewCtx(1)
		q := newQ(t, ctx, c.args)
		if c.change != "" {
			if _, err := q.Change(ctx, strings.Fields(c.change)); err != nil {
				t.Fatalf("%s: %v", c.id, err)
			}
		}
		if got := q.Dump(); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("%s %q: %q, want /%s/", c.id, c.args, got, c.want)
		}
	}
}

// The whole line as netem_print_opt prints it, every part: the man
// page's words (tc-netem.8) with a seed, so the line is fixed. The
// kernel always dumps TCA_NETEM_PRNG_SEED, so tc always prints it.
func TestDumpWhole(t *testing.T) {
	q := newQ(t, qdisctest.NewCtx(1), "limit 3000 delay 100ms 20ms 25% distribution normal loss 0.3% 25% duplicate 1% "+
		"reorder 25% 50% gap 5 corrupt 0.1% rate 100mbit 20 100 -4 slot 800us 10ms packets 42 bytes 64k seed 7")
	want := "limit 3000 delay 100ms  20ms 25% loss 0.3% 25% duplicate 1% reorder 25% 50% corrupt 0.1% " +
		"rate 100Mbit packetoverhead 20 cellsize 100 celloverhead -4 slot 800us 10ms packets 42 bytes 65536 seed 7 gap 5"
	if got := q.Dump(); got != want {
		t.Fatalf("dump\n %q\nwant\n %q", got, want)
	}
	q = newQ(t, qdisctest.NewCtx(1), "loss gemodel 1% 10% 70% 0.1% ecn seed 1")
	if got, want := q.Dump(), "limit 1000 loss gemodel p 1% r 10% 1-h 70% 1-k 0.1% seed 1 ecn "; got != want {
		t.Fatalf("dump %q, want %q", got, want)
	}
}

// The xstats line as tc -s prints it (netem_print_xstats: iproute2 with
// the kernel's tc_netem_xstats, net-next May 2026).
func TestXStats(t *testing.T) {
	h, _ := newHost(t, "delay 1ms reorder 100% gap 2 duplicate 100%", 1)
	h.send(2, pkt(100))
	var parts []string
	for _, x := range h.q.Stats().XStats {
		parts = append(parts, x.Key+" "+x.Text())
	}
	if got, want := "  "+strings.Join(parts, " "), "  delayed 2 dropped 0 corrupted 0 duplicated 2 reordered 2 ecn_marked 0"; got != want {
		t.Fatalf("xstats %q, want %q", got, want)
	}
}
