package trace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Variant records one simulated host under its own span (variants of a
// run are siblings).
type Variant struct {
	r      *Run
	ctx    context.Context
	span   oteltrace.Span
	sample float64
	window Window
	rng    *sim.Rand
	j      map[skb.Handle]*journey
	cur    []skb.Handle // per CPU: the traced packet in __dev_queue_xmit
	cpus   map[int]cpuSpan
	bulk   uint64
	phase  oteltrace.Span
	// Journeys is the number of packet journeys recorded.
	Journeys int
}

type cpuSpan struct {
	ctx  context.Context
	span oteltrace.Span
}

type lockWait struct {
	site       string
	start, end sim.Time
}

type journey struct {
	cpu                 int
	start, xmitEnd      sim.Time
	path                string
	enq, deq, drv, done sim.Time
	qdisc               string
	bulk                uint64
	bulkLen             int
	txq                 int
	len                 uint32
	hash                uint32
	locks               []lockWait
	xmitDone, final     bool
	dropped             bool
	reason              skb.DropReason
	inWindow            bool
}

// Variant opens a sibling span for one simulated host and returns the
// recorder to Attach to it. It returns nil when tracing is off.
func (r *Run) Variant(name string, attrs ...attribute.KeyValue) *Variant {
	if r == nil {
		return nil
	}
	v := &Variant{r: r, sample: r.cfg.Sample, window: r.cfg.Window, j: map[skb.Handle]*journey{}, cpus: map[int]cpuSpan{}}
	if r.phase != nil { // the load phase ends where the first variant starts
		r.phase.End()
		r.phase = nil
	}
	v.ctx, v.span = r.tracer.Start(r.ctx, name, oteltrace.WithAttributes(attrs...))
	return v
}

// End closes the variant's span with its result attributes.
func (v *Variant) End(attrs ...attribute.KeyValue) {
	if v == nil {
		return
	}
	if v.phase != nil {
		v.phase.End()
		v.phase = nil
	}
	for _, c := range v.cpus {
		c.span.End(oteltrace.WithTimestamp(v.r.simTime(v.window.From + v.window.Len)))
	}
	v.span.SetAttributes(attrs...)
	v.span.SetAttributes(attribute.Int("txlab.trace.journeys", v.Journeys))
	v.span.End()
}

func (v *Variant) inWindow(t sim.Time) bool {
	return v.window.Len > 0 && t >= v.window.From && t < v.window.From+v.window.Len
}

// Attach installs the recorder's hooks on a host. Sampling uses its own
// random stream, so a traced run simulates exactly what an untraced one
// does.
func (v *Variant) Attach(n *netdev.Net) {
	if v == nil {
		return
	}
	v.rng = n.E.Rand("trace/sample")
	v.cur = make([]skb.Handle, len(n.E.CPUs))
	h := &n.Hooks
	h.XmitStart = func(c *sim.CPU, s *skb.SKB) {
		t := c.Now()
		win := v.inWindow(t)
		if !win && !(v.sample > 0 && v.rng.Float64() < v.sample) {
			return
		}
		v.j[s.Handle] = &journey{cpu: c.ID, start: t, path: "enqueue", txq: -1, len: s.Len, hash: s.Hash, inWindow: win}
		v.cur[c.ID] = s.Handle
	}
	h.XmitDone = func(c *sim.CPU, hd skb.Handle, start sim.Time) {
		j, ok := v.j[hd]
		if !ok || j.start != start {
			return
		}
		j.xmitEnd, j.xmitDone = c.Now(), true
		if v.cur[c.ID] == hd {
			v.cur[c.ID] = 0
		}
		if j.final {
			v.emit(hd, j)
		}
	}
	h.DeferPush = func(c *sim.CPU, q *netdev.Qdisc, s *skb.SKB) {
		if j, ok := v.j[s.Handle]; ok {
			j.path = "llist defer"
		}
	}
	h.Bypass = func(c *sim.CPU, s *skb.SKB) {
		if j, ok := v.j[s.Handle]; ok {
			j.path, j.drv = "direct (TCQ_F_CAN_BYPASS)", c.Now()
		}
	}
	h.EnqueueBatch = func(c *sim.CPU, q *netdev.Qdisc, batch []*skb.SKB) {
		for _, s := range batch {
			if j, ok := v.j[s.Handle]; ok {
				j.enq, j.qdisc = c.Now(), q.Name()
			}
		}
	}
	h.Dequeue = func(c *sim.CPU, q *netdev.Qdisc, bulk []*skb.SKB) {
		v.bulk++
		for _, s := range bulk {
			if j, ok := v.j[s.Handle]; ok {
				j.deq, j.bulk, j.bulkLen = c.Now(), v.bulk, len(bulk)
			}
		}
	}
	h.DriverXmit = func(c *sim.CPU, txq *netdev.TxQueue, l *skb.List) {
		for s := l.Head; s != nil; s = s.Next {
			if j, ok := v.j[s.Handle]; ok {
				j.drv, j.txq = c.Now(), txq.Index
			}
		}
	}
	h.Complete = func(c *sim.CPU, s *skb.SKB) { v.finish(c, s, false, "") }
	h.Drop = func(c *sim.CPU, s *skb.SKB, r skb.DropReason) { v.finish(c, s, true, r) }
	n.E.OnLockWait = func(c *sim.CPU, site *sim.LockStat, start, end sim.Time) {
		if hd := v.cur[c.ID]; hd != 0 {
			if j, ok := v.j[hd]; ok {
				j.locks = append(j.locks, lockWait{site.Name, start, end})
			}
		}
	}
}

func (v *Variant) finish(c *sim.CPU, s *skb.SKB, dropped bool, r skb.DropReason) {
	j, ok := v.j[s.Handle]
	if !ok {
		return
	}
	j.done, j.final, j.dropped, j.reason = c.Now(), true, dropped, r
	if j.xmitDone {
		v.emit(s.Handle, j)
	}
}

// emit turns one finished journey into spans.
func (v *Variant) emit(hd skb.Handle, j *journey) {
	delete(v.j, hd)
	v.Journeys++
	r := v.r
	parent := v.ctx
	if j.inWindow {
		cs, ok := v.cpus[j.cpu]
		if !ok {
			cs.ctx, cs.span = r.tracer.Start(v.ctx, "cpu "+itoa(j.cpu), oteltrace.WithTimestamp(r.simTime(v.window.From)),
				oteltrace.WithAttributes(intAttr("cpu", j.cpu)))
			v.cpus[j.cpu] = cs
		}
		parent = cs.ctx
	}
	end := max(j.done, j.xmitEnd)
	outcome := "transmitted"
	if j.dropped {
		outcome = "dropped"
	}
	attrs := []attribute.KeyValue{intAttr("cpu", j.cpu), strAttr("path", j.path), intAttr("len", int(j.len)),
		attribute.Int64("flow_hash", int64(j.hash)), strAttr("outcome", outcome)}
	if j.txq >= 0 {
		attrs = append(attrs, intAttr("txq", j.txq))
	}
	ctx, ps := r.tracer.Start(parent, "packet", oteltrace.WithTimestamp(r.simTime(j.start)), oteltrace.WithAttributes(attrs...))
	xctx, xs := r.tracer.Start(ctx, "__dev_queue_xmit", oteltrace.WithTimestamp(r.simTime(j.start)),
		oteltrace.WithAttributes(intAttr("cpu", j.cpu), strAttr("path", j.path)))
	for _, l := range j.locks {
		_, ls := r.tracer.Start(xctx, "lock wait", oteltrace.WithTimestamp(r.simTime(l.start)),
			oteltrace.WithAttributes(strAttr("lock", l.site), attribute.Int64("wait_ns", int64(l.end-l.start))))
		ls.End(oteltrace.WithTimestamp(r.simTime(l.end)))
	}
	xs.End(oteltrace.WithTimestamp(r.simTime(j.xmitEnd)))
	if j.enq > 0 && j.deq >= j.enq {
		_, qs := r.tracer.Start(ctx, "qdisc", oteltrace.WithTimestamp(r.simTime(j.enq)),
			oteltrace.WithAttributes(strAttr("qdisc", j.qdisc), attribute.Int64("sojourn_ns", int64(j.deq-j.enq)),
				attribute.Int64("bulk_id", int64(j.bulk)), intAttr("bulk_len", j.bulkLen)))
		qs.End(oteltrace.WithTimestamp(r.simTime(j.deq)))
	}
	if j.drv > 0 && !j.dropped {
		_, ds := r.tracer.Start(ctx, "driver", oteltrace.WithTimestamp(r.simTime(j.drv)),
			oteltrace.WithAttributes(intAttr("txq", j.txq)))
		ds.End(oteltrace.WithTimestamp(r.simTime(j.done)))
	}
	if j.dropped {
		ps.AddEvent("drop", oteltrace.WithTimestamp(r.simTime(j.done)),
			oteltrace.WithAttributes(strAttr("reason", string(j.reason))))
	}
	ps.End(oteltrace.WithTimestamp(r.simTime(end)))
}

// Phase starts a wall-clock phase span of this variant (setup, warmup,
// measure, report), ending the previous one.
func (v *Variant) Phase(name string) {
	if v == nil {
		return
	}
	if v.phase != nil {
		v.phase.End()
	}
	_, v.phase = v.r.tracer.Start(v.ctx, name)
}
