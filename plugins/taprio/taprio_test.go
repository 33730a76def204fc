package taprio

import (
	"strconv"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// twoClasses: priority 0 to class 0 on queues 0-1, priority 1 to class
// 1 on queues 2-3; class 0's gate 300 us, class 1's 700 us, a 1 ms
// cycle on TAI from base-time 0 (long past: the next cycle's start).
const twoClasses = "num_tc 2 map 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 queues 2@0 2@2 base-time 0 " +
	"sched-entry S 01 300000 sched-entry S 02 700000 clockid CLOCK_TAI"

// setup is taprio's root on a 1 Gbit/s device of four queues.
func setup() qdisc.Setup {
	s := qdisctest.DefaultSetup()
	s.RateBps, s.NumTxQ, s.DevTxQ = 1e9, 4, 4
	return s
}

func newTaprio(t *testing.T, args string) (*Taprio, *qdisctest.Ctx) {
	t.Helper()
	q := &Taprio{clockid: -1, flags: flagsInvalid}
	ctx := qdisctest.NewCtx(1)
	ctx.T = sim.Ktime(sim.Second)
	if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: setup()}); err != nil {
		t.Fatal(err)
	}
	return q, ctx
}

// send queues n 1514-byte packets of priority prio on TX queue txq.
func send(q *Taprio, ctx *qdisctest.Ctx, h *skb.Handle, n int, prio uint32, txq uint16) {
	batch := make([]skb.Packet, n)
	for i := range batch {
		*h++
		batch[i] = skb.Packet{Handle: *h, Len: 1514, GSOSegs: 1, Priority: prio, Queue: txq}
	}
	q.Enqueue(ctx, batch, make([]qdisc.Code, n))
}

// drain dequeues what taprio gives now, by traffic class.
func drain(q *Taprio, ctx *qdisctest.Ctx) (byTC [2]int) {
	for {
		out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil)
		if len(out) == 0 {
			return byTC
		}
		byTC[q.tcmap.PrioTC[out[0].Priority&15]]++
	}
}

// fire runs the advance timer (advance_sched) at its expiry.
func fire(t *testing.T, q *Taprio, ctx *qdisctest.Ctx) {
	t.Helper()
	if !ctx.TimerArmed {
		t.Fatal("the advance timer is not armed")
	}
	ctx.T, ctx.TimerArmed = ctx.TimerAt, false
	q.Timer(ctx)
}

// The gate control list as taprio_dequeue applies it: until the
// schedule starts every gate is open (AdminGateStates); then each
// class sends only in its own entry, as much as its budget (the gate's
// open time at 1 Gbit/s: 37,500 bytes, 24 frames of 1514 for class 0)
// and only frames that end before its gate closes (the guard band: at
// 1 Gbit/s a 1514-byte frame takes 12.112 us).
func TestGates(t *testing.T) {
	q, ctx := newTaprio(t, twoClasses)
	var h skb.Handle
	send(q, ctx, &h, 100, 0, 0)
	send(q, ctx, &h, 100, 1, 2)
	// before the first timer: all gates open, class 1 first (the
	// highest class first)
	out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 2, Bytes: 1 << 30}, nil)
	if len(out) != 2 || out[0].Priority != 1 || out[1].Priority != 1 {
		t.Fatalf("before the schedule: %+v", out)
	}
	fire(t, q, ctx) // entry 0: class 0's gate
	start := ctx.T
	if got := drain(q, ctx); got != [2]int{24, 0} {
		t.Errorf("entry 0: %v frames by class, want 24 of class 0 (its budget) and none of class 1", got)
	}
	fire(t, q, ctx) // entry 1: class 1's gate, 700 us: 57 frames' budget
	if ctx.T != start+300*sim.Microsecond {
		t.Errorf("entry 1 at %v, want 300 us after entry 0", ctx.T-start)
	}
	if got := drain(q, ctx); got != [2]int{0, 57} {
		t.Errorf("entry 1: %v frames by class, want 57 of class 1", got)
	}
	fire(t, q, ctx) // the next cycle's entry 0
	if ctx.T != start+sim.Millisecond {
		t.Errorf("the cycle restarts at %v, want 1 ms", ctx.T-start)
	}
	// the guard band: 12 us before the gate closes a frame no longer fits
	ctx.T += 300*sim.Microsecond - 12*sim.Microsecond
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil); len(out) != 0 {
		t.Errorf("12 us before the gate closes: %+v", out)
	}
	ctx.T -= sim.Microsecond
	if out := q.Dequeue(ctx, qdisc.DequeueReq{Max: 1, Bytes: 1 << 30}, nil); len(out) != 1 || out[0].Priority != 0 {
		t.Errorf("13 us before the gate closes: %+v, want a frame of class 0", out)
	}
}

// A class whose gate never closes has no budget or guard band
// (gate_duration == cycle_time: INT_MAX, KTIME_MAX), and the longest
// gate a class has bounds its frames (taprio_update_queue_max_sdu): a
// 10 us gate at 1 Gbit/s carries 1250 bytes, 1236 of SDU; a frame over
// it is dropped at enqueue.
func TestMaxSDUAndOpenGates(t *testing.T) {
	q, ctx := newTaprio(t, "num_tc 2 map 0 1 queues 2@0 2@2 sched-entry S 03 10000 sched-entry S 02 90000 clockid CLOCK_TAI")
	fire(t, q, ctx)
	if q.oper.maxSDU[0] != 1236 || q.oper.maxSDU[1] != 0 || q.oper.maxFrmLen[1] != ^uint32(0) {
		t.Errorf("max-sdu %v, frame lengths %v", q.oper.maxSDU[:2], q.oper.maxFrmLen[:2])
	}
	var h skb.Handle
	send(q, ctx, &h, 3, 0, 0)
	send(q, ctx, &h, 200, 1, 2)
	if len(ctx.Dropped) != 3 || q.Stats().Qlen != 200 {
		t.Errorf("dropped %d, queued %d: want the 3 class 0 frames over its max SDU dropped", len(ctx.Dropped), q.Stats().Qlen)
	}
	if got := drain(q, ctx); got[1] != 200 {
		t.Errorf("class 1, its gate always open: %d of 200 sent at once", got[1])
	}
	if !strings.Contains(q.Dump(), "max-sdu 1236 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nfp E E E E E E E E E E E E E E E E\n") {
		t.Errorf("dump:\n%s", q.Dump())
	}
}

// A change while the schedule runs is a new admin schedule, taken when
// the next entry would end at or after its base-time
// (should_change_schedules): the old schedule's last entry gives way and
// the new first entry runs from then to base-time plus its interval.
// setup_first_end_time leaves no current entry meanwhile, every gate
// open, as the kernel's does.
func TestAdminSchedule(t *testing.T) {
	q, ctx := newTaprio(t, twoClasses)
	fire(t, q, ctx)
	base := int64(ctx.T) + q.tkOffset + 5*int64(sim.Millisecond)
	args := "base-time " + itoa(base) + " sched-entry S 02 500000 sched-entry S 01 500000 clockid CLOCK_TAI"
	if _, err := q.Change(ctx, strings.Fields(args)); err != nil {
		t.Fatal(err)
	}
	if q.admin == nil || q.current != nil {
		t.Fatalf("admin %v current %v", q.admin, q.current)
	}
	if !strings.Contains(q.Dump(), "\tbase-time 0 cycle-time 1000000 cycle-time-extension 0\n\tindex 0 cmd S gatemask 0x1 interval 300000\n\tindex 1 cmd S gatemask 0x2 interval 700000\n\tbase-time "+itoa(base)+" cycle-time 1000000") {
		t.Errorf("dump with an admin schedule:\n%s", q.Dump())
	}
	for i := 0; i < 40 && q.admin != nil; i++ {
		fire(t, q, ctx)
	}
	at := int64(ctx.T) + q.tkOffset
	if q.admin != nil || q.oper.entries[0].gateMask != 2 || at != base-700_000 || int64(ctx.TimerAt)+q.tkOffset != base+500_000 {
		t.Errorf("switched at base%+d ns, its first entry ends at base%+d, oper's first mask %#x", at-base, int64(ctx.TimerAt)+q.tkOffset-base, q.oper.entries[0].gateMask)
	}
	if _, err := q.Change(ctx, strings.Fields("num_tc 1 queues 4@0 sched-entry S 01 300000 clockid CLOCK_TAI")); err == nil ||
		!strings.Contains(err.Error(), "Changing the traffic mapping of a running schedule is not supported") {
		t.Errorf("a new mapping on a running schedule: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// tc's q_taprio.c words and messages, and taprio_init's and
// taprio_change's refusals.
func TestErrors(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"num_tc 2 map 0 1 queues 2@0 2@2 sched-entry S 01 300000", "Specifying a 'clockid' is mandatory"},
		{"num_tc 2 map 0 1 queues 2@0 2@2 clockid CLOCK_TAI", "There should be at least one entry in the schedule"},
		{"sched-entry S 01 300000 clockid CLOCK_TAI", "'mqprio' configuration is necessary"},
		{"num_tc 5 queues 1@0 1@1 1@2 1@3 1@3 sched-entry S 01 300000 clockid CLOCK_TAI", "Number of traffic classes is greater than number of HW queues"},
		{"num_tc 2 map 0 2 queues 2@0 2@2 sched-entry S 01 300000 clockid CLOCK_TAI", "Invalid traffic class in priority to traffic class mapping"},
		{"num_tc 2 queues 2@0 2@1 sched-entry S 01 300000 clockid CLOCK_TAI", "TC 0 queues 2@0 overlap with TC 1 queues 2@1"},
		{"num_tc 2 queues 2@0 3@2 sched-entry S 01 300000 clockid CLOCK_TAI", "Queues 3:2 for TC 1 exceed the 4 TX queues available"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 100 clockid CLOCK_TAI", "Invalid interval for schedule entry"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 cycle-time 100 clockid CLOCK_TAI", "'cycle_time' is too small"},
		{"num_tc 2 queues 2@0 2@2 sched-entry X 01 300000 clockid CLOCK_TAI", "sched-entry <cmd> <gate mask> <interval>"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid CLOCK_FOO", `illegal value for "clockid": "CLOCK_FOO"`},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI clockid TAI", `duplicate "clockid" specification`},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI fp E P", "Preemption only supported with full offload"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI max-sdu 0 9000", "TC max SDU exceeds device max MTU"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI flags 0x1", "is not modelled"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI flags 0x3", "TXTIME_ASSIST and FULL_OFFLOAD are mutually exclusive"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI txtime-delay 100", "txtime-delay can only be set when txtime-assist mode is enabled"},
		{"num_tc 2 queues 2@0 2@2 sched-entry S 01 300000 clockid TAI foo", `Unknown argument "foo"`},
	} {
		q := &Taprio{clockid: -1, flags: flagsInvalid}
		_, err := qdisctest.Attach(qdisctest.NewCtx(1), q, qdisctest.Options{Args: strings.Fields(tt.args), Setup: setup()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.args, err, tt.want)
		}
	}
	s := setup()
	s.Parent = "1:1"
	if _, err := qdisctest.Attach(qdisctest.NewCtx(1), &Taprio{clockid: -1, flags: flagsInvalid}, qdisctest.Options{Args: strings.Fields(twoClasses), Setup: s}); err == nil ||
		!strings.Contains(err.Error(), "Error: sch_taprio: Can only be attached as root qdisc.") {
		t.Errorf("not the root: %v", err)
	}
}

// The dump as tc's taprio_print_opt prints taprio_dump once the
// schedule runs (the 802.1Qbv example of tc-taprio(8)).
func TestDump(t *testing.T) {
	q, ctx := newTaprio(t, "num_tc 3 map 2 2 1 0 2 2 2 2 2 2 2 2 2 2 2 2 queues 1@0 1@1 2@2 base-time 1528743495910289987 "+
		"sched-entry S 01 300000 sched-entry S 02 300000 sched-entry S 04 400000 clockid CLOCK_TAI")
	fire(t, q, ctx)
	want := "tc 3 map 2 2 1 0 2 2 2 2 2 2 2 2 2 2 2 2\nqueues offset 0 count 1 offset 1 count 1 offset 2 count 2\n" +
		"clockid TAI\tbase-time 1528743495910289987 cycle-time 1000000 cycle-time-extension 0\n" +
		"\tindex 0 cmd S gatemask 0x1 interval 300000\n\tindex 1 cmd S gatemask 0x2 interval 300000\n\tindex 2 cmd S gatemask 0x4 interval 400000\n" +
		"max-sdu 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nfp E E E E E E E E E E E E E E E E\n"
	if got := q.Dump(); got != want {
		t.Errorf("dump:\n%q\nwant\n%q", got, want)
	}
}

func TestConformance(t *testing.T) {
	for _, r := range qdisctest.Run(func() qdisc.Qdisc { return &Taprio{clockid: -1, flags: flagsInvalid} },
		qdisctest.Options{Args: strings.Fields(twoClasses), Setup: setup()}) {
		t.Errorf("%s: %v", r.Check, r.Err)
	}
}

// FuzzOptions: any words give a clear error, or a taprio on four queues
// that takes packets on each, runs its timer through two cycles, dumps,
// gives packets back and resets to empty, without a panic. (qdiscfuzz's
// target attaches to a one-queue device, which taprio refuses.)
func FuzzOptions(f *testing.F) {
	for _, s := range []string{
		twoClasses,
		"num_tc 1 queues 4@0 sched-entry S 1 1000000 clockid TAI max-sdu 1400 cycle-time-extension 100",
		"num_tc 3 map 2 2 1 0 queues 1@0 1@1 2@2 sched-entry H 07 50000 sched-entry R 0 50000 clockid REALTIME",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		q := &Taprio{clockid: -1, flags: flagsInvalid}
		ctx := qdisctest.NewCtx(1)
		if _, err := qdisctest.Attach(ctx, q, qdisctest.Options{Args: strings.Fields(args), Setup: setup()}); err != nil {
			return
		}
		var h skb.Handle
		for i := range 40 {
			send(q, ctx, &h, 1, uint32(i%16), uint16(i%6)) // queues 4 and 5 do not exist
			if ctx.TimerArmed && ctx.TimerAt <= ctx.T+50*sim.Microsecond {
				fire(t, q, ctx)
			}
			ctx.T += 50 * sim.Microsecond
			q.Dequeue(ctx, qdisc.DequeueReq{Max: 4, Bytes: 1 << 40}, nil)
		}
		q.Dump()
		qdisctest.Reset(ctx, q)
		if st := q.Stats(); st.Qlen != 0 || st.Backlog != 0 {
			t.Fatalf("%q: after reset %+v", args, st)
		}
	})
}
