package hhf

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/khash"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newHHF(t testing.TB, args string) (*HHF, *qdisctest.Ctx) {
	t.Helper()
	q := &HHF{}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Second
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: qdisctest.DefaultSetup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// pkt is a 1000-byte packet of UDP flow port.
func pkt(h skb.Handle, port uint16) skb.Packet {
	return skb.Packet{Handle: h, Len: 1000, GSOSegs: 1,
		Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010001, SrcPort: port, DstPort: 5001, Proto: 17}}
}

func enqueue(q *HHF, ctx qdisc.Ctx, p skb.Packet) qdisc.Code {
	rc := make([]qdisc.Code, 1)
	q.Enqueue(ctx, []skb.Packet{p}, rc)
	return rc[0]
}

func xstat(q *HHF, k string) int64 { return qdisctest.XStatOf(q.Stats().XStats, k) }

// hhf_init's defaults (limit 1000, the device's psched_mtu as quantum,
// 40 ms, 128 KB, 1 s, weight 2, hh_limit 2048) and tc's words, printed
// as hhf_print_opt does: the timeouts in jiffies (usecs_to_jiffies
// rounds up), a quantum of at least 256; tc's messages and the
// kernel's refusals.
func TestOptions(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"", "limit 1000p quantum 1514b hh_limit 2048 reset_timeout 40ms admit_bytes 128Kb evict_timeout 1s non_hh_weight 2 "},
		{"limit 500 quantum 3000 hh_limit 10 reset_timeout 20ms admit_bytes 65536 evict_timeout 500ms non_hh_weight 4",
			"limit 500p quantum 3000b hh_limit 10 reset_timeout 20ms admit_bytes 64Kb evict_timeout 500ms non_hh_weight 4 "},
		{"quantum 100 reset_timeout 1500us limit 0", "limit 1000p quantum 256b hh_limit 2048 reset_timeout 2ms admit_bytes 128Kb evict_timeout 1s non_hh_weight 2 "},
	} {
		q, _ := newHHF(t, tt.args)
		if got := q.Dump(); got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.want)
		}
	}
	for _, tt := range []struct {
		args, want string
		class      error
	}{
		{"foo 1", `What is "foo"?`, qdisc.ErrParse},
		{"limit x", `Illegal "limit"`, qdisc.ErrParse},
		{"reset_timeout soon", `Illegal "reset_timeout"`, qdisc.ErrParse},
		{"admit_bytes 64k", `Illegal "admit_bytes"`, qdisc.ErrParse},
		{"help", "Usage: ... hhf [ limit PACKETS ]", qdisc.ErrParse},
		{"hh_limit 2049", "Error: integer out of range (hh_limit 2049 is above 2048).", qdisc.ErrKernel},
		{"non_hh_weight 2000000", "RTNETLINK answers: Invalid argument (quantum 1514 x non_hh_weight 2000000 is 3028000000", qdisc.ErrKernel},
	} {
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), &HHF{}, qdisctest.Options{Args: strings.Fields(tt.args), Setup: qdisctest.DefaultSetup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q: %v, want %q (%v)", tt.args, err, tt.want, tt.class)
		}
	}
}

// A flow whose bytes in one reset_timeout pass admit_bytes in all four
// counters becomes a heavy hitter (tot_hh, cur_hh) at that packet, and
// its later packets go to the heavy hitters' bucket; small flows stay
// out; with hh_limit reached another heavy flow is counted in
// hh_overlimit and stays with the rest.
func TestHeavyHitter(t *testing.T) {
	q, ctx := newHHF(t, "admit_bytes 50000 hh_limit 1 limit 10000")
	var h skb.Handle
	var firstHH skb.Handle
	for i := range 100 {
		for _, port := range []uint16{1, 100 + uint16(i%8)} { // the heavy flow, and 8 light ones
			h++
			p := pkt(h, port)
			before := q.buckets[bucketHH].q.Len()
			enqueue(q, ctx, p)
			if q.buckets[bucketHH].q.Len() > before && firstHH == 0 {
				firstHH = h
			}
		}
	}
	// 51 packets of 1000 bytes pass 50000: the heavy flow's 51st, handle 101
	if firstHH != 101 || xstat(q, "tot_hh") != 1 || xstat(q, "cur_hh") != 1 || q.buckets[bucketHH].q.Len() != 50 {
		t.Errorf("first heavy packet %d, tot_hh %d cur_hh %d, %d packets in the heavy bucket; want 101, 1, 1, 50",
			firstHH, xstat(q, "tot_hh"), xstat(q, "cur_hh"), q.buckets[bucketHH].q.Len())
	}
	for range 60 { // a second heavy flow: no room in the table
		h++
		enqueue(q, ctx, pkt(h, 2))
	}
	if xstat(q, "hh_overlimit") != 10 || xstat(q, "tot_hh") != 1 {
		t.Errorf("hh_overlimit %d, tot_hh %d: want the second flow's last 10 packets refused a place", xstat(q, "hh_overlimit"), xstat(q, "tot_hh"))
	}
}

// filterPos is hhf_classify's four counter positions for p's hash.
func filterPos(q *HHF, p skb.Packet) [arraysCnt]uint32 {
	h := khash.HashPerturb(&p, q.perturbation)
	var pos [arraysCnt]uint32
	x := uint32(0)
	for i := range arraysCnt - 1 {
		pos[i] = h & bitMask
		x ^= pos[i]
		h >>= bitMaskLen
	}
	pos[arraysCnt-1] = x ^ h
	return pos
}

// Conservative update (optimization O2): a flow's counters rise to the
// smallest of them plus its packet, no further, so a small flow that
// shares one counter with a big one leaves it as it was and gets the
// small sum in the others.
func TestConservativeUpdate(t *testing.T) {
	q, ctx := newHHF(t, "")
	big := pkt(1, 1)
	pb := filterPos(q, big)
	var small skb.Packet
	for port := uint16(2); ; port++ { // a flow sharing the big one's first counter only
		small = pkt(2, port)
		ps := filterPos(q, small)
		if ps[0] == pb[0] && ps[1] != pb[1] && ps[2] != pb[2] && ps[3] != pb[3] {
			break
		}
	}
	big.Len, small.Len = 1000, 300
	enqueue(q, ctx, big)
	enqueue(q, ctx, small)
	ps := filterPos(q, small)
	got := [arraysCnt]uint32{}
	for i := range got {
		got[i] = q.arrays[i][ps[i]]
	}
	if got != [arraysCnt]uint32{1000, 300, 300, 300} {
		t.Errorf("the small flow's counters %v, want [1000 300 300 300]", got)
	}
}

// A burst of the rest arriving while the heavy hitters are served joins
// new_buckets and goes out next, whatever the heavy hitters' deficit
// (fq_codel's new flows).
func TestNewBucketFirst(t *testing.T) {
	q, ctx := newHHF(t, "admit_bytes 500 quantum 20000")
	for i := range 10 {
		enqueue(q, ctx, pkt(skb.Handle(i+1), 1)) // heavy from its first packet
	}
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil)
	if len(out) != 1 || out[0].Handle != 1 || q.buckets[bucketHH].deficit != 19000 {
		t.Fatalf("dequeued %v, heavy deficit %d", out, q.buckets[bucketHH].deficit)
	}
	light := pkt(11, 2)
	light.Len = 100 // under admit_bytes
	enqueue(q, ctx, light)
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil); len(out) != 1 || out[0].Handle != 11 {
		t.Errorf("after a light arrival: %v, want it first", out)
	}
}

// While both buckets hold packets, the WDRR gives the rest
// non_hh_weight quanta for each of the heavy hitters'.
func TestWeights(t *testing.T) {
	for _, w := range []int{1, 2, 4} {
		q, ctx := newHHF(t, "admit_bytes 5000 non_hh_weight "+strconv.Itoa(w))
		h := skb.Handle(0)
		for range 305 { // heavy from its 6th packet
			h++
			enqueue(q, ctx, pkt(h, 1))
		}
		for f := range 150 { // 2 KB flows: never heavy
			for range 2 {
				h++
				enqueue(q, ctx, pkt(h, uint16(100+f)))
			}
		}
		if q.buckets[bucketHH].q.Len() != 300 {
			t.Fatalf("weight %d: %d heavy packets queued", w, q.buckets[bucketHH].q.Len())
		}
		var heavy, rest int
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 300, Bytes: 1 << 30}, nil) {
			if p.Keys.SrcPort == 1 && p.Handle > 5 {
				heavy++
			} else {
				rest++
			}
		}
		if ratio := float64(rest) / float64(heavy); ratio < float64(w)*0.9 || ratio > float64(w)*1.1 {
			t.Errorf("weight %d: %d packets of the rest for %d of the heavy hitters", w, rest, heavy)
		}
	}
}

// The filter's counters start again every reset_timeout, so a flow
// under admit_bytes a period never becomes a heavy hitter; a heavy
// hitter idle for evict_timeout is one no more (its entry, the chain's
// last, is kept), and when it is heavy again that entry is reused:
// tot_hh counts twice, cur_hh stays 1.
func TestResetAndEviction(t *testing.T) {
	q, ctx := newHHF(t, "admit_bytes 20000 reset_timeout 10ms evict_timeout 100ms limit 10000")
	var h skb.Handle
	send := func(n int) {
		for range n {
			h++
			enqueue(q, ctx, pkt(h, 1))
		}
		q.Dequeue(ctx, qdisc.DequeueReq{Max: 1000, Bytes: 1 << 40}, nil)
	}
	for range 10 { // 15 KB every 11 ms
		send(15)
		ctx.T += 11 * sim.Millisecond
	}
	if xstat(q, "tot_hh") != 0 {
		t.Fatalf("tot_hh %d: counters not reset every reset_timeout", xstat(q, "tot_hh"))
	}
	send(25)
	if xstat(q, "tot_hh") != 1 || xstat(q, "cur_hh") != 1 {
		t.Fatalf("tot_hh %d cur_hh %d after 25 KB", xstat(q, "tot_hh"), xstat(q, "cur_hh"))
	}
	ctx.T += 200 * sim.Millisecond
	h++
	enqueue(q, ctx, pkt(h, 1))
	if q.buckets[bucketNonHH].q.Len() != 1 {
		t.Errorf("after evict_timeout the flow's packet went to the heavy hitters")
	}
	send(30)
	if xstat(q, "tot_hh") != 2 || xstat(q, "cur_hh") != 1 {
		t.Errorf("heavy again: tot_hh %d cur_hh %d, want 2 and 1 (the expired entry reused)", xstat(q, "tot_hh"), xstat(q, "cur_hh"))
	}
}

// Over the limit the heavy hitters' head goes first: an arrival of the
// rest gets NET_XMIT_SUCCESS, one of the heavy hitters NET_XMIT_CN; with
// no heavy hitter queued the rest's head goes (drop_overlimit,
// QDISC_DROP).
func TestOverlimitDropsHeavyFirst(t *testing.T) {
	q, ctx := newHHF(t, "admit_bytes 3000 limit 10")
	var h skb.Handle
	for range 10 {
		h++
		enqueue(q, ctx, pkt(h, 1)) // heavy from its 4th packet
	}
	h++
	if rc := enqueue(q, ctx, pkt(h, 2)); rc != qdisc.XmitSuccess || ctx.Dropped[4] != skb.DropQdiscDrop {
		t.Errorf("a light arrival over the limit: %v, dropped %v; want the heavy hitters' head (4) dropped", rc, ctx.Dropped)
	}
	h++
	if rc := enqueue(q, ctx, pkt(h, 1)); rc != qdisc.XmitCN || ctx.Dropped[5] != skb.DropQdiscDrop {
		t.Errorf("a heavy arrival over the limit: %v, dropped %v", rc, ctx.Dropped)
	}
	if xstat(q, "drop_overlimit") != 2 || q.Stats().Drops != 2 || q.Stats().Qlen != 10 {
		t.Errorf("drop_overlimit %d drops %d qlen %d", xstat(q, "drop_overlimit"), q.Stats().Drops, q.Stats().Qlen)
	}
}

// flowDelays runs one unresponsive flow at twice the link's rate
// against 8 light flows at 5% each (4 Mbit/s of an 80 Mbit/s link: one
// 1000-byte packet served every 100 us) and returns each kind's share
// of packets dropped and mean sojourn after a warmup.
func flowDelays(t *testing.T, args string) (heavyLoss, lightLoss float64, heavyDelay, lightDelay sim.Time) {
	q, ctx := newHHF(t, args)
	rng := rand.New(rand.NewPCG(3, 3))
	var h skb.Handle
	at := map[skb.Handle]sim.Time{}
	kind := map[skb.Handle]int{}
	var sent, served [2]float64
	var delay [2]sim.Time
	for tick := range 20000 {
		ctx.T += 100 * sim.Microsecond
		var arr []skb.Packet
		for range 2 {
			h++
			arr = append(arr, pkt(h, 1))
		}
		for f := range 8 {
			if rng.IntN(20) == 0 {
				h++
				arr = append(arr, pkt(h, uint16(100+f)))
			}
		}
		rng.Shuffle(len(arr), func(i, j int) { arr[i], arr[j] = arr[j], arr[i] })
		for _, p := range arr {
			k := 0
			if p.Keys.SrcPort != 1 {
				k = 1
			}
			if tick >= 5000 {
				kind[p.Handle], at[p.Handle] = k, ctx.T
				sent[k]++
			}
			enqueue(q, ctx, p)
		}
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil) {
			if k, ok := kind[p.Handle]; ok {
				served[k]++
				delay[k] += ctx.T - at[p.Handle]
			}
		}
	}
	var lost [2]float64
	for d := range ctx.Dropped {
		if k, ok := kind[d]; ok {
			lost[k]++
		}
	}
	return lost[0] / sent[0], lost[1] / sent[1], delay[0] / sim.Time(served[0]), delay[1] / sim.Time(served[1])
}

// The point of hhf: the heavy flow is caught (one heavy hitter) and
// served after the rest, which see almost no queue and no loss, while
// it takes the drops. Without heavy hitters (admit_bytes beyond any
// flow's reach) hhf is one FIFO and every flow waits and loses alike.
func TestLightFlowsFirst(t *testing.T) {
	hl, ll, hd, ld := flowDelays(t, "")
	t.Logf("hhf: heavy lost %.3f, waited %v; light lost %.3f, waited %v", hl, hd, ll, ld)
	fl, fll, fd, fld := flowDelays(t, "admit_bytes 4294967295")
	t.Logf("no heavy hitters: heavy lost %.3f, waited %v; light lost %.3f, waited %v", fl, fd, fll, fld)
	if ll != 0 || hl < 0.4 || ld*20 > hd {
		t.Errorf("hhf: light flows lost %.3f and waited %v, the heavy one %.3f and %v: want no loss and a twentieth of the wait", ll, ld, hl, hd)
	}
	if fll < fl/2 || fld*2 < fd {
		t.Errorf("one FIFO: light flows lost %.3f and waited %v, the heavy one %.3f and %v: want alike", fll, fld, fl, fd)
	}
}

// A lower limit dequeues from the head (the WDRR's order) and frees
// NOT_SPECIFIED, not counted as drops.
func TestChangeTrims(t *testing.T) {
	q, ctx := newHHF(t, "limit 100")
	for i := range 50 {
		enqueue(q, ctx, pkt(skb.Handle(i+1), uint16(i%3)))
	}
	if _, err := q.Change(ctx, strings.Fields("limit 20")); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	if st.Qlen != 20 || st.Drops != 0 || len(ctx.Dropped) != 30 || ctx.Dropped[1] != skb.DropNotSpecified || ctx.Dropped[31] != "" {
		t.Errorf("qlen %d drops %d dropped %v", st.Qlen, st.Drops, ctx.Dropped)
	}
}

// hhf conforms, in process behind the plugin boundary's wrapper (its
// peek is qdisc_peek_dequeued).
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		limit int
	}{
		{nil, 1000},
		{strings.Fields("limit 50 admit_bytes 5000 quantum 300 non_hh_weight 3 hh_limit 3"), 50},
	} {
		f := func() qdisc.Qdisc { return wire.WrapQdisc(&HHF{}) }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: tt.args, Limit: tt.limit, Seed: 4, Pkts: 3000}) {
			t.Errorf("%v: %s: %v", tt.args, r.Check, r.Err)
		}
	}
}

func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"hhf"}, "limit 1 quantum 1 hh_limit 1 admit_bytes 1", "reset_timeout 1us evict_timeout 1us non_hh_weight 1",
		"quantum 2147483647 non_hh_weight 1", "hh_limit 2048 admit_bytes 4294967295")
}
