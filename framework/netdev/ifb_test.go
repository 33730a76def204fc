package netdev

import (
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// ifbHarness is a 2-CPU host with eth0 (ice, one queue, pfifo) and the
// ifbs of specs, then the tc commands of tcText.
func ifbHarness(t *testing.T, tcText string, specs ...IfbSpec) *harness {
	t.Helper()
	h := newHarness(t, profile(t, "6.18"), 2, "ice", 1, "pfifo")
	for _, p := range specs {
		if _, err := h.n.AddIfb(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.n.TCBatch(h.dev, "t.tc", tcText); err != nil {
		t.Fatal(err)
	}
	return h
}

// burst sends k skbs into eth0 from CPU 0 with bottom halves off, as one
// softirq's worth of work: ifb's tasklet runs only once they are all in.
func (h *harness) burst(k int) {
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable()
		for i := range k {
			h.n.DevQueueXmit(c, h.dev, h.skb(c, i))
		}
		c.LocalBhEnable()
	})
}

// ifb_xmit stops the TX queue once its rq holds tx_queue_len skbs (the
// one in hand still joins it); the next skb, bypassing the empty qdisc,
// meets the stopped queue and is requeued (sch_direct_xmit's
// dev_requeue_skb), the qdisc holds what comes next up to its limit,
// and drops the rest. The tasklet, run when the burst
// ends, gives rq back to eth0 (tc_skip_classify: eth0's egress block
// lets each pass once, or it would go round for ever), finds rq empty,
// wakes the queue, and the qdisc's backlog follows through the tasklet.
func TestIfbQueueStopsAndWakes(t *testing.T) {
	h := ifbHarness(t, "qdisc add dev eth0 clsact\n"+
		"filter add dev eth0 egress protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n"+
		"qdisc replace dev ifb0 root pfifo limit 3\n",
		IfbSpec{Name: "ifb0", TxQueueLen: 4})
	h.burst(20)
	h.run(sim.Millisecond)
	ifb := h.n.DeviceByName("ifb0")
	q, txq := &ifb.Ifb.Qs[0], ifb.Queues[0]
	// 5 in rq (4, then the stop, then the 5th), 1 requeued, 3 in pfifo, 11 dropped
	if q.RxPackets != 9 || q.TxPackets != 9 || txq.Stops != 1 || txq.Wakes != 1 || txq.Requeues != 1 || h.n.Drops[skb.DropQdiscDrop] != 11 {
		t.Fatalf("ifb0 took %d and gave back %d, queue stopped %d woken %d times, %d requeued, drops %v: want 9, 9, 1, 1, 1 and 11 QDISC_DROP",
			q.RxPackets, q.TxPackets, txq.Stops, txq.Wakes, txq.Requeues, h.n.Drops)
	}
	_, pkts, _, _, _ := h.dev.Clsact()
	if h.n.TxPkts != 9 || pkts != 20+9 {
		t.Fatalf("eth0 sent %d, its egress block saw %d: want 9 and 29 (each given-back skb passes once)", h.n.TxPkts, pkts)
	}
	if q.TaskletRuns < 2 || q.pending || q.rq.Len+q.tq.Len != 0 {
		t.Fatalf("%d tasklet runs, pending %v, %d+%d left: want at least two runs, then idle and empty", q.TaskletRuns, q.pending, q.rq.Len, q.tq.Len)
	}
}

// tcf_mirred_act's limits: a redirect to a device already on this CPU's
// stack of egress redirects is a loop, shot at the hook (TC_EGRESS);
// redirects nest 4 deep at most (MIRRED_NEST_LIMIT), the fifth is shot.
func TestMirredLoopAndNestLimit(t *testing.T) {
	chain := func(n int, back string) *harness {
		var specs []IfbSpec
		text := "qdisc add dev eth0 clsact\nfilter add dev eth0 egress protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n"
		for i := range n {
			specs = append(specs, IfbSpec{Name: fmt.Sprintf("ifb%d", i)})
			next := fmt.Sprintf("ifb%d", i+1)
			if i == n-1 {
				next = back
			}
			if next == "" {
				continue
			}
			text += fmt.Sprintf("qdisc add dev ifb%d clsact\nfilter add dev ifb%d egress protocol ip prio 1 matchall action mirred egress redirect dev %s\n", i, i, next)
		}
		h := ifbHarness(t, text, specs...)
		h.burst(10)
		h.run(sim.Millisecond)
		return h
	}
	took := func(h *harness, name string) uint64 { return h.n.DeviceByName(name).Ifb.Qs[0].RxPackets }

	if h := chain(2, "ifb0"); h.n.Drops[skb.DropTCEgress] != 10 || took(h, "ifb0")+took(h, "ifb1") != 0 {
		t.Errorf("ifb0 -> ifb1 -> ifb0: drops %v, ifbs took %d and %d: want 10 TC_EGRESS and nothing taken",
			h.n.Drops, took(h, "ifb0"), took(h, "ifb1"))
	}
	if h := chain(4, ""); h.n.Drops[skb.DropTCEgress] != 0 || took(h, "ifb3") != 10 {
		t.Errorf("eth0 -> ifb0..ifb3 (4 redirects): drops %v, ifb3 took %d: want none dropped at a hook and all 10 taken", h.n.Drops, took(h, "ifb3"))
	}
	if h := chain(5, ""); h.n.Drops[skb.DropTCEgress] != 10 || took(h, "ifb4") != 0 {
		t.Errorf("eth0 -> ifb0..ifb4 (5 redirects): drops %v, ifb4 took %d: want all 10 shot by the nest limit", h.n.Drops, took(h, "ifb4"))
	}
}

// A mirror sends a clone (offered, in the accounting) and the original
// goes on; an ifb frees what was not redirected to it (ifb_xmit:
// rx_dropped, as ip -s link shows it).
func TestMirredMirrorToIfb(t *testing.T) {
	h := ifbHarness(t, "qdisc add dev eth0 clsact\nfilter add dev eth0 egress protocol ip prio 1 matchall action mirred egress mirror dev ifb0\n",
		IfbSpec{Name: "ifb0"})
	h.burst(10)
	h.run(sim.Millisecond)
	ifb := h.n.DeviceByName("ifb0")
	if h.n.TxPkts != 10 || h.n.Clones != 10 || ifb.Ifb.RxDropped != 10 || ifb.Link().RxDropped != 10 {
		t.Fatalf("eth0 sent %d, %d clones, ifb0 rx_dropped %d (ip -s link %d): want 10 each", h.n.TxPkts, h.n.Clones, ifb.Ifb.RxDropped, ifb.Link().RxDropped)
	}
}

// ip link's words for an ifb, and their refusals.
func TestParseIfbList(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "ifb0", want: "[{ifb0 0 0}]"},
		{in: "ifb0 numtxqueues 4 txqueuelen 1000 type ifb; ifb1", want: "[{ifb0 4 1000} {ifb1 0 0}]"},
		{in: "", want: "[]"},
		{in: "ifb0;", err: "ifb 2 is empty"},
		{in: "ifb0; ifb0", err: "File exists"},
		{in: "ifb0 numtxqueues 0", err: "Invalid number of transmit queues"},
		{in: "ifb0 numtxqueues", err: "not complete"},
		{in: "ifb0 txqueuelen x", err: `argument "x" is wrong`},
		{in: "ifb0 txqueuelen 0", err: "txqueuelen 0"},
		{in: "ifb0 type veth", err: "only type ifb"},
		{in: "ifb0 mtu 9000", err: `Garbage instead of arguments "mtu"`},
		{in: "averyveryverylongname", err: "not a valid ifname"},
	} {
		got, err := ParseIfbList(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if s := fmt.Sprint(got); err != nil || (s != tt.want && !(tt.want == "[]" && got == nil)) {
			t.Errorf("%q: %s, %v; want %s", tt.in, s, err, tt.want)
		}
	}
}

// FuzzParseIfbList: any --ifb text is refused with an error or read as
// ifbs whose names are valid and unique and whose sizes are in range,
// never a panic.
func FuzzParseIfbList(f *testing.F) {
	for _, seed := range []string{"ifb0", "ifb0 numtxqueues 4 txqueuelen 1000 type ifb; ifb1", "ifb0;", "x numtxqueues", ";;", "ifb0 type"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 512 {
			return
		}
		ifbs, err := ParseIfbList(text)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range ifbs {
			if checkIfName(p.Name) != nil || seen[p.Name] || p.TxQueues < 0 || p.TxQueues > MaxQueues || p.TxQueueLen < 0 {
				t.Fatalf("%q gave %+v", text, ifbs)
			}
			seen[p.Name] = true
		}
	})
}
