package plugin

import (
	"errors"
	"fmt"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// leafUp answers a classful qdisc's leaf queries with the host's leaves,
// checking the packets it hands to them and takes back.
type leafUp struct {
	q     *Qdisc
	host  wire.ClassHost
	batch []qdisc.LeafPacket
	res   []qdisc.LeafResult
}

func (u *leafUp) now() sim.Time { return u.host.Now() }

func (u *leafUp) upcall(h *hostCall, d *wire.Dec) error {
	var trailing int64
	h.ops, trailing = d.Ops(h.ops[:0])
	query := wire.Query(d.U8())
	if d.Err != nil {
		return d.Err
	}
	if err := u.q.checkOps(h.ops); err != nil {
		return err
	}
	wire.ApplyQdisc(u.host, h.ops, trailing)
	// Check the leaf enqueue's packets before the host takes them.
	if query == wire.QueryLeafEnqueue {
		probe := *d
		n := int(probe.U32())
		for range n {
			p := wire.DecodeLeafPacket(&probe)
			if probe.Err != nil {
				break
			}
			if err := u.q.hold.out(p.Handle, "enqueued to a leaf"); err != nil {
				return err
			}
		}
	}
	start := len(h.enc.B)
	var err error
	u.batch, u.res, err = wire.AnswerLeaf(u.host, query, d, &h.enc, u.batch, u.res)
	if err != nil {
		return err
	}
	if query == wire.QueryLeafDequeue {
		a := wire.Dec{B: h.enc.B[start:]}
		if p, ok, _, _ := wire.DecodeLeafDequeue(&a); ok {
			u.q.hold.in(p.Handle)
		}
	}
	return nil
}

// Classful implements wire.ClassOps.
func (q *Qdisc) Classful() bool { return q.classful }

// classCall runs a class method with a context and posted ops.
func (q *Qdisc) classCall(ctx qdisc.Ctx, m wire.Method, enc func(e *wire.Enc)) (wire.Dec, error) {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, m)
	h.enc.I64(int64(ctx.Now()))
	enc(&h.enc)
	what := q.what(m)
	// A class change may look at a leaf (hfsc_change_class's
	// qdisc_peek_len): its queries are answered by the host's leaves.
	var up upcaller
	if host, ok := ctx.(wire.ClassHost); ok && q.classful {
		up = &leafUp{q: q, host: host}
	}
	d, err := q.c.call(h, named(what), up)
	if err != nil {
		return d, err
	}
	h.ops, h.trailing = d.Ops(h.ops[:0])
	if d.Err != nil {
		return d, q.c.fail(what, d.Err)
	}
	if err := q.checkOps(h.ops); err != nil {
		return d, q.c.fail(what, err)
	}
	q.apply(h, ctx)
	return d, nil
}

// ChangeClass implements wire.ClassOps.
func (q *Qdisc) ChangeClass(ctx qdisc.Ctx, req qdisc.ClassReq) error {
	d, err := q.classCall(ctx, wire.MQClassChange, func(e *wire.Enc) { wire.EncodeClassReq(e, req) })
	if err != nil {
		return err
	}
	warn := d.Str()
	if err := d.End(); err != nil {
		return q.c.fail(q.what(wire.MQClassChange), err)
	}
	if warn != "" {
		return &qdisc.Warning{Msg: warn}
	}
	return nil
}

// DeleteClass implements wire.ClassOps.
func (q *Qdisc) DeleteClass(ctx qdisc.Ctx, id qdisc.ClassID) error {
	d, err := q.classCall(ctx, wire.MQClassDelete, func(e *wire.Enc) { e.U32(uint32(id)) })
	if err != nil {
		return err
	}
	if err := d.End(); err != nil {
		return q.c.fail(q.what(wire.MQClassDelete), err)
	}
	return nil
}

// QlenNotify implements wire.ClassOps.
func (q *Qdisc) QlenNotify(ctx qdisc.Ctx, id qdisc.ClassID, leaf qdisc.LeafState) {
	d, err := q.classCall(ctx, wire.MQQlenNotify, func(e *wire.Enc) {
		e.U32(uint32(id))
		e.I64(int64(leaf.Qlen))
		e.I64(leaf.Backlog)
	})
	if err == nil {
		err = d.End()
	}
	if err != nil {
		q.c.abort(q.what(wire.MQQlenNotify), err)
	}
}

// Grafted implements wire.ClassOps.
func (q *Qdisc) Grafted(ctx qdisc.Ctx, id qdisc.ClassID, leaf bool) {
	d, err := q.classCall(ctx, wire.MQGrafted, func(e *wire.Enc) {
		e.U32(uint32(id))
		e.Bool(leaf)
	})
	if err == nil {
		err = d.End()
	}
	if err != nil {
		q.c.abort(q.what(wire.MQGrafted), err)
	}
}

// Classes implements wire.ClassOps: a classful qdisc's classes, or a
// classless one's flows (qdisc.FlowClasses). A dead plugin has none.
func (q *Qdisc) Classes() []qdisc.Class {
	if q.c.dead != nil {
		return nil
	}
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQClasses)
	what := q.what(wire.MQClasses)
	d, err := q.c.call(h, named(what), nil)
	if err != nil {
		return nil
	}
	cs, err := wire.DecodeClasses(&d)
	if err != nil {
		q.c.fail(what, err)
		return nil
	}
	return cs
}

// SetFilters implements wire.ClassOps.
func (q *Qdisc) SetFilters(now sim.Time, specs []string) error {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQFilters)
	h.enc.I64(int64(now))
	wire.EncodeStrs(&h.enc, specs)
	d, err := q.c.call(h, q.name(wire.MQFilters), nil)
	if err != nil {
		return err
	}
	return d.End()
}

// FilterStats implements wire.ClassOps.
func (q *Qdisc) FilterStats(at qdisc.ClassID, now sim.Time) string {
	h := q.c.get()
	defer q.c.put(h)
	h.enc.Call(0, q.inst, wire.MQFilterStats)
	h.enc.U32(uint32(at))
	h.enc.I64(int64(now))
	d, err := q.c.call(h, q.name(wire.MQFilterStats), nil)
	if err != nil {
		return ""
	}
	text := string(d.Bytes())
	if err := d.End(); err != nil {
		q.c.fail(q.what(wire.MQFilterStats), err)
	}
	return text
}

// serverLeafUp is the plugin side's wire.LeafUpcaller for one call: a
// leaf query is an upcall frame, answered by the host.
type serverLeafUp struct {
	s    *server
	call uint32
}

func (u serverLeafUp) send(x *wire.QdiscCtx, q wire.Query, payload func(e *wire.Enc)) wire.Dec {
	st := u.s.getState()
	defer func() { u.s.free = append(u.s.free, st) }()
	e := &st.enc
	e.Reset()
	e.U8(wire.FrameUpcall)
	e.U32(u.call)
	e.Ops(x.Posted())
	e.U8(byte(q))
	payload(e)
	msg, err := u.s.await(u.call, e.B)
	if err != nil {
		panic(fmt.Sprintf("host gone during a leaf query: %v", err))
	}
	return wire.Dec{B: msg[5:]}
}

func (u serverLeafUp) LeafEnqueue(x *wire.QdiscCtx, batch []qdisc.LeafPacket, res []qdisc.LeafResult) sim.Time {
	d := u.send(x, wire.QueryLeafEnqueue, func(e *wire.Enc) { wire.EncodeLeafQuery(e, batch, 0) })
	now := sim.Time(d.I64())
	if err := wire.DecodeLeafEnqueue(&d, res); err != nil {
		panic(fmt.Sprintf("bad leaf enqueue answer from the host: %v", err))
	}
	return now
}

func (u serverLeafUp) LeafDequeue(x *wire.QdiscCtx, id qdisc.ClassID, peek bool) (skb.Packet, bool, qdisc.LeafState, sim.Time) {
	q := wire.QueryLeafDequeue
	if peek {
		q = wire.QueryLeafPeek
	}
	d := u.send(x, q, func(e *wire.Enc) { wire.EncodeLeafQuery(e, nil, id) })
	now := sim.Time(d.I64())
	p, ok, st, err := wire.DecodeLeafDequeue(&d)
	if err != nil {
		panic(fmt.Sprintf("bad leaf dequeue answer from the host: %v", err))
	}
	return p, ok, st, now
}

// classCall serves a class method of a qdisc instance.
func (s *server) classCall(st *callState, call uint32, q *qdiscInst, m wire.Method, d *wire.Dec) (byte, string) {
	e := &st.enc
	if m == wire.MQFilters {
		// Any qdisc's: a classless one with a block of its own
		// (qdisc.HasBlock) classifies with them too.
		now := sim.Time(d.I64())
		specs := wire.DecodeStrs(d)
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		if q.ctx == nil {
			return wire.StatusError, "filters before init"
		}
		if err := q.ctx.SetFilters(now, specs); err != nil {
			return wire.StatusError, err.Error()
		}
		return wire.StatusOK, ""
	}
	if m == wire.MQFilterStats {
		at, now := qdisc.ClassID(d.U32()), sim.Time(d.I64())
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		if q.ctx == nil {
			return wire.StatusError, "filter stats before init"
		}
		e.Bytes([]byte(q.ctx.FilterStats(at, now)))
		return wire.StatusOK, ""
	}
	c, ok := q.q.(qdisc.Classful)
	if m == wire.MQClasses {
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		var cs []qdisc.Class
		if f, flows := q.q.(qdisc.FlowClasses); flows && !ok {
			// A classless qdisc's flows (fq_codel_walk, sfq_walk,
			// cake_walk).
			cs = f.FlowClasses()
		} else if ok {
			cs = c.Classes()
		}
		wire.EncodeClasses(e, cs)
		return wire.StatusOK, ""
	}
	if !ok {
		return wire.StatusError, fmt.Sprintf("qdisc %s has no classes (%s)", q.kind, m)
	}
	if q.ctx == nil {
		return wire.StatusError, fmt.Sprintf("%s before init", m)
	}
	q.ctx.Begin(sim.Time(d.I64()))
	q.ctx.SetUpcaller(serverLeafUp{s: s, call: call})
	switch m {
	case wire.MQClassChange:
		req := wire.DecodeClassReq(d)
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		err := c.ChangeClass(q.ctx, req)
		var w *qdisc.Warning
		if err != nil && !errors.As(err, &w) {
			return optionStatus(err), err.Error()
		}
		e.Ops(q.ctx.Posted())
		if w != nil {
			e.Str(w.Msg)
		} else {
			e.Str("")
		}
	case wire.MQClassDelete:
		id := qdisc.ClassID(d.U32())
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		if err := c.DeleteClass(q.ctx, id); err != nil {
			return optionStatus(err), err.Error()
		}
		e.Ops(q.ctx.Posted())
	case wire.MQQlenNotify:
		id := qdisc.ClassID(d.U32())
		st := qdisc.LeafState{Qlen: int(d.I64()), Backlog: d.I64()}
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		c.QlenNotify(q.ctx, id, st)
		e.Ops(q.ctx.Posted())
	case wire.MQGrafted:
		id, leaf := qdisc.ClassID(d.U32()), d.Bool()
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		if g, ok := c.(qdisc.Grafter); ok {
			g.Grafted(q.ctx, id, leaf)
		}
		e.Ops(q.ctx.Posted())
	}
	return wire.StatusOK, ""
}
