package netdev

import (
	"fmt"
	"strings"
	"testing"

	_ "github.com/txlab/txlab/drivers/veth"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// backlogHarness is a veth device on a 2-CPU host whose CPU 0's
// softnet backlog takes veth's skbs (__netif_rx from veth_xmit) and the
// local receive path's packets ('v' and 'l' in an arrival string), and
// records the order process_backlog delivers them in.
type backlogHarness struct {
	*harness
	got []string
}

func newBacklogHarness(t *testing.T, maxBacklog int) *backlogHarness {
	cfg := profile(t, "6.18")
	cfg.MaxBacklog = maxBacklog
	h := &backlogHarness{harness: newHarness(t, cfg, 2, "veth", 1)}
	h.n.ExpectLocalReceive()
	h.n.Hooks.Complete = func(_ *sim.CPU, s *skb.SKB) { h.got = append(h.got, fmt.Sprintf("v%d", s.Hash)) }
	return h
}

// arrive queues arrival i of kind 'v' (a skb veth's xmit hands to
// NetifRx on c) or 'l' (a packet for a local socket, arriving from the
// peer on c's CPU).
func (h *backlogHarness) arrive(c *sim.CPU, kind byte, i int) {
	switch kind {
	case 'v':
		s := h.n.AllocSkb(c)
		s.Len, s.Hash, s.Queue = 100, uint32(i), 0
		h.n.unoffered--
		h.n.Offered++
		s.Holder = driverHolder
		h.dev.ctxFor(c).NetifRx(s.Handle)
	case 'l':
		name := fmt.Sprintf("l%d", i)
		h.n.Deliver(h.dev, c.Now(), skb.FlowKeys{}, c.ID, func(*sim.CPU) { h.got = append(h.got, name) })
	}
}

// One CPU, one backlog: veth's skbs and the local receive path's packets
// share input_pkt_queue in arrival order and one netdev_max_backlog
// (qlen <= max taken); a dropped veth skb counts CPU_BACKLOG once, a
// dropped local packet is lost; softnet_stat's dropped counts both.
func TestSharedBacklog(t *testing.T) {
	for _, tc := range []struct {
		max      int
		arrivals string
		want     string // delivered, in order
		vDrops   uint64 // CPU_BACKLOG drops (veth's skbs)
		lDrops   uint64 // local packets dropped
	}{
		{3, "vlvlvl", "v0 l1 v2 l3", 1, 1},
		{2, "lllv", "l0 l1 l2", 1, 0},
		{2, "vvvl", "v0 v1 v2", 0, 1},
		{10, "lvlvvl", "l0 v1 l2 v3 v4 l5", 0, 0},
		{1, "lvvlll", "l0 v1", 1, 3},
	} {
		t.Run(fmt.Sprint(tc.max, tc.arrivals), func(t *testing.T) {
			h := newBacklogHarness(t, tc.max)
			h.on(0, 0, func(c *sim.CPU) {
				c.LocalBhDisable() // nothing delivered until all arrived
				for i := range tc.arrivals {
					h.arrive(c, tc.arrivals[i], i)
				}
				c.Spend(1)
				c.Sync() // the local arrivals' interrupt
				if n := len(h.n.sd[0].pollList); n != 1 {
					t.Errorf("%d NAPIs on cpu 0's poll_list, want the backlog's once", n)
				}
				// softnet_stat's input_qlen: what was queued, none
				// spliced onto process_queue yet.
				if st, n := h.n.Softnet(0), len(strings.Fields(tc.want)); st.InputQlen != uint64(n) || st.ProcessQlen != 0 {
					t.Errorf("input_qlen %d process_qlen %d, want %d, 0", st.InputQlen, st.ProcessQlen, n)
				}
				c.LocalBhEnable()
			})
			h.run(sim.Millisecond)
			if got := strings.Join(h.got, " "); got != tc.want {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
			if d := h.n.Drops[skb.DropCPUBacklog]; d != tc.vDrops || h.n.DroppedPackets() != tc.vDrops {
				t.Errorf("CPU_BACKLOG drops %d (all drops %d), want %d", d, h.n.DroppedPackets(), tc.vDrops)
			}
			if h.n.LocalDropped() != tc.lDrops || h.n.Softnet(0).Dropped != tc.vDrops+tc.lDrops {
				t.Errorf("local drops %d softnet dropped %d, want %d, %d", h.n.LocalDropped(), h.n.Softnet(0).Dropped, tc.lDrops, tc.vDrops+tc.lDrops)
			}
			if p := h.n.Softnet(0).Processed; p != uint64(len(h.got)) {
				t.Errorf("softnet processed %d, want %d", p, len(h.got))
			}
			// ip -s link: this veth received the local packets (its
			// core rx_dropped) and sent its skbs (priv->dropped, its
			// tx_dropped); the peer the other way round.
			own := LinkStats{RxDropped: tc.lDrops, TxDropped: tc.vDrops}
			peer := LinkStats{RxDropped: tc.vDrops, TxDropped: tc.lDrops}
			gotPeer, ok := h.dev.LinkPeer()
			if got := h.dev.Link(); got != own || !ok || gotPeer != peer {
				t.Errorf("ip -s link: %+v, peer %+v (%v), want %+v, peer %+v", got, gotPeer, ok, own, peer)
			}
		})
	}
}

// process_backlog's quota (dev_weight, 64) covers both sources: 40 of
// each, interleaved, take one poll of 64 in arrival order and a second
// of 16; the splice frees input_pkt_queue, so the limit counts only the
// skbs not yet spliced onto process_queue.
func TestSharedBacklogQuota(t *testing.T) {
	h := newBacklogHarness(t, 100)
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable()
		for i := 0; i < 80; i++ {
			h.arrive(c, "vl"[i%2], i)
		}
		c.Sync()
		b := h.n.sd[0].backlog
		if work, done := h.n.processBacklog(c, b, napiWeight); work != napiWeight || done {
			t.Errorf("first poll: %d done %v, want %d, not done", work, done, napiWeight)
		}
		for i, g := range h.got {
			if want := fmt.Sprintf("%c%d", "vl"[i%2], i); g != want {
				t.Fatalf("delivery %d is %s, want %s", i, g, want)
			}
		}
		// 16 wait on process_queue; input_pkt_queue is empty: it takes
		// 101 more (qlen <= 100), the 102nd drops.
		for i := 80; i < 182; i++ {
			h.arrive(c, "vl"[i%2], i)
		}
		if d := h.n.Softnet(0).Dropped; d != 1 {
			t.Errorf("softnet dropped %d, want 1", d)
		}
		h.n.sd[0].pollList = h.n.sd[0].pollList[:0] // polled by hand
		total := napiWeight
		for {
			work, done := h.n.processBacklog(c, b, napiWeight)
			total += work
			if done {
				break
			}
		}
		if total != 181 || b.napi.scheduled {
			t.Errorf("delivered %d, scheduled %v; want 181, completed", total, b.napi.scheduled)
		}
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
}

// The local receive path's packets are not offered (no sender hands them
// to __dev_queue_xmit), so its backlog drops stay out of the TX identity
// and its drop reasons; CheckAccounting holds them to their own balance,
// arrived = delivered + dropped + waiting (on a backlog), at any moment.
func TestLocalAccounting(t *testing.T) {
	h := newBacklogHarness(t, 2)
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable()
		for i, k := range []byte("lvllll") { // qlen <= 2 taken: l0 v1 l2, then three drops
			h.arrive(c, k, i)
		}
		c.Sync()
		if h.n.localArrived != 5 || h.n.localDropped != 3 || h.n.localWaiting() != 2 {
			t.Errorf("arrived %d dropped %d waiting %d, want 5, 3, 2", h.n.localArrived, h.n.localDropped, h.n.localWaiting())
		}
		if err := h.n.CheckAccounting(); err != nil {
			t.Error(err)
		}
		if d := h.n.DroppedPackets(); d != 0 {
			t.Errorf("drop reasons count %d, want none (the TX identity has no local packet)", d)
		}
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	if h.n.localDelivered != 2 || h.n.localWaiting() != 0 {
		t.Fatalf("delivered %d waiting %d, want 2, 0", h.n.localDelivered, h.n.localWaiting())
	}
	// A packet lost between arrival and its socket breaks the balance.
	h.n.localDelivered--
	if err := h.n.CheckAccounting(); err == nil || !strings.Contains(err.Error(), "local receive") {
		t.Fatalf("a lost local packet: %v, want the local receive balance's error", err)
	}
}

// A poll of the backlog NAPI costs backlog_poll, not napi_poll: process_backlog
// has no device interrupt to re-arm.
func TestBacklogPollCost(t *testing.T) {
	h := newBacklogHarness(t, 10)
	costs := h.e.Costs
	costs.NapiPoll, costs.BacklogPoll, costs.PeerRx = 1000, 30, 0
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable()
		h.arrive(c, 'l', 0)
		c.Spend(1)
		c.Sync()                                    // the arrival's interrupt
		h.n.sd[0].pollList = h.n.sd[0].pollList[:0] // polled by hand
		b := h.n.sd[0].backlog
		t0 := c.Now()
		if work, done := h.n.napiPoll(c, &b.napi); work != 1 || !done {
			t.Errorf("poll: %d done %v, want 1, done", work, done)
		}
		if spent := c.Now() - t0; spent != 30 {
			t.Errorf("the backlog's poll took %d ns, want backlog_poll's 30", spent)
		}
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
}

// net_rx_action: a NAPI scheduled while it runs (____napi_schedule with
// sd->in_net_rx_action set raises nothing) is polled in the same
// net_rx_action once its list and repoll list are empty ('goto start'),
// with what is left of the budget: here the backlog's poll delivers one
// packet whose handler schedules a second NAPI with one more, and a
// budget of 2 runs out on it (a time_squeeze), with NET_RX not raised.
func TestNetRxActionRestart(t *testing.T) {
	h := newBacklogHarness(t, 10)
	h.n.Cfg.NetdevBudget = 2
	second := &localRx{pending: []localPkt{{fn: func(*sim.CPU) { h.got = append(h.got, "second") }}}}
	second.napi = &napi{vec: -1, local: second}
	h.n.localArrived++ // second's packet
	runs := 0
	h.e.CPUs[0].SetSoftirqHandler(sim.NetRxSoftirq, func(c *sim.CPU) { runs++; h.n.netRxAction(c) })
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable()
		h.n.Deliver(h.dev, c.Now(), skb.FlowKeys{}, 0, func(c *sim.CPU) {
			h.got = append(h.got, "l0")
			h.n.napiSchedule(c, second.napi)
		})
		c.Spend(1)
		c.Sync() // the arrival's interrupt
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	if got := strings.Join(h.got, " "); got != "l0 second" {
		t.Fatalf("delivered %q, want l0 second", got)
	}
	sn := h.n.Softnet(0)
	if sn.TimeSqueeze != 1 || sn.Polls != 2 {
		t.Errorf("time_squeeze %d polls %d, want 1, 2 (one net_rx_action, its budget of 2 spent)", sn.TimeSqueeze, sn.Polls)
	}
	if runs != 1 {
		t.Errorf("net_rx_action ran %d times, want once", runs)
	}
}

// Under noqueue a packet the softnet backlog drops reaches its sender as
// NET_XMIT_DROP: veth_xmit answers __netif_rx's NET_RX_DROP with it,
// dev_hard_start_xmit hands it back and __dev_queue_xmit returns it
// (TCP's tcp_transmit_skb then enters CWR, UDP counts an error).
func TestNoQueueBacklogDropCode(t *testing.T) {
	h := newBacklogHarness(t, 1)
	if q := h.dev.Queues[0].Qdisc(); q != nil {
		t.Fatalf("veth's default root is %s, want noqueue", q.Kind)
	}
	var got []qdisc.Code
	h.on(0, 0, func(c *sim.CPU) {
		c.LocalBhDisable() // the backlog is not polled until all are sent
		for i := 0; i < 3; i++ {
			got = append(got, h.n.DevQueueXmit(c, h.dev, h.skb(c, i)))
		}
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	want := []qdisc.Code{qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitDrop} // qlen <= 1 taken
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("__dev_queue_xmit returned %v, want %v", got, want)
	}
	if d := h.n.Drops[skb.DropCPUBacklog]; d != 1 {
		t.Errorf("CPU_BACKLOG drops %d, want 1", d)
	}
}
