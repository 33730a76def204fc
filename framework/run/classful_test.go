package run

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// htbHost is a host whose NIC (10 Gbit/s) is not the bottleneck: htb is.
// Senders split into flow groups by UDP port (groups, see
// workload.Group).
func htbHost(groups string, senders int, tcText string) Spec {
	s := Default()
	s.Sockets, s.Cores, s.Threads = 1, senders, 1
	s.Driver, s.Queues, s.RateBps, s.Qdisc = "ice", 1, 10_000_000_000, "pfifo"
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: senders, PacketSize: 1472, Placement: "spread"}
	s.Workload.Groups, _ = workload.ParseGroups(groups)
	s.Duration, s.Warmup = 60*sim.Millisecond, 10*sim.Millisecond
	s.TC = []TCBatch{{Name: "test.tc", Text: tcText}}
	return s
}

const tree31 = `
qdisc add dev eth0 root handle 1: htb default 20
class add dev eth0 parent 1: classid 1:1 htb rate 1gbit ceil 1gbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 750mbit ceil 1gbit
class add dev eth0 parent 1:1 classid 1:20 htb rate 250mbit ceil 1gbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5002 0xffff flowid 1:20
`

func classes(rep *report.Report) map[string]report.Class {
	out := map[string]report.Class{}
	for _, c := range rep.Classes {
		out[c.ClassID] = c
	}
	return out
}

// qdiscOfKind is the report's qdisc row of kind (the last, if several).
func qdiscOfKind(rep *report.Report, kind string) (report.Qdisc, bool) {
	var q report.Qdisc
	found := false
	for _, x := range rep.Qdisc {
		if x.Kind == kind {
			q, found = x, true
		}
	}
	return q, found
}

func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// htb shares a 1 Gbit/s parent 3:1 between two saturated classes (rate
// 750mbit / 250mbit, ceil 1gbit): each gets its rate, within 2%, and
// together the parent's.
func TestHTBSharesThreeToOne(t *testing.T) {
	rep := mustRun(t, htbHost("dport=5001 dport=5002", 8, tree31))
	c := classes(rep)
	a, b := c["1:10"].SentBps, c["1:20"].SentBps
	if !within(a, 750e6, 0.02) || !within(b, 250e6, 0.02) || !within(a/b, 3, 0.02) {
		t.Errorf("1:10 %.1f Mbit/s, 1:20 %.1f Mbit/s (ratio %.3f), want 750 and 250 within 2%%", a/1e6, b/1e6, a/b)
	}
	if p := c["1:1"].SentBps; !within(p, 1e9, 0.01) {
		t.Errorf("parent 1:1 sent %.1f Mbit/s, want 1000", p/1e6)
	}
	if !rep.AccountingOK {
		t.Error(rep.AccountingError)
	}
}

// A class alone borrows from its parent up to its ceil: 1:20 (rate
// 250mbit) carries the parent's 1 Gbit/s, borrowing.
func TestHTBBorrowsAloneUpToCeil(t *testing.T) {
	rep := mustRun(t, htbHost("dport=5002", 4, tree31))
	c := classes(rep)["1:20"]
	if !within(c.SentBps, 1e9, 0.02) || c.Borrowed == 0 {
		t.Errorf("1:20 alone: %.1f Mbit/s, borrowed %d; want its ceil, 1000 Mbit/s, borrowed", c.SentBps/1e6, c.Borrowed)
	}
	if l := classes(rep)["1:1"].Lended; l == 0 {
		t.Errorf("1:1 lent nothing")
	}
}

// A class capped by its ceil never exceeds it, however much its parent
// could lend: every sample of its rate stays at or below the ceil.
func TestHTBCeilCaps(t *testing.T) {
	text := `
qdisc add dev eth0 root handle 1: htb default 10
class add dev eth0 parent 1: classid 1:1 htb rate 1gbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 100mbit ceil 200mbit
`
	for _, win := range []sim.Time{10 * sim.Millisecond, 30 * sim.Millisecond} {
		s := htbHost("", 4, text)
		s.Duration = s.Warmup + win
		rep := mustRun(t, s)
		c := classes(rep)["1:10"]
		// The window's bytes may include the ceil's burst (cburst,
		// 1600 bytes) on top of the rate.
		most := 200e6 + 1600*8/(float64(win)/1e9)
		if c.SentBps > most || c.SentBps < 0.98*200e6 {
			t.Errorf("over %v: 1:10 sent %.2f Mbit/s, want its ceil, 200 (at most %.2f)", win, c.SentBps/1e6, most/1e6)
		}
	}
}

// prio serves band 0 first: on a 1 Gbit/s link that every sender could
// fill alone, the one sender in band 0 (TC_PRIO_INTERACTIVE) takes the
// link and the four in band 1 (best effort) starve.
func TestPrioBandZeroFirst(t *testing.T) {
	s := Default()
	s.Profile = "6.18" // busylock: no defer_list bound (prio's sch->limit is 0)
	s.Sockets, s.Cores, s.Threads = 1, 5, 1
	s.Driver, s.Queues, s.RateBps, s.Qdisc = "ice", 1, 1_000_000_000, "pfifo"
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 5, PacketSize: 1472, Placement: "spread"}
	s.Workload.Groups, _ = workload.ParseGroups("prio=6 prio=0 prio=0 prio=0 prio=0")
	s.Duration, s.Warmup = 40*sim.Millisecond, 10*sim.Millisecond
	s.TC = []TCBatch{{Name: "t", Text: "qdisc add dev eth0 root handle 1: prio\n"}}
	rep := mustRun(t, s)
	c := classes(rep)
	band0, band1 := c["1:1"].SentBps, c["1:2"].SentBps
	if band0 < 0.95*(band0+band1) || band0+band1 < 0.9e9 {
		t.Errorf("band 0 %.1f Mbit/s, band 1 %.1f Mbit/s: band 0 must take the link", band0/1e6, band1/1e6)
	}
}

// ets: while its strict band is idle, two saturated sharing bands split
// a 1 Gbit/s link by their quanta, 4542:1514 (three and one packets of
// 1514 bytes a round); a sender in the strict band then takes the link.
func TestETSStrictThenQuanta(t *testing.T) {
	const text = `
qdisc add dev eth0 root handle 1: ets bands 3 strict 1 quanta 4542 1514
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:2
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5002 0xffff flowid 1:3
`
	for _, strict := range []bool{false, true} {
		groups := "dport=5001 dport=5002"
		if strict {
			groups = "dport=5001 dport=5002 dport=5003,prio=1:1"
		}
		s := htbHost(groups, 6, text)
		s.Profile = "6.18" // busylock: no defer_list bound (ets's sch->limit is 0)
		s.RateBps = 1_000_000_000
		s.Duration, s.Warmup = 40*sim.Millisecond, 10*sim.Millisecond
		rep := mustRun(t, s)
		c := classes(rep)
		a, b, st := c["1:2"].SentBps, c["1:3"].SentBps, c["1:1"].SentBps
		switch {
		case !rep.AccountingOK:
			t.Error(rep.AccountingError)
		case !strict && (!within(a/b, 3, 0.02) || a+b < 0.95e9):
			t.Errorf("1:2 %.1f Mbit/s, 1:3 %.1f Mbit/s (ratio %.3f): want 3:1 of the link", a/1e6, b/1e6, a/b)
		case strict && st < 0.95*(a+b+st):
			t.Errorf("strict 1:1 %.1f Mbit/s beside %.1f and %.1f: the strict band must take the link", st/1e6, a/1e6, b/1e6)
		}
	}
}

// mqprio (hw 0) steers by skb->priority: each sender's socket caches a
// queue of its priority's traffic class (skb_tx_hash within the class's
// range; the XPS map mqprio cleared no longer decides), and the classes'
// counters sum their queues'.
func TestMQPrioSteersByPriority(t *testing.T) {
	const text = "qdisc replace dev eth0 root handle 1: mqprio num_tc 3 map 2 2 1 0 queues 1@0 1@1 2@2 hw 0\n" +
		"qdisc replace dev eth0 parent 1:1 handle 10: fq\n"
	s := htbHost("prio=3 prio=2 prio=0 prio=0", 8, text)
	s.Queues = 4
	rep := mustRun(t, s)
	want := []int{2, 2, 4} // sockets on queue 0, on queue 1, on queues 2-3
	got := []int{rep.Queues[0].Sockets, rep.Queues[1].Sockets, rep.Queues[2].Sockets + rep.Queues[3].Sockets}
	if !slices.Equal(got, want) || !rep.AccountingOK {
		t.Errorf("sockets by class %v, want %v (accounting %v)", got, want, rep.AccountingOK)
	}
	c := classes(rep)
	if c["1:ffe2"].SentBytes != c["1:3"].SentBytes+c["1:4"].SentBytes || c["1:ffe0"].SentBytes != c["1:1"].SentBytes || c["1:1"].Leaf != "10:" ||
		c["1:3"].Parent != "1:ffe2" || c["1:ffe0"].Parent != "root" || c["1:1"].SentBytes == 0 || c["1:ffe0"].Kind != "mqprio" || c["1:3"].Kind != "mqprio" {
		t.Errorf("classes %+v", rep.Classes)
	}
}

// A size table makes htb shape by the link layer's size: with "stab
// linklayer atm overhead 40" a 1042-byte skb counts as 23 ATM cells,
// 1219 bytes (qdisc_pkt_len), so a 10 Mbit/s class sends 1042/1219 of
// the packets it sends without, and its Sent counts the table's bytes;
// a leaf's own table replaces its root's for the packets it takes.
func TestStabShapesByTheLinkLayer(t *testing.T) {
	const tree = "htb default 10\nclass add dev eth0 parent 1: classid 1:10 htb rate 10mbit\n"
	run := func(stab, leaf string) *report.Report {
		s := htbHost("", 2, "qdisc replace dev eth0 root handle 1: "+stab+tree+leaf)
		s.Workload.PacketSize = 1000
		s.Duration, s.Warmup = 210*sim.Millisecond, 10*sim.Millisecond
		rep := mustRun(t, s)
		if !rep.AccountingOK {
			t.Fatal(rep.AccountingError)
		}
		return rep
	}
	plain, atm := run("", ""), run("stab linklayer atm overhead 40 ", "")
	r := float64(atm.TxPackets) / float64(plain.TxPackets)
	if !within(r, 1042.0/1219, 0.02) {
		t.Errorf("tx packets %d with the ATM table, %d without: %.3f, want 1042/1219 = %.3f", atm.TxPackets, plain.TxPackets, r, 1042.0/1219)
	}
	if c := classes(atm)["1:10"]; c.SentBytes != c.SentPackets*1219 {
		t.Errorf("1:10 sent %d bytes in %d packets, want 1219 each", c.SentBytes, c.SentPackets)
	}
	if q := atm.Qdisc[0]; q.Stab != " linklayer atm overhead 40 mtu 2047 tsize 512 " {
		t.Errorf("the root's table shows as %q", q.Stab)
	}
	// The leaf's table (4 bytes more, no cells) is the length htb
	// charges from then on: 1046 a packet.
	leaf := run("stab linklayer atm overhead 40 ", "qdisc add dev eth0 parent 1:10 handle 10: stab overhead 4 pfifo\n")
	if c := classes(leaf)["1:10"]; c.SentBytes != c.SentPackets*1046 {
		t.Errorf("with the leaf's table 1:10 sent %d bytes in %d packets, want 1046 each", c.SentBytes, c.SentPackets)
	}
}

// The same tree and seed give the same report, twice.
func TestClassfulDeterministic(t *testing.T) {
	s := htbHost("dport=5001,prio=2 mark=0x10020 dport=5003", 6, tree31+
		"filter add dev eth0 parent 1: protocol ip prio 2 fw\nqdisc add dev eth0 parent 1:10 handle 10: fq_codel\n")
	s.Duration = 20 * sim.Millisecond
	var out [2][]byte
	for i := range out {
		rep := mustRun(t, s)
		rep.SimWallNs = 0
		var b bytes.Buffer
		if err := report.WriteJSON(&b, rep); err != nil {
			t.Fatal(err)
		}
		out[i] = b.Bytes()
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("two runs of one spec differ")
	}
}

// tc show of a run: the qdiscs (the default leaves left out), the
// classes in tc's order with htb's xstats, the filters.
func TestClassShow(t *testing.T) {
	s := htbHost("dport=5001 dport=5002", 2, tree31+"qdisc add dev eth0 parent 1:10 handle 10: pfifo limit 500\n")
	s.Duration = 15 * sim.Millisecond
	rep := mustRun(t, s)
	var b bytes.Buffer
	if err := report.WriteTCShow(&b, rep); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"$ tc -s -d qdisc show dev eth0\nqdisc htb 1: root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 ver 3.17 direct_qlen 1000\n",
		"qdisc pfifo 10: parent 1:10 limit 500p\n",
		"$ tc -s -d class show dev eth0\nclass htb 1:10 ", // htb's class hash order: 1:10, 1:1, 1:20
		"class htb 1:1 root rate 1Gbit ceil 1Gbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 7 \n Sent ",
		"class htb 1:10 parent 1:1 leaf 10: prio 0 quantum 200000 rate 750Mbit ceil 1Gbit linklayer ethernet burst 1602b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 \n",
		" lended: ",
		"$ tc -s filter show dev eth0 parent 1:\nfilter protocol ip pref 1 u32 chain 0 \n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tc show lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "qdisc pfifo 0: parent 1:20") {
		t.Errorf("the default leaf of 1:20 is shown; tc qdisc show hides it:\n%s", got)
	}
	js, _ := json.Marshal(rep.Classes)
	for _, key := range []string{`"classid"`, `"parent"`, `"kind"`, `"sent_packets"`, `"sent_bytes"`, `"sent_bps"`, `"dropped"`, `"overlimits"`, `"borrowed"`, `"lended"`} {
		if !bytes.Contains(js, []byte(key)) {
			t.Errorf("classes JSON lacks %s", key)
		}
	}
}

// Bad tc input ends the setup with tc's or the kernel's message, naming
// the file, the line and the word.
func TestTCBatchErrors(t *testing.T) {
	head := "qdisc add dev eth0 root handle 1: htb default 10\n"
	for _, tt := range []struct {
		text, want string
	}{
		{head + "class add dev eth0 parent 1: classid 1:10 htb ceil 1gbit\n", `test.tc:2: class add dev eth0 parent 1: classid 1:10 htb ceil 1gbit: htb: "rate" is required.`},
		{head + "class add dev eth0 parent 1: classid 1:10 htb rate 0\n", `"rate" is required.`},
		{head + "class add dev eth0 parent 1: classid 1:10 htb rate 2mbit ceil 1mbit\n", "ceil 1Mbit is below rate 2Mbit"},
		{head + "class add dev eth0 parent 1:5 classid 1:10 htb rate 1mbit\n", "parent class 1:5 does not exist"},
		{head + "class add dev eth0 parent 2: classid 1:10 htb rate 1mbit\n", "classid 1:10 and parent 2: name different qdiscs"},
		{head + "class add dev eth0 parent 1: classid 1:10 htb rate 1mbit\nclass add dev eth0 parent 1: classid 1:10 htb rate 1mbit\n",
			"test.tc:3: class add dev eth0 parent 1: classid 1:10 htb rate 1mbit: RTNETLINK answers: File exists"},
		{head + "class change dev eth0 classid 1:10 htb rate 1mbit\n", "class 1:10 does not exist"},
		{head + "class add dev eth0 parent 7: classid 7:10 htb rate 1mbit\n", "no qdisc 7: on eth0"},
		{head + "class add dev eth0 parent 1: classid 1:10 htb rate 1mbit\nfilter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 1 0xffff flowid 1:99\n",
			"flowid 1:99 names no class of htb 1: root"},
		{head + "filter add dev eth0 parent 1:33 protocol ip prio 1 matchall classid 1:10\n", "Specified class doesn't exist."},
		{head + "filter add dev eth0 parent 4: protocol ip prio 1 matchall classid 1:10\n", "Parent Qdisc doesn't exists."},
		{head + "qdisc add dev eth0 parent 1:10 handle 10: pfifo\n", "Specified class not found"},
		{head + "class add dev eth0 parent 1: classid 1:1 htb rate 1mbit\nclass add dev eth0 parent 1:1 classid 1:10 htb rate 1mbit\nqdisc add dev eth0 parent 1:1 fq_codel\n",
			"class 1:1 is an inner class"},
		{head + "qdisc add dev eth0 root handle 2: prio\n", "NLM_F_REPLACE needed to override"},
		{head + "class add dev eth0 parent 1: classid 1:10 pfifo limit 5\n", `Qdisc "pfifo" is classless`},
		// tc has no class options for netem or tbf, classful as their
		// qdiscs are: it refuses before the kernel's checks.
		{head + "class add dev eth0 parent 1: classid 1:10 netem delay 1ms\n", `Qdisc "netem" is classless`},
		{"qdisc add dev eth0 root handle 1: tbf rate 1gbit burst 10k latency 10ms\nclass add dev eth0 parent 1: classid 1:1 tbf rate 1gbit\n", `Qdisc "tbf" is classless`},
		{"qdisc add dev eth0 root handle 1: pfifo\nfilter add dev eth0 parent 1: matchall classid 1:1\n", "Qdisc not classful"},
		{"qdisc add dev eth0 root handle 1: tbf rate 1gbit burst 10k latency 10ms\nfilter add dev eth0 parent 1: matchall classid 1:1\n", "Class doesn't support blocks"},
		// choke has no class ops (sch_choke.c): no classes, no filters.
		{"qdisc add dev eth0 root handle 1: choke limit 100 bandwidth 1gbit\nclass add dev eth0 parent 1: classid 1:1 choke\n", `Qdisc "choke" is classless`},
		{"qdisc add dev eth0 root handle 1: choke limit 100 bandwidth 1gbit\nfilter add dev eth0 parent 1: matchall classid 1:1\n", "Qdisc not classful"},
		{"qdisc add dev eth0 root handle 1: choke limit 100\n", "choke: Required parameter (bandwidth, limit) is missing"},
		{"qdisc add dev eth0 root handle 1: hhf\nclass add dev eth0 parent 1: classid 1:1 hhf\n", `Qdisc "hhf" is classless`},
		{"qdisc add dev eth0 root handle 1: hhf\nfilter add dev eth0 parent 1: matchall classid 1:1\n", "Qdisc not classful"},
		{"qdisc add dev eth0 root handle 1: hhf hh_limit 4096\n", "hhf: Error: integer out of range (hh_limit 4096 is above 2048)."},
		{"qdisc add dev eth1 root handle 1: htb\n", `cannot find device "eth1"`},
		// ets: bands come only with the qdisc's options, a strict band
		// has no quantum, filters go on the qdisc (ets_class_change,
		// ets_qdisc_tcf_block).
		{"qdisc add dev eth0 root handle 1: ets bands 2 strict 1\nclass add dev eth0 parent 1: classid 1:3 ets quantum 2000\n",
			"Fine-grained class addition and removal is not supported"},
		{"qdisc add dev eth0 root handle 1: ets bands 2 strict 1\nclass change dev eth0 classid 1:1 ets quantum 2000\n",
			"Strict bands do not have a configurable quantum"},
		{"qdisc add dev eth0 root handle 1: ets bands 2\nfilter add dev eth0 parent 1:1 matchall classid 1:2\n", "ETS classid must be zero"},
		{"qdisc add dev eth0 root handle 1: ets bands 2\nclass del dev eth0 classid 1:2\n", "Operation not supported"},
		{"qdisc add dev eth0 root handle 1: ets bands 2 quanta 1 2 3\n", "Not enough total bands"},
		// qfq: the kernel's policy ranges, no filters on a class
		// (qfq_tcf_block: NULL, no message), no qdisc options.
		{"qdisc add dev eth0 root handle 1: qfq\nclass add dev eth0 parent 1: classid 1:1 qfq weight 2000\n", "Error: integer out of range"},
		{"qdisc add dev eth0 root handle 1: qfq\nclass add dev eth0 parent 1: classid 1:1 qfq\nfilter add dev eth0 parent 1:1 matchall classid 1:1\n",
			"RTNETLINK answers: Invalid argument (qfq's classes take no filters"},
		{"qdisc add dev eth0 root handle 1: qfq quantum 1514\n", `What is "quantum"?`},
		// clsact: its egress block exists with it; one per device; the
		// model applies skbedit queue_mapping there only.
		{"filter add dev eth0 egress matchall action drop\n", "Parent Qdisc doesn't exists."},
		{"qdisc add dev eth0 clsact\nqdisc add dev eth0 clsact\n", "Exclusivity flag on, cannot modify."},
		{"qdisc del dev eth0 clsact\n", "Cannot find specified qdisc on specified device."},
		{"qdisc add dev eth0 clsact foo\n", `What is "foo"?`},
		{head + "filter add dev eth0 parent 1: protocol ip prio 1 matchall action mirred egress redirect dev eth0\n", "mirred on a qdisc's filters is not modelled"},
		{"qdisc add dev eth0 clsact\nfilter add dev eth0 egress matchall action skbedit queue_mapping 70000\n", "Illegal queue_mapping"},
		// the ingress qdisc and clsact's ingress block: the kernel's
		// refusals (act_skbedit's on a receive-side queue_mapping)
		{"filter add dev eth0 ingress matchall action drop\n", "Parent Qdisc doesn't exists."},
		{"qdisc add dev eth0 ingress\nqdisc add dev eth0 clsact\n", "Exclusivity flag on, cannot modify."},
		{"qdisc add dev eth0 ingress\nqdisc del dev eth0 clsact\n", "Error: Invalid qdisc name."},
		{"qdisc add dev eth0 ingress bar\n", `What is "bar"?`},
		{"qdisc add dev eth0 clsact\nfilter add dev eth0 ingress matchall action skbedit queue_mapping 1\n", `"queue_mapping" option on receive side is hardware only, use skip_sw`},
		{"qdisc add dev eth0 clsact\nfilter add dev eth0 parent ffff: matchall action drop\n", "Cannot find block of clsact"},
	} {
		s := htbHost("", 2, tt.text)
		_, err := Run(s, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q:\n got %v\nwant %q", tt.text, err, tt.want)
		}
	}
}

// tc commands while packets flow: a leaf with packets turned into an
// inner class, a leaf replaced, a leaf's limit lowered (fq_codel drops
// from its head), rates changed, a class deleted: what each purges is
// dropped and accounted, the qdiscs' copies of their leaves stay exact
// (the accounting check compares them), and the rates follow.
func TestTCWhileRunning(t *testing.T) {
	text := tree31 + "qdisc add dev eth0 parent 1:20 handle 20: fq_codel\n"
	s := htbHost("dport=5001 dport=5002 dport=5003", 6, text+"class add dev eth0 parent 1:1 classid 1:30 htb rate 10mbit\n")
	s.Duration, s.Warmup = 60*sim.Millisecond, 40*sim.Millisecond
	at := func(ms int, tc string) Action {
		return Action{Name: tc, At: sim.Time(ms) * sim.Millisecond, Do: func(l *Live) error { return l.TC(tc) }}
	}
	s.Actions = []Action{
		at(5, "qdisc change dev eth0 parent 1:20 handle 20: fq_codel limit 10"),
		at(10, "class add dev eth0 parent 1:10 classid 1:100 htb rate 100mbit ceil 1gbit"),
		at(15, "qdisc replace dev eth0 parent 1:20 handle 21: pfifo limit 50"),
		at(20, "class del dev eth0 classid 1:30"),
		at(25, "filter add dev eth0 parent 1:10 protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:100"),
		// The children's rates must not sum above the parent's: a class
		// within its own rate sends whatever its ancestors' state.
		at(30, "class change dev eth0 classid 1:10 htb rate 250mbit ceil 1gbit\n"+
			"class change dev eth0 classid 1:100 htb rate 250mbit ceil 1gbit\nclass change dev eth0 classid 1:20 htb rate 750mbit ceil 1gbit"),
	}
	rep, err := Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AccountingOK {
		t.Fatal(rep.AccountingError)
	}
	if rep.Drops["NOT_SPECIFIED"] == 0 { // qdisc_purge_queue's rtnl_kfree_skbs
		t.Errorf("no packet was purged: drops %v", rep.Drops)
	}
	c := classes(rep)
	if _, ok := c["1:30"]; ok {
		t.Errorf("class 1:30 was deleted but is listed")
	}
	// Port 5001's filter names 1:10, an inner class now, so htb goes on
	// with 1:10's own filters (htb_classify), which name 1:100; the
	// other ports go to the default, 1:20. The rates were swapped.
	if got, got100 := c["1:20"].SentBps, c["1:100"].SentBps; !within(got, 750e6, 0.03) || !within(got100, 250e6, 0.03) {
		t.Errorf("after the change 1:20 sent %.1f Mbit/s, 1:100 %.1f, want 750 and 250", got/1e6, got100/1e6)
	}
	// A class in use by a filter cannot go.
	s.Actions = []Action{at(5, "class del dev eth0 classid 1:10")}
	if _, err := Run(s, nil); err == nil || !strings.Contains(err.Error(), "class in use") {
		t.Errorf("deleting a class a filter points at: %v", err)
	}
	// The root replaced under traffic: the tree goes, with its filters,
	// after the device's deactivation (activate.go).
	s.Actions = []Action{at(5, "qdisc replace dev eth0 root handle 2: prio")}
	rep, err = Run(s, nil)
	if err != nil || !rep.AccountingOK || rep.Counters["root_grafts"] != 1 || rep.Qdisc[0].Kind != "prio" || rep.Qdisc[0].Handle != "2:" {
		t.Errorf("replacing the root mid-run: %v, accounting %v, counters %v, root %+v", err, rep.AccountingOK, rep.Counters, rep.Qdisc[0])
	}
}

// hfsc on a 10 Gbit/s NIC under a 1 Gbit/s parent (sc and ul 1gbit):
// two saturated link-sharing classes split it by their ls curves
// (750mbit : 250mbit); an upper limit caps a class alone (ul 100mbit
// though the parent has 1 Gbit/s to lend); and a real-time curve is
// served apart from link-sharing: 1:10 with rt 600mbit but ls 100mbit
// beside 1:20 with ls 900mbit gets its 600 by deadlines, and since
// link-sharing counts that service too (cl_total), the rest goes to
// 1:20, not 1:9 of it to 1:10.
func TestHFSCServiceCurves(t *testing.T) {
	const head = `
qdisc add dev eth0 root handle 1: hfsc default 20
class add dev eth0 parent 1: classid 1:1 hfsc sc rate 1gbit ul rate 1gbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5002 0xffff flowid 1:20
`
	for _, tt := range []struct {
		name, groups, classes string
		want10, want20        float64 // Mbit/s of frames
	}{
		{"link-sharing 3:1", "dport=5001 dport=5002", `
class add dev eth0 parent 1:1 classid 1:10 hfsc ls rate 750mbit
class add dev eth0 parent 1:1 classid 1:20 hfsc ls rate 250mbit
`, 750, 250},
		{"upper limit alone", "dport=5001", `
class add dev eth0 parent 1:1 classid 1:10 hfsc ls rate 750mbit ul rate 100mbit
class add dev eth0 parent 1:1 classid 1:20 hfsc ls rate 250mbit
`, 100, 0},
		{"real-time apart from link-sharing", "dport=5001 dport=5002", `
class add dev eth0 parent 1:1 classid 1:10 hfsc rt rate 600mbit ls rate 100mbit
class add dev eth0 parent 1:1 classid 1:20 hfsc ls rate 900mbit
`, 600, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := htbHost(tt.groups, 6, head+tt.classes)
			s.Profile = "6.18" // busylock: no defer_list bound (hfsc's sch->limit is 0)
			rep := mustRun(t, s)
			c := classes(rep)
			a, b := c["1:10"].SentBps/1e6, c["1:20"].SentBps/1e6
			if !within(a, tt.want10, 0.03) || !within(b, tt.want20, 0.03) || !rep.AccountingOK {
				t.Errorf("1:10 %.1f Mbit/s, 1:20 %.1f Mbit/s: want %.0f and %.0f within 3%% (accounting %v %s)",
					a, b, tt.want10, tt.want20, rep.AccountingOK, rep.AccountingError)
			}
			if tt.name == "real-time apart from link-sharing" {
				if x := xstat(c["1:10"], "rtwork"); x == 0 || x > xstat(c["1:10"], "work") {
					t.Errorf("1:10 rtwork %d of work %d: its service should come by real-time", x, xstat(c["1:10"], "work"))
				}
			}
		})
	}
}

func xstat(c report.Class, key string) int64 {
	for _, x := range c.XStats {
		if x.Key == key {
			n, _ := x.Value.Int64()
			return n
		}
	}
	return -1
}

// dualpi2 on a 1 Gbit/s link with saturating UDP senders, half of them
// ECT(1) (L4S's identifier): the L-queue's packets go first by the WRR's
// weights (classic_protection 10%: about 9 L bytes to 1 C byte), wait a
// fraction of the C-queue's delay, and are CE-marked past the 1 ms step
// rather than dropped.
func TestDualPI2Queues(t *testing.T) {
	s := htbHost("ecn=ect1,dport=5001 dport=5002", 8, "qdisc replace dev eth0 root handle 1: dualpi2\n")
	s.Profile = "6.18"
	s.RateBps = 1_000_000_000
	s.Duration, s.Warmup = 200*sim.Millisecond, 50*sim.Millisecond
	rep := mustRun(t, s)
	q, _ := qdiscOfKind(rep, "dualpi2")
	in := func(k string) float64 { v, _ := q.XStatInt(k); return float64(v) }
	l, c := in("pkts_in_l"), in("pkts_in_c")
	if !rep.AccountingOK || c == 0 || l/c < 7 || l/c > 10 || in("step_mark") == 0 || in("delay_l")*5 > in("delay_c") {
		t.Errorf("pkts in L %v C %v (ratio %.2f), step marks %v, delay L %vus C %vus (accounting %v %s)",
			l, c, l/c, in("step_mark"), in("delay_l"), in("delay_c"), rep.AccountingOK, rep.AccountingError)
	}
}

// cbs as TSN configurations use it, on one queue of an mqprio root (hw
// 0): the senders of priority 3 (traffic class 0, queue 0) leave at
// cbs's idleslope, 20 Mbit/s of frames, while those of priority 0 (class
// 2, queues 2-3) take the rest of the 1 Gbit/s link.
func TestCBSOnMQPrioQueue(t *testing.T) {
	s := htbHost("prio=3 prio=0", 8, `
qdisc replace dev eth0 handle 100: root mqprio num_tc 3 map 2 2 1 0 2 2 2 2 2 2 2 2 2 2 2 2 queues 1@0 1@1 2@2 hw 0
qdisc replace dev eth0 parent 100:1 cbs idleslope 20000 sendslope -980000 hicredit 30 locredit -1470 offload 0
`)
	s.Profile = "6.18"
	s.Queues, s.Qdisc, s.RateBps = 4, "mq pfifo", 1_000_000_000
	rep := mustRun(t, s)
	c := classes(rep)
	cbs, rest := c["100:ffe0"].SentBps/1e6, c["100:ffe2"].SentBps/1e6
	if !within(cbs, 20, 0.05) || rest < 900 || !rep.AccountingOK {
		t.Errorf("class 0 (cbs) %.2f Mbit/s, class 2 %.1f Mbit/s: want 20 and the rest (accounting %v %s)", cbs, rest, rep.AccountingOK, rep.AccountingError)
	}
}

// plug under traffic, as a test of bursts drives it: plugged from the
// start, "block" at 1 ms closes the epoch of what the sender queued so
// far and "release" at 3 ms lets exactly that epoch go (the watchdog
// reschedules the root); what came after waits, until
// "release_indefinite" at 5 ms lets everything through.
func TestPlugReleasesEpochs(t *testing.T) {
	tcAt := func(at sim.Time, words string) Action {
		return Action{Name: words, At: at, Do: func(l *Live) error { return l.TC("qdisc change dev eth0 root handle 1: plug " + words) }}
	}
	for _, indefinite := range []bool{false, true} {
		s := htbHost("-", 1, "qdisc replace dev eth0 root handle 1: plug\n")
		s.Profile = "6.18"
		s.Duration, s.Warmup = 8*sim.Millisecond, sim.Millisecond
		s.Actions = []Action{tcAt(sim.Millisecond, "block"), tcAt(3*sim.Millisecond, "release")}
		if indefinite {
			s.Actions = append(s.Actions, tcAt(5*sim.Millisecond, "release_indefinite"))
		}
		rep := mustRun(t, s)
		q, _ := qdiscOfKind(rep, "plug")
		switch {
		case !rep.AccountingOK || q.Dropped != 0:
			t.Errorf("accounting %v %s, dropped %d", rep.AccountingOK, rep.AccountingError, q.Dropped)
		case !indefinite && (q.SentPackets == 0 || q.BacklogPackets == 0):
			t.Errorf("after one release: sent %d, held %d; want the first epoch sent and the next held", q.SentPackets, q.BacklogPackets)
		case indefinite && q.SentPackets <= 2*uint64(q.BacklogPackets+1):
			t.Errorf("released indefinitely: sent %d, held %d", q.SentPackets, q.BacklogPackets)
		}
	}
}

// qfq on a 1 Gbit/s link, two saturated classes: they share it by
// weight in bytes (weights 1 and 3: a quarter and three quarters), and
// equal weights share it equally whatever their lmax (1514 and 9000:
// two aggregates in two groups). The leaves' counts say what each class
// sent; a class's own Sent is its bstats, which qfq_enqueue counts as
// its leaf takes each packet, so it is the leaf's sent and backlog, and
// its drops are its leaf's (qfq_dump_class_stats: a pfifo of 20 under
// 1:1 drops).
func TestQFQWeightsShare(t *testing.T) {
	const filters = `
qdisc add dev eth0 root handle 1: qfq
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5002 0xffff flowid 1:2
`
	for _, tt := range []struct {
		name, classes string
		want          float64 // bytes of 1:2 over 1:1's
		show          string  // 1:1's options in tc class show
	}{
		{"weights 1:3", `
class add dev eth0 parent 1: classid 1:1 qfq weight 1
class add dev eth0 parent 1: classid 1:2 qfq weight 3
qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 20
`, 3, "leaf 10: weight 1 maxpkt 1514"},
		{"equal weights, maxpkt 1514 and 9000", `
class add dev eth0 parent 1: classid 1:1 qfq weight 5 maxpkt 1514
class add dev eth0 parent 1: classid 1:2 qfq weight 5 maxpkt 9000
`, 1, "weight 5 maxpkt 1514"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := htbHost("dport=5001 dport=5002", 6, filters+tt.classes)
			s.Profile = "6.18" // busylock: no defer_list bound (qfq's sch->limit is 0)
			s.RateBps = 1_000_000_000
			s.Duration, s.Warmup = 40*sim.Millisecond, 10*sim.Millisecond
			rep := mustRun(t, s)
			leaf := map[string]report.Qdisc{}
			for _, q := range rep.Qdisc {
				leaf[q.Parent] = q
			}
			l1, l2 := leaf["1:1"], leaf["1:2"]
			r := float64(l2.SentBytes) / float64(l1.SentBytes)
			root, _ := qdiscOfKind(rep, "qfq")
			if !within(r, tt.want, 0.02) || root.SentBytes != l1.SentBytes+l2.SentBytes || !rep.AccountingOK {
				t.Errorf("leaves sent %d and %d bytes (ratio %.3f, want %.0f within 2%%), qfq %d (accounting %v %s)",
					l1.SentBytes, l2.SentBytes, r, tt.want, root.SentBytes, rep.AccountingOK, rep.AccountingError)
			}
			if a, b := classes(rep)["1:1"].SentBps/1e6, classes(rep)["1:2"].SentBps/1e6; a+b < 950 {
				t.Errorf("1:1 %.1f Mbit/s, 1:2 %.1f Mbit/s: the link is not full", a, b)
			}
			for id, l := range leaf {
				if c, ok := classes(rep)[id]; ok && (c.SentPackets != l.SentPackets+uint64(l.BacklogPackets) || c.Dropped != l.Dropped) {
					t.Errorf("class %s counted %d packets and %d drops, its leaf sent %d, holds %d, dropped %d",
						id, c.SentPackets, c.Dropped, l.SentPackets, l.BacklogPackets, l.Dropped)
				}
			}
			if l1.Kind == "pfifo" && l1.Handle == "10:" && l1.Dropped == 0 {
				t.Errorf("1:1's pfifo of 20 dropped nothing")
			}
			var b bytes.Buffer
			if err := report.WriteTCShow(&b, rep); err != nil {
				t.Fatal(err)
			}
			if want := "\nclass qfq 1:1 root " + tt.show + " \n Sent "; !strings.Contains(b.String(), want) {
				t.Errorf("tc class show lacks %q:\n%s", want, b.String())
			}
		})
	}
}

// tcpUnderUDPFlood is 4 CUBIC uploads (20 ms) through a 100 Mbit/s
// NIC whose root qdisc is qd, beside one unresponsive UDP flow (a
// pktgen-like udp_rate group) of 8000 packets of 1514 bytes a second,
// 97 Mbit/s.
func tcpUnderUDPFlood(qd string) Spec {
	s := tcpSpec(4, "100Mbit", qd)
	s.Profile = "6.18"
	s.Also = []workload.Spec{{Kind: workload.UDPRate, Senders: 1, Flows: 1, PacketSize: 1472, Rate: 8000}}
	s.Ping = 0
	s.Duration, s.Warmup, s.Interval = 3*sim.Second, 2*sim.Second, 250*sim.Millisecond
	return s
}

// CHOKe against an unresponsive flow, as its paper sets it: RED with
// the same thresholds (in bytes, 1500 a packet) drops the TCP flows'
// packets and the flood's alike, and TCP, which backs off, keeps a few
// Mbit/s; choke draws the flood's packets from the queue, drops them in
// pairs (matched), and the uploads get several times more.
func TestChokeProtectsTCP(t *testing.T) {
	red := mustRun(t, tcpUnderUDPFlood("red limit 600000 min 75000 max 225000 avpkt 1500 bandwidth 100mbit"))
	rep := mustRun(t, tcpUnderUDPFlood("choke limit 400 min 50 max 150 avpkt 1500 bandwidth 100mbit"))
	q, _ := qdiscOfKind(rep, "choke")
	x := func(k string) uint64 { v, _ := q.XStatInt(k); return uint64(v) }
	t.Logf("TCP goodput: red %.1f Mbit/s, choke %.1f Mbit/s; choke matched %d, early %d, pdrop %d",
		red.TCP.UpBps/1e6, rep.TCP.UpBps/1e6, x("matched"), x("early"), x("pdrop"))
	if !rep.AccountingOK || x("matched") == 0 || q.Dropped != 2*x("matched")+x("early")+x("pdrop") || rep.Drops["QDISC_DROP"] != q.Dropped {
		t.Errorf("accounting %v %s, dropped %d, drops %v", rep.AccountingOK, rep.AccountingError, q.Dropped, rep.Drops)
	}
	if rep.TCP.UpBps < 3*red.TCP.UpBps || rep.TCP.UpBps < 15e6 {
		t.Errorf("TCP goodput under choke %.1f Mbit/s, under red %.1f: want choke's several times red's", rep.TCP.UpBps/1e6, red.TCP.UpBps/1e6)
	}
}

// hhf as its authors meant it: bulk flows (4 netperf UDP_STREAMs and a
// CUBIC upload on 100 Mbit/s) become heavy hitters, and a ping beside
// them, in the other bucket and on new_buckets, waits for none of their
// queue. The same hhf with admit_bytes beyond any flow's reach finds no
// heavy hitter, is one FIFO, and the ping waits behind the floods.
func TestHHFPingUnderUDP(t *testing.T) {
	run := func(qd string) *report.Report {
		s := tcpSpec(1, "100Mbit", qd)
		s.Profile = "6.18"
		s.Ping = 10 * sim.Millisecond
		s.Also = []workload.Spec{{Kind: workload.UDPStream, Senders: 4, Flows: 4, PacketSize: 1472}}
		s.Duration, s.Warmup = 3*sim.Second, 2*sim.Second
		return mustRun(t, s)
	}
	hhf, fifo := run("hhf"), run("hhf admit_bytes 4294967295")
	q, _ := qdiscOfKind(hhf, "hhf")
	cur, _ := q.XStatInt("cur_hh")
	tot, _ := q.XStatInt("tot_hh")
	wait, fifoWait := queueMs(hhf), queueMs(fifo)
	t.Logf("ping's wait above the base RTT: %.2f ms with heavy hitters (cur_hh %d, tot_hh %d), %.2f ms without", wait, cur, tot, fifoWait)
	if !hhf.AccountingOK || cur < 4 || tot < 4 || fifoWait < 10 || wait*5 > fifoWait {
		t.Errorf("ping waits %.2f ms (cur_hh %d tot_hh %d), %.2f ms in one FIFO: want a fifth at most (accounting %v %s)",
			wait, cur, tot, fifoWait, hhf.AccountingOK, hhf.AccountingError)
	}
}

// multiq's recipe (Documentation/networking/multiqueue.rst): an
// skbedit queue_mapping in multiq's filter moves one sender's packets to
// queue 3, so band 4 carries two senders and band 2 none, and the NIC's
// queue 3 sends them (sch_direct_xmit takes the skb's queue_mapping), in
// and out of process alike.
func TestMultiqSkbeditMovesQueue(t *testing.T) {
	s := Default()
	s.Profile = "6.18"
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Driver, s.Queues = "ice", 4
	s.Workload.Senders, s.Workload.PacketSize = 4, 1472
	s.Duration, s.Warmup = 10*sim.Millisecond, 2*sim.Millisecond
	s.TC = []TCBatch{{Name: "multiq.tc", Text: "qdisc replace dev eth0 root handle 1: multiq\n" +
		"filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.1.0.1/32 action skbedit queue_mapping 3\n"}}
	rep := mustRun(t, s)
	cs := classes(rep)
	if !rep.AccountingOK || cs["1:2"].SentPackets != 0 || cs["1:1"].SentPackets == 0 || cs["1:4"].SentPackets < cs["1:1"].SentPackets*3/2 {
		t.Fatalf("accounting %v; bands 1:1..1:4 sent %d %d %d %d: want 1:2 (queue 1's sender, 10.1.0.1) empty and 1:4 about twice 1:1",
			rep.AccountingOK, cs["1:1"].SentPackets, cs["1:2"].SentPackets, cs["1:3"].SentPackets, cs["1:4"].SentPackets)
	}
	if q := rep.Queues; len(q) != 4 || q[1].TxPackets != 0 || q[3].TxPackets < q[0].TxPackets*3/2 {
		t.Fatalf("TX queues %+v: want queue 1 idle and queue 3 sending the two senders' packets", q)
	}
}
