package veth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func setup(nq int) driver.Setup {
	return driver.Setup{Name: "veth0", NumTxQ: nq, NumCPUs: 4, Costs: sim.DefaultCosts()}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		args    []string
		napi    bool
		vectors int
		wantErr string
	}{
		// The backlogs are the host's: one idle vector, or the rqs' NAPIs.
		{args: nil, vectors: 1},
		{args: []string{"backlog", "10"}, wantErr: "net.core.netdev_max_backlog"},
		{args: []string{"gro", "on"}, napi: true, vectors: 2},
		{args: []string{"napi", "on", "gro", "off"}, napi: true, vectors: 2},
		{args: []string{"gro", "on", "gro", "off"}, vectors: 1},
		{args: []string{"gro", "yes"}, wantErr: "must be on or off"},
		{args: []string{"rx-udp-gro-forwarding", "1"}, wantErr: `rx-udp-gro-forwarding "1" must be on or off`},
		{args: []string{"xdp", "on"}, wantErr: "unknown option"},
		{args: []string{"gro"}, wantErr: "needs a value"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			v := &Veth{}
			info, err := v.Init(setup(2), tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.napi != tc.napi || info.Vectors != tc.vectors || !info.LLTX || !info.NoQueue || info.BQL {
				t.Errorf("napi %v info %+v; want napi %v, %d vectors, lltx, noqueue, no BQL", v.napi, info, tc.napi, tc.vectors)
			}
		})
	}
}

// The default backlog path: never BUSY, never stops; every skb of a
// bulk goes to the host's backlog (which drops, not veth: f.Dropped
// stays 0 when it refuses).
func TestBacklogPath(t *testing.T) {
	v := &Veth{}
	if _, err := v.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	f.OnCPU = 2
	rest, rc := f.Xmit(v, 0, f.Packets(0, 150, 100))
	f.RxFull = true
	rest2, rc2 := f.Xmit(v, 0, f.Packets(0, 10, 100))
	// A refused skb is NET_XMIT_DROP, the bulk's code its last's.
	if len(rest)+len(rest2) != 0 || rc != driver.TxOK || rc2 != driver.TxDrop || f.Dropped[0] != 0 || f.Stops[0] != 0 {
		t.Fatalf("rest %d rc %#x %#x dropped %d stops %d; want 0, OK, DROP, 0, 0", len(rest)+len(rest2), rc, rc2, f.Dropped[0], f.Stops[0])
	}
	if len(f.Rx) != 150 || f.RxDropped[0] != 10 || len(f.Held) != 0 {
		t.Fatalf("backlog took %d refused %d, still held %d", len(f.Rx), f.RxDropped[0], len(f.Held))
	}
}

// The NAPI path with a qdisc: a full ring stops the txq with BUSY, the
// peer NAPI is scheduled (5442a9da6978: __veth_xdp_flush after the stop,
// a no-op here as the first skb scheduled it, rx_notify_masked) on this
// CPU, and veth_poll wakes the txq at its end even with the ring still
// nearly full (no threshold).
func TestNapiBackpressure(t *testing.T) {
	v := &Veth{}
	if _, err := v.Init(setup(2), []string{"napi", "on"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 2, false)
	f.OnCPU = 3
	rest, rc := f.Xmit(v, 1, f.Packets(1, 300, 100))
	if rc != driver.TxBusy || len(rest) != 300-RingSize || !f.DrvXoff[1] || f.Dropped[1] != 0 {
		t.Fatalf("rc %#x rest %d stopped %v dropped %d; want BUSY at the %dth packet", rc, len(rest), f.DrvXoff[1], f.Dropped[1], RingSize+1)
	}
	if n := len(f.Events); n < 1 || f.Events[n-1] != "stop" || !v.rings[1].masked {
		t.Fatalf("events end with %v, masked %v; want the stop with the peer NAPI scheduled", f.Events[max(0, n-3):], v.rings[1].masked)
	}
	if len(f.Local) != 1 || f.Local[0] != 1 {
		t.Fatalf("scheduled NAPIs %v, want rq 1's once", f.Local)
	}
	work, done := v.Poll(f, 1, NapiWeight)
	if work != NapiWeight || done {
		t.Fatalf("poll: work %d done %v, want %d, not done", work, done, NapiWeight)
	}
	if f.DrvXoff[1] || f.Wakes[1] != 1 || f.Scheds[1] != 1 {
		t.Fatalf("after one poll: stopped %v wakes %d scheds %d; want woken once (no threshold)", f.DrvXoff[1], f.Wakes[1], f.Scheds[1])
	}
	if got := v.rings[1].len(); got != RingSize-NapiWeight {
		t.Fatalf("ring holds %d, want %d", got, RingSize-NapiWeight)
	}
	// Requeue and drain through the pump: all packets arrive, none drop.
	f.Poll(v, 1, nil)
	rest, _ = f.Xmit(v, 1, rest)
	f.Poll(v, 1, nil)
	if len(rest) != 0 || f.Consumed[1] != 300 || len(f.Held) != 0 {
		t.Fatalf("rest %d consumed %d held %d", len(rest), f.Consumed[1], len(f.Held))
	}
	s := v.Stats()[1]
	if s.Packets != 300 || s.Busy != 1 || s.Stopped != 1 || s.Restart != f.Wakes[1] {
		t.Fatalf("stats %+v", s)
	}
}

// The NAPI path under noqueue: a full ring drops (priv->dropped).
func TestNapiNoqueueDrops(t *testing.T) {
	v := &Veth{}
	if _, err := v.Init(setup(1), []string{"napi", "on"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	f.Qdisc[0] = false
	rest, rc := f.Xmit(v, 0, f.Packets(0, 300, 100))
	// The last skb was dropped: NET_XMIT_DROP.
	if rc != driver.TxDrop || len(rest) != 0 || f.Dropped[0] != 300-RingSize || f.Stops[0] != 0 {
		t.Fatalf("rc %#x rest %d dropped %d stops %d", rc, len(rest), f.Dropped[0], f.Stops[0])
	}
	f.Poll(v, 0, nil)
	if f.Consumed[0] != RingSize {
		t.Fatalf("consumed %d, want %d", f.Consumed[0], RingSize)
	}
	var peerDropped uint64
	for _, c := range v.Stats()[0].Extra {
		if c.Name == "peer_dropped" {
			peerDropped = c.Value
		}
	}
	if peerDropped != 300-RingSize {
		t.Fatalf("peer_dropped %d", peerDropped)
	}
}

// veth_skb_is_eligible_for_gro with veth's TSO on: GRO alone takes no
// skb to the peer's NAPI; rx-udp-gro-forwarding takes a socket's UDP and
// ICMP skbs (sock_wfree), never TCP's (tcp_wfree) or a forwarded one; an
// XDP program ("napi on") takes every skb. The rest go to this CPU's
// backlog, the host's (NetifRx).
func TestGROEligibility(t *testing.T) {
	udp := skb.Packet{Sock: 3, Keys: skb.FlowKeys{Proto: 17}}
	icmp := skb.Packet{Sock: -2, Keys: skb.FlowKeys{Proto: 1}} // a probe's socket
	tcp := skb.Packet{Sock: 3, Keys: skb.FlowKeys{Proto: 6}}
	fwd := skb.Packet{Sock: -1, Keys: skb.FlowKeys{Proto: 17}}
	for _, tc := range []struct {
		args []string
		pkt  skb.Packet
		ring bool
	}{
		{[]string{"gro", "on"}, udp, false},
		{[]string{"gro", "on"}, tcp, false},
		{[]string{"gro", "on", "rx-udp-gro-forwarding", "on"}, udp, true},
		{[]string{"gro", "on", "rx-gro-list", "on"}, icmp, true},
		{[]string{"gro", "on", "rx-udp-gro-forwarding", "on"}, tcp, false},
		{[]string{"gro", "on", "rx-udp-gro-forwarding", "on"}, fwd, false},
		{[]string{"rx-udp-gro-forwarding", "on"}, udp, false}, // no NAPI without GRO
		{[]string{"napi", "on"}, tcp, true},
		{[]string{"napi", "on"}, fwd, true},
	} {
		t.Run(fmt.Sprint(tc.args, "_proto", tc.pkt.Keys.Proto, "_sock", tc.pkt.Sock), func(t *testing.T) {
			v := &Veth{}
			if _, err := v.Init(setup(2), tc.args); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 2, false)
			f.OnCPU = 1
			p := tc.pkt
			p.Handle, p.Len, p.Queue = f.NextH, 100, 1
			f.NextH++
			if rest, rc := f.Xmit(v, 1, []skb.Packet{p}); len(rest) != 0 || rc != driver.TxOK {
				t.Fatalf("rest %d rc %#x", len(rest), rc)
			}
			onRing := v.napi && v.rings[1].len() == 1
			if onRing != tc.ring || len(f.Rx) == 1 == tc.ring {
				t.Fatalf("on the ring %v (want %v), to the backlog %d", onRing, tc.ring, len(f.Rx))
			}
			if !tc.ring {
				if len(f.Local) != 0 || f.Rx[0].CPU != 1 {
					t.Errorf("scheduled %v, netif_rx on cpu %d; want no veth NAPI, cpu 1's backlog", f.Local, f.Rx[0].CPU)
				}
				return
			}
			if len(f.Local) != 1 || f.Local[0] != 1 { // rq 1's NAPI
				t.Fatalf("scheduled %v, want vector 1", f.Local)
			}
			f.Poll(v, f.Local[0], nil)
			if f.Consumed[1] != 1 {
				t.Errorf("consumed %d, want the packet delivered", f.Consumed[1])
			}
		})
	}
}

// The ring's drops and the backlog's are one counter, as veth keeps
// both in priv->dropped: a full ring under noqueue drops UDP skbs, a
// full backlog (the host's NET_RX_DROP) TCP ones.
func TestPeerDroppedOneCounter(t *testing.T) {
	v := &Veth{}
	if _, err := v.Init(setup(1), []string{"gro", "on", "rx-udp-gro-forwarding", "on"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	f.Qdisc[0] = false
	batch := f.Packets(0, RingSize+2+4, 100)
	for i := range batch {
		batch[i].Sock, batch[i].Keys.Proto = 3, 17
		if i >= RingSize+2 {
			batch[i].Keys.Proto = 6
		}
	}
	if rest, rc := f.Xmit(v, 0, batch[:RingSize+2+2]); len(rest) != 0 || rc != driver.TxOK {
		t.Fatalf("rest %d rc %#x", len(rest), rc)
	}
	f.RxFull = true // the backlog takes two TCP skbs, then is full
	if rest, rc := f.Xmit(v, 0, batch[RingSize+2+2:]); len(rest) != 0 || rc != driver.TxDrop {
		t.Fatalf("rest %d rc %#x", len(rest), rc)
	}
	var n int
	var dropped uint64
	for _, c := range v.Stats()[0].Extra {
		if c.Name == "peer_dropped" {
			n, dropped = n+1, c.Value
		}
	}
	if n != 1 || dropped != 2+2 || f.Dropped[0] != 2 || f.RxDropped[0] != 2 {
		t.Fatalf("%d peer_dropped counters, value %d, %d dropped by veth, %d by the backlog; want one of 4, 2 and 2", n, dropped, f.Dropped[0], f.RxDropped[0])
	}
}
