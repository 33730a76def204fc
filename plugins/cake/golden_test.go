package cake

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

// tcTesting are the kernel's tc-testing cases for cake and cake_mq
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/cake.json and
// cake_mq.json, by id): the options given, a change if the case makes
// one, and the options part of the line `tc qdisc show` must print.
var tcTesting = []struct {
	id, args, change, want string
}{
	{"1212", "", "", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"3281", "bandwidth 1000", "", "bandwidth 1Kbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"2310", "rtt 200", "", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 200us raw overhead"},
	{"2385", "besteffort", "", "bandwidth unlimited besteffort triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"a032", "diffserv8", "", "bandwidth unlimited diffserv8 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"2349", "diffserv4", "", "bandwidth unlimited diffserv4 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"8472", "flowblind", "", "bandwidth unlimited diffserv3 flowblind nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"2341", "dsthost nat", "", "bandwidth unlimited diffserv3 dsthost nat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"5134", "hosts wash", "", "bandwidth unlimited diffserv3 hosts nonat wash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"2302", "flowblind no-split-gso", "", "bandwidth unlimited diffserv3 flowblind nonat nowash no-ack-filter no-split-gso rtt 100ms raw overhead"},
	{"0768", "dual-srchost ack-filter", "", "bandwidth unlimited diffserv3 dual-srchost nonat nowash ack-filter split-gso rtt 100ms raw overhead"},
	{"0238", "dual-dsthost ack-filter-aggressive", "", "bandwidth unlimited diffserv3 dual-dsthost nonat nowash ack-filter-aggressive split-gso rtt 100ms raw overhead"},
	{"6572", "memlimit 10000 ptm", "", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw ptm overhead 0 memlimit 10000b"},
	{"2436", "fwmark 8 atm", "", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw atm overhead 0 fwmark 0x8"},
	{"3984", "overhead 128 mpu 256", "", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 128 mpu 256"},
	{"5421", "conservative ingress", "", "bandwidth unlimited diffserv3 triple-isolate nonat nowash ingress no-ack-filter split-gso rtt 100ms atm overhead 48"},
	{"c940", "autorate-ingress", "", "bandwidth unlimited autorate-ingress diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead"},
	{"2313", "overhead 128 mpu 256", "mpu 128", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 128 mpu 128"},
}

func TestTcTesting(t *testing.T) {
	for _, group := range []string{"", "cake_mq"} {
		for _, c := range tcTesting {
			q := &Cake{}
			s := qdisc.Setup{MTU: 1514}
			if group != "" {
				s.Group, s.GroupSize = "tc-testing-"+c.id, 1
			}
			_, err := q.Init(qdisctest.NewCtx(1), s, strings.Fields(c.args))
			if group != "" && strings.Contains(c.args, "autorate-ingress") {
				// cake_mq.json: the kernel refuses it (exit 2).
				if !errors.Is(err, qdisc.ErrKernel) {
					t.Errorf("%s %s: %v, want the kernel's refusal", group, c.id, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", group, c.id, err)
			}
			if c.change != "" {
				if _, err := q.Change(qdisctest.NewCtx(1), strings.Fields(c.change)); err != nil {
					t.Fatalf("%s %s change: %v", group, c.id, err)
				}
			}
			if got := q.Dump(); !regexp.MustCompile("^" + regexp.QuoteMeta(c.want) + "( |$)").MatchString(got) {
				t.Errorf("%s %s %q: %q, want %q...", group, c.id, c.args, got, c.want)
			}
		}
	}
}
