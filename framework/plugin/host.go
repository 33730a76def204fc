package plugin

import (
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/pb"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// hostTransport is the host's end of a data path.
type hostTransport interface {
	Send(frame []byte) error
	Recv(timeout time.Duration) ([]byte, error)
	Close() error
}

// conn is the host's side of one plugin process. The host is one
// goroutine at a time (the engine's CPUs are coroutines), but calls nest:
// while one call waits on an upcall's answer, the CPU it runs on may
// yield, and another CPU's call uses the same conn. Each call has its own
// buffers, and every frame the host sends is answered before the host
// sends the next on behalf of another call.
type conn struct {
	name    string // for errors: the plugin's name and path
	tr      hostTransport
	timeout time.Duration
	next    uint32
	dead    error
	kill    func()
	free    []*hostCall
	open    int // calls taken and not yet put back (a task parked inside one)
}

type hostCall struct {
	enc      wire.Enc
	ops      []wire.Op
	trailing int64
	xoff     wire.XoffBits
	drv      driverUp // a driver call's upcall answerer: no allocation per call
}

// callName names a call in errors, as pre+mid, then " " and the method
// if there is one: joined only when an error is reported, so a call on
// the data path builds no string.
type callName struct {
	pre, mid string
	m        wire.Method
	method   bool
}

// named is a call named by s alone.
func named(s string) callName { return callName{pre: s} }

func (n callName) String() string {
	if !n.method {
		return n.pre + n.mid
	}
	return n.pre + n.mid + " " + n.m.String()
}

func (c *conn) get() *hostCall {
	c.open++
	if n := len(c.free); n > 0 {
		h := c.free[n-1]
		c.free = c.free[:n-1]
		return h
	}
	return &hostCall{}
}

func (c *conn) put(h *hostCall) {
	c.open--
	c.free = append(c.free, h)
}

// Error is a plugin that broke the run: it crashed, hung, or broke the
// protocol or its contract.
type Error struct {
	Plugin string
	What   string // the call or check
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("plugin %s: %s: %v", e.Plugin, e.What, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// fail marks the plugin dead, stops it, and returns the error.
func (c *conn) fail(what string, err error) error {
	if c.dead == nil {
		c.dead = &Error{Plugin: c.name, What: what, Err: err}
		if c.kill != nil {
			c.kill()
		}
	}
	return c.dead
}

// abort ends the simulation with the plugin's error (on a simulated CPU).
func (c *conn) abort(what string, err error) {
	dead := c.fail(what, err)
	panic(&sim.ModelError{Msg: dead.Error(), Err: dead})
}

// upcaller answers a plugin's upcall during a call: it decodes the
// upcall (after its frame type and call id), applies its posted
// operations, and encodes the answer's payload into h.enc after the
// answer's header. nil for a call that may make none.
type upcaller interface {
	upcall(h *hostCall, d *wire.Dec) error
	now() sim.Time
}

// call sends h.enc's call frame and returns its reply's body after the
// status byte. Upcalls on the way are answered by up.
func (c *conn) call(h *hostCall, name callName, up upcaller) (wire.Dec, error) {
	if c.dead != nil {
		return wire.Dec{}, c.dead
	}
	call := c.next
	c.next++
	// Patch the call id in (the frame was built with 0).
	h.enc.B[1], h.enc.B[2], h.enc.B[3], h.enc.B[4] = byte(call), byte(call>>8), byte(call>>16), byte(call>>24)
	if err := c.tr.Send(h.enc.B); err != nil {
		return wire.Dec{}, c.fail(name.String(), err)
	}
	for {
		msg, err := c.tr.Recv(c.timeout)
		if err != nil {
			return wire.Dec{}, c.fail(name.String(), err)
		}
		d := wire.Dec{B: msg}
		typ, id := d.U8(), d.U32()
		if d.Err != nil {
			return wire.Dec{}, c.fail(name.String(), fmt.Errorf("malformed frame of %d bytes", len(msg)))
		}
		if id != call {
			return wire.Dec{}, c.fail(name.String(), fmt.Errorf("reply to call %d while call %d waits (frame type %d)", id, call, typ))
		}
		switch typ {
		case wire.FrameReply:
			switch status := d.U8(); status {
			case wire.StatusOK:
				return d, nil
			case wire.StatusNoChange:
				return d, qdisc.ErrCannotChange
			case wire.StatusInvalid, wire.StatusRefused, wire.StatusLacks, wire.StatusSyntax:
				return d, &qdisc.OptionError{Class: optionClass[status], Msg: d.Str()}
			case wire.StatusError:
				return d, c.fail(name.String(), remoteError(d.Str()))
			case wire.StatusUnknown:
				return d, c.fail(name.String(), errors.New(d.Str()))
			default:
				return d, c.fail(name.String(), fmt.Errorf("reply status %d", status))
			}
		case wire.FrameUpcall:
			if up == nil {
				return d, c.fail(name.String(), errors.New("asked the host a query during a call that may make none"))
			}
			if err := c.answerUpcall(name, up, call, &d); err != nil {
				return d, err
			}
		default:
			return d, c.fail(name.String(), fmt.Errorf("frame type %d", typ))
		}
	}
}

// answerUpcall answers the upcall in d for call. The answer is built in
// a buffer of its own: answering may make calls (a leaf's) that reuse
// nothing of this one. The buffer goes back however the answer ends,
// also when the task unwinds inside it (a run that ends while the
// upcall waits at a sync point), so the conn counts no call open.
func (c *conn) answerUpcall(name callName, up upcaller, call uint32, d *wire.Dec) error {
	a := c.get()
	defer c.put(a)
	a.enc.Reset()
	a.enc.U8(wire.FrameAnswer)
	a.enc.U32(call)
	a.enc.I64(0) // the host's time, patched in below
	ud := *d     // only this copy escapes (to the upcaller), and only here
	err := up.upcall(a, &ud)
	*d = ud
	if err != nil {
		return c.fail(name.String(), err)
	}
	now := uint64(up.now())
	for i := range 8 {
		a.enc.B[5+i] = byte(now >> (8 * i))
	}
	if err := c.tr.Send(a.enc.B); err != nil {
		return c.fail(name.String(), err)
	}
	return nil
}

// driverUp answers a driver's queries during one call.
type driverUp struct {
	host driver.Ctx
	dv   *Driver
}

func (u *driverUp) now() sim.Time { return u.host.Now() }

func (u *driverUp) upcall(h *hostCall, d *wire.Dec) error {
	var trailing int64
	h.ops, trailing = d.Ops(h.ops[:0])
	q, arg := wire.Query(d.U8()), d.I64()
	if err := d.End(); err != nil {
		return err
	}
	if err := u.dv.checkUpcall(h.ops, q, arg); err != nil {
		return err
	}
	wire.ApplyDriver(u.host, h.ops, trailing)
	ans := wire.Answer(u.host, q, arg)
	h.enc.Bool(ans)
	h.xoff = xoffOf(u.host, u.dv.numTxQ, h.xoff[:0])
	h.enc.Xoff(h.xoff)
	return nil
}

// optionClass is the qdisc.OptionError class of an options reply status.
var optionClass = map[byte]error{wire.StatusInvalid: qdisc.ErrParse, wire.StatusRefused: qdisc.ErrKernel,
	wire.StatusLacks: qdisc.ErrLacks, wire.StatusSyntax: qdisc.ErrSyntax}

// control runs a call with no context and a protobuf payload either way.
func (c *conn) control(inst uint32, m wire.Method, what string, in, out proto.Message) error {
	h := c.get()
	defer c.put(h)
	h.enc.Call(0, inst, m)
	if in != nil {
		b, err := proto.Marshal(in)
		if err != nil {
			return err
		}
		h.enc.Bytes(b)
	}
	d, err := c.call(h, named(what), nil)
	if err != nil {
		return err
	}
	if out == nil {
		return d.End()
	}
	b := d.Bytes()
	if err := d.End(); err != nil {
		return c.fail(what, err)
	}
	if err := proto.Unmarshal(b, out); err != nil {
		return c.fail(what, err)
	}
	return nil
}

// newInstance asks for a qdisc or driver instance.
func (c *conn) newInstance(m wire.Method, name string) (uint32, bool, error) {
	h := c.get()
	defer c.put(h)
	h.enc.Call(0, 0, m)
	h.enc.Str(name)
	d, err := c.call(h, named(m.String()+" "+name), nil)
	if err != nil {
		return 0, false, err
	}
	inst := d.U32()
	sel := d.Bool() // a driver's ndo_select_queue, a qdisc's classes
	if err := d.End(); err != nil {
		return 0, false, c.fail(m.String(), err)
	}
	return inst, sel, nil
}

// holdings tracks the packets an instance holds, to check each one it
// hands back was handed in and is handed back once. Handles are dense in
// their low 32 bits (the pool's index), so a slice indexed by them is the
// set. The last packets handed back are kept in a ring, to tell "twice"
// from "never".
type holdings struct {
	held     []skb.Handle
	returned [4096]skb.Handle
	next     int
}

func newHoldings() holdings { return holdings{} }

func (h *holdings) has(p skb.Handle) bool {
	i := int(uint32(p))
	return p != 0 && i < len(h.held) && h.held[i] == p
}

func (h *holdings) in(p skb.Handle) {
	i := int(uint32(p))
	for i >= len(h.held) {
		h.held = append(h.held, make([]skb.Handle, max(len(h.held), 1024))...)
	}
	h.held[i] = p
}

// forget drops p from the set; false if it was not in it.
func (h *holdings) forget(p skb.Handle) bool {
	if !h.has(p) {
		return false
	}
	h.held[uint32(p)] = 0
	return true
}

// out checks a packet handed back (how: "dequeued", "dropped") and forgets it.
func (h *holdings) out(p skb.Handle, how string) error {
	if h.forget(p) {
		h.returned[h.next] = p
		h.next = (h.next + 1) % len(h.returned)
		return nil
	}
	for _, r := range h.returned {
		if r == p && p != 0 {
			return fmt.Errorf("%s packet %#x twice (it was handed back before)", how, uint64(p))
		}
	}
	return fmt.Errorf("%s packet %#x, which it was never handed", how, uint64(p))
}

// checkOps checks the packets posted ops hand back.
func (h *holdings) checkOps(ops []wire.Op) error {
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case wire.OpQdiscDrop, wire.OpQdiscDequeueDrop, wire.OpDriverDrop:
			if err := h.out(op.H, "dropped"); err != nil {
				return err
			}
		case wire.OpConsume:
			if err := h.out(op.H, "completed"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOps checks a qdisc's posted ops: its kinds only, drop reasons
// the kernel's or declared, and the packets it hands back.
func (q *Qdisc) checkOps(ops []wire.Op) error {
	if err := wire.CheckQdiscOps(ops, q.reasons); err != nil {
		return err
	}
	return q.hold.checkOps(ops)
}

// Qdisc is a qdisc in a plugin process.
type Qdisc struct {
	c        *conn
	inst     uint32
	kind     string
	classful bool // the qdisc implements qdisc.Classful
	hold     holdings
	stats    qdisc.Stats
	reasons  []skb.DropReason // declared in Info
	txq      []byte           // encTxqState's buffer
}

func (q *Qdisc) PluginBoundary() {}

// PluginDead is the error that ended the plugin, if it did.
func (q *Qdisc) PluginDead() error { return q.c.dead }

func (q *Qdisc) what(m wire.Method) string { return q.name(m).String() }

// name is what(m), joined only if an error needs it.
func (q *Qdisc) name(m wire.Method) callName {
	return callName{pre: "qdisc ", mid: q.kind, m: m, method: true}
}

// Init sends the setup with the context's seed and prices (from the
// host's context, a wire.QdiscHost) and applies what Init posted.
func (q *Qdisc) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	host := ctx.(wire.QdiscHost)
	b, err := proto.Marshal(setupToPB(s, args, host.RandSeed(), host.WorkPrices()))
	if err != nil {
		return qdisc.Info{}, err
	}
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQInit)
	h.enc.I64(int64(host.Now()))
	h.enc.Bytes(b)
	what := q.what(wire.MQInit)
	d, err := q.c.call(h, named(what), nil)
	if err != nil {
		return qdisc.Info{}, err
	}
	h.ops, h.trailing = d.Ops(h.ops[:0])
	raw := d.Bytes()
	if err := d.End(); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	var pi pb.QdiscInfo
	if err := proto.Unmarshal(raw, &pi); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	info := infoFromPB(&pi)
	if err := info.CheckDropReasons(); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	q.reasons = info.DropReasons
	if err := q.checkOps(h.ops); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	q.apply(h, ctx)
	return info, nil
}

// run makes a data-path call and returns the reply after its posted ops
// (decoded and checked into h). The caller decodes the rest, then calls
// apply: applying may let other CPUs run and reuse the channel's buffer.
// A classful qdisc's leaf queries on the way are answered by host's
// leaves.
func (q *Qdisc) run(h *hostCall, m wire.Method, host qdisc.Ctx) wire.Dec {
	var up upcaller
	if q.classful {
		up = &leafUp{q: q, host: host.(wire.ClassHost)}
	}
	d, err := q.c.call(h, q.name(m), up)
	if err != nil {
		q.c.abort(q.what(m), err)
	}
	h.ops, h.trailing = d.Ops(h.ops[:0])
	if d.Err != nil {
		q.c.abort(q.what(m), d.Err)
	}
	if err := q.checkOps(h.ops); err != nil {
		q.c.abort(q.what(m), err)
	}
	return d
}

func (q *Qdisc) apply(h *hostCall, host qdisc.Ctx) {
	wire.ApplyQdisc(host.(wire.QdiscHost), h.ops, h.trailing)
}

func (q *Qdisc) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQEnqueue)
	h.enc.I64(int64(ctx.Now()))
	h.enc.Packets(batch)
	h.enc.Segs(qdisc.SegPlaces(ctx))
	h.enc.TCPHeaders(qdisc.TCPHeaders(ctx))
	for i := range batch {
		q.hold.in(batch[i].Handle)
	}
	d := q.run(h, wire.MQEnqueue, ctx)
	n := int(d.U32())
	if d.Err == nil && n != len(batch) {
		q.c.abort(q.what(wire.MQEnqueue), fmt.Errorf("%d results for a batch of %d", n, len(batch)))
	}
	for i := range n {
		c := qdisc.Code(d.U8())
		if !c.Valid() {
			q.c.abort(q.what(wire.MQEnqueue), fmt.Errorf("result %d for packet %d is no NET_XMIT code", c, i))
		}
		rc[i] = c
	}
	if err := d.End(); err != nil {
		q.c.abort(q.what(wire.MQEnqueue), err)
	}
	q.apply(h, ctx)
}

func (q *Qdisc) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQDequeue)
	h.enc.I64(int64(ctx.Now()))
	h.enc.U32(uint32(req.Max))
	h.enc.I64(req.Bytes)
	h.enc.Bool(req.SameQueue)
	q.encTxqState(h, ctx)
	d := q.run(h, wire.MQDequeue, ctx)
	n := int(d.U32())
	if d.Err == nil && n > max(req.Max, 1) {
		q.c.abort(q.what(wire.MQDequeue), fmt.Errorf("returned %d packets for a dequeue of at most %d", n, req.Max))
	}
	for range n {
		p := d.DequeuedPacket()
		if d.Err != nil {
			break
		}
		if p.ECN > 3 || p.DSCP > 63 {
			q.c.abort(q.what(wire.MQDequeue), fmt.Errorf("packet %#x with ECN bits %d and DSCP %d", uint64(p.Handle), p.ECN, p.DSCP))
		}
		if err := q.hold.out(p.Handle, "dequeued"); err != nil {
			q.c.abort(q.what(wire.MQDequeue), err)
		}
		out = append(out, p)
	}
	if err := d.End(); err != nil {
		q.c.abort(q.what(wire.MQDequeue), err)
	}
	q.apply(h, ctx)
	return out
}

func (q *Qdisc) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQPeek)
	h.enc.I64(int64(ctx.Now()))
	q.encTxqState(h, ctx)
	d := q.run(h, wire.MQPeek, ctx)
	ok := d.Bool()
	p := d.Packet()
	if err := d.End(); err != nil {
		q.c.abort(q.what(wire.MQPeek), err)
	}
	q.apply(h, ctx)
	// A classful qdisc peeks at its leaves' packets (held by the host's
	// leaves, not by it): the dequeue after checks what it hands back.
	if ok && !q.classful && !q.hold.has(p.Handle) {
		q.c.abort(q.what(wire.MQPeek), fmt.Errorf("peeked packet %#x it does not hold", uint64(p.Handle)))
	}
	return p, ok
}

// encTxqState sends the TX queues' states with a Dequeue or Peek
// (qdisc.TxqCtx).
func (q *Qdisc) encTxqState(h *hostCall, ctx qdisc.Ctx) {
	q.txq = ctx.(wire.QdiscHost).TxqStates(q.txq[:0])
	h.enc.Bytes(q.txq)
}

func (q *Qdisc) Reset(ctx qdisc.Ctx) {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQReset)
	h.enc.I64(int64(ctx.Now()))
	d := q.run(h, wire.MQReset, ctx)
	if err := d.End(); err != nil {
		q.c.abort(q.what(wire.MQReset), err)
	}
	q.apply(h, ctx)
}

// Timer runs the plugin's timer callback.
func (q *Qdisc) Timer(ctx qdisc.Ctx) {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQTimer)
	h.enc.I64(int64(ctx.Now()))
	d := q.run(h, wire.MQTimer, ctx)
	if err := d.End(); err != nil {
		q.c.abort(q.what(wire.MQTimer), err)
	}
	q.apply(h, ctx)
}

// Stats asks the plugin, and checks its qlen and backlog against what
// the host handed it and took back. A dead plugin holds nothing.
func (q *Qdisc) Stats() qdisc.Stats {
	if q.c.dead != nil {
		return qdisc.Stats{Drops: q.stats.Drops, Overlimits: q.stats.Overlimits}
	}
	var st pb.QdiscStats
	if err := q.c.control(q.inst, wire.MQStats, q.what(wire.MQStats), nil, &st); err != nil {
		return qdisc.Stats{}
	}
	var err error
	if q.stats, err = statsFromPB(&st); err != nil {
		q.c.fail(q.what(wire.MQStats), err)
	}
	if q.stats.Qlen < 0 || q.stats.Backlog < 0 {
		q.c.fail(q.what(wire.MQStats), fmt.Errorf("qlen %d backlog %d", q.stats.Qlen, q.stats.Backlog))
	}
	return q.stats
}

func (q *Qdisc) Dump() string {
	if q.c.dead != nil {
		return "(plugin dead)"
	}
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQDump)
	d, err := q.c.call(h, q.name(wire.MQDump), nil)
	if err != nil {
		return "(plugin dead)"
	}
	s := d.Str()
	if err := d.End(); err != nil {
		q.c.fail(q.what(wire.MQDump), err)
	}
	return s
}

// Change implements qdisc.Changer: the plugin's change (or its refusal),
// its drops applied to ctx like Reset's. It runs between engine steps,
// so a broken reply is an error, not an abort.
func (q *Qdisc) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	b, err := proto.Marshal(&pb.Args{Args: args})
	if err != nil {
		return qdisc.Info{}, err
	}
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQChange)
	h.enc.I64(int64(ctx.Now()))
	h.enc.Bytes(b)
	what := q.what(wire.MQChange)
	d, err := q.c.call(h, named(what), nil)
	if err != nil {
		return qdisc.Info{}, err
	}
	h.ops, h.trailing = d.Ops(h.ops[:0])
	var pi pb.QdiscInfo
	raw := d.Bytes()
	// A refusal after part of the change was applied (PartialChange).
	var refused error
	if status := d.U8(); status != wire.StatusOK && d.Err == nil {
		class, ok := optionClass[status]
		if !ok {
			return qdisc.Info{}, q.c.fail(what, fmt.Errorf("partial change with reply status %d", status))
		}
		refused = &qdisc.OptionError{Class: class, Msg: d.Str()}
	}
	if err := d.End(); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	if err := q.checkOps(h.ops); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	if err := proto.Unmarshal(raw, &pi); err != nil {
		return qdisc.Info{}, q.c.fail(what, err)
	}
	q.apply(h, ctx)
	if refused != nil {
		return qdisc.Info{}, &qdisc.PartialChange{Info: infoFromPB(&pi), Err: refused}
	}
	return infoFromPB(&pi), nil
}

// checkOps checks a driver's posted ops: its kinds only, queues and
// vectors that exist, and the packets it hands back.
func (dv *Driver) checkOps(ops []wire.Op) error {
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case wire.OpSentQueue, wire.OpSentQueueMore, wire.OpCompletedQueue, wire.OpWakeQueue, wire.OpStartQueue:
			if op.A < 0 || op.A >= int64(dv.numTxQ) {
				return fmt.Errorf("%s on txq %d of %d", op.Kind, op.A, dv.numTxQ)
			}
			if op.Kind != wire.OpWakeQueue && op.Kind != wire.OpStartQueue && (op.B < 0 || op.C < 0 || op.B > math.MaxInt32 || op.C > math.MaxInt32) {
				return fmt.Errorf("%s with counts %d, %d", op.Kind, op.B, op.C)
			}
		case wire.OpRaiseIRQ, wire.OpNapiScheduleLocal:
			if op.A < 0 || op.A >= int64(dv.vectors) {
				return fmt.Errorf("%s on vector %d of %d", op.Kind, op.A, dv.vectors)
			}
			if op.B < 0 {
				return fmt.Errorf("%s at %d ns", op.Kind, op.B)
			}
		case wire.OpConsume, wire.OpDriverDrop:
		default:
			return fmt.Errorf("posted %s, which is not a driver operation", op.Kind)
		}
	}
	return dv.hold.checkOps(ops)
}

// checkUpcall checks an upcall's ops and its query.
func (dv *Driver) checkUpcall(ops []wire.Op, q wire.Query, arg int64) error {
	switch q {
	case wire.QueryXmitStopped, wire.QueryHasQdisc, wire.QueryStopQueue:
		if arg < 0 || arg >= int64(dv.numTxQ) {
			return fmt.Errorf("query %d on txq %d of %d", q, arg, dv.numTxQ)
		}
	case wire.QuerySyncPoint:
	case wire.QueryNetifRx:
		// The posted ops come first; then the packet leaves the driver.
		if err := dv.checkOps(ops); err != nil {
			return err
		}
		return dv.hold.out(skb.Handle(arg), "handed to netif_rx")
	default:
		return fmt.Errorf("unknown query %d", q)
	}
	return dv.checkOps(ops)
}

// Driver is a driver in a plugin process.
type Driver struct {
	c       *conn
	inst    uint32
	name    string
	sel     bool
	numTxQ  int
	vectors int
	hold    holdings
}

func (dv *Driver) PluginBoundary() {}

// PluginDead is the error that ended the plugin, if it did.
func (dv *Driver) PluginDead() error { return dv.c.dead }

func (dv *Driver) what(m wire.Method) string { return dv.callName(m).String() }

// callName is what(m), joined only if an error needs it.
func (dv *Driver) callName(m wire.Method) callName {
	return callName{pre: "driver ", mid: dv.name, m: m, method: true}
}

func (dv *Driver) Init(s driver.Setup, args []string) (driver.Info, error) {
	var info pb.DriverInfo
	if err := dv.c.control(dv.inst, wire.MDInit, dv.what(wire.MDInit), driverSetupToPB(s, args), &info); err != nil {
		return driver.Info{}, err
	}
	dv.numTxQ = s.NumTxQ
	di := driverInfoFromPB(&info)
	dv.vectors = di.Vectors
	return di, nil
}

// xoffOf is the host's netif_tx_queue_stopped for every queue.
func xoffOf(host driver.Ctx, n int, out []uint64) []uint64 {
	for i := 0; i < n; i++ {
		if i%64 == 0 {
			out = append(out, 0)
		}
		if host.QueueStopped(i) {
			out[i/64] |= 1 << (i % 64)
		}
	}
	return out
}

func (dv *Driver) begin(h *hostCall, m wire.Method, host driver.Ctx) {
	h.enc.Call(0, dv.inst, m)
	h.enc.I64(int64(host.Now()))
	h.enc.U32(uint32(host.CPU()))
	h.xoff = xoffOf(host, dv.numTxQ, h.xoff[:0])
	h.enc.Xoff(h.xoff)
}

func (dv *Driver) run(h *hostCall, m wire.Method, host driver.Ctx) wire.Dec {
	h.drv = driverUp{host: host, dv: dv}
	d, err := dv.c.call(h, dv.callName(m), &h.drv)
	h.drv = driverUp{} // the pool keeps no host context alive
	if err != nil {
		dv.c.abort(dv.what(m), err)
	}
	h.ops, h.trailing = d.Ops(h.ops[:0])
	if d.Err != nil {
		dv.c.abort(dv.what(m), d.Err)
	}
	if err := dv.checkOps(h.ops); err != nil {
		dv.c.abort(dv.what(m), err)
	}
	return d
}

func (dv *Driver) Xmit(host driver.Ctx, txq int, batch []skb.Packet) (int, driver.TxCode) {
	h := dv.c.get()
	defer dv.c.put(h)
	dv.begin(h, wire.MDXmit, host)
	h.enc.U32(uint32(txq))
	h.enc.Packets(batch)
	for i := range batch {
		dv.hold.in(batch[i].Handle)
	}
	d := dv.run(h, wire.MDXmit, host)
	sent, rc := int(d.U32()), driver.TxCode(d.U8())
	if err := d.End(); err != nil {
		dv.c.abort(dv.what(wire.MDXmit), err)
	}
	if sent > len(batch) || (rc != driver.TxOK && rc != driver.TxBusy && rc != driver.TxDrop) || (rc == driver.TxDrop && sent < len(batch)) {
		dv.c.abort(dv.what(wire.MDXmit), fmt.Errorf("claims %d of %d packets sent with rc %#x", sent, len(batch), rc))
	}
	wire.ApplyDriver(host, h.ops, h.trailing)
	for i := sent; i < len(batch); i++ {
		if !dv.hold.forget(batch[i].Handle) {
			dv.c.abort(dv.what(wire.MDXmit), fmt.Errorf("freed packet %#x it refused", uint64(batch[i].Handle)))
		}
	}
	return sent, rc
}

func (dv *Driver) Poll(host driver.Ctx, v int, budget int) (int, bool) {
	h := dv.c.get()
	defer dv.c.put(h)
	dv.begin(h, wire.MDPoll, host)
	h.enc.U32(uint32(v))
	h.enc.U32(uint32(int32(budget)))
	d := dv.run(h, wire.MDPoll, host)
	work, done := int(int32(d.U32())), d.Bool()
	if err := d.End(); err != nil {
		dv.c.abort(dv.what(wire.MDPoll), err)
	}
	wire.ApplyDriver(host, h.ops, h.trailing)
	if work < 0 {
		dv.c.abort(dv.what(wire.MDPoll), fmt.Errorf("negative work %d", work))
	}
	return work, done
}

func (dv *Driver) Stats() []driver.QueueStats {
	if dv.c.dead != nil {
		return nil
	}
	var st pb.DriverStats
	if err := dv.c.control(dv.inst, wire.MDStats, dv.what(wire.MDStats), nil, &st); err != nil {
		return nil
	}
	return driverStatsFromPB(&st)
}

// Selector implements wire.Selectable.
func (dv *Driver) Selector() driver.QueueSelector {
	if !dv.sel {
		return nil
	}
	return dv
}

// RxComplete is the plugin's driver.RxModerator; the host calls it only
// for a driver whose RxInfo says OwnITR.
func (dv *Driver) RxComplete(now sim.Time, v int, pkts, bytes uint64) sim.Time {
	h := dv.c.get()
	defer dv.c.put(h)
	h.enc.Call(0, dv.inst, wire.MDRxComplete)
	h.enc.I64(int64(now))
	h.enc.U32(uint32(v))
	h.enc.U64(pkts)
	h.enc.U64(bytes)
	d, err := dv.c.call(h, dv.callName(wire.MDRxComplete), nil)
	if err != nil {
		dv.c.abort(dv.what(wire.MDRxComplete), err)
	}
	itr := sim.Time(d.I64())
	if err := d.End(); err != nil {
		dv.c.abort(dv.what(wire.MDRxComplete), err)
	}
	if itr < 0 {
		dv.c.abort(dv.what(wire.MDRxComplete), fmt.Errorf("rx itr %v", itr))
	}
	return itr
}

// SelectQueue is the plugin's ndo_select_queue.
func (dv *Driver) SelectQueue(p skb.Packet, numTxQ int) (int, bool) {
	h := dv.c.get()
	defer dv.c.put(h)
	h.enc.Call(0, dv.inst, wire.MDSelect)
	h.enc.Packet(&p)
	h.enc.U32(uint32(numTxQ))
	d, err := dv.c.call(h, dv.callName(wire.MDSelect), nil)
	if err != nil {
		dv.c.abort(dv.what(wire.MDSelect), err)
	}
	q, ok := int(d.I64()), d.Bool()
	if err := d.End(); err != nil {
		dv.c.abort(dv.what(wire.MDSelect), err)
	}
	return q, ok
}
