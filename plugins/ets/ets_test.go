package ets

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/netem" // leaves without a peek of their own
)

func newETS(t *testing.T, args string, leaves ...string) (*ETS, *qdisctest.Ctx) {
	t.Helper()
	q := &ETS{}
	ctx := qdisctest.NewCtx(1)
	o := qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup(), Leaves: leaves}
	if _, err := qdisctest.Attach(ctx, q, o); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// send enqueues n packets of size bytes with skb->priority prio,
// numbered on from *h.
func send(q *ETS, ctx qdisc.Ctx, h *skb.Handle, prio uint32, n int, size uint32) {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: size, Priority: prio}
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, n))
}

// bandOf counts a dequeue's packets by the band their priority named.
func bandOf(got []skb.Packet) map[uint32]int {
	n := map[uint32]int{}
	for _, p := range got {
		n[p.Priority&0xFFFF]++
	}
	return n
}

// The dump as tc's ets_print_opt prints ets_qdisc_dump: quanta only for
// the sharing bands (the rest the device's MTU, 1514), the priomap's
// default the last band, every list closed by a space; a class shows its
// quantum only if it shares.
func TestDump(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"bands 3", "bands 3 quanta 1514 1514 1514 priomap 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 "},
		{"bands 4 strict 1 quanta 3000 1500 priomap 1 2 2 2 1 2 0 0",
			"bands 4 strict 1 quanta 3000 1500 1514 priomap 1 2 2 2 1 2 0 0 3 3 3 3 3 3 3 3 "},
		{"strict 3", "bands 3 strict 3 priomap 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 "},
		// tc counts the bands from the quanta and strict given.
		{"strict 1 quanta 100 2000000", "bands 3 strict 1 quanta 256 1048576 priomap 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 "},
	} {
		q, _ := newETS(t, tt.args)
		if got := q.Dump(); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.args, got, tt.want)
		}
	}
	q, _ := newETS(t, "bands 3 strict 1 quanta 3000")
	cs := q.Classes()
	if len(cs) != 3 || cs[0].ID.String() != "1:1" || cs[0].Options != "" || cs[1].Options != "quantum 3000 " || cs[2].Options != "quantum 1514 " ||
		cs[0].Parent != qdisc.RootClass || !cs[0].LeafStats || !cs[0].Leaf {
		t.Errorf("classes %+v", cs)
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		args, want string
	}{
		{"", `One of "bands", "quanta" or "strict" needs to be specified`},
		{"bands 0", `One of "bands", "quanta" or "strict" needs to be specified`},
		{"bands 17", `The number of "bands" must be <= 16`},
		{"strict x", `Illegal "strict"`},
		{"bands 2 bands 3", `Duplicate "bands"`},
		{"bands 2 strict 2 quanta 10", "Not enough total bands to cover all the strict bands and quanta"},
		{"bands 3 priomap 0 1 3", `"priomap" element is out of bounds`},
		{"bands 3 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", `"priomap" index cannot be higher than 15`},
		{"quanta 0", `"quanta" must be > 0`},
		{"quanta 10 x", `Illegal "quanta" element "x"`},
		{"bands 3 x", `What is "x"?`},
		{"quanta 1 quanta 2", `Duplicate "quanta"`},
		{"bands", `"bands" needs a value`},
		{"bands 3 weights 1 2", `What is "weights"?`},
	} {
		_, err := (&ETS{}).Init(qdisctest.NewCtx(1), qdisctest.DefaultSetup(), strings.Fields(tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, qdisc.ErrParse) {
			t.Errorf("%q: %v, want tc's %q", tt.args, err, tt.want)
		}
	}
	q, ctx := newETS(t, "bands 3 strict 1")
	for _, tt := range []struct {
		id    qdisc.ClassID
		args  string
		want  string
		class error
	}{
		{0x10001, "quantum 3000", "Strict bands do not have a configurable quantum", qdisc.ErrKernel},
		{0x10004, "quantum 3000", "Fine-grained class addition and removal is not supported", qdisc.ErrKernel},
		{0x10002, "quantum 0", `"quanta" must be > 0`, qdisc.ErrParse},
		{0x10002, "quantum 1 quantum 2", `Duplicate "quantum"`, qdisc.ErrParse},
		{0x10002, "weight 2", `What is "weight"?`, qdisc.ErrParse},
	} {
		err := q.ChangeClass(ctx, qdisc.ClassReq{ID: tt.id, Parent: qdisc.RootClass, Create: true, Args: strings.Fields(tt.args)})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("class %s %q: %v, want %q", tt.id, tt.args, err, tt.want)
		}
	}
	if err := q.DeleteClass(ctx, 0x10002); err == nil || !strings.Contains(err.Error(), "Operation not supported") {
		t.Errorf("class delete: %v", err)
	}
	// A class change without a quantum configures nothing; one with a
	// quantum out of range is clamped, as ets_quantum_parse clamps it.
	if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: 0x10002, Parent: qdisc.RootClass}); err != nil {
		t.Error(err)
	}
	if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: 0x10003, Parent: qdisc.RootClass, Args: []string{"quantum", "9"}}); err != nil || q.classes[2].Quantum != 256 {
		t.Errorf("quantum 9: %v, quantum %d, want 256", err, q.classes[2].Quantum)
	}
}

// ets_qdisc_dequeue: the strict bands first, band 0 before band 1,
// whatever the sharing bands hold; then the sharing bands by their
// quanta: 4500 and 1500 bytes a round share 3:1 of 1500-byte packets.
func TestStrictThenShare(t *testing.T) {
	q, ctx := newETS(t, "bands 4 strict 2 quanta 4500 1500")
	var h skb.Handle
	send(q, ctx, &h, 0x10003, 200, 1500)
	send(q, ctx, &h, 0x10004, 200, 1500)
	send(q, ctx, &h, 0x10002, 10, 1500)
	send(q, ctx, &h, 0x10001, 5, 1500)
	got := q.Dequeue(ctx, qdisc.DequeueReq{Max: 15, Bytes: 1 << 40}, nil)
	for i, p := range got {
		want := uint32(0x10001)
		if i >= 5 {
			want = 0x10002
		}
		if p.Priority != want {
			t.Fatalf("packet %d from %#x, want %#x: strict bands first, in order", i, p.Priority, want)
		}
	}
	n := bandOf(q.Dequeue(ctx, qdisc.DequeueReq{Max: 200, Bytes: 1 << 40}, nil))
	if n[3] != 150 || n[4] != 50 {
		t.Errorf("of 200 packets the sharing bands sent %d and %d, want 150 and 50 (quanta 4500:1500)", n[3], n[4])
	}
	// A strict packet arriving mid-round goes next.
	send(q, ctx, &h, 0x10002, 1, 1500)
	if got := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil); len(got) != 1 || got[0].Priority != 0x10002 {
		t.Errorf("after a strict arrival: %v", got)
	}
}

// Default priomap: every priority to the last band; skb->priority with
// ets's major names the band (out of range: priomap[0]); another major
// goes through the priomap with priority 0.
func TestClassify(t *testing.T) {
	prios := map[uint32]int{
		6:       0, // TC_PRIO_INTERACTIVE -> priomap[6] = 0
		1:       1, // priomap[1] = 1
		9:       2, // the default: the last band
		0x10003: 2, // 1:3
		0x10009: 0, // 1:9 is no band: priomap[0]
		0x20001: 0, // another major: priomap[0]
	}
	for prio, band := range prios {
		q, ctx := newETS(t, "bands 3 strict 1 priomap 0 1 1 1 1 1 0 0")
		var h skb.Handle
		send(q, ctx, &h, prio, 1, 100)
		if st := q.leaves.Get(q.classes[band].ID); st.Qlen != 1 {
			t.Errorf("priority %#x: band %d holds %d, want the packet", prio, band, st.Qlen)
		}
	}
}

// ets_qdisc_change: bands dropped take their packets with them (counted
// as ets's drops); a band that turns from strict to sharing joins the
// round with its packets; one that turns strict leaves it.
func TestChange(t *testing.T) {
	q, ctx := newETS(t, "bands 4 strict 2")
	var h skb.Handle
	send(q, ctx, &h, 0x10002, 3, 1000)
	send(q, ctx, &h, 0x10003, 3, 1000)
	send(q, ctx, &h, 0x10004, 4, 1000)
	if q.round.Len() != 2 {
		t.Fatalf("%d bands sharing, want 1:3 and 1:4", q.round.Len())
	}
	if _, err := q.Change(ctx, strings.Fields("bands 3 strict 1 quanta 1000 1000")); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Qlen != 6 || st.Drops != 4 || len(q.Classes()) != 3 {
		t.Fatalf("after shrinking to 3 bands: %+v, %d classes; want 6 packets left, 4 dropped", st, len(q.Classes()))
	}
	// 1:2 was strict and now shares with 1:3, a packet each a round.
	got := q.Dequeue(ctx, qdisc.DequeueReq{Max: 6, Bytes: 1 << 40}, nil)
	if n := bandOf(got); n[2] != 3 || n[3] != 3 || got[0].Priority == got[1].Priority {
		t.Errorf("after the change: %v, want 1:2 and 1:3 in turn", bandOf(got))
	}
	// Sharing -> strict: 1:2 turns strict and is served first.
	send(q, ctx, &h, 0x10003, 2, 1000)
	send(q, ctx, &h, 0x10002, 2, 1000)
	if _, err := q.Change(ctx, strings.Fields("bands 3 strict 2")); err != nil {
		t.Fatal(err)
	}
	if q.round.Len() != 1 {
		t.Errorf("%d bands sharing after 1:2 turned strict, want 1", q.round.Len())
	}
	got = q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil)
	if len(got) != 4 || got[0].Priority != 0x10002 || got[1].Priority != 0x10002 {
		t.Errorf("after 1:2 turned strict: %v", got)
	}
}

func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		args  string
		limit int
	}{
		{"bands 3", 1000},
		{"bands 8 strict 2 quanta 300 600 900 1200 1500 1800 priomap 0 1 2 3 4 5 6 7", 0},
		{"strict 4", 1000},
	} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&ETS{}) }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields(tt.args), Seed: 6, Limit: tt.limit}) {
			t.Errorf("%q: %s: %v", tt.args, r.Check, r.Err)
		}
	}
	// Leaves without a peek of their own: the round peeks them
	// (qdisc_peek_dequeued keeps the packet for their next dequeue).
	f := func() qdisc.Qdisc { return wire.WrapQdisc(&ETS{}) }
	leaves := []string{"parent 1:1 handle 11: netem delay 1ms", "parent 1:3 handle 13: netem rate 100mbit"}
	for _, r := range qdisctest.Run(f, qdisctest.Options{Args: strings.Fields("bands 3 strict 1 priomap 0 1 2 0 1 2 0 1 2"), Leaves: leaves, Seed: 6}) {
		t.Errorf("netem leaves: %s: %v", r.Check, r.Err)
	}
}
