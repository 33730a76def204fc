package veth_test

import (
	"os"
	"testing"

	_ "github.com/txlab/txlab/drivers/veth"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/plugin/plugintest"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
)

// The test binary also serves the built-ins as a plugin (--isolate).
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	os.Exit(plugintest.RunChecked(m))
}

func ethtool(q report.Queue, key string) int64 {
	for _, kv := range q.Ethtool {
		if kv.Key == key {
			return kv.Value
		}
	}
	return -1
}

// End to end through the host: the backlog path (default, and with GRO
// alone: udp_rate's skbs have no socket, so none is eligible), the NAPI
// path under noqueue (drops on a full ring) and under a real qdisc
// (backpressure: stop + requeue + wake from veth_poll, no device drops).
func TestEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		qdisc string
	}{
		{"backlog noqueue", nil, ""},
		{"gro alone: backlog", []string{"gro", "on"}, ""},
		{"napi noqueue", []string{"napi", "on"}, ""},
		{"napi pfifo", []string{"napi", "on"}, "pfifo limit 100000"},
		{"napi pfifo_fast", []string{"napi", "on"}, "pfifo_fast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := run.Default()
			s.Profile = "6.18"
			s.Driver, s.DriverArgs, s.RateBps = "veth", tc.args, 0
			s.Sockets, s.Cores, s.Threads = 1, 8, 1
			s.Queues, s.Qdisc = 1, tc.qdisc
			// Open loop, and a peer receive slower than the 4 senders per
			// rx queue together: the ring fills.
			s.Set = []string{"cost.peer_rx=4000"}
			s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 8, PacketSize: 64, Flows: 64, Rate: 20e6}
			s.Duration, s.Warmup = 3*sim.Millisecond, sim.Millisecond
			rep, err := run.Run(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TxPackets == 0 {
				t.Fatal("nothing transmitted")
			}
			var sum uint64
			var busy, wakes int64
			for _, q := range rep.Queues {
				sum += q.TxPackets
				busy += ethtool(q, "tx_busy")
				wakes += ethtool(q, "peer_wake")
			}
			if sum != rep.TxPackets {
				t.Errorf("queues sum to %d, device sent %d", sum, rep.TxPackets)
			}
			dev := rep.Drops["TX_DEVICE"]
			switch {
			case tc.args == nil:
				if busy != 0 || dev != 0 || wakes >= 0 {
					t.Errorf("backlog path: busy %d, device drops %d, peer_wake %d (want no ring counters)", busy, dev, wakes)
				}
			case tc.args[0] == "gro":
				if busy != 0 || dev != 0 || wakes != 0 || ethtool(rep.Queues[0], "ring_max") != 0 {
					t.Errorf("GRO alone: busy %d, device drops %d, peer_wake %d, ring_max %d (want the ring never used)", busy, dev, wakes, ethtool(rep.Queues[0], "ring_max"))
				}
			case tc.qdisc == "":
				if busy != 0 || dev == 0 {
					t.Errorf("noqueue: busy %d device drops %d; want drops, never BUSY", busy, dev)
				}
			default:
				if dev != 0 || busy == 0 || wakes == 0 {
					t.Errorf("qdisc: device drops %d busy %d wakes %d; want backpressure instead of drops", dev, busy, wakes)
				}
			}
			t.Logf("%.2f Mpps drops %v q0 %v", rep.TxPps/1e6, rep.Drops, rep.Queues[0].Ethtool)
		})
	}
}

// The host's net.core.netdev_max_backlog reaches veth's
// enqueue_to_backlog: 8 senders on one pfifo, whose owner hands up to
// dev_tx_weight skbs to veth with BHs off before its backlog NAPI runs;
// a backlog of 10 drops, the default's does not.
func TestMaxBacklogSysctl(t *testing.T) {
	drops := map[string]uint64{}
	for _, set := range []string{"netdev_max_backlog=1000", "netdev_max_backlog=10"} {
		s := run.Default()
		s.Profile = "6.18"
		s.Driver, s.DriverArgs, s.RateBps = "veth", nil, 0
		s.Sockets, s.Cores, s.Threads = 1, 8, 1
		s.Queues, s.Qdisc = 1, "pfifo limit 10000"
		s.Set = []string{"cost.peer_rx=100", set}
		s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 8, PacketSize: 64, Flows: 16, Rate: 40e6}
		s.Duration, s.Warmup = 2*sim.Millisecond, sim.Millisecond
		rep, err := run.Run(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		drops[set] = rep.Drops["CPU_BACKLOG"]
	}
	if drops["netdev_max_backlog=1000"] != 0 || drops["netdev_max_backlog=10"] == 0 {
		t.Errorf("CPU_BACKLOG drops %v, want some with netdev_max_backlog 10 only", drops)
	}
}

// A full softnet backlog drops an upload's ACKs too (they arrive on veth
// and join the backlog of the CPU the flow's data left from): the
// report counts them in softnet_dropped with veth's own CPU_BACKLOG
// drops, and apart in local_backlog_dropped, not in drops (an ACK is not
// offered: the accounting identity holds without it).
func TestLocalBacklogDropsReported(t *testing.T) {
	s := run.Default()
	s.Profile = "6.18"
	s.Driver, s.DriverArgs, s.RateBps = "veth", nil, 0
	s.Sockets, s.Cores, s.Threads = 1, 2, 1
	s.Queues, s.Qdisc = 1, "pfifo limit 10000"
	s.Set = []string{"netdev_max_backlog=2"}
	s.Workload = workload.Spec{Kind: workload.TCPStream, Flows: 8, CC: tcp.CCCubic, Start: sim.Millisecond,
		Path: path.Config{RTT: sim.Millisecond, Limit: path.DefaultLimit}}
	s.Duration, s.Warmup = 60*sim.Millisecond, 10*sim.Millisecond
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AccountingOK {
		t.Fatal(rep.AccountingError)
	}
	local, sd, tx := rep.Counters["local_backlog_dropped"], rep.Counters["softnet_dropped"], rep.Drops["CPU_BACKLOG"]
	if local == 0 || sd != local+tx {
		t.Errorf("local_backlog_dropped %d, softnet_dropped %d, CPU_BACKLOG %d: want local drops, softnet = both", local, sd, tx)
	}
	// ip -s link: veth0 received the ACKs (enqueue_to_backlog's
	// dev_core_stats_rx_dropped_inc) and its priv->dropped is what
	// veth_xmit lost (tx_dropped); its peer the other way round.
	want := report.Link{Name: "eth0", RxDropped: local, TxDropped: tx + rep.Drops["TX_DEVICE"],
		Peer: &report.LinkPeer{RxDropped: tx, TxDropped: local}}
	if len(rep.Links) != 1 || rep.Links[0].Peer == nil || rep.Links[0].Name != want.Name || *rep.Links[0].Peer != *want.Peer ||
		rep.Links[0].RxDropped != want.RxDropped || rep.Links[0].TxDropped != want.TxDropped {
		t.Errorf("links %+v, want [%+v peer %+v]", rep.Links, want, *want.Peer)
	}
	// softnet_stat's dropped column per CPU sums to softnet_dropped.
	var rows uint64
	for _, r := range rep.Softnet {
		rows += r.Dropped
		if r.BacklogLen != r.InputQlen+r.ProcessQlen || r.ReceivedRPS != 0 || r.FlowLimitCount != 0 {
			t.Errorf("softnet row %+v: backlog_len is input_qlen + process_qlen, no RPS, no flow limit", r)
		}
	}
	if rows != sd {
		t.Errorf("softnet rows' dropped sum to %d, softnet_dropped %d", rows, sd)
	}
	t.Logf("local %d softnet %d CPU_BACKLOG %d drops %v links %+v softnet %+v", local, sd, tx, rep.Drops, rep.Links, rep.Softnet)
}

// softnet_stat's rows appear for every CPU that used its backlog or ran
// a NAPI, not only in the forward workload: a TCP upload over veth (its
// skbs and its ACKs through the backlog), a UDP sender over the peer's
// NAPI (veth_poll's receive is __netif_receive_skb_core's: processed).
// Each transmitted skb was processed once on the peer, and the report
// is the same with the driver out of process.
func TestSoftnetRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		wl   workload.Spec
	}{
		{"tcp over the backlog", nil, workload.Spec{Kind: workload.TCPStream, Flows: 2, CC: tcp.CCCubic, Start: sim.Millisecond,
			Path: path.Config{RTT: sim.Millisecond, Limit: path.DefaultLimit}}},
		{"udp over the peer's NAPI", []string{"napi", "on"}, workload.Spec{Kind: workload.UDPRate, Senders: 2, PacketSize: 64, Flows: 8, Rate: 1e6}},
		{"udp over the backlog", nil, workload.Spec{Kind: workload.UDPRate, Senders: 2, PacketSize: 64, Flows: 8, Rate: 1e6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := run.Default()
			s.Profile = "6.18"
			s.Driver, s.DriverArgs, s.RateBps = "veth", tc.args, 0
			s.Sockets, s.Cores, s.Threads = 1, 2, 1
			s.Queues, s.Qdisc = 1, "pfifo limit 10000"
			s.Workload = tc.wl
			s.Duration, s.Warmup = 10*sim.Millisecond, 2*sim.Millisecond
			rep := plugintest.SameInAndOut(t, s)
			if len(rep.Softnet) == 0 {
				t.Fatal("no softnet_stat rows")
			}
			var processed, polls uint64
			for _, r := range rep.Softnet {
				processed += r.Processed
				polls += r.NapiPolls
			}
			if polls == 0 {
				t.Errorf("softnet rows %+v: no NAPI polls", rep.Softnet)
			}
			if tc.wl.Kind == workload.UDPRate && processed != rep.TxPackets {
				t.Errorf("softnet processed %d, want the %d skbs the peer received", processed, rep.TxPackets)
			}
			if tc.wl.Kind == workload.TCPStream && processed <= rep.TxPackets {
				t.Errorf("softnet processed %d, want the %d data skbs and the ACKs", processed, rep.TxPackets)
			}
		})
	}
}
