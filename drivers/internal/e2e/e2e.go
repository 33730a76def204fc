// Package e2e runs a descriptor-ring driver end to end through the host,
// for the drivers' own tests: the checks every ring driver must pass,
// plus the driver's own per queue.
package e2e

import (
	"fmt"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// Ethtool is q's ethtool -S counter key, and whether the driver has it.
func Ethtool(q report.Queue, key string) (int64, bool) {
	for _, kv := range q.Ethtool {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return 0, false
}

// RingDriver runs driver (default line rate lineRate bit/s, ring set to
// 256) under mq pfifo, under a single root pfifo, and on a slow wire
// without BQL (run.Run fails a run whose accounting does not balance).
// It checks the line rate and ring the report shows, that the per-queue
// counters add up to the device's, that completions came with
// interrupts, and that the saturated wire made the driver stop a queue;
// check adds the driver's own per-queue checks.
func RingDriver(t *testing.T, driver string, lineRate int64, check func(t *testing.T, q report.Queue)) {
	t.Helper()
	for _, tc := range []struct {
		name, qdisc, profile string
		rate                 int64
		set                  []string
		wantStops            bool
	}{
		{"mq", "mq pfifo", "6.18", 0, nil, false},
		{"root pfifo", "pfifo limit 10000", "6.19-rc1", 0, nil, false},
		// A slow wire without BQL: the driver's own stop/wake carries it.
		{"wire bound no bql", "mq pfifo", "6.18", 2_000_000_000, []string{"bql=off"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := run.Default()
			s.Profile = tc.profile
			s.Driver, s.DriverArgs, s.RateBps, s.Set = driver, []string{"tx", "256"}, tc.rate, tc.set
			s.Sockets, s.Cores, s.Threads = 1, 8, 1
			s.Queues, s.Qdisc = 4, tc.qdisc
			s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 1400}
			s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
			rep, err := run.Run(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TxPackets == 0 || (tc.rate == 0 && rep.Setup.RateBps != lineRate) || rep.Setup.RingSize != 256 {
				t.Fatalf("tx %d rate %d ring %d", rep.TxPackets, rep.Setup.RateBps, rep.Setup.RingSize)
			}
			var sum uint64
			var stops int64
			for _, q := range rep.Queues {
				sum += q.TxPackets
				st, _ := Ethtool(q, "tx_stopped")
				stops += st
				check(t, q)
				if irqs, _ := Ethtool(q, "irqs"); q.TxPackets > 0 && irqs == 0 {
					t.Errorf("q%d completed %d packets without interrupts", q.Txq, q.TxPackets)
				}
			}
			if tc.wantStops && stops == 0 {
				t.Error("the driver never stopped a queue on a saturated wire")
			}
			if sum != rep.TxPackets {
				t.Errorf("queues sum to %d, device sent %d", sum, rep.TxPackets)
			}
			t.Logf("%.2f Mpps, drops %v, q0 %v", rep.TxPps/1e6, rep.Drops, rep.Queues[0].Ethtool)
		})
	}
}

// EthtoolLines runs driver under mq pfifo and checks its `ethtool -S`
// lines in the report: queueKey (a format with the queue's number, the
// driver's per-queue packets line) holds each queue's packets, and
// deviceKey (a device-wide packets line, listed before the per-queue
// ones as the driver does) their sum, its rate the window's.
func EthtoolLines(t *testing.T, driver, queueKey, deviceKey string) {
	t.Helper()
	ethtoolLines(t, driver, queueKey, deviceKey, false)
}

// EthtoolLinesAtXmit is EthtoolLines for a driver whose packet counters
// count at transmit (mlx5e_sq_xmit_prepare), not at completion: the
// device's line is the packets sent plus those the driver still holds,
// and each queue's line at least the packets it completed.
func EthtoolLinesAtXmit(t *testing.T, driver, queueKey, deviceKey string) {
	t.Helper()
	ethtoolLines(t, driver, queueKey, deviceKey, true)
}

func ethtoolLines(t *testing.T, driver, queueKey, deviceKey string, atXmit bool) {
	t.Helper()
	s := run.Default()
	s.Driver = driver
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Queues, s.Qdisc = 2, "mq pfifo"
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 120}
	s.Duration, s.Warmup = 2*sim.Millisecond, sim.Millisecond/2
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, st := range rep.Ethtool {
		at[st.Key] = i
	}
	// The driver's held packets: a driver that counts at transmit has
	// counted them all; one that counts at completion has counted those
	// of a poll the run stopped in (its clean counted them, the host was
	// still freeing them: a plugin's completions reach the host after
	// its poll returns), and no more.
	held := uint64(rep.InFlightWhere["driver"])
	dev, ok := at[deviceKey]
	if !ok {
		t.Fatalf("%s: no %s line: %+v", driver, deviceKey, rep.Ethtool)
	}
	got := rep.Ethtool[dev].Value
	if (atXmit && got != rep.TxPackets+held) || got < rep.TxPackets || got > rep.TxPackets+held {
		t.Fatalf("%s: %s is %d, not the device's %d packets sent (%d held by the driver): %+v", driver, deviceKey, got, rep.TxPackets, held, rep.Ethtool)
	}
	// Counted at completion, the line's count over the window is the
	// wire's plus what the driver held at the window's start less what
	// it holds at its end; the run reports the end's, which sets the
	// scale of that difference (the run is 1.5 ms: a few dozen packets
	// move the rate by more than 1%).
	slack := float64(held) / (float64(rep.WindowNs) / 1e9)
	if perS := rep.Ethtool[dev].PerS; !atXmit && (perS < 0.99*rep.TxPps-slack || perS > 1.01*rep.TxPps+slack) {
		t.Errorf("%s: %s at %.0f/s, the window's rate is %.0f (the driver holds %d packets at its end)", driver, deviceKey, perS, rep.TxPps, held)
	}
	var queues uint64
	for _, q := range rep.Queues {
		key := fmt.Sprintf(queueKey, q.Txq)
		i, ok := at[key]
		if !ok || i < dev || rep.Ethtool[i].Value < q.TxPackets {
			t.Errorf("%s: %s (line %d, device line %d) is not queue %d's %d packets: %+v", driver, key, i, dev, q.Txq, q.TxPackets, rep.Ethtool)
			continue
		}
		queues += rep.Ethtool[i].Value
	}
	if queues != got {
		t.Errorf("%s: the queues' lines add to %d, the device's %s is %d", driver, queues, deviceKey, got)
	}
}

// StatsCountSegments drives a ring driver directly with TSO packets and
// wants its queue's packet counter (ethtool's, and what its TX DIM or
// ITR samples) in segments, as the Intel drivers' cleans add
// tx_buf->gso_segs: 8 skbs of 10 segments are 80 packets.
func StatsCountSegments(t *testing.T, d driver.Driver) {
	t.Helper()
	if _, err := d.Init(driver.Setup{Name: "eth0", NumTxQ: 1, NumCPUs: 8, Costs: sim.DefaultCosts()}, nil); err != nil {
		t.Fatal(err)
	}
	f := drivertest.New(t, 1, false)
	batch := f.Packets(0, 8, 10*1514)
	for i := range batch {
		batch[i].GSOSegs = 10
	}
	if rest, _ := f.Xmit(d, 0, batch); len(rest) > 0 {
		t.Fatalf("%d of 8 not taken", len(rest))
	}
	f.Clock += sim.Millisecond
	f.Poll(d, 0, nil)
	st := d.Stats()[0]
	if f.Consumed[0] != 8 || st.Packets != 80 || st.Bytes != 8*10*1514 {
		t.Fatalf("%d skbs freed; stats %d packets, %d bytes: want 8, 80 and %d", f.Consumed[0], st.Packets, st.Bytes, 8*10*1514)
	}
}
