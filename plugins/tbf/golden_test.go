package tbf

import (
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

// The kernel's tc-testing cases for tbf
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/tbf.json, by id):
// the options, an optional change, and the pattern `tc qdisc show` (no
// -d) must match after "qdisc tbf 1: root refcnt N ".
func TestTcTesting(t *testing.T) {
	cases := []struct{ id, args, change, want string }{
		{"6430", "limit 1000 burst 1500 rate 10000", "", "rate 10Kbit burst 1500b limit 1000b"},
		{"0518", "limit 1000 burst 1500 rate 20000 mtu 2048", "", "rate 20Kbit burst 1500b limit 1000b"},
		{"320a", "limit 1000 burst 1500 rate 20000 mtu 1510 peakrate 30000", "", "rate 20Kbit burst 1500b peakrate 30Kbit minburst.*limit 1000b"},
		{"239b", "burst 1500 rate 20000 latency 100ms", "", "rate 20Kbit burst 1500b lat 100ms"},
		{"c975", "limit 1000 burst 1500 rate 20000 overhead 300", "", "rate 20Kbit burst 1800b limit 1000b overhead 300"},
		{"948c", "limit 1000 burst 1500 rate 20000 linklayer atm", "", "rate 20Kbit burst 1696b limit 1000b linklayer atm"},
		{"3549", "limit 1000 burst 1500 rate 20000 linklayer ethernet", "", "rate 20Kbit burst 1500b limit 1000b"},
		{"f948", "burst 1500 rate 20000 latency 10ms", "burst 1500 rate 20000 latency 200ms", "rate 20Kbit burst 1500b lat 200ms"},
	}
	for _, c := range cases {
		ctx := qdisctest.NewCtx(1)
		q := newQ(t, ctx, c.args)
		if c.change != "" {
			if _, err := q.Change(ctx, strings.Fields(c.change)); err != nil {
				t.Fatalf("%s: %v", c.id, err)
			}
		}
		if got := q.print(false); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("%s %q: %q, want /%s/", c.id, c.args, got, c.want)
		}
	}
}

// Under tc -d tbf_print_opt adds the cell ("/1": the kernel dumps
// cell_log 0), the mpu, peak mtu instead of minburst, and the link
// layer; the man page's example (tc-tbf.8) as tc -d prints it.
func TestDetails(t *testing.T) {
	q := newQ(t, qdisctest.NewCtx(1), "rate 0.5mbit burst 5kb latency 70ms peakrate 1mbit minburst 1540")
	want := "rate 500Kbit burst 5Kb/1 mpu 0b peakrate 1Mbit mtu 1540b/1 mpu 0b lat 70ms linklayer ethernet "
	if got := q.Dump(); got != want {
		t.Fatalf("dump %q, want %q", got, want)
	}
	if got := q.print(false); got != "rate 500Kbit burst 5Kb peakrate 1Mbit minburst 1540b lat 70ms " {
		t.Fatalf("without -d: %q", got)
	}
}
