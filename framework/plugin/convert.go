package plugin

import (
	"fmt"
	"strconv"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin/pb"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Conversions between the framework's setup/info/stats types and their
// protobuf messages.

func seedOf(w []uint64) sim.Seed {
	var s sim.Seed
	copy(s[:], w)
	return s
}

// setupToPB is the init message: the qdisc's Setup and args, and the
// seed and prices of its context, which the plugin side keeps from it.
func setupToPB(s qdisc.Setup, args []string, seed sim.Seed, prices qdisc.Prices) *pb.QdiscSetup {
	return &pb.QdiscSetup{Handle: s.Handle, Parent: s.Parent, Mtu: int64(s.MTU), TxQueueLen: int64(s.TxQueueLen),
		NumTxq: int64(s.NumTxQ), Group: s.Group, GroupSize: int64(s.GroupSize), CtxSeed: seed[:], Prices: prices[:],
		Args: args, DevMtu: int64(s.DevMTU), RateBps: s.RateBps, DevTxq: int64(s.DevTxQ)}
}

func setupFromPB(p *pb.QdiscSetup) (qdisc.Setup, sim.Seed, qdisc.Prices) {
	s := qdisc.Setup{Handle: p.Handle, Parent: p.Parent, MTU: int(p.Mtu), TxQueueLen: int(p.TxQueueLen),
		NumTxQ: int(p.NumTxq), Group: p.Group, GroupSize: int(p.GroupSize), DevMTU: int(p.DevMtu),
		RateBps: p.RateBps, DevTxQ: int(p.DevTxq)}
	var prices qdisc.Prices
	copy(prices[:], p.Prices)
	return s, seedOf(p.CtxSeed), prices
}

func infoToPB(i qdisc.Info) *pb.QdiscInfo {
	out := &pb.QdiscInfo{Flags: uint32(i.Flags), Limit: int64(i.Limit), SegmentOver: i.SegmentOver}
	for _, r := range i.DropReasons {
		out.DropReasons = append(out.DropReasons, string(r))
	}
	if m := i.TCMap; m != nil {
		t := &pb.TCMap{NumTc: int32(m.NumTC)}
		for k := range m.PrioTC {
			t.PrioTc = append(t.PrioTc, uint32(m.PrioTC[k]))
			t.Count = append(t.Count, uint32(m.Count[k]))
			t.Offset = append(t.Offset, uint32(m.Offset[k]))
		}
		out.TcMap = t
	}
	return out
}

func infoFromPB(p *pb.QdiscInfo) qdisc.Info {
	i := qdisc.Info{Flags: qdisc.Flags(p.Flags), Limit: int(p.Limit), SegmentOver: p.SegmentOver}
	for _, r := range p.DropReasons {
		i.DropReasons = append(i.DropReasons, skb.DropReason(r))
	}
	if t := p.TcMap; t != nil {
		m := &qdisc.TCMap{NumTC: int(t.NumTc)}
		for k := range m.PrioTC {
			if k < len(t.PrioTc) {
				m.PrioTC[k] = uint8(t.PrioTc[k])
			}
			if k < len(t.Count) {
				m.Count[k] = uint16(t.Count[k])
			}
			if k < len(t.Offset) {
				m.Offset[k] = uint16(t.Offset[k])
			}
		}
		i.TCMap = m
	}
	return i
}

func statsToPB(s qdisc.Stats) *pb.QdiscStats {
	out := &pb.QdiscStats{Qlen: int64(s.Qlen), Backlog: s.Backlog, Drops: s.Drops, Overlimits: s.Overlimits}
	for _, x := range s.XStats {
		out.Xstats = append(out.Xstats, &pb.XStat{Key: x.Key, Type: uint32(x.Type), Bits: x.Bits})
	}
	return out
}

func statsFromPB(p *pb.QdiscStats) (qdisc.Stats, error) {
	s := qdisc.Stats{Qlen: int(p.Qlen), Backlog: p.Backlog, Drops: p.Drops, Overlimits: p.Overlimits}
	for _, x := range p.Xstats {
		t := qdisc.XType(x.Type)
		if x.Type > 255 || !t.Valid() {
			return s, fmt.Errorf("xstat %q has unknown type %d", x.Key, x.Type)
		}
		s.XStats = append(s.XStats, qdisc.XStat{Key: x.Key, Type: t, Bits: x.Bits})
	}
	return s, nil
}

func driverSetupToPB(s driver.Setup, args []string) *pb.DriverSetup {
	out := &pb.DriverSetup{Name: s.Name, NumTxq: int64(s.NumTxQ), RateBps: s.RateBps,
		NumCpus: int64(s.NumCPUs), Args: args, NumRxq: int64(s.NumRxQ), MaxSkbFrags: int64(s.MaxSkbFrags),
		MaxBacklog: int64(s.MaxBacklog)}
	if s.Costs != nil {
		for _, c := range s.Costs.List() {
			out.Costs = append(out.Costs, &pb.Cost{Name: c.Name, Value: c.Value})
		}
	}
	return out
}

func driverSetupFromPB(p *pb.DriverSetup) (driver.Setup, error) {
	costs := sim.DefaultCosts()
	for _, c := range p.Costs {
		if err := costs.Set(c.Name, strconv.FormatInt(c.Value, 10)); err != nil {
			return driver.Setup{}, fmt.Errorf("host cost table: %w", err)
		}
	}
	return driver.Setup{Name: p.Name, NumTxQ: int(p.NumTxq), RateBps: p.RateBps,
		NumCPUs: int(p.NumCpus), Costs: costs, NumRxQ: int(p.NumRxq), MaxSkbFrags: int(p.MaxSkbFrags),
		MaxBacklog: int(p.MaxBacklog)}, nil
}

func driverInfoToPB(i driver.Info) *pb.DriverInfo {
	out := &pb.DriverInfo{RateBps: i.RateBps, RingSize: int64(i.RingSize), Lltx: i.LLTX, NoQueue: i.NoQueue,
		Bql: i.BQL, Vectors: int64(i.Vectors), Wire: i.Wire, NoXps: i.NoXPS}
	for _, v := range i.QueueVec {
		out.QueueVec = append(out.QueueVec, int64(v))
	}
	if r := i.Rx; r != nil {
		out.Rx = &pb.RxInfo{RingSize: int64(r.RingSize), MaxQueues: int64(r.MaxQueues), ItrNs: int64(r.ITR),
			BufSize: int64(r.BufSize), RefillBatch: int64(r.RefillBatch), LutSize: int64(r.LUTSize),
			QueuePackets: r.QueuePackets, QueueBytes: r.QueueBytes, PortDropped: r.PortDropped,
			DimStart: int64(r.DIMStart), IntrlNs: int64(r.INTRL), OwnItr: r.OwnITR}
		for _, v := range r.QueueVec {
			out.Rx.QueueVec = append(out.Rx.QueueVec, int64(v))
		}
		for _, t := range r.ITRProfile {
			out.Rx.ItrProfileNs = append(out.Rx.ItrProfileNs, int64(t))
		}
	}
	return out
}

func driverInfoFromPB(p *pb.DriverInfo) driver.Info {
	i := driver.Info{RateBps: p.RateBps, RingSize: int(p.RingSize), LLTX: p.Lltx, NoQueue: p.NoQueue,
		BQL: p.Bql, Vectors: int(p.Vectors), Wire: p.Wire, NoXPS: p.NoXps}
	for _, v := range p.QueueVec {
		i.QueueVec = append(i.QueueVec, int(v))
	}
	if r := p.Rx; r != nil {
		i.Rx = &driver.RxInfo{RingSize: int(r.RingSize), MaxQueues: int(r.MaxQueues), ITR: sim.Time(r.ItrNs),
			BufSize: int(r.BufSize), RefillBatch: int(r.RefillBatch), LUTSize: int(r.LutSize),
			QueuePackets: r.QueuePackets, QueueBytes: r.QueueBytes, PortDropped: r.PortDropped,
			DIMStart: int(r.DimStart), INTRL: sim.Time(r.IntrlNs), OwnITR: r.OwnItr}
		for _, v := range r.QueueVec {
			i.Rx.QueueVec = append(i.Rx.QueueVec, int(v))
		}
		for _, t := range r.ItrProfileNs {
			i.Rx.ITRProfile = append(i.Rx.ITRProfile, sim.Time(t))
		}
	}
	return i
}

func driverStatsToPB(qs []driver.QueueStats) *pb.DriverStats {
	out := &pb.DriverStats{}
	for _, q := range qs {
		m := &pb.QueueStats{Queue: int64(q.Queue), Packets: q.Packets, Bytes: q.Bytes, Busy: q.Busy,
			Restart: q.Restart, Stopped: q.Stopped, Doorbells: q.Doorbells, Irqs: q.Irqs, Polls: q.Polls}
		for _, c := range q.Extra {
			m.Extra = append(m.Extra, &pb.Counter{Name: c.Name, Value: c.Value})
		}
		for _, c := range q.Ethtool {
			m.Ethtool = append(m.Ethtool, &pb.Counter{Name: c.Name, Value: c.Value, Dev: c.Dev})
		}
		out.Queues = append(out.Queues, m)
	}
	return out
}

func driverStatsFromPB(p *pb.DriverStats) []driver.QueueStats {
	var out []driver.QueueStats
	for _, m := range p.Queues {
		q := driver.QueueStats{Queue: int(m.Queue), Packets: m.Packets, Bytes: m.Bytes, Busy: m.Busy,
			Restart: m.Restart, Stopped: m.Stopped, Doorbells: m.Doorbells, Irqs: m.Irqs, Polls: m.Polls}
		for _, c := range m.Extra {
			q.Extra = append(q.Extra, driver.Counter{Name: c.Name, Value: c.Value})
		}
		for _, c := range m.Ethtool {
			q.Ethtool = append(q.Ethtool, driver.Counter{Name: c.Name, Value: c.Value, Dev: c.Dev})
		}
		out = append(out, q)
	}
	return out
}
