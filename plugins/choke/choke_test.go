package choke

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newChoke(t testing.TB, args string) (*Choke, *qdisctest.Ctx) {
	t.Helper()
	q := &Choke{}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Second
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// pkt is a packet of UDP flow port (ECN field ecn).
func pkt(h skb.Handle, port uint16, ecn uint8) skb.Packet {
	return skb.Packet{Handle: h, Len: 1000, ECN: ecn, GSOSegs: 1,
		Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: port, DstPort: 5001, Proto: 17}}
}

func enqueue(q *Choke, ctx qdisc.Ctx, p skb.Packet) qdisc.Code {
	rc := make([]qdisc.Code, 1)
	q.Enqueue(ctx, []skb.Packet{p}, rc)
	return rc[0]
}

// tc's words and defaults, printed as choke_print_opt does under -d
// (max limit/4, min max/3, burst (2 min + max)/3, avpkt 1000,
// probability 0.02); its messages, and the kernel's refusals.
func TestOptions(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"limit 1000 bandwidth 10mbit", "limit 1000p min 83p max 250p ewma 6 probability 0.02 Scell_log 16"},
		{"limit 100 bandwidth 100mbit ecn min 5 max 50 burst 20 avpkt 1500 probability 0.1", "limit 100p min 5p max 50p ecn ewma 6 probability 0.1 Scell_log 13"},
		{"limit 64 bandwidth 1% probability 0.5", "limit 64p min 5p max 16p ewma 3 probability 0.5 Scell_log 10"},
	} {
		q, _ := newChoke(t, tt.args)
		if got := q.Dump(); got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.want)
		}
	}
	for _, tt := range []struct {
		args, want string
		class      error
	}{
		{"limit 100", "Required parameter (bandwidth, limit) is missing", qdisc.ErrParse},
		{"bandwidth 10mbit", "Required parameter (bandwidth, limit) is missing", qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit max 200", `"max" is larger than "limit"`, qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit min 30 max 30", `"min" is not smaller than "max"`, qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit harddrop", `What is "harddrop"?`, qdisc.ErrParse},
		{"limit x bandwidth 10mbit", `Illegal "limit"`, qdisc.ErrParse},
		{"limit 100 bandwidth fast", `Illegal "bandwidth"`, qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit probability p", `Illegal "probability"`, qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit avpkt 1q", `Illegal "avpkt"`, qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit burst 1", "CHOKE: failed to calculate EWMA constant. (tc_red_eval_ewma() burst 1 is too small ? Try burst 9)", qdisc.ErrParse},
		{"limit 100 bandwidth 10mbit probability 0", "CHOKE: failed to calculate probability.", qdisc.ErrParse},
		{"help", "Usage: ... choke limit PACKETS bandwidth KBPS [ecn]", qdisc.ErrParse},
		{"limit 200000 bandwidth 10mbit", "limit 200000 is above CHOKE_MAX_QUEUE 131071 (EINVAL)", qdisc.ErrKernel},
		{"limit 80000000 bandwidth 10mbit min 70000000 max 80000000 avpkt 1", "min 70000000, max 80000000 with ewma 22 or Scell_log 22 do not fit the fixed point (EINVAL)", qdisc.ErrKernel},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &Choke{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q: %v, want %q (%v)", tt.args, err, tt.want, tt.class)
		}
	}
}

// Above min, the arrival is compared with a random queued packet: of
// the same flow, both go (matched, QDISC_DROP, NET_XMIT_CN); of another
// flow, RED alone decides (between min and max its first count admits).
// min 2 with ewma 1 (burst 2) puts the average above min at the fourth
// arrival.
func TestMatchDropsBoth(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ports   []uint16
		codes   []qdisc.Code
		qlen    int
		matched int64
	}{
		{"same flow", []uint16{1, 1, 1, 1}, []qdisc.Code{0, 0, 0, qdisc.XmitCN}, 2, 1},
		{"another flow", []uint16{1, 1, 1, 2}, []qdisc.Code{0, 0, 0, 0}, 4, 0},
		{"below min", []uint16{1, 1, 1}, []qdisc.Code{0, 0, 0}, 3, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, ctx := newChoke(t, "limit 100 bandwidth 10mbit min 2 max 90 burst 2")
			if q.parms.Wlog != 1 {
				t.Fatalf("ewma %d, want 1", q.parms.Wlog)
			}
			for i, port := range tt.ports {
				if rc := enqueue(q, ctx, pkt(skb.Handle(i+1), port, 0)); rc != tt.codes[i] {
					t.Errorf("packet %d: %v, want %v", i+1, rc, tt.codes[i])
				}
			}
			st := q.Stats()
			if st.Qlen != tt.qlen || qdisctest.XStatOf(st.XStats, "matched") != tt.matched || st.Drops != uint64(2*tt.matched) {
				t.Errorf("qlen %d matched %d drops %d; want %d, %d, %d", st.Qlen, qdisctest.XStatOf(st.XStats, "matched"), st.Drops,
					tt.qlen, tt.matched, 2*tt.matched)
			}
			if tt.matched == 1 {
				last := skb.Handle(len(tt.ports))
				if ctx.Dropped[last] != skb.DropQdiscDrop || len(ctx.Dropped) != 2 {
					t.Errorf("dropped %v: want the arrival %d and one queued packet, QDISC_DROP", ctx.Dropped, last)
				}
			}
			// what stays comes out in order, the hole skipped
			var prev skb.Handle
			for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 30}, nil) {
				if p.Handle <= prev || ctx.Dropped[p.Handle] != "" {
					t.Errorf("dequeued %d after %d", p.Handle, prev)
				}
				prev = p.Handle
			}
		})
	}
}

// flowShares runs one unresponsive flow at twice the link's rate
// against 8 light flows at a tenth of it each, one packet served a
// tick, and returns the share of each kind's packets dropped (arrivals
// and queued victims) after a warmup. noMatch gives every packet flow
// keys of its own: RED alone, as choke without the match.
func flowShares(t *testing.T, args string, noMatch bool) (heavy, light float64) {
	q, ctx := newChoke(t, args)
	rng := rand.New(rand.NewPCG(7, 7))
	var h skb.Handle
	kind := map[skb.Handle]int{} // 0 heavy, 1 light, in the window
	var sent [2]float64
	for tick := range 40000 {
		ctx.T += 10 * sim.Microsecond
		var arr []skb.Packet
		for range 2 {
			h++
			arr = append(arr, pkt(h, 1, 0))
		}
		for f := range 8 { // each light flow sends a tenth of the ticks
			if rng.IntN(10) == 0 {
				h++
				arr = append(arr, pkt(h, uint16(100+f), 0))
			}
		}
		rng.Shuffle(len(arr), func(i, j int) { arr[i], arr[j] = arr[j], arr[i] })
		for _, p := range arr {
			k := 0
			if p.Keys.SrcPort != 1 {
				k = 1
			}
			if noMatch {
				p.Keys.Src = uint32(p.Handle)
			}
			if tick >= 5000 {
				kind[p.Handle] = k
				sent[k]++
			}
			enqueue(q, ctx, p)
		}
		q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil)
	}
	var lost [2]float64
	for d := range ctx.Dropped {
		if k, ok := kind[d]; ok {
			lost[k]++
		}
	}
	return lost[0] / sent[0], lost[1] / sent[1]
}

// The point of CHOKe: the unresponsive flow holds most of the queue, so
// its arrivals are matched and it loses most of what it sends, while
// the light flows lose a small share. The same RED without the match
// drops the light flows' packets as much as the heavy one's.
func TestHeavyFlowLosesMore(t *testing.T) {
	args := "limit 1000 bandwidth 10mbit"
	heavy, light := flowShares(t, args, false)
	rh, rl := flowShares(t, args, true)
	t.Logf("choke: heavy %.3f light %.3f lost; without the match: heavy %.3f light %.3f", heavy, light, rh, rl)
	if heavy < 0.75 || light > heavy/4 {
		t.Errorf("choke: the heavy flow lost %.3f, the light ones %.3f: want the heavy one to lose over 4x more", heavy, light)
	}
	if rl < rh/2 {
		t.Errorf("without the match: the heavy flow lost %.3f, the light ones %.3f: want alike", rh, rl)
	}
}

// With ecn, RED's marks are CE marks (marked) on ECT packets, and
// not-ECT ones are dropped (early); above max, harddrop (the kernel's
// flag, which tc's choke cannot set) drops ECT packets too.
func TestECN(t *testing.T) {
	for _, tt := range []struct {
		name         string
		ecn, flags   uint8
		marked, drop bool
	}{
		{"ect marked", 2, flagECN, true, false},
		{"not-ect dropped", 0, flagECN, false, true},
		{"no ecn", 2, 0, false, true},
		{"harddrop", 2, flagECN | flagHarddrop, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, ctx := newChoke(t, "limit 100 bandwidth 10mbit min 2 max 4 burst 2")
			q.flags = tt.flags
			// distinct flows: no match; the average passes max (8 scaled) at once
			for i := range 12 {
				enqueue(q, ctx, pkt(skb.Handle(i+1), uint16(i+1), tt.ecn))
			}
			st := q.Stats()
			marked, early := qdisctest.XStatOf(st.XStats, "marked"), qdisctest.XStatOf(st.XStats, "early")
			if (marked > 0) != tt.marked || (early > 0) != tt.drop || st.Overlimits == 0 {
				t.Errorf("marked %d early %d overlimits %d", marked, early, st.Overlimits)
			}
			if tt.marked {
				for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 20, Bytes: 1 << 30}, nil) {
					if p.Handle > 6 && p.ECN != 3 {
						t.Errorf("packet %d queued above max without CE", p.Handle)
					}
				}
			}
		})
	}
}

// A change to another table size keeps the packets in order without
// the holes and drops those past the new table (rtnl_qdisc_drop:
// counted, NOT_SPECIFIED); packets above the new limit but inside the
// table stay.
func TestChangeShrinks(t *testing.T) {
	q, ctx := newChoke(t, "limit 100 bandwidth 10mbit min 2 max 90 burst 2")
	for i := range 40 {
		enqueue(q, ctx, pkt(skb.Handle(i+1), uint16(1+i%8), 0))
	}
	held, matched, early := q.Stats().Qlen, qdisctest.XStatOf(q.Stats().XStats, "matched"), qdisctest.XStatOf(q.Stats().XStats, "early")
	if matched == 0 || q.chokeLen() == uint32(held) {
		t.Fatalf("matched %d, span %d for %d packets: want holes", matched, q.chokeLen(), held)
	}
	if _, err := q.Change(ctx, strings.Fields("limit 10 bandwidth 10mbit min 2 max 9 burst 2")); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	if st.Qlen != 15 || q.chokeLen() != 15 || st.Drops != uint64(2*matched+early)+uint64(held-15) {
		t.Errorf("after the change: qlen %d span %d drops %d (held %d, matched %d, early %d)", st.Qlen, q.chokeLen(), st.Drops, held, matched, early)
	}
	if rc := enqueue(q, ctx, pkt(100, 7, 0)); rc != qdisc.XmitDrop || qdisctest.XStatOf(q.Stats().XStats, "pdrop") != 1 {
		t.Errorf("an arrival above the limit: %v", rc)
	}
}

// The kernel admits by qlen alone, so holes in the middle of the
// table can bring tail round to head, where the queue would look empty
// with packets in it; the model drops that arrival as over the limit
// (pdrop) and the queue keeps going.
func TestTableWrap(t *testing.T) {
	q, ctx := newChoke(t, "limit 3 bandwidth 10mbit min 2 max 3 burst 2")
	for i := range 3 {
		if rc := enqueue(q, ctx, pkt(skb.Handle(i+1), uint16(i+1), 0)); rc != qdisc.XmitSuccess {
			t.Fatalf("packet %d: %v", i+1, rc)
		}
	}
	q.chokeDropByIdx(ctx, 1) // a match's victim in the middle: 4 slots, 2 packets and a hole
	if rc := enqueue(q, ctx, pkt(4, 4, 0)); rc != qdisc.XmitDrop || qdisctest.XStatOf(q.Stats().XStats, "pdrop") != 1 {
		t.Errorf("an arrival that would fill the table: %v, pdrop %d", rc, qdisctest.XStatOf(q.Stats().XStats, "pdrop"))
	}
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 10, Bytes: 1 << 30}, nil)
	if len(out) != 2 || out[0].Handle != 1 || out[1].Handle != 3 || q.Stats().Qlen != 0 {
		t.Errorf("dequeued %v, qlen %d: want 1 and 3", out, q.Stats().Qlen)
	}
	if rc := enqueue(q, ctx, pkt(5, 5, 0)); rc != qdisc.XmitSuccess {
		t.Errorf("after the drain: %v", rc)
	}
}

// choke conforms, in process behind the plugin boundary's wrapper.
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		limit int
	}{
		{strings.Fields("limit 1000 bandwidth 10mbit"), 1000},
		{strings.Fields("limit 50 bandwidth 1gbit min 2 max 40 burst 2 ecn"), 50},
	} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&Choke{}) }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: tt.args, Limit: tt.limit, Seed: 4, Pkts: 3000}) {
			t.Errorf("%v: %s: %v", tt.args, r.Check, r.Err)
		}
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"choke"}, "limit 8 bandwidth 1bit min 1 max 2 burst 1 ecn", "limit 131071 bandwidth 100gbit avpkt 4294967295",
		"limit 16 bandwidth 10mbit probability 1e-9", "limit 100 bandwidth 10mbit min 2 max 90 burst 2")
}
