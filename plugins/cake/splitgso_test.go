package cake

import (
	"testing"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// TestSplitGSOOneEnqueue: cake_enqueue classifies a GSO skb once, then
// segments it (skb_gso_segment) and queues every segment on that flow:
// one cake_hash, b->max_skblen the skb's length, and a filter's drop
// one drop of the whole skb. The host says which packets are one skb's
// segments (qdisc.SegCtx); without it each packet is its own skb.
func TestSplitGSOOneEnqueue(t *testing.T) {
	seg := func(h skb.Handle) skb.Packet {
		return skb.Packet{Handle: h, Len: 1000, TrueSize: 1800, GSOSegs: 1, Hash: 99,
			Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010007, SrcPort: 40000, DstPort: 5001, Proto: 6}}
	}
	batch := func() []skb.Packet { return []skb.Packet{seg(1), seg(2), seg(3), seg(4)} }
	tests := []struct {
		name   string
		segs   []uint16
		filter string
		hashes int // cake_hash, or tcf_classify's filter steps

		maxLen, drops uint64
		queued        int
	}{
		{"one skb of three segments and one skb", []uint16{1, 2, 3, 0}, "", 2, 3000, 0, 4},
		{"four skbs", nil, "", 4, 1000, 0, 4},
		{"two skbs of two segments", []uint16{1, 2, 1, 2}, "", 2, 2000, 0, 4},
		{"a filter drops the skbs", []uint16{1, 2, 3, 0}, "parent 1: protocol all pref 1 handle 0x1 matchall action drop", 2, 0, 2, 0},
	}
	for _, tt := range tests {
		q := newCake1(t)
		ctx := qdisctest.NewCtx(1)
		ctx.Segs = tt.segs
		if tt.filter != "" {
			s, err := cls.Load([]string{tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			ctx.Filters = s
		}
		rc := make([]qdisc.Code, 4)
		q.Enqueue(ctx, batch(), rc)
		if got := ctx.WorkDone[qdisc.WorkHash]; got != tt.hashes {
			t.Errorf("%s: %d cake_hash, want %d", tt.name, got, tt.hashes)
		}
		var maxLen uint64
		for _, b := range q.tins {
			maxLen = max(maxLen, uint64(b.maxSkblen))
		}
		if maxLen != tt.maxLen {
			t.Errorf("%s: max_len %d, want %d", tt.name, maxLen, tt.maxLen)
		}
		if got := q.Stats().Drops; got != tt.drops || len(ctx.Dropped) != 4-tt.queued {
			t.Errorf("%s: %d drops counted, %d packets freed; want %d and %d", tt.name, got, len(ctx.Dropped), tt.drops, 4-tt.queued)
		}
		if q.qlen != tt.queued {
			t.Errorf("%s: qlen %d, want %d", tt.name, q.qlen, tt.queued)
		}
		for i, c := range rc {
			if want := qdisctest.BypassIfDropped(ctx, batch()[i]); c != want {
				t.Errorf("%s: packet %d got %v, want %v", tt.name, i, c, want)
			}
		}
	}
}
