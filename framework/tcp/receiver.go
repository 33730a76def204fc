package tcp

import "github.com/txlab/txlab/framework/sim"

// Receiver is the receiving half of a connection: rcv_nxt, the
// out-of-order queue as SACK ranges, the delayed-ACK decision
// (__tcp_ack_snd_check) and the ECN echo (RFC 3168's TCP_ECN_DEMAND_CWR,
// or DCTCP's exact CE reflection when Accurate).
type Receiver struct {
	// Accurate makes ECE mirror the CE mark of the latest segment,
	// with an immediate ACK on every change (dctcp_ece_ack_update);
	// otherwise ECE is set from the first CE until a CWR arrives.
	Accurate bool

	RcvNxt int64 // rcv_nxt, in segments: what was delivered in order
	wup    int64 // rcv_wup: rcv_nxt at the last ACK sent
	ooo    []Range
	blocks []Range // SACK blocks, most recently changed first

	quick     int  // quick ACKs left (icsk_ack.quick)
	ackNow    bool // ICSK_ACK_NOW
	demandCWR bool // TCP_ECN_DEMAND_CWR: ECE on every ACK
	ceState   bool // DCTCP's ce_state
	priorNxt  int64
	tsRecent  sim.Time

	// Counters.
	Segs, Dups, OutOfOrder, CEMarked uint64
}

// NewReceiver makes a receiver after the handshake: quick ACKs for the
// first TCP_MAX_QUICKACKS segments (tcp_incr_quickack from
// tcp_init_transfer: the window allows that many).
func NewReceiver(accurate bool) *Receiver {
	return &Receiver{Accurate: accurate, quick: MaxQuickAcks}
}

// OnSeg is tcp_rcv_established -> tcp_data_queue for one segment. pre,
// when set, is an ACK to send before anything else (DCTCP acking the
// delayed data with the old CE state). It reports whether to ACK now;
// if not, the caller arms the delayed-ACK timer (DelackMin) unless one
// runs.
func (r *Receiver) OnSeg(s Seg) (ackNow bool, pre *Ack) {
	r.Segs++
	ce := s.ECN == CE
	if ce {
		r.CEMarked++
	}
	if s.CWR { // tcp_ecn_accept_cwr
		r.demandCWR = false
		r.ackNow = true
	}
	switch {
	case s.Seq == r.RcvNxt:
		r.RcvNxt++
		r.tsRecent = s.Sent
		if len(r.ooo) > 0 {
			for len(r.ooo) > 0 && r.ooo[0].Start <= r.RcvNxt {
				r.RcvNxt = max(r.RcvNxt, r.ooo[0].End)
				r.ooo = r.ooo[1:]
			}
			if len(r.ooo) == 0 {
				r.ackNow = true // a filled gap is acked at once (RFC 5681 4.2)
			}
			r.trimBlocks()
		}
	case s.Seq < r.RcvNxt || r.has(s.Seq):
		r.Dups++ // a retransmission of what arrived: acked at once
		r.quick = MaxQuickAcks
		r.ackNow = true
	case s.Seq >= r.RcvNxt+RcvWndSegs:
		return false, pre // beyond the window: dropped (the model's sender never does this)
	default:
		r.OutOfOrder++
		r.insert(s.Seq)
		r.ackNow = true
	}
	// tcp_ecn_check_ce, after the data is queued (tcp_event_data_recv).
	if r.Accurate {
		if s.ECN != NotECT && ce != r.ceState {
			if r.priorNxt > r.wup { // a delayed ACK was pending
				a := r.makeAck(r.priorNxt, r.ceState)
				pre = &a
				r.wup = r.priorNxt
			}
			r.ackNow = true
		}
		if s.ECN != NotECT {
			r.priorNxt = r.RcvNxt
			r.ceState = ce
			r.demandCWR = ce
		}
	} else if ce && !r.demandCWR {
		r.demandCWR = true
		r.quick = max(r.quick, 2) // tcp_enter_quickack_mode(sk, 2)
	}
	// __tcp_ack_snd_check: more than one full frame since the last ACK,
	// quick ACK mode, ACK_NOW, or out-of-order data (SACK compression,
	// tcp_comp_sack_delay_ns, is not modelled).
	return r.RcvNxt-r.wup >= 2 || r.quick > 0 || r.ackNow || len(r.ooo) > 0, pre
}

func (r *Receiver) has(seq int64) bool {
	for _, o := range r.ooo {
		if seq >= o.Start && seq < o.End {
			return true
		}
	}
	return false
}

// insert adds seq to the out-of-order ranges (kept sorted and merged)
// and makes the range holding it the first SACK block
// (tcp_sack_new_ofo_skb).
func (r *Receiver) insert(seq int64) {
	i := 0
	for i < len(r.ooo) && r.ooo[i].End < seq {
		i++
	}
	switch {
	case i < len(r.ooo) && r.ooo[i].End == seq:
		r.ooo[i].End++
		if i+1 < len(r.ooo) && r.ooo[i+1].Start == r.ooo[i].End {
			r.ooo[i].End = r.ooo[i+1].End
			r.ooo = append(r.ooo[:i+1], r.ooo[i+2:]...)
		}
	case i < len(r.ooo) && r.ooo[i].Start == seq+1:
		r.ooo[i].Start = seq
	default:
		r.ooo = append(r.ooo, Range{})
		copy(r.ooo[i+1:], r.ooo[i:])
		r.ooo[i] = Range{seq, seq + 1}
	}
	cur := r.ooo[i]
	var tmp [MaxSACKBlocks]Range
	out := append(tmp[:0], cur)
	for _, b := range r.blocks {
		if len(out) == MaxSACKBlocks {
			break
		}
		if b.End < cur.Start || b.Start > cur.End {
			out = append(out, b)
		}
	}
	r.blocks = append(r.blocks[:0], out...)
	r.trimBlocks()
}

// trimBlocks drops SACK blocks rcv_nxt has passed and refreshes the
// others from the queue they describe.
func (r *Receiver) trimBlocks() {
	out := r.blocks[:0]
	for _, b := range r.blocks {
		if b.End <= r.RcvNxt {
			continue
		}
		for _, o := range r.ooo {
			if b.Start < o.End && b.End > o.Start {
				b = o
				break
			}
		}
		out = append(out, b)
	}
	r.blocks = out
}

func (r *Receiver) makeAck(seq int64, ece bool) Ack {
	a := Ack{Seq: seq, ECE: ece, TSecr: r.tsRecent}
	if len(r.blocks) > 0 {
		a.NSACK = uint8(copy(a.SACK[:], r.blocks))
	}
	return a
}

// Ack builds the ACK to send now (tcp_send_ack): rcv_nxt, the SACK
// blocks, ECE while demanded; the delayed-ACK state is cleared.
func (r *Receiver) Ack() Ack {
	a := r.makeAck(r.RcvNxt, r.demandCWR)
	r.wup = r.RcvNxt
	r.ackNow = false
	if r.quick > 0 {
		r.quick--
	}
	return a
}

// Pending reports whether received data waits for an ACK (a delayed
// ACK is due when the timer fires).
func (r *Receiver) Pending() bool { return r.RcvNxt > r.wup || r.ackNow }
