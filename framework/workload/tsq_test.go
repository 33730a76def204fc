package workload

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
)

// sender sends skbs of the segments the test asks for, TSQ aside.
type sender struct{}

func (sender) SmallQueueCheck(*tcp.Sock, int, uint) bool { return false }
func (sender) Transmit(*tcp.Sock, int64, int, sim.Time, bool, bool) bool {
	return true
}

// tcp_small_queue_check over its limit lets an skb go while the rtx
// queue is empty or holds one skb (tcp_rtx_queue_empty_or_single_skb,
// f921a4a5bffa): a partly acked skb stays one, a partly SACKed one is
// split (tcp_sacktag_walk).
func TestSmallQueueCheckSingleSkb(t *testing.T) {
	cases := []struct {
		name  string
		skbs  int     // skbs of 5 segments sent (cwnd 10: tcp_cwnd_test's half)
		ack   int64   // the cumulative ACK then
		sack  []int64 // a SACK block [sack[0], sack[1])
		under bool    // sk_wmem_alloc's refcount within the limit
		want  bool    // throttled
	}{
		{"rtx queue empty", 0, 0, nil, false, false},
		{"one skb", 1, 0, nil, false, false},
		{"one skb, partly acked", 1, 3, nil, false, false},
		{"two skbs", 2, 0, nil, false, true},
		{"two skbs, first acked", 2, 5, nil, false, false},
		{"two skbs, first partly acked", 2, 4, nil, false, true},
		{"one skb, partly SACKed", 1, 1, []int64{3, 5}, false, true},
		{"two skbs, under the limit", 2, 0, nil, true, false},
		{"two skbs, at the limit (the refcount's bias of 1 over it)", 2, 0, nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := tcp.NewSock(tcp.Reno{}, false, 0)
			tp.WriteSeq = int64(5 * tc.skbs)
			tp.WriteXmit(sender{})
			if tp.SndNxt != tp.WriteSeq {
				t.Fatalf("sent %d segments, want %d", tp.SndNxt, tp.WriteSeq)
			}
			if tc.ack > 0 || tc.sack != nil {
				a := tcp.Ack{Seq: tc.ack}
				if tc.sack != nil {
					a.SACK[0], a.NSACK = tcp.Range{Start: tc.sack[0], End: tc.sack[1]}, 1
				}
				tp.OnAck(a)
			}
			limit := int64(tp.SmallQueueLimit(tcp.Truesize(5), 0))
			// sk_wmem_alloc starts at 1: truesize held limit - 1 is
			// a refcount of limit, within it; limit is over it.
			hs := &hostSock{wmemAlloc: limit}
			if tc.under {
				hs.wmemAlloc = limit - 1
			}
			if got := hs.SmallQueueCheck(tp, 5, 0); got != tc.want {
				t.Errorf("snd_una %d snd_nxt %d sacked %d: throttled %v, want %v", tp.SndUna, tp.SndNxt, tp.SackedOut, got, tc.want)
			}
		})
	}
}
