package codel

import (
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

var setup = qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, DevMTU: 1500, TxQueueLen: 1000, NumTxQ: 1}

func newSched(t testing.TB, ctx qdisc.Ctx, args string) *Sched {
	t.Helper()
	q := &Sched{}
	if _, err := q.Init(ctx, setup, strings.Fields(args)); err != nil {
		t.Fatal(err)
	}
	return q
}

// The kernel's tc-testing cases for codel
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/codel.json, by
// id): the options, an optional change, and the pattern `tc qdisc show`
// must match after "qdisc codel 1: root refcnt N ". A replace of the
// root (289c) is a new qdisc here as in the kernel. Left out: 8380
// (qdisc del, not modelled).
func TestTcTesting(t *testing.T) {
	cases := []struct{ id, args, change, want string }{
		{"983a", "", "", "limit 1000p target 5ms interval 100ms"},
		{"38aa", "limit 1500", "", "limit 1500p target 5ms interval 100ms"},
		{"9178", "target 100ms", "", "limit 1000p target 100ms interval 100ms"},
		{"78d1", "interval 20ms", "", "limit 1000p target 5ms interval 20ms"},
		{"238a", "ecn", "", "limit 1000p target 5ms interval 100ms ecn"},
		{"939c", "ce_threshold 20ms", "", "limit 1000p target 5ms ce_threshold 20ms interval 100ms"},
		{"289c", "limit 5000", "", "limit 5000p target 5ms interval 100ms"},
		{"0648", "", "limit 100", "limit 100p target 5ms interval 100ms"},
	}
	for _, c := range cases {
		ctx := qdisctest.NewCtx(1)
		q := newSched(t, ctx, c.args)
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
