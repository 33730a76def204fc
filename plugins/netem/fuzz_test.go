package netem

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
var kinds = []string{"netem"}

func FuzzOptions(f *testing.F) {
	for _, s := range []string{"limit 10 delay 1ms 1ms 50% distribution pareto loss gemodel 10% 20% 30% 40% duplicate 50% 50% reorder 50% gap 2 corrupt 10% rate 1kbit -100 7 -3 slot 1ms 2ms packets 1 bytes 1 seed 1 ecn", "delay 1ns 2147483647ns slot distribution normal 1ns 1ns", "rate 1bit 2147483647 4294967295 -2147483648"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, kind := range kinds {
			q, _ := qdisc.New(kind)
			ctx := qdisctest.NewCtx(1)
			if _, err := ctx.Init(q, qdisctest.DefaultSetup(), strings.Fields(args)); err != nil {
				continue
			}
			for i := range 50 {
				ecn := uint8(i % 4)
				p := skb.Packet{Handle: skb.Handle(i + 1), Len: uint32(40 + i*61), TrueSize: 2048, ECN: ecn, Hash: uint32(i) * 2654435761, GSOSegs: 1}
				q.Enqueue(ctx, []skb.Packet{p}, make([]qdisc.Code, 1))
				ctx.Dups = ctx.Dups[:0] // the clones are the suite's business
				ctx.T += sim.Millisecond
			}
			q.Dump()
			q.Stats()
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil)
			q.(qdisc.Resetter).Reset(ctx)
			if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 {
				t.Fatalf("%s %q: after reset %+v", kind, args, st)
			}
		}
	})
}
