package fqcodel

import (
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

// The kernel's tc-testing cases for fq_codel
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/fq_codel.json, by
// id): the options, an optional change, and the pattern `tc qdisc show`
// must match after "qdisc fq_codel 1: root refcnt N ".
func TestTcTesting(t *testing.T) {
	cases := []struct{ id, args, change, want string }{
		{"4957", "", "", "limit 10240p flows 1024 quantum.*target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"7621", "limit 1000", "", "limit 1000p flows 1024 quantum.*target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"6871", "memory_limit 100000", "", "limit 10240p flows 1024 quantum.*target 5ms interval 100ms memory_limit 100000b ecn drop_batch 64"},
		{"5636", "target 2000", "", "limit 10240p flows 1024 quantum.*target 2ms interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"630a", "interval 5000", "", "limit 10240p flows 1024 quantum.*target 5ms interval 5ms memory_limit 32Mb ecn drop_batch 64"},
		{"4324", "quantum 9000", "", "limit 10240p flows 1024 quantum 9000 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"b190", "noecn", "", "limit 10240p flows 1024 quantum.*target 5ms interval 100ms memory_limit 32Mb drop_batch 64"},
		{"5381", "ce_threshold 1024000", "", "limit 10240p flows 1024 quantum.*target 5ms ce_threshold 1.02s interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"c9d2", "drop_batch 100", "", "limit 10240p flows 1024 quantum.*target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 100"},
		{"523b", "limit 1000 flows 256 drop_batch 100", "", "limit 1000p flows 256 quantum.*target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 100"},
		{"3459", "limit 1000 flows 256 drop_batch 100", "limit 2000", "limit 2000p flows 256 quantum.*target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 100"},
	}
	for _, c := range cases {
		q := newQ(t, strings.Fields(c.args)...)
		if c.change != "" {
			if _, err := q.Change(qdisctest.NewCtx(1), strings.Fields(c.change)); err != nil {
				t.Fatalf("%s: %v", c.id, err)
			}
		}
		if got := q.Dump(); !regexp.MustCompile("^" + c.want + "$").MatchString(got) {
			t.Errorf("%s %q: %q, want /%s/", c.id, c.args, got, c.want)
		}
	}
}
