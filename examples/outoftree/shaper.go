// Command txlab-qdisc-shaper is a qdisc plugin built outside the txlab
// repository, as an author would build one: a token-bucket shaper (the
// idea of the kernel's sch_tbf.c, much simplified). It shows the parts
// of the contract a shaper needs: the link speed from Setup, a watchdog
// armed for when the next packet may leave, a byte limit reported as
// sch->limit, typed statistics and a drop reason of its own.
//
//	go build -o txlab-qdisc-shaper .
//	txlab plugin test ./txlab-qdisc-shaper --args "rate 100mbit burst 16kb limit 64kb"
package main

import (
	"fmt"

	"github.com/txlab/txlab/framework/plugin/sdk"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func main() { sdk.ServeQdisc(New) }

// New makes a shaper; Init configures it.
func New() qdisc.Qdisc { return &Shaper{} }

// dropBacklog is this qdisc's own drop reason: the byte limit was hit.
const dropBacklog skb.DropReason = "SHAPER_BACKLOG"

// Shaper sends at most rate bits/s, with bursts of up to burst bytes,
// and holds at most limit bytes.
type Shaper struct {
	q       qdisc.Ring[skb.Packet]
	backlog int64
	rateBps int64    // bits/s
	burst   int64    // bytes
	limit   int64    // bytes
	tokens  sim.Time // transmission time in hand, at most burst's worth
	last    sim.Time // when tokens were last refilled
	drops   uint64
	over    uint64
}

// Kind and Help name it in `txlab plugin list`.
func (*Shaper) Kind() string { return "shaper" }
func (*Shaper) Help() string {
	return "token-bucket shaper: rate RATE burst SIZE limit SIZE (an out-of-tree example)"
}

// Init parses "rate 100mbit burst 16kb limit 64kb" with tc's own readers
// (qdisc.Args: get_rate64, get_size), as tc's q_tbf.c reads them. The
// rate defaults to the link speed, the burst to two MTUs, the limit to
// 100 ms at the rate. Errors carry tc's classes: Args' are parse errors,
// a request the kernel would refuse is qdisc.Refusef.
func (s *Shaper) Init(ctx qdisc.Ctx, st qdisc.Setup, args []string) (qdisc.Info, error) {
	*s = Shaper{rateBps: st.RateBps, burst: 2 * int64(st.MTU)}
	a := qdisc.NewArgs("shaper", args)
	for k := a.Next(); k != ""; k = a.Next() {
		switch k {
		case "rate":
			r, err := a.Rate64(k) // bytes/s
			if err != nil {
				return qdisc.Info{}, err
			}
			if r > maxRate {
				return qdisc.Info{}, qdisc.Parsef("shaper", "rate %s is above %s", units.SprintRate(r), units.SprintRate(maxRate))
			}
			s.rateBps = int64(r) * 8
		case "burst", "limit":
			n, err := a.Size(k)
			if err != nil {
				return qdisc.Info{}, err
			}
			if k == "burst" {
				s.burst = int64(n)
			} else {
				s.limit = int64(n)
			}
		default:
			return qdisc.Info{}, a.Unknown(k, "rate", "burst", "limit")
		}
	}
	if s.rateBps <= 0 || s.burst <= 0 {
		return qdisc.Info{}, qdisc.Refusef("shaper", "rate and burst must be positive (no link speed to default to?)")
	}
	if s.limit == 0 {
		s.limit = s.rateBps / 8 / 10
	}
	s.tokens, s.last = s.txTime(s.burst), ctx.Now()
	// A byte-limited qdisc reports its byte limit as sch->limit, as bfifo
	// does; the llist defer bound reads it.
	return qdisc.Info{Limit: int(min(s.limit, 1<<31-1)), DropReasons: []skb.DropReason{dropBacklog}}, nil
}

// txTime is how long bytes take at the rate.
func (s *Shaper) txTime(bytes int64) sim.Time {
	return sim.Time(bytes * 8 * int64(sim.Second) / s.rateBps)
}

// Enqueue tail-drops over the byte limit.
func (s *Shaper) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i, p := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		if s.backlog+int64(p.Len) > s.limit {
			s.drops++
			ctx.Drop(p.Handle, dropBacklog)
			rc[i] = qdisc.XmitDrop
			continue
		}
		s.q.PushTail(p)
		s.backlog += int64(p.Len)
	}
}

// Dequeue sends while the tokens cover the head packet; when they do
// not, it arms the watchdog for when they will (or the host would never
// come back).
func (s *Shaper) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	if s.q.Len() == 0 {
		return out
	}
	ctx.Work(qdisc.WorkTstamp, 1) // ktime_get_ns()
	now := ctx.Now()
	s.tokens = min(s.tokens+now-s.last, s.txTime(s.burst))
	s.last = now
	var bytes int64
	for n := 0; n < max(req.Max, 1) && s.q.Len() > 0 && (n == 0 || bytes < req.Bytes); n++ {
		need := s.txTime(int64(s.q.Head().Len))
		if s.tokens < need {
			s.over++
			ctx.Watchdog(now + need - s.tokens)
			break
		}
		ctx.Work(qdisc.WorkDequeue, 1)
		p := s.q.PopHead()
		s.tokens -= need
		s.backlog -= int64(p.Len)
		bytes += int64(p.Len)
		out = append(out, p)
	}
	return out
}

// Reset drops everything held (qdisc_reset); no Peek: the host's
// qdisc_peek_dequeued stands in.
func (s *Shaper) Reset(ctx qdisc.Ctx) {
	for s.q.Len() > 0 {
		p := s.q.PopHead()
		s.backlog -= int64(p.Len)
		ctx.Drop(p.Handle, skb.DropNotSpecified)
	}
	ctx.CancelWatchdog()
}

// Stats reports typed statistics: tc prints the rate, size and time in
// its units, the JSON report keeps the numbers.
func (s *Shaper) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: s.q.Len(), Backlog: s.backlog, Drops: s.drops, Overlimits: s.over, XStats: []qdisc.XStat{
		qdisc.XRate("rate", uint64(s.rateBps/8)),
		qdisc.XSize("burst", uint64(s.burst)),
		qdisc.XTime("tokens", s.tokens),
	}}
}

// Dump is the option part of tc -d qdisc show, in tc's units.
func (s *Shaper) Dump() string {
	return fmt.Sprintf("rate %s burst %s limit %s", units.SprintRate(uint64(s.rateBps/8)),
		units.SprintSize(uint64(s.burst)), units.SprintSize(uint64(s.limit)))
}

// maxRate bounds the rate, in bytes/s, so that bits/s fit an int64 with
// room: 1 Pbit/s.
const maxRate = 1e15 / 8
