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
	split []uint16 // the GSO skbs' segment counts, as Charge saw them
}

func (o *chargingSock) Charge(_ *sim.CPU, s *skb.SKB, bytes int64) {
	o.extra += bytes
	o.split = append(o.split, s.GSOSegs)
}

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
	if len(o.split) != 1 || o.split[0] != segs {
		t.Errorf("Charge saw GSO skbs of %v segments, want one of %d (before the split)", o.split, segs)
	}
}

// The host tells cake which packets of a batch are one GSO skb's
// segments (qdisc.SegCtx): cake_enqueue classifies the skb once, before
// skb_gso_segment, and records its length as the tin's max_len. tbf's
// segments are independent skbs (tbf_segment enqueues each into the
// child), so it is told nothing.
func TestSplitGSOSegmentPlaces(t *testing.T) {
	for _, tc := range []struct {
		qd     []string
		places []uint16
	}{
		{[]string{"cake", "besteffort"}, []uint16{1, 2, 3, 0, 1, 2, 3}},
		{[]string{"tbf", "rate", "1gbit", "burst", "2000", "limit", "1mb"}, nil},
	} {
		t.Run(tc.qd[0], func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "test", 1, tc.qd...)
			var places []uint16
			h.n.Hooks.EnqueueBatch = func(c *sim.CPU, q *Qdisc, b []*skb.SKB) {
				segs := q.ctx.GSOSegs()
				for i := range b {
					var p uint16
					if i < len(segs) {
						p = segs[i]
					}
					places = append(places, p)
				}
			}
			h.on(0, sim.Microsecond, func(c *sim.CPU) {
				for i, segs := range []uint16{3, 1, 3} {
					s := h.skb(c, i)
					s.Len, s.GSOSegs, s.TrueSize, s.Sock = uint32(segs)*1514, segs, 4000, 1
					s.Keys = skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1000, DstPort: 5001, Proto: 6}
					h.n.DevQueueXmit(c, h.dev, s)
				}
			})
			h.run(10 * sim.Millisecond)
			if len(places) != 7 {
				t.Fatalf("%s was handed %d skbs, want 7", tc.qd[0], len(places))
			}
			for i, p := range places {
				if want := uint16(0); tc.places != nil {
					want = tc.places[i]
					if p != want {
						t.Errorf("%s: packet %d told place %d, want %d (%v)", tc.qd[0], i, p, want, places)
					}
				} else if p != want {
					t.Errorf("%s: packet %d told place %d, want none", tc.qd[0], i, p)
				}
			}
			if tc.qd[0] != "cake" {
				return
			}
			var maxLen uint64
			for _, x := range h.dev.Root.Ops.Stats().XStats {
				if x.Key == "tin0_max_len" || x.Key == "max_len" {
					maxLen = max(maxLen, uint64(x.Bits))
				}
			}
			if maxLen != 3*1514 {
				t.Errorf("cake's max_len %d, want the GSO skb's %d", maxLen, 3*1514)
			}
		})
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

// gsoCode is the one answer for a GSO skb split into segments. cake's
// split-gso (cake_enqueue) classifies the skb before it segments it, so
// a filter's drop is the whole skb's: NET_XMIT_SUCCESS |
// __NET_XMIT_BYPASS, which a parent counts as a drop
// (net_xmit_drop_count); cake classifies the skb once and answers it
// for every segment. tbf_segment counts a segment queued only for
// NET_XMIT_SUCCESS (a leaf's bypass drop is not), and answers
// NET_XMIT_SUCCESS if any was, NET_XMIT_DROP if none.
func TestGSOCode(t *testing.T) {
	const (
		ok     = qdisc.XmitSuccess
		cn     = qdisc.XmitCN
		drop   = qdisc.XmitDrop
		bypass = qdisc.XmitSuccess | qdisc.XmitBypass
	)
	for _, tt := range []struct {
		name  string
		flags qdisc.Flags
		rc    []qdisc.Code
		want  qdisc.Code
	}{
		{"cake: all queued", qdisc.SplitGSO, []qdisc.Code{ok, ok, ok}, ok},
		{"cake: its own flow overlimit", qdisc.SplitGSO, []qdisc.Code{ok, cn, ok}, cn},
		{"cake: a filter dropped the skb", qdisc.SplitGSO, []qdisc.Code{bypass, bypass, bypass}, bypass},
		{"cake: a random filter dropped some", qdisc.SplitGSO, []qdisc.Code{ok, bypass, ok}, ok},
		{"cake: some dropped, some congested", qdisc.SplitGSO, []qdisc.Code{bypass, cn}, cn},
		{"tbf: one queued", 0, []qdisc.Code{bypass, ok, drop}, ok},
		{"tbf: none queued", 0, []qdisc.Code{bypass, cn, drop}, drop},
		{"tbf: all bypassed", 0, []qdisc.Code{bypass, bypass}, drop},
	} {
		q := &Qdisc{Flags: tt.flags}
		if got := q.gsoCode(tt.rc); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A leaf that segments a GSO skb answers its parent once for it, and
// the parent counts what the kernel's does (htb_enqueue: a drop in the
// class and in itself for a code other than NET_XMIT_SUCCESS; the
// leaf's qdisc_tree_reduce_backlog by 1 - kept segments, no drop). A
// cake leaf whose filter drops the skb: NET_XMIT_SUCCESS |
// __NET_XMIT_BYPASS, one drop. A tbf leaf whose bfifo takes 3 of the 10
// segments (tbf_segment counts the 7 in tbf): NET_XMIT_SUCCESS, no drop
// above tbf.
func TestGSOLeafDropsCounted(t *testing.T) {
	for _, tt := range []struct {
		name, leaf      string
		class, htb, tbf uint64
	}{
		{"cake filter drop", "qdisc add dev eth0 parent 1:1 handle 10: cake split-gso\n" +
			"filter add dev eth0 parent 10: protocol all prio 1 matchall action drop\n", 1, 1, 0},
		{"tbf partly queued", "qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1gbit burst 10000 limit 4600\n", 0, 0, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, profile(t, "6.18"), 2, "test", 1, "pfifo")
			if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 1: htb default 1\n"+
				"class add dev eth0 parent 1: classid 1:1 htb rate 1gbit\n"+tt.leaf); err != nil {
				t.Fatal(err)
			}
			h.on(0, sim.Microsecond, func(c *sim.CPU) {
				s := h.skb(c, 1)
				s.Len, s.GSOSegs, s.TrueSize = 10*1514, 10, 20000
				s.Keys = skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1000, DstPort: 5001, Proto: 6}
				h.n.DevQueueXmit(c, h.dev, s)
			})
			h.run(sim.Millisecond)
			var class uint64
			for _, cl := range h.dev.Root.Classes() {
				if cl.ID == qdisc.MakeClassID(1, 1) {
					class = cl.Drops
				}
			}
			leaf := h.dev.Root.LeafOf(qdisc.MakeClassID(1, 1))
			var tbf uint64
			if leaf.Kind == "tbf" {
				tbf = leaf.Ops.Stats().Drops
			}
			if class != tt.class || h.dev.Root.Ops.Stats().Drops != tt.htb || tbf != tt.tbf {
				t.Errorf("drops: htb's class 1:1 %d, htb %d, tbf %d; want %d, %d, %d",
					class, h.dev.Root.Ops.Stats().Drops, tbf, tt.class, tt.htb, tt.tbf)
			}
		})
	}
}
