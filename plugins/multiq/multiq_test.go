package multiq

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

func newMultiq(t *testing.T, txqs int) (*Multiq, *qdisctest.Ctx) {
	t.Helper()
	q := &Multiq{}
	s := qdisctest.DefaultSetup()
	s.NumTxQ, s.DevTxQ = txqs, txqs
	ctx := qdisctest.NewCtx(1)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Setup: s}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// multiq_print_opt's "bands N/MAX" and a class per TX queue, each with
// its leaf's stats (multiq_dump_class_stats).
func TestDump(t *testing.T) {
	q, _ := newMultiq(t, 4)
	if got, want := q.Dump(), "bands 4/4"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if cs := q.Classes(); len(cs) != 4 || cs[0].ID.String() != "1:1" || cs[3].ID.String() != "1:4" || cs[0].Parent.String() != "1:" || !cs[0].LeafStats {
		t.Errorf("classes %+v, want 1:1..1:4 under 1:, with their leaves' stats", cs)
	}
}

// tc's words and the kernel's refusals.
func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		args   string
		txqs   int
		parent string
		want   string
		class  error
	}{
		{"bands 4", 4, "root", `What is "bands"?`, qdisc.ErrParse},
		{"help", 4, "root", "Usage: ... multiq [help]", qdisc.ErrParse},
		{"", 1, "root", "multiq needs a multiqueue device", qdisc.ErrKernel},
		{"", 4, "1:1", "multiq under a class is not modelled", qdisc.ErrLacks},
	} {
		s := qdisctest.DefaultSetup()
		s.NumTxQ, s.DevTxQ, s.Parent = tt.txqs, tt.txqs, tt.parent
		_, err := (&Multiq{}).Init(qdisctest.NewCtx(1), s, strings.Fields(tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q on %d queues under %s: %v, want %q of class %v", tt.args, tt.txqs, tt.parent, err, tt.want, tt.class)
		}
	}
}

// send enqueues n packets for each TX queue in queues, handles from 1.
func send(q *Multiq, ctx *qdisctest.Ctx, queues ...uint16) {
	batch := make([]skb.Packet, len(queues))
	for i, txq := range queues {
		batch[i] = skb.Packet{Handle: skb.Handle(i + 1), Len: 1000, Queue: txq}
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, len(batch)))
}

func handles(ps []skb.Packet) []int {
	var out []int
	for _, p := range ps {
		out = append(out, int(p.Handle))
	}
	return out
}

// multiq_classify bands by queue_mapping (band 0 past the bands) and
// multiq_dequeue goes round from the band after the last served, one
// packet a band, skipping a band whose TX queue is stopped: its packets
// wait while the others flow (no head-of-line blocking), and are served
// once it wakes.
func TestRoundRobinSkipsStoppedQueues(t *testing.T) {
	q, ctx := newMultiq(t, 3)
	// handles 1..3 to queue 0, 4..5 to queue 1, 6..7 to queue 2, 8 to queue 7 (band 0)
	send(q, ctx, 0, 0, 0, 1, 1, 2, 2, 7)
	if got, want := handles(q.Dequeue(ctx, qdisc.DequeueReq{Max: 3, Bytes: 1 << 40}, nil)), []int{4, 6, 1}; !slices.Equal(got, want) {
		t.Fatalf("first round %v, want %v (from band 1: bands 1, 2, 0)", got, want)
	}
	ctx.TxqStop = map[int]bool{1: true}
	if p, ok := q.Peek(ctx); !ok || p.Handle != 7 {
		t.Fatalf("peek with queue 1 stopped: %v %v, want handle 7 (band 2; band 1 skipped)", p.Handle, ok)
	}
	if got, want := handles(q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40}, nil)), []int{7, 2, 3, 8}; !slices.Equal(got, want) {
		t.Fatalf("with queue 1 stopped %v, want %v: band 1's packet waits", got, want)
	}
	if st := q.Stats(); st.Qlen != 1 {
		t.Fatalf("qlen %d, want band 1's one packet", st.Qlen)
	}
	ctx.TxqStop = nil
	if got := handles(q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 40}, nil)); !slices.Equal(got, []int{5}) {
		t.Fatalf("queue 1 woken: %v, want its packet 5", got)
	}
}

// The suite's checks (accounting, limits, drops, in and out of the
// plugin wrapper) on a 4-queue device.
func TestConformance(t *testing.T) {
	s := qdisctest.DefaultSetup()
	s.NumTxQ, s.DevTxQ = 4, 4
	f := func() qdisc.Qdisc { return wire.WrapQdisc(&Multiq{}) }
	for _, r := range qdisctest.Run(f, qdisctest.Options{Setup: s, Seed: 5, Limit: 4000}) {
		t.Errorf("%s: %v", r.Check, r.Err)
	}
}
