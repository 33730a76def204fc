package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// The data path's frames: little-endian, fixed-width fields, strings as a
// u16 length and bytes. A host frame is a Call or an Answer to an upcall;
// a plugin frame is the Reply to a call or an Upcall during one. Frames
// strictly alternate: the host sends one, the plugin sends one.
//
//	Call   = u8 FrameCall   u32 call  u32 instance  u8 method  payload
//	Answer = u8 FrameAnswer u32 call  i64 now  u8 answer  xoff
//	Reply  = u8 FrameReply  u32 call  u8 status  ops  i64 trailing  payload
//	         (status StatusError: str message instead of ops..payload)
//	Upcall = u8 FrameUpcall u32 call  ops  i64 trailing  u8 query  i64 arg
//	ops    = u16 n, n x (u8 kind  i64 spend  fields of the kind)
//	xoff   = u16 n, n x u64 (bit i: txq i stopped by the driver)
//	packet = 80 bytes, see Packet (byte 35 is flags, byte 76 the TCP flags; bytes 77-79 are zero)
//
// Method payloads are listed with the Method constants.

// Frame types.
const (
	FrameCall   byte = 1
	FrameAnswer byte = 2
	FrameReply  byte = 3
	FrameUpcall byte = 4
)

// Reply statuses.
const (
	StatusOK       byte = 0
	StatusError    byte = 1 // the call failed: str message
	StatusNoChange byte = 2 // Change on a qdisc that is not a Changer
	StatusUnknown  byte = 3 // no such kind / instance / method: str message
	StatusInvalid  byte = 4 // Init or Change: tc would refuse the options (qdisc.ErrParse): str message
	StatusRefused  byte = 5 // Init or Change: the kernel refuses them (qdisc.ErrKernel): str message
	StatusLacks    byte = 6 // Init or Change: the model lacks an option (qdisc.ErrLacks): str message
	StatusSyntax   byte = 7 // Init or Change: tc's own command line refuses them (qdisc.ErrSyntax): str message
)

// Method is what a Call asks for.
type Method uint8

// Methods, with their payloads (call -> reply, after ops and trailing
// spend where the method runs plugin code with a context).
const (
	MNewQdisc  Method = iota + 1 // str kind -> u32 instance, u8 classful
	MNewDriver                   // str name -> u32 instance, u8 has ndo_select_queue
	MQInit                       // i64 now, pb QdiscSetup -> ops, pb QdiscInfo
	MQEnqueue                    // i64 now, packets, segs, tcp headers -> ops, u32 n, n x u8 rc
	MQDequeue                    // i64 now, u32 max, i64 bytes, u8 same_queue, bytes txq_stopped -> ops, u32 n, n x (u64 handle, u8 ecn, u8 dscp, u32 priority, u32 mark, u16 queue)
	MQPeek                       // i64 now, bytes txq_stopped -> ops, u8 ok, packet (qdisc_peek_dequeued without a Peek)
	MQReset                      // i64 now -> ops (refused if it holds packets and has no Reset)
	MQStats                      // -> pb QdiscStats
	MQDump                       // -> str
	MQChange                     // i64 now, pb Args -> ops, pb QdiscInfo, u8 status (StatusOK, or a refusal after part of the change: str message)
	MDInit                       // pb DriverSetup -> pb DriverInfo
	MDXmit                       // i64 now, u32 cpu, xoff, u32 txq, packets -> ops, u32 sent, u8 rc
	MDPoll                       // i64 now, u32 cpu, xoff, u32 vector, i32 budget -> ops, i32 work, u8 done
	MDStats                      // -> pb DriverStats
	MDSelect                     // packet, u32 num_txq -> i32 q, u8 ok
	MClose                       // -> (the instance is gone)
	MQTimer                      // i64 now -> ops (the qdisc's own timer fired)
	// A classful qdisc's (wire/class.go): MNewQdisc's reply also says
	// whether the qdisc is classful (u8), and its data-path calls may
	// make leaf queries (QueryLeaf*) as upcalls.
	MQClassChange // i64 now, u32 id, u32 parent, u8 create, u8 exists, strs args -> ops, str warning
	MQClassDelete // i64 now, u32 id -> ops
	MQClasses     // -> classes (EncodeClasses)
	MQQlenNotify  // i64 now, u32 id, i64 qlen, i64 backlog -> ops
	MQFilters     // strs (cls.Set.Specs) -> (a classless qdisc's too, with qdisc.HasBlock)
	// A driver whose RxInfo says OwnITR (driver.RxModerator).
	MDRxComplete  // i64 now, u32 vector, u64 pkts, u64 bytes -> i64 rx itr
	MQGrafted     // i64 now, u32 id, u8 leaf -> ops (qdisc.Grafter)
	MQFilterStats // u32 block, i64 now -> bytes (tc -s filter show of the copy's block)
	numMethods
)

var methodNames = [numMethods]string{"", "new qdisc", "new driver", "init", "enqueue", "dequeue", "peek", "reset",
	"stats", "dump", "change", "init", "xmit", "poll", "stats", "select_queue", "close", "timer",
	"class change", "class delete", "classes", "qlen_notify", "filters", "rx_complete", "grafted", "filter stats"}

func (m Method) String() string {
	if m > 0 && m < numMethods {
		return methodNames[m]
	}
	return fmt.Sprintf("method %d", uint8(m))
}

// PacketSize is the encoded size of a packet.
const PacketSize = 80

// Packet flags (byte 35 of a packet).

// Enc appends a frame.
type Enc struct{ B []byte }

func (e *Enc) Reset()         { e.B = e.B[:0] }
func (e *Enc) U8(v byte)      { e.B = append(e.B, v) }
func (e *Enc) U16(v uint16)   { e.B = binary.LittleEndian.AppendUint16(e.B, v) }
func (e *Enc) U32(v uint32)   { e.B = binary.LittleEndian.AppendUint32(e.B, v) }
func (e *Enc) U64(v uint64)   { e.B = binary.LittleEndian.AppendUint64(e.B, v) }
func (e *Enc) I64(v int64)    { e.U64(uint64(v)) }
func (e *Enc) Bool(v bool)    { e.U8(b2u(v)) }
func (e *Enc) Bytes(b []byte) { e.U32(uint32(len(b))); e.B = append(e.B, b...) }

func (e *Enc) Str(s string) {
	if len(s) > math.MaxUint16 {
		s = s[:math.MaxUint16]
	}
	e.U16(uint16(len(s)))
	e.B = append(e.B, s...)
}

func b2u(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// Call starts a call frame.
func (e *Enc) Call(call, inst uint32, m Method) {
	e.Reset()
	e.U8(FrameCall)
	e.U32(call)
	e.U32(inst)
	e.U8(byte(m))
}

// Packet appends p (PacketSize bytes).
func (e *Enc) Packet(p *skb.Packet) {
	b := e.B
	n := len(b)
	b = append(b, make([]byte, PacketSize)...)
	w := b[n:]
	le := binary.LittleEndian
	le.PutUint64(w[0:], uint64(p.Handle))
	le.PutUint32(w[8:], p.Len)
	le.PutUint32(w[12:], p.TrueSize)
	le.PutUint32(w[16:], p.Hash)
	le.PutUint32(w[20:], p.Keys.Src)
	le.PutUint32(w[24:], p.Keys.Dst)
	le.PutUint16(w[28:], p.Keys.SrcPort)
	le.PutUint16(w[30:], p.Keys.DstPort)
	w[32], w[33], w[34] = p.Keys.Proto, p.DSCP, p.ECN
	w[35] = byte(p.Flags) // PacketDup is bit 0, as frame protocol 5's dup bit
	le.PutUint32(w[36:], p.Priority)
	le.PutUint32(w[40:], uint32(p.Sock))
	le.PutUint16(w[44:], p.Queue)
	le.PutUint16(w[46:], p.GSOSegs)
	le.PutUint64(w[48:], uint64(p.Tstamp))
	le.PutUint64(w[56:], 0) // was Packet.Enqueued, which no qdisc read: reserved
	le.PutUint64(w[64:], p.PacingRate)
	le.PutUint32(w[72:], p.Mark)
	w[76] = p.TCPFlags
	e.B = b
}

// DequeuedPacket appends a dequeued packet as a dequeue's answer
// carries it: its handle and what the qdisc may have written into the
// skb (a CE mark, cake's wash of the DSCP, a filter's skbedit of
// skb->priority, skb->mark and queue_mapping), which the host makes the
// skb's.
func (e *Enc) DequeuedPacket(p *skb.Packet) {
	e.U64(uint64(p.Handle))
	e.U8(p.ECN)
	e.U8(p.DSCP)
	e.U32(p.Priority)
	e.U32(p.Mark)
	e.U16(p.Queue)
}

// Packets appends a u32 count and the packets.
func (e *Enc) Packets(ps []skb.Packet) {
	e.U32(uint32(len(ps)))
	for i := range ps {
		e.Packet(&ps[i])
	}
}

// Segs appends an enqueue's segment places (qdisc.SegPlaces): a u32
// count (0, or the batch's length) and that many u16s.
func (e *Enc) Segs(places []uint16) {
	e.U32(uint32(len(places)))
	for _, v := range places {
		e.U16(v)
	}
}

// Ops appends posted operations and the trailing spend.
func (e *Enc) Ops(ops []Op, trailing int64) {
	e.U16(uint16(len(ops)))
	for i := range ops {
		op := &ops[i]
		e.U8(byte(op.Kind))
		e.I64(op.Spend)
		switch op.Kind {
		case OpQdiscDrop, OpQdiscDequeueDrop, OpDriverDrop:
			e.U64(uint64(op.H))
			e.Str(string(op.Reason))
		case OpConsume, OpQdiscDuplicate:
			e.U64(uint64(op.H))
		case OpQdiscModTimer, OpWakeQueue, OpStartQueue, OpNapiScheduleLocal, OpQdiscReadSibling:
			e.I64(op.A)
		case OpQdiscCancelWatchdog, OpQdiscDelTimer:
		case OpRaiseIRQ, OpQdiscLines, OpQdiscWatchdog:
			e.I64(op.A)
			e.I64(op.B)
		default: // SentQueue, SentQueueMore, CompletedQueue
			e.I64(op.A)
			e.I64(op.B)
			e.I64(op.C)
		}
	}
	e.I64(trailing)
}

// Xoff appends a queue-stopped bitmap.
func (e *Enc) Xoff(b XoffBits) {
	e.U16(uint16(len(b)))
	for _, w := range b {
		e.U64(w)
	}
}

// Dec reads a frame. A short or malformed frame sets Err and makes every
// later read return zero: callers check Err once at the end.
type Dec struct {
	B   []byte
	Err error
}

func (d *Dec) fail(what string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("malformed frame: %s", what)
	}
	d.B = nil
}

func (d *Dec) take(n int, what string) []byte {
	if d.Err != nil || n < 0 || len(d.B) < n {
		d.fail("short " + what)
		return nil
	}
	b := d.B[:n]
	d.B = d.B[n:]
	return b
}

func (d *Dec) U8() byte {
	if b := d.take(1, "u8"); b != nil {
		return b[0]
	}
	return 0
}

func (d *Dec) U16() uint16 {
	if b := d.take(2, "u16"); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *Dec) U32() uint32 {
	if b := d.take(4, "u32"); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *Dec) U64() uint64 {
	if b := d.take(8, "u64"); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *Dec) I64() int64 { return int64(d.U64()) }

func (d *Dec) Bool() bool {
	v := d.U8()
	if v > 1 {
		d.fail("bool not 0 or 1")
	}
	return v == 1
}

func (d *Dec) Str() string { return string(d.take(int(d.U16()), "string")) }

// Bytes reads a u32-counted byte string (not copied).
func (d *Dec) Bytes() []byte { return d.take(int(d.U32()), "bytes") }

// count reads a u32 count of items of size each and checks they fit.
func (d *Dec) count(size int, what string) int {
	n := int(d.U32())
	if d.Err == nil && n*size > len(d.B) {
		d.fail(what + " count past the end")
		return 0
	}
	return n
}

// Packet reads one packet.
func (d *Dec) Packet() skb.Packet {
	w := d.take(PacketSize, "packet")
	if w == nil {
		return skb.Packet{}
	}
	le := binary.LittleEndian
	return skb.Packet{
		Handle:   skb.Handle(le.Uint64(w[0:])),
		Len:      le.Uint32(w[8:]),
		TrueSize: le.Uint32(w[12:]),
		Hash:     le.Uint32(w[16:]),
		Keys: skb.FlowKeys{Src: le.Uint32(w[20:]), Dst: le.Uint32(w[24:]), SrcPort: le.Uint16(w[28:]),
			DstPort: le.Uint16(w[30:]), Proto: w[32]},
		DSCP:       w[33],
		ECN:        w[34],
		Priority:   le.Uint32(w[36:]),
		Sock:       int32(le.Uint32(w[40:])),
		Queue:      le.Uint16(w[44:]),
		GSOSegs:    le.Uint16(w[46:]),
		Tstamp:     int64ToTime(le.Uint64(w[48:])),
		PacingRate: le.Uint64(w[64:]),
		Mark:       le.Uint32(w[72:]),
		Flags:      skb.PacketFlags(w[35]),
		TCPFlags:   w[76],
	}
}

// DequeuedPacket reads what Enc.DequeuedPacket wrote.
func (d *Dec) DequeuedPacket() skb.Packet {
	return skb.Packet{Handle: skb.Handle(d.U64()), ECN: d.U8(), DSCP: d.U8(), Priority: d.U32(), Mark: d.U32(), Queue: d.U16()}
}

// Packets reads a u32 count and the packets, appending to out.
func (d *Dec) Packets(out []skb.Packet) []skb.Packet {
	n := d.count(PacketSize, "packet")
	for range n {
		out = append(out, d.Packet())
	}
	return out
}

// Segs reads what Enc.Segs wrote, into out[:0].
func (d *Dec) Segs(out []uint16) []uint16 {
	out = out[:0]
	n := d.count(2, "segment place")
	for range n {
		out = append(out, d.U16())
	}
	return out
}

// TCPHeaderSize is the encoded size of a TCP header (Enc.TCPHeaders):
// seq, ack_seq, the payload's length, TSval, TSecr, three SACK blocks,
// the block count, the flags and a byte of option bits.
const TCPHeaderSize = 47

// TCP header option bits.
const (
	tcpOptTS    = 1 << 0 // skb.TCPHeader.TS
	tcpOptOther = 1 << 1 // skb.TCPHeader.Other
)

// TCPHeaders appends an enqueue's TCP headers (qdisc.TCPCtx): a u32
// count (0, or the batch's length) and that many headers.
func (e *Enc) TCPHeaders(hs []skb.TCPHeader) {
	e.U32(uint32(len(hs)))
	for i := range hs {
		h := &hs[i]
		e.U32(h.Seq)
		e.U32(h.AckSeq)
		e.U32(h.DataLen)
		e.U32(h.TSval)
		e.U32(h.TSecr)
		for _, b := range h.SACK {
			e.U32(b.Start)
			e.U32(b.End)
		}
		e.U8(h.NSACK)
		e.U8(h.Flags)
		e.U8(b2u(h.TS)*tcpOptTS | b2u(h.Other)*tcpOptOther)
	}
}

// TCPHeaders reads what Enc.TCPHeaders wrote, into out[:0]. A header
// with more SACK blocks than fit, or option bits it does not know, is
// malformed.
func (d *Dec) TCPHeaders(out []skb.TCPHeader) []skb.TCPHeader {
	out = out[:0]
	n := d.count(TCPHeaderSize, "TCP header")
	for range n {
		var h skb.TCPHeader
		h.Seq, h.AckSeq, h.DataLen, h.TSval, h.TSecr = d.U32(), d.U32(), d.U32(), d.U32(), d.U32()
		for i := range h.SACK {
			h.SACK[i] = skb.SACKBlock{Start: d.U32(), End: d.U32()}
		}
		h.NSACK, h.Flags = d.U8(), d.U8()
		opts := d.U8()
		h.TS, h.Other = opts&tcpOptTS != 0, opts&tcpOptOther != 0
		if d.Err == nil && (h.NSACK > skb.MaxSACKBlocks || opts&^(tcpOptTS|tcpOptOther) != 0) {
			d.fail("TCP header")
		}
		out = append(out, h)
	}
	return out
}

var reasons = map[string]skb.DropReason{}

// reason reads a drop reason without allocating for the known ones.
func (d *Dec) reason() skb.DropReason {
	b := d.take(int(d.U16()), "reason")
	if r, ok := reasons[string(b)]; ok {
		return r
	}
	return skb.DropReason(b)
}

// InternReasons makes the decoder return rs without allocating.
func InternReasons(rs ...skb.DropReason) {
	for _, r := range rs {
		reasons[string(r)] = r
	}
}

func init() {
	InternReasons(skb.DropQdiscDrop, skb.DropQdiscBurst, skb.DropQdiscOverlimit, skb.DropQdiscCongested,
		skb.DropCakeFlood, skb.DropFQBandLimit, skb.DropFQHorizonLimit, skb.DropFQFlowLimit, skb.DropQueuePurge,
		skb.DropDevReady, skb.DropCPUBacklog, skb.DropTxDevice)
}

// Ops reads posted operations into out and returns them and the trailing
// spend. Unknown kinds and negative spends are errors.
func (d *Dec) Ops(out []Op) ([]Op, int64) {
	n := int(d.U16())
	if d.Err == nil && n*9 > len(d.B) {
		d.fail("op count past the end")
		return out, 0
	}
	for range n {
		op := Op{Kind: OpKind(d.U8()), Spend: d.I64()}
		switch op.Kind {
		case OpQdiscDrop, OpQdiscDequeueDrop, OpDriverDrop:
			op.H = skb.Handle(d.U64())
			op.Reason = d.reason()
		case OpConsume, OpQdiscDuplicate:
			op.H = skb.Handle(d.U64())
		case OpQdiscModTimer, OpWakeQueue, OpStartQueue, OpNapiScheduleLocal, OpQdiscReadSibling:
			op.A = d.I64()
		case OpQdiscCancelWatchdog, OpQdiscDelTimer:
		case OpRaiseIRQ, OpQdiscLines, OpQdiscWatchdog:
			op.A, op.B = d.I64(), d.I64()
			if op.Kind == OpQdiscWatchdog && op.B < 0 {
				d.fail(fmt.Sprintf("watchdog slack %d is negative", op.B))
			}
		case OpSentQueue, OpSentQueueMore, OpCompletedQueue:
			op.A, op.B, op.C = d.I64(), d.I64(), d.I64()
		default:
			d.fail(fmt.Sprintf("unknown op kind %d", op.Kind))
		}
		if op.Spend < 0 || op.Spend > MaxSpend {
			d.fail(spendErr(op.Spend))
		}
		if d.Err != nil {
			return out, 0
		}
		out = append(out, op)
	}
	trailing := d.I64()
	if trailing < 0 || trailing > MaxSpend {
		d.fail(spendErr(trailing))
	}
	return out, trailing
}

// MaxSpend bounds one spend: an hour of CPU time in one step is garbage,
// and keeps a run of spends far from overflowing the clock.
const MaxSpend = int64(3600e9)

func spendErr(v int64) string {
	if v < 0 {
		return fmt.Sprintf("negative spend %d ns", v)
	}
	return fmt.Sprintf("implausible spend %d ns", v)
}

// Xoff reads a queue-stopped bitmap into out.
func (d *Dec) Xoff(out XoffBits) XoffBits {
	n := int(d.U16())
	if d.Err == nil && n*8 > len(d.B) {
		d.fail("xoff count past the end")
		return out[:0]
	}
	out = out[:0]
	for range n {
		out = append(out, d.U64())
	}
	return out
}

// End checks nothing is left over.
func (d *Dec) End() error {
	if d.Err == nil && len(d.B) != 0 {
		d.fail(fmt.Sprintf("%d bytes left over", len(d.B)))
	}
	return d.Err
}

// int64ToTime converts an encoded time.
func int64ToTime(v uint64) sim.Time { return sim.Time(int64(v)) }
