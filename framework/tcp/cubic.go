package tcp

import "math/bits"

// CUBIC's parameters (tcp_cubic.c module defaults).
const (
	cubicBetaScale   = 1024 // BICTCP_BETA_SCALE
	cubicBeta        = 717  // beta: 717/1024 ~ 0.7
	cubicHZ          = 10   // BICTCP_HZ: time in units of 2^-10 s
	cubicBicScale    = 41   // bic_scale: C = 41/1024 * 10 = 0.4
	hystartLowWindow = 16   // hystart_low_window
	hystartAckDelta  = 2000 // hystart_ack_delta_us
	hystartMinSample = 8    // HYSTART_MIN_SAMPLES
	hystartDelayMin  = 4000 // HYSTART_DELAY_MIN, us
	hystartDelayMax  = 16000
	hz               = 1000 // CONFIG_HZ
)

// The scale factors cubictcp_register precomputes.
const (
	// cubeRTTScale is bic_scale * 10: 1024 * C / rtt with rtt 100 ms.
	cubeRTTScale = cubicBicScale * 10
	// betaScale is 8 * (1024 + beta) / 3 / (1024 - beta): the Reno
	// emulation's increment (tcp_friendliness), 15.
	betaScale = 8 * (cubicBetaScale + cubicBeta) / 3 / (cubicBetaScale - cubicBeta)
	// cubeFactor is 2^(10 + 3 * BICTCP_HZ) / (bic_scale * 10): K^3 per
	// segment of Wmax - cwnd, in (2^-10 s)^3.
	cubeFactor = uint64(1) << (10 + 3*cubicHZ) / (cubicBicScale * 10)
)

// Cubic is tcp_cubic (v2.3) with HyStart (ACK train and delay).
type Cubic struct {
	cnt            uint32 // increase cwnd by 1 after cnt ACKs
	LastMaxCwnd    uint32 // last_max_cwnd: Wmax
	lastCwnd       uint32
	lastTime       uint32
	BicOriginPoint uint32
	BicK           uint32 // time to the origin point, in 2^-10 s
	DelayMin       uint32 // us
	EpochStart     uint32 // jiffies; 0: no epoch
	ackCnt         uint32
	tcpCwnd        uint32 // the Reno-friendly cwnd estimate
	sampleCnt      uint8
	Found          bool // HyStart found the exit point
	roundStart     uint32
	endSeq         int64
	lastAck        uint32
	currRTT        uint32
}

// Name implements Congestion.
func (*Cubic) Name() string { return CCCubic }

// reset is bictcp_reset.
func (ca *Cubic) reset() { *ca = Cubic{} }

// hystartReset is bictcp_hystart_reset.
func (ca *Cubic) hystartReset(tp *Sock) {
	ca.roundStart = tp.ClockUs()
	ca.lastAck = ca.roundStart
	ca.endSeq = tp.SndNxt
	ca.currRTT = ^uint32(0)
	ca.sampleCnt = 0
}

// Init is cubictcp_init (initial_ssthresh 0: ssthresh stays infinite).
func (ca *Cubic) Init(tp *Sock) {
	ca.reset()
	ca.hystartReset(tp)
}

// CwndEvent is cubictcp_cwnd_event: after an idle period the epoch
// moves forward so cwnd keeps to the cubic curve.
func (ca *Cubic) CwndEvent(tp *Sock, ev CAEvent) {
	if ev != EventTxStart {
		return
	}
	now := tp.Jiffies()
	delta := int32(now - tp.LsndTime)
	if ca.EpochStart != 0 && delta > 0 {
		ca.EpochStart += uint32(delta)
		if int32(ca.EpochStart-now) > 0 {
			ca.EpochStart = now
		}
	}
}

// cubicRootTable is cubic_root's v[]: cbrt(x << 18) - 1 for x in
// 0..63, as tcp_cubic.c tabulates it (refined by hand there).
var cubicRootTable = [64]uint8{
	0, 54, 54, 54, 118, 118, 118, 118,
	123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179,
	181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215,
	217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242,
	244, 245, 246, 248, 250, 251, 252, 254,
}

// CubicRoot is cubic_root: a table lookup on the top bits, then one
// Newton-Raphson step (average error ~0.2%).
func CubicRoot(a uint64) uint32 {
	b := uint32(bits.Len64(a))
	if b < 7 {
		return (uint32(cubicRootTable[a]) + 35) >> 6
	}
	b = ((b * 84) >> 8) - 1
	shift := a >> (b * 3)
	x := ((uint32(cubicRootTable[shift]) + 10) << b) >> 6
	x = 2*x + uint32(a/(uint64(x)*uint64(x-1)))
	return (x * 341) >> 10
}

// usecsToJiffies is usecs_to_jiffies at HZ=1000: rounded up.
func usecsToJiffies(us uint32) uint32 { return (us + 999) / 1000 }

// update is bictcp_update: the cnt that gives cwnd the cubic curve's
// slope now, bounded by the Reno-friendly estimate.
func (ca *Cubic) update(tp *Sock, cwnd, acked uint32) {
	ca.ackCnt += acked
	now := tp.Jiffies()
	// An unchanged cwnd recomputes cnt at most 32 times a second, whatever
	// the RTT (the per-RTT variant posted in 2024 was not merged).
	if ca.lastCwnd == cwnd && int32(now-ca.lastTime) <= hz/32 {
		return
	}
	if ca.EpochStart == 0 || now != ca.lastTime {
		ca.lastCwnd = cwnd
		ca.lastTime = now
		if ca.EpochStart == 0 {
			ca.EpochStart = now
			ca.ackCnt = acked
			ca.tcpCwnd = cwnd
			if ca.LastMaxCwnd <= cwnd {
				ca.BicK = 0
				ca.BicOriginPoint = cwnd
			} else {
				ca.BicK = CubicRoot(cubeFactor * uint64(ca.LastMaxCwnd-cwnd))
				ca.BicOriginPoint = ca.LastMaxCwnd
			}
		}
		// t is the time since the epoch plus delay_min, in 2^-10 s.
		t := uint64(int64(int32(now-ca.EpochStart)) + int64(usecsToJiffies(ca.DelayMin)))
		t = (t << cubicHZ) / hz
		var offs uint64
		if t < uint64(ca.BicK) {
			offs = uint64(ca.BicK) - t
		} else {
			offs = t - uint64(ca.BicK)
		}
		delta := uint32((cubeRTTScale * offs * offs * offs) >> (10 + 3*cubicHZ))
		var target uint32
		if t < uint64(ca.BicK) {
			target = ca.BicOriginPoint - delta
		} else {
			target = ca.BicOriginPoint + delta
		}
		if target > cwnd {
			ca.cnt = cwnd / (target - cwnd)
		} else {
			ca.cnt = 100 * cwnd // very small increment
		}
		// The initial growth may be too conservative while the
		// bandwidth is unknown: at least 5% per RTT.
		if ca.LastMaxCwnd == 0 && ca.cnt > 20 {
			ca.cnt = 20
		}
	}
	// tcp_friendliness: grow at least as fast as Reno would.
	delta := (cwnd * betaScale) >> 3
	for ca.ackCnt > delta {
		ca.ackCnt -= delta
		ca.tcpCwnd++
	}
	if ca.tcpCwnd > cwnd {
		maxCnt := cwnd / (ca.tcpCwnd - cwnd)
		ca.cnt = min(ca.cnt, maxCnt)
	}
	// At most 1 segment per 2 acked: 1.5x per RTT.
	ca.cnt = max(ca.cnt, 2)
}

// Cnt is the current cnt (segments acked per cwnd increment).
func (ca *Cubic) Cnt() uint32 { return ca.cnt }

// CongAvoid is cubictcp_cong_avoid.
func (ca *Cubic) CongAvoid(tp *Sock, _ int64, acked uint32) {
	if !tp.IsCwndLimited() {
		return
	}
	if tp.InSlowStart() {
		if acked = tp.SlowStart(acked); acked == 0 {
			return
		}
	}
	ca.update(tp, tp.Cwnd, acked)
	tp.CongAvoidAI(ca.cnt, acked)
}

// Ssthresh is cubictcp_recalc_ssthresh: the epoch ends, Wmax is
// remembered (lowered further with fast convergence when the flow is
// losing ground), and cwnd drops to beta.
func (ca *Cubic) Ssthresh(tp *Sock) uint32 {
	ca.EpochStart = 0
	if tp.Cwnd < ca.LastMaxCwnd {
		ca.LastMaxCwnd = tp.Cwnd * (cubicBetaScale + cubicBeta) / (2 * cubicBetaScale)
	} else {
		ca.LastMaxCwnd = tp.Cwnd
	}
	return max(tp.Cwnd*cubicBeta/cubicBetaScale, 2)
}

// SetState is cubictcp_state: an RTO starts over.
func (ca *Cubic) SetState(tp *Sock, s CAState) {
	if s == CALoss {
		ca.reset()
		ca.hystartReset(tp)
	}
}

// InAckEvent implements Congestion.
func (*Cubic) InAckEvent(*Sock, int) {}

// NeedsECN implements Congestion.
func (*Cubic) NeedsECN() bool { return false }

// hystartAckDelay is hystart_ack_delay: room for TSO/GRO aggregation,
// at most 1 ms.
func hystartAckDelay(tp *Sock) uint32 {
	rate := tp.PacingRate
	if rate == 0 {
		return 0
	}
	return uint32(min(1000, uint64(GSOMaxSize)*4*1000000/rate))
}

// hystartUpdate is hystart_update: a new round once snd_una passes
// end_seq; from hystart_low_window on, leave slow start (ssthresh =
// cwnd) when the ACKs of a round stretch past delay_min/2 (ACK train) or
// the round's minimum RTT grows by an eighth of delay_min, 4 to 16 ms
// (delay).
func (ca *Cubic) hystartUpdate(tp *Sock, delay uint32) {
	if tp.SndUna > ca.endSeq {
		ca.hystartReset(tp)
	}
	// Rounds restart below the low window too, so that curr_rtt never
	// holds samples from an old round when cwnd reaches it.
	if tp.Cwnd < hystartLowWindow {
		return
	}
	now := tp.ClockUs()
	if int32(now-ca.lastAck) <= hystartAckDelta {
		ca.lastAck = now
		threshold := ca.DelayMin + hystartAckDelay(tp)
		if !tp.PacingFQ {
			threshold >>= 1
		}
		if int32(now-ca.roundStart) > int32(threshold) {
			ca.Found = true
			tp.Ssthresh = tp.Cwnd
		}
	}
	ca.currRTT = min(ca.currRTT, delay)
	if ca.sampleCnt < hystartMinSample {
		ca.sampleCnt++
	} else if ca.currRTT > ca.DelayMin+min(max(ca.DelayMin>>3, hystartDelayMin), hystartDelayMax) {
		ca.Found = true
		tp.Ssthresh = tp.Cwnd
	}
}

// PktsAcked is cubictcp_acked: delay_min, then HyStart in slow start.
func (ca *Cubic) PktsAcked(tp *Sock, s AckSample) {
	if s.RTTUs < 0 {
		return
	}
	// Discard delay samples right after fast recovery.
	if ca.EpochStart != 0 && int32(tp.Jiffies()-ca.EpochStart) < hz {
		return
	}
	delay := uint32(max(s.RTTUs, 1))
	if ca.DelayMin == 0 || ca.DelayMin > delay {
		ca.DelayMin = delay
	}
	if !ca.Found && tp.InSlowStart() {
		ca.hystartUpdate(tp, delay)
	}
}
