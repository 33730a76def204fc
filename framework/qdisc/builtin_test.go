package qdisc_test

import (
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
		{"pfifo", []string{"limt", "5"}, `unknown option "limt"`},
		{"pfifo", []string{"limit"}, "needs a value"},
		{"pfifo", []string{"limit", "-3"}, "out of range"},
		{"pfifo", []string{"limit", "x"}, "not a whole number"},
		{"pfifo_fast", []string{"bands", "3"}, "unknown option"},
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

func TestTcUnits(t *testing.T) {
	for _, tc := range []struct {
		s       string
		units   []qdisc.TcUnit
		want    uint32
		wantErr string
	}{
		{"5ms", qdisc.TcTimeUnits, 5000, ""},
		{"1.5SEC", qdisc.TcTimeUnits, 1500000, ""},
		{"100", qdisc.TcTimeUnits, 100, ""},
		{"64kb", qdisc.TcSizeUnits, 65536, ""},
		{"8kbit", qdisc.TcSizeUnits, 8192 / 8, ""},
		{"ms", qdisc.TcTimeUnits, 0, `x: k "ms" is not a time`},
		{"nan", qdisc.TcTimeUnits, 0, "is not a time"},
		{"-1", qdisc.TcTimeUnits, 0, "out of range (0 to 4294967295 us)"},
		{"5gb", qdisc.TcSizeUnits, 0, "out of range"},
	} {
		got, err := qdisc.ParseTcU32("x", "k", tc.s, tc.units, "time", "5ms", "us")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: got %v, want error %q", tc.s, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d %v, want %d", tc.s, got, err, tc.want)
		}
	}
	for sz, want := range map[uint32]string{1514: "1514b", 65536: "64Kb", 32 << 20: "32Mb", 1030: "1Kb", 1100: "1100b"} {
		if got := qdisc.TcSize(sz); got != want {
			t.Errorf("TcSize(%d) = %q, want %q", sz, got, want)
		}
	}
}
