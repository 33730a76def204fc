package plugin

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/pb"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// transport carries frames; Recv's bytes are valid until the next Send.
type transport interface {
	Send(frame []byte) error
	Recv() ([]byte, error)
}

// Catalog is what a plugin process serves.
type Catalog struct {
	Version string
	Qdiscs  map[string]Kind[qdisc.Qdisc]
	Drivers map[string]Kind[driver.Driver]
}

// garbler is a qdisc that corrupts its own dequeue replies on the wire
// (plugintest's test_garbage): the host must survive garbage.
type garbler interface{ GarbleReply(frame []byte) []byte }

// Kind is one qdisc kind or driver a plugin serves.
type Kind[T any] struct {
	Help string
	New  func() T
}

// server is the plugin side of the data path: it runs calls on the
// instances it made.
//
// Calls nest: a driver's query (a SyncPoint, say) lets other simulated
// CPUs run on the host, and they may call into this process before the
// query is answered. So a call that waits for an answer parks its
// goroutine, and whichever goroutine last sent a frame reads the next
// one: a new call runs on the reader (or on a fresh goroutine, if the
// reader is parked), an answer wakes the goroutine it is for.
type server struct {
	cat    *Catalog
	tr     transport
	insts  map[uint32]any
	next   uint32
	parked map[uint32]chan []byte
	done   chan error
	once   sync.Once
	free   []*callState
}

type qdiscInst struct {
	kind     string
	q        qdisc.Qdisc
	ctx      *wire.QdiscCtx
	defaults qdisc.Defaults
}

type driverInst struct {
	name string
	d    driver.Driver
	st   *wire.DriverState
	sel  driver.QueueSelector
}

// callState is one call's buffers (calls nest, so they are not shared).
type callState struct {
	enc  wire.Enc
	pkts []skb.Packet
	segs []uint16
	tcp  []skb.TCPHeader
	rc   []qdisc.Code
	xoff wire.XoffBits
}

func newServer(cat *Catalog, tr transport) *server {
	return &server{cat: cat, tr: tr, insts: map[uint32]any{}, parked: map[uint32]chan []byte{}, done: make(chan error, 1)}
}

// serve runs until the transport fails or closes.
func (s *server) serve() error {
	go s.readLoop()
	return <-s.done
}

func (s *server) stop(err error) { s.once.Do(func() { s.done <- err }) }

// readLoop holds the reader role until it hands it to a parked call.
func (s *server) readLoop() {
	for {
		msg, err := s.tr.Recv()
		if err != nil {
			s.stop(err)
			return
		}
		if len(msg) < 5 {
			s.stop(fmt.Errorf("host sent a %d-byte frame", len(msg)))
			return
		}
		call := le32(msg[1:])
		switch msg[0] {
		case wire.FrameCall:
			if err := s.run(msg); err != nil {
				s.stop(err)
				return
			}
		case wire.FrameAnswer:
			ch, ok := s.parked[call]
			if !ok {
				s.stop(fmt.Errorf("host answered call %d, which is not waiting", call))
				return
			}
			delete(s.parked, call)
			ch <- msg
			return // the woken call reads next
		default:
			s.stop(fmt.Errorf("host sent frame type %d", msg[0]))
			return
		}
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// await sends an upcall's frame and waits for its answer, reading (and
// running) whatever comes first.
func (s *server) await(call uint32, frame []byte) ([]byte, error) {
	if err := s.tr.Send(frame); err != nil {
		return nil, err
	}
	msg, err := s.tr.Recv()
	if err != nil {
		return nil, err
	}
	if len(msg) >= 5 && msg[0] == wire.FrameAnswer && le32(msg[1:]) == call {
		return msg, nil
	}
	// Someone else's turn: park, and let a reader carry on.
	me := make(chan []byte, 1)
	s.parked[call] = me
	go func() {
		if len(msg) >= 5 && msg[0] == wire.FrameAnswer {
			other, ok := s.parked[le32(msg[1:])]
			if !ok {
				s.stop(fmt.Errorf("host answered call %d, which is not waiting", le32(msg[1:])))
				return
			}
			delete(s.parked, le32(msg[1:]))
			other <- msg
			return
		}
		if len(msg) < 5 || msg[0] != wire.FrameCall {
			s.stop(errors.New("host sent a malformed frame"))
			return
		}
		if err := s.run(msg); err != nil {
			s.stop(err)
			return
		}
		s.readLoop()
	}()
	return <-me, nil
}

func (s *server) getState() *callState {
	if n := len(s.free); n > 0 {
		st := s.free[n-1]
		s.free = s.free[:n-1]
		return st
	}
	return &callState{}
}

// run runs one call and sends its reply.
func (s *server) run(msg []byte) error {
	st := s.getState()
	d := wire.Dec{B: msg[1:]}
	call, inst, m := d.U32(), d.U32(), wire.Method(d.U8())
	st.enc.Reset()
	st.enc.U8(wire.FrameReply)
	st.enc.U32(call)
	status, text := s.dispatch(st, call, inst, m, &d)
	if status != wire.StatusOK {
		st.enc.Reset()
		st.enc.U8(wire.FrameReply)
		st.enc.U32(call)
		st.enc.U8(status)
		st.enc.Str(text)
	}
	err := s.tr.Send(st.enc.B)
	s.free = append(s.free, st)
	return err
}

// dispatch decodes a call, runs it and encodes the reply body after the
// status byte. A panic in plugin code is the call's error.
func (s *server) dispatch(st *callState, call, inst uint32, m wire.Method, d *wire.Dec) (status byte, text string) {
	defer func() {
		if r := recover(); r != nil {
			var me *sim.ModelError
			if e, ok := r.(error); ok && errors.As(e, &me) {
				status, text = wire.StatusError, me.Msg
				return
			}
			status, text = wire.StatusError, panicReply(r, debug.Stack())
		}
	}()
	st.enc.U8(wire.StatusOK)
	switch m {
	case wire.MNewQdisc:
		kind := d.Str()
		k, ok := s.cat.Qdiscs[kind]
		if !ok {
			return wire.StatusUnknown, fmt.Sprintf("no qdisc kind %q here", kind)
		}
		s.next++
		qi := &qdiscInst{kind: kind, q: k.New()}
		s.insts[s.next] = qi
		st.enc.U32(s.next)
		_, classful := qi.q.(qdisc.Classful)
		st.enc.Bool(classful)
		return wire.StatusOK, ""
	case wire.MNewDriver:
		name := d.Str()
		k, ok := s.cat.Drivers[name]
		if !ok {
			return wire.StatusUnknown, fmt.Sprintf("no driver %q here", name)
		}
		s.next++
		di := &driverInst{name: name, d: k.New()}
		di.sel, _ = di.d.(driver.QueueSelector)
		s.insts[s.next] = di
		st.enc.U32(s.next)
		st.enc.Bool(di.sel != nil)
		return wire.StatusOK, ""
	case wire.MClose:
		delete(s.insts, inst)
		return wire.StatusOK, ""
	}
	switch x := s.insts[inst].(type) {
	case *qdiscInst:
		return s.qdiscCall(st, call, x, m, d)
	case *driverInst:
		return s.driverCall(st, call, x, m, d)
	}
	return wire.StatusUnknown, fmt.Sprintf("no instance %d", inst)
}

func decodePB(d *wire.Dec, m proto.Message) error {
	b := d.Bytes()
	if err := d.End(); err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

func encodePB(e *wire.Enc, m proto.Message) {
	b, _ := proto.Marshal(m)
	e.Bytes(b)
}

func (s *server) qdiscCall(st *callState, call uint32, q *qdiscInst, m wire.Method, d *wire.Dec) (byte, string) {
	e := &st.enc
	if q.ctx != nil {
		q.ctx.SetUpcaller(nil) // leaf queries only during a call that may make them
	}
	switch m {
	case wire.MQClassChange, wire.MQClassDelete, wire.MQClasses, wire.MQQlenNotify, wire.MQFilters, wire.MQGrafted, wire.MQFilterStats:
		return s.classCall(st, call, q, m, d)
	case wire.MQInit:
		now := sim.Time(d.I64())
		var ps pb.QdiscSetup
		if err := decodePB(d, &ps); err != nil {
			return wire.StatusError, err.Error()
		}
		setup, seed, prices := setupFromPB(&ps)
		_, timer := q.q.(qdisc.TimerQdisc)
		q.ctx = wire.NewQdiscCtx(seed, prices, timer)
		q.ctx.SetDevTxQ(setup.DevTxQ)
		q.ctx.Begin(now)
		info, err := q.q.Init(q.ctx, setup, ps.Args)
		if err == nil {
			err = info.CheckDropReasons()
		}
		if err != nil {
			q.ctx = nil
			return optionStatus(err), err.Error()
		}
		e.Ops(q.ctx.Posted())
		encodePB(e, infoToPB(info))
		return wire.StatusOK, ""
	case wire.MQStats:
		encodePB(e, statsToPB(q.defaults.Stats(q.q)))
		return wire.StatusOK, ""
	case wire.MQDump:
		e.Str(q.q.Dump())
		return wire.StatusOK, ""
	}
	if q.ctx == nil {
		return wire.StatusError, fmt.Sprintf("%s before init", m)
	}
	q.ctx.Begin(sim.Time(d.I64()))
	if _, ok := q.q.(qdisc.Classful); ok {
		q.ctx.SetUpcaller(serverLeafUp{s: s, call: call})
	}
	switch m {
	case wire.MQEnqueue:
		st.pkts = d.Packets(st.pkts[:0])
		st.segs = d.Segs(st.segs)
		if n := len(st.segs); n != 0 && n != len(st.pkts) {
			return wire.StatusError, fmt.Sprintf("%d segment places for a batch of %d", n, len(st.pkts))
		}
		q.ctx.SetSegs(st.segs)
		st.tcp = d.TCPHeaders(st.tcp)
		if n := len(st.tcp); n != 0 && n != len(st.pkts) {
			return wire.StatusError, fmt.Sprintf("%d TCP headers for a batch of %d", n, len(st.pkts))
		}
		q.ctx.SetTCPHeaders(st.tcp)
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		st.rc = st.rc[:0]
		for range st.pkts {
			st.rc = append(st.rc, qdisc.XmitSuccess)
		}
		q.q.Enqueue(q.ctx, st.pkts, st.rc)
		q.ctx.SetSegs(nil)
		q.ctx.SetTCPHeaders(nil)
		e.Ops(q.ctx.Posted())
		e.U32(uint32(len(st.rc)))
		for _, c := range st.rc {
			e.U8(byte(c))
		}
	case wire.MQDequeue:
		req := qdisc.DequeueReq{Max: int(d.U32()), Bytes: d.I64(), SameQueue: d.Bool()}
		q.ctx.SetTxqStopped(d.Bytes())
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		st.pkts = q.defaults.Dequeue(q.q, q.ctx, req, st.pkts[:0])
		e.Ops(q.ctx.Posted())
		e.U32(uint32(len(st.pkts)))
		for i := range st.pkts {
			e.DequeuedPacket(&st.pkts[i])
		}
		if g, ok := q.q.(garbler); ok {
			e.B = g.GarbleReply(e.B)
		}
	case wire.MQPeek:
		q.ctx.SetTxqStopped(d.Bytes())
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		p, ok := q.defaults.Peek(q.q, q.ctx)
		e.Ops(q.ctx.Posted())
		e.Bool(ok)
		e.Packet(&p)
	case wire.MQReset:
		q.defaults.Reset(q.q, q.ctx)
		e.Ops(q.ctx.Posted())
	case wire.MQTimer:
		t, ok := q.q.(qdisc.TimerQdisc)
		if !ok {
			return wire.StatusError, "qdisc has no Timer method"
		}
		t.Timer(q.ctx)
		e.Ops(q.ctx.Posted())
	case wire.MQChange:
		var a pb.Args
		if err := decodePB(d, &a); err != nil {
			return wire.StatusError, err.Error()
		}
		// A change validates before it drops anything, so a refused one
		// has posted nothing. One refused after part of it was applied
		// (qdisc.PartialChange) answers the qdisc's Info after that
		// part, then the refusal.
		info, err := qdisc.Change(q.q, q.ctx, a.Args)
		var pc *qdisc.PartialChange
		if errors.As(err, &pc) {
			info, err = pc.Info, nil
		}
		if err != nil {
			return optionStatus(err), err.Error()
		}
		e.Ops(q.ctx.Posted())
		encodePB(e, infoToPB(info))
		if pc == nil {
			e.U8(wire.StatusOK)
		} else {
			e.U8(optionStatus(pc.Err))
			e.Str(pc.Err.Error())
		}
	default:
		return wire.StatusUnknown, fmt.Sprintf("qdisc has no %s", m)
	}
	return wire.StatusOK, ""
}

// optionStatus is the reply status for an Init or Change error, by its
// class (qdisc.ErrParse and unclassified errors: StatusInvalid).
func optionStatus(err error) byte {
	switch {
	case errors.Is(err, qdisc.ErrCannotChange):
		return wire.StatusNoChange
	case errors.Is(err, qdisc.ErrKernel):
		return wire.StatusRefused
	case errors.Is(err, qdisc.ErrLacks):
		return wire.StatusLacks
	case errors.Is(err, qdisc.ErrSyntax):
		return wire.StatusSyntax
	}
	return wire.StatusInvalid
}

func (s *server) driverCall(st *callState, call uint32, dv *driverInst, m wire.Method, d *wire.Dec) (byte, string) {
	e := &st.enc
	switch m {
	case wire.MDInit:
		var ps pb.DriverSetup
		if err := decodePB(d, &ps); err != nil {
			return wire.StatusError, err.Error()
		}
		setup, err := driverSetupFromPB(&ps)
		if err != nil {
			return wire.StatusError, err.Error()
		}
		dv.st = wire.NewDriverState(setup.NumTxQ)
		info, err := dv.d.Init(setup, ps.Args)
		if err != nil {
			return wire.StatusInvalid, err.Error()
		}
		encodePB(e, driverInfoToPB(info))
		return wire.StatusOK, ""
	case wire.MDStats:
		encodePB(e, driverStatsToPB(dv.d.Stats()))
		return wire.StatusOK, ""
	case wire.MDRxComplete:
		now, v := sim.Time(d.I64()), int(d.U32())
		pkts, bytes := d.U64(), d.U64()
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		m, ok := dv.d.(driver.RxModerator)
		if !ok || dv.st == nil {
			return wire.StatusUnknown, "driver has no rx moderation of its own"
		}
		e.I64(int64(m.RxComplete(now, v, pkts, bytes)))
		return wire.StatusOK, ""
	case wire.MDSelect:
		p := d.Packet()
		n := int(d.U32())
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		if dv.sel == nil {
			return wire.StatusUnknown, "driver has no ndo_select_queue"
		}
		q, ok := dv.sel.SelectQueue(p, n)
		e.I64(int64(q))
		e.Bool(ok)
		return wire.StatusOK, ""
	}
	if dv.st == nil {
		return wire.StatusError, fmt.Sprintf("%s before init", m)
	}
	now := sim.Time(d.I64())
	cpu := int(d.U32())
	st.xoff = d.Xoff(st.xoff)
	x := dv.st.Get(cpu, now, s, st.xoff)
	x.Call = call
	defer dv.st.Put(x)
	switch m {
	case wire.MDXmit:
		txq := int(d.U32())
		st.pkts = d.Packets(st.pkts[:0])
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		sent, rc := dv.d.Xmit(x, txq, st.pkts)
		e.Ops(x.Posted())
		e.U32(uint32(sent))
		e.U8(byte(rc))
	case wire.MDPoll:
		v, budget := int(d.U32()), int(int32(d.U32()))
		if err := d.End(); err != nil {
			return wire.StatusError, err.Error()
		}
		work, done := dv.d.Poll(x, v, budget)
		e.Ops(x.Posted())
		e.U32(uint32(int32(work)))
		e.Bool(done)
	default:
		return wire.StatusUnknown, fmt.Sprintf("driver has no %s", m)
	}
	return wire.StatusOK, ""
}

// Upcall implements wire.Upcaller: send the posted ops and the query,
// wait for the host's answer.
func (s *server) Upcall(x *wire.DriverCtx, q wire.Query, arg int64) (sim.Time, bool) {
	st := s.getState()
	defer func() { s.free = append(s.free, st) }()
	e := &st.enc
	e.Reset()
	e.U8(wire.FrameUpcall)
	e.U32(x.Call)
	e.Ops(x.Posted())
	e.U8(byte(q))
	e.I64(arg)
	msg, err := s.await(x.Call, e.B)
	if err != nil {
		panic(fmt.Sprintf("host gone during a query: %v", err))
	}
	d := wire.Dec{B: msg[5:]}
	now := sim.Time(d.I64())
	ans := d.Bool()
	bits := d.Xoff(nil)
	if err := d.End(); err != nil {
		panic(fmt.Sprintf("bad answer from the host: %v", err))
	}
	x.Synced(bits)
	return now, ans
}
