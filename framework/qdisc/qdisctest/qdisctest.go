// Package qdisctest is the qdisc conformance suite: any qdisc.Qdisc, built
// in or plugin, must keep its packets straight under it. It runs against a
// fake host context that tracks every handle.
package qdisctest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Ctx is a host context that records what the qdisc does. It is a
// qdisc.Ctx for a qdisc called directly and a host context (a
// wire.QdiscHost) for one behind the plugin boundary. Time moves only
// when the suite (or a test) moves T; work is counted, not charged.
type Ctx struct {
	T        sim.Time
	Spent    int64
	Rng      *rand.Rand
	Seed     sim.Seed
	Dropped  map[skb.Handle]skb.DropReason
	WorkDone [qdisc.NumWork]int
	// WDog is the watchdog's (soft) expiry while WDogArmed (latest
	// call wins); WDogSlack its slack (Ctx.WatchdogRange).
	WDog, WDogSlack sim.Time
	WDogArmed       bool
	// TimerAt is the qdisc timer's expiry while TimerArmed.
	TimerAt    sim.Time
	TimerArmed bool
	// Reasons are the drop reasons the qdisc declared; a drop with any
	// other non-kernel reason panics.
	Reasons []skb.DropReason
	// Dups are the packets the qdisc asked to duplicate (Duplicate)
	// since the suite last took them: it enqueues their clones right
	// after the call, as the host does, marked (Packet.Dup).
	Dups []skb.Handle
	// LineCalls are the qdisc's Ctx.Lines calls, in order.
	LineCalls []LinesCall
	// SiblingReads are the TX queues of the qdisc's Ctx.ReadSibling
	// calls, in order.
	SiblingReads []int
	// TxqStop says which of the device's TX queues are stopped
	// (qdisc.TxqCtx): a test sets it.
	TxqStop map[int]bool
	// Filters are the filters the context classifies with
	// (qdisc.FilterCtx): none unless a test sets them (cls.Load, and
	// SetSeed for cls_flow's hashrnd). The suite sets none.
	Filters *cls.Set
	// Segs are the segment places of the next Enqueue's batch
	// (qdisc.SegCtx), as the host gives a qdisc with SplitGSO; none
	// unless a test sets them.
	Segs []uint16
	// TCP are the TCP headers of the next Enqueue's batch
	// (qdisc.TCPCtx), as the host gives a qdisc with ReadsTCPHeaders;
	// none unless a test sets them.
	TCP []skb.TCPHeader

	// major is the classful qdisc's handle major (its classes').
	major uint16
	// A classful qdisc's leaves (class.go), and the packets handed in
	// (by handle) for its leaves behind the plugin boundary.
	leaves map[qdisc.ClassID]*leafCtx
	pkts   map[skb.Handle]skb.Packet
	// leafDups are the leaves' duplicates since the suite last took
	// them; dupBy is the leaf class of each clone on its way to the
	// root (marked if the root hands it back to that leaf).
	leafDups []leafDup
	dupBy    map[skb.Handle]qdisc.ClassID
}

// NewCtx makes a context at time 0 whose random stream has seed.
func NewCtx(seed uint64) *Ctx {
	sd := sim.Seed{seed, 1}
	return &Ctx{Rng: sim.NewRand(sd), Seed: sd, Dropped: map[skb.Handle]skb.DropReason{}, pkts: map[skb.Handle]skb.Packet{},
		dupBy: map[skb.Handle]qdisc.ClassID{}}
}

func (c *Ctx) Now() sim.Time { return c.T }

// Spend is the boundary applying the time a plugin reported.
func (c *Ctx) Spend(ns int64) { c.Spent += ns }

func (c *Ctx) Work(k qdisc.Work, n int) {
	if k >= qdisc.NumWork || n < 0 {
		panic(fmt.Sprintf("work kind %d x %d", k, n))
	}
	c.WorkDone[k] += n
}

// GSOSegs implements qdisc.SegCtx from Segs.
func (c *Ctx) GSOSegs() []uint16 { return c.Segs }

// TCPHeaders implements qdisc.TCPCtx from TCP.
func (c *Ctx) TCPHeaders() []skb.TCPHeader { return c.TCP }

func (c *Ctx) Rand() uint32         { return c.Rng.Uint32() }
func (c *Ctx) Watchdog(at sim.Time) { c.WatchdogRange(at, 0) }

// WatchdogRange records the soft expiry in WDog and the slack in
// WDogSlack.
func (c *Ctx) WatchdogRange(at, slack sim.Time) {
	c.WDog, c.WDogSlack, c.WDogArmed = at, slack, true
}

func (c *Ctx) CancelWatchdog()        { c.WDogArmed = false }
func (c *Ctx) ModTimer(at sim.Time)   { c.TimerAt, c.TimerArmed = at, true }
func (c *Ctx) DelTimer()              { c.TimerArmed = false }
func (c *Ctx) Duplicate(h skb.Handle) { c.Dups = append(c.Dups, h) }

// Lines counts the per-flow lines the qdisc reported, checking the bound
// the host enforces.
func (c *Ctx) Lines(key uint64, n int) {
	if err := qdisc.CheckLines(key, int64(n)); err != nil {
		panic(&Broken{err.Error()})
	}
	c.LineCalls = append(c.LineCalls, LinesCall{key, n})
}

// ReadSibling records the TX queue whose qdisc the qdisc read.
func (c *Ctx) ReadSibling(txq int) {
	if err := qdisc.CheckSibling(int64(txq)); err != nil {
		panic(&Broken{err.Error()})
	}
	c.SiblingReads = append(c.SiblingReads, txq)
}

// LinesReported sums the lines of every Ctx.Lines call.
func (c *Ctx) LinesReported() int {
	n := 0
	for _, l := range c.LineCalls {
		n += l.N
	}
	return n
}

// LinesCall is one Ctx.Lines call: n lines of the structure named Key.
type LinesCall struct {
	Key uint64
	N   int
}

func (c *Ctx) Drop(h skb.Handle, r skb.DropReason)        { c.drop(h, r) }
func (c *Ctx) DequeueDrop(h skb.Handle, r skb.DropReason) { c.drop(h, r) }

// RandSeed is the seed of the stream behind Rand (for a qdisc behind the
// plugin boundary, whose context rebuilds it).
func (c *Ctx) RandSeed() sim.Seed { return c.Seed }

// WorkPrices are the default cost table's.
func (c *Ctx) WorkPrices() qdisc.Prices { return qdisc.WorkPrices(sim.DefaultCosts()) }

// Broken is a contract violation the context caught while the qdisc
// was running (it panics with one, to stop the qdisc there; the suite
// reports it as the check's failure, not as a panic of the qdisc).
type Broken struct{ Msg string }

func (b *Broken) Error() string { return b.Msg }

func (c *Ctx) drop(h skb.Handle, r skb.DropReason) { c.dropWith(c.Reasons, h, r) }

// dropWith records a drop by a qdisc that declared reasons.
func (c *Ctx) dropWith(reasons []skb.DropReason, h skb.Handle, r skb.DropReason) {
	if !skb.IsKernelReason(r) && !slices.Contains(reasons, r) {
		panic(&Broken{fmt.Sprintf("drop reason %q is not a kernel SKB_DROP_REASON_* name nor one the qdisc declared", r)})
	}
	if _, dup := c.Dropped[h]; dup {
		panic(&Broken{fmt.Sprintf("packet %#x dropped twice", uint64(h))})
	}
	c.Dropped[h] = r
}

// Init inits q with this context and remembers its declared reasons.
func (c *Ctx) Init(q qdisc.Qdisc, s qdisc.Setup, args []string) (qdisc.Info, error) {
	info, err := q.Init(c, s, args)
	if err == nil {
		err = info.CheckDropReasons()
	}
	c.Reasons = info.DropReasons
	return info, err
}

// Idle is what the host does when a dequeue returned nothing while the
// qdisc holds held packets: wait for the qdisc's watchdog (or its own
// timer, running q's Timer), or the earliest a leaf of a classful q
// armed, and move T there. With none armed the host would never dequeue
// again: that is the error.
func (c *Ctx) Idle(q qdisc.Qdisc, held int) error {
	if x, at, timer := c.leafEvent(); x != nil &&
		!(c.WDogArmed && c.WDog <= at) && !(c.TimerArmed && c.TimerAt <= at) {
		return x.fire(q, timer)
	}
	switch {
	case c.WDogArmed && (!c.TimerArmed || c.WDog <= c.TimerAt):
		c.WDogArmed = false
		c.T = max(c.T, c.WDog)
	case c.TimerArmed:
		c.TimerArmed = false
		c.T = max(c.T, c.TimerAt)
		t, ok := q.(qdisc.TimerQdisc)
		if !ok {
			return fmt.Errorf("armed its own timer but has no Timer method")
		}
		t.Timer(c)
	default:
		return &StallError{Held: held, At: c.T}
	}
	return nil
}

// StallError is a qdisc that holds packets, returned none and armed
// neither its watchdog nor a timer: the host would never dequeue again.
// Whichever check runs into it, it is the progress check's failure.
type StallError struct {
	Held int
	At   sim.Time
}

func (e *StallError) Error() string {
	return fmt.Sprintf("holds %d packets at %d ns, dequeue returned none and no watchdog is armed: "+
		"nothing would ever dequeue them (arm ctx.Watchdog for when the next one may leave)", e.Held, e.At)
}

// statsError is a qlen or backlog that disagrees with what the qdisc
// holds: whichever check sees it, it is the backlog check's failure.
type statsError struct{ msg string }

func (e *statsError) Error() string { return e.msg }

// Result is one check that did not pass: it failed (Err says why), or
// another check's failure stopped it before its end (Blocked; Err names
// that check). Blocked results come only with a failure.
type Result struct {
	Check   string
	Err     error
	Blocked bool
}

// Options tune the suite for one qdisc.
type Options struct {
	Args []string // tc options to init with
	// Classes are `tc class add` words (after "class add") applied
	// after Init, for a classful qdisc: "parent 1: classid 1:10 htb
	// rate 100mbit". With classes the packets' skb->priority is one of
	// MAJ:1 to MAJ:8 (the suite has no filters).
	Classes []string
	// Leaves are `tc qdisc add` words (after "qdisc add") for the
	// qdiscs of leaf classes, in place of their pfifos: "parent 1:10
	// handle 10: netem delay 1ms duplicate 10%".
	Leaves []string
	Limit  int // the packet limit the args set (0: not checked)
	Setup  qdisc.Setup
	Pkts   int // packets to push (default 3000)
	Seed   uint64
}

// Limits of Options.
const (
	MaxPkts  = 1_000_000 // packets the identity check may push
	MaxLimit = 100_000   // a limit to check (the limit check pushes 3x)
)

// Validate checks o's counts.
func (o Options) Validate() error {
	switch {
	case o.Pkts < 0 || o.Pkts > MaxPkts:
		return fmt.Errorf("packets %d: want 1 to %d", o.Pkts, MaxPkts)
	case o.Limit < 0 || o.Limit > MaxLimit:
		return fmt.Errorf("limit %d: want 0 (do not check) to %d", o.Limit, MaxLimit)
	}
	return nil
}

// Skipped are the checks o leaves out, with why.
func (o Options) Skipped() map[string]string {
	if o.Limit == 0 {
		return map[string]string{checkLimitName: "no limit given to check"}
	}
	return nil
}

// The checks other checks' failures are attributed to.
const (
	checkLimitName    = "limit respected"
	checkBacklogName  = "qlen and backlog agree with contents"
	checkProgressName = "dequeue progresses or arms the watchdog"
)

// owner is the check a failure belongs to: a stall is the progress
// check's and a stats disagreement the backlog check's, whichever check
// ran into it.
func owner(check string, err error) string {
	var se *StallError
	var st *statsError
	switch {
	case errors.As(err, &se):
		return checkProgressName
	case errors.As(err, &st):
		return checkBacklogName
	}
	return check
}

// Run runs every check on fresh instances from f and returns the
// failures (none means the qdisc conforms), each under the check it
// belongs to, and the checks those failures stopped (Blocked).
func Run(f qdisc.Factory, o Options) []Result {
	if err := o.Validate(); err != nil {
		return []Result{{Check: "options", Err: err}}
	}
	if o.Pkts == 0 {
		o.Pkts = 3000
	}
	if o.Setup.MTU == 0 {
		o.Setup = DefaultSetup()
	}
	own := map[string]error{}     // a check's own failure
	foreign := map[string]error{} // one another check ran into
	blocked := map[string]string{}
	for i, c := range checks {
		q := f()
		ctx := NewCtx(o.Seed)
		if err := safe(func() error {
			if _, err := ctx.Init(q, o.Setup, o.Args); err != nil {
				return err
			}
			return ctx.attach(q, o)
		}); err != nil {
			if i == 0 {
				return []Result{{Check: "init", Err: err}}
			}
			own[c.name] = fmt.Errorf("init: %w", err)
			continue
		}
		err := safe(func() error { return c.fn(q, ctx, o) })
		if err == nil {
			continue
		}
		if to := owner(c.name, err); to != c.name {
			if _, ok := foreign[to]; !ok {
				foreign[to] = err
			}
			blocked[c.name] = to
			continue
		}
		own[c.name] = err
	}
	var out []Result
	for _, c := range checks {
		switch err, ok := own[c.name]; {
		case ok:
			out = append(out, Result{Check: c.name, Err: err})
		case foreign[c.name] != nil:
			out = append(out, Result{Check: c.name, Err: foreign[c.name]})
		case blocked[c.name] != "":
			out = append(out, Result{Check: c.name, Err: fmt.Errorf("stopped by the failure of %q", blocked[c.name]), Blocked: true})
		}
	}
	return out
}

// DefaultSetup is a root qdisc on a 10 Gbit/s Ethernet device with one
// queue.
// TxqStopped implements qdisc.TxqCtx from TxqStop.
func (c *Ctx) TxqStopped(i int) bool { return c.TxqStop[i] }

// TxqStates is TxqStop as the host sends it to a wrapped qdisc (a bit
// a queue, up to the highest stopped).
func (c *Ctx) TxqStates(buf []byte) []byte {
	for i, stopped := range c.TxqStop {
		if !stopped {
			continue
		}
		for len(buf) <= i/8 {
			buf = append(buf, 0)
		}
		buf[i/8] |= 1 << (i % 8)
	}
	return buf
}

func DefaultSetup() qdisc.Setup {
	return qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, DevMTU: 1500, RateBps: 10e9, TxQueueLen: 1000,
		NumTxQ: 1, DevTxQ: 1}
}

var checks = []struct {
	name string
	fn   func(qdisc.Qdisc, *Ctx, Options) error
}{
	{"accounting identity", checkIdentity},
	{checkLimitName, checkLimit},
	{checkBacklogName, checkBacklog},
	{checkProgressName, checkProgress},
	{"peek equals next dequeue", checkPeek},
	{"reset empties", checkReset},
	{"bulk dequeue bounds", checkBulk},
}

// Checks lists the check names, in order.
func Checks() []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.name
	}
	return out
}

// safe runs fn, turning a panic into its error: a violation the context
// caught, or the host's error for a qdisc behind the plugin boundary (a
// *sim.ModelError, which names the plugin), as they are; any other
// panic is the qdisc's own.
func safe(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			var b *Broken
			var me *sim.ModelError
			if e, ok := r.(error); ok && (errors.As(e, &b) || errors.As(e, &me)) {
				err = e
				return
			}
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

// gen makes varied packets: flows, sizes, priorities, DSCP.
type gen struct {
	rng  *rand.Rand
	next uint64
	maj  uint16 // with classes given: skb->priority names MAJ:1..MAJ:8
}

func newGen(o Options, stream uint64) *gen {
	g := &gen{rng: rand.New(rand.NewPCG(o.Seed, stream))}
	if len(o.Classes) > 0 {
		g.maj = uint16(o.Setup.Major())
	}
	return g
}

func (g *gen) packet() skb.Packet {
	g.next++
	flow := g.rng.IntN(37)
	p := skb.Packet{Handle: skb.Handle(g.next<<8 | 1), Len: uint32(60 + g.rng.IntN(1454)), TrueSize: 2048,
		Hash: uint32(flow) * 2654435761, Sock: int32(flow), Priority: uint32(g.rng.IntN(8)), DSCP: uint8(g.rng.IntN(64)),
		Keys: skb.FlowKeys{Src: uint32(flow % 5), Dst: uint32(flow), SrcPort: uint16(flow), DstPort: 80, Proto: 17}, GSOSegs: 1}
	if g.maj != 0 {
		// A classful qdisc's classes are picked by skb->priority (the
		// suite has no filters): MAJ:1 to MAJ:8.
		p.Priority = uint32(g.maj)<<16 | (1 + p.Priority)
	}
	return p
}

// clone is skb_clone of p: a new handle, no socket.
func (g *gen) clone(p skb.Packet) skb.Packet {
	g.next++
	p.Handle, p.Sock = skb.Handle(g.next<<8|1), -1
	return p
}

// ledger tracks which handles the qdisc should hold.
type ledger struct {
	held  map[skb.Handle]skb.Packet
	bytes int64
	seen  map[skb.Handle]bool
}

func newLedger() *ledger {
	return &ledger{held: map[skb.Handle]skb.Packet{}, seen: map[skb.Handle]bool{}}
}

func (l *ledger) in(p skb.Packet) { l.held[p.Handle] = p; l.bytes += int64(p.Len) }

func (l *ledger) out(p skb.Packet) error {
	if l.seen[p.Handle] {
		return fmt.Errorf("packet %#x returned twice", uint64(p.Handle))
	}
	n, ok := l.held[p.Handle]
	if !ok {
		return fmt.Errorf("packet %#x returned but never handed in (or already dropped)", uint64(p.Handle))
	}
	l.seen[p.Handle] = true
	delete(l.held, p.Handle)
	l.bytes -= int64(n.Len)
	return nil
}

// sync removes the packets the qdisc dropped since the last call.
func (l *ledger) sync(ctx *Ctx) error {
	for h := range ctx.Dropped {
		if l.seen[h] {
			continue
		}
		n, ok := l.held[h]
		if !ok {
			return fmt.Errorf("dropped packet %#x it does not hold", uint64(h))
		}
		l.seen[h] = true
		delete(l.held, h)
		l.bytes -= int64(n.Len)
	}
	return nil
}

func (l *ledger) agree(q qdisc.Qdisc) error {
	st := q.Stats()
	if st.Qlen != len(l.held) || st.Backlog != l.bytes {
		return &statsError{fmt.Sprintf("stats say qlen %d backlog %d, but it holds %d packets / %d bytes", st.Qlen, st.Backlog, len(l.held), l.bytes)}
	}
	return nil
}

// push enqueues n packets in batches of random size up to 64, advancing
// time a little between batches.
func push(q qdisc.Qdisc, ctx *Ctx, g *gen, l *ledger, n int) error {
	for n > 0 {
		b := min(n, 1+g.rng.IntN(64))
		n -= b
		batch := make([]skb.Packet, b)
		for i := range batch {
			batch[i] = g.packet()
		}
		if err := enqueue(q, ctx, l, batch); err != nil {
			return err
		}
		// The host enqueues the duplicates' clones at the root right
		// after the call: the root's own, marked as they come back to
		// it, then its leaves'.
		for depth := 0; len(ctx.Dups) > 0 || len(ctx.leafDups) > 0; depth++ {
			if depth == 8 {
				return fmt.Errorf("duplicates of duplicates %d deep", depth)
			}
			clones := make([]skb.Packet, 0, len(ctx.Dups)+len(ctx.leafDups))
			for _, h := range ctx.Dups {
				p, ok := l.held[h]
				if !ok {
					return fmt.Errorf("duplicated packet %#x it does not hold", uint64(h))
				}
				p = g.clone(p)
				p.Flags |= skb.PacketDup
				clones = append(clones, p)
			}
			for _, d := range ctx.leafDups {
				p := g.clone(d.p)
				ctx.dupBy[p.Handle] = d.by
				clones = append(clones, p)
			}
			ctx.Dups, ctx.leafDups = ctx.Dups[:0], ctx.leafDups[:0]
			if err := enqueue(q, ctx, l, clones); err != nil {
				return err
			}
		}
		ctx.T += sim.Microsecond
	}
	return nil
}

// enqueue hands batch to q and checks the codes.
func enqueue(q qdisc.Qdisc, ctx *Ctx, l *ledger, batch []skb.Packet) error {
	rc := make([]qdisc.Code, len(batch))
	for _, p := range batch {
		l.in(p)
		ctx.pkts[p.Handle] = p
	}
	q.Enqueue(ctx, batch, rc)
	if err := l.sync(ctx); err != nil {
		return err
	}
	for i, p := range batch {
		_, dropped := ctx.Dropped[p.Handle]
		if rc[i] == qdisc.XmitDrop && !dropped {
			return fmt.Errorf("NET_XMIT_DROP for packet %#x that was not dropped", uint64(p.Handle))
		}
	}
	return nil
}

// drain dequeues everything as the host would: when a dequeue returns
// nothing, time moves to the watchdog the qdisc armed, and without one
// the qdisc fails.
func drain(q qdisc.Qdisc, ctx *Ctx, l *ledger, max int) error {
	for idle := 0; idle < 10000 && len(l.held) > 0; {
		out, err := take(q, ctx, l, max)
		if err != nil {
			return err
		}
		if len(out) == 0 && len(l.held) > 0 {
			idle++
			if err := ctx.Idle(q, len(l.held)); err != nil {
				return err
			}
			if err := l.sync(ctx); err != nil {
				return err
			}
		}
	}
	if len(l.held) > 0 {
		return fmt.Errorf("%d packets never came out", len(l.held))
	}
	return nil
}

// take dequeues at most max packets, checks the bound, and books them
// out of the ledger.
func take(q qdisc.Qdisc, ctx *Ctx, l *ledger, max int) ([]skb.Packet, error) {
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: max, Bytes: 1 << 40}, nil)
	if len(out) > max {
		return nil, fmt.Errorf("dequeue of at most %d returned %d", max, len(out))
	}
	for _, p := range out {
		if err := l.out(p); err != nil {
			return nil, err
		}
	}
	return out, l.sync(ctx)
}

// checkProgress interleaves arrivals and dequeues as a host does (a
// dequeue after every enqueue batch, time moving on): whenever a dequeue
// returns nothing while the qdisc holds packets, it must have armed the
// watchdog.
func checkProgress(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	g := newGen(o, 9)
	l := newLedger()
	for round := 0; round < 200; round++ {
		if err := push(q, ctx, g, l, 1+g.rng.IntN(8)); err != nil {
			return err
		}
		out, err := take(q, ctx, l, 4)
		if err != nil {
			return err
		}
		if len(out) == 0 && len(l.held) > 0 {
			// The host waits for the watchdog, not for more arrivals.
			if err := ctx.Idle(q, len(l.held)); err != nil {
				return err
			}
		}
	}
	return drain(q, ctx, l, 16)
}

func checkIdentity(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	g := newGen(o, 3)
	l := newLedger()
	if err := push(q, ctx, g, l, o.Pkts); err != nil {
		return err
	}
	if err := l.agree(q); err != nil {
		return err
	}
	if err := drain(q, ctx, l, 16); err != nil {
		return err
	}
	if int(g.next) != len(l.seen) {
		return fmt.Errorf("offered %d != dequeued + dropped %d", g.next, len(l.seen))
	}
	return l.agree(q)
}

func checkLimit(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	if o.Limit == 0 {
		return nil
	}
	g := newGen(o, 4)
	l := newLedger()
	if err := push(q, ctx, g, l, 3*o.Limit); err != nil {
		return err
	}
	if n := q.Stats().Qlen; n > o.Limit {
		return fmt.Errorf("holds %d packets, limit %d", n, o.Limit)
	}
	return l.agree(q)
}

func checkBacklog(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	g := newGen(o, 5)
	l := newLedger()
	for round := 0; round < 20; round++ {
		if err := push(q, ctx, g, l, 50); err != nil {
			return err
		}
		if err := l.agree(q); err != nil {
			return fmt.Errorf("after enqueue: %w", err)
		}
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 20, Bytes: 1 << 40}, nil) {
			if err := l.out(p); err != nil {
				return err
			}
		}
		if err := l.sync(ctx); err != nil {
			return err
		}
		if err := l.agree(q); err != nil {
			return fmt.Errorf("after dequeue: %w", err)
		}
	}
	return nil
}

func checkPeek(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	g := newGen(o, 6)
	l := newLedger()
	if err := push(q, ctx, g, l, 200); err != nil {
		return err
	}
	var d qdisc.Defaults // qdisc_peek_dequeued for a qdisc without Peek
	for i := 0; i < 100 && len(l.held) > 0; i++ {
		p, ok := d.Peek(q, ctx)
		if err := l.sync(ctx); err != nil {
			return err
		}
		if st := d.Stats(q); st.Qlen != len(l.held) {
			return &statsError{fmt.Sprintf("after peek: qlen %d, but it holds %d packets", st.Qlen, len(l.held))}
		}
		out := d.Dequeue(q, ctx, qdisc.DequeueReq{Max: 1}, nil)
		if err := l.sync(ctx); err != nil {
			return err
		}
		if ok != (len(out) == 1) {
			return fmt.Errorf("peek said %v but dequeue returned %d", ok, len(out))
		}
		if ok && p.Handle != out[0].Handle {
			return fmt.Errorf("peek %#x, dequeue %#x", uint64(p.Handle), uint64(out[0].Handle))
		}
		for _, p := range out {
			if err := l.out(p); err != nil {
				return err
			}
		}
		if !ok && len(l.held) > 0 {
			if err := ctx.Idle(q, len(l.held)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkReset(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	g := newGen(o, 7)
	l := newLedger()
	if err := push(q, ctx, g, l, 500); err != nil {
		return err
	}
	var d qdisc.Defaults
	d.Reset(q, ctx)
	ctx.resetLeaves() // the host resets a classful qdisc's leaves
	if err := l.sync(ctx); err != nil {
		return err
	}
	if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 || len(l.held) != 0 {
		return fmt.Errorf("after reset: qlen %d backlog %d, %d packets neither dropped nor returned", st.Qlen, st.Backlog, len(l.held))
	}
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 8}, nil); len(out) != 0 {
		return fmt.Errorf("dequeue after reset returned %d packets", len(out))
	}
	return nil
}

func checkBulk(q qdisc.Qdisc, ctx *Ctx, o Options) error {
	g := newGen(o, 8)
	l := newLedger()
	if err := push(q, ctx, g, l, 300); err != nil {
		return err
	}
	for _, req := range []qdisc.DequeueReq{{Max: 5, Bytes: 1 << 40}, {Max: 64, Bytes: 3000}, {Max: 1}} {
		out := q.Dequeue(ctx, req, nil)
		if err := l.sync(ctx); err != nil {
			return err
		}
		if len(out) > req.Max {
			return fmt.Errorf("asked for at most %d, got %d", req.Max, len(out))
		}
		var bytes int64
		for i, p := range out {
			if i > 0 && bytes >= req.Bytes {
				return fmt.Errorf("kept dequeuing after %d bytes (limit %d)", bytes, req.Bytes)
			}
			bytes += int64(p.Len)
			if err := l.out(p); err != nil {
				return err
			}
		}
	}
	return l.agree(q)
}

// CheckDrops says how a qdisc's drops disagree with a test's: want
// dropped, all for reason, counted in st.Drops and given to this
// context, the rest (qlen of offered) still held. Nil when they agree.
func (c *Ctx) CheckDrops(st qdisc.Stats, qlen, offered, want int, reason skb.DropReason) error {
	if st.Drops != uint64(want) || len(c.Dropped) != want || qlen != offered-want {
		return fmt.Errorf("drops %d (%v), qlen %d of %d; want %d dropped", st.Drops, c.Dropped, qlen, offered, want)
	}
	for h, r := range c.Dropped {
		if r != reason {
			return fmt.Errorf("packet %d dropped with %s, want %s", h, r, reason)
		}
	}
	return nil
}

// XStat is q's integer xstat key; it panics when q has none, a test's
// mistake.
func XStat(q qdisc.Qdisc, key string) int64 { return XStatOf(q.Stats().XStats, key) }

// XStatOf is the integer xstat key of xs (a qdisc's or a class's); it
// panics when xs have none, a test's mistake.
func XStatOf(xs []qdisc.XStat, key string) int64 {
	for _, kv := range xs {
		if kv.Key == key {
			return kv.Int64()
		}
	}
	panic("no xstat " + key)
}

// XStatKeys are the keys of xs in their order: the layout tc prints.
func XStatKeys(xs []qdisc.XStat) []string {
	keys := make([]string, len(xs))
	for i, x := range xs {
		keys[i] = x.Key
	}
	return keys
}

// FlowClassWant is one class a flow qdisc's FlowClasses should list.
type FlowClassWant struct {
	ID      qdisc.ClassID
	Qlen    int
	Backlog int64
}

// CheckFlowClasses says how cs, a FlowClasses listing, differs from
// want: the same classes in the same order, each with its qlen and
// backlog, none a leaf or with options (a flow is no class tc made).
func CheckFlowClasses(cs []qdisc.Class, want []FlowClassWant) error {
	if len(cs) != len(want) {
		return fmt.Errorf("%d classes, want %d: %+v", len(cs), len(want), cs)
	}
	var errs []error
	for i, w := range want {
		c := cs[i]
		if c.ID != w.ID || c.Qlen != w.Qlen || c.Backlog != w.Backlog || c.Leaf || c.Options != "" {
			errs = append(errs, fmt.Errorf("class %d = %s qlen %d backlog %d leaf %v options %q, want %s qlen %d backlog %d",
				i, c.ID, c.Qlen, c.Backlog, c.Leaf, c.Options, w.ID, w.Qlen, w.Backlog))
		}
	}
	return errors.Join(errs...)
}

// BypassIfDropped is what a qdisc answers for p: NET_XMIT_SUCCESS, and
// __NET_XMIT_BYPASS with it when the qdisc dropped p itself (a filter's
// drop: the sender still sees success, dev_qdisc_enqueue masks it).
func BypassIfDropped(c *Ctx, p skb.Packet) qdisc.Code {
	if _, dropped := c.Dropped[p.Handle]; dropped {
		return qdisc.XmitSuccess | qdisc.XmitBypass
	}
	return qdisc.XmitSuccess
}
