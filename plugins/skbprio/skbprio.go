// Package skbprio is the kernel's SKB priority queue
// (net/sched/sch_skbprio.c): 64 FIFOs by skb->priority (63 and above
// share the last), served highest first; when the qdisc holds `limit`
// packets an arrival of higher priority than the lowest held pushes the
// lowest queue's tail packet out, and one of the lowest priority or
// below is dropped itself.
package skbprio

import (
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("skbprio", "64 FIFOs by skb->priority, highest first; when full the lowest priority's tail is dropped (sch_skbprio.c)",
		func() qdisc.Qdisc { return &SKBPrio{} })
}

// maxPriority is SKBPRIO_MAX_PRIORITY.
const maxPriority = 64

// SKBPrio is struct skbprio_sched_data.
type SKBPrio struct {
	queues          [maxPriority]qdisc.Ring[skb.Packet]
	highest, lowest int
	limit           uint32 // sch->limit
	qlen            int
	backlog         int64
	drops           uint64
}

// parse is skbprio_parse_opt: "limit N" (a size word, as tc reads it);
// ok says tc sends options at all.
func parse(args []string) (limit uint32, ok bool, err error) {
	a := qdisc.NewArgs("skbprio", args)
	for k := a.Next(); k != ""; k = a.Next() {
		switch k {
		case "limit":
			v, err := a.Value(k)
			if err != nil {
				return 0, false, err
			}
			n, err := units.GetSize(v)
			if err != nil {
				return 0, false, qdisc.Parsef("skbprio", `skbprio: Illegal "limit" value:%q`, v)
			}
			limit, ok = n, true
		case "help":
			return 0, false, qdisc.Parsef("skbprio", "Usage: ... <skbprio> [ limit NUMBER ]")
		default:
			return 0, false, qdisc.Parsef("skbprio", "skbprio: unknown parameter %q", k)
		}
	}
	return limit, ok, nil
}

// Init implements qdisc.Qdisc (skbprio_init: a limit of 64 packets
// unless one is given).
func (q *SKBPrio) Init(ctx qdisc.Ctx, _ qdisc.Setup, args []string) (qdisc.Info, error) {
	*q = SKBPrio{highest: 0, lowest: maxPriority - 1, limit: 64}
	return q.Change(ctx, args)
}

func (q *SKBPrio) info() qdisc.Info {
	return qdisc.Info{Flags: qdisc.EmptyNoop, Limit: int(min(q.limit, 1<<31-1))}
}

// Change implements qdisc.Changer (skbprio_change: the limit; packets
// above it stay queued).
func (q *SKBPrio) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	limit, ok, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if ok {
		q.limit = limit
	}
	return q.info(), nil
}

// calcNewHigh is calc_new_high_prio.
func (q *SKBPrio) calcNewHigh() int {
	for p := q.highest - 1; p >= q.lowest; p-- {
		if q.queues[p].Len() > 0 {
			return p
		}
	}
	return 0
}

// calcNewLow is calc_new_low_prio.
func (q *SKBPrio) calcNewLow() int {
	for p := q.lowest + 1; p <= q.highest; p++ {
		if q.queues[p].Len() > 0 {
			return p
		}
	}
	return maxPriority - 1
}

// Enqueue implements qdisc.Qdisc (skbprio_enqueue for each packet).
func (q *SKBPrio) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		rc[i] = q.enqueue(ctx, &batch[i])
	}
}

func (q *SKBPrio) enqueue(ctx qdisc.Ctx, p *skb.Packet) qdisc.Code {
	ctx.Work(qdisc.WorkEnqueue, 1)
	prio := int(min(p.Priority, maxPriority-1))
	if uint32(q.qlen) < q.limit {
		q.queues[prio].PushTail(*p)
		q.backlog += int64(p.Len)
		q.highest, q.lowest = max(q.highest, prio), min(q.lowest, prio)
		q.qlen++
		return qdisc.XmitSuccess
	}
	lp := q.lowest
	if prio <= lp { // the lowest priority: this packet goes
		q.drops++
		ctx.Drop(p.Handle, skb.DropQdiscDrop)
		return qdisc.XmitDrop
	}
	q.queues[prio].PushTail(*p)
	q.backlog += int64(p.Len)
	// the lowest priority queue's tail goes
	d := q.queues[lp].PopTail()
	q.backlog -= int64(d.Len)
	q.drops++
	ctx.Drop(d.Handle, skb.DropQdiscDrop)
	if q.queues[lp].Len() == 0 {
		if q.lowest == q.highest {
			q.lowest, q.highest = prio, prio
		} else {
			q.lowest = q.calcNewLow()
		}
	}
	q.highest = max(q.highest, prio)
	return qdisc.XmitCN
}

// Dequeue implements qdisc.Qdisc (skbprio_dequeue: the highest
// priority queue's head).
func (q *SKBPrio) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		hp := &q.queues[q.highest]
		if hp.Len() == 0 {
			return skb.Packet{}, false
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		p := hp.PopHead()
		q.qlen--
		q.backlog -= int64(p.Len)
		if hp.Len() == 0 {
			if q.lowest == q.highest {
				q.highest, q.lowest = 0, maxPriority-1
			} else {
				q.highest = q.calcNewHigh()
			}
		}
		return p, true
	})
}

// Reset implements qdisc.Resetter (skbprio_reset: __skb_queue_purge of
// every queue, QUEUE_PURGE).
func (q *SKBPrio) Reset(ctx qdisc.Ctx) {
	for i := range q.queues {
		for q.queues[i].Len() > 0 {
			ctx.Drop(q.queues[i].PopHead().Handle, skb.DropQueuePurge)
		}
	}
	q.qlen, q.backlog = 0, 0
	q.highest, q.lowest = 0, maxPriority-1
}

// Stats implements qdisc.Qdisc.
func (q *SKBPrio) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.qlen, Backlog: q.backlog, Drops: q.drops}
}

// Dump implements qdisc.Qdisc: skbprio_dump as skbprio_print_opt
// prints it.
func (q *SKBPrio) Dump() string { return fmt.Sprintf("limit %d ", q.limit) }
