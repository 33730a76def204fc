package cbs

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/tbf" // a leaf that shapes
)

const avb = "idleslope 20000 sendslope -980000 hicredit 30 locredit -1470"

// newCBS is a cbs on a 1 Gbit/s port.
func newCBS(t *testing.T, args string) (*CBS, *qdisctest.Ctx) {
	t.Helper()
	q := &CBS{}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Second
	s := qdisctest.DefaultSetup()
	s.RateBps = 1e9
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: s}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

func send(q *CBS, ctx qdisc.Ctx, h *skb.Handle, n int, size uint32) {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: size, GSOSegs: 1}
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, n))
}

// tc's words and the dump as cbs_print_opt prints cbs_dump (the slopes
// in kbit/s), and tc's and the model's refusals.
func TestOptions(t *testing.T) {
	q, _ := newCBS(t, avb+" offload 0")
	if got, want := q.Dump(), "hicredit 30 locredit -1470 sendslope -980000 idleslope 20000 offload 0 "; got != want {
		t.Errorf("dump %q, want %q", got, want)
	}
	if q.portRate != 125_000_000 || q.idleslope != 2_500_000 || q.sendslope != -122_500_000 {
		t.Errorf("port %d idleslope %d sendslope %d bytes/s", q.portRate, q.idleslope, q.sendslope)
	}
	for _, tt := range []struct{ args, want string }{
		{"idleslope 1 idleslope 2", `cbs: duplicate "idleslope" specification`},
		{"hicredit x", `cbs: illegal value for "hicredit": "x"`},
		{"offload 256", `cbs: illegal value for "offload"`},
		{"foo 1", `cbs: unknown parameter "foo"`},
		{"hicredit", `option "hicredit" needs a value`},
		{"offload 1", "is not modelled"},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &CBS{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// The credits as cbs_dequeue_soft keeps them: a 1500-byte packet at the
// 1 Gbit/s port costs 1500 * -122.5M / 125M = -1470 bytes of credit (the
// locredit floor) and holds the port 12 us; the next waits until
// idleslope (2.5 MB/s) has earned the credit back, 588 us, with the
// watchdog armed for then; in the long run a saturated queue leaves at
// idleslope.
func TestCredits(t *testing.T) {
	q, ctx := newCBS(t, avb)
	var h skb.Handle
	send(q, ctx, &h, 200, 1500)
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil)
	if len(out) != 1 || q.credits != -1470 || q.last != ctx.T+12*sim.Microsecond {
		t.Fatalf("first dequeue: %d packets, credits %d, last %v", len(out), q.credits, q.last-ctx.T)
	}
	ctx.T += 12 * sim.Microsecond
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil); len(out) != 0 || !ctx.WDogArmed || ctx.WDog != ctx.T+588*sim.Microsecond {
		t.Fatalf("second dequeue: %d packets, watchdog %v at %v, want at now + 588us", len(out), ctx.WDogArmed, ctx.WDog-ctx.T)
	}
	sent, start := uint64(1500), ctx.T
	for ctx.T < start+100*sim.Millisecond {
		ctx.T = max(ctx.T+sim.Microsecond, ctx.WDog)
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil) {
			sent += uint64(p.Len)
		}
	}
	if rate := float64(sent) / (float64(ctx.T-start) / 1e9) * 8; rate < 19e6 || rate > 21e6 {
		t.Errorf("%d bytes in %v: %.2f Mbit/s, want idleslope's 20", sent, ctx.T-start, rate/1e6)
	}
}

// An idle queue keeps no positive credit: the first packet after idling
// resets it to 0 (cbs_enqueue_soft), and a hicredit caps what waiting
// earns.
func TestCreditsCapped(t *testing.T) {
	q, ctx := newCBS(t, avb)
	var h skb.Handle
	q.credits = 500
	send(q, ctx, &h, 1, 100)
	if q.credits != 0 || q.last != ctx.T {
		t.Errorf("credits %d last %v after an enqueue to an empty queue, want 0 and now", q.credits, q.last)
	}
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil) // -98 credits
	send(q, ctx, &h, 1, 100)
	ctx.T += sim.Second
	q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil)
	if q.credits != 30-98 {
		t.Errorf("credits %d after a second of waiting and a 100-byte packet, want hicredit 30 less 98", q.credits)
	}
}

// cbs conforms, behind the plugin boundary's wrapper too, with its
// default pfifo and with a tbf grafted on its class.
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		args   string
		leaves []string
	}{{avb, nil}, {"idleslope 500000 sendslope -500000 hicredit 3000 locredit -3000", []string{"parent 1:1 handle 2: tbf rate 50mbit burst 20k limit 100k"}}} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&CBS{}) }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(tt.args), Leaves: tt.leaves, Seed: 2, Pkts: 1500}) {
			t.Errorf("%q: %s: %v", tt.args, r.Check, r.Err)
		}
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"cbs"}, avb, "idleslope 0 sendslope 0", "hicredit -2147483648 locredit 2147483647 idleslope 1")
}
