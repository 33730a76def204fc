package wire

import (
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Wrapped is implemented by what the host hands netdev in place of a
// plugin: a LocalQdisc or LocalDriver, or a proxy to another process.
type Wrapped interface{ PluginBoundary() }

// LocalQdisc runs a qdisc in process behind the same context an out of
// process qdisc gets, so both give the same result. Host calls pass the
// host's per-call context (a QdiscHost). It always has Peek, Reset,
// Change and Timer: what the qdisc lacks, qdisc.Defaults or an error
// stands in for.
type LocalQdisc struct {
	Q        qdisc.Qdisc
	ctx      *QdiscCtx
	defaults qdisc.Defaults
	// up is the classful qdisc's upcaller, set at each call: the
	// context keeps a pointer to it (a LocalUp value boxed at every
	// call was a heap allocation a packet).
	up LocalUp
	// txq is the buffer of the TX queues' states a Dequeue or Peek
	// hands the context.
	txq []byte
}

// txqState gives the context the TX queues' states for a Dequeue or
// Peek (qdisc.TxqCtx).
func (l *LocalQdisc) txqState(h QdiscHost) {
	l.txq = h.TxqStates(l.txq[:0])
	l.ctx.SetTxqStopped(l.txq)
}

// WrapQdisc wraps q unless it is already behind the boundary.
func WrapQdisc(q qdisc.Qdisc) qdisc.Qdisc {
	if _, ok := q.(Wrapped); ok {
		return q
	}
	return &LocalQdisc{Q: q}
}

func (l *LocalQdisc) PluginBoundary() {}

func (l *LocalQdisc) Init(c qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	h := c.(QdiscHost)
	_, timer := l.Q.(qdisc.TimerQdisc)
	l.ctx = NewQdiscCtx(h.RandSeed(), h.WorkPrices(), timer)
	l.ctx.SetDevTxQ(s.DevTxQ)
	l.ctx.Begin(h.Now())
	info, err := l.Q.Init(l.ctx, s, args)
	if err == nil {
		err = info.CheckDropReasons()
	}
	if err != nil {
		return qdisc.Info{}, err
	}
	l.end(h)
	return info, nil
}

func (l *LocalQdisc) begin(c qdisc.Ctx) QdiscHost {
	h := c.(QdiscHost)
	l.ctx.Begin(h.Now())
	if ch, ok := h.(ClassHost); ok && l.Classful() {
		l.up.Host = ch
		l.ctx.SetUpcaller(&l.up)
	}
	return h
}

func (l *LocalQdisc) end(h QdiscHost) {
	// The host checks the drop reasons as it applies them (it names the
	// qdisc); the context posts nothing but qdisc operations.
	ops, trailing := l.ctx.Posted()
	ApplyQdisc(h, ops, trailing)
}

func (l *LocalQdisc) Enqueue(c qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	h := l.begin(c)
	l.ctx.SetSegs(qdisc.SegPlaces(c))
	l.ctx.SetTCPHeaders(qdisc.TCPHeaders(c))
	l.Q.Enqueue(l.ctx, batch, rc)
	l.ctx.SetSegs(nil)
	l.ctx.SetTCPHeaders(nil)
	l.end(h)
}

func (l *LocalQdisc) Dequeue(c qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	h := l.begin(c)
	l.txqState(h)
	out = l.defaults.Dequeue(l.Q, l.ctx, req, out)
	l.end(h)
	return out
}

// Peek is the qdisc's Peek, or qdisc_peek_dequeued.
func (l *LocalQdisc) Peek(c qdisc.Ctx) (skb.Packet, bool) {
	h := l.begin(c)
	l.txqState(h)
	p, ok := l.defaults.Peek(l.Q, l.ctx)
	l.end(h)
	return p, ok
}

// Reset is qdisc_reset.
func (l *LocalQdisc) Reset(c qdisc.Ctx) {
	h := l.begin(c)
	l.defaults.Reset(l.Q, l.ctx)
	l.end(h)
}

// Timer runs the qdisc's timer callback.
func (l *LocalQdisc) Timer(c qdisc.Ctx) {
	h := l.begin(c)
	l.Q.(qdisc.TimerQdisc).Timer(l.ctx)
	l.end(h)
}

func (l *LocalQdisc) Stats() qdisc.Stats { return l.defaults.Stats(l.Q) }
func (l *LocalQdisc) Dump() string       { return l.Q.Dump() }

// Change implements qdisc.Changer: the wrapped qdisc's change (or the
// kernel's refusal), with its drops posted like Reset's.
func (l *LocalQdisc) Change(c qdisc.Ctx, args []string) (qdisc.Info, error) {
	h := l.begin(c)
	info, err := qdisc.Change(l.Q, l.ctx, args)
	l.end(h)
	return info, err
}

// Selectable is implemented by a wrapped driver: its ndo_select_queue,
// or nil if it has none.
type Selectable interface {
	Selector() driver.QueueSelector
}

// LocalDriver runs a driver in process behind the same contexts an out
// of process driver gets.
type LocalDriver struct {
	D  driver.Driver
	st *DriverState
}

// WrapDriver wraps d unless it is already behind the boundary.
func WrapDriver(d driver.Driver) driver.Driver {
	if _, ok := d.(Wrapped); ok {
		return d
	}
	return &LocalDriver{D: d}
}

func (l *LocalDriver) PluginBoundary() {}

func (l *LocalDriver) Init(s driver.Setup, args []string) (driver.Info, error) {
	l.st = NewDriverState(s.NumTxQ)
	return l.D.Init(s, args)
}

// Upcall implements Upcaller: the host answers straight away.
func (l *LocalDriver) Upcall(x *DriverCtx, q Query, arg int64) (sim.Time, bool) {
	ops, trailing := x.Posted()
	ApplyDriver(x.Host, ops, trailing)
	ans := Answer(x.Host, q, arg)
	return x.Host.Now(), ans
}

func (l *LocalDriver) begin(host driver.Ctx) *DriverCtx {
	x := l.st.Get(host.CPU(), host.Now(), l, host)
	x.Host = host
	return x
}

func (l *LocalDriver) end(x *DriverCtx) {
	ops, trailing := x.Posted()
	ApplyDriver(x.Host, ops, trailing)
	l.st.Put(x)
}

func (l *LocalDriver) Xmit(host driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
	x := l.begin(host)
	sent, rc := l.D.Xmit(x, txq, batch)
	l.end(x)
	return sent, rc
}

func (l *LocalDriver) Poll(host driver.Ctx, v int, budget int) (int, bool) {
	x := l.begin(host)
	work, done := l.D.Poll(x, v, budget)
	l.end(x)
	return work, done
}

func (l *LocalDriver) Stats() []driver.QueueStats { return l.D.Stats() }

// RxComplete implements driver.RxModerator for a driver whose RxInfo
// says OwnITR (the host calls it for no other).
func (l *LocalDriver) RxComplete(now sim.Time, v int, pkts, bytes uint64) sim.Time {
	m, ok := l.D.(driver.RxModerator)
	if !ok {
		sim.Panicf("driver has no rx moderation of its own (it implements no driver.RxModerator)")
	}
	return m.RxComplete(now, v, pkts, bytes)
}

// Selector implements Selectable.
func (l *LocalDriver) Selector() driver.QueueSelector {
	s, _ := l.D.(driver.QueueSelector)
	return s
}

// Classful implements ClassOps: the qdisc inside implements
// qdisc.Classful.
func (l *LocalQdisc) Classful() bool {
	_, ok := l.Q.(qdisc.Classful)
	return ok
}

func (l *LocalQdisc) classful() qdisc.Classful {
	c, ok := l.Q.(qdisc.Classful)
	if !ok {
		sim.Panicf("qdisc has no classes (it implements no qdisc.Classful)")
	}
	return c
}

// ChangeClass implements ClassOps.
func (l *LocalQdisc) ChangeClass(c qdisc.Ctx, req qdisc.ClassReq) error {
	h := l.begin(c)
	err := l.classful().ChangeClass(l.ctx, req)
	l.end(h)
	return err
}

// DeleteClass implements ClassOps.
func (l *LocalQdisc) DeleteClass(c qdisc.Ctx, id qdisc.ClassID) error {
	h := l.begin(c)
	err := l.classful().DeleteClass(l.ctx, id)
	l.end(h)
	return err
}

// Classes implements ClassOps: a classful qdisc's classes, or a
// classless one's flows (qdisc.FlowClasses).
func (l *LocalQdisc) Classes() []qdisc.Class {
	if c, ok := l.Q.(qdisc.Classful); ok {
		return c.Classes()
	}
	if f, ok := l.Q.(qdisc.FlowClasses); ok {
		return f.FlowClasses()
	}
	return nil
}

// QlenNotify implements ClassOps.
func (l *LocalQdisc) QlenNotify(c qdisc.Ctx, id qdisc.ClassID, leaf qdisc.LeafState) {
	h := l.begin(c)
	l.classful().QlenNotify(l.ctx, id, leaf)
	l.end(h)
}

// Grafted implements ClassOps.
func (l *LocalQdisc) Grafted(c qdisc.Ctx, id qdisc.ClassID, leaf bool) {
	g, ok := l.Q.(qdisc.Grafter)
	if !ok {
		return
	}
	h := l.begin(c)
	g.Grafted(l.ctx, id, leaf)
	l.end(h)
}

// SetFilters implements ClassOps.
func (l *LocalQdisc) SetFilters(now sim.Time, specs []string) error {
	return l.ctx.SetFilters(now, specs)
}

// FilterStats implements ClassOps.
func (l *LocalQdisc) FilterStats(at qdisc.ClassID, now sim.Time) string {
	return l.ctx.FilterStats(at, now)
}
