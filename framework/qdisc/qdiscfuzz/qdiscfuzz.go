// Package qdiscfuzz is the option fuzz target qdisc plugins share (apart
// from qdisctest, which the txlab binary links for `plugin test`).
package qdiscfuzz

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// FuzzOptions is a qdisc's option fuzz target: any words give a clear
// error, or a qdisc of each kind that takes packets, dumps, gives them
// back and resets to empty, without a panic. seeds start the corpus.
func FuzzOptions(f *testing.F, kinds []string, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, kind := range kinds {
			q, _ := qdisc.New(kind)
			ctx := qdisctest.NewCtx(1)
			if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args)}); err != nil {
				continue // a classful kind gets its classes' default leaves, as from the host
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
			qdisctest.Reset(ctx, q)
			if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 {
				t.Fatalf("%s %q: after reset %+v", kind, args, st)
			}
		}
	})
}
