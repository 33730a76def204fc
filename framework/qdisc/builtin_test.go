package qdisc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

func TestBuiltinsConform(t *testing.T) {
	cases := []struct {
		kind  string
		args  []string
		limit int
	}{
		{"pfifo", nil, 1000},
		{"pfifo", []string{"limit", "50"}, 50},
		{"pfifo_fast", nil, 3000},
		{"bfifo", nil, 0}, // a byte limit: the suite checks packets
		{"bfifo", []string{"limit", "30kb"}, 0},
		{"bfifo", []string{"limit", "100"}, 0}, // below most packets: nearly all dropped
		{"pfifo_head_drop", nil, 1000},
		{"pfifo_head_drop", []string{"limit", "50"}, 50},
		{"pfifo_head_drop", []string{"limit", "0"}, 0}, // drops every packet (pfifo_tail_enqueue since the 2025 fix)
	}
	for _, c := range cases {
		t.Run(c.kind+" "+strings.Join(c.args, " "), func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New(c.kind); return q }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: c.args, Limit: c.limit, Seed: 1}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// The conformance suite catches a qdisc that returns a packet twice.
type twice struct{ qdisc.PFifo }

func (q *twice) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	out = q.PFifo.Dequeue(ctx, req, out)
	if len(out) > 0 && len(out) < req.Max {
		out = append(out, out[0])
	}
	return out
}

func TestConformanceCatchesDuplicates(t *testing.T) {
	res := qdisctest.Run(func() qdisc.Qdisc { return &twice{} }, qdisctest.Options{Seed: 1})
	if len(res) == 0 {
		t.Fatal("a qdisc returning packets twice passed")
	}
}

func TestPfifoFastBands(t *testing.T) {
	q, _ := qdisc.New("pfifo_fast")
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{TxQueueLen: 10}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := qdisctest.NewCtx(1)
	// priority 0 -> band 1, priority 6 -> band 0, priority 1 -> band 2
	batch := []skb.Packet{{Handle: 1, Priority: 0, Len: 100}, {Handle: 2, Priority: 1, Len: 100}, {Handle: 3, Priority: 6, Len: 100}}
	q.Enqueue(ctx, batch, make([]qdisc.Code, 3))
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 3, Bytes: 1 << 20}, nil)
	if len(out) != 3 || out[0].Handle != 3 || out[1].Handle != 1 || out[2].Handle != 2 {
		t.Fatalf("band order wrong: %+v", out)
	}
}

func TestInitErrors(t *testing.T) {
	cases := []struct {
		kind string
		args []string
		want string
	}{
		{"pfifo", []string{"limt", "5"}, `unknown parameter "limt"`},
		{"pfifo", []string{"limit"}, "needs a value"},
		{"pfifo", []string{"limit", "-3"}, "negative"},
		{"pfifo", []string{"limit", "x"}, "is not a size"},
		{"pfifo", []string{"limit", "100p"}, `unknown unit "p"`},
		{"pfifo_fast", []string{"bands", "3"}, "does not support option parsing"},
	}
	for _, c := range cases {
		q, _ := qdisc.New(c.kind)
		_, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{TxQueueLen: 1000}, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want %q", c.kind, c.args, err, c.want)
		}
	}
	if _, err := qdisc.New("nope"); err == nil || !strings.Contains(err.Error(), "pfifo") {
		t.Errorf("unknown kind error should list the known ones: %v", err)
	}
}

func FuzzQdiscArgs(f *testing.F) {
	f.Add("pfifo", "limit 100")
	f.Add("pfifo_fast", "")
	f.Add("pfifo", "limit")
	f.Add("bfifo", "limit 3000b")
	f.Add("pfifo_head_drop", "limit 0")
	f.Fuzz(func(t *testing.T, kind, args string) {
		q, err := qdisc.New(kind)
		if err != nil {
			return
		}
		// Init must reject or accept, never panic.
		if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{TxQueueLen: 1000, MTU: 1514}, strings.Fields(args)); err == nil {
			ctx := qdisctest.NewCtx(1)
			q.Enqueue(ctx, []skb.Packet{{Handle: 1, Len: 100}}, make([]qdisc.Code, 1))
		}
	})
}

func TestSetupMajor(t *testing.T) {
	for h, want := range map[string]uint32{"8001:": 0x8001, "1:3": 1, "ffff:": 0xffff, "root": 0, ":1": 0, "zz:": 0, "10000:": 0} {
		if got := (qdisc.Setup{Handle: h}).Major(); got != want {
			t.Errorf("Major(%q) = %#x, want %#x", h, got, want)
		}
	}
}

func TestSetupQueue(t *testing.T) {
	for p, want := range map[string]int{"8001:1": 0, "8001:a": 9, "1:ffff": 0xfffe, "root": -1, "8001:": -1, ":3": 2, "8001:0": -1, "8001:zz": -1} {
		if got := (qdisc.Setup{Parent: p}).Queue(); got != want {
			t.Errorf("Queue(%q) = %d, want %d", p, got, want)
		}
	}
}

// Args reads values with tc's readers, and every error is a tc parse
// error naming the kind and the option.
func TestArgs(t *testing.T) {
	a := qdisc.NewArgs("x", []string{"n", "0x10", "s", "64kb", "t", "5ms", "t64", "10us", "r", "100mbit", "r64", "100gbit"})
	var got []any
	for k := a.Next(); k != ""; k = a.Next() {
		var v any
		var err error
		switch k {
		case "n":
			v, err = a.Unsigned(k)
		case "s":
			v, err = a.Size(k)
		case "t":
			v, err = a.Time(k)
		case "t64":
			v, err = a.Time64(k)
		case "r":
			v, err = a.Rate(k)
		case "r64":
			v, err = a.Rate64(k)
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	want := []any{uint32(16), uint32(65536), uint32(5000), int64(10000), uint32(12_500_000), uint64(12_500_000_000)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("values %v, want %v", got, want)
	}
	for words, msg := range map[string]string{"s 5x": `x: illegal "s": "5x" is not a size`, "n -1": `x: illegal "n": "-1" is out of range`,
		"n": `x: option "n" needs a value`, "r 100M": `unknown unit "M"`} {
		a := qdisc.NewArgs("x", strings.Fields(words))
		k := a.Next()
		var err error
		switch k {
		case "s":
			_, err = a.Size(k)
		case "n":
			_, err = a.Unsigned(k)
		case "r":
			_, err = a.Rate(k)
		}
		if err == nil || !strings.Contains(err.Error(), msg) || !errors.Is(err, qdisc.ErrParse) {
			t.Errorf("%q: error %v, want a parse error with %q", words, err, msg)
		}
	}
}

// pfifo's change is fifo_init again: a lower limit refuses new packets
// and keeps those above it; pfifo_fast takes no options at all.
func TestBuiltinChange(t *testing.T) {
	q, _ := qdisc.New("pfifo")
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{TxQueueLen: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := qdisctest.NewCtx(1)
	batch := make([]skb.Packet, 10)
	for i := range batch {
		batch[i] = skb.Packet{Handle: skb.Handle(i + 1), Len: 100}
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, len(batch)))
	info, err := qdisc.Change(q, ctx, []string{"limit", "4"})
	if err != nil || info.Limit != 4 || info.Flags&qdisc.CanBypass == 0 {
		t.Fatalf("change limit 4: %+v %v", info, err)
	}
	if st := q.Stats(); st.Qlen != 10 || len(ctx.Dropped) != 0 {
		t.Fatalf("fifo change dropped: qlen %d, drops %v", st.Qlen, ctx.Dropped)
	}
	rc := make([]qdisc.Code, 1)
	q.Enqueue(ctx, []skb.Packet{{Handle: 99, Len: 100}}, rc)
	if rc[0] != qdisc.XmitDrop || ctx.Dropped[99] != skb.DropQdiscDrop {
		t.Fatalf("enqueue over the new limit: %v %v", rc, ctx.Dropped)
	}
	if q.Dump() != "limit 4p" {
		t.Fatalf("dump %q", q.Dump())
	}
	if info, err := qdisc.Change(q, ctx, []string{"limit", "0"}); err != nil || info.Flags&qdisc.CanBypass != 0 {
		t.Fatalf("limit 0 keeps bypass: %+v %v", info, err)
	}
	if _, err := qdisc.Change(q, ctx, []string{"limit", "x"}); !errors.Is(err, qdisc.ErrParse) || q.Dump() != "limit 0p" {
		t.Fatalf("bad change: %v, dump %q", err, q.Dump())
	}

	f, _ := qdisc.New("pfifo_fast")
	if _, err := f.Init(qdisctest.NewCtx(1), qdisc.Setup{TxQueueLen: 10}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := qdisc.Change(f, ctx, []string{"bands", "3"}); !errors.Is(err, qdisc.ErrParse) ||
		!strings.Contains(err.Error(), "does not support option parsing") {
		t.Fatalf("pfifo_fast change with options: %v", err)
	}
	if info, err := qdisc.Change(f, ctx, nil); err != nil || info.Limit != 10 {
		t.Fatalf("pfifo_fast change without options: %+v %v", info, err)
	}
}

// PriorityClass: a priority whose major is the qdisc's (0 too) and whose
// minor is 1..n names class minor-1; anything else does not.
func TestPriorityClass(t *testing.T) {
	for _, c := range []struct {
		prio, major, n uint32
		class          int
		ok             bool
	}{
		{0x80010003, 0x8001, 4, 2, true},
		{0x80010004, 0x8001, 4, 3, true},
		{0x80010005, 0x8001, 4, 0, false},
		{0x80010000, 0x8001, 4, 0, false},
		{0x80020001, 0x8001, 4, 0, false},
		{6, 0, 1024, 5, true},
		{6, 0x8001, 1024, 0, false},
	} {
		class, ok := qdisc.PriorityClass(c.prio, c.major, c.n)
		if class != c.class || ok != c.ok {
			t.Errorf("PriorityClass(%#x, %#x, %d) = %d %v, want %d %v", c.prio, c.major, c.n, class, ok, c.class, c.ok)
		}
	}
}

// pfifo without a limit is tx_queue_len's (__fifo_init), 0 included:
// limit 0 has no CAN_BYPASS and drops every packet.
func TestPfifoDefaultLimit(t *testing.T) {
	cases := []struct {
		txqlen, limit int
		bypass        bool
		dump          string
		rc            qdisc.Code
	}{
		{1000, 1000, true, "limit 1000p", qdisc.XmitSuccess},
		{1, 1, true, "limit 1p", qdisc.XmitSuccess},
		{0, 0, false, "limit 0p", qdisc.XmitDrop},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.txqlen), func(t *testing.T) {
			q, _ := qdisc.New("pfifo")
			ctx := qdisctest.NewCtx(1)
			info, err := q.Init(ctx, qdisc.Setup{TxQueueLen: c.txqlen}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if info.Limit != c.limit || (info.Flags&qdisc.CanBypass != 0) != c.bypass || q.Dump() != c.dump {
				t.Fatalf("limit %d bypass %v dump %q, want %d %v %q", info.Limit, info.Flags&qdisc.CanBypass != 0, q.Dump(), c.limit, c.bypass, c.dump)
			}
			rc := make([]qdisc.Code, 1)
			q.Enqueue(ctx, []skb.Packet{{Handle: 1, Len: 100}}, rc)
			if rc[0] != c.rc {
				t.Fatalf("first packet: %v, want %v", rc[0], c.rc)
			}
		})
	}
}
