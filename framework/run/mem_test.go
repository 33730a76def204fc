package run

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/workload"
)

// backlogSpec is a host whose qdisc only grows: 8 udp_stream senders
// with a 16 MB sndbuf each (about 20k skbs of 120 bytes) fill qdisc on
// a 10 Mbit link that drains 10 packets in a millisecond. deep false
// leaves the sndbuf at its least (4608 bytes, a few skbs a socket):
// the same host and qdisc with next to nothing in flight.
func backlogSpec(qdisc string, queues int, deep bool) Spec {
	s := small()
	s.Queues, s.RateBps, s.Qdisc = queues, 10_000_000, qdisc
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 120}
	s.Duration, s.Warmup = 24*sim.Millisecond, 0
	s.Set = []string{"sndbuf=4608"}
	if deep {
		s.Set = []string{"sndbuf=16777216"}
	}
	return s
}

// backlogs are the qdiscs measured, each told to hold everything:
// limits far above the backlog, CoDel's target and cake's rtt too long
// to drop in the run.
var backlogs = []struct {
	name, qdisc string
	queues      int
}{
	{"pfifo", "pfifo limit 1000000", 1},
	{"mq_pfifo", "mq pfifo limit 1000000", 4},
	{"fq_codel", "fq_codel limit 1000000 memory_limit 1gb target 10s interval 30s", 1},
	{"cake", "cake besteffort rtt 30s memlimit 1gb", 1},
}

// mostPerInflight is the bound on the heap a packet in flight
// costs, held for every qdisc of backlogs. Cake's is the closest: its
// ring entry is 88 bytes (the Packet, its enqueue time and adjusted
// length) beside the skb's 160.
const mostPerInflight = 256

// heapAtEnd runs s and returns the live heap (after a GC) and the
// packets in flight at its last instant, while the host still holds
// them.
func heapAtEnd(tb testing.TB, s Spec) (heap uint64, inflight int64) {
	tb.Helper()
	var net *netdev.Net
	_, err := RunWith(s, Options{
		Observe: func(n *netdev.Net, _ *netdev.Device) error { net = n; return nil },
		Progress: func(done, total sim.Time) {
			if done < total {
				return
			}
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			heap, inflight = m.HeapAlloc, net.InFlightPackets()
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return heap, inflight
}

// bytesPerInflight is the heap a packet in flight costs on s's host:
// the deep backlog's live heap less the shallow one's, over the
// difference in packets in flight. Each is the least of three runs, so
// that garbage the GC has yet to see weighs less.
func bytesPerInflight(tb testing.TB, qdisc string, queues int) (per float64, deep int64) {
	tb.Helper()
	least := func(s Spec) (uint64, int64) {
		var best uint64
		var n int64
		for i := 0; i < 3; i++ {
			h, f := heapAtEnd(tb, s)
			if i == 0 || h < best {
				best, n = h, f
			}
		}
		return best, n
	}
	h0, n0 := least(backlogSpec(qdisc, queues, false))
	h1, n1 := least(backlogSpec(qdisc, queues, true))
	if n1 < n0+10_000 {
		tb.Fatalf("%s: %d packets in flight with the deep backlog, %d without", qdisc, n1, n0)
	}
	return (float64(h1) - float64(h0)) / float64(n1-n0), n1
}

// TestInflightMemory holds the heap per packet in flight to
// mostPerInflight. The figures are the same from run to run: the runs are
// deterministic and measured after a GC.
func TestInflightMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("several runs")
	}
	t.Logf("sizeof skb.SKB %d, skb.Packet %d", unsafe.Sizeof(skb.SKB{}), unsafe.Sizeof(skb.Packet{}))
	for _, bl := range backlogs {
		t.Run(bl.name, func(t *testing.T) {
			per, n := bytesPerInflight(t, bl.qdisc, bl.queues)
			t.Logf("%.1f bytes per packet in flight, %d in flight", per, n)
			if per > mostPerInflight {
				t.Errorf("%.1f bytes per packet in flight, want at most %d", per, mostPerInflight)
			}
		})
	}
}

// BenchmarkInflightMemory: heap bytes per packet in flight
// ("B/inflight"), tens of thousands of them queued in each qdisc of
// backlogs (the target is 256).
func BenchmarkInflightMemory(b *testing.B) {
	b.Logf("sizeof skb.SKB %d, skb.Packet %d", unsafe.Sizeof(skb.SKB{}), unsafe.Sizeof(skb.Packet{}))
	for _, bl := range backlogs {
		b.Run(bl.name, func(b *testing.B) {
			var per float64
			var n int64
			for i := 0; i < b.N; i++ {
				per, n = bytesPerInflight(b, bl.qdisc, bl.queues)
			}
			b.ReportMetric(per, "B/inflight")
			b.ReportMetric(float64(n), "inflight")
		})
	}
}
