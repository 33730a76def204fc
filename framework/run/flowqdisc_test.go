package run

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// tc filters on the flow qdiscs, through tc and a run: fq_codel and sfq
// drop a packet whose filter result names no flow of theirs
// (fq_codel_classify, sfq_classify: a minor past flows_cnt or the
// divisor), counted as qdisc drops (QDISC_DROP) with the accounting
// exact, while skb->priority naming a flow goes first and past the
// filters; cake ignores a minor out of range (cake_classify) and drops
// only for a drop action; `tc filter show` prints the flow classifier
// as f_flow.c does.
func TestFlowQdiscFilters(t *testing.T) {
	for _, tt := range []struct {
		root       string
		outOfRange bool // the out-of-range filter drops (not cake)
	}{
		{"fq_codel", true},
		{"sfq", true},
		{"cake bandwidth 1gbit besteffort", false},
	} {
		t.Run(tt.root, func(t *testing.T) {
			head := "qdisc add dev eth0 root handle 1: " + tt.root + "\n"
			// The senders of group 1 name flow 7 by skb->priority;
			// group 2's packets meet a filter that names flow 0x2000.
			s := htbHost("dport=5001,prio=1:7 dport=5002", 4, head+
				"filter add dev eth0 parent 1: protocol ip pref 1 u32 match ip dport 5002 0xffff flowid 1:2000\n"+
				"filter add dev eth0 parent 1: protocol ip pref 2 u32 match ip dport 5001 0xffff flowid 1:2000\n")
			s.Duration, s.Warmup = 15*sim.Millisecond, 5*sim.Millisecond
			rep := mustRun(t, s)
			if !rep.AccountingOK {
				t.Fatal(rep.AccountingError)
			}
			drops := rep.Drops["QDISC_DROP"]
			t.Logf("out-of-range filter: %d QDISC_DROP, %d offered, %d sent, drops %v", drops, rep.OfferedPackets, rep.TxPackets, rep.Drops)
			if tt.outOfRange != (drops > 0) || rep.TxPackets == 0 {
				t.Errorf("out-of-range filter: %d QDISC_DROP, %d sent; want drops %v and packets sent", drops, rep.TxPackets, tt.outOfRange)
			}
			// About half: group 2's skbs are freed at the enqueue, so its
			// senders never wait for their send buffer and offer a little
			// more than group 1's (54-55% of the offer since session 39).
			if tt.outOfRange && (drops*100 < rep.OfferedPackets*40 || drops*100 > rep.OfferedPackets*60) {
				t.Errorf("%d QDISC_DROP of %d offered: want about half (group 2's, not group 1's, whose priority names a flow)", drops, rep.OfferedPackets)
			}
			if tt.outOfRange && rep.Qdisc[0].Dropped < drops {
				t.Errorf("qdisc row dropped %d, fewer than its %d QDISC_DROP", rep.Qdisc[0].Dropped, drops)
			}

			// A drop action drops everywhere; a flow filter steers the rest.
			s = htbHost("dport=5001 dport=5002", 4, head+
				"filter add dev eth0 parent 1: protocol ip pref 1 u32 match ip dport 5002 0xffff action drop\n"+
				"filter add dev eth0 parent 1: handle 1 flow hash keys src,dst divisor 8\n")
			s.Duration, s.Warmup = 15*sim.Millisecond, 5*sim.Millisecond
			rep = mustRun(t, s)
			if !rep.AccountingOK || rep.Drops["QDISC_DROP"] == 0 || rep.TxPackets == 0 {
				t.Errorf("drop action: accounting %v %s, %d QDISC_DROP, %d sent", rep.AccountingOK, rep.AccountingError, rep.Drops["QDISC_DROP"], rep.TxPackets)
			}
			var show string
			for _, f := range rep.Filters {
				show += f.Text
			}
			for _, want := range []string{
				"filter protocol ip pref 1 u32 chain 0 \n",
				"filter protocol all pref 49152 flow chain 0 handle 0x1 hash keys src,dst divisor 8 baseclass 1:1 \n",
			} {
				if !strings.Contains(show, want) {
					t.Errorf("tc filter show lacks %q:\n%s", want, show)
				}
			}
		})
	}
}

// tc filter on a qdisc without a block, or at a class a flow qdisc does
// not have, is refused as the kernel refuses it (__tcf_qdisc_find,
// __tcf_qdisc_cl_find), and flow's own errors come through.
func TestFlowQdiscFilterErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"qdisc add dev eth0 root handle 1: fq_pie\nfilter add dev eth0 parent 1: handle 1 flow hash keys dst\n", "Error: Qdisc not classful"},
		{"qdisc add dev eth0 root handle 1: fq_codel\nfilter add dev eth0 parent 1:5 handle 1 flow hash keys dst\n", "Error: Specified class doesn't exist."},
		{"qdisc add dev eth0 root handle 1: sfq\nfilter add dev eth0 parent 1: flow hash keys dst\n", "RTNETLINK answers: Invalid argument"},
		{"qdisc add dev eth0 root handle 1: cake\nfilter add dev eth0 parent 1: handle 1 flow map keys src,dst\n", `Invalid mode "map" for multiple keys`},
	} {
		_, err := Run(htbHost("", 2, tt.text), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q:\n got %v\nwant %q", tt.text, err, tt.want)
		}
	}
}

// The classic pairing: an sfq leaf of an htb class, hashed by a flow
// filter attached to the leaf (parent 10:). Its result names buckets
// past sfq's divisor for two of the four ports: the leaf drops those
// packets (QDISC_DROP) and sends the others, htb counts the leaf's
// drops in its own (htb_enqueue: net_xmit_drop_count of the leaf's
// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS), and the accounting is exact.
func TestFlowFilterOnLeaf(t *testing.T) {
	s := htbHost("dport=5001 dport=5002 dport=5003 dport=5004", 8, `
qdisc add dev eth0 root handle 1: htb default 10
class add dev eth0 parent 1: classid 1:10 htb rate 2gbit
qdisc add dev eth0 parent 1:10 handle 10: sfq divisor 16
filter add dev eth0 parent 10: handle 1 flow map key proto-dst and 0xf addend 5
`)
	s.Duration, s.Warmup = 15*sim.Millisecond, 5*sim.Millisecond
	rep := mustRun(t, s)
	if !rep.AccountingOK {
		t.Fatal(rep.AccountingError)
	}
	// dport & 0xf + 5, plus baseclass 10:1's minor: 5001 -> 15,
	// 5002 -> 16, 5003 -> 17 and 5004 -> 18, past 16: dropped.
	var htbDropped, sfqDropped uint64
	for _, q := range rep.Qdisc {
		switch q.Kind {
		case "htb":
			htbDropped = q.Dropped
		case "sfq":
			sfqDropped = q.Dropped
		}
	}
	drops := rep.Drops["QDISC_DROP"]
	if drops == 0 || rep.TxPackets == 0 || sfqDropped == 0 || htbDropped != sfqDropped {
		t.Errorf("%d QDISC_DROP, %d sent (sfq dropped %d, htb %d): want drops and packets sent, sfq's drops counted by htb",
			drops, rep.TxPackets, sfqDropped, htbDropped)
	}
	var shown bool
	for _, f := range rep.Filters {
		shown = shown || f.Parent == "10:" && strings.Contains(f.Text, "flow chain 0 handle 0x1 map keys proto-dst and 0x0000000f addend 0x5 baseclass 10:1 ")
	}
	if !shown {
		t.Errorf("the leaf's filter is not shown: %+v", rep.Filters)
	}
}
