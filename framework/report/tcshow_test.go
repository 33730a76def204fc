package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// Real `tc -s qdisc show` output, copied, against the show lines written
// for the same qdiscs. The options text is the qdisc's (its Dump); the
// rest (kind, handle, dev, root/parent, refcnt, the stats lines and the
// spaces tc leaves) is what these pin.
func TestQdiscShowRealOutput(t *testing.T) {
	tests := []struct {
		name   string
		source string
		rows   []Qdisc // the device's rows, as framework/run reports them
		queues int
		dev    string // "" for `tc qdisc show dev X`, which omits it
		// manPage: troff dropped the spaces tc leaves at line ends.
		manPage bool
		want    string
	}{
		{
			name:   "cake root on a 36-queue ice",
			source: "/work/shared/seeds/llist-adoption-thread.txt (netdev, 2025-10, tc -s qdisc)",
			rows: []Qdisc{{Handle: "8001:", Parent: "root", Kind: "cake",
				Options:     "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0 ",
				SentPackets: 13658545, SentBytes: 9633155852, Dropped: 36165260, Requeues: 42}},
			queues: 36, dev: "ice0p1",
			want: "" +
				"qdisc cake 8001: dev ice0p1 root refcnt 37 bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0 \n" +
				" Sent 9633155852 bytes 13658545 pkt (dropped 36165260, overlimits 0 requeues 42) \n",
		},
		{
			name:   "fq root, single queue, -s -d",
			source: "iproute2 man/man8/tc-fq.8, EXAMPLES",
			rows: []Qdisc{{Handle: "8001:", Parent: "root", Kind: "fq",
				Options:     "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40.0ms ce_threshold 4.0ms",
				SentPackets: 48062, SentBytes: 72149092, Dropped: 2176, BacklogPackets: 1280, BacklogBytes: 1937920}},
			queues: 1, dev: "eth0", manPage: true,
			want: "" +
				"qdisc fq 8001: dev eth0 root refcnt 2 limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40.0ms ce_threshold 4.0ms\n" +
				" Sent 72149092 bytes 48062 pkt (dropped 2176, overlimits 0 requeues 0)\n" +
				" backlog 1937920b 1280p requeues 0\n",
		},
		{
			name:   "cake root, show dev eth0",
			source: "iproute2 man/man8/tc-cake.8, EXAMPLES, after some use",
			rows: []Qdisc{{Handle: "1:", Parent: "root", Kind: "cake",
				Options:     "bandwidth 100Mbit diffserv3 triple-isolate rtt 100.0ms noatm overhead 38 mpu 84",
				SentPackets: 31931, SentBytes: 44709231, Dropped: 45, Overlimits: 93782, BacklogPackets: 22, BacklogBytes: 33308}},
			queues: 1, manPage: true,
			want: "" +
				"qdisc cake 1: root refcnt 2 bandwidth 100Mbit diffserv3 triple-isolate rtt 100.0ms noatm overhead 38 mpu 84\n" +
				" Sent 44709231 bytes 31931 pkt (dropped 45, overlimits 93782 requeues 0)\n" +
				" backlog 33308b 22p requeues 0\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			for _, q := range tcDumpOrder(tt.rows) {
				writeQdisc(&b, q, tt.dev, tcRefcnt(q, tt.rows, tt.queues))
			}
			got := b.String()
			if tt.manPage {
				got = regexp.MustCompile(` +\n`).ReplaceAllString(got, "\n")
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("%s:\ngot\n%q\nwant (from %s)\n%q", tt.name, got, tt.source, tt.want)
			}
		})
	}
}

// The kernel's selftests (tools/testing/selftests/tc-testing, qdiscs/
// mq.json and cake_mq.json) match `tc qdisc show dev $ETH` after
// `tc qdisc add dev $ETH root handle 1: mq` and `... handle 1: root
// cake_mq` on a 4-queue netdevsim. Their patterns, verbatim where the
// part is this package's: the cake option text is cut after "bandwidth".
func TestQdiscShowSelftestPatterns(t *testing.T) {
	child := func(kind, parent string) Qdisc { return Qdisc{Handle: "0:", Parent: parent, Kind: kind} }
	tests := []struct {
		id      string
		rows    []Qdisc
		pattern string
		count   int
	}{
		{"ce7d", []Qdisc{{Handle: "1:", Parent: "root", Kind: "mq"},
			child("pfifo_fast", "1:1"), child("pfifo_fast", "1:2"), child("pfifo_fast", "1:3"), child("pfifo_fast", "1:4")},
			`qdisc [a-zA-Z0-9_]+ 0: parent 1:[1-4]`, 4},
		{"684b", []Qdisc{{Handle: "1:", Parent: "root", Kind: "cake_mq", Options: "bandwidth unlimited"},
			child("cake", "1:1"), child("cake", "1:2"), child("cake", "1:3"), child("cake", "1:4")},
			`qdisc (cake_mq 1: root|cake 0: parent 1:[1-4]) bandwidth `, 5},
	}
	for _, tt := range tests {
		for i := 1; i < len(tt.rows); i++ {
			tt.rows[i].Options = tt.rows[0].Options
		}
		var b bytes.Buffer
		for _, q := range tcDumpOrder(tt.rows) {
			writeQdisc(&b, q, "", tcRefcnt(q, tt.rows, 4))
		}
		if n := len(regexp.MustCompile(tt.pattern).FindAllString(b.String(), -1)); n != tt.count {
			t.Errorf("%s: %q matched %d times, want %d, in\n%s", tt.id, tt.pattern, n, tt.count, b.String())
		}
	}
}

// tc lists mq's children last queue first: they all have handle 0:, so
// they share a qdisc_hash bucket, where hash_add puts the newest first
// (tc-cake.8's cake_mq example shows parent 8001:2 before 8001:1).
func TestQdiscShowOrder(t *testing.T) {
	rows := []Qdisc{{Handle: "8001:", Parent: "root", Kind: "cake_mq"},
		{Handle: "0:", Parent: "8001:1", Kind: "cake"}, {Handle: "0:", Parent: "8001:2", Kind: "cake"}}
	var got []string
	for _, q := range tcDumpOrder(rows) {
		got = append(got, q.Parent)
	}
	if strings.Join(got, " ") != "root 8001:2 8001:1" {
		t.Errorf("order %v, want root 8001:2 8001:1", got)
	}
	// Different handles hash to different buckets, listed in bucket
	// order: 8001: is bucket 0, 1: bucket 8 (hash_32(h, 4)).
	rows = []Qdisc{{Handle: "2:", Parent: "root", Kind: "htb"},
		{Handle: "1:", Parent: "2:1", Kind: "fq"}, {Handle: "8001:", Parent: "2:2", Kind: "fq"}}
	got = nil
	for _, q := range tcDumpOrder(rows) {
		got = append(got, q.Handle)
	}
	if strings.Join(got, " ") != "2: 8001: 1:" {
		t.Errorf("order %v, want 2: 8001: 1:", got)
	}
}

func TestTCRefcnt(t *testing.T) {
	mq := []Qdisc{{Handle: "8001:", Parent: "root", Kind: "mq"}, {Handle: "0:", Parent: "8001:1", Kind: "pfifo"}}
	tests := []struct {
		name   string
		q      Qdisc
		all    []Qdisc
		queues int
		want   int
	}{
		{"mq root (->attach)", mq[0], mq, 8, 1},
		{"mq child", mq[1], mq, 8, 1},
		{"replaced root, 8 queues", Qdisc{Handle: "8001:", Parent: "root"}, nil, 8, 9},
		{"replaced root, 1 queue", Qdisc{Handle: "1:", Parent: "root"}, nil, 1, 2},
		{"default root (attach_default_qdiscs)", Qdisc{Handle: "0:", Parent: "root"}, nil, 1, 2},
	}
	for _, tt := range tests {
		all := tt.all
		if all == nil {
			all = []Qdisc{tt.q}
		}
		if got := tcRefcnt(tt.q, all, tt.queues); got != tt.want {
			t.Errorf("%s: refcnt %d, want %d", tt.name, got, tt.want)
		}
	}
}
