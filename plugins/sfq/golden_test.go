package sfq

import (
	"regexp"
	"strings"
	"testing"
)

// The kernel's tc-testing cases for sfq
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/sfq.json, by id).
// They read `tc qdisc show` without -d; Dump is the -d line, which adds
// "flows N" before the divisor (sfq_print_opt), so the patterns here
// have it.
func TestTcTesting(t *testing.T) {
	cases := []struct{ id, args, want string }{
		{"7482", "", "limit 127p quantum.*depth 127 flows 128 divisor 1024"},
		{"c186", "limit 8", "limit 8p"},
		{"ae23", "perturb 10", ".*depth 127 flows 128 divisor 1024 perturb 10sec"},
		{"a430", "quantum 9000", "limit 127p quantum 9000b depth 127 flows 128 divisor 1024"},
		{"4539", "divisor 512", "limit 127p quantum 1514b depth 127 flows 128 divisor 512"},
		{"b089", "flows 20", "limit 127p quantum 1514b depth 127 flows 20 divisor 1024"},
		{"99a0", "depth 64", "limit 127p quantum 1514b depth 64 flows 128 divisor 1024"},
		{"7389", "headdrop", "limit 127p quantum 1514b depth 127 headdrop flows 128 divisor 1024"},
		{"6472", "redflowlimit 100000 min 8000 max 60000 probability 0.20 ecn headdrop",
			"limit 127p quantum 1514b depth 127 headdrop flows 128 divisor 1024 ewma 6 min 8000b max 60000b probability 0.2 ecn$"},
	}
	for _, c := range cases {
		q := newQ(t, strings.Fields(c.args)...)
		if got := q.Dump(); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("%s %q: %q, want /%s/", c.id, c.args, got, c.want)
		}
	}
}
