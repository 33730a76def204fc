package wire

import (
	"fmt"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Leaf queries: what a classful qdisc asks the host during a call (its
// context's EnqueueLeaves, DequeueLeaf, PeekLeaf). The posted operations
// before one are applied first, as for a driver's query.
const (
	QueryLeafEnqueue Query = iota + 16 // u32 n, n x (u64 handle, u32 class, u32 priority, u32 mark, u8 ecn, u8 dscp) -> n x (u8 code, i64 qlen, i64 backlog)
	QueryLeafDequeue                   // u32 class -> u8 ok, packet, i64 qlen, i64 backlog
	QueryLeafPeek                      // u32 class -> u8 ok, packet
)

// ClassHost is the host side of a classful qdisc's call (the host's
// context, beside QdiscHost): the leaves of its classes.
type ClassHost interface {
	QdiscHost
	// LeafEnqueue is qdisc_enqueue of each packet into its class's leaf,
	// in order; res[i] is the leaf's answer for batch[i].
	LeafEnqueue(batch []qdisc.LeafPacket, res []qdisc.LeafResult)
	// LeafDequeue is one packet from the leaf of class id.
	LeafDequeue(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState)
	// LeafPeek is the leaf's peek, with the leaf's state after it.
	LeafPeek(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState)
}

// LeafUpcaller carries a classful qdisc's leaf queries to the host: it
// sends the posted operations (x.Posted) and the query, and returns the
// host's time after the answer.
type LeafUpcaller interface {
	LeafEnqueue(x *QdiscCtx, batch []qdisc.LeafPacket, res []qdisc.LeafResult) sim.Time
	LeafDequeue(x *QdiscCtx, id qdisc.ClassID, peek bool) (skb.Packet, bool, qdisc.LeafState, sim.Time)
}

// ClassOps is what the host holds for a qdisc (a LocalQdisc or a proxy
// to a plugin) when it may be classful: Classful says whether the qdisc
// inside is; the rest forwards to its qdisc.Classful methods, and
// SetFilters hands it the filters of its classes (cls.Set.Specs). A
// classless qdisc with a block of its own (qdisc.HasBlock) takes
// SetFilters too, and Classes, which lists its flows if it implements
// qdisc.FlowClasses (none otherwise), and no other method.
type ClassOps interface {
	Classful() bool
	ChangeClass(ctx qdisc.Ctx, req qdisc.ClassReq) error
	DeleteClass(ctx qdisc.Ctx, id qdisc.ClassID) error
	Classes() []qdisc.Class
	QlenNotify(ctx qdisc.Ctx, id qdisc.ClassID, leaf qdisc.LeafState)
	// Grafted is qdisc.Grafter's, for a qdisc that implements it
	// (nothing otherwise).
	Grafted(ctx qdisc.Ctx, id qdisc.ClassID, leaf bool)
	SetFilters(now sim.Time, specs []string) error
	// FilterStats is `tc -s filter show` of the copy's block at at at
	// time now: its actions' counters, which only the copy that
	// classifies keeps.
	FilterStats(at qdisc.ClassID, now sim.Time) string
}

// SetUpcaller gives the context the way to the host's leaves (nil: the
// qdisc is not classful, and a leaf query is an error).
func (x *QdiscCtx) SetUpcaller(up LeafUpcaller) { x.up = up }

// SetFilters replaces the filters the context classifies with. The
// randomness of the copy (cls_flow's hashrnd and its perturbation) comes
// from the qdisc's seed, so in process and out it is the same, and the
// filters that were there before keep theirs (cls.Set.Keep); now is the
// tc command's time on the qdisc's clock (a new flow filter's
// perturbation timer starts then).
func (x *QdiscCtx) SetFilters(now sim.Time, specs []string) error {
	s, err := cls.Load(specs)
	if err != nil {
		return err
	}
	s.SetSeed(x.seed)
	s.Keep(x.filters, now)
	x.filters = s
	return nil
}

// FilterStats is `tc -s filter show` of the block at at of the
// context's copy of the filters, at time now ("" without filters).
func (x *QdiscCtx) FilterStats(at qdisc.ClassID, now sim.Time) string {
	if x.filters == nil {
		return ""
	}
	return x.filters.ShowStats(at, cls.Dump{Now: now})
}

// Filtered implements qdisc.FilterCtx.
func (x *QdiscCtx) Filtered(at qdisc.ClassID) bool {
	return x.filters != nil && x.filters.Filtered(at)
}

// Classify implements qdisc.ClassCtx and qdisc.FilterCtx: tcf_classify
// on the context's copy of the filters.
func (x *QdiscCtx) Classify(p *skb.Packet, at qdisc.ClassID) qdisc.FilterResult {
	if x.filters == nil {
		return qdisc.FilterResult{}
	}
	return x.filters.Classify(x, p, at)
}

func (x *QdiscCtx) upcaller() LeafUpcaller {
	if x.up == nil {
		sim.Panicf("qdisc asked for a leaf (ClassCtx) but is not classful (it implements no qdisc.Classful)")
	}
	return x.up
}

// EnqueueLeaves implements qdisc.ClassCtx: one query for the batch.
func (x *QdiscCtx) EnqueueLeaves(batch []skb.Packet, to []qdisc.ClassID, res []qdisc.LeafResult) {
	if len(to) != len(batch) || len(res) != len(batch) {
		sim.Panicf("qdisc enqueued %d packets to leaves with %d classes and %d results", len(batch), len(to), len(res))
	}
	if len(batch) == 0 {
		return
	}
	x.leaves = x.leaves[:0]
	for i := range batch {
		p := &batch[i]
		x.leaves = append(x.leaves, qdisc.LeafPacketOf(p, to[i]))
	}
	x.synced(x.upcaller().LeafEnqueue(x, x.leaves, res))
}

// DequeueLeaf implements qdisc.ClassCtx.
func (x *QdiscCtx) DequeueLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	p, ok, st, now := x.upcaller().LeafDequeue(x, id, false)
	x.synced(now)
	return p, ok, st
}

// PeekLeaf implements qdisc.ClassCtx.
func (x *QdiscCtx) PeekLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	p, ok, st, now := x.upcaller().LeafDequeue(x, id, true)
	x.synced(now)
	return p, ok, st
}

// LocalUp is the in-process LeafUpcaller: the host answers at once.
type LocalUp struct{ Host ClassHost }

func (u LocalUp) LeafEnqueue(x *QdiscCtx, batch []qdisc.LeafPacket, res []qdisc.LeafResult) sim.Time {
	ops, trailing := x.Posted()
	ApplyQdisc(u.Host, ops, trailing)
	u.Host.LeafEnqueue(batch, res)
	return u.Host.Now()
}

func (u LocalUp) LeafDequeue(x *QdiscCtx, id qdisc.ClassID, peek bool) (skb.Packet, bool, qdisc.LeafState, sim.Time) {
	ops, trailing := x.Posted()
	ApplyQdisc(u.Host, ops, trailing)
	if peek {
		p, ok, st := u.Host.LeafPeek(id)
		return p, ok, st, u.Host.Now()
	}
	p, ok, st := u.Host.LeafDequeue(id)
	return p, ok, st, u.Host.Now()
}

// AnswerLeaf answers a leaf query from its payload d, on host, encoding
// the answer's payload into e. It is what a host does with a plugin's
// qdisc upcall (after applying its posted ops).
func AnswerLeaf(host ClassHost, q Query, d *Dec, e *Enc, batch []qdisc.LeafPacket, res []qdisc.LeafResult) ([]qdisc.LeafPacket, []qdisc.LeafResult, error) {
	switch q {
	case QueryLeafEnqueue:
		n := d.count(22, "leaf packet")
		batch = batch[:0]
		for range n {
			batch = append(batch, DecodeLeafPacket(d))
		}
		if err := d.End(); err != nil {
			return batch, res, err
		}
		res = res[:0]
		for range batch {
			res = append(res, qdisc.LeafResult{})
		}
		host.LeafEnqueue(batch, res)
		EncodeLeafEnqueue(e, res)
	case QueryLeafDequeue, QueryLeafPeek:
		id := qdisc.ClassID(d.U32())
		if err := d.End(); err != nil {
			return batch, res, err
		}
		var p skb.Packet
		var ok bool
		var st qdisc.LeafState
		if q == QueryLeafPeek {
			p, ok, st = host.LeafPeek(id)
		} else {
			p, ok, st = host.LeafDequeue(id)
		}
		e.Bool(ok)
		e.Packet(&p)
		e.I64(int64(st.Qlen))
		e.I64(st.Backlog)
	default:
		return batch, res, fmt.Errorf("asked the host query %d, which is no leaf query", q)
	}
	return batch, res, nil
}

// DecodeLeafPacket reads one packet of a leaf enqueue query.
func DecodeLeafPacket(d *Dec) qdisc.LeafPacket {
	return qdisc.LeafPacket{Handle: skb.Handle(d.U64()), Class: qdisc.ClassID(d.U32()), Priority: d.U32(), Mark: d.U32(),
		ECN: d.U8(), DSCP: d.U8(), Queue: d.U16()}
}

// EncodeLeafQuery appends a leaf query's payload (after the query byte).
func EncodeLeafQuery(e *Enc, batch []qdisc.LeafPacket, id qdisc.ClassID) {
	if batch != nil {
		e.U32(uint32(len(batch)))
		for _, p := range batch {
			e.U64(uint64(p.Handle))
			e.U32(uint32(p.Class))
			e.U32(p.Priority)
			e.U32(p.Mark)
			e.U8(p.ECN)
			e.U8(p.DSCP)
			e.U16(p.Queue)
		}
		return
	}
	e.U32(uint32(id))
}

// EncodeLeafEnqueue writes a leaf enqueue answer: each packet's code as
// the leaf answered it (__NET_XMIT_BYPASS kept, as qdisc_enqueue
// returns it to the parent), its leaf's qlen and backlog, and the
// packets the leaf made of it.
func EncodeLeafEnqueue(e *Enc, res []qdisc.LeafResult) {
	e.U32(uint32(len(res)))
	for _, r := range res {
		e.U8(byte(r.Code))
		e.I64(int64(r.Leaf.Qlen))
		e.I64(r.Leaf.Backlog)
		e.U32(uint32(r.Segs))
	}
}

// DecodeLeafEnqueue reads a leaf enqueue answer into res.
func DecodeLeafEnqueue(d *Dec, res []qdisc.LeafResult) error {
	n := int(d.U32())
	if d.Err == nil && n != len(res) {
		return fmt.Errorf("host answered %d leaf results for %d packets", n, len(res))
	}
	for i := range res {
		res[i] = qdisc.LeafResult{Code: qdisc.Code(d.U8()), Leaf: qdisc.LeafState{Qlen: int(d.I64()), Backlog: d.I64()}, Segs: int(d.U32())}
		if d.Err == nil && !res[i].Code.Valid() {
			return fmt.Errorf("host answered %v for leaf packet %d", res[i].Code, i)
		}
	}
	return d.End()
}

// DecodeLeafDequeue reads a leaf dequeue or peek answer.
func DecodeLeafDequeue(d *Dec) (skb.Packet, bool, qdisc.LeafState, error) {
	ok := d.Bool()
	p := d.Packet()
	st := qdisc.LeafState{Qlen: int(d.I64()), Backlog: d.I64()}
	return p, ok, st, d.End()
}

// EncodeClasses appends a class dump (MQClasses' reply).
func EncodeClasses(e *Enc, cs []qdisc.Class) {
	e.U32(uint32(len(cs)))
	for i := range cs {
		c := &cs[i]
		e.U32(uint32(c.ID))
		e.U32(uint32(c.Parent))
		e.Bool(c.Leaf)
		e.Bool(c.GraftOnly)
		e.Bool(c.DelNoop)
		e.U64(c.LeafGen)
		EncodeStrs(e, c.DefaultLeaf)
		e.U32(c.FifoLimit)
		e.Bool(c.Filters)
		e.Str(c.Options)
		e.Bool(c.LeafStats)
		e.Bool(c.NoStats)
		e.Bool(c.LeafQstats)
		e.U64(c.SentPackets)
		e.U64(c.SentBytes)
		e.U64(c.Drops)
		e.U64(c.Overlimits)
		e.I64(int64(c.Qlen))
		e.I64(c.Backlog)
		e.U16(uint16(len(c.XStats)))
		for _, x := range c.XStats {
			e.Str(x.Key)
			e.U8(byte(x.Type))
			e.U64(x.Bits)
		}
	}
}

// DecodeClasses reads a class dump.
func DecodeClasses(d *Dec) ([]qdisc.Class, error) {
	n := d.count(74, "class")
	out := make([]qdisc.Class, 0, n)
	for range n {
		c := qdisc.Class{ID: qdisc.ClassID(d.U32()), Parent: qdisc.ClassID(d.U32()), Leaf: d.Bool(), GraftOnly: d.Bool(), DelNoop: d.Bool(), LeafGen: d.U64(), DefaultLeaf: DecodeStrs(d),
			FifoLimit: d.U32(), Filters: d.Bool(), Options: d.Str(),
			LeafStats: d.Bool(), NoStats: d.Bool(), LeafQstats: d.Bool(), SentPackets: d.U64(), SentBytes: d.U64(), Drops: d.U64(), Overlimits: d.U64(),
			Qlen: int(d.I64()), Backlog: d.I64()}
		nx := int(d.U16())
		for range nx {
			x := qdisc.XStat{Key: d.Str(), Type: qdisc.XType(d.U8()), Bits: d.U64()}
			if !x.Type.Valid() {
				return nil, fmt.Errorf("class %s xstat %q of type %d", c.ID, x.Key, x.Type)
			}
			c.XStats = append(c.XStats, x)
		}
		if d.Err != nil {
			return nil, d.Err
		}
		out = append(out, c)
	}
	return out, d.End()
}

// EncodeClassReq appends a class change (MQClassChange's payload after
// the time).
func EncodeClassReq(e *Enc, r qdisc.ClassReq) {
	e.U32(uint32(r.ID))
	e.U32(uint32(r.Parent))
	e.Bool(r.Create)
	e.Bool(r.Exists)
	EncodeStrs(e, r.Args)
}

// DecodeClassReq reads a class change.
func DecodeClassReq(d *Dec) qdisc.ClassReq {
	r := qdisc.ClassReq{ID: qdisc.ClassID(d.U32()), Parent: qdisc.ClassID(d.U32()), Create: d.Bool(), Exists: d.Bool()}
	r.Args = DecodeStrs(d)
	return r
}

// EncodeStrs appends a u16 count and the strings.
func EncodeStrs(e *Enc, ss []string) {
	e.U16(uint16(len(ss)))
	for _, s := range ss {
		e.Str(s)
	}
}

// DecodeStrs reads a u16 count and the strings.
func DecodeStrs(d *Dec) []string {
	n := d.U16()
	var out []string
	for range n {
		out = append(out, d.Str())
		if d.Err != nil {
			return nil
		}
	}
	return out
}
