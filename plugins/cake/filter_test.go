package cake

import (
	"testing"

	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// TestFilters: cake_classify with filters attached (cake 1:, diffserv3,
// triple-isolate). A result's minor overrides the flow (flow_hash =
// minor - 1) and its major the hosts, each when at most CAKE_QUEUES; a
// result out of range overrides nothing and no filter matching hashes
// as ever: only a drop action drops, counted as a qdisc drop. The tin
// comes after the filters, so a filter's skbedit priority picks it
// (cake_select_tin).
func TestFilters(t *testing.T) {
	mk := func(h skb.Handle, src uint32, port uint16) skb.Packet {
		return skb.Packet{Handle: h, Len: 1000, TrueSize: 2048, GSOSegs: 1, Hash: src*7919 + uint32(port)*31 + 1,
			Keys: skb.FlowKeys{Src: src, Dst: 0x0a010007, SrcPort: port, DstPort: 5001, Proto: 17}}
	}
	a, b := mk(1, 0x0a000001, 40000), mk(2, 0x0a000002, 40001)
	type where struct{ tin, queue int }
	plain := func(p skb.Packet) where { // where cake puts p without filters
		q := newCake1(t)
		tin, idx, _ := q.classify(qdisctest.NewCtx(1), &p)
		return where{tin, int(idx)}
	}
	be := plain(a).tin
	tests := []struct {
		name    string
		specs   []string
		pkts    []skb.Packet
		want    map[where]int // packets per tin and queue
		dropped int
	}{
		{"matchall 1:5: both flows in queue 4", []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:5"},
			[]skb.Packet{a, b}, map[where]int{{be, 4}: 2}, 0},
		{"flow map dst: one host, one queue", []string{"parent 1: protocol all pref 1 handle 0x1 flow map key dst and 0xff baseclass 2:1"},
			[]skb.Packet{a, b}, map[where]int{{be, 7}: 2}, 0},
		{"a minor past CAKE_QUEUES overrides no flow", []string{"parent 1: protocol all pref 1 handle 0x1 matchall classid 1:2000"},
			[]skb.Packet{a, b}, map[where]int{plain(a): 1, plain(b): 1}, 0},
		{"no filter matching: the hash", []string{"parent 1: protocol ip pref 1 u32 match ip dport 443 0xffff flowid 1:3"},
			[]skb.Packet{a, b}, map[where]int{plain(a): 1, plain(b): 1}, 0},
		{"a drop action", []string{"parent 1: protocol all pref 1 handle 0x1 matchall action drop"},
			[]skb.Packet{a, b}, nil, 2},
	}
	for _, tt := range tests {
		q := newCake1(t)
		ctx := qdisctest.NewCtx(1)
		s, err := cls.Load(tt.specs)
		if err != nil {
			t.Fatal(err)
		}
		s.SetSeed(ctx.Seed)
		ctx.Filters = s
		rc := make([]qdisc.Code, len(tt.pkts))
		q.Enqueue(ctx, tt.pkts, rc)
		for i, c := range rc {
			if want := qdisctest.BypassIfDropped(ctx, tt.pkts[i]); c != want {
				t.Errorf("%s: packet %d got %v, want %v", tt.name, i, c, want)
			}
		}
		got := map[where]int{}
		for ti, tin := range q.tins {
			for i := range tin.flows {
				if n := tin.flows[i].q.Len(); n > 0 {
					got[where{ti, i}] = n
				}
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: queues hold %v, want %v", tt.name, got, tt.want)
		}
		for w, n := range tt.want {
			if got[w] != n {
				t.Errorf("%s: queues hold %v, want %v", tt.name, got, tt.want)
			}
		}
		if q.Stats().Drops != uint64(tt.dropped) || len(ctx.Dropped) != tt.dropped {
			t.Errorf("%s: drops %d (%v), want %d", tt.name, q.Stats().Drops, ctx.Dropped, tt.dropped)
		}
		for h, r := range ctx.Dropped {
			if r != skb.DropQdiscDrop {
				t.Errorf("%s: packet %d dropped with %s, want QDISC_DROP", tt.name, h, r)
			}
		}
	}

	// An skbedit of skb->priority in the filter picks the tin, as
	// cake_select_tin reads it after tcf_classify; the result (classid
	// 0: no override) leaves the hash alone.
	q := newCake1(t)
	ctx := qdisctest.NewCtx(1)
	s, err := cls.Load([]string{"parent 1: protocol all pref 1 handle 0x1 matchall action skbedit priority 1:3"})
	if err != nil {
		t.Fatal(err)
	}
	ctx.Filters = s
	p := a
	tin, idx, ok := q.classify(ctx, &p)
	if want := int(q.tinOrder[2]); !ok || tin != want || int(idx) != plain(a).queue || p.Priority != 0x10003 {
		t.Errorf("skbedit priority 1:3: tin %d queue %d (ok %v), want tin %d queue %d", tin, idx, ok, want, plain(a).queue)
	}
	// skb->priority alone, without filters, picks it too.
	q = newCake1(t)
	if tin, _, _ := q.classify(qdisctest.NewCtx(1), &p); tin != int(q.tinOrder[2]) {
		t.Errorf("priority 1:3 without filters: tin %d", tin)
	}
}

func newCake1(t *testing.T) *Cake {
	t.Helper()
	q := &Cake{}
	if _, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{Handle: "1:", Parent: "root", MTU: 1514, TxQueueLen: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	return q
}
