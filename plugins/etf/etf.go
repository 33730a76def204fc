// Package etf is the kernel's etf qdisc (net/sched/sch_etf.c), Earliest
// TxTime First, its software path: packets of sockets with SO_TXTIME
// kept in the order of their transmit times (skb->tstamp, CLOCK_TAI),
// each released delta before its time by the watchdog, those whose time
// has passed dropped. TSN setups put it on an mqprio or taprio queue.
//
// Not modelled: offload (the NIC's launch time), the socket error queue
// (report_sock_error: the model's sockets read no error queue).
package etf

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("etf", "Earliest TxTime First: packets of SO_TXTIME sockets sent in the order of their transmit times, each delta before it, late ones dropped (sch_etf.c)",
		func() qdisc.Qdisc { return &ETF{} })
}

// struct tc_etf_qopt's flags.
const (
	flagDeadline  = 1 << 0 // TC_ETF_DEADLINE_MODE_ON
	flagOffload   = 1 << 1 // TC_ETF_OFFLOAD_ON
	flagSkipCheck = 1 << 2 // TC_ETF_SKIP_SOCK_CHECK
)

// ETF is struct etf_sched_data.
type ETF struct {
	deadline, skipCheck bool
	clockid             int32
	delta               int32
	offset              int64        // CLOCK_TAI less the monotonic clock (ktime_get_clocktai)
	last                int64        // the txtime of the last packet sent
	q                   []skb.Packet // the rbtree, in txtime order (equal times in arrival order)
	backlog             int64
	drops, overlimits   uint64
}

// opts is struct tc_etf_qopt as tc's etf_parse_opt fills it.
type opts struct {
	delta   int32
	clockid int32
	flags   uint32
}

// parse is etf_parse_opt.
func parse(args []string) (opts, error) {
	o := opts{clockid: -1} // CLOCKID_INVALID
	errf := func(format string, a ...any) (opts, error) { return o, qdisc.Parsef("etf", format, a...) }
	flag := func(w string, f uint32) error {
		if o.flags&f != 0 {
			return qdisc.Parsef("etf", "duplicate %q specification", w)
		}
		o.flags |= f
		return nil
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", qdisc.Parsef("etf", `%q: Command line is not complete. Try option "help"`, w)
			}
			i++
			return args[i], nil
		}
		var err error
		switch {
		case tc.Matches(w, "offload"):
			err = flag("offload", flagOffload)
		case tc.Matches(w, "deadline_mode"):
			err = flag("deadline_mode", flagDeadline)
		case tc.Matches(w, "delta"):
			var v string
			if v, err = value(); err == nil {
				if o.delta != 0 {
					return errf(`duplicate "delta" specification`)
				}
				n, perr := strconv.ParseInt(v, 0, 32)
				if perr != nil {
					return errf(`illegal value for "delta": %q`, v)
				}
				o.delta = int32(n)
			}
		case tc.Matches(w, "clockid"):
			var v string
			if v, err = value(); err == nil {
				o.clockid, err = qdisc.ParseClockid("etf", o.clockid, v)
			}
		case w == "skip_sock_check":
			err = flag("skip_sock_check", flagSkipCheck)
		case w == "help":
			return errf("help: Usage: ... etf delta NANOS clockid CLOCKID [offload] [deadline_mode]")
		default:
			return errf("unknown parameter %q", w)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// refuse is a refusal of etf_init, as tc prints its extack.
func refuse(msg string) error { return qdisc.Refusef("etf", "Error: %s.", msg) }

// Init implements qdisc.Qdisc (etf_init with validate_input_params).
func (q *ETF) Init(_ qdisc.Ctx, _ qdisc.Setup, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	switch {
	case o.clockid < 0:
		return qdisc.Info{}, refuse("Dynamic clockids are not supported")
	case o.clockid != sim.ClockTAI:
		return qdisc.Info{}, refuse("Invalid clockid. CLOCK_TAI must be used")
	case o.delta < 0:
		return qdisc.Info{}, refuse("Delta must be positive")
	case o.flags&flagOffload != 0:
		return qdisc.Info{}, qdisc.Lacksf("etf", "offload (the NIC's launch time, ndo_setup_tc) is not modelled")
	}
	q.delta, q.clockid = o.delta, o.clockid
	q.deadline, q.skipCheck = o.flags&flagDeadline != 0, o.flags&flagSkipCheck != 0
	off, _ := sim.ClockOffset(int(o.clockid))
	q.offset = int64(off)
	return qdisc.Info{}, nil
}

// now is q->get_time(): ktime_get_clocktai.
func (q *ETF) now(ctx qdisc.Ctx) int64 {
	ctx.Work(qdisc.WorkTstamp, 1)
	return int64(ctx.Now()) + q.offset
}

// isPacketValid is is_packet_valid: the socket set SO_TXTIME on the
// qdisc's clock, in its deadline mode (unless skip_sock_check), and the
// txtime is neither past nor before the last sent.
func (q *ETF) isPacketValid(ctx qdisc.Ctx, p *skb.Packet) bool {
	if !q.skipCheck {
		clockid, ok := p.SockTxtime()
		// a socket of the model never sets SOF_TXTIME_DEADLINE_MODE
		if p.Sock < 0 || !ok || int32(clockid) != q.clockid || q.deadline {
			return false
		}
	}
	now := q.now(ctx)
	t := int64(p.Tstamp)
	return t >= now && t >= q.last
}

// Enqueue implements qdisc.Qdisc (etf_enqueue_timesortedlist).
func (q *ETF) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		p := batch[i]
		if !q.isPacketValid(ctx, &p) {
			q.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitDrop
			continue
		}
		// the rbtree's walk: equal times go right, after the ones there
		at, _ := slices.BinarySearchFunc(q.q, p.Tstamp+1, func(x skb.Packet, t sim.Time) int {
			if x.Tstamp < t {
				return -1
			}
			return 1
		})
		ctx.Work(qdisc.WorkFlowScan, max(1, bitsLen(len(q.q))))
		q.q = slices.Insert(q.q, at, p)
		q.backlog += int64(p.Len)
		rc[i] = qdisc.XmitSuccess
	}
	q.resetWatchdog(ctx)
}

// bitsLen is the rbtree's depth for n nodes, the walk's length.
func bitsLen(n int) int {
	d := 0
	for n > 0 {
		n >>= 1
		d++
	}
	return d
}

// resetWatchdog is reset_watchdog: armed delta before the earliest
// txtime (on CLOCK_TAI, as qdisc_watchdog_init_clockid arms it), or
// cancelled when the queue is empty.
func (q *ETF) resetWatchdog(ctx qdisc.Ctx) {
	if len(q.q) == 0 {
		ctx.CancelWatchdog()
		return
	}
	next := int64(q.q[0].Tstamp) - int64(q.delta)
	ctx.Watchdog(sim.Time(next - q.offset))
}

// etfDequeue is etf_dequeue_timesortedlist: the earliest packet once now
// is within delta of its txtime (at once in deadline mode); the ones
// whose txtime has passed are dropped (timesortedlist_drop).
func (q *ETF) etfDequeue(ctx qdisc.Ctx) (skb.Packet, bool) {
	defer q.resetWatchdog(ctx)
	if len(q.q) == 0 {
		return skb.Packet{}, false
	}
	now := q.now(ctx)
	if int64(q.q[0].Tstamp) < now {
		for len(q.q) > 0 && int64(q.q[0].Tstamp) <= now {
			p := q.q[0]
			q.q = q.q[1:]
			q.backlog -= int64(p.Len)
			q.drops++
			q.overlimits++
			// qdisc_drop into a list kfree_skb_list frees at once
			ctx.DequeueDrop(p.Handle, skb.DropNotSpecified)
		}
		return skb.Packet{}, false
	}
	if !q.deadline && now <= int64(q.q[0].Tstamp)-int64(q.delta) {
		return skb.Packet{}, false
	}
	p := q.q[0]
	q.q = q.q[1:]
	q.backlog -= int64(p.Len)
	q.last = int64(p.Tstamp)
	if q.deadline {
		p.Tstamp = sim.Time(now) // the deadline becomes the send time
	}
	ctx.Work(qdisc.WorkDequeue, 1)
	return p, true
}

// Dequeue implements qdisc.Qdisc.
func (q *ETF) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.etfDequeue(ctx) })
}

// Peek implements qdisc.Peeker (etf_peek_timesortedlist: the earliest
// packet, due or not).
func (q *ETF) Peek(qdisc.Ctx) (skb.Packet, bool) {
	if len(q.q) == 0 {
		return skb.Packet{}, false
	}
	return q.q[0], true
}

// Reset implements qdisc.Resetter (etf_reset).
func (q *ETF) Reset(ctx qdisc.Ctx) {
	ctx.CancelWatchdog()
	for _, p := range q.q {
		ctx.Drop(p.Handle, skb.DropNotSpecified) // rtnl_kfree_skbs
	}
	q.q, q.backlog, q.last = q.q[:0], 0, 0
}

// Stats implements qdisc.Qdisc.
func (q *ETF) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: len(q.q), Backlog: q.backlog, Drops: q.drops, Overlimits: q.overlimits}
}

// Dump implements qdisc.Qdisc: tc's etf_print_opt.
func (q *ETF) Dump() string {
	onOff := func(b bool) string { return map[bool]string{true: "on", false: "off"}[b] }
	return fmt.Sprintf("clockid %s delta %d offload off deadline_mode %s skip_sock_check %s",
		units.ClockName(q.clockid), q.delta, onOff(q.deadline), onOff(q.skipCheck))
}
