package tcp

import (
	"math"
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// newTestSock is a sender at time now with cwnd and ssthresh set and
// cwnd marked the limit (as after a window that filled it).
func newTestSock(cc Congestion, cwnd, ssthresh uint32, now sim.Time) *Sock {
	tp := NewSock(cc, false, now)
	tp.Cwnd, tp.Ssthresh = cwnd, ssthresh
	tp.isCwndLimited = true
	return tp
}

// The laws below are checked against values worked out by hand from
// the kernel's formulas (each case says how).
func TestRenoLaws(t *testing.T) {
	cases := []struct {
		name                   string
		cwnd, ssthresh, cnt    uint32
		acked                  uint32
		wantCwnd, wantCnt      uint32
		wantSsthresh, wantLeft uint32
	}{
		// slow start: cwnd + acked below ssthresh
		{"slow start", 10, InfiniteSsthresh, 0, 3, 13, 0, 5, 0},
		// slow start stops at ssthresh 12; the 3 left over count in CA
		// at w = 12: cnt 3, no increment
		{"cross ssthresh", 10, 12, 0, 5, 12, 3, 5, 3},
		// CA: cnt 19 + 1 reaches w = 20: one more segment, cnt 0
		{"ca increment", 20, 10, 19, 1, 21, 0, 10, 0},
		// CA: 45 acked at w = 20 with cnt 0: +2, 5 left
		{"ca stretch ack", 20, 10, 0, 45, 22, 5, 10, 0},
		// ssthresh never below 2
		{"tiny window", 3, 2, 0, 1, 3, 1, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := newTestSock(Reno{}, c.cwnd, c.ssthresh, 0)
			tp.CwndCnt = c.cnt
			if c.name == "cross ssthresh" {
				if left := tp.SlowStart(c.acked); left != c.wantLeft {
					t.Fatalf("tcp_slow_start left %d, want %d", left, c.wantLeft)
				}
				tp.Cwnd = c.cwnd
			}
			want := tp.Cwnd
			ss := Reno{}.Ssthresh(&Sock{Cwnd: want})
			tp.CC.CongAvoid(tp, 0, c.acked)
			if tp.Cwnd != c.wantCwnd || tp.CwndCnt != c.wantCnt {
				t.Errorf("cwnd %d cnt %d, want %d %d", tp.Cwnd, tp.CwndCnt, c.wantCwnd, c.wantCnt)
			}
			if ss != c.wantSsthresh {
				t.Errorf("ssthresh(%d) = %d, want %d", want, ss, c.wantSsthresh)
			}
		})
	}
	// Not cwnd-limited (application- or TSQ-limited): no growth.
	tp := newTestSock(Reno{}, 20, 10, 0)
	tp.isCwndLimited = false
	tp.CC.CongAvoid(tp, 0, 40)
	if tp.Cwnd != 20 {
		t.Errorf("cwnd grew to %d while not cwnd-limited", tp.Cwnd)
	}
}

func TestCubicRoot(t *testing.T) {
	// cubic_root's table + one Newton step against the exact root.
	for _, c := range []struct {
		a    uint64
		want uint32
	}{
		{27, 3}, {64, 4}, {1000, 10},
		{cubeFactor, 1388},      // cbrt = 1389.33: 2^10 * cbrt(1/0.4) s
		{cubeFactor * 30, 4316}, // cbrt = 4316.97: K for Wmax - cwnd = 30
	} {
		if got := CubicRoot(c.a); got != c.want {
			t.Errorf("cubic_root(%d) = %d, want %d", c.a, got, c.want)
		}
		exact := math.Cbrt(float64(c.a))
		if math.Abs(float64(CubicRoot(c.a))-exact)/exact > 0.01 {
			t.Errorf("cubic_root(%d) = %d, far from %.1f", c.a, CubicRoot(c.a), exact)
		}
	}
	if cubeFactor != 2681735677 {
		t.Errorf("cube_factor = %d, want 2^40/410 = 2681735677", uint64(cubeFactor))
	}
	if betaScale != 15 {
		t.Errorf("beta_scale = %d, want 8*1741/3/307 = 15", betaScale)
	}
}

func TestCubicLaws(t *testing.T) {
	t.Run("ssthresh and fast convergence", func(t *testing.T) {
		ca := &Cubic{}
		tp := newTestSock(ca, 100, 50, 0)
		// First loss: Wmax = 100, ssthresh = 100 * 717 / 1024 = 70.
		if ss := ca.Ssthresh(tp); ss != 70 || ca.LastMaxCwnd != 100 {
			t.Fatalf("ssthresh %d Wmax %d, want 70 100", ss, ca.LastMaxCwnd)
		}
		// Loss below Wmax: fast convergence, Wmax = 90 * 1741 / 2048 = 76,
		// ssthresh = 90 * 717 / 1024 = 63.
		tp.Cwnd = 90
		if ss := ca.Ssthresh(tp); ss != 63 || ca.LastMaxCwnd != 76 {
			t.Fatalf("ssthresh %d Wmax %d, want 63 76", ss, ca.LastMaxCwnd)
		}
		if ca.EpochStart != 0 {
			t.Error("a loss must end the epoch")
		}
	})
	t.Run("update after a loss", func(t *testing.T) {
		// Wmax 100, cwnd 70, delay_min 20 ms: K = cubic_root(cube_factor
		// * 30) = 4316 (4.2 s); t = (0 + 20 jiffies) << 10 / 1000 = 20;
		// delta = 410 * (4316 - 20)^3 >> 40 = 29; target = 100 - 29 = 71;
		// cnt = 70 / (71 - 70) = 70.
		ca := &Cubic{}
		tp := newTestSock(ca, 70, 70, 10*sim.Second)
		ca.LastMaxCwnd, ca.DelayMin = 100, 20000
		ca.update(tp, 70, 1)
		if ca.BicK != 4316 || ca.BicOriginPoint != 100 || ca.Cnt() != 70 {
			t.Fatalf("K %d origin %d cnt %d, want 4316 100 70", ca.BicK, ca.BicOriginPoint, ca.Cnt())
		}
		// The Reno-friendly estimate bounds cnt. In the same jiffy with
		// cwnd 71 the cubic part is kept (cnt 70); 5 * (71*15 >> 3) + 1
		// acked segments raise tcp_cwnd from 70 to 75: cnt <= 71 / 4 = 17.
		ca.ackCnt = 5*133 + 1
		ca.update(tp, 71, 0)
		if ca.Cnt() != 17 {
			t.Errorf("tcp friendliness cnt = %d, want 17", ca.Cnt())
		}
		// 4.296 s later t = (4296 + 20) << 10 / 1000 = 4419, 103 past K:
		// 410 * 103^3 >> 40 = 0, target = Wmax = cwnd 100: the plateau,
		// cnt = 100 * cwnd.
		tp.SetNow(10*sim.Second + 4296*sim.Millisecond)
		ca.update(tp, 100, 1)
		if ca.Cnt() != 10000 {
			t.Errorf("at the plateau cnt = %d, want 10000 (a very small increment)", ca.Cnt())
		}
		// 8 s after the epoch, t = 8212, t - K = 3896: delta = 410 * 3896^3 >> 40
		// = 22, target 122: cnt = 100 / 22 = 4 (convex growth).
		tp.SetNow(18 * sim.Second)
		ca.update(tp, 100, 1)
		if ca.Cnt() != 4 {
			t.Errorf("convex region cnt = %d, want 4", ca.Cnt())
		}
	})
	t.Run("unchanged cwnd recomputes 32 times a second", func(t *testing.T) {
		// bictcp_update returns early while cwnd is unchanged and at most
		// HZ/32 = 31 jiffies passed, even with delay_min (1 ms) far below.
		for _, c := range []struct {
			gapMs     sim.Time
			recompute bool
		}{{1, false}, {5, false}, {31, false}, {32, true}} {
			ca := &Cubic{}
			tp := newTestSock(ca, 70, 70, 10*sim.Second)
			ca.LastMaxCwnd, ca.DelayMin = 100, 1000
			ca.update(tp, 70, 1)
			last := ca.lastTime
			tp.SetNow(10*sim.Second + c.gapMs*sim.Millisecond)
			ca.update(tp, 70, 1)
			if got := ca.lastTime != last; got != c.recompute {
				t.Errorf("%d ms later: recomputed %v, want %v", c.gapMs, got, c.recompute)
			}
		}
	})
	t.Run("hystart delay", func(t *testing.T) {
		// delay_min 20 ms: the exit threshold is 20 ms + clamp(20 ms/8,
		// 4, 16 ms) = 24 ms. Eight samples set curr_rtt, the ninth
		// compares. Samples 3 ms apart keep the ACK train quiet.
		ca := &Cubic{}
		tp := newTestSock(ca, 32, InfiniteSsthresh, sim.Second)
		ca.Init(tp)
		ca.DelayMin = 20000
		for i := 0; i < 9; i++ {
			tp.SetNow(sim.Second + sim.Time(i)*3*sim.Millisecond)
			ca.PktsAcked(tp, AckSample{PktsAcked: 2, RTTUs: 24001})
		}
		if !ca.Found || tp.Ssthresh != 32 {
			t.Fatalf("hystart found %v ssthresh %d, want true 32", ca.Found, tp.Ssthresh)
		}
		ca2 := &Cubic{}
		tp2 := newTestSock(ca2, 32, InfiniteSsthresh, sim.Second)
		ca2.Init(tp2)
		ca2.DelayMin = 20000
		for i := 0; i < 9; i++ {
			tp2.SetNow(sim.Second + sim.Time(i)*3*sim.Millisecond)
			ca2.PktsAcked(tp2, AckSample{PktsAcked: 2, RTTUs: 24000})
		}
		if ca2.Found {
			t.Error("24 ms is not above the 24 ms threshold")
		}
	})
	t.Run("hystart ack train", func(t *testing.T) {
		// ACKs 1 ms apart, delay_min 20 ms, no fq: threshold 10 ms; the
		// train ends slow start once it is 10 ms long.
		ca := &Cubic{}
		tp := newTestSock(ca, 40, InfiniteSsthresh, sim.Second)
		ca.Init(tp)
		ca.DelayMin = 20000
		found := -1
		for i := 1; i <= 12 && found < 0; i++ {
			tp.SetNow(sim.Second + sim.Time(i)*sim.Millisecond)
			ca.PktsAcked(tp, AckSample{PktsAcked: 2, RTTUs: 20000})
			if ca.Found {
				found = i
			}
		}
		if found != 11 {
			t.Errorf("ack train found after %d ms, want 11 (> 10 ms)", found)
		}
	})
	t.Run("hystart rounds restart below the low window", func(t *testing.T) {
		// hystart_update resets the round (round_start, end_seq, curr_rtt)
		// once snd_una passes end_seq, before the hystart_low_window check.
		for _, c := range []struct {
			name      string
			sndUna    int64
			wantReset bool
		}{{"round not over", 20, false}, {"round over", 21, true}} {
			ca := &Cubic{}
			tp := newTestSock(ca, 10, InfiniteSsthresh, sim.Second)
			tp.SndNxt = 20
			ca.Init(tp) // end_seq 20, round_start 1 s
			tp.SndUna, tp.SndNxt = c.sndUna, 40
			tp.SetNow(sim.Second + 5*sim.Millisecond)
			ca.PktsAcked(tp, AckSample{PktsAcked: 1, RTTUs: 1000})
			reset := ca.endSeq == 40 && ca.roundStart == tp.ClockUs() && ca.currRTT == ^uint32(0)
			if reset != c.wantReset || ca.Found {
				t.Errorf("%s: round reset %v found %v, want %v false", c.name, reset, ca.Found, c.wantReset)
			}
		}
	})
	t.Run("no hystart below the low window", func(t *testing.T) {
		ca := &Cubic{}
		tp := newTestSock(ca, 15, InfiniteSsthresh, sim.Second)
		ca.Init(tp)
		ca.DelayMin = 1000
		for i := 0; i < 20; i++ {
			tp.SetNow(sim.Second + sim.Time(i)*3*sim.Millisecond)
			ca.PktsAcked(tp, AckSample{RTTUs: 100000})
		}
		if ca.Found {
			t.Error("hystart acted below hystart_low_window (16)")
		}
	})
}

func TestDCTCPLaws(t *testing.T) {
	ca := &DCTCP{}
	tp := newTestSock(ca, 100, 200, 0)
	ca.Init(tp)
	if ca.Alpha != 1024 {
		t.Fatalf("alpha starts at %d, want 1024", ca.Alpha)
	}
	// One window: 100 delivered, 10 with ECE.
	// alpha = 1024 - 1024/16 + (10 << 6) / 100 = 960 + 6 = 966.
	tp.SndNxt, tp.SndUna = 100, 100
	tp.Delivered, tp.DeliveredCE = 100, 10
	ca.InAckEvent(tp, 0)
	if ca.Alpha != 966 {
		t.Fatalf("alpha = %d, want 966", ca.Alpha)
	}
	// ssthresh = 100 - (100 * 966 >> 11) = 100 - 47 = 53.
	if ss := ca.Ssthresh(tp); ss != 53 {
		t.Errorf("ssthresh = %d, want 53", ss)
	}
	// No marks for a window: alpha decays by 1/16: 966 - 60 = 906.
	tp.SndNxt, tp.SndUna = 200, 200
	tp.Delivered = 200
	ca.InAckEvent(tp, 0)
	if ca.Alpha != 906 {
		t.Errorf("alpha = %d after a clean window, want 906", ca.Alpha)
	}
	// Not a full window yet: no update.
	tp.SndNxt = 300
	tp.SndUna = 199
	ca.InAckEvent(tp, 0)
	if ca.Alpha != 906 {
		t.Errorf("alpha moved to %d before the window ended", ca.Alpha)
	}
	// A loss halves (Reno).
	ca.SetState(tp, CARecovery)
	if tp.Ssthresh != 50 {
		t.Errorf("loss ssthresh = %d, want 50", tp.Ssthresh)
	}
	// Small alpha decays to 0 (min_not_zero).
	ca.Alpha = 10
	tp.SndUna = 300
	ca.InAckEvent(tp, 0)
	if ca.Alpha != 0 {
		t.Errorf("alpha 10 decays to %d, want 0", ca.Alpha)
	}
	if !ca.NeedsECN() {
		t.Error("dctcp needs ECN")
	}
}

func TestPRR(t *testing.T) {
	// In flight above ssthresh: sndcnt = ceil(ssthresh * prr_delivered /
	// prior_cwnd) - prr_out = ceil(70 * 5 / 100) - 0 = 4 (the integer
	// division of 449 by 100), cwnd = in_flight + 4.
	tp := newTestSock(Reno{}, 100, 70, 0)
	tp.PriorCwnd = 100
	tp.SndNxt = 95
	tp.cwndReduction(5, 0, 0)
	if tp.Cwnd != 99 {
		t.Errorf("PRR proportional: cwnd %d, want 95 + 4", tp.Cwnd)
	}
	// In flight below ssthresh (delta 10): sndcnt = max(50 - 40 + 3,
	// 3) + 1 (snd_una advanced, no loss) = 14, capped at delta 10.
	tp = newTestSock(Reno{}, 100, 70, 0)
	tp.PriorCwnd, tp.PrrDelivered, tp.PrrOut = 100, 47, 40
	tp.SndNxt = 60
	tp.cwndReduction(3, 0, FlagSndUnaAdvanced)
	if tp.Cwnd != 70 {
		t.Errorf("PRR slow start: cwnd %d, want 60 + 10", tp.Cwnd)
	}
	// First ACK of recovery, nothing sent yet: at least one segment.
	tp = newTestSock(Reno{}, 100, 50, 0)
	tp.PriorCwnd = 100
	tp.SndNxt = 100
	tp.cwndReduction(1, 1, 0)
	if tp.Cwnd != 101 {
		t.Errorf("fast retransmit forced: cwnd %d, want 100 + 1", tp.Cwnd)
	}
}

func TestRTTEstimatorAndRTO(t *testing.T) {
	// __tcp_set_rto: icsk_rto = usecs_to_jiffies(srtt + rttvar), which
	// rounds up to the next jiffy (HZ=1000).
	for _, c := range []struct {
		name     string
		samples  []int64 // us
		wantSrtt uint32
		wantRTO  sim.Time
	}{
		// srtt = 20000 << 3, mdev = 40000, rttvar = max(40000,
		// 200000): 20 + 200 ms, a whole jiffy.
		{"first sample", []int64{20000}, 160000, 220 * sim.Millisecond},
		// 30 ms: error 10000, srtt 170000 (21.25 ms), mdev 40000 +
		// (10000 - 10000) = 40000: 221250 us, 222 jiffies.
		{"rounded up", []int64{20000, 30000}, 170000, 222 * sim.Millisecond},
		// 1 us: srtt 8, rttvar 200000: 200001 us, 201 jiffies.
		{"one microsecond over", []int64{1}, 8, 201 * sim.Millisecond},
	} {
		tp := NewSock(Reno{}, false, 0)
		for _, m := range c.samples {
			tp.rttEstimator(m)
			tp.setRTO()
		}
		if tp.SrttUs != c.wantSrtt || tp.RTO != c.wantRTO {
			t.Errorf("%s: srtt %d rto %v, want %d %v", c.name, tp.SrttUs, tp.RTO, c.wantSrtt, c.wantRTO)
		}
	}
}

func TestPacingTSOAndTSQ(t *testing.T) {
	tp := NewSock(Reno{}, false, 0)
	tp.SrttUs = 20000 << 3
	// Slow start (cwnd 10 < ssthresh/2): 200% of 10 * 1448 / 20 ms =
	// 1,448,000 B/s.
	tp.UpdatePacingRate()
	if tp.PacingRate != 1448000 {
		t.Errorf("slow-start pacing %d, want 1448000", tp.PacingRate)
	}
	// Congestion avoidance: 120%: 868,800 B/s.
	tp.Ssthresh = 10
	tp.UpdatePacingRate()
	if tp.PacingRate != 868800 {
		t.Errorf("CA pacing %d, want 868800", tp.PacingRate)
	}
	// TSO autosize at 12.5 MB/s, min_rtt 20 ms (r = 39: no allowance):
	// 12500000 >> 10 = 12207 B = 8 segments.
	tp.PacingRate, tp.MinRTTUs = 12500000, 20000
	if s := tp.TSOSegs(); s != 8 {
		t.Errorf("tso segs %d, want 8", s)
	}
	// A close peer (min_rtt 50 us: r = 0) gets the whole 65215 B: 45.
	tp.MinRTTUs = 50
	if s := tp.TSOSegs(); s != 45 {
		t.Errorf("tso segs %d, want 45", s)
	}
	// Slow flows send tcp_min_tso_segs.
	tp.PacingRate, tp.MinRTTUs = 100000, 20000
	if s := tp.TSOSegs(); s != 2 {
		t.Errorf("tso segs %d, want 2", s)
	}
	// TSQ: max(2 * truesize, pacing >> 10), capped at 4 MB without fq.
	tp.PacingRate = 12500000
	if l := tp.SmallQueueLimit(12544, 0); l != 25088 {
		t.Errorf("tsq limit %d, want 25088", l)
	}
	tp.PacingRate = 10e9
	if l := tp.SmallQueueLimit(12544, 0); l != LimitOutputBytes {
		t.Errorf("tsq limit %d, want the 4 MB cap", l)
	}
	tp.PacingFQ = true
	if l := tp.SmallQueueLimit(12544, 1); l != (10e9>>10)<<1 {
		t.Errorf("tsq limit under fq %d, want %d", l, uint64(10e9>>10)<<1)
	}
	// sndbuf: 2 * max(10, cwnd) * per_mss, per_mss = 4096 + 256.
	if PerMSS() != 4352 {
		t.Errorf("per_mss %d, want 4352", PerMSS())
	}
	tp.Cwnd = 100
	if b := tp.SndbufExpand(WmemDefault); b != 870400 {
		t.Errorf("sndbuf %d, want 870400", b)
	}
}
