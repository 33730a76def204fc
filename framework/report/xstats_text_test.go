package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fq's xstats print as q_fq.c prints them (counters only when not 0,
// next_packet_delay only when ahead); fq_codel's as q_fq_codel.c prints them: ce_mark,
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
	// fqX takes fq's 22 values, next_packet_delay and latency each with
	// their text after them.
	fqX := func(v ...string) []XStat {
		var xs []XStat
		for _, k := range []string{"flows", "inactive", "throttled", "band0_pkts", "band1_pkts", "band2_pkts", "next_packet_delay",
			"gc", "highprio", "fastpath", "retrans", "throttled", "latency", "ce_mark", "flows_plimit",
			"pkts_too_long", "alloc_errors", "horizon_drops", "horizon_caps", "band0_drops", "band1_drops", "band2_drops"} {
			xs = append(xs, XStat{Key: k, Value: json.Number(v[0])})
			v = v[1:]
			if k == "next_packet_delay" || k == "latency" {
				xs[len(xs)-1].Text = v[0]
				v = v[1:]
			}
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
		// fq: q_fq.c's fq_print_xstats. An idle qdisc (no delay: the
		// kernel's value is negative then), then one with a flow
		// throttled, fast-path packets, plimit and band drops.
		{"fq", fqX("14", "14", "0", "0", "0", "0", "0", "", "0", "0", "0", "0", "0", "0", "", "0", "0", "0", "0", "0", "0", "0", "0", "0"),
			"  flows 14 (inactive 14 throttled 0) band0_pkts 0 band1_pkts 0 band2_pkts 0\n  gc 0 highprio 0 throttled 0\n"},
		{"fq", fqX("9", "3", "1", "0", "57", "0", "5020000", "5.02ms", "2", "0", "4521", "0", "12", "2500", "2.5us", "0", "300", "0", "0", "0", "7", "0", "0", "5"),
			"  flows 9 (inactive 3 throttled 1) band0_pkts 0 band1_pkts 57 band2_pkts 0 next_packet_delay 5.02ms\n" +
				"  gc 2 highprio 0 fastpath 4521 throttled 12 latency 2.5us flows_plimit 300\n  horizon_caps 7 band2_drops 5\n"},
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
