// Package veth models a veth pair's transmit side on the default path
// (no XDP, no GRO on the peer): veth_xmit forwards each skb to the peer
// with __netif_rx, which queues it on this CPU's backlog
// (enqueue_to_backlog, limited by netdev_max_backlog) and the backlog
// NAPI delivers it in NET_RX_SOFTIRQ. veth is lltx, IFF_NO_QUEUE and has
// no BQL (drivers/net/veth.c).
package veth

import (
	"fmt"
	"strconv"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// DefaultMaxBacklog is netdev_max_backlog's default.
const DefaultMaxBacklog = 1000

func init() {
	driver.Register("veth", "virtual ethernet pair, default (backlog) receive path (drivers/net/veth.c)", func() driver.Driver { return &Veth{} })
}

// Veth is the driver model.
type Veth struct {
	backlog    [][]skb.Handle // per CPU input_pkt_queue
	maxBacklog int
	stats      []driver.QueueStats
	costs      *sim.Costs
}

// Init implements driver.Driver. Option: "backlog N" (netdev_max_backlog).
func (v *Veth) Init(s driver.Setup, args []string) (driver.Info, error) {
	v.maxBacklog, v.costs = DefaultMaxBacklog, s.Costs
	for i := 0; i < len(args); i += 2 {
		if args[i] != "backlog" {
			return driver.Info{}, fmt.Errorf("veth: unknown option %q (known: backlog)", args[i])
		}
		if i+1 >= len(args) {
			return driver.Info{}, fmt.Errorf("veth: option backlog needs a value")
		}
		n, err := strconv.Atoi(args[i+1])
		if err != nil || n < 1 {
			return driver.Info{}, fmt.Errorf("veth: backlog %q must be a whole number >= 1", args[i+1])
		}
		v.maxBacklog = n
	}
	v.backlog = make([][]skb.Handle, s.NumCPUs)
	v.stats = make([]driver.QueueStats, s.NumTxQ)
	for i := range v.stats {
		v.stats[i].Queue = i
	}
	return driver.Info{LLTX: true, NoQueue: true, Vectors: s.NumCPUs, QueueVec: make([]int, s.NumTxQ)}, nil
}

// Xmit implements driver.Driver: veth_xmit -> veth_forward_skb.
func (v *Veth) Xmit(ctx driver.Ctx, q int, batch []skb.Packet) (int, driver.TxCode) {
	cpu := ctx.CPU()
	for _, p := range batch {
		ctx.Spend(v.costs.DriverXmit)
		if len(v.backlog[cpu]) >= v.maxBacklog {
			ctx.Drop(p.Handle, skb.DropCPUBacklog) // enqueue_to_backlog drop, counted as a veth drop
			v.stats[q].Extra = bump(v.stats[q].Extra, "peer_dropped")
			continue
		}
		v.backlog[cpu] = append(v.backlog[cpu], p.Handle)
		v.stats[q].Packets++
		v.stats[q].Bytes += uint64(p.Len)
		ctx.NapiScheduleLocal(cpu)
	}
	return len(batch), driver.TxOK
}

// Poll implements driver.Driver: process_backlog on the peer.
func (v *Veth) Poll(ctx driver.Ctx, vec int, budget int) (int, bool) {
	q := v.backlog[vec]
	n := min(budget, len(q))
	for _, h := range q[:n] {
		ctx.Spend(v.costs.PeerRx)
		ctx.Consume(h)
	}
	v.backlog[vec] = append(q[:0], q[n:]...)
	return n, len(v.backlog[vec]) == 0
}

// Stats implements driver.Driver.
func (v *Veth) Stats() []driver.QueueStats {
	return append([]driver.QueueStats(nil), v.stats...)
}

func bump(cs []driver.Counter, name string) []driver.Counter {
	for i := range cs {
		if cs[i].Name == name {
			cs[i].Value++
			return cs
		}
	}
	return append(cs, driver.Counter{Name: name, Value: 1})
}
