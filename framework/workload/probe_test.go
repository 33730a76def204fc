package workload

import (
	"testing"

	_ "github.com/txlab/txlab/drivers/ice"
	_ "github.com/txlab/txlab/drivers/veth"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// ping's RTT ends at the reply's SO_TIMESTAMP: skb->tstamp, which
// veth's netif_rx takes as the reply arrives (netdev_tstamp_prequeue)
// and a NIC's NAPI poll as it hands the reply to the stack; neither
// the wait for NET_RX_SOFTIRQ on veth nor ping_rcv's queueing is in it.
func TestPingRTTEndsAtTheReceiveStamp(t *testing.T) {
	const sent, arrive, poll = 0, sim.Millisecond, sim.Millisecond + 200*sim.Microsecond
	for _, tc := range []struct {
		name string
		wire bool
		want sim.Time
	}{
		{"veth: netif_rx", false, arrive},
		{"nic: napi poll", true, poll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			tr := &Traffic{e: e, costs: e.Costs, dev: &netdev.Device{Info: driver.Info{Wire: tc.wire}}}
			ps := &ProbeSock{Probe: Probe{Kind: ProbePing}, tr: tr, sent: map[int64]sim.Time{}}
			p := path.Pkt{Seg: tcp.Seg{Seq: 1, Sent: sent}}
			e.At(arrive, func() { ps.arrived(e.Now(), &p) })
			e.NewTask("softirq", []int{0}, func(tk *sim.Task) {
				c := tk.CPU()
				c.SleepUntil(poll)
				c.Sync()
				ps.answer(c, &p)
			}).Start(0)
			if err := e.Run(10 * sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			if len(ps.Samples) != 1 || ps.Samples[0].RTT != tc.want {
				t.Errorf("samples %v, want one of RTT %v", ps.Samples, tc.want)
			}
		})
	}
}

// probeMaker makes the built-in qdiscs and drivers in process.
type probeMaker struct{}

func (probeMaker) Qdisc(kind string) (qdisc.Qdisc, error) {
	q, err := qdisc.New(kind)
	if err != nil {
		return nil, err
	}
	return wire.WrapQdisc(q), nil
}

func (probeMaker) Driver(name string) (driver.Driver, error) { return driver.New(name) }

// ping keeps no table of what it sent: it writes the send time into the
// echo's data, the far end returns it, and the RTT is the reply's
// receive stamp less the time it carries (iputils ping's
// gather_statistics on the echo's timeval). A request or reply lost
// anywhere takes its send time with it; ping counts it lost by the
// sequence it never saw. The model's probe kept each send time in a
// map by sequence until the reply's answer (and a veth reply's receive
// stamp in another): a request dropped in the host (a full qdisc) or
// lost on the path, or a reply lost, left its entry behind for good.
func TestPingLossLeavesNoStamp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drv   string
		rate  int64    // the NIC's line rate (0: the driver's)
		qdisc []string // the device's
		loss  float64  // the path's, each way
		drops bool     // the qdisc drops requests
	}{
		{"veth, path loss", "veth", 0, []string{"pfifo_fast"}, 0.3, false},
		{"ice, path loss", "ice", 0, []string{"pfifo_fast"}, 0.3, false},
		{"ice at 1 Mbit, qdisc drops", "ice", 1_000_000, []string{"pfifo", "limit", "2"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			cfg, err := netdev.Profile("6.18")
			if err != nil {
				t.Fatal(err)
			}
			n := netdev.NewNet(e, cfg, probeMaker{})
			spec := netdev.DeviceSpec{Name: "eth0", Driver: tc.drv, Queues: 1, RateBps: tc.rate, Qdisc: tc.qdisc}
			if tc.drv == "ice" {
				spec.RxQueues = 1
			}
			d, err := n.AddDevice(spec)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := StartTraffic(n, d, Spec{Path: path.Config{RTT: 200 * sim.Microsecond, Limit: path.DefaultLimit, Loss: tc.loss},
				Probes: []Probe{{Kind: ProbePing, Interval: 100 * sim.Microsecond}}}, &Workload{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Run(50 * sim.Millisecond); err != nil {
				t.Fatal(err)
			}
			ps := tr.Probe[0]
			lost := ps.seq - int64(len(ps.Samples))
			if ps.seq < 400 || lost < ps.seq/4 {
				t.Fatalf("%d pings, %d answered: too few lost to tell", ps.seq, len(ps.Samples))
			}
			if dropped := n.Drops[skb.DropQdiscDrop] > 0; dropped != tc.drops {
				t.Fatalf("qdisc drops %d: the case wants drops %v", n.Drops[skb.DropQdiscDrop], tc.drops)
			}
			// What may be left: the requests still in the host, and
			// those of the last RTT.
			if held, in := len(ps.sent), int(n.InFlightPackets()); held > in+3 {
				t.Errorf("after %d pings, %d lost, the probe holds %d send times (%d requests in the host)", ps.seq, lost, held, in)
			}
		})
	}
}

// The probes' sockets are unconnected, as ping and flent's netperf
// UDP_RR leave them: iputils ping sendto()s on its ICMP socket (connect
// only with -C: opt_connect_sk), and flent's netperf command has no -n
// (send_omni_inner connects a UDP socket only for local_connected).
// ping_v4_sendmsg and udp_sendmsg then route every send without
// sk_dst_set, so sk_dst_cache stays NULL and netdev_pick_tx never calls
// sk_tx_queue_set: each packet's queue is get_xps_queue's for the CPU
// it is sent from, else skb_tx_hash. A udp_stream socket is connected
// (-n) and caches its queue.
func TestProbeSocketsDoNotCacheTheirQueue(t *testing.T) {
	for _, kind := range ProbeKinds() {
		var ps any = &ProbeSock{Probe: Probe{Kind: kind}}
		if _, ok := ps.(netdev.TxQueueCache); ok {
			t.Errorf("%s probe socket caches its TX queue (sk_tx_queue_mapping); an unconnected socket has no sk_dst_cache", kind)
		}
	}
	var us any = &Socket{}
	if _, ok := us.(netdev.TxQueueCache); !ok {
		t.Errorf("udp_stream socket does not cache its TX queue; netperf -n connects it")
	}
}
