package cake

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func TestConformance(t *testing.T) {
	for _, args := range [][]string{nil, {"bandwidth", "100Mbit"}, {"besteffort", "flows"}, {"diffserv4", "dual-dsthost", "memlimit", "200kb"}} {
		f := func() qdisc.Qdisc { return &Cake{} }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: args, Seed: 1}) {
			t.Errorf("%v: %s: %v", args, r.Check, r.Err)
		}
	}
}

// TestOptions: what tc-cake accepts, as cake_print_opt prints it back.
// The first two lines are real `tc -s -d qdisc show` output from the
// seed thread (llist-adoption): cake's defaults, and "besteffort flows"
// with docsis framing.
func TestOptions(t *testing.T) {
	ok := []struct {
		args string
		dump string
	}{
		{"", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"},
		{"besteffort flows docsis", "bandwidth unlimited besteffort flows nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 18 mpu 64"},
		{"bandwidth 2Gbit besteffort flows rtt 10ms wash", "bandwidth 2Gbit besteffort flows nonat wash no-ack-filter split-gso rtt 10ms raw overhead 0"},
		{"bandwidth 1kbit", "bandwidth 1Kbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"},
		{"bandwidth 1500kbit unlimited", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"},
		{"ethernet diffserv4 dual-dsthost memlimit 32Mb", "bandwidth unlimited diffserv4 dual-dsthost nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 38 mpu 84 memlimit 32Mb"},
		{"lan atm overhead -4", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 1ms atm overhead -4"},
		{"bandwidth 100mbit nat ingress ack-filter-aggressive fwmark 8 diffserv", "bandwidth 100Mbit diffserv4 triple-isolate nat nowash ingress ack-filter-aggressive split-gso rtt 100ms raw overhead 0 fwmark 0x8"},
		{"pppoe-vcmux ether-vlan no-split-gso", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter no-split-gso rtt 100ms atm overhead 36"},
		{"overhead 10 ethernet conservative mpu 96", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms atm overhead 48 mpu 96"},
		{"raw ethernet", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 38 mpu 84"},
		{"bandwidth 20mbit ptm overhead 30 interplanetary precedence srchost", "bandwidth 20Mbit precedence srchost nonat nowash no-ack-filter split-gso rtt 1e+03s ptm overhead 30"},
		{"rtt 0", "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"}, // tc sends no zero rtt
	}
	for _, c := range ok {
		q := &Cake{}
		if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514}, strings.Fields(c.args)); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got := q.Dump(); got != c.dump {
			t.Errorf("%q: dump\n got %q\nwant %q", c.args, got, c.dump)
		}
	}
	bad := []struct {
		args  string
		want  string
		class error
	}{
		{"bandwith 1Gbit", `unknown option "bandwith"`, qdisc.ErrParse},
		{"bandwidth fast", `illegal "bandwidth": "fast" is not a rate`, qdisc.ErrParse},
		{"bandwidth 100M", `unknown unit "M"`, qdisc.ErrParse},
		{"bandwidth unlimited", `illegal "bandwidth": "unlimited" is not a rate`, qdisc.ErrParse}, // tc's word is "unlimited" alone
		{"rtt", "needs a value", qdisc.ErrParse},
		{"overhead 300", "out of range", qdisc.ErrParse},
		{"mpu -1", "out of range", qdisc.ErrParse},
		{"memlimit -1", `illegal "memlimit"`, qdisc.ErrParse},
		{"fwmark mark", `illegal "fwmark"`, qdisc.ErrParse},
		{"lan metro", `duplicate "lan": "metro" is the second value`, qdisc.ErrParse},
	}
	for _, c := range bad {
		_, err := (&Cake{}).Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514}, strings.Fields(c.args))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.class) {
			t.Errorf("%q: error %v, want %q (%v)", c.args, err, c.want, c.class)
		}
	}
	// A cake_mq child takes no autorate-ingress: the kernel says so.
	_, err := (&Cake{}).Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514, Group: "g-autorate", GroupSize: 1}, []string{"autorate-ingress"})
	if !errors.Is(err, qdisc.ErrKernel) || !strings.Contains(err.Error(), "Can't use autorate-ingress with cake_mq") {
		t.Errorf("cake_mq autorate-ingress: %v", err)
	}
	// cake_mq without a bandwidth is unlimited, as in the kernel.
	q := &Cake{}
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514, Group: "g-unlimited", GroupSize: 1}, nil); err != nil || !strings.HasPrefix(q.Dump(), "bandwidth unlimited ") {
		t.Errorf("cake_mq with no bandwidth: %v %q", err, q.Dump())
	}
}

// TestChange: cake_change mid-run recomputes the tins' rates from a new
// bandwidth, purges the tins a new diffserv mode no longer uses
// (QUEUE_PURGE), resets the size statistics when the overhead changes,
// and every packet stays accounted for.
func TestChange(t *testing.T) {
	q := newCake(t, "diffserv4", "bandwidth", "100mbit")
	ctx := qdisctest.NewCtx(1)
	var next uint64
	flows := []flowSpec{{src: 1, dst: 2, port: 1, size: 500}, {src: 1, dst: 3, port: 2, dscp: 8, size: 500},
		{src: 1, dst: 4, port: 3, dscp: 46, size: 500}}
	feed(q, ctx, flows, 10, &next)
	if q.Stats().Qlen != 30 || q.maxNetlen == 0 {
		t.Fatalf("qlen %d, max size %d", q.Stats().Qlen, q.maxNetlen)
	}
	// diffserv4 prints its tins bulk first: tin1 is best effort.
	if r := qdisctest.XStat(q, "tin1_thresh"); r != 100_000_000/8 {
		t.Fatalf("best effort tin's rate %d", r)
	}
	if _, err := q.Change(ctx, []string{"bandwidth", "1gbit", "ethernet"}); err != nil {
		t.Fatal(err)
	}
	if r := qdisctest.XStat(q, "tin1_thresh"); r != 1_000_000_000/8 || q.Stats().Qlen != 30 || q.maxNetlen != 0 {
		t.Fatalf("after bandwidth 1gbit: best effort %d bytes/s, qlen %d, max size %d", r, q.Stats().Qlen, q.maxNetlen)
	}
	if !strings.HasPrefix(q.Dump(), "bandwidth 1Gbit diffserv4 ") || !strings.Contains(q.Dump(), "noatm overhead 38 mpu 84") {
		t.Fatalf("dump %q", q.Dump())
	}
	if _, err := q.Change(ctx, []string{"besteffort"}); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	if st.Qlen != 10 || len(ctx.Dropped) != 20 || qdisctest.XStat(q, "tin0_thresh") != 1_000_000_000/8 {
		t.Fatalf("after besteffort: qlen %d, %d purged", st.Qlen, len(ctx.Dropped))
	}
	for h, r := range ctx.Dropped {
		if r != skb.DropQueuePurge {
			t.Fatalf("packet %d dropped as %q", h, r)
		}
	}
	var out []skb.Packet
	for i := 0; i < 100 && q.Stats().Qlen > 0; i++ { // the 1 Gbit/s shaper paces them
		out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 100, Bytes: 1 << 40}, out)
		ctx.T += 10 * sim.Microsecond
	}
	if len(out)+len(ctx.Dropped) != 30 || len(out) != 10 {
		t.Fatalf("accounting: %d out, %d purged of 30", len(out), len(ctx.Dropped))
	}
	for _, p := range out {
		if p.DSCP != 0 {
			t.Fatalf("packet of DSCP %d survived besteffort", p.DSCP)
		}
	}
	if _, err := q.Change(ctx, []string{"bandwidth", "fast"}); !errors.Is(err, qdisc.ErrParse) || qdisctest.XStat(q, "tin0_thresh") != 1_000_000_000/8 {
		t.Fatalf("refused change: %v", err)
	}
}

func FuzzOptions(f *testing.F) {
	f.Add("bandwidth 100Mbit diffserv4 rtt 20ms")
	f.Add("memlimit 1kb overhead -64 mpu 256 ptm")
	f.Add("raw ethernet lan fwmark 0xf0 nat")
	f.Fuzz(func(t *testing.T, words string) {
		q := &Cake{}
		if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514}, strings.Fields(words)); err != nil {
			return
		}
		_ = q.Dump()
		q.Stats()
	})
}

// BenchmarkEnqueueDequeue: packets per wall second through cake alone
// (triple-isolate, 64 flows over 8 hosts, batches of 32).
func BenchmarkEnqueueDequeue(b *testing.B) {
	q := &Cake{}
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514}, nil); err != nil {
		b.Fatal(err)
	}
	ctx := qdisctest.NewCtx(1)
	batch := make([]skb.Packet, 32)
	rc := make([]qdisc.Code, 32)
	var out []skb.Packet
	var h uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range batch {
			h++
			f := uint32(h % 64)
			batch[k] = skb.Packet{Handle: skb.Handle(h), Len: 100, TrueSize: 768, Hash: f*2654435761 + 1,
				Keys: skb.FlowKeys{Src: f % 8, Dst: f, SrcPort: uint16(f), DstPort: 80, Proto: 17}, GSOSegs: 1}
		}
		q.Enqueue(ctx, batch, rc)
		out = q.Dequeue(ctx, qdisc.DequeueReq{Max: 32, Bytes: 1 << 30}, out[:0])
		ctx.T += 10 * sim.Microsecond
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds(), "pkts/s")
}

// A queued packet costs a ring entry beside the host's skb
// (run.TestInflightMemory): the Packet, its enqueue time and adjusted
// length.
func TestPktSize(t *testing.T) {
	if n := unsafe.Sizeof(pkt{}); n > 88 {
		t.Errorf("sizeof pkt %d, want at most 88", n)
	} else {
		t.Logf("sizeof pkt %d", n)
	}
}
