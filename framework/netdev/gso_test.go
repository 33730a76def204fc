package netdev

import (
	"testing"

	_ "github.com/txlab/txlab/plugins/cake"
	_ "github.com/txlab/txlab/plugins/tbf"

	"github.com/txlab/txlab/framework/qdisc"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// chargingSock is a TCP-like owner: tcp_gso_segment may charge it more.
type chargingSock struct {
	chargedSock
	extra int64
}

func (o *chargingSock) Charge(_ *sim.CPU, bytes int64) { o.extra += bytes }

// cake's split-gso cuts a 10-segment GSO skb into 10 skbs, each with a
// small head of its own and a tenth of the payload: together they weigh
// nine heads more than the GSO skb, which the socket is charged (and
// gets back as the segments are freed), as tcp_gso_segment does.
func TestSplitGSOTruesize(t *testing.T) {
	const segs = 10
	h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "cake", "besteffort")
	head := skb.TruesizeAllocSkb(skb.MaxTCPHeader)
	gsoTs := head + segs*1448
	o := &chargingSock{}
	o.owner = h.n.Pool.AddOwner(o)
	var got []uint32
	h.n.Hooks.EnqueueBatch = func(c *sim.CPU, q *Qdisc, b []*skb.SKB) {
		for _, s := range b {
			got = append(got, s.TrueSize)
		}
	}
	h.on(0, sim.Microsecond, func(c *sim.CPU) {
		s := h.skb(c, 1)
		s.Len, s.GSOSegs, s.TrueSize, s.Owner, s.Sock = segs*1514, segs, gsoTs, o.owner, 1
		s.Keys = skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1000, DstPort: 5001, Proto: 6}
		h.n.DevQueueXmit(c, h.dev, s)
	})
	h.run(10 * sim.Millisecond)
	if len(got) != segs {
		t.Fatalf("cake was handed %d skbs, want %d segments", len(got), segs)
	}
	var sum int64
	for i, ts := range got {
		sum += int64(ts)
		if ts < head+1448 || ts > head+1448+segs {
			t.Errorf("segment %d truesize %d, want a head (%d) and its 1448 B of payload", i, ts, head)
		}
	}
	if want := int64(gsoTs) + (segs-1)*int64(head); sum != want {
		t.Errorf("segments weigh %d, want the GSO skb's %d and 9 heads: %d", sum, gsoTs, want)
	}
	if o.extra != sum-int64(gsoTs) {
		t.Errorf("socket charged %d more, want the segments' excess %d", o.extra, sum-int64(gsoTs))
	}
}

// tbf takes a GSO skb past its max_size as its segments when each fits
// (tbf_segment), and the sender is told it was sent; one whose
// segments are too long for the bucket is dropped whole, once; one
// within max_size stays one skb.
func TestTBFSegmentsPastMaxSize(t *testing.T) {
	const segs = 10
	for _, tc := range []struct {
		name, burst   string
		handed, drops int
		code          qdisc.Code
	}{
		{"segments fit a 10000-byte bucket", "10000", segs, 0, qdisc.XmitSuccess},
		{"segments too long for a 1000-byte bucket", "1000", 1, 1, qdisc.XmitDrop},
		{"the skb fits a 64 KB bucket", "64kb", 1, 0, qdisc.XmitSuccess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "tbf", "rate", "1gbit", "burst", tc.burst, "limit", "1mb")
			o := &chargingSock{}
			o.owner = h.n.Pool.AddOwner(o)
			handed := 0
			h.n.Hooks.EnqueueBatch = func(c *sim.CPU, q *Qdisc, b []*skb.SKB) { handed += len(b) }
			var code qdisc.Code
			h.on(0, sim.Microsecond, func(c *sim.CPU) {
				s := h.skb(c, 1)
				s.Len, s.GSOSegs, s.TrueSize, s.Owner, s.Sock = segs*1514, segs, 20000, o.owner, 1
				s.Keys = skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1000, DstPort: 5001, Proto: 6}
				code = h.n.DevQueueXmit(c, h.dev, s)
			})
			h.run(10 * sim.Millisecond)
			if handed != tc.handed {
				t.Errorf("tbf was handed %d skbs, want %d", handed, tc.handed)
			}
			if got := h.n.Drops[skb.DropQdiscDrop]; got != uint64(tc.drops) {
				t.Errorf("%d QDISC_DROP, want %d", got, tc.drops)
			}
			if code != tc.code {
				t.Errorf("dev_queue_xmit returned %v, want %v", code, tc.code)
			}
		})
	}
}
