package run

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

func small() Spec {
	s := Default()
	s.Sockets, s.Cores, s.Threads = 1, 8, 1
	s.Queues = 4
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 120}
	s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
	return s
}

// deterministicRun runs s twice, checking the two reports are the same
// bytes, then once more for its report, checking its accounting.
func deterministicRun(t *testing.T, s Spec) *report.Report {
	t.Helper()
	if !bytes.Equal(jsonOf(t, s), jsonOf(t, s)) {
		t.Fatal("two runs of one spec differ")
	}
	rep := mustRun(t, s)
	if !rep.AccountingOK {
		t.Fatal(rep.AccountingError)
	}
	return rep
}

func jsonOf(t *testing.T, s Spec) []byte {
	t.Helper()
	rep, err := Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.SimWallNs = 0
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDeterminism(t *testing.T) {
	a, b := jsonOf(t, small()), jsonOf(t, small())
	if !bytes.Equal(a, b) {
		t.Fatal("same spec and seed gave different reports")
	}
	s := small()
	s.Seed = 2
	if bytes.Equal(a, jsonOf(t, s)) {
		t.Fatal("a different seed gave the same report")
	}
}

// TestSeriesSumsToWindow: the series cover the window, so their packets
// and bytes add up to the window's, and tx_bps is each interval's bytes
// x 8 per second.
func TestSeriesSumsToWindow(t *testing.T) {
	rep, err := Run(small(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pkts, nbytes uint64
	for _, iv := range rep.Series {
		pkts += iv.TxPackets
		nbytes += iv.TxBytes
		if want := float64(iv.TxBytes) * 8e9 / float64(iv.EndNs-iv.StartNs); iv.TxBps != want {
			t.Errorf("interval at %d: tx_bps %g, want %g", iv.StartNs, iv.TxBps, want)
		}
	}
	if pkts != rep.Window.TxPackets || nbytes != rep.Window.TxBytes || nbytes == 0 {
		t.Errorf("series add up to %d packets %d bytes, the window has %d and %d", pkts, nbytes, rep.Window.TxPackets, rep.Window.TxBytes)
	}
}

// TestCPUProfileSumsToBusy: the CPU profile covers the window, so its
// work and spin add up to the CPUs' busy time, and the TX path's
// activities are the ones a run of senders through a qdisc spends on
// (the busylock run spins on the enqueue side, the llist one drains).
func TestCPUProfileSumsToBusy(t *testing.T) {
	for _, profile := range []string{"6.18", "6.19-rc1"} {
		s := small()
		s.Profile = profile
		rep, err := Run(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		by := map[string]report.ProfileRow{}
		for i, r := range rep.CPUProfile {
			sum += r.WorkNs + r.SpinNs
			by[r.Activity] = r
			if i > 0 {
				p := rep.CPUProfile[i-1]
				if p.WorkNs+p.SpinNs < r.WorkNs+r.SpinNs {
					t.Errorf("%s: %q after %q: not most first", profile, r.Activity, p.Activity)
				}
			}
		}
		if sum != rep.Window.CPUBusyNs || sum == 0 {
			t.Errorf("%s: cpu_profile sums to %d ns, the window's busy time is %d", profile, sum, rep.Window.CPUBusyNs)
		}
		for _, a := range []string{netdev.ActXmit, netdev.ActEnqueue, netdev.ActDequeue, netdev.ActDriver, "udp_sendmsg stack + skb alloc"} {
			if by[a].WorkNs == 0 {
				t.Errorf("%s: no time in %q: %v", profile, a, rep.CPUProfile)
			}
		}
		drain := by[netdev.ActDrain].WorkNs
		if (profile == "6.19-rc1") != (drain > 0) {
			t.Errorf("%s: %d ns draining defer lists", profile, drain)
		}
	}
}

// TestCoDelDroppingSums: fq_codel's key and cake's per-tin keys add up;
// other keys do not count.
func TestCoDelDroppingSums(t *testing.T) {
	xs := []qdisc.XStat{qdisc.XInt("codel_dropping", 2), qdisc.XUint("tin0_codel_dropping", 3), qdisc.XUint("tin1_codel_dropping", 4), qdisc.XInt("drop_overlimit", 100)}
	if got := codelDropping(xs); got != 9 {
		t.Errorf("codelDropping %d, want 9", got)
	}
}

// With one queue and no --qdisc the default root (mq pfifo) leaves its
// mq out, as the kernel puts its default qdisc alone on a device that
// is not multiqueue; a root given as mq is refused as mq_init refuses it.
func TestDefaultRootOnOneQueue(t *testing.T) {
	s := small()
	s.Queues = 1
	rep := mustRun(t, s)
	if rep.Setup.Qdisc != "pfifo" {
		t.Errorf("one queue, no --qdisc: root %q, want pfifo", rep.Setup.Qdisc)
	}
	s.Give("qdisc", "")
	if _, err := Run(s, nil); err == nil || !strings.Contains(err.Error(), "mq needs a multiqueue device") {
		t.Errorf("one queue, --qdisc \"mq pfifo\" given: %v, want mq's refusal", err)
	}
	s = small()
	if rep := mustRun(t, s); !strings.HasPrefix(rep.Setup.Qdisc, "mq") {
		t.Errorf("four queues, no --qdisc: root %q, want mq", rep.Setup.Qdisc)
	}
}
