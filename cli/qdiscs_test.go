package main

import (
	"regexp"
	"strings"
	"testing"
)

// codel, bfifo and pfifo_head_drop through the command line: as the
// root, under mq, and as prio's leaves from a tc file, each shown as
// `tc -s -d qdisc show` shows it (codel with q_codel.c's two xstats
// lines); mq codel gives the same report out of process.
func TestCoDelAndFifosRun(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		patterns map[string]int // pattern: how many times in the text report
	}{
		{[]string{"--qdisc", "codel"}, map[string]int{
			`qdisc codel 8001: dev eth0 root refcnt 5 limit 1000p target 5ms interval 100ms \n Sent `:                                                                          1,
			`\n  count \d+ lastcount \d+ ldelay \d+(\.\d+)?[mu]?s( dropping)? drop_next -?\d+(\.\d+)?[mu]?s\n  maxpacket \d+ ecn_mark \d+ drop_overlimit \d+( ce_mark \d+)?\n`: 1}},
		{[]string{"--qdisc", "mq codel target 2ms ce_threshold 4ms ecn"}, map[string]int{
			`qdisc codel 0: dev eth0 parent 8001:[1-4] limit 1000p target 2ms ce_threshold 4ms interval 100ms ecn \n`: 4,
			`\n  maxpacket \d+ ecn_mark \d+ drop_overlimit \d+`:                                                       4}},
		{[]string{"--qdisc", "bfifo"}, map[string]int{`qdisc bfifo 8001: dev eth0 root refcnt 5 limit 1514000b\n`: 1}},
		{[]string{"--qdisc", "mq pfifo_head_drop limit 10"}, map[string]int{`qdisc pfifo_head_drop 0: dev eth0 parent 8001:[1-4] limit 10p\n`: 4}},
		{[]string{"--tc-file", "testdata/prio_leaves.tc", "--groups", "dport=5001 dport=5002 dport=5003"}, map[string]int{
			`qdisc prio 1: dev eth0 root refcnt 5 `:                                                        1,
			`qdisc codel 10: dev eth0 parent 1:1 limit 1000p target 999us interval 10ms ecn \n Sent [1-9]`: 1,
			`qdisc pfifo_head_drop 20: dev eth0 parent 1:2 limit 50p\n`:                                    1,
			`qdisc bfifo 30: dev eth0 parent 1:3 limit 30Kb\n`:                                             1}},
	} {
		out, err := txlab(t, append(append([]string(nil), quick...), tt.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		for p, n := range tt.patterns {
			if got := len(regexp.MustCompile(p).FindAllString(out, -1)); got != n {
				t.Errorf("%v: %q found %d times, want %d:\n%s", tt.args, p, got, n, out[strings.Index(out, "qdisc (tc"):])
			}
		}
	}
}
