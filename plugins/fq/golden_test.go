package fq

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// The kernel's tc-testing cases for fq
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/fq.json, by id):
// the options, an optional change, and the pattern `tc qdisc show` must
// match after "qdisc fq 1: root refcnt N ".
func TestTcTesting(t *testing.T) {
	cases := []struct{ id, args, change, want string }{
		{"983b", "", "", "limit"},
		{"38a1", "limit 3000", "", "limit 3000p"},
		{"0a18", "flow_limit 300", "", "limit 10000p flow_limit 300p"},
		{"2390", "quantum 9000", "", "limit 10000p flow_limit 100p.*quantum 9000b"},
		{"845b", "initial_quantum 900000", "", "limit 10000p flow_limit 100p buckets.*initial_quantum 900000b"},
		{"9398", "maxrate 100000", "", "limit 10000p flow_limit 100p buckets.*maxrate 100Kbit"},
		{"342c", "nopacing", "", "limit 10000p flow_limit 100p.*nopacing"},
		{"6391", "refill_delay 100ms", "", "limit 10000p flow_limit 100p.*refill_delay 100ms"},
		{"238b", "low_rate_threshold 10000", "", "limit 10000p flow_limit 100p.*low_rate_threshold 10Kbit"},
		{"7582", "orphan_mask 255", "", "limit 10000p flow_limit 100p.*orphan_mask 255"},
		{"4894", "timer_slack 100", "", "limit 10000p flow_limit 100p.*timer_slack 100ns"},
		{"324c", "ce_threshold 100", "", "limit 10000p flow_limit 100p"},
		{"424a", "horizon 100", "", "limit 10000p flow_limit 100p.*horizon 100us"},
		{"89e1", "horizon_cap", "", "limit 10000p flow_limit 100p.*horizon_cap"},
		{"9478", "", "limit 100", "limit 100p"},
	}
	for _, c := range cases {
		q := newFQ(t, c.args)
		if c.change != "" {
			if _, err := q.Change(qdisctest.NewCtx(1), strings.Fields(c.change)); err != nil {
				t.Fatalf("%s: %v", c.id, err)
			}
		}
		if got := q.Dump(); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("%s %q: %q, want /%s/", c.id, c.args, got, c.want)
		}
	}
	// 10f7: initial_quantum 0x80000000 fails with exit code 2, the
	// kernel's refusal (its netlink policy caps it at INT_MAX).
	if _, err := (&FQ{}).Init(qdisctest.NewCtx(1), testSetup, []string{"initial_quantum", "0x80000000"}); !errors.Is(err, qdisc.ErrKernel) {
		t.Errorf("10f7: %v, want the kernel's refusal", err)
	}
	// 9479: ten packets held under limit 10, then `change ... limit 1`
	// trims them to one and shows limit 1p.
	q := newFQ(t, "limit 10")
	ctx := qdisctest.NewCtx(1)
	for i := 0; i < 10; i++ {
		enqueue(q, ctx, pkt(-1, 100, func(p *skb.Packet) { p.Hash = 7 })) // one TCP 5-tuple, no socket
	}
	if _, err := q.Change(ctx, []string{"limit", "1"}); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Qlen != 1 || len(ctx.Dropped) != 9 || !strings.HasPrefix(q.Dump(), "limit 1p ") {
		t.Errorf("9479: qlen %d, %d freed, dump %q", st.Qlen, len(ctx.Dropped), q.Dump())
	}
}
