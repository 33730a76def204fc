// Package cbs is the kernel's Credit Based Shaper (net/sched/sch_cbs.c,
// IEEE 802.1Q-2014 8.6.8.2, the 802.1Qav shaper of AVB and TSN streams),
// its software path: credits grow at idleslope while packets wait and
// fall at sendslope (idleslope minus the port rate) while one is sent,
// between locredit and hicredit; the head leaves only while the credits
// are not negative, else the watchdog is armed for when they will be.
// The port rate is the link's speed (cbs_set_port_rate). cbs is
// classful as the kernel's: its one class 1:1 holds the queue, a pfifo
// by default (the host's leaf, invisible), another qdisc once tc grafts
// one. It usually sits on one queue of an mqprio root (`parent 100:1`).
// The NIC's offload (`offload 1`) is not modelled.
package cbs

import (
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("cbs", "Credit Based Shaper (802.1Qav): credits at idleslope while waiting, sendslope while sending, between locredit and hicredit, over a child qdisc (sch_cbs.c)",
		func() qdisc.Qdisc { return &CBS{} })
}

// bytesPerKbit is BYTES_PER_KBIT: tc's slopes are in kbit/s.
const bytesPerKbit = 1000 / 8

// qopt is struct tc_cbs_qopt as tc sends it.
type qopt struct {
	offload              uint8
	hicredit, locredit   int32 // bytes
	idleslope, sendslope int32 // kbit/s
}

// CBS is struct cbs_sched_data; its child (q->qdisc) is the host's leaf
// of class 1:1.
type CBS struct {
	handle   uint16
	portRate int64    // bytes/s
	last     sim.Time // when the last byte of the last packet leaves
	credits  int64    // bytes

	locredit, hicredit   int32
	sendslope, idleslope int64 // bytes/s
	opt                  qopt  // for the dump

	leaves qdisc.LeafTable
	drops  uint64
	batch  qdisc.LeafBatch
}

// parse is cbs_parse_opt: every word once (a second, unless the first
// was 0, is tc's "duplicate"), numbers in C's bases (get_s32 and get_u8
// with base 0).
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("cbs", args)
	for k := a.Next(); k != ""; k = a.Next() {
		var dst *int32
		name := ""
		switch {
		case psched.Matches(k, "offload"):
			v, err := a.Value(k)
			if err != nil {
				return o, err
			}
			if o.offload != 0 {
				return o, qdisc.Parsef("cbs", `cbs: duplicate "offload" specification`)
			}
			n, err := units.GetUnsigned(v, 0)
			if err != nil || n > math.MaxUint8 {
				return o, qdisc.Parsef("cbs", `cbs: illegal value for "offload": %q`, v)
			}
			o.offload = uint8(n)
			continue
		case psched.Matches(k, "hicredit"):
			dst, name = &o.hicredit, "hicredit"
		case psched.Matches(k, "locredit"):
			dst, name = &o.locredit, "locredit"
		case psched.Matches(k, "sendslope"):
			dst, name = &o.sendslope, "sendslope"
		case psched.Matches(k, "idleslope"):
			dst, name = &o.idleslope, "idleslope"
		case k == "help":
			return o, qdisc.Parsef("cbs", "Usage: ... cbs hicredit BYTES locredit BYTES sendslope BPS idleslope BPS [offload 0|1]")
		default:
			return o, qdisc.Parsef("cbs", "cbs: unknown parameter %q", k)
		}
		v, err := a.Value(k)
		if err != nil {
			return o, err
		}
		if *dst != 0 {
			return o, qdisc.Parsef("cbs", "cbs: duplicate %q specification", name)
		}
		n, err := units.GetInteger(v, 0)
		if err != nil {
			return o, qdisc.Parsef("cbs", "cbs: illegal value for %q: %q", name, v)
		}
		*dst = n
	}
	return o, nil
}

// Init implements qdisc.Qdisc (cbs_init, then cbs_change).
func (q *CBS) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = CBS{handle: uint16(s.Major())}
	// cbs_set_port_rate: the link's speed in Mbit/s (SPEED_10 when
	// unknown), in bytes/s
	speed := s.RateBps / 1_000_000
	if speed <= 0 {
		speed = 10
	}
	q.portRate = speed * 1000 * bytesPerKbit
	return q.change(args)
}

// Change implements qdisc.Changer (cbs_change): the parameters only;
// the credits and the child stay.
func (q *CBS) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) { return q.change(args) }

func (q *CBS) change(args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if o.offload != 0 {
		return qdisc.Info{}, qdisc.Lacksf("cbs", "offload %d: the NIC's credit based shaper (ndo_setup_tc TC_SETUP_QDISC_CBS) is not modelled; txlab's cbs is the software one (offload 0)", o.offload)
	}
	q.opt = o
	q.hicredit, q.locredit = o.hicredit, o.locredit
	q.idleslope = int64(o.idleslope) * bytesPerKbit
	q.sendslope = int64(o.sendslope) * bytesPerKbit
	// cbs sets no flags and leaves sch->limit 0: its limit is the
	// child's; cbs_class_ops has no tcf_block
	return qdisc.Info{Flags: qdisc.EmptyNoop | qdisc.NoBlock}, nil
}

func (q *CBS) class() qdisc.ClassID { return qdisc.MakeClassID(q.handle, 1) }

// Enqueue implements qdisc.Qdisc (cbs_enqueue_soft for each packet:
// credits stop accumulating at a positive value while the queue is
// empty; then the child).
func (q *CBS) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	ctx.Work(qdisc.WorkEnqueue, len(batch))
	if q.leaves.Qlen == 0 && q.credits > 0 {
		ctx.Work(qdisc.WorkTstamp, 1)
		q.credits, q.last = 0, ctx.Now()
	}
	q.batch.Reset()
	for i := range batch {
		q.batch.Add(&batch[i], q.class(), i)
	}
	q.drops += q.batch.Send(ctx.(qdisc.ClassCtx), &q.leaves, rc)
}

// timediffToCredits, delayFromCredits and creditsFromLen are the
// kernel's helpers (div64_s64: truncated toward zero).
func timediffToCredits(d sim.Time, slope int64) int64 { return int64(d) * slope / int64(sim.Second) }

func delayFromCredits(credits, slope int64) int64 {
	if slope == 0 {
		return math.MaxInt64
	}
	return -credits * int64(sim.Second) / slope
}

func creditsFromLen(length uint32, slope, portRate int64) int64 {
	if portRate == 0 {
		return math.MaxInt64
	}
	return int64(length) * slope / portRate
}

// cbsDequeue is cbs_dequeue_soft.
func (q *CBS) cbsDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.leaves.Qlen == 0 {
		// the child's dequeue finds nothing (after the credit
		// checks, which with an empty queue only read the clock)
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkTstamp, 1)
	now := ctx.Now()
	if now < q.last { // the previous packet is still being sent
		ctx.Watchdog(q.last)
		return skb.Packet{}, false
	}
	if q.credits < 0 {
		credits := q.credits + timediffToCredits(now-q.last, q.idleslope)
		q.credits = min(credits, int64(q.hicredit))
		if q.credits < 0 {
			delay := delayFromCredits(q.credits, q.idleslope)
			ctx.Watchdog(satAdd(now, delay))
			q.last = now
			return skb.Packet{}, false
		}
	}
	p, ok, _, dropped := q.leaves.Dequeue(ctx.(qdisc.ClassCtx), q.class())
	q.drops += uint64(dropped)
	if !ok {
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkDequeue, 1)
	// sendslope is negative: the credits fall by the packet's time on
	// the wire at it
	credits := satAddInt(creditsFromLen(p.Len, q.sendslope, q.portRate), q.credits)
	q.credits = max(credits, int64(q.locredit))
	if q.portRate == 0 {
		q.last = now
	} else {
		q.last = now + sim.Time(int64(p.Len)*int64(sim.Second)/q.portRate)
	}
	return p, true
}

// satAdd is the hrtimer's clamp of an expiry past KTIME_MAX.
func satAdd(t sim.Time, d int64) sim.Time {
	if d > math.MaxInt64-int64(t) {
		return math.MaxInt64
	}
	return t + sim.Time(d)
}

// satAddInt adds without wrapping (creditsFromLen's S64_MAX for a port
// without a rate).
func satAddInt(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Dequeue implements qdisc.Qdisc.
func (q *CBS) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.cbsDequeue(ctx) })
}

// Reset implements qdisc.Resetter (qdisc_reset_queue of sch->q, which
// cbs never fills; the host resets the child). The credits and the
// watchdog stay as they were, as in the kernel.
func (q *CBS) Reset(qdisc.Ctx) { q.leaves.Reset() }

// Stats implements qdisc.Qdisc: the child's qlen and backlog, cbs's
// drops (its child's, net_xmit_drop_count). cbs has no xstats.
func (q *CBS) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops}
}

// Dump implements qdisc.Qdisc: cbs_dump as cbs_print_opt prints it (the
// slopes back from bytes/s, truncated).
func (q *CBS) Dump() string {
	return fmt.Sprintf("hicredit %d locredit %d sendslope %d idleslope %d offload %d ",
		q.hicredit, q.locredit, q.sendslope/bytesPerKbit, q.idleslope/bytesPerKbit, q.opt.offload)
}

// ChangeClass implements qdisc.Classful: tc has no class options for
// cbs (q_cbs.c has no parse_copt).
func (q *CBS) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("cbs", `Error: Qdisc "cbs" is classless.`)
}

// DeleteClass implements qdisc.Classful: cbs's class ops have no delete.
func (q *CBS) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("cbs", "RTNETLINK answers: Operation not supported (cbs's one class goes with the qdisc)")
}

// Classes implements qdisc.Classful (cbs_walk, cbs_dump_class): the one
// class 1:1 under the qdisc, with no stats of its own (no dump_stats);
// its default leaf is a pfifo, and a deleted leaf is replaced by a new
// pfifo (cbs_graft's qdisc_create_dflt).
func (q *CBS) Classes() []qdisc.Class {
	return []qdisc.Class{{ID: q.class(), Parent: qdisc.MakeClassID(q.handle, 0), Leaf: true, NoStats: true}}
}

// QlenNotify implements qdisc.Classful: the child changed without cbs.
func (q *CBS) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
}
