package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fq_codel's xstats print as q_fq_codel.c prints them: ce_mark,
// memory_used and drop_overmemory only when not zero, new_flows_len on
// its own line, txlab's codel_dropping after; another kind's on one line.
func TestQdiscXStatsText(t *testing.T) {
	x := func(k, v string) XStat { return XStat{Key: k, Value: json.Number(v)} }
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
		{"pfifo", nil, ""},
	} {
		var b bytes.Buffer
		writeQdiscXStats(&b, c.kind, c.xs)
		if b.String() != c.want {
			t.Errorf("%s:\n%q\nwant\n%q", c.kind, b.String(), c.want)
		}
	}
}
