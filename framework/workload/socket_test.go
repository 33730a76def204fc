package workload

import (
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// The kernel's send-buffer rules: sock_alloc_send_pskb allocates while
// sk_wmem_alloc_get < sk_sndbuf (so the last skb overshoots) and sleeps
// otherwise; sock_wfree wakes the writer only once sock_writeable:
// sk_wmem_alloc (with its bias of 1) below sndbuf / 2.
func TestSocketSleepsAndWakesAsTheKernel(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	truesize := skb.TruesizeUDP(120 + 8 + 20) // 960
	sock := &Socket{Sndbuf: 10 * int(truesize)}
	var beforeSleep, atWake int
	charged := 0
	e.NewTask("sender", []int{0}, func(tk *sim.Task) {
		for charged < 12 {
			if sock.Wmem >= sock.Sndbuf && beforeSleep == 0 {
				beforeSleep = charged
			}
			c := sock.waitForWmem(tk)
			c.Spend(100)
			sock.Wmem += int(truesize)
			charged++
		}
	}).Start(0)
	e.NewTask("completion", []int{1}, func(tk *sim.Task) {
		c := tk.CPU()
		for i := 0; i < 8; i++ {
			c.SleepUntil(sim.Time(10+i) * sim.Microsecond)
			c.Sync()
			sock.Release(c, &skb.SKB{Packet: skb.Packet{TrueSize: truesize}})
			if sock.Wakeups == 1 && atWake == 0 {
				atWake = sock.Wmem
			}
		}
	}).Start(0)
	if err := e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if beforeSleep != 10 {
		t.Errorf("sent %d skbs before sleeping, want 10 (the 10th while wmem 8640 < 9600)", beforeSleep)
	}
	if sock.Sleeps != 1 || sock.Wakeups != 1 {
		t.Errorf("sleeps %d wakeups %d, want 1 and 1", sock.Sleeps, sock.Wakeups)
	}
	// 9600 - 6 x 960 = 3840: the first wmem + 1 below 4800.
	if atWake != 3840 {
		t.Errorf("woken with wmem %d, want 3840 (sock_writeable: wmem + 1 < sndbuf / 2)", atWake)
	}
	if charged != 12 {
		t.Errorf("charged %d, want 12", charged)
	}
}

// How many skbs a default send buffer holds before sock_alloc_send_pskb
// sleeps depends on the skb's truesize and on net.core.wmem_default,
// SK_WMEM_DEFAULT = SKB_TRUESIZE(256) x 256, both of which grow with
// CONFIG_MAX_SKB_FRAGS: 222 skbs of 960 bytes in 212992 with the
// default 17, 233 of 1408 in 327680 with 45 (Google's production
// kernels); a kernel before 6.3 heads its small skbs from kmalloc-512
// (768 bytes of truesize), 278 of them.
func TestSndbufHoldsByMaxSkbFrags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frags int
		old   bool
		want  int
	}{{"17 frags", 17, false, 222}, {"45 frags", 45, false, 233}, {"4.7, 17 frags", 17, true, 278}} {
		e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
		if err != nil {
			t.Fatal(err)
		}
		cfg := netdev.Config{MaxSkbFrags: tc.frags, NoSmallHeadCache: tc.old, SlabCPUPartial: netdev.SlabCPUPartialDefault}
		w := &Workload{Spec: Spec{PacketSize: 120}, truesize: cfg.TruesizeUDP}
		_, truesize := w.lens()
		sock := &Socket{Sndbuf: cfg.SndbufBytes()}
		charged := 0
		e.NewTask("sender", []int{0}, func(tk *sim.Task) {
			for {
				c := sock.waitForWmem(tk)
				c.Spend(100)
				sock.Wmem += int(truesize)
				charged++
			}
		}).Start(0)
		if err := e.Run(sim.Millisecond); err != nil {
			t.Fatal(err)
		}
		e.Close()
		if charged != tc.want || sock.Sleeps != 1 {
			t.Errorf("%s: %d skbs of truesize %d charged before sleeping (%d sleeps), want %d",
				tc.name, charged, truesize, sock.Sleeps, tc.want)
		}
	}
}

// skb_set_owner_w sets ooo_okay (d365c9bca35c) only on an skb charged
// while nothing else of the socket is in flight, and never without it.
func TestSocketChargeOooOkay(t *testing.T) {
	for _, on := range []bool{true, false} {
		sock := &Socket{Sndbuf: 212992}
		b := func() *skb.SKB { return &skb.SKB{Packet: skb.Packet{TrueSize: 960}} }
		free := func(*skb.SKB) { sock.Wmem -= 960 } // sock_wfree's accounting
		first, second := b(), b()
		sock.charge(first, on)
		sock.charge(second, on)
		free(first)
		third := b()
		sock.charge(third, on)
		free(second)
		free(third)
		fourth := b()
		sock.charge(fourth, on)
		got := []bool{first.OooOkay, second.OooOkay, third.OooOkay, fourth.OooOkay}
		want := []bool{on, false, false, on}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("ooo_okay %v: skb %d has ooo_okay %v, want %v (wmem before it: in flight or not)", on, i+1, got[i], want[i])
			}
		}
	}
}

// TCP's ooo_okay (726e9e8b94b9): a segment may change queue when
// sk_wmem_alloc is under SKB_TRUESIZE(1) (nothing of the socket in a
// host queue: even a pure ACK's 960 bytes are more), or when nothing it
// sent awaits an ACK; otherwise it keeps the flow's queue.
func TestTCPOooOkay(t *testing.T) {
	ack, seg := int64(tcp.AckTruesize()), int64(tcp.Truesize(1))
	for _, tc := range []struct {
		wmem int64
		out  uint32
		want bool
	}{
		{0, 0, true},
		{ack, 10, false}, // a queued pure ACK counts: 960 >= SKB_TRUESIZE(1)
		{ack, 0, true},   // an ACK-only socket: its retransmit queue is empty
		{seg, 0, true},   // data in a queue, but all of it acked already
		{seg, 10, false}, // data queued and unacked: stay
		{seg + ack, 1, false},
	} {
		if got := tcpOooOkay(tc.wmem, tc.out); got != tc.want {
			t.Errorf("wmem %d, packets out %d: ooo_okay %v, want %v", tc.wmem, tc.out, got, tc.want)
		}
	}
}
