package tcp

// DCTCP's parameters (tcp_dctcp.c).
const (
	dctcpMaxAlpha = 1024 // DCTCP_MAX_ALPHA
	dctcpShiftG   = 4    // dctcp_shift_g: g = 1/16
)

// DCTCP is tcp_dctcp over Reno: alpha, the moving average of the
// fraction of CE-marked segments per RTT, sets how far cwnd falls on an
// ECN echo (cwnd * (1 - alpha/2)). Its receiver echoes every CE change
// at once (Receiver with Accurate set). PLB (path rehash) is left out:
// the model's path has one route.
type DCTCP struct {
	oldDelivered   uint32
	oldDeliveredCE uint32
	Alpha          uint32 // dctcp_alpha, of 1024
	nextSeq        int64
	lossCwnd       uint32
}

// Name implements Congestion.
func (*DCTCP) Name() string { return CCDCTCP }

// NeedsECN is TCP_CONG_NEEDS_ECN.
func (*DCTCP) NeedsECN() bool { return true }

func (ca *DCTCP) reset(tp *Sock) {
	ca.nextSeq = tp.SndNxt
	ca.oldDelivered = tp.Delivered
	ca.oldDeliveredCE = tp.DeliveredCE
}

// Init is dctcp_init (alpha starts at dctcp_alpha_on_init, the maximum).
func (ca *DCTCP) Init(tp *Sock) {
	ca.Alpha = dctcpMaxAlpha
	ca.lossCwnd = 0
	ca.reset(tp)
}

// Ssthresh is dctcp_ssthresh: cwnd - cwnd * alpha / 2048.
func (ca *DCTCP) Ssthresh(tp *Sock) uint32 {
	ca.lossCwnd = tp.Cwnd
	return max(tp.Cwnd-((tp.Cwnd*ca.Alpha)>>11), 2)
}

// InAckEvent is dctcp_update_alpha: once per window of data,
// alpha = (1 - g) * alpha + g * F, F the CE fraction of what was
// delivered.
func (ca *DCTCP) InAckEvent(tp *Sock, _ int) {
	if tp.SndUna < ca.nextSeq {
		return
	}
	delivered := tp.Delivered - ca.oldDelivered
	deliveredCE := tp.DeliveredCE - ca.oldDeliveredCE
	alpha := ca.Alpha
	// alpha -= min_not_zero(alpha, alpha >> g)
	if d := alpha >> dctcpShiftG; d != 0 {
		alpha -= min(alpha, d)
	} else {
		alpha = 0
	}
	if deliveredCE != 0 {
		deliveredCE <<= 10 - dctcpShiftG
		deliveredCE /= max(1, delivered)
		alpha = min(alpha+deliveredCE, dctcpMaxAlpha)
	}
	ca.Alpha = alpha
	ca.reset(tp)
}

// reactToLoss is dctcp_react_to_loss: a loss halves, as Reno.
func (ca *DCTCP) reactToLoss(tp *Sock) {
	ca.lossCwnd = tp.Cwnd
	tp.Ssthresh = max(tp.Cwnd>>1, 2)
}

// SetState is dctcp_state: entering Recovery reacts as Reno does.
func (ca *DCTCP) SetState(tp *Sock, s CAState) {
	if s == CARecovery && s != tp.CAState {
		ca.reactToLoss(tp)
	}
}

// CwndEvent is dctcp_cwnd_event: an RTO reacts as Reno does.
func (ca *DCTCP) CwndEvent(tp *Sock, ev CAEvent) {
	if ev == EventLoss {
		ca.reactToLoss(tp)
	}
}

// CongAvoid is tcp_reno_cong_avoid.
func (*DCTCP) CongAvoid(tp *Sock, _ int64, acked uint32) { renoCongAvoid(tp, acked) }

// PktsAcked implements Congestion.
func (*DCTCP) PktsAcked(*Sock, AckSample) {}
