package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fq_codel's xstats print as q_fq_codel.c prints them: ce_mark,
// memory_used and drop_overmemory only when not zero, new_flows_len on
// its own line, txlab's codel_dropping after; codel's as q_codel.c
// prints them; another kind's on one line.
func TestQdiscXStatsText(t *testing.T) {
	x := func(k, v string) XStat { return XStat{Key: k, Value: json.Number(v)} }
	codel := func(v ...string) []XStat {
		var xs []XStat
		for i, k := range []string{"count", "lastcount", "ldelay", "dropping", "drop_next", "maxpacket", "ecn_mark", "drop_overlimit", "ce_mark"} {
			xs = append(xs, x(k, v[i]))
		}
		return xs
	}
	fq := []XStat{x("maxpacket", "1514"), x("drop_overlimit", "3"), x("new_flow_count", "9"), x("ecn_mark", "0"),
		x("ce_mark", "0"), x("memory_used", "0"), x("drop_overmemory", "0"), x("new_flows_len", "1"), x("old_flows_len", "2"), x("codel_dropping", "0")}
	for _, c := range []struct {
		kind string
		xs   []XStat
		want string
	}{
		{"fq_codel", fq, "  maxpacket 1514 drop_overlimit 3 new_flow_count 9 ecn_mark 0\n  new_flows_len 1 old_flows_len 2\n  codel_dropping 0\n"},
		{"fq_codel", append([]XStat{}, fq[0], fq[1], fq[2], fq[3], x("ce_mark", "4"), x("memory_used", "3072"), x("drop_overmemory", "1"), fq[7], fq[8]),
			"  maxpacket 1514 drop_overlimit 3 new_flow_count 9 ecn_mark 0 ce_mark 4 memory_used 3072 drop_overmemory 1\n  new_flows_len 1 old_flows_len 2\n"},
		{"sfq", []XStat{x("allot", "1514")}, "  allot 1514\n"},
		// tc-codel.8's example, then one in the dropping state, its next
		// drop 1.5 ms past, with CE marks.
		{"codel", codel("0", "0", "2", "0", "0", "7306", "0", "0", "0"),
			"  count 0 lastcount 0 ldelay 2us drop_next 0us\n  maxpacket 7306 ecn_mark 0 drop_overlimit 0\n"},
		{"codel", codel("3", "2", "12345", "1", "-1500", "1514", "4", "9", "7"),
			"  count 3 lastcount 2 ldelay 12.3ms dropping drop_next -1.5ms\n  maxpacket 1514 ecn_mark 4 drop_overlimit 9 ce_mark 7\n"},
		{"codel", codel("3", "2", "999999", "1", "40000", "1514", "4", "9", "0"),
			"  count 3 lastcount 2 ldelay 1e+03ms dropping drop_next 40ms\n  maxpacket 1514 ecn_mark 4 drop_overlimit 9\n"},
		{"codel", []XStat{x("count", "1")}, "  count 1\n"}, // not codel's fields: one line
		{"pfifo", nil, ""},
	} {
		var b bytes.Buffer
		writeQdiscXStats(&b, c.kind, c.xs)
		if b.String() != c.want {
			t.Errorf("%s:\n%q\nwant\n%q", c.kind, b.String(), c.want)
		}
	}
}
