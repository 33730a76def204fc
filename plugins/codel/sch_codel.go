package codel

import (
	"fmt"
	"math"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("codel", "Controlled Delay AQM over one FIFO: drops or ECN-marks at dequeue while the sojourn time stays above target (sch_codel.c)",
		func() qdisc.Qdisc { return &Sched{} })
}

// defaultLimit is DEFAULT_CODEL_LIMIT, in packets.
const defaultLimit = 1000

// Sched is the codel qdisc (net/sched/sch_codel.c): struct
// codel_sched_data with the queue it runs CoDel over (sch->q), its
// backlog, and the packet codel_peek set aside (sch->gso_skb).
type Sched struct {
	q             qdisc.Ring[Item]
	limit         uint32 // sch->limit, in packets
	params        Params
	vars          Vars
	stats         Stats
	dropOverlimit uint32
	backlog       uint32 // sch->qstats.backlog, the peeked packet included: what CoDel compares with mtu
	drops         uint64 // sch->qstats.drops
	flags         qdisc.Flags
	peeked        Item
	hasPeeked     bool
	// now is codel_get_time at the last call: what the xstats'
	// drop_next counts from (codel_dump_stats reads the clock; Stats has
	// none).
	now Time
	cq  schedQueue
}

// schedQueue adapts the qdisc to Queue: dequeue_func, drop_func and
// codel_get_time of sch_codel.c, for the call under way.
type schedQueue struct {
	q   *Sched
	ctx qdisc.Ctx
}

// Dequeue is dequeue_func: the head, its bytes off the backlog.
func (c *schedQueue) Dequeue() (Item, bool) {
	if c.q.q.Len() == 0 {
		return Item{}, false
	}
	c.ctx.Work(qdisc.WorkDequeue, 1)
	it := c.q.q.PopHead()
	c.q.backlog -= it.Pkt.Len
	return it, true
}

// Drop is drop_func: qdisc_dequeue_drop(..., QDISC_DROP_CONGESTED), a
// counted drop.
func (c *schedQueue) Drop(it Item) {
	c.ctx.DequeueDrop(it.Pkt.Handle, skb.DropQdiscCongested)
	c.q.drops++
}

// Now is codel_get_time, one ktime_get per codel_dequeue call.
func (c *schedQueue) Now() Time {
	c.ctx.Work(qdisc.WorkTstamp, 1)
	return GetTime(int64(c.ctx.Now()))
}

// qopt is the TCA_CODEL_* attributes tc sends (codel_parse_opt): limit,
// target and interval only when given and not 0, ce_threshold when
// given and not ~0U, ecn when ecn or noecn was given.
type qopt struct {
	limit, target, interval, ceThreshold qdisc.Attr[uint32]
	ecn                                  qdisc.Attr[bool]
}

// usage is q_codel.c's explain(), on one line.
const usage = "Usage: ... codel [ limit PACKETS ] [ target TIME ] [ interval TIME ] [ ecn | noecn ] [ ce_threshold TIME ]"

// parse is codel_parse_opt, in its messages: `Illegal "limit"` for a
// value get_unsigned or get_time refuses, `What is "x"?` for a word it
// does not know.
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("codel", args)
	times := map[string]*qdisc.Attr[uint32]{"target": &o.target, "interval": &o.interval, "ce_threshold": &o.ceThreshold}
	for k := a.Next(); k != ""; k = a.Next() {
		switch {
		case k == "limit" || times[k] != nil:
			v, err := a.Value(k)
			if err != nil {
				return o, err
			}
			var n uint32
			if k == "limit" {
				n, err = units.GetUnsigned(v, 0)
				o.limit.Put(n)
			} else {
				n, err = units.GetTime(v)
				times[k].Put(n)
			}
			if err != nil {
				return o, qdisc.Parsef("codel", "Illegal %q: %v", k, err)
			}
		case k == "ecn" || k == "noecn":
			o.ecn.Put(k == "ecn")
		case k == "help":
			return o, qdisc.Parsef("codel", "%s", usage)
		default:
			return o, qdisc.Parsef("codel", "What is %q? %s", k, usage)
		}
	}
	for _, at := range []*qdisc.Attr[uint32]{&o.limit, &o.target, &o.interval} {
		at.Set = at.Set && at.V != 0
	}
	o.ceThreshold.Set = o.ceThreshold.Set && o.ceThreshold.V != math.MaxUint32
	return o, nil
}

// apply is codel_change's settings: times in us to codel time
// ((u64)us * NSEC_PER_USEC >> CODEL_SHIFT, kept in a u32).
func (q *Sched) apply(o qopt) {
	if o.target.Set {
		q.params.Target = US2Time(uint64(o.target.V))
	}
	if o.ceThreshold.Set {
		q.params.CEThreshold = US2Time(uint64(o.ceThreshold.V))
	}
	if o.interval.Set {
		q.params.Interval = US2Time(uint64(o.interval.V))
	}
	if o.limit.Set {
		q.limit = o.limit.V
	}
	if o.ecn.Set {
		q.params.ECN = o.ecn.V
	}
}

// Init implements qdisc.Qdisc (codel_init): limit 1000, codel's default
// parameters (ECN off, unlike fq_codel), mtu psched_mtu clamped to
// [256, 1 << 20], then codel_change. CAN_BYPASS is set here only, with
// a limit of at least 1; TCQ_F_DEQUEUE_DROPS always.
func (q *Sched) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	*q = Sched{limit: defaultLimit, params: ParamsInit()}
	q.params.MTU = uint32(min(max(s.MTU, 256), 1<<20))
	q.apply(o)
	q.cq.q = q
	q.flags = qdisc.DequeueDrops
	if q.limit >= 1 {
		q.flags |= qdisc.CanBypass
	}
	return q.info(), nil
}

func (q *Sched) info() qdisc.Info {
	return qdisc.Info{Flags: q.flags, Limit: int(min(q.limit, math.MaxInt32))}
}

// Change implements qdisc.Changer (codel_change): the options given,
// then the head dropped until the queue is within the limit, the peeked
// packet first (qdisc_dequeue_internal), each with rtnl_qdisc_drop: a
// counted drop, freed as NOT_SPECIFIED. It leaves CAN_BYPASS as init set it.
func (q *Sched) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	q.apply(o)
	for uint64(q.qlen()) > uint64(q.limit) {
		var it Item
		if q.hasPeeked {
			it, q.hasPeeked = q.peeked, false
		} else {
			it = q.q.PopHead()
		}
		q.backlog -= it.Pkt.Len
		q.drops++
		ctx.Drop(it.Pkt.Handle, skb.DropNotSpecified)
	}
	return q.info(), nil
}

// qlen is sch->q.qlen: the queue and the peeked packet.
func (q *Sched) qlen() int {
	if q.hasPeeked {
		return q.q.Len() + 1
	}
	return q.q.Len()
}

// Enqueue implements qdisc.Qdisc (codel_qdisc_enqueue for each packet):
// below the limit the packet is stamped (codel_set_enqueue_time) and
// queued; at it, dropped as QDISC_OVERLIMIT and counted in
// drop_overlimit.
func (q *Sched) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.now = GetTime(int64(ctx.Now()))
	for i, p := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		if uint64(q.qlen()) < uint64(q.limit) {
			ctx.Work(qdisc.WorkTstamp, 1)
			q.q.PushTail(Item{Pkt: p, EnqueueTime: GetTime(int64(ctx.Now()))})
			q.backlog += p.Len
			rc[i] = qdisc.XmitSuccess
			continue
		}
		q.dropOverlimit++
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscOverlimit)
		rc[i] = qdisc.XmitDrop
	}
}

// dequeue is __codel_qdisc_dequeue: codel_dequeue over the queue, with
// the qdisc-wide backlog. Its drop_count and drop_len feed
// qdisc_tree_reduce_backlog for the parents (codel_dequeue_drop); the
// host tracks that itself.
func (q *Sched) dequeue(ctx qdisc.Ctx) (Item, bool) {
	q.cq.ctx = ctx
	it, ok := Dequeue(&q.cq, &q.backlog, &q.params, &q.vars, &q.stats)
	q.cq.ctx = nil
	q.now = GetTime(int64(ctx.Now()))
	q.stats.DropCount, q.stats.DropLen = 0, 0
	return it, ok
}

// next is the next packet to send, the peeked one first
// (qdisc_dequeue_peeked).
func (q *Sched) next(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.hasPeeked {
		q.hasPeeked = false
		q.backlog -= q.peeked.Pkt.Len
		return q.peeked.Pkt, true
	}
	it, ok := q.dequeue(ctx)
	return it.Pkt, ok
}

// Dequeue implements qdisc.Qdisc: a bulk of codel_qdisc_dequeue calls.
// An empty dequeue is not a no-op: codel_dequeue leaves the dropping
// state on it (so the qdisc does not declare EmptyNoop).
func (q *Sched) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.next(ctx) })
}

// Peek implements qdisc.Peeker (codel_peek): run CoDel for the next
// packet and keep it, still counted in qlen and backlog.
func (q *Sched) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	if !q.hasPeeked {
		it, ok := q.dequeue(ctx)
		if !ok {
			return skb.Packet{}, false
		}
		q.peeked, q.hasPeeked = it, true
		q.backlog += it.Pkt.Len
	}
	return q.peeked.Pkt, true
}

// Reset implements qdisc.Resetter (codel_reset and qdisc_reset's purge
// of the peeked packet): the queue purged, codel_vars_init.
func (q *Sched) Reset(ctx qdisc.Ctx) {
	if q.hasPeeked {
		ctx.Drop(q.peeked.Pkt.Handle, skb.DropQueuePurge)
		q.hasPeeked = false
	}
	for q.q.Len() > 0 {
		ctx.Drop(q.q.PopHead().Pkt.Handle, skb.DropNotSpecified)
	}
	q.backlog = 0
	q.vars = Vars{}
}

// Stats implements qdisc.Qdisc, with codel_dump_stats' tc_codel_xstats
// in q_codel.c's order. ldelay and drop_next are in us, as the kernel
// dumps them; drop_next counts from the last call's time and is 0 out
// of the dropping state. codel counts no overlimits.
func (q *Sched) Stats() qdisc.Stats {
	var dropNext int64
	if q.vars.Dropping {
		delta := int32(q.vars.DropNext - q.now)
		if delta >= 0 {
			dropNext = int64(ToUs(Time(delta)))
		} else {
			dropNext = -int64(ToUs(Time(-delta)))
		}
	}
	dropping := int64(0)
	if q.vars.Dropping {
		dropping = 1
	}
	return qdisc.Stats{Qlen: q.qlen(), Backlog: int64(q.backlog), Drops: q.drops, XStats: []qdisc.XStat{
		qdisc.XUint("count", uint64(q.vars.Count)),
		qdisc.XUint("lastcount", uint64(q.vars.LastCount)),
		qdisc.XUint("ldelay", uint64(ToUs(q.vars.LDelay))),
		qdisc.XInt("dropping", dropping),
		qdisc.XInt("drop_next", dropNext),
		qdisc.XUint("maxpacket", uint64(q.stats.MaxPacket)),
		qdisc.XUint("ecn_mark", uint64(q.stats.ECNMark)),
		qdisc.XUint("drop_overlimit", uint64(q.dropOverlimit)),
		qdisc.XUint("ce_mark", uint64(q.stats.CEMark)),
	}}
}

// Dump implements qdisc.Qdisc: codel_dump as q_codel.c's print_opt
// prints it, the spaces it leaves included.
func (q *Sched) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %dp target %s ", q.limit, units.SprintTime(ToUs(q.params.Target)))
	if q.params.CEThreshold != DisabledThreshold {
		fmt.Fprintf(&b, "ce_threshold %s ", units.SprintTime(ToUs(q.params.CEThreshold)))
	}
	fmt.Fprintf(&b, "interval %s ", units.SprintTime(ToUs(q.params.Interval)))
	if q.params.ECN {
		b.WriteString("ecn ")
	}
	return b.String()
}
