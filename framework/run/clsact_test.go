package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
)

// clsact's egress block runs before the TX queue is picked
// (sch_handle_egress in __dev_queue_xmit): skbedit queue_mapping 3 sends
// dport 5002's packets to queue 3 whatever XPS would pick
// (netdev_xmit_skip_txqueue), a drop action frees dport 5003's as
// TC_EGRESS, counted by the clsact qdisc; a mapping past the device's
// queues does nothing (tcf_skbedit_act checks real_num_tx_queues), and
// the same after `qdisc del dev eth0 clsact` takes the block away.
func TestClsactEgress(t *testing.T) {
	const tcText = `
qdisc add dev eth0 clsact
filter add dev eth0 egress protocol ip prio 1 u32 match ip dport 5002 0xffff action skbedit queue_mapping 3
filter add dev eth0 egress protocol ip prio 2 u32 match ip dport 5003 0xffff action drop
filter add dev eth0 egress protocol ip prio 3 u32 match ip dport 5001 0xffff action skbedit queue_mapping 9
`
	s := htbHost("dport=5001 dport=5002 dport=5003", 6, tcText)
	s.Queues, s.Qdisc = 4, "mq pfifo"
	s.Duration, s.Warmup = 20*sim.Millisecond, 5*sim.Millisecond
	rep := mustRun(t, s)
	ca, _ := qdiscOfKind(rep, "clsact")
	perQ := map[int]uint64{}
	for _, q := range rep.Queues {
		perQ[q.Txq] = q.TxPackets
	}
	drops := rep.Drops["TC_EGRESS"]
	if !rep.AccountingOK || ca.Kind == "" || drops == 0 || ca.Dropped != drops || perQ[3] == 0 || ca.SentPackets < drops {
		t.Errorf("accounting %v %s; clsact %+v; TC_EGRESS %d; per queue %v", rep.AccountingOK, rep.AccountingError, ca, drops, perQ)
	}
	// without the block, XPS picks again
	s.TC = []TCBatch{{Name: "test.tc", Text: tcText + "qdisc del dev eth0 clsact\n"}}
	rep2 := mustRun(t, s)
	perQ2 := map[int]uint64{}
	for _, q := range rep2.Queues {
		perQ2[q.Txq] = q.TxPackets
	}
	// senders 1 and 2 run on CPUs 1 and 2, whose XPS queues are 1 and
	// 2: steered to 3 and dropped, they leave those queues idle
	if perQ[1] != 0 || perQ[2] != 0 || perQ2[1] == 0 || perQ2[2] == 0 {
		t.Errorf("packets per queue with the egress block %v, without %v", perQ, perQ2)
	}
	if rep2.Drops["TC_EGRESS"] != 0 {
		t.Errorf("TC_EGRESS drops %d after the clsact was deleted", rep2.Drops["TC_EGRESS"])
	}
	if q, ok := qdiscOfKind(rep2, "clsact"); ok {
		t.Errorf("a clsact row after its delete: %+v", q)
	}
}

// act_police on clsact's egress block, as hosts cap a device's egress
// (`matchall action police rate 1gbit burst 125k drop`): six senders on
// four queues leave at the police's rate, what exceeds is freed as
// TC_EGRESS, and every transmitting CPU takes the action's one
// tcfp_lock, which perf lock's table shows contended. Inside a qdisc
// (htb's filters, under its root lock) the same police limits one
// class: its drops are the qdisc's.
func TestClsactPolice(t *testing.T) {
	s := htbHost("dport=5001 dport=5002", 6, `
qdisc add dev eth0 clsact
filter add dev eth0 egress protocol ip prio 1 matchall action police rate 1gbit burst 125k conform-exceed drop
`)
	s.Queues, s.Qdisc = 4, "mq pfifo"
	s.Duration, s.Warmup = 30*sim.Millisecond, 10*sim.Millisecond
	rep := mustRun(t, s)
	var lock report.Lock
	for _, l := range rep.Locks {
		if l.Name == "tcf_police_act (tcfp_lock)" {
			lock = l
		}
	}
	drops := rep.Drops["TC_EGRESS"]
	if !rep.AccountingOK || drops == 0 || rep.TxBps < 0.97e9 || rep.TxBps > 1.03e9 || lock.Contended == 0 {
		t.Errorf("accounting %v %s; %.3f Gbit/s, TC_EGRESS %d; tcfp_lock %+v", rep.AccountingOK, rep.AccountingError, rep.TxBps/1e9, drops, lock)
	}

	s = htbHost("dport=5001 dport=5002", 6, `
qdisc add dev eth0 root handle 1: htb default 20
class add dev eth0 parent 1: classid 1:1 htb rate 1gbit ceil 1gbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 750mbit ceil 1gbit
class add dev eth0 parent 1:1 classid 1:20 htb rate 250mbit ceil 1gbit
filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff action police rate 100mbit burst 20k conform-exceed drop/pipe flowid 1:10
`)
	s.Duration, s.Warmup = 30*sim.Millisecond, 10*sim.Millisecond
	rep = mustRun(t, s)
	c := classes(rep)
	rate10 := float64(c["1:10"].SentBytes) * 8 / (float64(s.Duration) / 1e9) // class counters run from 0
	if !rep.AccountingOK || rep.Drops["QDISC_DROP"] == 0 || rate10 < 90e6 || rate10 > 110e6 || c["1:20"].SentBytes < 5*c["1:10"].SentBytes {
		t.Errorf("accounting %v %s; 1:10 %.1f Mbit/s, 1:20 %d bytes; drops %v", rep.AccountingOK, rep.AccountingError, rate10/1e6, c["1:20"].SentBytes, rep.Drops)
	}
	// tc -s filter show of htb's block: the counters of the copy that
	// classified in htb's plugin, its drops among htb's (the rest: its
	// leaves')
	if len(rep.Filters) != 1 || !rep.Filters[0].Stats {
		t.Fatalf("filters %+v, want htb's block shown with -s", rep.Filters)
	}
	text := rep.Filters[0].Text
	var bytes, pkts, dropped, over uint64
	if i := strings.Index(text, "\tSent "); i < 0 {
		t.Fatalf("no action statistics in\n%s", text)
	} else if _, err := fmt.Sscanf(text[i:], "\tSent %d bytes %d pkt (dropped %d, overlimits %d", &bytes, &pkts, &dropped, &over); err != nil {
		t.Fatal(err)
	}
	if dropped == 0 || dropped != over || dropped > rep.Drops["QDISC_DROP"] || pkts <= dropped || bytes != pkts*1514 {
		t.Errorf("htb's police shows %d bytes %d pkt, dropped %d, overlimits %d; QDISC_DROP %d", bytes, pkts, dropped, over, rep.Drops["QDISC_DROP"])
	}
}
