package cake

import (
	"strings"
	"testing"

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

func TestOptions(t *testing.T) {
	ok := []struct {
		args []string
		dump string
	}{
		{nil, "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"},
		{[]string{"bandwidth", "2Gbit", "besteffort", "flows", "rtt", "10ms", "wash"}, "bandwidth 2000Mbit besteffort flows nonat wash no-ack-filter split-gso rtt 10ms raw overhead 0"},
		{[]string{"ethernet", "diffserv4", "dual-dsthost", "memlimit", "32Mb"}, "bandwidth unlimited diffserv4 dual-dsthost nonat nowash no-ack-filter split-gso rtt 100ms overhead 38 mpu 84 memlimit 33554432b"},
		{[]string{"lan", "atm", "overhead", "-4"}, "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 1ms atm overhead -4"},
	}
	for _, c := range ok {
		q := &Cake{}
		if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514}, c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := q.Dump(); got != c.dump {
			t.Errorf("%v: dump\n got %q\nwant %q", c.args, got, c.dump)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"bandwith", "1Gbit"}, `unknown option "bandwith"`},
		{[]string{"bandwidth", "fast"}, "not a rate"},
		{[]string{"rtt"}, "needs a value"},
		{[]string{"overhead", "300"}, "out of range"},
		{[]string{"nat"}, "conntrack"},
		{[]string{"memlimit", "-1"}, "memlimit"},
	}
	for _, c := range bad {
		_, err := (&Cake{}).Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514}, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func FuzzOptions(f *testing.F) {
	f.Add("bandwidth 100Mbit diffserv4 rtt 20ms")
	f.Add("memlimit 1kb overhead -64 mpu 256 ptm")
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
