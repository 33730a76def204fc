package run

import (
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// e1Host is the seeds' E1 host: 2 sockets x 120 cores x 2 threads, an
// ice-like 100G NIC with 30 queues, mq pfifo, 120-byte UDP_STREAM.
func e1Host(profile string, senders int) Spec {
	s := Default()
	s.Profile = profile
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: senders, PacketSize: 120}
	s.Duration, s.Warmup = 6*sim.Millisecond, 2*sim.Millisecond
	return s
}

func mustRun(t *testing.T, s Spec) *report.Report {
	t.Helper()
	rep, err := Run(s, nil)
	if err != nil {
		t.Fatalf("%s: %v", s.Profile, err)
	}
	return rep
}

// Contention is real in the model: with 240 senders the llist path sends
// clearly more and spends less CPU per packet than busylock; with 8
// senders (little sharing of queues) the two are close.
func TestContentionLlistVsBusylock(t *testing.T) {
	if testing.Short() {
		t.Skip("large host")
	}
	busy, ll := mustRun(t, e1Host("6.18", 240)), mustRun(t, e1Host("6.19-rc1", 240))
	t.Logf("240 senders: busylock %.2f Mpps %.0f ns/pkt %.1f%% busy; llist %.2f Mpps %.0f ns/pkt %.1f%% busy",
		busy.TxPps/1e6, busy.CPUNsPerPacket, busy.CPUBusyPct, ll.TxPps/1e6, ll.CPUNsPerPacket, ll.CPUBusyPct)
	if ll.TxPps < 1.3*busy.TxPps {
		t.Errorf("llist %.2f Mpps is not clearly above busylock %.2f Mpps", ll.TxPps/1e6, busy.TxPps/1e6)
	}
	if ll.CPUNsPerPacket > 0.8*busy.CPUNsPerPacket {
		t.Errorf("llist %.0f ns/pkt is not clearly below busylock %.0f", ll.CPUNsPerPacket, busy.CPUNsPerPacket)
	}
	if len(busy.Locks) == 0 || busy.Locks[0].Name != "__dev_xmit_skb (busylock)" {
		t.Errorf("busylock should top the contention table, got %+v", busy.Locks[:1])
	}

	busy8, ll8 := mustRun(t, e1Host("6.18", 8)), mustRun(t, e1Host("6.19-rc1", 8))
	t.Logf("8 senders: busylock %.2f Mpps %.0f ns/pkt; llist %.2f Mpps %.0f ns/pkt",
		busy8.TxPps/1e6, busy8.CPUNsPerPacket, ll8.TxPps/1e6, ll8.CPUNsPerPacket)
	if r := ll8.TxPps / busy8.TxPps; r < 0.9 || r > 1.1 {
		t.Errorf("8 senders: llist/busylock = %.2f, want within 10%%", r)
	}
}
