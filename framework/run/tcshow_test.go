package run

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
)

// tcShow runs the small host 2 ms under root qdisc words and returns the
// report and its text from the section headed header on.
func tcShow(t *testing.T, qdisc, header string) (*report.Report, string) {
	t.Helper()
	s := small()
	s.Qdisc = qdisc
	s.Duration, s.Warmup = 2*sim.Millisecond, 0
	rep := mustRun(t, s)
	var b bytes.Buffer
	if err := report.WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	_, show, _ := strings.Cut(b.String(), header)
	return rep, show
}

// The kernel's tc selftests (tools/testing/selftests/tc-testing/
// tc-tests/qdiscs/mq.json "ce7d" and cake_mq.json "684b") add a qdisc to
// a 4-queue device and match `tc qdisc show dev $ETH`. The same command
// lines here must show the same lines (`show dev X` leaves out "dev X",
// so it is cut before matching). The cake options are the cake plugin's;
// the pattern is cut after the kind, handle and parent.
func TestQdiscShowMatchesSelftests(t *testing.T) {
	for _, tt := range []struct {
		id, qdisc, pattern string
		count              int
	}{
		{"ce7d", "root handle 1: mq", `qdisc [a-zA-Z0-9_]+ 0: parent 1:[1-4]`, 4},
		{"ce7d-pfifo", "root handle 1: mq pfifo", `qdisc pfifo 0: parent 1:[1-4] limit 1000p\n`, 4},
		{"684b", "handle 1: root cake_mq bandwidth 1Gbit", `qdisc (cake_mq 1: root|cake 0: parent 1:[1-4]) bandwidth `, 5},
		{"refcnt", "fq_codel", `qdisc fq_codel 8001: root refcnt 5 limit 10240p`, 1},
		{"default", "", `qdisc (mq 0: root \n|pfifo_fast 0: parent :[1-4] bands 3)`, 5},
	} {
		_, show := tcShow(t, tt.qdisc, "qdisc (tc -s -d qdisc show layout)\n")
		show = strings.ReplaceAll(show, " dev eth0 ", " ")
		if n := len(regexp.MustCompile(tt.pattern).FindAllString(show, -1)); n != tt.count {
			t.Errorf("%s (%q): %q matched %d times, want %d:\n%s", tt.id, tt.qdisc, tt.pattern, n, tt.count, show)
		}
	}
}

// tc -s class show on an mq root lists a class per TX queue, :1 on
// (mq_walk, mq_dump_class: parent root, no options), each with its
// queue's qdisc's counters (mq_dump_class_stats, requeues included),
// so together they add up to the mq line (mq_dump sums the same).
func TestMQClassShow(t *testing.T) {
	for _, tt := range []struct {
		qdisc, pattern string
	}{
		{"root handle 1: mq pfifo", `class mq 1:[1-4] root \n`},
		{"", `class mq :[1-4] root \n`},
	} {
		rep, show := tcShow(t, tt.qdisc, "class (tc -s -d class show dev eth0 layout)\n")
		if n := len(regexp.MustCompile(tt.pattern).FindAllString(show, -1)); n != 4 {
			t.Errorf("%q: %q matched %d times, want 4:\n%s", tt.qdisc, tt.pattern, n, show)
		}
		var sent, pkts, requeues uint64
		for _, c := range rep.Classes {
			sent, pkts, requeues = sent+c.SentBytes, pkts+c.SentPackets, requeues+c.Requeues
		}
		mq := rep.Qdisc[0]
		if sent != mq.SentBytes || pkts != mq.SentPackets || requeues != mq.Requeues || sent == 0 {
			t.Errorf("%q: the classes sent %d B, %d pkt, %d requeues; the mq line %d B, %d pkt, %d requeues", tt.qdisc, sent, pkts, requeues, mq.SentBytes, mq.SentPackets, mq.Requeues)
		}
	}
}
