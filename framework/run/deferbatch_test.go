package run

import (
	"math"
	"testing"
)

// The llist's batches: an llist kernel's report has @defer_batch, whose
// drains together took about what the senders offered in the window
// (each skb is pushed once and drained once; the window's edges hold a
// few in flight), none of them empty (the drainer's own skb is on its
// list). A busylock kernel, and a NOLOCK qdisc on an llist kernel (it
// never reaches the defer list), have none.
func TestDeferBatch(t *testing.T) {
	tests := []struct {
		name, profile, qdisc string
		queues               int
		want                 bool
		minMean              float64 // skbs a drain at least
	}{
		{"llist", "6.19-rc1", "mq pfifo", 4, true, 1},
		{"llist, fq", "net-next", "mq fq", 4, true, 1},
		// Eight senders on one queue push while a drainer holds the
		// root lock: the lists it takes hold several skbs.
		{"llist, one queue", "6.19-rc1", "pfifo", 1, true, 2},
		{"busylock", "6.18", "mq pfifo", 4, false, 0},
		{"llist, NOLOCK pfifo_fast", "6.19-rc1", "mq pfifo_fast", 4, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := small()
			s.Profile, s.Qdisc, s.Queues = tt.profile, tt.qdisc, tt.queues
			rep := deterministicRun(t, s)
			h := rep.DeferBatch
			if !tt.want {
				if h != nil {
					t.Fatalf("defer_batch %+v, want none", *h)
				}
				return
			}
			if h == nil || h.Count == 0 {
				t.Fatal("no defer_batch")
			}
			var n uint64
			for _, b := range h.Buckets {
				n += b.Count
				if b.Lo < 1 {
					t.Errorf("bucket [%d, %d) holds %d drains: a drain takes the drainer's own skb at least", b.Lo, b.Hi, b.Count)
				}
			}
			if n != h.Count {
				t.Errorf("buckets hold %d drains, count says %d", n, h.Count)
			}
			if h.MeanNs < tt.minMean {
				t.Errorf("%.2f skbs a drain, want at least %.0f", h.MeanNs, tt.minMean)
			}
			drained := h.MeanNs * float64(h.Count)
			offered := float64(rep.Window.OfferedPackets)
			if math.Abs(drained-offered) > 0.02*offered+64 {
				t.Errorf("drains took %.0f skbs in the window, the senders offered %.0f", drained, offered)
			}
			t.Logf("%d drains, %.1f skbs each, %.0f skbs; %.0f offered", h.Count, h.MeanNs, drained, offered)
		})
	}
}
