package netdev

import (
	"testing"

	_ "github.com/txlab/txlab/plugins/fq"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// chargedSock is an skb owner that counts what it is charged
// (skb_set_owner_w) and what sock_wfree gives back.
type chargedSock struct {
	id       int32
	owner    skb.OwnerID
	charged  int
	released int
}

func (o *chargedSock) Release(_ *sim.CPU, s *skb.SKB) { o.released += int(s.TrueSize) }

// With the llist (6.19-rc1), while the root lock is held the packets
// senders push wait on q->defer_list: still charged to their sockets
// (sk_wmem_alloc counts them until sock_wfree) and invisible to the
// qdisc, whose per-flow limit sees only what it was handed. fq's
// flow_limit 10 is here below what each socket pushes: fq drops
// nothing while the lock is held, and once the first pusher takes the
// lock and hands fq the batch, fq drops each socket's excess over 10,
// freeing it (Release) on the draining CPU.
func TestDeferListCharged(t *testing.T) {
	const senders, each = 4, 25
	truesize := skb.TruesizeUDP(120 + 8 + 20)
	h := newHarness(t, profile(t, "6.19-rc1"), senders+1, "test", 1, "fq", "flow_limit", "10")
	testDrv.refuse = 0 // the ring takes nothing: what fq keeps stays in fq
	q := h.dev.Root
	socks := make([]*chargedSock, senders)
	for i := range socks {
		socks[i] = &chargedSock{id: int32(i)}
		socks[i].owner = h.n.Pool.AddOwner(socks[i])
	}
	hold := 200 * sim.Microsecond
	h.on(senders, 0, func(c *sim.CPU) { // a runner holding the root lock
		q.lock.Lock(c, h.n.site.rootRun)
		c.SleepUntil(hold)
		c.Sync()
		q.lock.Unlock(c)
	})
	var deferAt, qdiscAt, droppedAt int
	perSock := map[int32]int{}
	for i := 0; i < senders; i++ {
		o := socks[i]
		h.on(i, sim.Microsecond, func(c *sim.CPU) {
			for k := 0; k < each; k++ {
				c.Spend(1000)
				s := h.skb(c, i)
				s.TrueSize, s.Sock, s.Owner = truesize, o.id, o.owner
				o.charged += int(truesize)
				h.n.DevQueueXmit(c, h.dev, s)
			}
		})
	}
	dropped := map[int32]int{}
	h.n.Hooks.Drop = func(_ *sim.CPU, s *skb.SKB, _ skb.DropReason) { dropped[s.Sock]++ }
	// Just before the lock is let go: every packet pushed is on the
	// defer list. The first pusher found the list empty and spins on
	// the root lock with its one skb there; the others go on pushing.
	h.on(senders, hold-sim.Microsecond, func(c *sim.CPU) {
		for s := q.deferHead; s != nil; s = s.Next {
			deferAt++
			perSock[s.Sock]++
		}
		qdiscAt = q.held
		droppedAt = int(h.n.Drops[skb.DropFQFlowLimit])
	})
	h.run(sim.Millisecond)

	if want := (senders-1)*each + 1; deferAt != want || qdiscAt != 0 || droppedAt != 0 {
		t.Fatalf("with the root lock held: %d on the defer list, %d in fq, %d dropped; want %d, 0, 0",
			deferAt, qdiscAt, droppedAt, want)
	}
	spinning := 0
	for _, o := range socks {
		n := perSock[o.id]
		if n == 1 {
			spinning++
		} else if n != each {
			t.Errorf("socket %d: %d of its skbs on the defer list, want %d (or 1 for the spinning first pusher)", o.id, n, each)
		}
	}
	if spinning != 1 {
		t.Errorf("%d sockets with a single skb on the defer list, want the one first pusher", spinning)
	}
	// After the drain: fq kept at most flow_limit of each socket (the
	// ring refuses all: a few wait requeued); the rest was dropped and
	// only those were given back to their socket, by sock_wfree. What
	// is still charged is exactly what is still held.
	held := 0
	for _, o := range socks {
		if dropped[o.id] == 0 {
			t.Errorf("socket %d: nothing dropped over fq's flow_limit 10 of %d pushed", o.id, each)
		}
		if o.released != dropped[o.id]*int(truesize) {
			t.Errorf("socket %d: %d bytes given back for %d drops of %d", o.id, o.released, dropped[o.id], truesize)
		}
		held += (o.charged - o.released) / int(truesize)
	}
	// Every skb still charged is in flight somewhere: in fq, requeued,
	// deferred, on the ring, or on a CPU between two of those when the
	// run stopped (a requeue retried by net_tx_action).
	if in := h.n.InFlightPackets(); int64(held) != in {
		t.Errorf("%d skbs charged to the sockets, %d in flight (%v)", held, in, h.n.InFlight())
	}
}
