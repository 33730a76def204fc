// Package path is the network between the modelled host and the hosts
// it talks to: two one-way links (up, from the host's wire to the
// receiver; down, back), each with a propagation delay (half the base
// RTT), an optional bottleneck rate with a queue in front of it, and an
// optional random loss. The queue is a FIFO of a bounded number of
// packets (a router's tail-drop pfifo), or a qdisc in tc words run by
// the router (router.go). Everything runs in engine context: packets
// are delivered by events at their arrival time. Nothing here costs
// CPU: only the modelled host has CPUs.
package path

import (
	"fmt"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// Config describes the path.
type Config struct {
	// RTT is the base round-trip time: each direction delays by RTT/2.
	RTT sim.Time
	// RateBps is the bottleneck's rate in bits/s (0: none, every packet
	// goes straight through after the delay); DownRateBps, if set, is
	// the down link's (an asymmetric path), else RateBps is both.
	RateBps     int64
	DownRateBps int64
	// Limit is the packets the bottleneck's FIFO holds waiting, as a
	// router's pfifo limit: its qlen leaves out the packet on the wire
	// (dequeued to the device), so limit+1 are held in all; more are
	// dropped at its tail.
	Limit int
	// Loss is the probability that a packet is lost, each direction.
	Loss float64
	// Qdisc, if set, replaces the FIFO: the bottleneck router runs
	// this qdisc (tc words, a built-in kind) in each direction.
	Qdisc []string
}

// DownRate is the down link's rate.
func (c Config) DownRate() int64 {
	if c.DownRateBps != 0 {
		return c.DownRateBps
	}
	return c.RateBps
}

// DefaultLimit is a bottleneck FIFO's default size: txqueuelen, 1000.
const DefaultLimit = 1000

// Validate checks a path.
func (c Config) Validate() error {
	switch {
	case c.RTT <= 0:
		return fmt.Errorf("path: RTT must be > 0, got %v", c.RTT)
	case c.RateBps < 0 || c.DownRateBps < 0:
		return fmt.Errorf("path: rates must be > 0, got %d and %d", c.RateBps, c.DownRateBps)
	case c.Limit < 1:
		return fmt.Errorf("path: limit must be >= 1 packet, got %d", c.Limit)
	case !(c.Loss >= 0 && c.Loss < 1):
		return fmt.Errorf("path: loss must be in [0, 1), got %v", c.Loss)
	case len(c.Qdisc) > 0 && (c.RateBps == 0 || c.DownRate() == 0):
		return fmt.Errorf("path: a qdisc on the path needs a bottleneck rate to queue in front of")
	}
	return nil
}

// Stats are one link's counters.
type Stats struct {
	Sent      uint64 // packets handed to the link
	Delivered uint64 // packets that arrived
	Dropped   uint64 // dropped by the bottleneck's queue (tail drops, or the qdisc's)
	Lost      uint64 // random losses
	Marked    uint64 // CE-marked by the bottleneck's qdisc
	Bytes     uint64 // L2 bytes delivered
	MaxQueue  int    // the most packets the queue held
}

// InFlight is the packets sent and neither delivered nor dropped.
func (s Stats) InFlight() uint64 { return s.Sent - s.Delivered - s.Dropped - s.Lost }

// Pkt is a packet on the path: what a router's qdisc may look at, and
// what to do when it arrives (with its ECN field as the path left it):
// To's Arrive, or else Deliver. To with the TCP segment or ACK carried
// in the packet costs no allocation per packet; Deliver is a closure.
type Pkt struct {
	Len     uint32 // L2 bytes, no FCS
	Keys    skb.FlowKeys
	Hash    uint32
	DSCP    uint8
	ECN     uint8
	To      Arriver
	Seg     tcp.Seg // a TCP segment's (for To)
	Ack     tcp.Ack // an ACK's (for To)
	Deliver func(ecn uint8)
	// RxStamp is skb->tstamp as the host's receive took it on arrival,
	// before any queue (veth's netif_rx: net_timestamp_check), for a
	// probe's SO_TIMESTAMP; 0: not stamped there (a NIC's is taken in
	// the NAPI poll).
	RxStamp sim.Time
}

// Arriver is where a packet goes at the end of a link: Arrive runs in
// engine context at its arrival, with p as the path left it.
type Arriver interface {
	Arrive(p Pkt)
}

// Link is one direction of the path.
type Link struct {
	e       *sim.Engine
	delay   sim.Time
	limit   int
	loss    float64
	rng     *sim.Rand
	last    sim.Time
	wire    driver.Wire // the bottleneck's rate and serialisation (RateBps 0: none)
	departs []sim.Time  // departure times of the packets in the FIFO, in order
	head    int
	router  *router
	// inFlight are the packets scheduled to arrive, in arrival order
	// (a link is a FIFO): each arrival event takes the head, so no
	// event needs a closure of its own. lastArrive is the latest.
	inFlight   sim.Fifo[Pkt]
	lastArrive sim.Time
	arriveHead func()
	Stats
}

// Path is the two links.
type Path struct {
	Config
	Up, Down *Link
}

// New makes the path on engine e; each link draws its losses from its
// own stream. A qdisc on the path is made and initialised here (its
// options' errors are returned).
func New(e *sim.Engine, c Config) (*Path, error) {
	p := &Path{Config: c}
	for _, l := range []struct {
		name string
		rate int64
		dst  **Link
	}{{"up", c.RateBps, &p.Up}, {"down", c.DownRate(), &p.Down}} {
		k := &Link{e: e, delay: c.RTT / 2, wire: driver.Wire{RateBps: l.rate}, limit: c.Limit, loss: c.Loss, rng: e.Rand("path/" + l.name)}
		k.arriveHead = k.deliverHead
		if len(c.Qdisc) > 0 {
			r, err := newRouter(e, k, l.name, c.Qdisc)
			if err != nil {
				return nil, err
			}
			k.router = r
		}
		*l.dst = k
	}
	return p, nil
}

// queued is the FIFO's length at t (packets not yet fully sent).
func (l *Link) queued(t sim.Time) int {
	for l.head < len(l.departs) && l.departs[l.head] <= t {
		l.head++
	}
	if l.head > 1024 && l.head > len(l.departs)/2 {
		l.departs = append(l.departs[:0], l.departs[l.head:]...)
		l.head = 0
	}
	return len(l.departs) - l.head
}

// Send hands the link a packet at time t; p.Deliver runs in engine
// context when it arrives. It reports false if the packet was lost or
// dropped on the way in. Calls should come in time order (they are
// serialised in call order otherwise).
func (l *Link) Send(t sim.Time, p Pkt) bool {
	t = max(t, l.last)
	l.last = t
	l.Sent++
	if l.loss > 0 && l.rng.Float64() < l.loss {
		l.Lost++
		return false
	}
	if l.router != nil {
		return l.router.enqueue(t, p)
	}
	arrive := t
	if l.wire.RateBps > 0 {
		n := l.queued(t) // the one on the wire included
		if n > l.limit {
			l.Dropped++
			return false
		}
		done := l.wire.Send(t, p.Len)
		l.departs = append(l.departs, done)
		l.MaxQueue = max(l.MaxQueue, n+1)
		arrive = done
	}
	l.arrive(arrive+l.delay, p)
	return true
}

// arrive schedules p's delivery at. Arrivals come in time order (the
// wire and the delay are FIFO), so p joins inFlight and one event per
// packet, made without a closure, delivers the head; one that would
// overtake (never on a FIFO link) gets a closure of its own.
func (l *Link) arrive(at sim.Time, p Pkt) {
	at = max(at, l.e.Now()) // as Engine.At
	if at < l.lastArrive {
		l.arriveLate(at, p)
		return
	}
	l.lastArrive = at
	l.inFlight.Push(p)
	l.e.At(at, l.arriveHead)
}

// arriveLate schedules p's delivery at with a closure (apart, so that p
// moves to the heap only here).
func (l *Link) arriveLate(at sim.Time, p Pkt) {
	l.e.At(at, func() { l.deliver(p) })
}

// deliverHead delivers the packet at the head of inFlight.
func (l *Link) deliverHead() {
	l.deliver(l.inFlight.Pop())
}

// deliver counts p delivered and hands it on.
func (l *Link) deliver(p Pkt) {
	l.Delivered++
	l.Bytes += uint64(p.Len)
	if p.To != nil {
		p.To.Arrive(p)
		return
	}
	p.Deliver(p.ECN)
}

// Queue is the bottleneck queue's length now.
func (l *Link) Queue(now sim.Time) int {
	if l.router != nil {
		return l.router.ops.Stats().Qlen
	}
	return l.queued(now)
}

// QdiscDrops are the router qdisc's drops by reason (nil without one).
func (l *Link) QdiscDrops() map[skb.DropReason]uint64 {
	if l.router == nil {
		return nil
	}
	return l.router.Drops
}
