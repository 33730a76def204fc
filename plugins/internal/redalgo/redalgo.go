// Package redalgo is the kernel's divisionless fixed-point RED
// (include/net/red.h) and tc's parameter computations for it
// (tc/tc_red.c): what red runs on its queue in bytes, sfq on each flow
// and choke on its queue in packets. The average backlog (QAvg, scaled by 2^Wlog) moves toward the backlog at
// each enqueue, or decays over an idle period through the Stab table;
// below min nothing happens, between min and max a packet is marked
// once a count since the last mark reaches a random threshold, above max
// every packet is.
package redalgo

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/sim"
)

// Parms is struct red_parms.
type Parms struct {
	QthMin, QthMax       uint32 // scaled by 2^Wlog
	ScellMax             uint32
	MaxP                 uint32 // probability, 2^32 scaled
	MaxPDelta            uint32 // max_P / qth_delta, the divisor behind max_P_reciprocal
	QthDelta             uint32
	TargetMin, TargetMax uint32
	ScellLog, Wlog, Plog uint8
	Stab                 [256]uint8
}

// Vars is struct red_vars; Idling stands for qidlestart != 0.
type Vars struct {
	QCount    int32
	QR        uint32
	QAvg      uint64
	IdleStart sim.Time
	Idling    bool
}

// Reset is red_set_vars: the average and the count start again.
func (v *Vars) Reset() { v.QAvg, v.QCount = 0, -1 }

// Set is red_set_parms: thresholds in bytes (scaled here by 2^wlog),
// the idle damping table (nil: none, as sfq passes), max_P (0: from
// Plog).
func (p *Parms) Set(qthMin, qthMax uint32, wlog, plog, scellLog uint8, stab *[256]uint8, maxP uint32) {
	delta := int32(qthMax - qthMin)
	p.QthMin, p.QthMax = qthMin<<wlog, qthMax<<wlog
	p.Wlog, p.Plog = wlog, plog
	if delta <= 0 {
		delta = 1
	}
	p.QthDelta = uint32(delta)
	if maxP == 0 {
		maxP = Maxp(plog) * uint32(delta) // (qth_max - qth_min) / 2^Plog
	}
	p.MaxP = maxP
	p.MaxPDelta = max(maxP/uint32(delta), 1)
	delta /= 5
	p.TargetMin, p.TargetMax = qthMin+2*uint32(delta), qthMin+3*uint32(delta)
	p.ScellLog, p.ScellMax = scellLog, 255<<scellLog
	p.Stab = [256]uint8{}
	if stab != nil {
		p.Stab = *stab
	}
}

// Maxp is red_maxp.
func Maxp(plog uint8) uint32 {
	if plog < 32 {
		return ^uint32(0) >> plog
	}
	return ^uint32(0)
}

// QavgFromIdleTime is red_calc_qavg_from_idle_time: the average decays
// over the idle time until now (in us, at most Scell_max) by the shift
// Stab gives, or linearly while that shift is 0.
func (p *Parms) QavgFromIdleTime(v *Vars, now sim.Time) uint64 {
	usIdle := min(int64(now-v.IdleStart)/1000, int64(p.ScellMax))
	if shift := p.Stab[(usIdle>>p.ScellLog)&255]; shift != 0 {
		return v.QAvg >> shift
	}
	d := (v.QAvg * uint64(usIdle)) >> p.ScellLog
	if d < v.QAvg>>1 {
		return v.QAvg - d
	}
	return v.QAvg >> 1
}

// QavgNoIdleTime is red_calc_qavg_no_idle_time: qavg = qavg (1 - W) +
// backlog W, in fixed point at Wlog (C's unsigned long arithmetic).
func (p *Parms) QavgNoIdleTime(v *Vars, backlog uint32) uint64 {
	return v.QAvg + (uint64(backlog) - v.QAvg>>p.Wlog)
}

// Rander draws get_random_u32 (a qdisc's context).
type Rander interface{ Rand() uint32 }

// Results of Action (red_action).
const (
	DontMark = iota
	ProbMark
	HardMark
)

// Random is red_random: a get_random_u32 divided by max_P / delta
// (reciprocal_divide is exact).
func (p *Parms) Random(r Rander) uint32 { return r.Rand() / p.MaxPDelta }

// MarkProbability is red_mark_probability: max_P (qavg - qth_min) /
// (qth_max - qth_min) >= qR / qcount, in qavg's fixed point.
func (p *Parms) MarkProbability(v *Vars, qavg uint64) bool {
	return ((qavg-uint64(p.QthMin))>>p.Wlog)*uint64(uint32(v.QCount)) >= uint64(v.QR)
}

// Action is red_action with red_cmp_thresh and red_mark_probability.
func (p *Parms) Action(v *Vars, qavg uint64, r Rander) int {
	switch {
	case qavg < uint64(p.QthMin):
		v.QCount = -1
		return DontMark
	case qavg >= uint64(p.QthMax):
		v.QCount = -1
		return HardMark
	}
	v.QCount++
	if v.QCount == 0 {
		v.QR = p.Random(r)
		return DontMark
	}
	if p.MarkProbability(v, qavg) {
		v.QCount = 0
		v.QR = p.Random(r)
		return ProbMark
	}
	return DontMark
}

// CheckParams is red_check_params without its stab: false for what the
// kernel refuses (EINVAL): thresholds that do not fit 32 bits scaled by
// 2^Wlog (fls), a Scell_log of 32 or more, max below min.
func CheckParams(qthMin, qthMax uint32, wlog, scellLog uint8) bool {
	return bits.Len32(qthMin)+int(wlog) < 32 && bits.Len32(qthMax)+int(wlog) < 32 && scellLog < 32 && qthMax >= qthMin
}

// EvalP is tc_red_eval_P: Plog = log2((qmax - qmin) / prob), the bits
// of the random number; -1 if none fits.
func EvalP(qmin, qmax uint32, prob float64) int {
	i := int(qmax) - int(qmin)
	if i == 0 {
		return 0
	}
	if i < 0 {
		return -1
	}
	prob /= float64(i)
	for i = 0; i < 32; i++ {
		if prob > 1.0 {
			break
		}
		prob *= 2
	}
	if i >= 32 {
		return -1
	}
	return i
}

// EvalEWMA is tc_red_eval_ewma: the smallest Wlog that lets a burst of
// burst packets of avpkt bytes through an empty queue before the
// average reaches qmin: burst + 1 - qmin/avpkt <= (1 - (1-W)^burst) / W.
// Its error is tc's message.
func EvalEWMA(qmin, burst, avpkt uint32) (int, error) {
	W := 0.5
	a := float64(burst) + 1 - float64(qmin)/float64(avpkt)
	if a < 1.0 {
		return 0, fmt.Errorf("burst %d is too small ? Try burst %d", burst, 1+qmin/avpkt)
	}
	for wlog := 1; wlog < 32; wlog, W = wlog+1, W/2 {
		if a <= (1-math.Pow(1-W, float64(burst)))/W {
			return wlog, nil
		}
	}
	return 0, fmt.Errorf("no EWMA constant below 2^-32 lets burst %d through", burst)
}

// EvalIdleDamping is tc_red_eval_idle_damping: Stab[t >> Scell_log] =
// -log(1-W) x t / xmit_time, the shift that decays the average over an
// idle time t, with t and xmit_time in psched ticks (the kernel indexes
// the table with microseconds: a tick is 64 ns now, so the decay is
// 15.6 times slower than tc means, as on a real system). It returns
// Scell_log, -1 if none fits.
func EvalIdleDamping(wlog int, avpkt, bps uint32, sbuf *[256]uint8) int {
	xmitTime := float64(psched.CalcXmittime(uint64(bps), uint64(avpkt)))
	lW := -math.Log(1.0-1.0/float64(int(1)<<wlog)) / xmitTime
	maxtime := 31 / lW
	clog := 0
	for ; clog < 32; clog++ {
		if maxtime/float64(int64(1)<<clog) < 512 {
			break
		}
	}
	if clog >= 32 {
		return -1
	}
	sbuf[0] = 0
	for i := 1; i < 255; i++ {
		sbuf[i] = uint8(min(float64(int64(i)<<clog)*lW, 255))
		if sbuf[i] > 31 {
			sbuf[i] = 31
		}
	}
	sbuf[255] = 31
	return clog
}
