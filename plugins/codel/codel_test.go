package codel

import (
	"math"
	"math/big"
	"testing"
	"unsafe"

	"github.com/txlab/txlab/framework/skb"
)

// bigRef is a second, independent transcription of the kernel's
// fixed-point arithmetic in arbitrary precision, with every C truncation
// (u16/u32/u64 stores, right shifts) written out as an explicit modulus or
// floor, so a slip in the Go integer code (a missing cast, a wrong shift)
// shows up as a mismatch.
type bigRef struct {
	count, rec *big.Int // rec: rec_inv_sqrt as a u16
}

var (
	two16 = new(big.Int).Lsh(big.NewInt(1), 16)
	two32 = new(big.Int).Lsh(big.NewInt(1), 32)
	two64 = new(big.Int).Lsh(big.NewInt(1), 64)
)

func floorDivPow2(x *big.Int, bits uint) *big.Int { return new(big.Int).Rsh(x, bits) } // x >= 0

func mod(x, m *big.Int) *big.Int { return new(big.Int).Mod(x, m) } // Euclidean: C unsigned wrap

// newton: invsqrt = rec*2^16 (fits u32); invsqrt2 = floor(invsqrt^2 / 2^32);
// val = (3*2^32 - count*invsqrt2) mod 2^64; val = floor(val/4);
// val = floor(((val*invsqrt) mod 2^64) / 2^31); rec = floor(val/2^16) mod 2^16.
func (r *bigRef) newton() {
	invsqrt := new(big.Int).Mul(r.rec, two16)
	invsqrt2 := floorDivPow2(new(big.Int).Mul(invsqrt, invsqrt), 32)
	val := new(big.Int).Mul(big.NewInt(3), two32)
	val.Sub(val, new(big.Int).Mul(r.count, invsqrt2))
	val = mod(val, two64)
	val = floorDivPow2(val, 2)
	val = floorDivPow2(mod(new(big.Int).Mul(val, invsqrt), two64), 31)
	r.rec = mod(floorDivPow2(val, 16), two16)
}

// law: t + max(1, floor(interval * rec*2^16 / 2^32)), mod 2^32.
func (r *bigRef) law(t, interval *big.Int) *big.Int {
	inc := floorDivPow2(new(big.Int).Mul(interval, new(big.Int).Mul(r.rec, two16)), 32)
	if inc.Sign() == 0 {
		inc.SetInt64(1)
	}
	return mod(new(big.Int).Add(t, inc), two32)
}

// TestControlLawSequence follows drop_next through a dropping episode
// (count 1 on entry, then count++ and a Newton step per drop) and checks
// it against the big-number transcription and against interval/sqrt(count).
func TestControlLawSequence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval Time
		start    Time
	}{
		{"100ms", MS2Time(100), 1000},
		{"10ms", MS2Time(10), 5},
		{"1s near wrap", MS2Time(1000), math.MaxUint32 - 100000},
		{"300us", US2Time(300), 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Vars{Count: 1, RecInvSqrt: ^uint16(0)}
			ref := bigRef{count: big.NewInt(1), rec: big.NewInt(0xffff)}
			iv := big.NewInt(int64(tc.interval))
			prev := tc.start
			next := ControlLaw(prev, tc.interval, v.RecInvSqrt)
			refNext := ref.law(big.NewInt(int64(prev)), iv)
			for count := uint32(1); count <= 20; count++ {
				if count > 1 {
					prev = next
					v.Count++
					NewtonStep(&v)
					ref.count.SetUint64(uint64(count))
					ref.newton()
					next = ControlLaw(prev, tc.interval, v.RecInvSqrt)
					refNext = ref.law(big.NewInt(int64(prev)), iv)
				}
				if uint64(v.RecInvSqrt) != ref.rec.Uint64() || uint64(next) != refNext.Uint64() {
					t.Fatalf("count %d: rec_inv_sqrt %#x drop_next %d, reference %#x %d",
						count, v.RecInvSqrt, next, ref.rec.Uint64(), refNext.Uint64())
				}
				// The step (drop_next minus the previous one, mod 2^32)
				// approximates interval/sqrt(count). One Newton step per
				// count lags the true value while count is small (count 2
				// is 29% short: the kernel's known behaviour, the estimate
				// "corrects quadratically"), so the 1% bound starts at 7;
				// the step is also truncated to whole ticks, worth one tick.
				step := uint32(next - prev)
				want := float64(tc.interval) / math.Sqrt(float64(count))
				tol := 0.01
				if count < 7 {
					tol = 0.30
				}
				if rel := (math.Abs(float64(step)-want) - 1) / want; rel > tol {
					t.Errorf("count %d: step %d, interval/sqrt(count) %.1f (off %.2f%%, allowed %.0f%%)",
						count, step, want, 100*rel, 100*tol)
				}
			}
		})
	}
}

// Known values, worked by hand from the C for interval = MS2TIME(100) =
// 97656 ticks: count 1 uses rec_inv_sqrt 0xffff, so the step is
// 97656*0xffff0000 >> 32 = 97654.
func TestControlLawFirstStep(t *testing.T) {
	if got := ControlLaw(0, MS2Time(100), 0xffff); got != 97654 {
		t.Fatalf("first step %d, want 97654", got)
	}
	if MS2Time(100) != 97656 || MS2Time(5) != 4882 || ToUs(MS2Time(5)) != 4999 {
		t.Fatalf("unit conversions: %d %d %d", MS2Time(100), MS2Time(5), ToUs(MS2Time(5)))
	}
}

func TestControlLawClampsToOneTick(t *testing.T) {
	if got := ControlLaw(10, 1, 1); got != 11 {
		t.Fatalf("tiny increment not clamped: %d", got)
	}
}

func TestTimeCompareWraps(t *testing.T) {
	cases := []struct {
		a, b       Time
		after, aeq bool
	}{
		{5, 3, true, true},
		{3, 5, false, false},
		{4, 4, false, true},
		{2, math.MaxUint32 - 2, true, true}, // 2 is 5 ticks after the wrap
		{math.MaxUint32 - 2, 2, false, false},
	}
	for _, c := range cases {
		if After(c.a, c.b) != c.after || AfterEq(c.a, c.b) != c.aeq {
			t.Errorf("After(%d,%d)=%v AfterEq=%v, want %v %v", c.a, c.b, After(c.a, c.b), AfterEq(c.a, c.b), c.after, c.aeq)
		}
	}
}

// fifo is a test queue for the state machine.
type fifo struct {
	items   []Item
	backlog *uint32
	now     Time
	dropped []skb.Handle
}

func (f *fifo) Dequeue() (Item, bool) {
	if len(f.items) == 0 {
		return Item{}, false
	}
	it := f.items[0]
	f.items = f.items[1:]
	*f.backlog -= it.Pkt.Len
	return it, true
}
func (f *fifo) Drop(it Item) { f.dropped = append(f.dropped, it.Pkt.Handle) }
func (f *fifo) Now() Time    { return f.now }

// TestDequeueStateMachine: a standing queue whose sojourn is above target
// is left alone for one interval, then dropped from on the control-law
// schedule; ECN-capable packets are marked instead; a short sojourn
// leaves the dropping state.
func TestDequeueStateMachine(t *testing.T) {
	for _, ecn := range []bool{false, true} {
		p := ParamsInit()
		p.MTU = 1514
		p.ECN = ecn
		var v Vars
		var st Stats
		var backlog uint32
		f := &fifo{backlog: &backlog}
		h := skb.Handle(0)
		add := func(at Time) {
			h++
			f.items = append(f.items, Item{Pkt: skb.Packet{Handle: h, Len: 1000, ECN: 2}, EnqueueTime: at})
			backlog += 1000
		}
		for i := 0; i < 2000; i++ {
			add(0)
		}
		// t = 10ms: above target, first_above_time set, no drop.
		f.now = MS2Time(10)
		if _, ok := Dequeue(f, &backlog, &p, &v, &st); !ok || len(f.dropped) != 0 || st.ECNMark != 0 || v.Dropping {
			t.Fatalf("ecn=%v: acted before an interval above target", ecn)
		}
		if v.FirstAboveTime != MS2Time(10)+p.Interval {
			t.Fatalf("first_above_time %d", v.FirstAboveTime)
		}
		// Just at first_above_time: codel_time_after is strict, still no drop.
		f.now = v.FirstAboveTime
		Dequeue(f, &backlog, &p, &v, &st)
		if len(f.dropped) != 0 || st.ECNMark != 0 {
			t.Fatalf("ecn=%v: dropped at first_above_time, must wait until after it", ecn)
		}
		f.now++
		it, _ := Dequeue(f, &backlog, &p, &v, &st)
		if !v.Dropping || v.Count != 1 {
			t.Fatalf("ecn=%v: not dropping after interval: %+v", ecn, v)
		}
		if ecn {
			if st.ECNMark != 1 || len(f.dropped) != 0 || it.Pkt.ECN != 3 {
				t.Fatalf("ecn: expected a CE mark, got marks %d drops %d ecn %d", st.ECNMark, len(f.dropped), it.Pkt.ECN)
			}
		} else if len(f.dropped) != 1 || st.DropCount != 1 {
			t.Fatalf("expected one drop, got %d", len(f.dropped))
		}
		if v.DropNext != ControlLaw(f.now, p.Interval, ^uint16(0)) {
			t.Fatalf("drop_next %d", v.DropNext)
		}
		// Before drop_next: nothing more.
		f.now = v.DropNext - 1
		before := len(f.dropped) + int(st.ECNMark)
		Dequeue(f, &backlog, &p, &v, &st)
		if len(f.dropped)+int(st.ECNMark) != before {
			t.Fatalf("ecn=%v: acted before drop_next", ecn)
		}
		f.now = v.DropNext
		Dequeue(f, &backlog, &p, &v, &st)
		if v.Count != 2 || len(f.dropped)+int(st.ECNMark) != before+1 {
			t.Fatalf("ecn=%v: second signal missing: count %d", ecn, v.Count)
		}
		// A fresh packet (sojourn below target) ends the episode.
		f.items = f.items[:0]
		backlog = 0
		for i := 0; i < 4; i++ {
			add(f.now)
		}
		Dequeue(f, &backlog, &p, &v, &st)
		if v.Dropping || v.FirstAboveTime != 0 {
			t.Fatalf("ecn=%v: still dropping below target: %+v", ecn, v)
		}
	}
}

// A qdisc backlog of at most one MTU is never dropped from, whatever the
// sojourn: codel_should_drop tests the qdisc-wide backlog.
func TestShouldDropSparesSmallBacklog(t *testing.T) {
	p := ParamsInit()
	p.MTU = 1514
	var v Vars
	var st Stats
	it := Item{Pkt: skb.Packet{Len: 1500}}
	for now := Time(0); now < 10*p.Interval; now += p.Target {
		if ShouldDrop(&it, &v, &p, &st, 1514, now+MS2Time(50)) {
			t.Fatal("dropped with backlog <= mtu")
		}
	}
	if st.MaxPacket != 1500 {
		t.Fatalf("maxpacket %d", st.MaxPacket)
	}
}

// The drop loop stops after MaxDropsPerDequeue drops and resyncs.
func TestDropLoopBounded(t *testing.T) {
	p := ParamsInit()
	p.MTU = 0
	v := Vars{Dropping: true, Count: 1, RecInvSqrt: 0xffff, DropNext: 0, FirstAboveTime: 1}
	var st Stats
	var backlog uint32
	f := &fifo{backlog: &backlog}
	for i := 0; i < 5000; i++ {
		f.items = append(f.items, Item{Pkt: skb.Packet{Handle: skb.Handle(i + 1), Len: 100}})
		backlog += 100
	}
	f.now = 1000 * p.Interval // far past drop_next: thousands of drops due
	Dequeue(f, &backlog, &p, &v, &st)
	if len(f.dropped) != MaxDropsPerDequeue {
		t.Fatalf("dropped %d in one call, want the cap %d", len(f.dropped), MaxDropsPerDequeue)
	}
	if !After(v.DropNext, f.now) {
		t.Fatalf("drop_next not resynced past now: %d <= %d", v.DropNext, f.now)
	}
}

// A packet fq_codel queues costs an Item beside the host's skb
// (run.TestInflightMemory): the Packet, its enqueue time and the memory
// it is charged.
func TestItemSize(t *testing.T) {
	if n := unsafe.Sizeof(Item{}); n > 80 {
		t.Errorf("sizeof Item %d, want at most 80", n)
	} else {
		t.Logf("sizeof Item %d", n)
	}
}
