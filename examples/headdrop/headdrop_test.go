package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

var setup = qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000, NumTxQ: 1}

// pkt is packet i (handle i, so handles read as arrival order).
func pkt(i int) skb.Packet {
	return skb.Packet{Handle: skb.Handle(i), Len: uint32(100 + i), GSOSegs: 1}
}

func newQ(t *testing.T, args ...string) *HeadDrop {
	t.Helper()
	q := New().(*HeadDrop)
	if _, err := q.Init(qdisctest.NewCtx(1), setup, args); err != nil {
		t.Fatalf("Init(%q): %v", args, err)
	}
	return q
}

// offer enqueues packets 1..n in batches of batch and returns the codes.
func offer(q qdisc.Qdisc, ctx qdisc.Ctx, n, batch int) []qdisc.Code {
	var rcs []qdisc.Code
	for i := 1; i <= n; i += batch {
		var b []skb.Packet
		for j := i; j < i+batch && j <= n; j++ {
			b = append(b, pkt(j))
		}
		rc := make([]qdisc.Code, len(b))
		q.Enqueue(ctx, b, rc)
		rcs = append(rcs, rc...)
	}
	return rcs
}

func handles(ps []skb.Packet) []skb.Handle {
	var hs []skb.Handle
	for _, p := range ps {
		hs = append(hs, p.Handle)
	}
	return hs
}

// name is a subtest name for tc options.
func name(args []string) string {
	if len(args) == 0 {
		return "default"
	}
	return strings.Join(args, " ")
}

func span(from, to int) []skb.Handle { // from..to inclusive, nil if empty
	var hs []skb.Handle
	for i := from; i <= to; i++ {
		hs = append(hs, skb.Handle(i))
	}
	return hs
}

// TestHeadDrop: after limit+k packets the k oldest are gone, dropped as
// QDISC_DROP, each newcomer past the limit got NET_XMIT_CN, and what
// is left comes out in arrival order.
func TestHeadDrop(t *testing.T) {
	for _, tc := range []struct {
		name         string
		limit, n, bs int
	}{
		{"under limit", 10, 7, 1},
		{"exactly full", 10, 10, 4},
		{"one over", 10, 11, 1},
		{"k over, one batch", 10, 25, 25},
		{"k over, small batches", 10, 25, 3},
		{"limit 1", 1, 5, 2},
		{"batch longer than limit", 2, 9, 9}, // heads dropped from the same batch
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, "limit", strconv.Itoa(tc.limit))
			ctx := qdisctest.NewCtx(1)
			rc := offer(q, ctx, tc.n, tc.bs)
			k := max(tc.n-tc.limit, 0)

			for i, c := range rc {
				want := qdisc.XmitSuccess
				if i >= tc.limit {
					want = qdisc.XmitCN
				}
				if c != want {
					t.Errorf("packet %d: rc %v, want %v", i+1, c, want)
				}
			}
			if len(ctx.Dropped) != k {
				t.Errorf("%d dropped, want %d", len(ctx.Dropped), k)
			}
			for _, h := range span(1, k) {
				if r, ok := ctx.Dropped[h]; !ok || r != skb.DropQdiscDrop {
					t.Errorf("packet %d: dropped=%v reason %q, want %q", h, ok, r, skb.DropQdiscDrop)
				}
			}
			st := q.Stats()
			var backlog int64
			for i := k + 1; i <= tc.n; i++ {
				backlog += int64(pkt(i).Len)
			}
			if st.Qlen != tc.n-k || st.Backlog != backlog || st.Drops != uint64(k) || st.Overlimits != 0 {
				t.Errorf("stats %+v, want qlen %d backlog %d drops %d", st, tc.n-k, backlog, k)
			}
			if p, ok := q.Peek(ctx); !ok || p.Handle != skb.Handle(k+1) {
				t.Errorf("peek %v %v, want packet %d", p.Handle, ok, k+1)
			}
			got := handles(q.Dequeue(ctx, qdisc.DequeueReq{Max: tc.n + 1, Bytes: 1 << 40}, nil))
			if want := span(k+1, tc.n); !slices.Equal(got, want) {
				t.Errorf("dequeued %v, want %v", got, want)
			}
			// Every enqueue is priced, and so is every unlink from the head.
			if e, d := ctx.WorkDone[qdisc.WorkEnqueue], ctx.WorkDone[qdisc.WorkDequeue]; e != tc.n || d != tc.n {
				t.Errorf("work: %d enqueue, %d dequeue; want %d each", e, d, tc.n)
			}
		})
	}
}

// TestLimitZero: with no room there is no head to drop, so the newcomer
// goes, as in pfifo_tail_enqueue's limit == 0 case.
func TestLimitZero(t *testing.T) {
	q := newQ(t, "limit", "0")
	ctx := qdisctest.NewCtx(1)
	for i, c := range offer(q, ctx, 3, 2) {
		if c != qdisc.XmitDrop || ctx.Dropped[skb.Handle(i+1)] != skb.DropQdiscDrop {
			t.Errorf("packet %d: rc %v reason %q, want NET_XMIT_DROP QDISC_DROP", i+1, c, ctx.Dropped[skb.Handle(i+1)])
		}
	}
	if st := q.Stats(); st.Qlen != 0 || st.Drops != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestBulkDequeue: Max, Bytes and SameQueue bound one bulk.
func TestBulkDequeue(t *testing.T) {
	// Packets 1..6 of 1000 bytes; 1-3 on txq 0, 4-6 on txq 1.
	fill := func() (*HeadDrop, *qdisctest.Ctx) {
		q := newQ(t, "limit", "10")
		ctx := qdisctest.NewCtx(1)
		b := make([]skb.Packet, 6)
		for i := range b {
			b[i] = skb.Packet{Handle: skb.Handle(i + 1), Len: 1000, Queue: uint16(i / 3)}
		}
		q.Enqueue(ctx, b, make([]qdisc.Code, len(b)))
		return q, ctx
	}
	for _, tc := range []struct {
		name string
		req  qdisc.DequeueReq
		want []skb.Handle
	}{
		{"max 1", qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, span(1, 1)},
		{"max 4", qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, span(1, 4)},
		{"max beyond qlen", qdisc.DequeueReq{Max: 64, Bytes: 1 << 40}, span(1, 6)},
		{"max 0 still gives one", qdisc.DequeueReq{Max: 0}, span(1, 1)},
		{"bytes 0 gives one", qdisc.DequeueReq{Max: 8, Bytes: 0}, span(1, 1)},
		{"bytes 2500 stop after 3", qdisc.DequeueReq{Max: 8, Bytes: 2500}, span(1, 3)},
		{"bytes 3000 stop after 3", qdisc.DequeueReq{Max: 8, Bytes: 3000}, span(1, 3)},
		{"same queue ends with the first of txq 1", qdisc.DequeueReq{Max: 8, Bytes: 1 << 40, SameQueue: true}, span(1, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, ctx := fill()
			got := handles(q.Dequeue(ctx, tc.req, nil))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("dequeued %v, want %v", got, tc.want)
			}
			if st := q.Stats(); st.Qlen != 6-len(got) || st.Backlog != int64(1000*(6-len(got))) {
				t.Errorf("stats after: %+v", st)
			}
		})
	}
}

func TestPeekAndReset(t *testing.T) {
	q := newQ(t, "limit", "4")
	ctx := qdisctest.NewCtx(1)
	if _, ok := q.Peek(ctx); ok {
		t.Fatal("peek on an empty queue said there was a packet")
	}
	offer(q, ctx, 6, 6) // 1 and 2 head-dropped
	q.Reset(ctx)
	for _, h := range span(3, 6) {
		if ctx.Dropped[h] != skb.DropNotSpecified {
			t.Errorf("packet %d: reason %q after reset, want NOT_SPECIFIED", h, ctx.Dropped[h])
		}
	}
	if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 || st.Drops != 2 {
		t.Errorf("after reset: %+v, want empty with the 2 head drops", st)
	}
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 8}, nil); len(out) != 0 {
		t.Errorf("dequeue after reset returned %d packets", len(out))
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		txqlen int
		limit  int
		errHas string // "" means no error
	}{
		{nil, 1000, 1000, ""},
		{nil, 0, 0, ""}, // tx_queue_len 0 is limit 0, as __fifo_init keeps it
		{[]string{"limit", "100"}, 1000, 100, ""},
		{[]string{"limit", "100p"}, 1000, 0, `unknown unit "p"`}, // tc has no packet suffix
		{[]string{"limit", "0x40"}, 1000, 64, ""},
		{[]string{"limit", "5", "limit", "7"}, 1000, 7, ""},
		{[]string{"limit"}, 1000, 0, `option "limit" needs a value`},
		{[]string{"limit", "many"}, 1000, 0, `illegal "limit": "many" is not a size`},
		{[]string{"limit", "-1"}, 1000, 0, "negative"},
		{[]string{"limit", "4294967296"}, 1000, 0, "out of range"},
		{[]string{"ecn"}, 1000, 0, `unknown option "ecn"`},
	} {
		t.Run(name(tc.args), func(t *testing.T) {
			s := setup
			s.TxQueueLen = tc.txqlen
			q := New()
			info, err := q.Init(qdisctest.NewCtx(1), s, tc.args)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.HasPrefix(err.Error(), "headdrop: ") {
					t.Fatalf("error %v, want one starting headdrop: and containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Flags != 0 || info.Limit != tc.limit || info.DropReasons != nil {
				t.Errorf("info %+v, want limit %d and no flags", info, tc.limit)
			}
			if d, want := q.Dump(), "limit "+strconv.Itoa(tc.limit)+"p"; d != want {
				t.Errorf("dump %q, want %q", d, want)
			}
		})
	}
}

func TestKindAndHelp(t *testing.T) {
	q := New().(interface {
		Kind() string
		Help() string
	})
	if q.Kind() != "headdrop" || q.Help() == "" {
		t.Errorf("kind %q help %q", q.Kind(), q.Help())
	}
}

// TestConformance runs the suite every qdisc must pass, at the brief's
// limit and at a small one where nearly every enqueue head-drops.
func TestConformance(t *testing.T) {
	for _, o := range []qdisctest.Options{
		{Args: []string{"limit", "50"}, Limit: 50},
		{Args: []string{"limit", "3"}, Limit: 3, Seed: 7},
		{Limit: 1000}, // default: tx_queue_len
	} {
		t.Run(name(o.Args), func(t *testing.T) {
			for _, r := range qdisctest.Run(New, o) {
				t.Errorf("%s: %v", r.Check, r.Err)
			}
		})
	}
}
