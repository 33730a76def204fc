package hfsc

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/netem" // leaves that delay
	_ "github.com/txlab/txlab/plugins/tbf"   // leaves that shape
)

func newHFSC(t *testing.T, args string, classes ...string) (*HFSC, *qdisctest.Ctx) {
	t.Helper()
	q := &HFSC{}
	ctx := qdisctest.NewCtx(1)
	o := qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup(), Classes: classes}
	if _, err := qdisctest.Attach(ctx, q, o); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// send enqueues n packets of size bytes for class prio (skb->priority),
// numbered on from *h.
func send(q *HFSC, ctx qdisc.Ctx, h *skb.Handle, prio uint32, n int, size uint32) []qdisc.Code {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: size, Priority: prio, GSOSegs: 1}
	}
	rc := make([]qdisc.Code, n)
	q.Enqueue(ctx, batch, rc)
	return rc
}

// The fixed point is sch_hfsc.c's with PSCHED_SHIFT 6: 10 Mbit/s is
// 1,250,000 bytes/s, 1342177.28 scaled bytes a 64 ns tick rounded up;
// 10 ms is 156,250 ticks, in which the curve serves 12,500 bytes.
func TestFixedPoint(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want uint64
	}{
		{"m2sm(10mbit)", m2sm(1_250_000), 1_342_178},
		{"m2ism(10mbit)", m2ism(1_250_000), 204_800},
		{"m2ism(0)", m2ism(0), htInfinity},
		{"d2dx(10ms)", d2dx(10_000), 156_250},
		{"d2dx(1us)", d2dx(1), 16}, // 15.625 rounded up
		{"sm2m", uint64(sm2m(1_342_178)), 1_250_000},
		{"dx2d", uint64(dx2d(156_250)), 10_000},
		{"seg_x2y(10ms at 10mbit)", segX2Y(156_250, 1_342_178), 12_500},
		{"seg_y2x(12500 at 10mbit)", segY2X(12_500, 204_800), 156_250},
		{"seg_y2x(0)", segY2X(0, htInfinity), 0},
		{"seg_y2x(no slope)", segY2X(1, htInfinity), htInfinity},
		// x beyond 2^24 ticks (1.07 s) takes the split multiply, whose
		// two roundings give 1 byte more than x*sm >> 24 would
		{"seg_x2y(100 s at 10mbit)", segX2Y(1_562_500_000, 1_342_178), 125_000_067},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

// rtsc_min: a convex curve only moves its origin when the new start
// lies below it; a concave one is replaced when wholly below, kept when
// wholly above, and otherwise starts at the new point with the
// intersection's first segment.
func TestRuntimeMin(t *testing.T) {
	concave := sc2isc(serviceCurve{m1: 2_500_000, d: 10_000, m2: 1_250_000}) // 20mbit for 10ms, then 10mbit
	convex := sc2isc(serviceCurve{m2: 1_250_000})
	// convex: the running curve at x=1000 is at 1000*sm >> 24 bytes
	r := rtscInit(&convex, 0, 0)
	r.min(&convex, 1000, r.x2y(1000)+1) // above: no change
	if r.x != 0 || r.y != 0 {
		t.Errorf("convex above: moved to (%d, %d)", r.x, r.y)
	}
	r.min(&convex, 1000, 10) // below: the origin moves
	if r.x != 1000 || r.y != 10 {
		t.Errorf("convex below: (%d, %d), want (1000, 10)", r.x, r.y)
	}
	// concave, a fresh start far after the old one: replaced whole
	r = rtscInit(&concave, 0, 0)
	r.min(&concave, 1_000_000, 100)
	if r.x != 1_000_000 || r.y != 100 || r.dx != concave.dx || r.dy != concave.dy {
		t.Errorf("concave replaced: %+v", r)
	}
	// concave, restarted inside its own first segment slightly lower:
	// they intersect, so the first segment is shortened to where the
	// new curve's burst meets the old one
	r = rtscInit(&concave, 0, 0)
	x := concave.dx / 2
	y := r.x2y(x) - 1000
	r.min(&concave, x, y)
	if r.x != x || r.y != y || r.dx == 0 || r.dx >= concave.dx+concave.dx/2 || r.dy != segX2Y(r.dx, concave.sm1) {
		t.Errorf("concave intersecting: %+v (isc dx %d)", r, concave.dx)
	}
	// where they meet, the new curve is at the old one's y
	if a, b := r.x2y(r.x+r.dx), rtscInit(&concave, 0, 0); a+2 < b.x2y(r.x+r.dx) || a > b.x2y(r.x+r.dx)+2 {
		t.Errorf("at the intersection %d, the old curve %d", a, b.x2y(r.x+r.dx))
	}
}

// tc's words as hfsc_parse_class_opt reads them, and the dump as
// hfsc_print_class_opt prints the kernel's curves back: "sc" when rt
// and ls are the same, umax/dmax/rate turned into m1 d m2 (concave when
// umax/dmax exceeds the rate, else convex with a delay).
func TestClassWords(t *testing.T) {
	for _, tt := range []struct{ words, want string }{
		{"sc rate 10mbit", "sc m1 0bit d 0us m2 10Mbit "},
		{"sc m2 10mbit", "sc m1 0bit d 0us m2 10Mbit "},
		{"ls rate 5mbit", "ls m1 0bit d 0us m2 5Mbit "},
		{"rt m1 20mbit d 10ms m2 10mbit ls rate 5mbit ul rate 30mbit",
			"rt m1 20Mbit d 10ms m2 10Mbit ls m1 0bit d 0us m2 5Mbit ul m1 0bit d 0us m2 30Mbit "},
		{"rt rate 5mbit ls rate 5mbit", "sc m1 0bit d 0us m2 5Mbit "},
		// 1500 bytes in 10 ms is 150,000 B/s (1.2 Mbit/s) > 1mbit: concave
		{"sc umax 1500b dmax 10ms rate 1mbit", "sc m1 1200Kbit d 10ms m2 1Mbit "},
		// 1500 bytes in 50 ms is below 1mbit: convex, 0 until
		// 50ms - 1500/125000 s = 38 ms
		{"sc umax 1500 dmax 50ms rate 1mbit", "sc m1 0bit d 38ms m2 1Mbit "},
		{"s d 5ms rate 1mbit", "sc m1 0bit d 5ms m2 1Mbit "}, // prefixes, sc2's dmax
		{"sc rate 10%", "sc m1 0bit d 0us m2 1Gbit "},        // of the 10 Gbit/s device
	} {
		q, _ := newHFSC(t, "", "parent 1: classid 1:10 hfsc "+tt.words)
		cl := q.byID[qdisc.MakeClassID(1, 0x10)]
		if got := dumpCurves(cl); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.words, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		qdisc, class, want string
		class2             string
	}{
		{qdisc: "foo", want: `HFSC: What is "foo" ?`},
		{qdisc: "default 10 default 20", want: `HFSC: Double "default"`},
		{qdisc: "default 10000", want: `HFSC: Illegal "default"`},
		{qdisc: "default", want: `option "default" needs a value`},
		{class: "", want: "HFSC: no parameters given"},
		{class: "ul rate 1mbit", want: "Upper-limit Service Curve without Link-Share Service Curve"},
		{class: "sc", want: `Command line is not complete after "sc"`},
		{class: "sc rate", want: `Command line is not complete after "rate"`},
		{class: "sc m1 10mbit", want: `Command line is not complete after "10mbit"`},
		{class: "sc rate x", want: `HFSC: Illegal "rate" "x"`},
		{class: "sc m1 1mbit d 1ms foo 1", want: `HFSC: Illegal "sc"`},
		{class: "sc m1 0 d 1ms m2 0", want: "HFSC: Service Curve has two zero slopes"},
		{class: "sc umax 1500 rate 1mbit", want: "HFSC: umax given but dmax is zero."},
		{class: "rate 1mbit", want: `HFSC: What is "rate" ?`},
		// the kernel's: a new class needs rt or ls, classids of the
		// qdisc, parents that exist, and only leaves are deleted
		{class: "sc rate 1mbit", class2: "parent 1:99 classid 1:20 hfsc sc rate 1mbit", want: "No such file or directory (parent class 1:99)"},
	} {
		q := &HFSC{}
		ctx := qdisctest.NewCtx(1)
		var classes []string
		if tt.qdisc == "" {
			classes = append(classes, "parent 1: classid 1:10 hfsc "+tt.class)
			if tt.class2 != "" {
				classes = append(classes, tt.class2)
			}
		}
		_, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(tt.qdisc), Setup: qdisctest.DefaultSetup(), Classes: classes})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("qdisc %q class %q %q: %v, want %q", tt.qdisc, tt.class, tt.class2, err, tt.want)
		}
	}
}

// Classes come and go as hfsc_change_class and hfsc_delete_class let
// them: the root class X: cannot be made or deleted, an inner class
// cannot be deleted, a child under an rt-only class gives that class
// its rt as ls (with the kernel's message), and a class's first child
// purges its queue.
func TestClassTree(t *testing.T) {
	q, ctx := newHFSC(t, "", "parent 1: classid 1:1 hfsc rt rate 10mbit")
	var h skb.Handle
	send(q, ctx, &h, 0x10001, 5, 1000)
	if st := q.Stats(); st.Qlen != 5 {
		t.Fatalf("qlen %d after 5 packets to 1:1", st.Qlen)
	}
	err := q.ChangeClass(ctx, qdisc.ClassReq{ID: qdisc.MakeClassID(1, 0x10), Parent: qdisc.MakeClassID(1, 1), Create: true,
		Args: strings.Fields("sc rate 5mbit")})
	var w *qdisc.Warning
	if !errors.As(err, &w) || w.Msg != "Forced curve change on parent 'rt' to 'sc'" {
		t.Errorf("child under an rt-only class: %v", err)
	}
	p := q.byID[qdisc.MakeClassID(1, 1)]
	if p.level != 1 || q.root.level != 2 || p.flags&hasFSC == 0 || dumpCurves(p) != "sc m1 0bit d 0us m2 10Mbit " {
		t.Errorf("parent level %d, root level %d, curves %q", p.level, q.root.level, dumpCurves(p))
	}
	if st := q.Stats(); st.Qlen != 0 || st.Drops != 5 || p.inEl {
		t.Errorf("after the first child: %+v, parent in the eligible tree %v (want its 5 purged)", st, p.inEl)
	}
	for _, tt := range []struct {
		req  qdisc.ClassReq
		del  qdisc.ClassID
		want string
	}{
		{req: qdisc.ClassReq{ID: qdisc.MakeClassID(1, 0x20), Parent: qdisc.RootClass, Create: true, Args: []string{"sc", "rate", "1mbit"}}, want: "File exists"},
		{req: qdisc.ClassReq{ID: qdisc.MakeClassID(1, 0x10), Parent: qdisc.MakeClassID(1, 0x30), Args: []string{"sc", "rate", "1mbit"}}, want: "Invalid argument"},
		{del: qdisc.MakeClassID(1, 1), want: "HFSC class in use"},
		{del: qdisc.MakeClassID(1, 0), want: "HFSC class in use"},
		{del: qdisc.MakeClassID(1, 0x77), want: "No such file or directory"},
	} {
		var err error
		if tt.del != 0 {
			err = q.DeleteClass(ctx, tt.del)
		} else {
			err = q.ChangeClass(ctx, tt.req)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v %s: %v, want %q", tt.req, tt.del, err, tt.want)
		}
	}
	if err := q.DeleteClass(ctx, qdisc.MakeClassID(1, 0x10)); err != nil {
		t.Fatal(err)
	}
	if p.level != 0 || q.root.level != 1 {
		t.Errorf("after deleting the only child: parent level %d, root level %d", p.level, q.root.level)
	}
}

// With no class, the root class's own pfifo serves skb->priority X:0
// and the default class 0 (hfsc_classify finds X:0, level 0); a default
// that names no class drops, counted by the qdisc (__NET_XMIT_BYPASS).
func TestRootClassQueue(t *testing.T) {
	q, ctx := newHFSC(t, "")
	var h skb.Handle
	rc := send(q, ctx, &h, 0, 3, 500)
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 30}, nil)
	if rc[0] != qdisc.XmitSuccess || len(out) != 3 || q.Stats().Qlen != 0 {
		t.Errorf("default 0 with no class: rc %v, dequeued %d", rc, len(out))
	}
	q, ctx = newHFSC(t, "default 10")
	rc = send(q, ctx, &h, 0, 2, 500)
	if rc[0] != qdisc.XmitSuccess|qdisc.XmitBypass || q.Stats().Drops != 2 || q.Stats().Qlen != 0 {
		t.Errorf("default 10 with no class: rc %v, stats %+v", rc, q.Stats())
	}
	if q.Dump() != "default 0x10 " {
		t.Errorf("dump %q", q.Dump())
	}
}

// Two link-sharing leaves (ls 3:1) saturated: the dequeues split their
// bytes 3:1 however the packets are sized, and the real-time work of a
// leaf without rt is 0.
func TestLinkSharing(t *testing.T) {
	q, ctx := newHFSC(t, "",
		"parent 1: classid 1:1 hfsc ls rate 100mbit",
		"parent 1:1 classid 1:10 hfsc ls rate 75mbit",
		"parent 1:1 classid 1:20 hfsc ls rate 25mbit")
	var h skb.Handle
	send(q, ctx, &h, 0x10010, 400, 1500)
	send(q, ctx, &h, 0x10020, 900, 400)
	bytes := map[uint32]uint64{}
	for i := 0; i < 300; i++ {
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil) {
			bytes[p.Priority&0xFFFF] += uint64(p.Len)
		}
		ctx.T += 10 * sim.Microsecond
	}
	r := float64(bytes[0x10]) / float64(bytes[0x20])
	if r < 2.9 || r > 3.1 {
		t.Errorf("bytes 1:10 %d, 1:20 %d: ratio %.3f, want 3", bytes[0x10], bytes[0x20], r)
	}
	if c := q.byID[qdisc.MakeClassID(1, 0x10)]; c.cumul != 0 || c.total != bytes[0x10] {
		t.Errorf("1:10 rtwork %d work %d, sent %d", c.cumul, c.total, bytes[0x10])
	}
}

// A real-time leaf is not served before its eligible time: with rt
// 8mbit (1,000,000 B/s) and 1000-byte packets, one packet a millisecond;
// between, the dequeue returns nothing, counts an overlimit and arms the
// watchdog at the next eligible time.
func TestRealTimeWaits(t *testing.T) {
	q, ctx := newHFSC(t, "", "parent 1: classid 1:10 hfsc rt rate 8mbit")
	var h skb.Handle
	send(q, ctx, &h, 0x10010, 20, 1000)
	got := 0
	start := ctx.T
	for ctx.T < start+10*sim.Millisecond {
		got += len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 30}, nil))
		ctx.T += 100 * sim.Microsecond
	}
	if got < 10 || got > 12 {
		t.Errorf("%d packets in 10 ms at 8mbit of 1000 bytes, want 10-11", got)
	}
	if q.Stats().Overlimits == 0 || !ctx.WDogArmed {
		t.Errorf("overlimits %d, watchdog armed %v", q.Stats().Overlimits, ctx.WDogArmed)
	}
}

// hfsc conforms with and without classes, behind the plugin boundary's
// wrapper; with netem (delaying, duplicating: its clones go to the
// root) and tbf (shaping, its own watchdog) as leaves too.
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		classes []string
		leaves  []string
	}{
		{"root class only", nil, nil, nil},
		{"link-sharing", []string{"default", "20"}, []string{
			"parent 1: classid 1:1 hfsc sc rate 50mbit ul rate 50mbit",
			"parent 1:1 classid 1:10 hfsc ls rate 10mbit",
			"parent 1:1 classid 1:20 hfsc ls rate 40mbit",
		}, nil},
		{"real-time and upper limits", []string{"default", "3"}, []string{
			"parent 1: classid 1:1 hfsc ls rate 200mbit",
			"parent 1:1 classid 1:2 hfsc rt m1 50mbit d 5ms m2 10mbit ls rate 20mbit ul rate 100mbit",
			"parent 1:1 classid 1:3 hfsc sc umax 1500 dmax 2ms rate 20mbit",
			"parent 1: classid 1:4 hfsc rt rate 30mbit",
		}, nil},
		{"netem and tbf leaves", []string{"default", "20"}, []string{
			"parent 1: classid 1:1 hfsc sc rate 200mbit",
			"parent 1:1 classid 1:2 hfsc sc rate 100mbit",
			"parent 1:1 classid 1:20 hfsc rt rate 50mbit ls rate 100mbit",
		}, []string{"parent 1:2 handle 2: netem delay 1ms 500us duplicate 30%", "parent 1:20 handle 20: tbf rate 50mbit burst 20k limit 100k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := func() qdisc.Qdisc { return wire.WrapQdisc(&HFSC{}) }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: tt.args, Classes: tt.classes, Leaves: tt.leaves, Seed: 2, Pkts: 2000}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}
