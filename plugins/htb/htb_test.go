package htb

import (
	"errors"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
	_ "github.com/txlab/txlab/plugins/netem"
	_ "github.com/txlab/txlab/plugins/tbf"
)

func setup(handle string) qdisc.Setup {
	s := qdisctest.DefaultSetup()
	s.Handle = handle
	return s
}

func newHTB(t *testing.T, handle string, args string) (*HTB, *qdisctest.Ctx) {
	t.Helper()
	q := &HTB{}
	ctx := qdisctest.NewCtx(1)
	if _, err := q.Init(ctx, setup(handle), strings.Fields(args)); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

func addClass(t *testing.T, q *HTB, ctx qdisc.Ctx, id, parent qdisc.ClassID, args string) error {
	t.Helper()
	return q.ChangeClass(ctx, qdisc.ClassReq{ID: id, Parent: parent, Create: true, Args: strings.Fields(args)})
}

// The qdisc and class dumps against real `tc -s -d` output.
func TestDumpRealOutput(t *testing.T) {
	// "qdisc htb 1: root refcnt 2 r2q 10 default 0x30
	// direct_packets_stat 0 ver 3.17 direct_qlen 1000", as tc -d prints
	// an htb made with `default 30` on a device of tx_queue_len 1000.
	q, _ := newHTB(t, "1:", "default 30")
	if got, want := q.Dump(), "r2q 10 default 0x30 direct_packets_stat 0 ver 3.17 direct_qlen 1000"; got != want {
		t.Errorf("qdisc dump %q, want %q", got, want)
	}
	q, _ = newHTB(t, "801b:", "")
	if got := q.Dump(); !strings.HasPrefix(got, "r2q 10 default 0 direct_packets_stat 0") {
		t.Errorf("qdisc dump %q: `default 0` prints as 0, as %%#llx does", got)
	}

	// oasis CI (n-hop/oasis#8): `tc -s -d class show` of an htb class
	// "rate 100Mbit ceil 100Mbit", burst given, cburst the default:
	// class htb 5:1 root leaf 10: prio 0 quantum 200000 rate 100Mbit
	// ceil 100Mbit linklayer ethernet burst 15337b/1 mpu 0b cburst
	// 1600b/1 mpu 0b level 0 (tc's line ends in a space).
	q, ctx := newHTB(t, "5:", "")
	err := addClass(t, q, ctx, 0x50001, qdisc.RootClass, "rate 100mbit ceil 100mbit burst 15337")
	var w *qdisc.Warning
	if !errors.As(err, &w) || w.Msg != "sch_htb: quantum of class 50001 is big. Consider r2q change." {
		t.Fatalf("class add: %v, want the kernel's quantum warning", err)
	}
	cs := q.Classes()
	want := "prio 0 quantum 200000 rate 100Mbit ceil 100Mbit linklayer ethernet burst 15337b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 "
	if len(cs) != 1 || cs[0].Options != want || cs[0].Parent != qdisc.RootClass || !cs[0].Leaf {
		t.Errorf("class dump %+v\nwant options %q", cs, want)
	}
	// At rest the buckets are full: tokens is the burst in psched ticks.
	x := map[string]int64{}
	for _, s := range cs[0].XStats {
		x[s.Key] = s.Int64()
	}
	if x["tokens"] != 19172 || x["ctokens"] != 2000 {
		t.Errorf("tokens %d ctokens %d, want 19172 and 2000 (the bursts' xmit times in 64 ns ticks)", x["tokens"], x["ctokens"])
	}
}

// The defaults tc computes: a burst of the rate's bytes per tick of a
// 1 GHz clock plus the mtu (1600), and quantum rate/r2q kept in [1000,
// 200000] with the kernel's warnings.
func TestDefaults(t *testing.T) {
	tests := []struct {
		args, opts, warn string
	}{
		{"rate 750mbit ceil 1gbit", "prio 0 quantum 200000 rate 750Mbit ceil 1Gbit linklayer ethernet burst 1602b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 ", "is big"},
		{"rate 1mbit", "prio 0 quantum 12500 rate 1Mbit ceil 1Mbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 ", ""},
		{"rate 64kbit", "prio 0 quantum 1000 rate 64Kbit ceil 64Kbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 ", "is small"},
		// A quantum given: no warning.
		{"rate 64kbit quantum 1514 prio 9", "prio 7 quantum 1514 rate 64Kbit ceil 64Kbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 ", ""},
		// 1601 bytes at 10gbit are 20.01 ticks of 64 ns, rounded up to
		// 21, which tc prints back as 1680 bytes; 1602 at 20gbit, 11
		// ticks, 1760.
		{"rate 10gbit ceil 20gbit", "prio 0 quantum 200000 rate 10Gbit ceil 20Gbit linklayer ethernet burst 1680b/1 mpu 0b cburst 1760b/1 mpu 0b level 0 ", "is big"},
		// A burst above 4 GB: 64-bit in tc, 2^26 ticks at 10gbit.
		{"rate 10gbit burst 5gb", "prio 0 quantum 200000 rate 10Gbit ceil 10Gbit linklayer ethernet burst 5Gb/1 mpu 0b cburst 1680b/1 mpu 0b level 0 ", "is big"},
		{"rate 8mbit overhead 24 mpu 64 linklayer atm", "prio 0 quantum 100000 rate 8Mbit overhead 24 ceil 8Mbit linklayer atm burst 1600b/1 mpu 64b cburst 1600b/1 mpu 64b level 0 ", ""},
		// Percentages of the 10 Gbit/s link (get_percent_rate64);
		// linklayer adsl is atm, burst's cell is read and ignored.
		{"rate 10% ceil 50% burst 3000/8 linklayer adsl", "prio 0 quantum 200000 rate 1Gbit ceil 5Gbit linklayer atm burst 3000b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 ", "is big"},
	}
	for _, tt := range tests {
		q, ctx := newHTB(t, "1:", "")
		err := addClass(t, q, ctx, 0x10001, qdisc.RootClass, tt.args)
		var w *qdisc.Warning
		switch {
		case tt.warn == "" && err != nil, tt.warn != "" && (!errors.As(err, &w) || !strings.Contains(w.Msg, tt.warn)):
			t.Errorf("%q: %v, want warning %q", tt.args, err, tt.warn)
		}
		if cs := q.Classes(); len(cs) != 1 || cs[0].Options != tt.opts {
			got := "no class"
			if len(cs) == 1 {
				got = cs[0].Options
			}
			t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.opts)
		}
	}
}

// Bad input: tc's message (exit 1) or the kernel's (exit 2) naming the
// word; what both accept but is a mistake is the model's refusal.
func TestClassErrors(t *testing.T) {
	tests := []struct {
		args   string
		id     qdisc.ClassID
		parent qdisc.ClassID
		want   string
		class  error
	}{
		{"ceil 1gbit", 0x10010, qdisc.RootClass, `"rate" is required.`, qdisc.ErrParse},
		{"rate 0", 0x10010, qdisc.RootClass, `"rate" is required.`, qdisc.ErrParse},
		{"rate fast", 0x10010, qdisc.RootClass, `Illegal "rate" "fast"`, qdisc.ErrParse},
		{"rate 1mbit rate 2mbit", 0x10010, qdisc.RootClass, `Double "rate" spec`, qdisc.ErrParse},
		{"rate 1mbit burst 10k/3", 0x10010, qdisc.RootClass, `Illegal "burst"`, qdisc.ErrParse},
		{"rate 1mbit speed 3", 0x10010, qdisc.RootClass, `What is "speed"?`, qdisc.ErrParse},
		// tc's usage lists slot and pslot; its parser has no such word.
		{"rate 1mbit slot 3", 0x10010, qdisc.RootClass, `What is "slot"?`, qdisc.ErrParse},
		{"rate 1mbit pslot 3", 0x10010, qdisc.RootClass, `What is "pslot"?`, qdisc.ErrParse},
		// burst is 64-bit (get_size64_and_cell), its xmit time in 32-bit
		// ticks: 10 MB at 1 kbit/s is out of range (tc_calc_xmittime
		// saturates); cburst is a 32-bit size (get_size_and_cell).
		{"rate 1kbit burst 10mb", 0x10010, qdisc.RootClass, `htb: burst out of range`, qdisc.ErrParse},
		{"rate 10gbit cburst 5gb", 0x10010, qdisc.RootClass, `Illegal "cburst"`, qdisc.ErrParse},
		{"rate 2mbit ceil 1mbit", 0x10010, qdisc.RootClass, "ceil 1Mbit is below rate 2Mbit", qdisc.ErrLacks},
		{"rate 1mbit", 0x10010, 0x10099, "parent class 1:99 does not exist", qdisc.ErrLacks},
		{"rate 1mbit", 0x20010, qdisc.RootClass, "classid 2:10 is not of qdisc 1:", qdisc.ErrKernel},
	}
	for _, tt := range tests {
		q, ctx := newHTB(t, "1:", "")
		err := addClass(t, q, ctx, tt.id, tt.parent, tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q: %v, want %q of class %v", tt.args, err, tt.want, tt.class)
		}
		if len(q.Classes()) != 0 {
			t.Errorf("%q: a refused class exists", tt.args)
		}
	}
	// An htb tree is at most 8 levels: the kernel refuses the class that
	// would make a ninth ("tree is too deep").
	q, ctx := newHTB(t, "1:", "")
	parent := qdisc.RootClass
	var err error
	for i := 1; i <= 9 && err == nil; i++ {
		id := qdisc.MakeClassID(1, uint16(i))
		if err = addClass(t, q, ctx, id, parent, "rate 1mbit"); err == nil {
			parent = id
		}
	}
	if err == nil || !strings.Contains(err.Error(), "tree is too deep") {
		t.Errorf("nine levels: %v, want the kernel's refusal", err)
	}
	if _, err := (&HTB{}).Init(ctx, setup("1:"), []string{"offload"}); !errors.Is(err, qdisc.ErrLacks) {
		t.Errorf("offload: %v, want the model's refusal", err)
	}
}

// A leaf that gets a child becomes an inner class at the level below its
// parent (root classes' children at 6, ...), and back when the child goes.
func TestLevels(t *testing.T) {
	q, ctx := newHTB(t, "1:", "")
	for _, c := range []struct {
		id, parent qdisc.ClassID
	}{{0x10001, qdisc.RootClass}, {0x10010, 0x10001}, {0x10100, 0x10010}} {
		if err := addClass(t, q, ctx, c.id, c.parent, "rate 1mbit"); err != nil {
			t.Fatal(err)
		}
	}
	levels := map[qdisc.ClassID]int{}
	leaves := map[qdisc.ClassID]bool{}
	for _, c := range q.Classes() {
		levels[c.ID] = q.classes[c.ID].level
		leaves[c.ID] = c.Leaf
	}
	if levels[0x10001] != 7 || levels[0x10010] != 6 || levels[0x10100] != 0 || leaves[0x10010] || !leaves[0x10100] {
		t.Errorf("levels %v leaves %v", levels, leaves)
	}
	if err := q.DeleteClass(ctx, 0x10010); err == nil {
		t.Errorf("deleting a class with children: no error (the kernel: HTB class in use)")
	}
	if err := q.DeleteClass(ctx, 0x10100); err != nil {
		t.Fatal(err)
	}
	if c := q.classes[0x10010]; c.level != 0 || c.tokens != c.buffer {
		t.Errorf("the last child's parent: level %d tokens %d, want a leaf again with full buckets", c.level, c.tokens)
	}
}

// tc class show lists htb's classes in its class hash's order
// (qdisc_class_hash: 4 buckets, doubled past 3/4 full, newest first in
// a bucket).
func TestWalkOrder(t *testing.T) {
	q, ctx := newHTB(t, "1:", "")
	for _, id := range []qdisc.ClassID{0x10001, 0x10010, 0x10020, 0x10030, 0x10002} {
		if err := addClass(t, q, ctx, id, qdisc.RootClass, "rate 1mbit"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range q.Classes() {
		got = append(got, c.ID.String())
	}
	// hash (id ^= id>>8; id ^= id>>4; & mask): 1:1 and 1:10 share bucket
	// 1 of 4 (1:10 first, the newer); the 4th class doubles the table
	// and the rehash walks bucket 1 in order, putting each at the head
	// of its new bucket: 1:1 before 1:10 in bucket 1 of 8; 1:2 (newer)
	// and 1:20 in bucket 2; 1:30 in 3.
	if want := "1:1 1:10 1:2 1:20 1:30"; strings.Join(got, " ") != want {
		t.Errorf("walk %q, want %q", strings.Join(got, " "), want)
	}
}

// htb conforms, with and without classes, in process behind the
// plugin boundary's wrapper; with netem (duplicating: its clones go to
// htb, the root) and tbf (shaping, its own watchdog) as leaves too.
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		classes []string
		leaves  []string
	}{
		{"direct queue only", nil, nil, nil},
		{"one class", []string{"default", "10"}, []string{"parent 1: classid 1:10 htb rate 100mbit"}, nil},
		{"a tree, shaping", []string{"default", "20"}, []string{
			"parent 1: classid 1:1 htb rate 50mbit",
			"parent 1:1 classid 1:10 htb rate 10mbit ceil 50mbit",
			"parent 1:1 classid 1:20 htb rate 20mbit ceil 40mbit prio 1",
		}, nil},
		{"netem and tbf leaves", []string{"default", "20"}, []string{
			"parent 1: classid 1:1 htb rate 200mbit",
			"parent 1:1 classid 1:2 htb rate 100mbit ceil 200mbit",
			"parent 1:1 classid 1:20 htb rate 100mbit ceil 200mbit",
		}, []string{"parent 1:2 handle 2: netem delay 1ms 500us duplicate 30%", "parent 1:20 handle 20: tbf rate 50mbit burst 20k limit 100k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := func() qdisc.Qdisc { return wire.WrapQdisc(&HTB{}) }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: tt.args, Classes: tt.classes, Leaves: tt.leaves, Seed: 2, Pkts: 2000}) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}

// htb_enqueue only classifies and reads the class: the host prices its
// private lines as read on enqueue (qdisc.EnqueueReadsPrivate).
func TestEnqueueReadsPrivate(t *testing.T) {
	info, err := (&HTB{}).Init(qdisctest.NewCtx(1), setup("1:"), []string{"default", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Flags&qdisc.EnqueueReadsPrivate == 0 {
		t.Errorf("htb's flags %#x lack EnqueueReadsPrivate", uint32(info.Flags))
	}
}

// A leaf that drops the packet it took (netem's loss: its own
// __NET_XMIT_BYPASS) leaves the class inactive, as htb_enqueue
// activates only on qdisc_enqueue's NET_XMIT_SUCCESS itself; the
// sender is told it was sent (dev_qdisc_enqueue masks the flag).
func TestLeafBypassDropNotActive(t *testing.T) {
	q := &HTB{}
	ctx := qdisctest.NewCtx(1)
	o := qdisctest.Options{Args: []string{"default", "2"},
		Classes: []string{"parent 1: classid 1:1 htb rate 100mbit", "parent 1: classid 1:2 htb rate 100mbit"},
		Leaves:  []string{"parent 1:1 handle 10: netem loss 100%"}}
	if _, err := qdisctest.Attach(ctx, q, o); err != nil {
		t.Fatal(err)
	}
	rc := make([]qdisc.Code, 1)
	q.Enqueue(ctx, []skb.Packet{{Handle: 1, Len: 100, Priority: 0x10001}}, rc)
	if rc[0] != qdisc.XmitSuccess|qdisc.XmitBypass {
		t.Errorf("htb answered netem's loss with %v, want NET_XMIT_SUCCESS|__NET_XMIT_BYPASS (htb_enqueue returns ret; the sender sees it masked)", rc[0])
	}
	for _, cl := range q.clhash.Walk() {
		if cl.prioActivity != 0 {
			t.Errorf("class %v active with an empty leaf", cl.id)
		}
	}
	if st := q.Stats(); st.Qlen != 0 || st.Drops != 1 {
		t.Errorf("%+v, want empty with 1 drop", st)
	}
}

// shotCtx is the suite's context with a filter that drops every packet.
type shotCtx struct{ *qdisctest.Ctx }

func (shotCtx) Classify(*skb.Packet, qdisc.ClassID) qdisc.FilterResult {
	return qdisc.FilterResult{Verdict: qdisc.VerdictShot}
}

// A packet a filter drops (TC_ACT_SHOT: htb_classify returns NULL with
// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS) reaches the sender as
// NET_XMIT_SUCCESS and counts as the qdisc's drop.
func TestFilterShotIsBypass(t *testing.T) {
	q, ctx := newHTB(t, "1:", "default 1")
	if err := addClass(t, q, ctx, 0x10001, qdisc.RootClass, "rate 10mbit"); err != nil {
		t.Fatal(err)
	}
	rc := make([]qdisc.Code, 1)
	q.Enqueue(shotCtx{ctx}, []skb.Packet{{Handle: 1, Len: 100}}, rc)
	if rc[0] != qdisc.XmitSuccess|qdisc.XmitBypass {
		t.Errorf("htb answered a filter's drop with %v, want NET_XMIT_SUCCESS|__NET_XMIT_BYPASS (masked for the sender)", rc[0])
	}
	if _, dropped := ctx.Dropped[1]; !dropped || q.Stats().Drops != 1 {
		t.Errorf("dropped %v, %+v: want the packet dropped and counted", dropped, q.Stats())
	}
}

// htb_init: rate2quantum is an int, 1 when tc's u32 is below 1 or reads
// as negative (2^31 and above); the dump and the quanta use it.
func TestR2Q(t *testing.T) {
	tests := []struct {
		args    string
		r2q     string
		quantum string
	}{
		{"", "r2q 10 ", "quantum 12500 "},
		{"r2q 0", "r2q 1 ", "quantum 125000 "},
		{"r2q 2147483647", "r2q 2147483647 ", "quantum 1000 "},
		{"r2q 2147483648", "r2q 1 ", "quantum 125000 "},
		{"r2q 4294967295", "r2q 1 ", "quantum 125000 "},
	}
	for _, tt := range tests {
		q, ctx := newHTB(t, "1:", tt.args)
		if d := q.Dump(); !strings.HasPrefix(d, tt.r2q) {
			t.Errorf("%q: dump %q, want %q", tt.args, d, tt.r2q)
		}
		_ = addClass(t, q, ctx, 0x10001, qdisc.RootClass, "rate 1mbit")
		if o := q.Classes()[0].Options; !strings.Contains(o, tt.quantum) {
			t.Errorf("%q: class %q, want %q", tt.args, o, tt.quantum)
		}
	}
}
