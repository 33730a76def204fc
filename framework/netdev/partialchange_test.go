package netdev

import (
	"errors"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	_ "github.com/txlab/txlab/plugins/pie"
)

// fq_pie_change sets sch->limit before it refuses a number of flows: the
// command fails, as a kernel refusal, and the host's sch->limit (which
// the llist defer bound reads) is the new one.
func TestPartialChangeKeepsLimit(t *testing.T) {
	h := newHarness(t, profile(t, "6.18"), 2, "ice", 1, "pfifo")
	if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 1: fq_pie limit 500"); err != nil {
		t.Fatal(err)
	}
	q := h.dev.Root
	err := h.n.TCBatch(h.dev, "t.tc", "qdisc change dev eth0 root handle 1: fq_pie limit 7 flows 16")
	var pc *qdisc.PartialChange
	if !errors.Is(err, qdisc.ErrKernel) || errors.As(err, &pc) {
		t.Errorf("change: %v, want the kernel's refusal alone", err)
	}
	if h.dev.Root != q || q.Limit != 7 {
		t.Errorf("after the refusal: root changed %v, sch->limit %d; want the same qdisc at 7", h.dev.Root != q, q.Limit)
	}
}
