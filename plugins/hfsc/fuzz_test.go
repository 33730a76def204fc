package hfsc

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Any qdisc words: a clear error, or an hfsc that takes packets, dumps,
// gives them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"hfsc"}, "default 10", "default ffff", "")
}

// Any class words (a class 1:10 under a class 1:1 with an upper limit):
// tc's error, or a class whose packets all come back, in any of the
// curves' orders, with the dump's words parsing back (tc prints rates
// rounded, so not always to the same curves).
func FuzzClassOptions(f *testing.F) {
	for _, s := range []string{"sc rate 10mbit", "rt m1 20mbit d 10ms m2 10mbit ls rate 5mbit ul rate 30mbit",
		"sc umax 1500 dmax 2ms rate 1mbit", "ls m2 1bit", "rt umax 4294967295 dmax 1us rate 1", "ul rate 1 ls m1 4gbit d 4000s m2 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, words string) {
		q := &HFSC{}
		ctx := qdisctest.NewCtx(1)
		o := qdisctest.Options{Args: []string{"default", "10"}, Setup: qdisctest.DefaultSetup(),
			Classes: []string{"parent 1: classid 1:1 hfsc ls rate 100mbit ul rate 100mbit", "parent 1:1 classid 1:10 hfsc " + words}}
		if _, err := qdisctest.Attach(ctx, q, o); err != nil {
			if !strings.Contains(err.Error(), "hfsc") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %q: not one line naming hfsc", words, err)
			}
			return
		}
		cl := q.byID[qdisc.MakeClassID(1, 0x10)]
		if _, err := parseClass(strings.Fields(dumpCurves(cl)), 10e9); err != nil {
			t.Fatalf("%q: the dump %q does not parse back: %v", words, dumpCurves(cl), err)
		}
		var h skb.Handle
		send(q, ctx, &h, 0, 30, 1000)
		got := 0
		for range 2000 {
			got += len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil))
			if ctx.WDogArmed && ctx.WDog > ctx.T {
				ctx.T = ctx.WDog
			} else {
				ctx.T += sim.Millisecond
			}
		}
		st := q.Stats()
		if got+int(st.Qlen) != 30 || st.Drops != 0 {
			t.Fatalf("%q: %d sent, %d held, %d dropped of 30", words, got, st.Qlen, st.Drops)
		}
		qdisctest.Reset(ctx, q)
		if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 {
			t.Fatalf("%q: after reset %+v", words, st)
		}
	})
}
