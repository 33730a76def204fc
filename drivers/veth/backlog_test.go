package veth

import (
	"fmt"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/skb"
)

// enqueue_to_backlog on the default path: input_pkt_queue takes an skb
// while it holds at most netdev_max_backlog (qlen <= max_backlog), and
// only the skb that finds it empty schedules the backlog NAPI, however
// many follow before the softirq runs.
func TestEnqueueToBacklog(t *testing.T) {
	for _, tc := range []struct {
		max, sent, taken int
	}{
		{max: 1, sent: 5, taken: 2},
		{max: 10, sent: 10, taken: 10},
		{max: 10, sent: 11, taken: 11},
		{max: 10, sent: 12, taken: 11},
		{max: 1000, sent: 1001, taken: 1001},
		{max: 1000, sent: 1500, taken: 1001},
	} {
		t.Run(fmt.Sprintf("max%d_sent%d", tc.max, tc.sent), func(t *testing.T) {
			v := &Veth{}
			if _, err := v.Init(setup(1), []string{"backlog", fmt.Sprint(tc.max)}); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, false)
			f.OnCPU = 3
			// One packet a call, as qdisc_restart's bulks of one do.
			for _, p := range f.Packets(0, tc.sent, 100) {
				if rest, rc := f.Xmit(v, 0, []skb.Packet{p}); len(rest) != 0 || rc != driver.TxOK {
					t.Fatalf("rest %d rc %#x", len(rest), rc)
				}
			}
			if got := int(f.Dropped[0]); got != tc.sent-tc.taken {
				t.Errorf("dropped %d, want %d", got, tc.sent-tc.taken)
			}
			if len(f.Local) != 1 || f.Local[0] != 3 {
				t.Errorf("NAPI schedules %v, want cpu 3's backlog once", f.Local)
			}
			f.Poll(v, 3, nil)
			if int(f.Consumed[0]) != tc.taken {
				t.Errorf("delivered %d, want %d", f.Consumed[0], tc.taken)
			}
		})
	}
}

// process_backlog: the quota's skb returns at once (no completion, so
// net_rx_action polls again even if the queues just ran dry); the first
// poll splices input_pkt_queue onto process_queue, so enqueue_to_backlog
// takes netdev_max_backlog + 1 more while the earlier skbs still wait;
// completing clears NAPI_STATE_SCHED, so the next skb schedules again.
func TestProcessBacklog(t *testing.T) {
	type step struct {
		send     int  // skbs to xmit, or
		poll     bool // one process_backlog with quota NapiWeight
		work     int
		done     bool
		dropped  uint64 // total so far
		schedule int    // NapiScheduleLocal calls so far
	}
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"quota exactly reached", 1000, []step{
			{send: NapiWeight, schedule: 1},
			{poll: true, work: NapiWeight, done: false, schedule: 1},
			{poll: true, work: 0, done: true, schedule: 1},
			{send: 1, schedule: 2},
			{poll: true, work: 1, done: true, schedule: 2},
		}},
		{"splice frees input_pkt_queue", 100, []step{
			{send: 101, schedule: 1},
			{poll: true, work: NapiWeight, done: false, schedule: 1},
			// 37 wait on process_queue; input_pkt_queue is empty but the
			// NAPI is still scheduled: 101 more are taken, no schedule.
			{send: 102, dropped: 1, schedule: 1},
			{poll: true, work: NapiWeight, done: false, dropped: 1, schedule: 1},
			{poll: true, work: NapiWeight, done: false, dropped: 1, schedule: 1},
			{poll: true, work: 202 - 3*NapiWeight, done: true, dropped: 1, schedule: 1},
		}},
		{"enqueue during processing", 1000, []step{
			{send: 10, schedule: 1},
			{poll: true, work: 10, done: true, schedule: 1},
			{send: 100, schedule: 2},
			{poll: true, work: NapiWeight, done: false, schedule: 2},
			{send: 5, schedule: 2},
			{poll: true, work: 100 - NapiWeight + 5, done: true, schedule: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Veth{}
			if _, err := v.Init(setup(1), []string{"backlog", fmt.Sprint(tc.max)}); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, false)
			f.OnCPU = 1
			for i, s := range tc.steps {
				if s.poll {
					work, done := v.Poll(f, 1, NapiWeight)
					if work != s.work || done != s.done {
						t.Fatalf("step %d: poll work %d done %v, want %d %v", i, work, done, s.work, s.done)
					}
				} else {
					for _, p := range f.Packets(0, s.send, 100) {
						f.Xmit(v, 0, []skb.Packet{p})
					}
				}
				if f.Dropped[0] != s.dropped || len(f.Local) != s.schedule {
					t.Fatalf("step %d: dropped %d, %d schedules; want %d, %d", i, f.Dropped[0], len(f.Local), s.dropped, s.schedule)
				}
			}
			if len(f.Held) != 0 {
				t.Fatalf("%d skbs never delivered", len(f.Held))
			}
		})
	}
}

// __veth_xdp_flush: a producer schedules the rq's NAPI only when
// rx_notify_masked is clear; veth_poll clears it when it completes.
func TestXdpFlushMasked(t *testing.T) {
	v := &Veth{}
	if _, err := v.Init(setup(2), []string{"napi", "on"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 2, false)
	f.Xmit(v, 1, f.Packets(1, 10, 100))
	f.OnCPU = 2
	f.Xmit(v, 1, f.Packets(1, 10, 100)) // another CPU: still masked
	if len(f.Local) != 1 || f.Local[0] != 1 {
		t.Fatalf("schedules %v, want rq 1's once", f.Local)
	}
	if work, done := v.Poll(f, 1, NapiWeight); work != 20 || !done || v.rings[1].masked {
		t.Fatalf("poll: work %d done %v masked %v, want 20, completed, unmasked", work, done, v.rings[1].masked)
	}
	f.Xmit(v, 1, f.Packets(1, 1, 100))
	if len(f.Local) != 2 {
		t.Fatalf("schedules %v, want a second after the completion", f.Local)
	}
}

// ptr_ring's consumer gives consumed slots back to the producer only
// every r->batch (16) consumptions: a full ring stays full for the
// producer until the 16th skb is taken.
func TestPtrRingBatchGiveBack(t *testing.T) {
	for _, tc := range []struct {
		polls []int // budgets of successive veth_polls
		taken int   // of 40 more offered to the full ring (noqueue)
	}{
		{polls: []int{1}, taken: 0},
		{polls: []int{15}, taken: 0},
		{polls: []int{16}, taken: 16},
		{polls: []int{10, 10}, taken: 16},
		{polls: []int{17}, taken: 16},
		{polls: []int{32}, taken: 32},
		{polls: []int{NapiWeight}, taken: 40},
	} {
		t.Run(fmt.Sprint(tc.polls), func(t *testing.T) {
			v := &Veth{}
			if _, err := v.Init(setup(1), []string{"napi", "on"}); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, false)
			f.Qdisc[0] = false
			f.Xmit(v, 0, f.Packets(0, RingSize, 100))
			for _, b := range tc.polls {
				v.Poll(f, 0, b)
			}
			before := f.Dropped[0]
			f.Xmit(v, 0, f.Packets(0, 40, 100))
			if got := 40 - int(f.Dropped[0]-before); got != tc.taken {
				t.Errorf("ring took %d of 40, want %d", got, tc.taken)
			}
		})
	}
}
