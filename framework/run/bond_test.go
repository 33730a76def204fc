package run

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// e4Host is E4's setup scaled down: HTB at bond0's root over two i40e
// slaves, senders pinned on socket 0 (no node contention), four groups of
// ports so layer3+4 uses both slaves.
func e4Host(profile string) Spec {
	s := Default()
	s.Profile = profile
	s.Sockets, s.Cores, s.Threads = 2, 6, 2
	s.Driver, s.Queues, s.RateBps, s.Qdisc = "i40e", 4, 40_000_000_000, "mq pfifo"
	s.Bond = "mode balance-xor xmit_hash_policy layer3+4 slaves 2"
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 12, PacketSize: 120, Placement: "0-5,12-17"}
	s.Workload.Groups, _ = workload.ParseGroups("dport=5001 dport=5002 dport=5003 dport=5004")
	s.Duration, s.Warmup = 4*sim.Millisecond, 1*sim.Millisecond
	s.TC = []TCBatch{{Name: "e4.tc", Text: "qdisc add dev bond0 root handle 1: htb default 1\n" +
		"class add dev bond0 parent 1: classid 1:1 htb rate 40gbit ceil 40gbit\n"}}
	return s
}

func device(t *testing.T, rep *report.Report, name string) report.DeviceSection {
	t.Helper()
	for _, d := range rep.Devices {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no device %s in %+v", name, rep.Devices)
	return report.DeviceSection{}
}

// E4's mechanism, not its figures: before 4d202a0d1 (4.7) bond0's htb
// gives one skb per qdisc_restart, so its dequeuer takes the root lock
// once per packet; after it (4.8) the same run bulks and takes it less
// often. Both slaves send (layer3+4 over the port groups), bond0 handed
// its slaves what it took, and the accounting holds through the stack.
func TestE4BulkOnBond(t *testing.T) {
	var trips [2]float64
	for i, prof := range []string{"4.7", "4.8"} {
		rep := mustRun(t, e4Host(prof))
		if !rep.AccountingOK {
			t.Fatalf("%s: accounting: %s", prof, rep.AccountingError)
		}
		b := device(t, rep, "bond0")
		if b.Kind != "bonding" || b.Options != "mode balance-xor xmit_hash_policy layer3+4" || strings.Join(b.Slaves, ",") != "eth0,eth1" {
			t.Fatalf("%s: bond0 %+v", prof, b)
		}
		if len(b.Qdisc) == 0 || b.Qdisc[0].Kind != "htb" {
			t.Fatalf("%s: bond0's qdiscs %+v", prof, b.Qdisc)
		}
		if b.QdiscRestarts == 0 {
			t.Fatalf("%s: bond0's htb never dequeued", prof)
		}
		var slaves uint64
		for j, n := range b.SlaveTx {
			if n == 0 {
				t.Errorf("%s: slave %d got nothing: %v", prof, j, b.SlaveTx)
			}
			slaves += n
		}
		if slaves != b.TxPackets {
			t.Errorf("%s: bond0 handed its slaves %d, counted %d", prof, slaves, b.TxPackets)
		}
		trips[i] = float64(b.QdiscRestarts) / float64(b.RestartPackets)
		if prof == "4.7" && b.RestartPackets != b.QdiscRestarts {
			t.Errorf("4.7: %d skbs in %d restarts: htb bulked before 4d202a0d1", b.RestartPackets, b.QdiscRestarts)
		}
	}
	if trips[1] >= trips[0] {
		t.Errorf("dequeuer's root-lock round trips per packet: 4.7 %.2f, 4.8 %.2f: want fewer with the bulk", trips[0], trips[1])
	}
}

// A bond has noqueue until tc gives it a qdisc; a pfifo then takes the
// device's tx_queue_len (1000), as on a real bond since IFF_NO_QUEUE
// replaced tx_queue_len 0. Its slaves keep the run's qdisc, unless tc
// names one of them.
func TestBondQdiscDefaults(t *testing.T) {
	s := e4Host("6.18")
	s.TC = nil
	s.Duration = 2 * sim.Millisecond
	rep := mustRun(t, s)
	if q := device(t, rep, "bond0").Qdisc; len(q) != 1 || q[0].Kind != "noqueue" {
		t.Errorf("bond0's qdiscs %+v, want noqueue", q)
	}
	if q := device(t, rep, "eth1").Qdisc; len(q) == 0 || q[0].Kind != "mq" {
		t.Errorf("eth1's qdiscs %+v, want mq", q)
	}
	s.TC = []TCBatch{{Name: "t.tc", Text: "qdisc add dev bond0 root pfifo\nqdisc replace dev eth1 root pfifo limit 50\n"}}
	rep = mustRun(t, s)
	if q := device(t, rep, "bond0").Qdisc; len(q) != 1 || q[0].Kind != "pfifo" || q[0].Options != "limit 1000p" {
		t.Errorf("bond0's qdiscs %+v, want pfifo limit 1000p", q)
	}
	if q := device(t, rep, "eth0").Qdisc; len(q) == 0 || q[0].Kind != "mq" {
		t.Errorf("eth0's qdiscs %+v, want mq", q)
	}
	if q := device(t, rep, "eth1").Qdisc; len(q) != 1 || q[0].Kind != "pfifo" || q[0].Options != "limit 50p" || q[0].SentPackets == 0 {
		t.Errorf("eth1's qdiscs %+v, want a pfifo limit 50p that sent", q)
	}
}

// Bad bonds fail setup with ip's or the kernel's words: a loop of bonds,
// a tc command on a device the host lacks.
func TestBondRefusals(t *testing.T) {
	for _, tc := range []struct{ bond, tc, want string }{
		{"bond0 mode balance-rr slaves bond1; bond1 mode balance-rr slaves bond0", "",
			"--bond (device.bond): ip link set bond0 master bond1: RTNETLINK answers: Device or resource busy"},
		{"mode balance-xor xmit_hash_policy layer3+4 slaves eth0,eth0", "",
			"--bond (device.bond): ip link set eth0 master bond0: Error: Device is in use and cannot be enslaved. (eth0 is a slave of bond0)"},
		{"mode balance-rr slaves bond3", "", `--bond (device.bond): Error: argument "bond3" is wrong: Device does not exist (no bond of that name)`},
		{"mode balance-rr slaves 2", "qdisc add dev eth7 root pfifo\n", "eth7"},
		{"mode fast slaves 2", "", `--bond (device.bond): Error: argument "fast" is wrong: invalid mode`},
	} {
		s := e4Host("6.18")
		s.Bond, s.TC = tc.bond, nil
		if tc.tc != "" {
			s.TC = []TCBatch{{Name: "t.tc", Text: tc.tc}}
		}
		_, err := Run(s, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", tc.bond, err, tc.want)
		}
	}
}

// netperf's launch answers each sender's control exchange on the RX
// side; on a bond the reply arrives through a slave (the peer switch's
// hash picks it), and the run goes on as without a bond.
func TestBondWithLaunch(t *testing.T) {
	s := e4Host("6.18")
	s.Workload.Launch = 100 * sim.Microsecond
	s.Duration = 3 * sim.Millisecond
	rep := mustRun(t, s)
	if !rep.AccountingOK || rep.TxPackets == 0 {
		t.Errorf("tx %d, accounting %v %s", rep.TxPackets, rep.AccountingOK, rep.AccountingError)
	}
}

// The processor decides whether HTB stays backlogged once it bulks, and
// so E4's NUMA gain (scripts/e4.tengo names haswell-ep): with senders
// over both sockets, a two-socket Xeon E5-2699 v3's measured line
// latencies leave every enqueue's round trip short enough that 4.8's
// bulk of 9 finds HTB full, and the gain is larger than on E1's 2025
// processor, whose dearer transfers drain HTB after the change.
func TestE4ProcessorDecidesNUMAGain(t *testing.T) {
	gain := map[string]float64{}
	for _, cpu := range []string{"haswell-ep", sim.DefaultCPU} {
		var pps [2]float64
		for i, prof := range []string{"4.7", "4.8"} {
			s := e4Host(prof)
			s.CPU = cpu
			s.Workload.Placement = "0-11" // one sender per core, both sockets
			s.Duration = 6 * sim.Millisecond
			rep := mustRun(t, s)
			if !rep.AccountingOK {
				t.Fatalf("%s %s: accounting: %s", cpu, prof, rep.AccountingError)
			}
			if cpu == "haswell-ep" && rep.Setup.CPU != cpu {
				t.Errorf("setup.cpu %q, want %q", rep.Setup.CPU, cpu)
			}
			b := device(t, rep, "bond0")
			if cpu == "haswell-ep" && prof == "4.8" {
				if bulk := float64(b.RestartPackets) / float64(b.QdiscRestarts); bulk < 4 {
					t.Errorf("haswell-ep 4.8: %.2f skbs a restart: HTB not backlogged", bulk)
				}
			}
			pps[i] = rep.TxPps
		}
		gain[cpu] = pps[1] / pps[0]
	}
	if gain["haswell-ep"] <= gain[sim.DefaultCPU] {
		t.Errorf("4.8/4.7 across sockets: haswell-ep %.2fx, default %.2fx: want the larger gain where transfers are cheaper", gain["haswell-ep"], gain[sim.DefaultCPU])
	}
	t.Logf("4.8/4.7 across sockets: haswell-ep %.2fx, default %.2fx", gain["haswell-ep"], gain[sim.DefaultCPU])
}
