package wire

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

// distinctPacket has every field set, each to a value no other field
// has, with a negative socket and negative times.
func distinctPacket() skb.Packet {
	return skb.Packet{
		Handle:   0x0102030405060708,
		Len:      0x11121314,
		TrueSize: 0x21222324,
		Hash:     0x31323334,
		Keys: skb.FlowKeys{Src: 0x41424344, Dst: 0x51525354, SrcPort: 0x6162, DstPort: 0x7172,
			Proto: 0x81},
		Priority:   0x91929394,
		DSCP:       0x2a,
		ECN:        3,
		Sock:       -123456,
		Queue:      0xa1a2,
		GSOSegs:    0xb1b2,
		Tstamp:     -987654321,
		PacingRate: 0xd1d2d3d4d5d6d7d8,
		Flags:      skb.PacketDup | skb.PacketTxtimeTAI,
		TCPFlags:   0xe5,
	}
}

// setAllOnes sets v (a number) to all ones: -1 signed, max unsigned.
func setAllOnes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(math.MaxUint64 >> (64 - v.Type().Bits()))
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("unexpected field kind " + v.Kind().String())
	}
}

// onlyField returns packets each with one leaf field of skb.Packet (the
// flow keys' too) all ones and the others zero, named by the field.
func onlyField() map[string]skb.Packet {
	out := map[string]skb.Packet{}
	var walk func(path string, idx []int, t reflect.Type)
	walk = func(path string, idx []int, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			at := append(append([]int(nil), idx...), i)
			if f.Type.Kind() == reflect.Struct {
				walk(path+f.Name+".", at, f.Type)
				continue
			}
			var p skb.Packet
			setAllOnes(reflect.ValueOf(&p).Elem().FieldByIndex(at))
			out[path+f.Name] = p
		}
	}
	walk("", nil, reflect.TypeFor[skb.Packet]())
	return out
}

func TestPacketRoundTrip(t *testing.T) {
	cases := map[string]skb.Packet{
		"zero":     {},
		"distinct": distinctPacket(),
		"orphan":   {Handle: 1, Len: 60, Sock: -1, GSOSegs: 1},
		"extremes": {Handle: math.MaxUint64, Len: math.MaxUint32, Sock: math.MinInt32,
			Tstamp: math.MinInt64, PacingRate: math.MaxUint64},
	}
	for name, p := range onlyField() {
		cases["only "+name] = p
	}
	if len(cases) < 4+17 {
		t.Fatalf("only %d cases: skb.Packet lost fields?", len(cases))
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			var e Enc
			e.U8(0xee) // a prefix, to check Packet appends
			e.Packet(&p)
			if len(e.B) != 1+PacketSize {
				t.Fatalf("encoded %d bytes, want %d", len(e.B), 1+PacketSize)
			}
			d := Dec{B: e.B}
			if d.U8() != 0xee {
				t.Fatal("prefix clobbered")
			}
			got := d.Packet()
			if err := d.End(); err != nil {
				t.Fatal(err)
			}
			if got != p {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
			}
		})
	}
}

func TestPacketsRoundTrip(t *testing.T) {
	a := distinctPacket()
	b := a
	b.Handle, b.Sock, b.Tstamp = 99, -1, -5
	for _, ps := range [][]skb.Packet{nil, {a}, {a, b, {}, a}} {
		var e Enc
		e.Packets(ps)
		if len(e.B) != 4+len(ps)*PacketSize {
			t.Fatalf("%d packets: %d bytes", len(ps), len(e.B))
		}
		d := Dec{B: e.B}
		prev := []skb.Packet{{Handle: 7}}
		got := d.Packets(prev)
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1+len(ps) || got[0].Handle != 7 {
			t.Fatalf("Packets did not append to out: %+v", got)
		}
		for i := range ps {
			if got[1+i] != ps[i] {
				t.Fatalf("packet %d: got %+v want %+v", i, got[1+i], ps[i])
			}
		}
	}
}

// opFields says which fields each kind carries.
var opFields = map[OpKind]string{
	OpQdiscDrop:           "HR",
	OpQdiscDequeueDrop:    "HR",
	OpDriverDrop:          "HR",
	OpConsume:             "H",
	OpQdiscWatchdog:       "AB",
	OpWakeQueue:           "A",
	OpNapiScheduleLocal:   "A",
	OpRaiseIRQ:            "AB",
	OpSentQueue:           "ABC",
	OpSentQueueMore:       "ABC",
	OpCompletedQueue:      "ABC",
	OpQdiscCancelWatchdog: "",
	OpQdiscModTimer:       "A",
	OpQdiscDelTimer:       "",
	OpQdiscDuplicate:      "H",
	OpStartQueue:          "A",
	OpQdiscLines:          "AB",
	OpQdiscReadSibling:    "A",
}

// carried is op with the fields its kind does not carry zeroed.
func carried(op Op) Op {
	f := opFields[op.Kind]
	out := Op{Kind: op.Kind, Spend: op.Spend}
	if strings.Contains(f, "H") {
		out.H = op.H
	}
	if strings.Contains(f, "R") {
		out.Reason = op.Reason
	}
	if strings.Contains(f, "A") {
		out.A = op.A
	}
	if strings.Contains(f, "B") {
		out.B = op.B
	}
	if strings.Contains(f, "C") {
		out.C = op.C
	}
	return out
}

// fullOp is an op of kind k with every field set.
func fullOp(k OpKind, i int64) Op {
	return Op{Kind: k, Spend: 1000 + i, H: skb.Handle(0xfeedface00000000 + uint64(i)),
		Reason: skb.DropReason(fmt.Sprintf("REASON_%d", i)), A: -(1 << 40) - i, B: 1<<50 + i, C: -7 - i}
}

func TestOpsEveryKind(t *testing.T) {
	for k := OpKind(1); k < numOps; k++ {
		if _, ok := opFields[k]; !ok {
			t.Fatalf("op kind %d (%s) is missing from the test table", k, k)
		}
		t.Run(fmt.Sprintf("%d_%s", uint8(k), k), func(t *testing.T) {
			for _, op := range []Op{fullOp(k, int64(k)), {Kind: k}, {Kind: k, Spend: MaxSpend,
				H: math.MaxUint64, Reason: skb.DropQdiscDrop, A: math.MinInt64, B: math.MaxInt64, C: math.MinInt64}} {
				var e Enc
				e.Ops([]Op{op}, 4242)
				d := Dec{B: e.B}
				got, trailing := d.Ops(nil)
				if err := d.End(); err != nil {
					t.Fatal(err)
				}
				if trailing != 4242 {
					t.Fatalf("trailing %d", trailing)
				}
				if want := carried(op); len(got) != 1 || got[0] != want {
					t.Fatalf("round trip of %+v:\n got %+v\nwant %+v", op, got, want)
				}
			}
		})
	}
}

func TestOpsSequence(t *testing.T) {
	var ops []Op
	for k := OpKind(1); k < numOps; k++ {
		ops = append(ops, carried(fullOp(k, int64(k)*3)))
	}
	ops = append(ops, Op{Kind: OpQdiscDrop, Reason: skb.DropQueuePurge, H: 1}, Op{Kind: OpDriverDrop, H: 2})
	for _, trailing := range []int64{0, 1, MaxSpend} {
		var e Enc
		e.Ops(ops, trailing)
		e.U8(0x5a) // something after, as a payload
		d := Dec{B: e.B}
		keep := []Op{{Kind: OpConsume, H: 77}}
		got, tr := d.Ops(keep[:1])
		if d.U8() != 0x5a {
			t.Fatal("payload after the ops lost")
		}
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		if tr != trailing {
			t.Fatalf("trailing %d, want %d", tr, trailing)
		}
		if !reflect.DeepEqual(got, append(keep[:1:1], ops...)) {
			t.Fatalf("got %+v\nwant %+v", got, ops)
		}
	}
	// No ops at all: just the count and the trailing spend.
	var e Enc
	e.Ops(nil, 9)
	if len(e.B) != 2+8 {
		t.Fatalf("empty ops: %d bytes", len(e.B))
	}
}

func TestReasonInterning(t *testing.T) {
	var e Enc
	e.Ops([]Op{{Kind: OpQdiscDrop, H: 1, Reason: skb.DropQdiscDrop}, {Kind: OpDriverDrop, H: 2, Reason: "SOMETHING_NEW"}}, 0)
	d := Dec{B: e.B}
	got, _ := d.Ops(nil)
	if d.End() != nil || got[0].Reason != skb.DropQdiscDrop || got[1].Reason != "SOMETHING_NEW" {
		t.Fatalf("reasons: %+v (%v)", got, d.Err)
	}
	if n := testing.AllocsPerRun(100, func() {
		d := Dec{B: e.B[:len(e.B)]}
		var buf [2]Op
		d.Ops(buf[:0])
	}); n > 1 {
		t.Errorf("decoding a known reason allocates (%v allocs)", n)
	}
}

func TestXoffBits(t *testing.T) {
	cases := []XoffBits{nil, {0}, {1}, {1 << 63, 1, 0}, {math.MaxUint64, 0x8000000000000001}}
	for _, b := range cases {
		var e Enc
		e.Xoff(b)
		if len(e.B) != 2+8*len(b) {
			t.Fatalf("%v: %d bytes", b, len(e.B))
		}
		d := Dec{B: e.B}
		got := d.Xoff(XoffBits{5, 6, 7, 8, 9, 10})
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(b) {
			t.Fatalf("%v: decoded %v (Xoff must reuse out from empty)", b, got)
		}
		for i := range b {
			if got[i] != b[i] {
				t.Fatalf("%v: decoded %v", b, got)
			}
		}
		for q := 0; q < 64*len(b)+70; q++ {
			want := q/64 < len(b) && b[q/64]>>(q%64)&1 == 1
			if got.QueueStopped(q) != want {
				t.Fatalf("%v: QueueStopped(%d) = %v", b, q, !want)
			}
		}
	}
	b := XoffBits{1 << 5, 1}
	for q, want := range map[int]bool{0: false, 5: true, 6: false, 63: false, 64: true, 65: false, 128: false, 1 << 20: false} {
		if b.QueueStopped(q) != want {
			t.Errorf("QueueStopped(%d) = %v", q, !want)
		}
	}
}

func TestScalarsRoundTrip(t *testing.T) {
	var e Enc
	e.U8(0xab)
	e.U16(0xbeef)
	e.U32(0xdeadbeef)
	e.U64(0x0123456789abcdef)
	e.I64(-42)
	e.Bool(true)
	e.Bool(false)
	e.Str("hello")
	e.Str("")
	e.Bytes([]byte{1, 2, 3})
	e.Bytes(nil)
	long := strings.Repeat("x", math.MaxUint16+10)
	e.Str(long)
	d := Dec{B: e.B}
	if d.U8() != 0xab || d.U16() != 0xbeef || d.U32() != 0xdeadbeef || d.U64() != 0x0123456789abcdef ||
		d.I64() != -42 || !d.Bool() || d.Bool() || d.Str() != "hello" || d.Str() != "" ||
		!bytes.Equal(d.Bytes(), []byte{1, 2, 3}) || len(d.Bytes()) != 0 || d.Str() != long[:math.MaxUint16] {
		t.Fatal("scalar round trip")
	}
	if err := d.End(); err != nil {
		t.Fatal(err)
	}
	// Little-endian, as documented.
	e.Reset()
	e.U32(0x04030201)
	if !bytes.Equal(e.B, []byte{1, 2, 3, 4}) {
		t.Fatalf("not little-endian: %x", e.B)
	}
}

func TestCallHeader(t *testing.T) {
	var e Enc
	e.B = append(e.B, 9, 9, 9) // Call resets
	e.Call(0x01020304, 0x0a0b0c0d, MQDequeue)
	want := []byte{FrameCall, 4, 3, 2, 1, 0x0d, 0x0c, 0x0b, 0x0a, byte(MQDequeue)}
	if !bytes.Equal(e.B, want) {
		t.Fatalf("call header %x, want %x", e.B, want)
	}
	for m := Method(1); m < numMethods; m++ {
		if m.String() == "" || strings.HasPrefix(m.String(), "method") {
			t.Errorf("method %d has no name", m)
		}
	}
	if Method(0).String() != "method 0" || numMethods.String() != fmt.Sprintf("method %d", numMethods) {
		t.Error("unknown methods are not named by number")
	}
	for k := OpKind(1); k < numOps; k++ {
		if k.String() == "op?" || k.String() == "" {
			t.Errorf("op kind %d has no name", k)
		}
	}
	if OpKind(0).String() != "op?" || numOps.String() != "op?" {
		t.Error("unknown op kinds named")
	}
}

// A frame that uses every reader, for the truncation test.
func everythingFrame() ([]byte, func(d *Dec)) {
	var e Enc
	e.Call(3, 4, MDXmit)
	e.Ops([]Op{fullOp(OpQdiscDrop, 1), fullOp(OpRaiseIRQ, 2), fullOp(OpSentQueueMore, 3), fullOp(OpConsume, 4)}, 11)
	e.Xoff(XoffBits{1, 2})
	p := distinctPacket()
	e.Packets([]skb.Packet{p, p})
	e.Packet(&p)
	e.Bool(true)
	e.Str("abc")
	e.Bytes([]byte("xyz"))
	e.I64(-1)
	read := func(d *Dec) {
		d.U8()
		d.U32()
		d.U32()
		d.U8()
		d.Ops(nil)
		d.Xoff(nil)
		d.Packets(nil)
		d.Packet()
		d.Bool()
		d.Str()
		d.Bytes()
		d.I64()
	}
	return e.B, read
}

func TestTruncatedFrames(t *testing.T) {
	full, read := everythingFrame()
	d := Dec{B: full}
	read(&d)
	if err := d.End(); err != nil {
		t.Fatalf("full frame: %v", err)
	}
	for n := range len(full) {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("frame cut to %d of %d bytes: panic %v", n, len(full), r)
				}
			}()
			d := Dec{B: full[:n:n]}
			read(&d)
			err := d.End()
			if err == nil {
				t.Fatalf("frame cut to %d of %d bytes decoded without error", n, len(full))
			}
			if !strings.HasPrefix(err.Error(), "malformed frame: ") {
				t.Fatalf("cut to %d: error %q", n, err)
			}
			// After an error every read is zero.
			if d.U8() != 0 || d.U64() != 0 || d.Str() != "" || d.Bool() || (d.Packet() != skb.Packet{}) {
				t.Fatalf("cut to %d: reads after the error are not zero", n)
			}
			if ops, tr := d.Ops(nil); len(ops) != 0 || tr != 0 {
				t.Fatalf("cut to %d: ops after the error", n)
			}
			if d.Err != err {
				t.Fatalf("cut to %d: the first error was replaced", n)
			}
		}()
	}
}

// opsFrame is the ops encoding of ops then trailing, with patch applied.
func opsFrame(ops []Op, trailing int64, patch func(b []byte) []byte) []byte {
	var e Enc
	e.Ops(ops, trailing)
	return patch(e.B)
}

func TestMalformed(t *testing.T) {
	le16 := func(v uint16) []byte { return []byte{byte(v), byte(v >> 8)} }
	le32 := func(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
	le64 := func(v uint64) []byte {
		var e Enc
		e.U64(v)
		return e.B
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	one := []Op{{Kind: OpQdiscWatchdog, Spend: 1, A: 2}}
	ops := func(d *Dec) { d.Ops(nil) }
	pkts := func(d *Dec) { d.Packets(nil) }
	p := distinctPacket()
	var pe Enc
	pe.Packet(&p)
	cases := []struct {
		name string
		b    []byte
		read func(d *Dec)
		want string
	}{
		{"op kind 0", cat(le16(1), []byte{0}, le64(0), le64(0), le64(0), le64(0), le64(0)), ops, "unknown op kind 0"},
		{"op kind past the last", opsFrame(one, 0, func(b []byte) []byte { b[2] = byte(numOps); return b }), ops,
			fmt.Sprintf("unknown op kind %d", numOps)},
		{"op kind 255", opsFrame(one, 0, func(b []byte) []byte { b[2] = 255; return b }), ops, "unknown op kind 255"},
		{"negative spend", opsFrame([]Op{{Kind: OpWakeQueue, Spend: -1}}, 0, func(b []byte) []byte { return b }), ops,
			"negative spend -1 ns"},
		{"negative watchdog slack", opsFrame([]Op{{Kind: OpQdiscWatchdog, A: 5, B: -1}}, 0, func(b []byte) []byte { return b }), ops,
			"watchdog slack -1 is negative"},
		{"negative spend of a later op", opsFrame([]Op{{Kind: OpWakeQueue, Spend: 5}, {Kind: OpConsume, Spend: math.MinInt64}}, 0,
			func(b []byte) []byte { return b }), ops, "negative spend"},
		{"negative trailing spend", opsFrame(one, -3, func(b []byte) []byte { return b }), ops, "negative spend -3 ns"},
		{"op count past the end", opsFrame(one, 0, func(b []byte) []byte { b[0] = 2; return b }), ops, "short"},
		{"op count far past the end", opsFrame(one, 0, func(b []byte) []byte { b[0], b[1] = 0xff, 0xff; return b }), ops,
			"op count past the end"},
		{"reason past the end", cat(le16(1), []byte{byte(OpQdiscDrop)}, le64(0), le64(1), le16(100), []byte("abc"), le64(0)),
			ops, "short reason"},
		{"no trailing spend", cat(le16(0), le32(0)), ops, "short u64"},
		{"packet count past the end", cat(le32(2), pe.B), pkts, "packet count past the end"},
		{"packet count huge", cat(le32(math.MaxUint32), pe.B), pkts, "packet count past the end"},
		{"short packet", cat(le32(1), pe.B[:PacketSize-1]), pkts, "packet count past the end"},
		{"xoff count past the end", cat(le16(2), le64(1)), func(d *Dec) { d.Xoff(nil) }, "xoff count past the end"},
		{"string past the end", cat(le16(4), []byte("abc")), func(d *Dec) { d.Str() }, "short string"},
		{"bytes past the end", cat(le32(4), []byte("abc")), func(d *Dec) { d.Bytes() }, "short bytes"},
		{"bytes length huge", cat(le32(math.MaxUint32), []byte("abc")), func(d *Dec) { d.Bytes() }, "short bytes"},
		{"bool 2", []byte{2}, func(d *Dec) { d.Bool() }, "bool not 0 or 1"},
		{"bool 255", []byte{255}, func(d *Dec) { d.Bool() }, "bool not 0 or 1"},
		{"leftover after ops", append(opsFrame(one, 0, func(b []byte) []byte { return b }), 0), ops, "1 bytes left over"},
		{"leftover after packets", cat(le32(1), pe.B, []byte{1, 2, 3}), pkts, "3 bytes left over"},
		{"leftover only", []byte{0}, func(d *Dec) {}, "1 bytes left over"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Dec{B: c.b}
			c.read(&d)
			err := d.End()
			if err == nil {
				t.Fatalf("%x decoded without error", c.b)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want %q", err, c.want)
			}
		})
	}
	// A bool that is not 0/1 still reads as false, and the error sticks.
	d := Dec{B: []byte{7, 1}}
	first, second := d.Bool(), d.Bool()
	if first || second || d.Err == nil {
		t.Fatal("bad bool accepted")
	}
	// Ops stop at the first bad op: nothing of it is returned.
	d = Dec{B: opsFrame([]Op{{Kind: OpWakeQueue, A: 1}, {Kind: OpWakeQueue, Spend: -1}}, 0, func(b []byte) []byte { return b })}
	if got, tr := d.Ops(nil); d.Err == nil || len(got) > 1 || tr != 0 {
		t.Fatalf("bad op returned: %+v %d %v", got, tr, d.Err)
	}
}

// seedOps are real encodings for the fuzzers' corpora.
func seedOps() [][]byte {
	var seeds [][]byte
	var all []Op
	for k := OpKind(1); k < numOps; k++ {
		op := carried(fullOp(k, int64(k)))
		all = append(all, op)
		var e Enc
		e.Ops([]Op{op}, int64(k))
		seeds = append(seeds, e.B)
	}
	var e Enc
	e.Ops(all, 77)
	seeds = append(seeds, e.B)
	e = Enc{}
	e.Ops(nil, 0)
	seeds = append(seeds, e.B)
	e = Enc{}
	e.Ops([]Op{{Kind: OpQdiscDrop, Spend: 3, H: 5, Reason: skb.DropQdiscOverlimit}, {Kind: OpQdiscWatchdog, A: 1e9}}, 10)
	seeds = append(seeds, e.B)
	return seeds
}

func FuzzDecodeOps(f *testing.F) {
	for _, s := range seedOps() {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Dec{B: b}
		ops, trailing := d.Ops(nil)
		if err := d.End(); err != nil {
			return
		}
		if trailing < 0 {
			t.Fatalf("negative trailing %d accepted", trailing)
		}
		for _, op := range ops {
			if op.Kind == 0 || op.Kind >= numOps || op.Spend < 0 {
				t.Fatalf("bad op accepted: %+v", op)
			}
			if carried(op) != op {
				t.Fatalf("op %+v has fields its kind does not carry", op)
			}
		}
		var e Enc
		e.Ops(ops, trailing)
		// The encoding has no slack: what decoded is what re-encodes.
		if !bytes.Equal(e.B, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, e.B)
		}
		d2 := Dec{B: e.B}
		ops2, trailing2 := d2.Ops(nil)
		if err := d2.End(); err != nil {
			t.Fatalf("re-encoded ops do not decode: %v", err)
		}
		if trailing2 != trailing || !reflect.DeepEqual(ops2, ops) {
			t.Fatalf("second decode differs:\n%+v %d\n%+v %d", ops, trailing, ops2, trailing2)
		}
	})
}

func FuzzDecodePackets(f *testing.F) {
	p := distinctPacket()
	for _, ps := range [][]skb.Packet{nil, {p}, {p, {}, {Handle: 1, Sock: -1, Tstamp: -1}}} {
		var e Enc
		e.Packets(ps)
		f.Add(e.B)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Dec{B: b}
		ps := d.Packets(nil)
		if err := d.End(); err != nil {
			return
		}
		if len(b) != 4+len(ps)*PacketSize {
			t.Fatalf("%d packets from %d bytes", len(ps), len(b))
		}
		var e Enc
		e.Packets(ps)
		// Bytes 56-63 of a packet are reserved and 77-79 padding: the
		// re-encoding has zeros there. Byte 35 is the flags, whole.
		// Everything else is the same.
		in := bytes.Clone(b)
		for i := range ps {
			at := 4 + i*PacketSize
			clear(in[at+56 : at+64])
			clear(in[at+77 : at+80])
		}
		if !bytes.Equal(e.B, in) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", in, e.B)
		}
		d2 := Dec{B: e.B}
		ps2 := d2.Packets(nil)
		if err := d2.End(); err != nil {
			t.Fatalf("re-encoded packets do not decode: %v", err)
		}
		if !reflect.DeepEqual(ps2, ps) {
			t.Fatalf("second decode differs:\n%+v\n%+v", ps, ps2)
		}
	})
}

// segCtx says segment places (qdisc.SegCtx).
type segCtx struct {
	qdisc.Ctx
	places []uint16
}

func (c segCtx) GSOSegs() []uint16 { return c.places }

// An enqueue's segment places cross the boundary as the host's context
// says them, and as nothing when it splits nothing.
func TestSegsRoundTrip(t *testing.T) {
	for _, places := range [][]uint16{{1, 2, 3, 0, 1, 2}, nil} {
		var e Enc
		e.Segs(qdisc.SegPlaces(segCtx{places: places}))
		d := Dec{B: e.B}
		got := d.Segs(nil)
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, places) {
			t.Errorf("places %v came across as %v", places, got)
		}
	}
}

// tcpCtx says TCP headers (qdisc.TCPCtx).
type tcpCtx struct {
	qdisc.Ctx
	hs []skb.TCPHeader
}

func (c tcpCtx) TCPHeaders() []skb.TCPHeader { return c.hs }

// An enqueue's TCP headers cross the boundary field for field, and as
// nothing when the host gives none; a malformed one is refused.
func TestTCPHeadersRoundTrip(t *testing.T) {
	full := skb.TCPHeader{Seq: 0xa1a2a3a4, AckSeq: 0xb1b2b3b4, DataLen: 0xc1c2c3c4, TSval: 0xd1d2d3d4, TSecr: 0xe1e2e3e4,
		SACK:  [skb.MaxSACKBlocks]skb.SACKBlock{{Start: 1, End: 2}, {Start: 3, End: 4}, {Start: 0xfffffff0, End: 0xfffffff8}},
		NSACK: 3, Flags: skb.TCPHdrACK | skb.TCPHdrECE, TS: true, Other: true}
	for _, hs := range [][]skb.TCPHeader{{full, {}, {AckSeq: 7, Flags: skb.TCPHdrACK, TS: true}}, nil} {
		var e Enc
		e.TCPHeaders(qdisc.TCPHeaders(tcpCtx{hs: hs}))
		if want := 4 + len(hs)*TCPHeaderSize; len(e.B) != want {
			t.Fatalf("%d headers encode in %d bytes, want %d", len(hs), len(e.B), want)
		}
		d := Dec{B: e.B}
		got := d.TCPHeaders(nil)
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, hs) {
			t.Errorf("headers %+v came across as %+v", hs, got)
		}
	}
	for name, corrupt := range map[string]func(b []byte){
		"four SACK blocks":   func(b []byte) { b[4+44] = 4 },
		"unknown option bit": func(b []byte) { b[4+46] |= 1 << 5 },
		"count past the end": func(b []byte) { b[0] = 2 },
	} {
		var e Enc
		e.TCPHeaders([]skb.TCPHeader{full})
		corrupt(e.B)
		d := Dec{B: e.B}
		d.TCPHeaders(nil)
		if d.Err == nil || !strings.Contains(d.Err.Error(), "malformed frame") {
			t.Errorf("%s: decoded without error (%v)", name, d.Err)
		}
	}
}

// Every byte of an encoded TCP header is read and checked: what decodes
// re-encodes to the same bytes.
func FuzzDecodeTCPHeaders(f *testing.F) {
	h := skb.TCPHeader{Seq: 1, AckSeq: 2, DataLen: 3, TSval: 4, TSecr: 5, NSACK: 1, Flags: skb.TCPHdrACK, TS: true}
	h.SACK[0] = skb.SACKBlock{Start: 6, End: 7}
	for _, hs := range [][]skb.TCPHeader{nil, {h}, {h, {}, {Other: true}}} {
		var e Enc
		e.TCPHeaders(hs)
		f.Add(e.B)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Dec{B: b}
		hs := d.TCPHeaders(nil)
		if err := d.End(); err != nil {
			return
		}
		for _, h := range hs {
			if h.NSACK > skb.MaxSACKBlocks {
				t.Fatalf("decoded %d SACK blocks", h.NSACK)
			}
		}
		var e Enc
		e.TCPHeaders(hs)
		if !bytes.Equal(e.B, b) {
			t.Fatalf("%x re-encodes as %x", b, e.B)
		}
	})
}
