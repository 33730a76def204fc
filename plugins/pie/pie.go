// Package pie is PIE, Proportional Integral controller Enhanced (RFC
// 8033; net/sched/sch_pie.c, include/net/pie.h), and FQ-PIE
// (net/sched/sch_fq_pie.c), which runs PIE per flow behind fq_codel's
// DRR of new and old flows. PIE drops (or ECN-marks) at enqueue with a
// probability a timer recomputes every tupdate from the queueing delay
// (measured with timestamps, or from the backlog and a drain-rate
// estimate) and its trend; a burst allowance and the derandomisation of
// accu_prob shape when a drop falls. Times are psched ticks (64 ns), the
// kernel's units.
package pie

import (
	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// include/net/pie.h.
const (
	maxProb        = ^uint64(0) >> 8 // MAX_PROB: probability 1
	dtimeInvalid   = ^uint64(0)      // DTIME_INVALID
	queueThreshold = 16384           // QUEUE_THRESHOLD, bytes
	dqcountInvalid = ^uint64(0)      // DQCOUNT_INVALID (-1 in a u64)
	pieScale       = 8               // PIE_SCALE
	hz             = 1000            // jiffies a second, as the model's netdev.HZ
	ticksPerSec    = 1e9 >> 6        // PSCHED_TICKS_PER_SEC
)

// params is struct pie_params (target in ticks, tupdate in jiffies).
type params struct {
	target          uint64
	tupdate         uint32
	limit           uint32
	alpha, beta     uint32
	ecn, bytemode   bool
	dqRateEstimator bool
}

// paramsInit is pie_params_init: 15 ms target and tupdate, limit 1000,
// alpha 2, beta 20.
func paramsInit() params {
	return params{target: psched.NsToTicks(15e6), tupdate: usecsToJiffies(15000), limit: 1000, alpha: 2, beta: 20}
}

// usecsToJiffies rounds up, as usecs_to_jiffies does.
func usecsToJiffies(us uint32) uint32 { return uint32((uint64(us) + 1e6/hz - 1) / (1e6 / hz)) }

// vars is struct pie_vars.
type vars struct {
	qdelay, qdelayOld uint64 // ticks
	burstTime         uint64 // ticks
	dqTstamp          uint64 // ticks
	prob, accuProb    uint64
	dqCount           uint64
	avgDqRate         uint32
	backlogOld        uint32
}

// varsInit is pie_vars_init: a 150 ms burst allowance and the
// measurement restarted (prob and the delays are kept).
func (v *vars) varsInit() {
	v.burstTime = psched.NsToTicks(150e6)
	v.dqTstamp = dtimeInvalid
	v.accuProb = 0
	v.dqCount = dqcountInvalid
	v.avgDqRate = 0
}

// stats is struct pie_stats: u32 counters, wrapping as the kernel's.
type stats struct {
	packetsIn, dropped, overlimit, ecnMark, maxq uint32
}

// item is a queued packet with pie_skb_cb.
type item struct {
	pkt         skb.Packet
	enqueueTime uint64 // ticks
	memUsage    uint32
}

// now is psched_get_time: ktime in ticks.
func now(ctx qdisc.Ctx) uint64 {
	ctx.Work(qdisc.WorkTstamp, 1)
	return psched.NsToTicks(uint64(ctx.Now()))
}

// dropEarly is pie_drop_early: no drop while burst allowance is left,
// while the delay is under half the target and the probability low, or
// with under two MTUs queued; otherwise the probability (scaled by size
// in bytemode) accumulates, and the drop falls between 0.85 and 8.5 of
// it, at random.
func dropEarly(ctx qdisc.Ctx, p *params, v *vars, mtu, backlog, packetSize uint32) bool {
	localProb := v.prob
	if v.burstTime > 0 {
		return false
	}
	if v.qdelay < p.target/2 && v.prob < maxProb/5 {
		return false
	}
	if backlog < 2*mtu {
		return false
	}
	if p.bytemode && packetSize <= mtu {
		localProb = uint64(packetSize) * (localProb / uint64(mtu))
	} else {
		localProb = v.prob
	}
	if localProb == 0 {
		v.accuProb = 0
	} else {
		v.accuProb += localProb
	}
	if v.accuProb < (maxProb/100)*85 {
		return false
	}
	if v.accuProb >= (maxProb/2)*17 {
		return true
	}
	rnd := qdisc.RandU64(ctx) // get_random_bytes(&rnd, 8)
	if rnd>>8 < localProb {
		v.accuProb = 0
		return true
	}
	return false
}

// processDequeue is pie_process_dequeue: the delay from the packet's
// timestamp, or the drain rate over QUEUE_THRESHOLD bytes (Little's
// law); the time since the last measure spends the burst allowance.
// dtime is a u32 of ticks, as the kernel's: a gap of 2^32 ticks (275 s)
// wraps.
func processDequeue(ctx qdisc.Ctx, it *item, p *params, v *vars, backlog uint32) {
	t := now(ctx)
	var dtime uint32
	if !p.dqRateEstimator {
		v.qdelay = t - it.enqueueTime
		if v.dqTstamp != dtimeInvalid {
			dtime = uint32(t - v.dqTstamp)
		}
		v.dqTstamp = t
		if backlog == 0 {
			v.qdelay = 0
		}
		if dtime == 0 {
			return
		}
	} else {
		if backlog >= queueThreshold && v.dqCount == dqcountInvalid {
			v.dqTstamp, v.dqCount = t, 0
		}
		if v.dqCount == dqcountInvalid {
			return
		}
		v.dqCount += uint64(it.pkt.Len)
		if v.dqCount < queueThreshold {
			return
		}
		count := uint32(v.dqCount << pieScale)
		dtime = uint32(t - v.dqTstamp)
		if dtime == 0 {
			return
		}
		count /= dtime
		if v.avgDqRate == 0 {
			v.avgDqRate = count
		} else {
			v.avgDqRate = (v.avgDqRate - v.avgDqRate>>3) + count>>3
		}
		if backlog < queueThreshold {
			v.dqCount = dqcountInvalid
		} else {
			v.dqCount, v.dqTstamp = 0, t
		}
	}
	if v.burstTime > 0 {
		if v.burstTime > uint64(dtime) {
			v.burstTime -= uint64(dtime)
		} else {
			v.burstTime = 0
		}
	}
}

// calculateProbability is pie_calculate_probability: the probability
// moves by alpha x (delay - target) + beta x (delay - last delay), with
// alpha and beta (in sixteenths) scaled down while the probability is
// low (RFC 8033's auto-tuning), a 2% cap on a rise above 10%, a push for
// delays over 250 ms, a decay after two idle updates, and a restart of
// the measurement when all is quiet. C's u64/s64 wrap-around included.
func calculateProbability(p *params, v *vars, backlog uint32) {
	var qdelay, qdelayOld uint64
	if p.dqRateEstimator {
		qdelayOld = v.qdelay
		v.qdelayOld = v.qdelay
		if v.avgDqRate > 0 {
			// backlog << PIE_SCALE is a u32: it wraps from 16 MB.
			qdelay = uint64((backlog << pieScale) / v.avgDqRate)
		}
	} else {
		qdelay, qdelayOld = v.qdelay, v.qdelayOld
	}
	updateProb := !(qdelay == 0 && backlog != 0)
	alpha := (uint64(p.alpha) * (maxProb / ticksPerSec)) >> 4
	beta := (uint64(p.beta) * (maxProb / ticksPerSec)) >> 4
	if v.prob < maxProb/10 {
		alpha >>= 1
		beta >>= 1
		for power := uint64(100); v.prob < maxProb/power && power <= 1000000; power *= 10 {
			alpha >>= 2
			beta >>= 2
		}
	}
	delta := int64(alpha*(qdelay-p.target)) + int64(beta*(qdelay-qdelayOld))
	oldprob := v.prob
	if delta > int64(maxProb/50) && v.prob >= maxProb/10 {
		delta = int64(maxProb/100) * 2
	}
	if qdelay > psched.NsToTicks(250e6) {
		delta += int64(maxProb / 50)
	}
	v.prob += uint64(delta)
	if delta > 0 {
		if v.prob < oldprob {
			v.prob = maxProb
			updateProb = false
		}
	} else if v.prob > oldprob {
		v.prob = 0
	}
	if qdelay == 0 && qdelayOld == 0 && updateProb {
		v.prob -= v.prob / 64
	}
	v.qdelay = qdelay
	v.backlogOld = backlog
	if v.qdelay < p.target/2 && v.qdelayOld < p.target/2 && v.prob == 0 && (!p.dqRateEstimator || v.avgDqRate > 0) {
		v.varsInit()
	}
	if !p.dqRateEstimator {
		v.qdelayOld = qdelay
	}
}

// jiffies is a timer delay in jiffies as model time.
func jiffies(j uint32) sim.Time { return sim.Time(j) * (sim.Second / hz) }

// probXStat is tc_pie_xstats' prob (vars->prob << 8) as pie_print_xstats
// prints it: a fraction of UINT64_MAX, %lg.
func probXStat(prob uint64) qdisc.XStat {
	return qdisc.XFloat("prob", float64(prob<<8)/float64(^uint64(0)))
}
