package plug

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

func newPlug(t *testing.T, args string) (*Plug, *qdisctest.Ctx) {
	t.Helper()
	q := &Plug{}
	ctx := qdisctest.NewCtx(1)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

func send(q *Plug, ctx qdisc.Ctx, h *skb.Handle, n int, size uint32) []qdisc.Code {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: size, GSOSegs: 1}
	}
	rc := make([]qdisc.Code, n)
	q.Enqueue(ctx, batch, rc)
	return rc
}

func drain(q *Plug, ctx qdisc.Ctx) int {
	return len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 1000, Bytes: 1 << 40}, nil))
}

func change(t *testing.T, q *Plug, ctx *qdisctest.Ctx, words string) {
	t.Helper()
	if _, err := qdisctest.Change(ctx, q, strings.Fields(words)); err != nil {
		t.Fatal(err)
	}
}

// plug starts plugged; "block" closes an epoch, "release" lets the last
// closed epoch's packets go (and reschedules the queue), then the queue
// throttles itself again; "release_indefinite" lets everything through
// until the next block.
func TestEpochs(t *testing.T) {
	q, ctx := newPlug(t, "")
	var h skb.Handle
	send(q, ctx, &h, 5, 1000)
	if n := drain(q, ctx); n != 0 {
		t.Fatalf("plugged: %d packets left", n)
	}
	change(t, q, ctx, "block") // the epoch of 5 is closed
	send(q, ctx, &h, 3, 1000)
	if n := drain(q, ctx); n != 0 {
		t.Fatalf("blocked: %d packets left", n)
	}
	ctx.WDogArmed = false
	change(t, q, ctx, "release")
	if !ctx.WDogArmed {
		t.Error("release did not reschedule the queue")
	}
	if n := drain(q, ctx); n != 5 || q.q.Len() != 3 {
		t.Fatalf("release: %d packets left, %d stay; want 5 and 3", n, q.q.Len())
	}
	change(t, q, ctx, "release_indefinite")
	send(q, ctx, &h, 2, 1000)
	if n := drain(q, ctx); n != 5 {
		t.Fatalf("release_indefinite: %d packets left, want the 3 waiting and 2 new", n)
	}
	change(t, q, ctx, "block")
	send(q, ctx, &h, 2, 1000)
	if n := drain(q, ctx); n != 0 {
		t.Fatalf("blocked again: %d packets left", n)
	}
}

// The byte limit by skb->len: tx_queue_len packets of psched_mtu by
// default; the one sent at init whatever the action, so "plug block"
// makes it 0 and drops everything (plug_init reads ctl->limit only).
func TestLimit(t *testing.T) {
	for _, tt := range []struct {
		args string
		want int
	}{{"", 1009}, {"limit 3000", 2}, {"block", 0}} { // 1000 x 1514 bytes hold 1009 of 1500
		q, ctx := newPlug(t, tt.args)
		var h skb.Handle
		send(q, ctx, &h, 1100, 1500)
		if q.q.Len() != tt.want || q.Stats().Drops != uint64(1100-tt.want) {
			t.Errorf("%q: holds %d, dropped %d; want %d", tt.args, q.q.Len(), q.Stats().Drops, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"foo", `plug: unknown parameter "foo"`},
		{"limit x", `Illegal value for "limit": "x"`},
		{"limit", `option "limit" needs a value`},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &Plug{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
	if q, _ := newPlug(t, ""); q.Dump() != "" {
		t.Errorf("dump %q: sch_plug has no dump op", q.Dump())
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"plug"}, "limit 10kb", "release_indefinite block release", "")
}
