package trace

import (
	"context"
	"sort"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Variant records one simulated host: a wall-clock span under the run's
// root (variants of a run are siblings) and a simulated-time trace of
// its own, linked to it.
type Variant struct {
	r      *Run
	ctx    context.Context
	span   oteltrace.Span // wall clock
	simCtx context.Context
	sim    oteltrace.Span // the simulated host's root
	e      *sim.Engine
	last   sim.Time // the latest simulated instant a span reached
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
	end  sim.Time // its latest child's end
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

// Variant opens a sibling span for one simulated host, and the host's
// simulated-time trace, and returns the recorder to Attach to it. It
// returns nil when tracing is off.
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
	simAttrs := append(append([]attribute.KeyValue(nil), attrs...),
		attribute.String("txlab.clock", "simulated"), attribute.Int64("txlab.sim.base_unix_ns", r.base.UnixNano()))
	v.simCtx, v.sim = r.tracer.Start(context.Background(), "simulated "+name, oteltrace.WithNewRoot(),
		oteltrace.WithTimestamp(r.simTime(0)), oteltrace.WithAttributes(simAttrs...),
		oteltrace.WithLinks(oteltrace.Link{SpanContext: v.span.SpanContext(),
			Attributes: []attribute.KeyValue{strAttr("txlab.link", "wall-clock variant")}}))
	v.span.AddLink(oteltrace.Link{SpanContext: v.sim.SpanContext(),
		Attributes: []attribute.KeyValue{strAttr("txlab.link", "simulated host")}})
	v.span.SetAttributes(strAttr("txlab.sim.trace_id", v.sim.SpanContext().TraceID().String()))
	return v
}

// SimTraceID is the simulated host's trace ID (hex), "" when off.
func (v *Variant) SimTraceID() string {
	if v == nil {
		return ""
	}
	return v.sim.SpanContext().TraceID().String()
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
	if v.e != nil {
		v.last = max(v.last, v.e.Now())
	}
	// A CPU's window span covers its packets: those that began in the
	// window may complete after it.
	for _, cpu := range sortedKeys(v.cpus) {
		c := v.cpus[cpu]
		end := max(v.window.From+v.window.Len, c.end)
		c.span.SetAttributes(attribute.Int64("duration_ns", int64(end-v.window.From)))
		c.span.End(oteltrace.WithTimestamp(v.r.simTime(end)))
		v.last = max(v.last, end)
	}
	v.span.SetAttributes(attrs...)
	v.span.SetAttributes(attribute.Int("txlab.trace.journeys", v.Journeys))
	v.span.End()
	v.sim.SetAttributes(attrs...)
	v.sim.SetAttributes(attribute.Int("txlab.trace.journeys", v.Journeys), attribute.Int64("duration_ns", int64(v.last)))
	v.sim.End(oteltrace.WithTimestamp(v.r.simTime(v.last)))
}

func sortedKeys(m map[int]cpuSpan) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
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
	v.e = n.E
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

// simSpan starts a simulated-time span under parent over [start, end]; its
// duration_ns attribute keeps what a viewer that counts microseconds
// (Jaeger) rounds away.
func (v *Variant) simSpan(parent context.Context, name string, start, end sim.Time, attrs ...attribute.KeyValue) (context.Context, oteltrace.Span) {
	attrs = append(attrs, attribute.Int64("duration_ns", int64(end-start)), attribute.Int64("sim.start_ns", int64(start)))
	return v.r.tracer.Start(parent, name, oteltrace.WithTimestamp(v.r.simTime(start)), oteltrace.WithAttributes(attrs...))
}

// emit turns one finished journey into spans.
func (v *Variant) emit(hd skb.Handle, j *journey) {
	delete(v.j, hd)
	v.Journeys++
	r := v.r
	parent := v.simCtx
	end := max(j.done, j.xmitEnd)
	v.last = max(v.last, end)
	if j.inWindow {
		cs, ok := v.cpus[j.cpu]
		if !ok {
			cs.ctx, cs.span = r.tracer.Start(v.simCtx, "cpu "+itoa(j.cpu), oteltrace.WithTimestamp(r.simTime(v.window.From)),
				oteltrace.WithAttributes(intAttr("cpu", j.cpu), attribute.Int64("sim.start_ns", int64(v.window.From))))
		}
		cs.end = max(cs.end, end)
		v.cpus[j.cpu] = cs
		parent = cs.ctx
	}
	outcome := "transmitted"
	if j.dropped {
		outcome = "dropped"
	}
	attrs := []attribute.KeyValue{intAttr("cpu", j.cpu), strAttr("path", j.path), intAttr("len", int(j.len)),
		attribute.Int64("flow_hash", int64(j.hash)), strAttr("outcome", outcome)}
	if j.txq >= 0 {
		attrs = append(attrs, intAttr("txq", j.txq))
	}
	ctx, ps := v.simSpan(parent, "packet", j.start, end, attrs...)
	xctx, xs := v.simSpan(ctx, "__dev_queue_xmit", j.start, j.xmitEnd, intAttr("cpu", j.cpu), strAttr("path", j.path))
	for _, l := range j.locks {
		if l.end <= l.start {
			continue // an uncontended handoff: nothing was waited for
		}
		_, ls := v.simSpan(xctx, "lock wait", l.start, l.end, strAttr("lock", l.site), attribute.Int64("wait_ns", int64(l.end-l.start)))
		ls.End(oteltrace.WithTimestamp(r.simTime(l.end)))
	}
	xs.End(oteltrace.WithTimestamp(r.simTime(j.xmitEnd)))
	if j.enq > 0 && j.deq >= j.enq {
		_, qs := v.simSpan(ctx, "qdisc", j.enq, j.deq, strAttr("qdisc", j.qdisc), attribute.Int64("sojourn_ns", int64(j.deq-j.enq)),
			attribute.Int64("bulk_id", int64(j.bulk)), intAttr("bulk_len", j.bulkLen))
		qs.End(oteltrace.WithTimestamp(r.simTime(j.deq)))
	}
	if j.drv > 0 && !j.dropped {
		_, ds := v.simSpan(ctx, "driver", j.drv, j.done, intAttr("txq", j.txq))
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
	if v.e != nil { // where the simulated host stood: an event on its timeline
		now := v.e.Now()
		v.sim.AddEvent(name, oteltrace.WithTimestamp(v.r.simTime(now)), oteltrace.WithAttributes(attribute.Int64("sim.ns", int64(now))))
	}
}
