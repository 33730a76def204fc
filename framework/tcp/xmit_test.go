package tcp

import (
	"slices"
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// scriptOut transmits, failing (a qdisc's NET_XMIT_DROP) the skbs whose
// index is in drop.
type scriptOut struct {
	drop map[int]bool
	n    int
}

func (*scriptOut) SmallQueueCheck(*Sock, int, uint) bool { return false }

func (o *scriptOut) Transmit(*Sock, int64, int, sim.Time, bool, bool) bool {
	o.n++
	return !o.drop[o.n-1]
}

func TestPacingStartsAtTenSegments(t *testing.T) {
	// __tcp_transmit_skb adds the skb to data_segs_out before
	// tcp_update_skb_after_send tests data_segs_out >= 10, and before
	// queue_xmit, so a dropped skb counts too. At 1,448,000 B/s a
	// segment is 1 ms; the clock stays at 0, so no credit.
	for _, c := range []struct {
		name string
		segs []int
		drop map[int]bool
		want []sim.Time // tcp_wstamp_ns after each skb
	}{
		{"one skb of 10 is paced", []int{10}, nil, []sim.Time{10 * sim.Millisecond}},
		{"the skb reaching 10", []int{9, 1, 2}, nil, []sim.Time{0, sim.Millisecond, 3 * sim.Millisecond}},
		{"4+4+4", []int{4, 4, 4}, nil, []sim.Time{0, 0, 4 * sim.Millisecond}},
		{"a dropped skb counts", []int{6, 4}, map[int]bool{0: true}, []sim.Time{0, 4 * sim.Millisecond}},
	} {
		tp := NewSock(Reno{}, false, 0)
		tp.PacingFQ, tp.PacingRate = true, 1448000
		out := &scriptOut{drop: c.drop}
		var got []sim.Time
		seq := int64(0)
		for _, n := range c.segs {
			tp.transmit(out, seq, n, false)
			seq += int64(n)
			got = append(got, tp.WstampNs)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: tcp_wstamp_ns %v, want %v", c.name, got, c.want)
		}
	}
}

// txStarts is cubic counting CA_EVENT_TX_START.
type txStarts struct {
	*Cubic
	n int
}

func (c *txStarts) CwndEvent(tp *Sock, ev CAEvent) {
	if ev == EventTxStart {
		c.n++
	}
	c.Cubic.CwndEvent(tp, ev)
}

func TestEventDataSentOnEveryTransmit(t *testing.T) {
	// tcp_event_data_sent runs from __tcp_transmit_skb for every data
	// skb, retransmissions too: CA_EVENT_TX_START when
	// tcp_packets_in_flight is 0, and lsndtime. Ten segments leave at
	// 1 ms (a TX_START: nothing in flight); jiffies are ms + 1.
	for _, c := range []struct {
		name      string
		then      func(tp *Sock, ca *Cubic)
		wantStart int
		wantLsnd  uint32
		wantEpoch uint32 // cubic's epoch_start, if set
	}{
		{"new data after idle", func(tp *Sock, _ *Cubic) {
			tp.SetNow(11 * sim.Millisecond)
			tp.OnAck(Ack{Seq: 10})
			tp.SetNow(100 * sim.Millisecond)
			tp.WriteSeq = 20
			tp.WriteXmit(nopOut{})
		}, 2, 101, 0},
		{"a retransmission", func(tp *Sock, _ *Cubic) {
			tp.markLost(0)
			tp.SetNow(50 * sim.Millisecond)
			tp.XmitRetransmitQueue(nopOut{})
		}, 1, 51, 0},
		{"the RTO's retransmission, nothing in flight", func(tp *Sock, _ *Cubic) {
			tp.OnRTO(tp.RTOAt())
			tp.XmitRetransmitQueue(nopOut{})
		}, 2, 1002, 0},
		// cubictcp_cwnd_event moves epoch_start by the idle time since
		// lsndtime, the retransmission at 50 ms: 30 + (301 - 51).
		{"cubic's idle counted from a retransmission", func(tp *Sock, ca *Cubic) {
			tp.markLost(0)
			tp.SetNow(50 * sim.Millisecond)
			tp.XmitRetransmitQueue(nopOut{})
			tp.SetNow(60 * sim.Millisecond)
			tp.OnAck(Ack{Seq: 10})
			ca.EpochStart = 30
			tp.SetNow(300 * sim.Millisecond)
			tp.WriteSeq = 20
			tp.WriteXmit(nopOut{})
		}, 2, 301, 280},
	} {
		ca := &txStarts{Cubic: &Cubic{}}
		tp := NewSock(ca, false, sim.Millisecond)
		tp.WriteSeq = 10
		tp.WriteXmit(nopOut{})
		c.then(tp, ca.Cubic)
		if ca.n != c.wantStart || tp.LsndTime != c.wantLsnd {
			t.Errorf("%s: %d TX_START, lsndtime %d; want %d, %d", c.name, ca.n, tp.LsndTime, c.wantStart, c.wantLsnd)
		}
		if c.wantEpoch != 0 && ca.EpochStart != c.wantEpoch {
			t.Errorf("%s: epoch_start %d, want %d", c.name, ca.EpochStart, c.wantEpoch)
		}
	}
}

// The rtx queue's skbs, whose heads sk_wmem_queued counts: one per skb
// tcp_write_xmit sent; a retransmission shorter than its skb splits it
// (tcp_fragment in __tcp_retransmit_skb); a partial ACK trims the
// oldest (tcp_trim_head) and a full one frees what it covers.
func TestRtxSkbs(t *testing.T) {
	tp := NewSock(Reno{}, false, 0)
	tp.WriteSeq = 10
	tp.WriteXmit(&scriptOut{}) // cwnd 10: two skbs of 5
	if n := tp.RtxSkbs(); n != 2 {
		t.Fatalf("sent 10 segments in skbs of 5: %d skbs, want 2", n)
	}
	tp.OnAck(Ack{Seq: 2})
	if n := tp.RtxSkbs(); n != 2 {
		t.Errorf("2 of the first 5 acked: %d skbs, want 2 (the first trimmed)", n)
	}
	tp.SetNow(tp.RTOAt())
	if !tp.OnRTO(tp.Now()) || tp.Cwnd != 1 {
		t.Fatalf("RTO: cwnd %d, want 1", tp.Cwnd)
	}
	if sent := tp.XmitRetransmitQueue(&scriptOut{}); sent != 1 {
		t.Fatalf("retransmitted %d, want 1 (cwnd 1)", sent)
	}
	if n := tp.RtxSkbs(); n != 3 {
		t.Errorf("one segment of [2, 5) retransmitted: %d skbs, want 3 (tcp_fragment split it)", n)
	}
	tp.OnAck(Ack{Seq: 5})
	if n := tp.RtxSkbs(); n != 1 {
		t.Errorf("the first skb and its split acked: %d skbs, want 1", n)
	}
	tp.OnAck(Ack{Seq: 10})
	if n := tp.RtxSkbs(); n != 0 || !tp.RtxQueueEmptyOrSingleSkb() {
		t.Errorf("all acked: %d skbs, want 0", n)
	}
}

// hostQueueOut records the skbs transmitted and says which rtx-queue
// skbs (by their first segment) have a clone in the host.
type hostQueueOut struct {
	busy  map[int64]bool
	sent  []Range
	asked []int64
}

func (*hostQueueOut) SmallQueueCheck(*Sock, int, uint) bool { return false }

func (o *hostQueueOut) Transmit(_ *Sock, seq int64, segs int, _ sim.Time, _, _ bool) bool {
	o.sent = append(o.sent, Range{seq, seq + int64(segs)})
	return true
}

func (o *hostQueueOut) StillInHostQueue(_ *Sock, seq int64) bool {
	o.asked = append(o.asked, seq)
	return o.busy[seq]
}

// tcp_xmit_retransmit_queue walks the rtx queue an skb at a time:
// __tcp_retransmit_skb sends at most that skb (tcp_fragment cuts it to
// cwnd and tcp_tso_segs; tcp_retrans_try_collapse merges only skbs
// shorter than one MSS), and refuses, -EBUSY, one whose fclone clone
// is still in a qdisc or the driver (skb_still_in_host_queue), which
// ends the walk.
func TestRetransmitSkbStillInHostQueue(t *testing.T) {
	for _, c := range []struct {
		name  string
		busy  []int64
		sent  []Range
		asked []int64
	}{
		{"none in the host: skb by skb", nil, []Range{{0, 5}, {5, 10}}, []int64{0, 5}},
		{"the first in the host: nothing sent", []int64{0}, nil, []int64{0}},
		{"the second in the host: the first sent", []int64{5}, []Range{{0, 5}}, []int64{0, 5}},
	} {
		tp := NewSock(Reno{}, false, 0)
		tp.WriteSeq = 10
		tp.WriteXmit(&scriptOut{}) // cwnd 10: two skbs of 5
		tp.SetNow(tp.RTOAt())
		if !tp.OnRTO(tp.Now()) || tp.LostOut != 10 {
			t.Fatalf("%s: RTO marked %d lost, want 10", c.name, tp.LostOut)
		}
		tp.Cwnd = 10 // room for all of it
		out := &hostQueueOut{busy: map[int64]bool{}}
		for _, s := range c.busy {
			out.busy[s] = true
		}
		n := tp.XmitRetransmitQueue(out)
		want := 0
		for _, r := range c.sent {
			want += int(r.Len())
		}
		if n != want || !slices.Equal(out.sent, c.sent) || !slices.Equal(out.asked, c.asked) {
			t.Errorf("%s: retransmitted %d as %v, asked about %v; want %d as %v, asked about %v",
				c.name, n, out.sent, out.asked, want, c.sent, c.asked)
		}
		if tp.RetransOut != uint32(want) {
			t.Errorf("%s: retrans_out %d, want %d", c.name, tp.RetransOut, want)
		}
	}
}

// tcp_sacktag_walk (tcp_input.c) makes the rtx queue's skbs follow the
// SACK blocks: an skb a block covers in part is split at the block's
// edge (tcp_match_skb_to_sack's tcp_fragment, a new skb), unless the
// skb before it is all SACKed, when the covered part moves into that
// one (tcp_shift_skb_data; an skb emptied is freed, tcp_shifted_skb,
// and then the next skb, if all SACKed, joins too: the hole filled).
// sk_wmem_queued counts each skb's head, so the count matters.
func TestSackSplitsAndShifts(t *testing.T) {
	tp := NewSock(Reno{}, false, 0)
	tp.Cwnd = 40
	tp.WriteSeq = 40
	tp.WriteXmit(&scriptOut{}) // skbs of 20: tcp_cwnd_test's half of cwnd
	starts := func() []int64 { return slices.Clone(tp.rtxSkbs[tp.rtxSkbsOff:]) }
	if got := starts(); !slices.Equal(got, []int64{0, 20}) {
		t.Fatalf("sent 40 in %v, want skbs from 0 and 20", got)
	}
	sack := func(una int64, blocks ...int64) Ack {
		a := Ack{Seq: una}
		for i := 0; i+1 < len(blocks); i += 2 {
			a.SACK[a.NSACK] = Range{blocks[i], blocks[i+1]}
			a.NSACK++
		}
		return a
	}
	for _, st := range []struct {
		name   string
		ack    Ack
		starts []int64
		sacked uint32
	}{
		{"a block inside an skb: split at both edges", sack(0, 3, 6), []int64{0, 3, 6, 20}, 3},
		{"the block grows: the next skb's front shifts into the SACKed one", sack(0, 3, 9), []int64{0, 3, 9, 20}, 6},
		{"grows again", sack(0, 3, 11), []int64{0, 3, 11, 20}, 8},
		{"a second block: split", sack(0, 13, 15, 3, 11), []int64{0, 3, 11, 13, 15, 20}, 10},
		{"the hole between filled: merged, and the next SACKed skb too", sack(0, 3, 15), []int64{0, 3, 15, 20}, 12},
		{"a whole skb and the front of the next", sack(0, 3, 25), []int64{0, 3, 25}, 22},
		{"the cumulative ACK frees them", sack(25), []int64{25}, 0},
	} {
		tp.OnAck(st.ack)
		if got := starts(); !slices.Equal(got, st.starts) || tp.SackedOut != st.sacked || tp.RtxSkbs() != len(st.starts) {
			t.Errorf("%s: skbs from %v (%d), sacked_out %d; want %v, %d", st.name, got, tp.RtxSkbs(), tp.SackedOut, st.starts, st.sacked)
		}
	}
}

// tcp_push_one, from tcp_sendmsg_locked when a write fills the skb at
// the send head, is tcp_write_xmit with push_one: it stops after one
// skb (of up to tcp_tso_segs and tcp_cwnd_test's quota), where
// tcp_push's tcp_write_xmit sends what cwnd allows.
func TestPushOneSendsOneSkb(t *testing.T) {
	for _, c := range []struct {
		name string
		one  bool
		sent []int
	}{
		{"tcp_push_one", true, []int{5}},
		{"tcp_push", false, []int{5, 5}},
	} {
		tp := NewSock(Reno{}, false, 0)
		tp.WriteSeq = 20
		out := &hostQueueOut{}
		var n int
		if c.one {
			n = tp.PushOne(out)
		} else {
			n = tp.WriteXmit(out)
		}
		var got []int
		for _, r := range out.sent {
			got = append(got, int(r.Len()))
		}
		if !slices.Equal(got, c.sent) || n != int(tp.SndNxt) {
			t.Errorf("%s: sent skbs of %v (%d in all, snd_nxt %d), want %v", c.name, got, n, tp.SndNxt, c.sent)
		}
	}
}

// tsqOut throttles every skb (tcp_small_queue_check).
type tsqOut struct{ scriptOut }

func (*tsqOut) SmallQueueCheck(*Sock, int, uint) bool { return true }

// tcp_write_xmit calls tcp_cwnd_validate only when it sent something
// or cwnd was the limit: a push TSQ stops before the first skb leaves
// what the window recorded (is_cwnd_limited, max_packets_out) as it
// was.
func TestCwndValidateOnlyWhenSentOrLimited(t *testing.T) {
	tp := NewSock(Reno{}, false, 0)
	tp.WriteSeq = 10
	tp.WriteXmit(&scriptOut{}) // cwnd 10 filled
	if !tp.IsCwndLimited() {
		t.Fatalf("cwnd filled: not cwnd-limited")
	}
	tp.OnAck(Ack{Seq: 10}) // cwnd 20; snd_una reaches cwnd_usage_seq
	tp.WriteSeq = 30
	if n := tp.WriteXmit(&tsqOut{}); n != 0 {
		t.Fatalf("TSQ throttled, yet %d sent", n)
	}
	if !tp.IsCwndLimited() {
		t.Errorf("a push that sent nothing, cwnd not the limit, cleared is_cwnd_limited (max_packets_out %d)", tp.maxPacketsOut)
	}
}
