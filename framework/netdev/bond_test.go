package netdev

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/drivers/bonding"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// bondHarness builds a host of cpus CPUs with the bond of words over
// new NICs of drv (queues each, root qdisc qd) and returns it with the
// bond as the harness's device.
func bondHarness(t *testing.T, cfg Config, cpus int, words, drv string, queues int, qd ...string) *harness {
	t.Helper()
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: cpus, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	n := NewNet(e, cfg, localMaker{})
	p, err := bonding.Parse(strings.Fields(words), "bond0")
	if err != nil {
		t.Fatal(err)
	}
	bond, err := n.AddBond(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < p.SlaveCount; i++ {
		s, err := n.AddDevice(DeviceSpec{Name: fmt.Sprintf("eth%d", i), Driver: drv, Queues: queues, Qdisc: qd, XPS: XPSIRQ})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Enslave(bond, s); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{t, e, n, bond}
}

// enqueueOffered offers s and enqueues it into q under its root lock, as
// __dev_xmit_skb's locked path does: the tests' own way into a qdisc.
func (h *harness) enqueueOffered(c *sim.CPU, q *Qdisc, s *skb.SKB, toFree *skb.List) {
	h.n.unoffered--
	h.n.Offered++
	q.lock.Lock(c, h.n.site.rootEnq)
	h.n.qdiscEnqueue(c, q, []*skb.SKB{s}, toFree)
	q.lock.Unlock(c)
}

// flowSkb is an skb of flow i: a UDP 5-tuple to one host, from an
// ephemeral source port, as netperf's data connections are.
func (h *harness) flowSkb(c *sim.CPU, i int) *skb.SKB {
	s := h.skb(c, i)
	s.Keys = skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010002, SrcPort: uint16(32768 + uint32(i)*2654435761>>17), DstPort: 12866, Proto: 17}
	return s
}

// balance-xor with layer3+4 puts every packet of a flow on one slave,
// the one bond_xmit_hash % slaves names, and spreads the flows over all
// the slaves.
func TestBondXorSpreadsFlowsByHash(t *testing.T) {
	h := bondHarness(t, profile(t, "6.18"), 4, "mode balance-xor xmit_hash_policy layer3+4 slaves 3", "ice", 4)
	slaveOf := map[uint16]string{} // flow (source port) -> slave
	var bad []string
	h.n.Hooks.DriverXmit = func(c *sim.CPU, txq *TxQueue, l *skb.List) {
		d := txq.Device()
		if d.Bond != nil {
			return
		}
		for s := l.Head; s != nil; s = s.Next {
			if was, ok := slaveOf[s.Keys.SrcPort]; ok && was != d.Name {
				bad = append(bad, fmt.Sprintf("flow %d on %s and %s", s.Keys.SrcPort, was, d.Name))
			}
			slaveOf[s.Keys.SrcPort] = d.Name
			hash, _ := bonding.XmitHash(bonding.PolicyLayer34, s.Packet, false)
			if want := fmt.Sprintf("eth%d", hash%3); want != d.Name {
				bad = append(bad, fmt.Sprintf("flow %d on %s, bond_xmit_hash says %s", s.Keys.SrcPort, d.Name, want))
			}
		}
	}
	const flows = 48
	for cpu := 0; cpu < 4; cpu++ {
		h.on(cpu, sim.Time(cpu), func(c *sim.CPU) {
			for k := 0; k < 40; k++ {
				i := cpu + 4*(k%(flows/4))
				c.Spend(1000)
				h.n.DevQueueXmit(c, h.dev, h.flowSkb(c, i))
			}
		})
	}
	h.run(sim.Millisecond)
	if len(bad) > 0 {
		t.Fatalf("%d misplaced packets, first: %s", len(bad), bad[0])
	}
	per := map[string]int{}
	for _, s := range slaveOf {
		per[s]++
	}
	if len(slaveOf) != flows || len(per) != 3 {
		t.Fatalf("%d flows seen over slaves %v: want %d flows over all 3", len(slaveOf), per, flows)
	}
	b := h.dev.Bond
	if b.SlaveTx[0]+b.SlaveTx[1]+b.SlaveTx[2] != 160 || h.dev.Queues[0].TxPackets != 160 {
		t.Errorf("bond handed %v to its slaves (queue 0: %d): want 160 in all, all on the bond's queue 0", b.SlaveTx, h.dev.Queues[0].TxPackets)
	}
	t.Logf("flows per slave %v, packets per slave %v", per, b.SlaveTx)
}

// balance-rr alternates the slaves packet by packet on a CPU, starting
// at slave 1 (this_cpu_inc_return); packets_per_slave 3 moves on every
// third packet.
func TestBondRoundRobinAlternates(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  string
	}{
		{"mode balance-rr slaves 2", "1010101010"},
		{"mode balance-rr slaves 3", "1201201201"},
		{"mode balance-rr packets_per_slave 3 slaves 2", "0011100011"}, // ids 1/3, 2/3, ... : 0 0 1 1 1 0 0 0 1 1
		{"mode active-backup slaves 2", "0000000000"},
	} {
		t.Run(tc.words, func(t *testing.T) {
			h := bondHarness(t, profile(t, "6.18"), 2, tc.words, "ice", 2)
			var got strings.Builder
			h.on(1, 0, func(c *sim.CPU) {
				b := h.dev.Bond
				for i := 0; i < 10; i++ {
					before := append([]uint64(nil), b.SlaveTx...)
					h.n.DevQueueXmit(c, h.dev, h.flowSkb(c, i))
					for j := range b.SlaveTx {
						if b.SlaveTx[j] != before[j] {
							fmt.Fprint(&got, j)
						}
					}
				}
			})
			h.run(sim.Millisecond)
			if got.String() != tc.want {
				t.Errorf("slaves %s, want %s", got.String(), tc.want)
			}
		})
	}
}

// A packet a slave's qdisc drops is counted once, as that qdisc's drop:
// offered = transmitted + dropped + in flight across the stack, and the
// sender sees NET_XMIT_DROP through the bond (noqueue).
func TestBondAccountingAcrossTheStack(t *testing.T) {
	h := bondHarness(t, profile(t, "6.18"), 8, "mode balance-xor xmit_hash_policy layer3+4 slaves 2", "ice", 1, "pfifo", "limit", "4")
	var senderDrops int
	for cpu := 0; cpu < 8; cpu++ {
		h.on(cpu, sim.Time(cpu), func(c *sim.CPU) {
			for k := 0; k < 200; k++ {
				if h.n.DevQueueXmit(c, h.dev, h.flowSkb(c, cpu*1000+k)) == qdisc.XmitDrop {
					senderDrops++
				}
			}
		})
	}
	h.run(2 * sim.Millisecond)
	var qdiscDrops uint64
	for _, q := range h.n.Qdiscs() {
		qdiscDrops += q.Ops.Stats().Drops
	}
	n := h.n
	if n.Offered != 1600 || qdiscDrops == 0 || n.DroppedPackets() != qdiscDrops || n.Drops[skb.DropQdiscDrop] != qdiscDrops {
		t.Fatalf("offered %d, drops %v, the slaves' qdiscs dropped %d: want 1600 offered and each drop once, the qdiscs'", n.Offered, n.Drops, qdiscDrops)
	}
	if uint64(senderDrops) != qdiscDrops {
		t.Errorf("the senders saw %d NET_XMIT_DROP, the qdiscs dropped %d", senderDrops, qdiscDrops)
	}
	if n.TxPkts+n.DroppedPackets()+uint64(n.InFlightPackets()) != n.Offered {
		t.Errorf("tx %d + dropped %d + in flight %d != offered %d", n.TxPkts, n.DroppedPackets(), n.InFlightPackets(), n.Offered)
	}
}

// A bond with a qdisc (htb, as E4's) is dequeued by the qdisc run: 9
// skbs of its queue 0 per qdisc_restart with bulk_dequeue=all, one with
// onetxqueue (4.7); each goes through bond_start_xmit to a slave.
func TestBondQdiscBulks(t *testing.T) {
	for _, tc := range []struct {
		bulk  string
		bulks []int
	}{{"onetxqueue", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}, {"all", []int{9, 9, 2}}} {
		t.Run(tc.bulk, func(t *testing.T) {
			h := bondHarness(t, profile(t, "4.7", "bulk_dequeue", tc.bulk), 2, "mode balance-xor xmit_hash_policy layer3+4 slaves 2", "ice", 4)
			if err := h.n.TCBatch(h.dev, "tc", "qdisc add dev bond0 root handle 1: htb default 1\n"+
				"class add dev bond0 parent 1: classid 1:1 htb rate 50gbit\n"); err != nil {
				t.Fatal(err)
			}
			q := h.dev.Root
			var bulks []int
			h.n.Hooks.Dequeue = func(c *sim.CPU, dq *Qdisc, bulk []*skb.SKB) {
				if dq == q {
					bulks = append(bulks, len(bulk))
				}
			}
			h.on(0, 0, func(c *sim.CPU) {
				var toFree skb.List
				for i := 0; i < 20; i++ {
					s := h.flowSkb(c, i)
					h.enqueueOffered(c, q, s, &toFree)
				}
				c.LocalBhDisable()
				h.runOnce(c, q)
				c.LocalBhEnable()
			})
			h.run(sim.Millisecond)
			if fmt.Sprint(bulks) != fmt.Sprint(tc.bulks) {
				t.Errorf("bulks from bond0's htb %v, want %v", bulks, tc.bulks)
			}
			b := h.dev.Bond
			if h.n.TxPkts != 20 || b.SlaveTx[0] == 0 || b.SlaveTx[1] == 0 {
				t.Errorf("tx %d, slaves got %v: want all 20 sent over both", h.n.TxPkts, b.SlaveTx)
			}
		})
	}
}

// The refusals of ip link set SLAVE master BOND: a slave of another bond,
// the bond itself, a loop, a stack deeper than MAX_NEST_DEV.
func TestEnslaveRefusals(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n := NewNet(e, profile(t, "6.18"), localMaker{})
	var bonds []*Device
	for i := 0; i < 10; i++ {
		b, err := n.AddBond(bonding.Default(fmt.Sprintf("bond%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		bonds = append(bonds, b)
	}
	eth0, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: "ice", Queues: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddBond(bonding.Default("bond0")); err == nil || !strings.Contains(err.Error(), "File exists") {
		t.Errorf("a second bond0: %v", err)
	}
	if err := n.Enslave(bonds[0], eth0); err != nil {
		t.Fatal(err)
	}
	if err := n.Enslave(bonds[1], bonds[0]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		bond, slave *Device
		want        error
	}{
		{"a slave of another bond", bonds[2], eth0, ErrInUse},
		{"itself", bonds[2], bonds[2], ErrSelf},
		{"a loop", bonds[0], bonds[1], ErrLoop},
		{"a NIC as master", eth0, bonds[3], ErrNotABond},
	} {
		if err := n.Enslave(tc.bond, tc.slave); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// bond1 (over bond0 over eth0) is 3 levels; each bond on top adds
	// one, up to MAX_NEST_DEV.
	var err2 error
	levels := 3
	for i := 2; i < 10 && err2 == nil; i++ {
		if err2 = n.Enslave(bonds[i], bonds[i-1]); err2 == nil {
			levels++
		}
	}
	if !errors.Is(err2, ErrTooDeep) || levels != bonding.MaxNestDev {
		t.Errorf("stacked %d levels, then %v: want %d levels, then Too many links", levels, err2, bonding.MaxNestDev)
	}
}

// __dev_queue_xmit's noqueue path drops an skb once the CPU's
// xmit recursion is above XMIT_RECURSION_LIMIT: a bond over a bond at a
// nesting of 8 already alerts on the lower bond.
func TestXmitRecursionLimit(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n := NewNet(e, profile(t, "6.18"), localMaker{})
	top, _ := n.AddBond(bonding.Default("bond0"))
	low, _ := n.AddBond(bonding.Default("bond1"))
	eth0, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: "ice", Queues: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(n.Enslave(low, eth0), n.Enslave(top, low)); err != nil {
		t.Fatal(err)
	}
	h := &harness{t, e, n, top}
	var rc [2]qdisc.Code
	h.on(0, 0, func(c *sim.CPU) {
		rc[0] = n.DevQueueXmit(c, top, h.skb(c, 1))
		n.stack.recursion[c.ID] = XmitRecursionLimit // as if 8 stacked devices were above
		rc[1] = n.DevQueueXmit(c, top, h.skb(c, 2))
		n.stack.recursion[c.ID] = 0
	})
	h.run(sim.Millisecond)
	if rc[0] != qdisc.XmitSuccess || rc[1] != qdisc.XmitDrop {
		t.Fatalf("return codes %v: want success, then a drop", rc)
	}
	if n.Drops[DropRecursionLimit] != 1 || n.RecursionAlerts() != 1 || low.Bond.TxDropped != 1 || top.Bond.SlaveTx[0] != 2 {
		t.Errorf("drops %v, alerts %d, bond1 tx_dropped %d, bond0 handed %v: want the second skb dropped on bond1",
			n.Drops, n.RecursionAlerts(), low.Bond.TxDropped, top.Bond.SlaveTx)
	}
}

// skb->sender_cpu: the first __dev_queue_xmit (the bond's) records its
// CPU, and the slave's XPS picks by it, not by the CPU that dequeued the
// bond's qdisc (2bd82484bb4c, "xps: fix xps for stacked devices").
func TestSlaveQueueFollowsSenderCPU(t *testing.T) {
	h := bondHarness(t, profile(t, "4.8"), 4, "mode balance-xor xmit_hash_policy layer3+4 slaves 1", "ice", 4)
	if err := h.n.TCBatch(h.dev, "tc", "qdisc add dev bond0 root handle 1: htb default 1\n"+
		"class add dev bond0 parent 1: classid 1:1 htb rate 50gbit\n"); err != nil {
		t.Fatal(err)
	}
	slave := h.dev.Bond.Slaves[0]
	var senders []int
	for cpu := 0; cpu < 4; cpu++ {
		if slave.XPSQueue(cpu) >= 0 {
			senders = append(senders, cpu)
		}
	}
	if len(senders) < 2 || slave.XPSQueue(senders[0]) == slave.XPSQueue(senders[1]) {
		t.Fatalf("the slave's XPS map gives CPUs %v one queue: the test needs two", senders)
	}
	var bad []string
	cross, sent := 0, 0
	h.n.Hooks.DriverXmit = func(c *sim.CPU, txq *TxQueue, l *skb.List) {
		if txq.Device() != slave {
			return
		}
		for s := l.Head; s != nil; s = s.Next {
			sent++
			if c.ID != int(s.SenderCPU) {
				cross++
			}
			if want := slave.XPSQueue(int(s.SenderCPU)); txq.Index != want {
				bad = append(bad, fmt.Sprintf("skb built on CPU %d sent by CPU %d on %s-tx-%d, want tx-%d", s.SenderCPU, c.ID, slave.Name, txq.Index, want))
			}
		}
	}
	q := h.dev.Root
	for i, cpu := range senders {
		h.on(cpu, sim.Time(i), func(c *sim.CPU) {
			var toFree skb.List
			for k := 0; k < 4; k++ {
				s := h.flowSkb(c, 4*cpu+k)
				h.n.unoffered--
				h.n.Offered++
				h.n.netdevCorePickTx(c, h.dev, s) // the bond's pick records sender_cpu
				q.lock.Lock(c, h.n.site.rootEnq)
				h.n.qdiscEnqueue(c, q, []*skb.SKB{s}, &toFree)
				q.lock.Unlock(c)
			}
		})
	}
	deq := senders[len(senders)-1]
	h.on(deq, 10*sim.Microsecond, func(c *sim.CPU) {
		c.LocalBhDisable()
		h.runOnce(c, q)
		c.LocalBhEnable()
	})
	h.run(sim.Millisecond)
	if len(bad) > 0 {
		t.Fatalf("%d skbs on the dequeuer's queue, first: %s", len(bad), bad[0])
	}
	if sent != 4*len(senders) || cross == 0 {
		t.Fatalf("slave sent %d skbs, %d by a CPU other than their sender: want %d, some crossing", sent, cross, 4*len(senders))
	}
}

// bond_start_xmit prices what bond_xmit_hash read: layer2+3 and
// layer3+4 read the IP and L4 headers themselves (bond_flow_ip,
// skb_flow_get_ports: cost bond_hash), only encap2+3 runs the flow
// dissector (qdisc_hash); layer2, encap3+4 on an skb with an L4 hash
// and balance-rr nothing. The 4.7 and 4.8 profiles keep layer3+4's
// lowest bit (before b5f862180d70), the 6.x ones drop it.
func TestBondHashCost(t *testing.T) {
	const bondHash, qdiscHash = 1000, 10000 // added to the defaults
	for _, tc := range []struct {
		prof, words string
		want        sim.Time // extra time of one packet's bond_start_xmit
		keepLowBit  bool
	}{
		{"6.18", "mode balance-xor xmit_hash_policy layer3+4", bondHash, false},
		{"4.7", "mode balance-xor xmit_hash_policy layer3+4", bondHash, true},
		{"4.8", "mode balance-xor xmit_hash_policy layer3+4", bondHash, true},
		{"6.18", "mode balance-xor xmit_hash_policy layer2+3", bondHash, false},
		{"6.18", "mode balance-xor xmit_hash_policy encap2+3", qdiscHash, false},
		{"6.18", "mode balance-xor xmit_hash_policy encap3+4", 0, false},
		{"6.18", "mode balance-xor xmit_hash_policy layer2", 0, false},
		{"6.18", "mode balance-rr", 0, false},
	} {
		t.Run(tc.prof+" "+tc.words, func(t *testing.T) {
			took := func(extra bool) sim.Time {
				h := bondHarness(t, profile(t, tc.prof), 1, tc.words+" slaves 2", "ice", 1, "pfifo")
				if extra {
					h.e.Costs.BondHash += bondHash
					h.e.Costs.QdiscHash += qdiscHash
				}
				if got := h.dev.Bond.KeepLowBit; got != tc.keepLowBit {
					t.Fatalf("profile %s: KeepLowBit %v, want %v", tc.prof, got, tc.keepLowBit)
				}
				var d sim.Time
				h.on(0, 0, func(c *sim.CPU) {
					s := h.flowSkb(c, 1)
					start := c.Now()
					h.n.DevQueueXmit(c, h.dev, s)
					d = c.Now() - start
				})
				h.run(sim.Millisecond)
				return d
			}
			if got := took(true) - took(false); got != tc.want {
				t.Errorf("bond_hash +%d and qdisc_hash +%d add %d ns to a packet, want %d", bondHash, qdiscHash, got, tc.want)
			}
		})
	}
}
