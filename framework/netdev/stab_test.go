package netdev

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// A size table comes with the qdisc tc makes (qdisc_create) and goes
// with a change that gives none (qdisc_change assigns the words' table,
// NULL without); qdisc_get_stab refuses a table whose cells or sizes
// need more than 2^30.
func TestStabChange(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 1, "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := tcLine("qdisc replace dev eth0 root handle 1: stab overhead 24 fq_codel"); err != nil {
		t.Fatal(err)
	}
	if got := h.dev.Root.StabText(); got != " overhead 24 " {
		t.Fatalf("the root's table: %q", got)
	}
	if err := tcLine("qdisc change dev eth0 root handle 1: stab mpu 100 fq_codel limit 100"); err != nil {
		t.Fatal(err)
	}
	if got := h.dev.Root.StabText(); got != " mpu 100 mtu 2047 tsize 512 " || h.dev.Root.stab.PktLen(60) != 100 {
		t.Errorf("after a change with a table: %q", got)
	}
	if err := tcLine("qdisc change dev eth0 root handle 1: fq_codel limit 200"); err != nil || h.dev.Root.stab != nil {
		t.Errorf("a change without a table: %v, table %v (want none)", err, h.dev.Root.stab)
	}
	err := tcLine("qdisc replace dev eth0 root handle 2: stab mpu 10 tsize 1 mtu 4294967295 pfifo")
	if err == nil || !strings.Contains(err.Error(), "Invalid logarithmic size of size table") || h.dev.RootHandle.Major() != 1 {
		t.Errorf("a table of 2^32-byte cells: %v (root %s)", err, h.dev.RootHandle.QdiscString())
	}
}

// A size table applies to the skb the qdisc is handed, not to what the
// qdisc makes of it: cake's split-gso segments each get their own length
// as pkt_len (cake_enqueue: qdisc_skb_cb(segs)->pkt_len = segs->len), so
// cake's root table's overhead counts on none of them.
func TestStabNotOnSegments(t *testing.T) {
	const segs = 10
	h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "stab", "overhead", "100", "cake", "besteffort")
	h.on(0, sim.Microsecond, func(c *sim.CPU) {
		s := h.skb(c, 1)
		s.Len, s.GSOSegs = segs*1514, segs
		s.Keys = skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1000, DstPort: 5001, Proto: 6}
		h.n.DevQueueXmit(c, h.dev, s)
	})
	h.run(10 * sim.Millisecond)
	q := h.dev.Root
	if pkts, bytes := q.SentPkts+uint64(q.Qlen()), int64(q.SentBytes)+q.Backlog(); q.StabText() != " overhead 100 " || pkts != segs || bytes != segs*1514 {
		t.Errorf("cake (table %q) sent and holds %d packets, %d bytes; want %d segments of 1514 bytes, the table on none", q.StabText(), pkts, bytes, segs)
	}
}
