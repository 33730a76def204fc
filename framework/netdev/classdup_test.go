package netdev

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/drr"
	_ "github.com/txlab/txlab/plugins/htb"
	_ "github.com/txlab/txlab/plugins/netem"
	_ "github.com/txlab/txlab/plugins/qfq"
	_ "github.com/txlab/txlab/plugins/tbf"
)

// A leaf's duplicates go to the root (netem_enqueue's
// rootq->enqueue(skb2) with rootq = qdisc_root_bh(sch)): under htb, every
// clone netem makes enters htb's enqueue (the only enqueue the TX path's
// hook sees), is classified there back to netem's class, reaches netem
// marked and is not duplicated again; each clone is offered, and the
// accounting holds with a tbf leaf shaping the other class.
func TestLeafDuplicatesGoToTheRoot(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 4, "ice", 1, "pfifo")
	err := h.n.TCBatch(h.dev, "t.tc", `
qdisc replace dev eth0 root handle 1: htb default 20
class add dev eth0 parent 1: classid 1:1 htb rate 2gbit
class add dev eth0 parent 1:1 classid 1:10 htb rate 1gbit ceil 2gbit
class add dev eth0 parent 1:1 classid 1:20 htb rate 1gbit ceil 2gbit
qdisc add dev eth0 parent 1:10 handle 10: netem delay 200us duplicate 25% limit 100000
qdisc add dev eth0 parent 1:20 handle 20: tbf rate 300mbit burst 20k limit 200k
`)
	if err != nil {
		t.Fatal(err)
	}
	root := h.dev.Root
	netem, tbf := root.LeafOf(qdisc.MakeClassID(1, 0x10)), root.LeafOf(qdisc.MakeClassID(1, 0x20))
	if root.Kind != "htb" || netem == nil || netem.Kind != "netem" || tbf == nil || tbf.Kind != "tbf" {
		t.Fatalf("tree: root %s, leaves %v %v", root.Kind, netem, tbf)
	}
	atRoot := map[skb.Handle]bool{} // clones handed to the root's enqueue
	h.n.Hooks.EnqueueBatch = func(c *sim.CPU, q *Qdisc, b []*skb.SKB) {
		if q != root {
			t.Errorf("the TX path enqueued to %s, not the root", q.Name())
		}
		for _, s := range b {
			if s.Sock == -1 {
				if s.DupDepth != 1 || s.DupOf != netem.ID {
					t.Errorf("clone %#x: depth %d, made by qdisc %d (netem is %d)", uint64(s.Handle), s.DupDepth, s.DupOf, netem.ID)
				}
				atRoot[s.Handle] = true
			}
		}
	}
	for cpu := 0; cpu < 4; cpu++ {
		h.on(cpu, sim.Time(cpu), func(c *sim.CPU) {
			for i := 0; ; i++ {
				c.Spend(300)
				s := h.skb(c, i)
				s.Len, s.Sock = 1000, int32(cpu)                // a clone has none
				s.Priority = uint32(qdisc.MakeClassID(1, 0x10)) // skb->priority names the class
				if cpu%2 == 1 {
					s.Priority = uint32(qdisc.MakeClassID(1, 0x20))
				}
				h.n.DevQueueXmit(c, h.dev, s)
			}
		})
	}
	h.run(10 * sim.Millisecond) // checks the accounting
	var duplicated int64 = -1
	for _, x := range netem.Ops.Stats().XStats {
		if x.Key == "duplicated" {
			duplicated = int64(x.Bits)
		}
	}
	if h.n.Clones == 0 || int64(h.n.Clones) != duplicated || len(atRoot) != int(h.n.Clones) {
		t.Fatalf("netem duplicated %d, clones made %d, clones the root enqueued %d", duplicated, h.n.Clones, len(atRoot))
	}
	// A quarter of the originals netem took, not of the clones too. Its
	// limit is above anything the run offers: an original dropped at
	// the limit is never duplicated (qdisc_drop_all frees skb2 with it).
	st := netem.Ops.Stats()
	took := int64(netem.SentPkts) + int64(st.Drops) + int64(st.Qlen) - duplicated
	if st.Drops != 0 {
		t.Errorf("netem dropped %d at its limit", st.Drops)
	}
	if share := float64(duplicated) / float64(took); share < 0.22 || share > 0.28 {
		t.Errorf("netem duplicated %d of %d originals (%.3f), want 25%%", duplicated, took, share)
	}
	if tbf.SentPkts == 0 || h.n.Offered == 0 {
		t.Fatalf("tbf sent %d, offered %d", tbf.SentPkts, h.n.Offered)
	}
	t.Logf("offered %d (clones %d), netem sent %d, tbf sent %d", h.n.Offered, h.n.Clones, netem.SentPkts, tbf.SentPkts)
}
