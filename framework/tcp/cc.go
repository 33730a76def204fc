package tcp

import (
	"fmt"
	"sort"
	"strings"
)

// CAState is icsk_ca_state (enum tcp_ca_state).
type CAState uint8

// TCP_CA_* states.
const (
	CAOpen     CAState = iota // TCP_CA_Open
	CADisorder                // TCP_CA_Disorder: SACKs seen, no loss marked
	CACWR                     // TCP_CA_CWR: cwnd reduced for ECN (or local congestion)
	CARecovery                // TCP_CA_Recovery: fast recovery
	CALoss                    // TCP_CA_Loss: after an RTO
)

func (s CAState) String() string {
	return [...]string{"Open", "Disorder", "CWR", "Recovery", "Loss"}[s]
}

// CAEvent is enum tcp_ca_event.
type CAEvent uint8

// CA_EVENT_* values the model raises.
const (
	EventTxStart     CAEvent = iota // CA_EVENT_TX_START: first transmit after idle
	EventCompleteCWR                // CA_EVENT_COMPLETE_CWR
	EventLoss                       // CA_EVENT_LOSS: an RTO
	EventECNNoCE                    // CA_EVENT_ECN_NO_CE (receiver side, DCTCP)
	EventECNIsCE                    // CA_EVENT_ECN_IS_CE
)

// AckSample is struct ack_sample: what pkts_acked sees.
type AckSample struct {
	PktsAcked uint32
	RTTUs     int64 // -1 when the ACK gave no sample
	InFlight  uint32
}

// Congestion is struct tcp_congestion_ops: the hooks the model's TCP
// calls. A module that does not care about a hook leaves it empty.
type Congestion interface {
	Name() string
	// Init is .init, at connection start.
	Init(tp *Sock)
	// Ssthresh is .ssthresh: the slow-start threshold after a loss or
	// an ECN echo (it may update the module's own state, as cubic's
	// Wmax).
	Ssthresh(tp *Sock) uint32
	// CongAvoid is .cong_avoid: grow cwnd for acked segments.
	CongAvoid(tp *Sock, ack int64, acked uint32)
	// SetState is .set_state, before icsk_ca_state changes.
	SetState(tp *Sock, s CAState)
	// CwndEvent is .cwnd_event.
	CwndEvent(tp *Sock, ev CAEvent)
	// InAckEvent is .in_ack_event, once per ACK with its FLAG_* bits.
	InAckEvent(tp *Sock, flags int)
	// PktsAcked is .pkts_acked.
	PktsAcked(tp *Sock, s AckSample)
	// NeedsECN is TCP_CONG_NEEDS_ECN: the module turns ECN on for its
	// connections whatever net.ipv4.tcp_ecn says.
	NeedsECN() bool
}

// Names of the congestion controls.
const (
	CCCubic = "cubic"
	CCReno  = "reno"
	CCDCTCP = "dctcp"
)

var ccs = map[string]func() Congestion{
	CCCubic: func() Congestion { return &Cubic{} },
	CCReno:  func() Congestion { return Reno{} },
	CCDCTCP: func() Congestion { return &DCTCP{} },
}

// CCNames lists the congestion controls, sorted.
func CCNames() []string {
	out := make([]string, 0, len(ccs))
	for n := range ccs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewCC makes a congestion control by name (net.ipv4.tcp_congestion_control).
func NewCC(name string) (Congestion, error) {
	f, ok := ccs[name]
	if !ok {
		return nil, fmt.Errorf("unknown congestion control %q (known: %s)", name, strings.Join(CCNames(), ", "))
	}
	return f(), nil
}

// Flags of one ACK (tcp_input.c FLAG_*), as in_ack_event sees them.
const (
	FlagDataAcked        = 0x04 // FLAG_DATA_ACKED: this ACK acknowledged new data
	FlagDataSacked       = 0x20 // FLAG_DATA_SACKED: new SACK
	FlagECE              = 0x40 // FLAG_ECE: the ACK carried ECE
	FlagSndUnaAdvanced   = 0x400
	FlagSlowPath         = 0x100
	FlagForwardProgress  = FlagDataAcked | FlagDataSacked
	FlagRetransDataAcked = 0x08 // FLAG_RETRANS_DATA_ACKED
)

// Reno is the kernel's tcp_reno: slow start, then one segment per RTT.
type Reno struct{}

// Name implements Congestion.
func (Reno) Name() string { return CCReno }

// Init implements Congestion.
func (Reno) Init(*Sock) {}

// Ssthresh is tcp_reno_ssthresh: half of cwnd, at least 2.
func (Reno) Ssthresh(tp *Sock) uint32 { return max(tp.Cwnd>>1, 2) }

// CongAvoid is tcp_reno_cong_avoid.
func (Reno) CongAvoid(tp *Sock, _ int64, acked uint32) { renoCongAvoid(tp, acked) }

// SetState implements Congestion.
func (Reno) SetState(*Sock, CAState) {}

// CwndEvent implements Congestion.
func (Reno) CwndEvent(*Sock, CAEvent) {}

// InAckEvent implements Congestion.
func (Reno) InAckEvent(*Sock, int) {}

// PktsAcked implements Congestion.
func (Reno) PktsAcked(*Sock, AckSample) {}

// NeedsECN implements Congestion.
func (Reno) NeedsECN() bool { return false }

// renoCongAvoid is tcp_reno_cong_avoid: slow start below ssthresh, the
// rest of the acked segments in congestion avoidance at w = cwnd.
func renoCongAvoid(tp *Sock, acked uint32) {
	if !tp.IsCwndLimited() {
		return
	}
	if tp.InSlowStart() {
		if acked = tp.SlowStart(acked); acked == 0 {
			return
		}
	}
	tp.CongAvoidAI(tp.Cwnd, acked)
}

// SlowStart is tcp_slow_start: cwnd grows by the acked segments, up to
// ssthresh; it returns the acked segments left over past ssthresh.
func (tp *Sock) SlowStart(acked uint32) uint32 {
	cwnd := min(tp.Cwnd+acked, tp.Ssthresh)
	acked -= cwnd - tp.Cwnd
	tp.Cwnd = min(cwnd, tp.CwndClamp)
	return acked
}

// CongAvoidAI is tcp_cong_avoid_ai: one segment more per w segments
// acked (snd_cwnd_cnt counts them).
func (tp *Sock) CongAvoidAI(w, acked uint32) {
	if tp.CwndCnt >= w {
		tp.CwndCnt = 0
		tp.Cwnd++
	}
	tp.CwndCnt += acked
	if tp.CwndCnt >= w {
		delta := tp.CwndCnt / w
		tp.CwndCnt -= delta * w
		tp.Cwnd += delta
	}
	tp.Cwnd = min(tp.Cwnd, tp.CwndClamp)
}
