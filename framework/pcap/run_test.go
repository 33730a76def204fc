package pcap_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/pcap"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

func spec() run.Spec {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Queues = 2
	s.Qdisc = "mq pfifo"
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 2, PacketSize: 120, Flows: 8, Rate: 1e6}
	s.Duration, s.Warmup = 2*sim.Millisecond, 0
	return s
}

func captured(t *testing.T, s run.Spec) (*report.Report, []byte, uint64) {
	t.Helper()
	var b bytes.Buffer
	c, err := pcap.New(&b, pcap.Config{Window: pcap.Window{Count: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := run.RunWith(s, run.Options{Observe: func(n *netdev.Net, d *netdev.Device) error { c.Attach(n, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	n, cut, err := c.Close()
	if err != nil || cut {
		t.Fatalf("close: %v (cut %v)", err, cut)
	}
	return rep, b.Bytes(), n
}

// Every packet handed to the driver is in the capture, in time order; the capture changes nothing in the
// run and repeats byte for byte.
func TestCaptureARun(t *testing.T) {
	s := spec()
	rep, file, n := captured(t, s)
	// In flight and not in the host's places: in the driver's rings or
	// on a CPU between the sender and the qdisc.
	rest := rep.InFlightWhere["driver"] + rep.InFlightWhere["cpu"]
	t.Logf("%d captured, %d transmitted, %d in rings or on CPUs, requeues %d %d", n, rep.TxPackets, rest, rep.Queues[0].Requeues, rep.Queues[1].Requeues)
	// A packet the driver refused (NETDEV_TX_BUSY) is tapped again on
	// its retry, as on a real host.
	retries := rep.Queues[0].Requeues + rep.Queues[1].Requeues
	if n < rep.TxPackets || n > rep.TxPackets+uint64(rest)+retries {
		t.Errorf("captured %d: want every transmitted packet (%d), at most those in the rings and retried (%d + %d) more",
			n, rep.TxPackets, rest, retries)
	}
	r, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	var got uint64
	for {
		_, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ts := ci.Timestamp.UnixNano(); ts < last || ts > int64(s.Duration)+100_000 {
			t.Fatalf("packet %d at %d ns after one at %d", got, ts, last)
		} else {
			last = ts
		}
		got++
	}
	if got != n {
		t.Errorf("file holds %d packets, Close said %d", got, n)
	}
	rep2, file2, _ := captured(t, s)
	if !bytes.Equal(file, file2) {
		t.Error("the same run gave a different capture")
	}
	plain, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain.SimWallNs, rep2.SimWallNs = 0, 0
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(rep2)
	if !bytes.Equal(a, b) {
		t.Error("capturing changed the report")
	}
}
