package qfq

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// Any class words (a class 1:2 beside 1:1 of weight 1): tc's or the
// kernel's one-line error, or a class whose dump reads back as a change
// that changes nothing, and whose packets, some longer than its lmax,
// all come back beside 1:1's (or the longest, past QFQ_MAX_LMAX, are
// dropped); then a reset leaves nothing active.
func FuzzClassOptions(f *testing.F) {
	for _, s := range []string{"", "weight 3", "maxpkt 9000", "weight 1024 maxpkt 65536", "w 7 m 512", "weight 0",
		"maxpkt 511", "weight 1 weight 2", "maxpkt", "help", "weight 0x10", "weight 4294967297"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, words string) {
		q := &QFQ{}
		ctx := qdisctest.NewCtx(1)
		o := qdisctest.Options{Setup: qdisctest.DefaultSetup(),
			Classes: []string{"parent 1: classid 1:1 qfq weight 1", "parent 1: classid 1:2 qfq " + words}}
		if _, err := qdisctest.Attach(ctx, q, o); err != nil {
			if !strings.HasPrefix(err.Error(), `class "parent 1: classid 1:2 qfq`) || !strings.Contains(err.Error(), "qfq: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %q: not one line naming qfq", words, err)
			}
			return
		}
		dump := q.Classes()
		var opts string
		for _, c := range dump {
			if c.ID == 0x10002 {
				opts = c.Options
			}
		}
		wsum := q.wsum
		if err := q.ChangeClass(ctx, qdisc.ClassReq{ID: 0x10002, Parent: qdisc.RootClass, Create: true, Args: strings.Fields(opts)}); err != nil || q.wsum != wsum {
			t.Fatalf("%q: the dump %q as a change: %v, wsum %d (was %d)", words, opts, err, q.wsum, wsum)
		}
		var h skb.Handle
		var dropped int
		for i := 0; i < 40; i++ {
			size := uint32(64 + i*1777%70000)
			if size > qfqMaxLmax {
				dropped++
			}
			send(q, ctx, &h, 0x10001+uint32(i%2), 1, size)
		}
		got := len(q.Dequeue(ctx, qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, nil))
		if st := q.Stats(); got+dropped != 40 || st.Qlen != 0 || st.Drops != uint64(dropped) {
			t.Fatalf("%q: %d sent, %d dropped (want %d), %d held of 40", words, got, st.Drops, dropped, st.Qlen)
		}
		send(q, ctx, &h, 0x10002, 5, 1000)
		qdisctest.Reset(ctx, q)
		if st := q.Stats(); st.Qlen != 0 || q.inServAgg != nil || q.bitmaps != [qfqMaxState]uint64{} {
			t.Fatalf("%q: after reset %+v, in service %v, bitmaps %v", words, st, q.inServAgg, q.bitmaps)
		}
	})
}
