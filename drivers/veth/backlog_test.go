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
