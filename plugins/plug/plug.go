// Package plug is the kernel's plug qdisc (net/sched/sch_plug.c): a
// byte-limited FIFO that holds its packets until told to let them go,
// as checkpointing (Remus, COLO) and tests of bursts use it. `tc qdisc
// change ... plug block` closes an epoch (its packets wait), `release`
// lets the packets of the last closed epoch go, `release_indefinite`
// lets everything through until the next block, and `limit` sets the
// byte limit. It starts plugged.
package plug

import (
	"math"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("plug", "a byte FIFO that holds packets until tc releases them: block, release, release_indefinite (sch_plug.c)",
		func() qdisc.Qdisc { return &Plug{} })
}

// The actions of struct tc_plug_qopt (TCQ_PLUG_*).
const (
	actBuffer            = iota // TCQ_PLUG_BUFFER: "block"
	actReleaseOne               // TCQ_PLUG_RELEASE_ONE: "release"
	actReleaseIndefinite        // TCQ_PLUG_RELEASE_INDEFINITE
	actLimit                    // TCQ_PLUG_LIMIT
)

// Plug is struct plug_sched_data with its queue (sch->q).
type Plug struct {
	q        qdisc.Ring[skb.Packet]
	backlog  uint64
	drops    uint64
	limit    uint32 // bytes
	throttle bool   // throttled
	// unplugIndefinite: a pass-through queue until the next block
	unplugIndefinite                       bool
	pktsCurrentEpoch, pktsLastEpoch, toRel uint32
}

// qopt is struct tc_plug_qopt as plug_parse_opt sends it: sent only
// when a word was given (ok), the last action word winning.
type qopt struct {
	ok     bool
	action int
	limit  uint32
}

// parse is plug_parse_opt.
func parse(args []string) (qopt, error) {
	var o qopt
	a := qdisc.NewArgs("plug", args)
	for k := a.Next(); k != ""; k = a.Next() {
		switch k {
		case "block":
			o.action = actBuffer
		case "release":
			o.action = actReleaseOne
		case "release_indefinite":
			o.action = actReleaseIndefinite
		case "limit":
			v, err := a.Value(k)
			if err != nil {
				return o, err
			}
			n, err := units.GetSize(v)
			if err != nil {
				return o, qdisc.Parsef("plug", "Illegal value for \"limit\": %q", v)
			}
			o.action, o.limit = actLimit, n
		case "help":
			return o, qdisc.Parsef("plug", "Usage: ... plug [block | release | release_indefinite | limit NUMBER]")
		default:
			return o, qdisc.Parsef("plug", "plug: unknown parameter %q", k)
		}
		o.ok = true
	}
	return o, nil
}

// Init implements qdisc.Qdisc (plug_init): plugged; the limit is the
// one sent (whatever the action: "plug block" makes it 0), else
// tx_queue_len packets of psched_mtu bytes.
func (q *Plug) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	*q = Plug{throttle: true}
	if o.ok {
		q.limit = o.limit
	} else {
		q.limit = uint32(min(uint64(s.TxQueueLen)*uint64(max(s.MTU, 0)), math.MaxUint32))
	}
	return qdisc.Info{}, nil
}

// Change implements qdisc.Changer (plug_change). Without words tc sends
// no options and qdisc_change calls nothing.
func (q *Plug) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil || !o.ok {
		return qdisc.Info{}, err
	}
	switch o.action {
	case actBuffer:
		// the epoch so far is closed; its packets wait for a release
		q.pktsLastEpoch, q.pktsCurrentEpoch = q.pktsCurrentEpoch, 0
		if q.unplugIndefinite {
			q.throttle = true
		}
		q.unplugIndefinite = false
	case actReleaseOne:
		q.toRel += q.pktsLastEpoch
		q.pktsLastEpoch = 0
		q.throttle = false
		ctx.Watchdog(ctx.Now()) // netif_schedule_queue
	case actReleaseIndefinite:
		q.unplugIndefinite = true
		q.toRel, q.pktsLastEpoch, q.pktsCurrentEpoch = 0, 0, 0
		q.throttle = false
		ctx.Watchdog(ctx.Now())
	case actLimit:
		q.limit = o.limit
	}
	return qdisc.Info{}, nil
}

// Enqueue implements qdisc.Qdisc (plug_enqueue for each packet): within
// the byte limit (by skb->len), the packet joins the current epoch.
func (q *Plug) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		p := &batch[i]
		if q.backlog+uint64(p.Len) > uint64(q.limit) {
			q.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitDrop
			continue
		}
		if !q.unplugIndefinite {
			q.pktsCurrentEpoch++
		}
		q.q.PushTail(*p)
		q.backlog += uint64(p.Len)
		rc[i] = qdisc.XmitSuccess
	}
}

// plugDequeue is plug_dequeue: nothing while throttled (no watchdog: a
// release reschedules the queue); past the released packets it
// throttles itself. A release counts packets, so one that finds the
// queue empty (a reset purged it) still spends one.
func (q *Plug) plugDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	if q.throttle {
		return skb.Packet{}, false
	}
	if !q.unplugIndefinite {
		if q.toRel == 0 {
			q.throttle = true
			return skb.Packet{}, false
		}
		q.toRel--
	}
	if q.q.Len() == 0 {
		return skb.Packet{}, false
	}
	ctx.Work(qdisc.WorkDequeue, 1)
	p := q.q.PopHead()
	q.backlog -= uint64(p.Len)
	return p, true
}

// Dequeue implements qdisc.Qdisc.
func (q *Plug) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.plugDequeue(ctx) })
}

// Reset implements qdisc.Resetter (qdisc_reset_queue: the epochs stay).
func (q *Plug) Reset(ctx qdisc.Ctx) {
	for q.q.Len() > 0 {
		ctx.Drop(q.q.PopHead().Handle, skb.DropNotSpecified)
	}
	q.backlog = 0
}

// Stats implements qdisc.Qdisc.
func (q *Plug) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.q.Len(), Backlog: int64(q.backlog), Drops: q.drops}
}

// Dump implements qdisc.Qdisc: sch_plug has no dump op.
func (q *Plug) Dump() string { return "" }
