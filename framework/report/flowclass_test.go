package report

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// The class lines of fq_codel, sfq and cake flows, against the layout
// iproute2 prints: tc/tc_class.c's print_class (no options: their
// dump_class gives none; "parent 1:", the qdisc), print_tcstats2_attr's
// two lines without "Sent" (dump_class_stats copies no TCA_STATS_BASIC),
// then the kind's print_xstats, ended by print_class's newline (no blank
// line: the xstats end without one)
// (q_fq_codel.c's TCA_FQ_CODEL_XSTATS_CLASS: "  deficit %d count %u
// lastcount %u ldelay %s", " dropping" and " drop_next %s" with its sign
// when dropping; q_sfq.c: "  allot %d"; q_cake.c's class stats: "  deficit
// %d count %u", " dropping drop_next %s" when dropping, " blue_prob %u",
// " blue_timer %s"), times in us through sprint_time.
func TestFlowClassShow(t *testing.T) {
	xs := func(kv ...any) []XStat {
		var out []XStat
		for i := 0; i < len(kv); i += 2 {
			out = append(out, XStat{Key: kv[i].(string), Value: json.Number(strconv.Itoa(kv[i+1].(int)))})
		}
		return out
	}
	tests := []struct {
		name string
		row  Class
		want string
	}{
		{"fq_codel", Class{ClassID: "1:7", Parent: "1:", Kind: "fq_codel", BacklogPackets: 1, BacklogBytes: 500,
			XStats: xs("deficit", 514, "count", 0, "lastcount", 0, "ldelay", 3000, "dropping", 0, "drop_next", 0)},
			"class fq_codel 1:7 parent 1: \n" +
				" (dropped 0, overlimits 0 requeues 0) \n" +
				" backlog 500b 1p requeues 0\n" +
				"  deficit 514 count 0 lastcount 0 ldelay 3ms\n"},
		{"fq_codel dropping", Class{ClassID: "1:3ff", Parent: "1:", Kind: "fq_codel", BacklogPackets: 40, BacklogBytes: 60560,
			XStats: xs("deficit", -200, "count", 3, "lastcount", 2, "ldelay", 12500, "dropping", 1, "drop_next", -1024)},
			"class fq_codel 1:3ff parent 1: \n" +
				" (dropped 0, overlimits 0 requeues 0) \n" +
				" backlog 60560b 40p requeues 0\n" +
				"  deficit -200 count 3 lastcount 2 ldelay 12.5ms dropping drop_next -1.02ms\n"},
		{"sfq", Class{ClassID: "8001:4", Parent: "8001:", Kind: "sfq", BacklogPackets: 2, BacklogBytes: 1400,
			XStats: xs("allot", 514)},
			"class sfq 8001:4 parent 8001: \n" +
				" (dropped 0, overlimits 0 requeues 0) \n" +
				" backlog 1400b 2p requeues 0\n" +
				"  allot 514\n"},
		{"cake", Class{ClassID: "1:402", Parent: "1:", Kind: "cake", BacklogPackets: 2, BacklogBytes: 2000,
			XStats: xs("deficit", 1514, "count", 0, "dropping", 0, "blue_prob", 0)},
			"class cake 1:402 parent 1: \n" +
				" (dropped 0, overlimits 0 requeues 0) \n" +
				" backlog 2000b 2p requeues 0\n" +
				"  deficit 1514 count 0 blue_prob 0\n"},
		{"cake dropping", Class{ClassID: "1:402", Parent: "1:", Kind: "cake", Dropped: 4, BacklogPackets: 2, BacklogBytes: 2000,
			XStats: xs("deficit", -3, "count", 5, "dropping", 1, "drop_next", -3000, "blue_prob", 12345, "blue_timer", 2500)},
			"class cake 1:402 parent 1: \n" +
				" (dropped 4, overlimits 0 requeues 0) \n" +
				" backlog 2000b 2p requeues 0\n" +
				"  deficit -3 count 5 dropping drop_next -3ms blue_prob 12345 blue_timer 2.5ms\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		writeClass(&b, tt.row)
		if got := b.String(); got != tt.want {
			t.Errorf("%s:\ngot\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

// hfsc's class lines as tc prints them: print_class with the curves
// (hfsc_print_class_opt), the Sent lines, then hfsc_print_xstats's
// " period %u ", "work %llu bytes " and "rtwork %llu bytes " only when
// not 0, " level %u " and the newline; print_class's blank line after.
func TestHFSCClassShow(t *testing.T) {
	xs := func(period, work, rtwork, level int) []XStat {
		var out []XStat
		for i, v := range []int{period, work, rtwork, level} {
			out = append(out, XStat{Key: []string{"period", "work", "rtwork", "level"}[i], Value: json.Number(strconv.Itoa(v))})
		}
		return out
	}
	for _, tt := range []struct {
		row  Class
		want string
	}{
		{Class{ClassID: "1:", Parent: "root", Kind: "hfsc", XStats: xs(0, 0, 0, 2)},
			"class hfsc 1: root \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n period 0  level 2 \n\n"},
		{Class{ClassID: "1:10", Parent: "1:1", Kind: "hfsc", Leaf: "10:", Options: "rt m1 0bit d 980us m2 600Mbit ls m1 0bit d 0us m2 100Mbit ",
			SentBytes: 750944, SentPackets: 496, XStats: xs(2, 750944, 749430, 0)},
			"class hfsc 1:10 parent 1:1 leaf 10: rt m1 0bit d 980us m2 600Mbit ls m1 0bit d 0us m2 100Mbit \n" +
				" Sent 750944 bytes 496 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n" +
				" period 2 work 750944 bytes rtwork 749430 bytes  level 0 \n\n"},
	} {
		var b bytes.Buffer
		writeClass(&b, tt.row)
		if got := b.String(); got != tt.want {
			t.Errorf("%s:\ngot\n%q\nwant\n%q", tt.row.ClassID, got, tt.want)
		}
	}
}
