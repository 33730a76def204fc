package veth

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/skb"
)

// veth_forward_skb's __netif_rx: every skb goes to the host's backlog of
// the CPU the xmit runs on (enqueue_to_backlog, its limit and its NAPI
// are the host's: framework/netdev's TestSharedBacklog); veth schedules
// no NAPI of its own, counts what the backlog took in its stats and
// what it refused (NET_RX_DROP) in priv->dropped.
func TestNetifRx(t *testing.T) {
	v := &Veth{}
	if _, err := v.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	f.OnCPU = 3
	for _, p := range f.Packets(0, 5, 100) {
		if rest, rc := f.Xmit(v, 0, []skb.Packet{p}); len(rest) != 0 || rc != driver.TxOK {
			t.Fatalf("rest %d rc %#x", len(rest), rc)
		}
	}
	f.RxFull = true
	f.Xmit(v, 0, f.Packets(0, 2, 100))
	if len(f.Rx) != 5 || f.RxDropped[0] != 2 || len(f.Local) != 0 || len(f.Held) != 0 {
		t.Fatalf("backlog took %d, refused %d, %d NAPI schedules, %d held; want 5, 2, none, none", len(f.Rx), f.RxDropped[0], len(f.Local), len(f.Held))
	}
	for _, r := range f.Rx {
		if r.CPU != 3 {
			t.Fatalf("netif_rx from cpu %d, want 3", r.CPU)
		}
	}
	s := v.Stats()[0]
	if s.Packets != 5 || s.Bytes != 500 || len(s.Extra) != 1 || s.Extra[0].Name != "peer_dropped" || s.Extra[0].Value != 2 {
		t.Fatalf("stats %+v, want 5 packets and peer_dropped 2", s)
	}
}

// veth_xmit answers a packet __netif_rx dropped (NET_RX_DROP) with
// NET_XMIT_DROP, as it does a full ring's drop under noqueue:
// dev_hard_start_xmit hands back the last packet's code, which
// noqueue's __dev_queue_xmit returns to the sender.
func TestXmitDropCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		full   bool // the backlog refuses (NET_RX_DROP)
		n      int  // packets in the bulk
		ringed int  // packets already in the ring (napi on)
		want   driver.TxCode
	}{
		{"backlog takes", nil, false, 1, 0, driver.TxOK},
		{"backlog drops", nil, true, 1, 0, driver.TxDrop},
		{"backlog drops the last of a bulk", nil, true, 3, 0, driver.TxDrop},
		{"napi ring full, noqueue", []string{"napi", "on"}, false, 1, RingSize, driver.TxDrop},
		{"napi ring takes", []string{"napi", "on"}, false, 1, 0, driver.TxOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Veth{}
			if _, err := v.Init(setup(1), tc.args); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, false)
			f.Qdisc[0] = false // noqueue
			if tc.ringed > 0 {
				f.Xmit(v, 0, f.Packets(0, tc.ringed, 100))
			}
			f.RxFull = tc.full
			rest, rc := f.Xmit(v, 0, f.Packets(0, tc.n, 100))
			if len(rest) != 0 || rc != tc.want {
				t.Fatalf("rest %d rc %#x, want none and %#x", len(rest), rc, tc.want)
			}
		})
	}
}
