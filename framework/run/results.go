package run

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
)

// snapshot holds cumulative counters at one instant.
type snapshot struct {
	at       sim.Time
	offered  uint64
	tx       uint64
	txBytes  uint64
	drops    map[string]uint64
	dropped  uint64
	cpus     []sim.SchedStat // per CPU
	qpkts    []uint64        // per txq, completed
	qbytes   []uint64
	rxPkts   []uint64                                 // per rxq, cleaned (forward)
	sched    sim.SchedStat                            // summed over the CPUs
	netSched [netdev.NumSchedCallers]netdev.SchedStat // __netif_schedule by caller
	ethtool  []driver.Counter                         // the device's ethtool -S, at the window's start only
	// classBytes are the classes' sent bytes (taken at the window's
	// start only: reading them asks the classful qdiscs).
	classBytes map[string]uint64
	devices    map[string]devStart // a stacked host's devices, by name (window start only)
}

func take(net *netdev.Net, e *sim.Engine) snapshot {
	net.RxCatchUp(e.Now()) // the wire's frames up to now: offered and RX drops current
	s := snapshot{at: e.Now(), offered: net.Offered, tx: net.TxPkts, txBytes: net.TxBytes,
		drops: map[string]uint64{}, dropped: net.DroppedPackets()}
	for r, v := range net.Drops {
		s.drops[string(r)] = v
	}
	s.netSched = net.Sched
	s.cpus = make([]sim.SchedStat, len(e.CPUs))
	for i, c := range e.CPUs {
		st := c.SchedStat()
		s.cpus[i] = st
		s.sched.Busy += st.Busy
		s.sched.Soft += st.Soft
		s.sched.Hard += st.Hard
		s.sched.Switches += st.Switches
		s.sched.Interrupts += st.Interrupts
		s.sched.RunnableNs += st.RunnableNs
	}
	for _, d := range net.Devs {
		for _, q := range d.Queues {
			s.qpkts = append(s.qpkts, q.TxPackets)
			s.qbytes = append(s.qbytes, q.TxBytes)
		}
		for _, r := range net.RxQueues(d, s.at) {
			s.rxPkts = append(s.rxPkts, r.Packets)
		}
	}
	return s
}

// mpstatCPU fills r's busy_pct and mpstat -P's columns from CPU
// counters a and b, window apart: hard and soft interrupt time are
// counted apart from busy time, as the kernel's irqtime accounting
// does; spinning counts as busy.
func mpstatCPU(r report.CPU, a, b sim.SchedStat, window sim.Time) report.CPU {
	pct := func(d sim.Time) float64 { return 100 * float64(d) / float64(window) }
	busy := b.Busy - a.Busy
	r.BusyPct = pct(busy)
	// A CPU's clock may run a little past the window's end (the work it
	// was doing when the window closed): mpstat's columns, counted in
	// ticks, never pass 100 together, so the busy time is capped at the
	// window, and soft and hard interrupt time within it.
	busy = min(busy, window)
	soft := min(b.Soft-a.Soft, busy)
	hard := min(b.Hard-a.Hard, busy-soft)
	r.SysPct, r.IrqPct, r.SoftPct = pct(busy-soft-hard), pct(hard), pct(soft)
	r.IdlePct = pct(window - busy)
	return r
}

// vmstat computes vmstat's and mpstat's CPU columns between two
// snapshots over ncpu CPUs.
func vmstat(a, b snapshot, ncpu int) report.VMStat {
	span := float64(b.at - a.at)
	if span <= 0 || ncpu == 0 {
		return report.VMStat{IdlePct: 100}
	}
	all := span * float64(ncpu)
	v := report.VMStat{
		SysPct:   100 * float64(b.sched.Busy-a.sched.Busy) / all,
		IrqPct:   100 * float64(b.sched.Hard-a.sched.Hard) / all,
		SoftPct:  100 * float64(b.sched.Soft-a.sched.Soft) / all,
		Runnable: float64(b.sched.RunnableNs-a.sched.RunnableNs) / span,
		CSPerS:   float64(b.sched.Switches-a.sched.Switches) * float64(sim.Second) / span,
		InPerS:   float64(b.sched.Interrupts-a.sched.Interrupts) * float64(sim.Second) / span,
	}
	v.IdlePct = max(0, 100-v.SysPct)
	return v
}

func interval_(a, b snapshot, from, to sim.Time, net *netdev.Net) report.Interval {
	iv := report.Interval{StartNs: int64(from), EndNs: int64(to), TxPackets: b.tx - a.tx, TxBytes: b.txBytes - a.txBytes, Offered: b.offered - a.offered, Drops: b.dropped - a.dropped,
		VMStat: vmstat(a, b, len(net.E.CPUs))}
	if to > from {
		iv.TxPps = float64(iv.TxPackets) * float64(sim.Second) / float64(to-from)
		iv.TxBps = float64(iv.TxBytes) * 8 * float64(sim.Second) / float64(to-from)
	}
	for r, v := range b.drops {
		if d := v - a.drops[r]; d > 0 {
			if iv.DropsBy == nil {
				iv.DropsBy = map[string]uint64{}
			}
			iv.DropsBy[r] = d
		}
	}
	for _, q := range net.Qdiscs() {
		iv.Backlog += int64(q.Qlen())
		xs := q.Ops.Stats().XStats
		iv.BlueP = max(iv.BlueP, blueP(xs))
		iv.CoDelDropping += codelDropping(xs)
	}
	return iv
}

// codelDropping sums a qdisc's codel_dropping xstats (fq_codel's, and
// cake's one per tin): its flows in CoDel's dropping state.
func codelDropping(xs []qdisc.XStat) int64 {
	var n int64
	for _, x := range xs {
		if strings.HasSuffix(x.Key, "codel_dropping") {
			n += x.Int64()
		}
	}
	return n
}

// blueP is the largest of a qdisc's blue_p_max_ppm xstats (cake's, one
// per tin) as a probability.
func blueP(xs []qdisc.XStat) float64 {
	var m int64
	for _, x := range xs {
		if strings.HasSuffix(x.Key, "blue_p_max_ppm") {
			m = max(m, x.Int64())
		}
	}
	return float64(m) / 1e6
}

func fillSetup(rep *report.Report, spec *Spec, topo sim.Topology, dev *netdev.Device, cfg netdev.Config, costs *sim.Costs) {
	w := spec.Workload
	placement := w.PlacementWord()
	qd := dev.RootKind
	if dev.Root != nil {
		qd = dev.Root.Spec()
	} else if len(dev.Children) > 0 {
		qd = dev.RootKind + " " + dev.Children[0].Spec()
	}
	rep.Setup = report.Setup{Sockets: topo.Sockets, CoresPerSocket: topo.CoresPerSocket, ThreadsPerCore: topo.ThreadsPerCore,
		CPUs: topo.NumCPUs(), Driver: spec.Driver, Queues: len(dev.Queues), RateBps: dev.Info.RateBps, RingSize: dev.Info.RingSize,
		Qdisc: qd, Workload: w.Kind, Senders: w.Senders, Placement: placement, PacketSize: w.PacketSize, Flows: w.Flows}
	if spec.CPU != "" && spec.CPU != sim.DefaultCPU {
		rep.Setup.CPU = spec.CPU // shown when not the model's own
	}
	if xps, _ := netdev.ParseXPS(spec.XPS); xps != netdev.XPSIRQ {
		rep.Setup.XPS = string(xps) // shown when not the driver's own
	}
	rep.Setup.IRQCPUs = strings.TrimSpace(spec.IRQCPUs) // shown when set
	switch w.Kind {
	case workload.UDPStream:
		rep.Setup.Flows = w.Senders
		rep.Setup.LaunchNs = int64(w.Launch)
	case workload.TCPStream:
		rep.Setup.Senders, rep.Setup.Flows, rep.Setup.PacketSize = w.Flows, w.Flows+w.Down, tcp.MSS
	case workload.Forward:
		rep.Setup.OfferedPps = w.Rate
		rep.Setup.Senders, rep.Setup.Placement = 0, ""
		rep.Setup.RxQueues = spec.RxQueues
		if rep.Setup.RxQueues == 0 {
			rep.Setup.RxQueues = spec.Queues
		}
		rep.Setup.RxPort = spec.RxPort
		if rep.Setup.RxPort == "" {
			rep.Setup.RxPort = RxPortSame
		}
		rep.Setup.Arrival = w.Arrival
		if rep.Setup.Arrival == "" {
			rep.Setup.Arrival = workload.ArrivalConstant
		}
	default:
		rep.Setup.OfferedPps = w.Rate
	}
	for i := range spec.Also {
		a := spec.alsoSpec(i)
		g := report.SetupGroup{Workload: a.Kind, Senders: a.Senders, Placement: a.PlacementWord(), LaunchNs: int64(a.Launch),
			PacketSize: a.PacketSize, Flows: a.FlowCount()}
		if a.Kind == workload.UDPRate {
			g.OfferedPps = a.Rate
		}
		rep.Setup.Also = append(rep.Setup.Also, g)
	}
	rep.Config = map[string]string{}
	for _, k := range netdev.ToggleNames() {
		rep.Config[k] = cfg.Get(k)
	}
	rep.Costs = map[string]int64{}
	for _, c := range costs.List() {
		rep.Costs[c.Name] = c.Value
	}
	rep.DurationNs, rep.WarmupNs, rep.WindowNs = int64(spec.Duration), int64(spec.Warmup), int64(spec.Duration-spec.Warmup)
}

func fillResults(rep *report.Report, net *netdev.Net, e *sim.Engine, dev *netdev.Device, wls []*workload.Workload, snap snapshot, spec Spec) {
	end := take(net, e)
	window := end.at - snap.at
	if window <= 0 {
		window = 1
	}
	rep.WindowNs = int64(window)
	rep.OfferedPackets, rep.TxPackets, rep.TxBytes = net.Offered, net.TxPkts, net.TxBytes
	rep.DroppedPackets = net.DroppedPackets()
	rep.InFlightPackets = net.InFlightPackets()
	rep.Drops = end.drops
	rep.InFlightWhere = net.InFlight()
	if err := net.CheckAccounting(); err != nil {
		rep.AccountingError = err.Error()
	} else {
		rep.AccountingOK = true
	}
	rep.Window = report.Window{OfferedPackets: end.offered - snap.offered, TxPackets: end.tx - snap.tx,
		TxBytes: end.txBytes - snap.txBytes, Drops: map[string]uint64{}}
	for k, v := range end.drops {
		if d := v - snap.drops[k]; d > 0 {
			rep.Window.Drops[k] = d
		}
	}
	tasks := threadsByCPU(e)
	var busy sim.Time
	for i, c := range e.CPUs {
		b := end.cpus[i].Busy - snap.cpus[i].Busy
		busy += b
		if b > 0 || tasks[i] > 0 {
			rep.CPUs = append(rep.CPUs, mpstatCPU(report.CPU{CPU: i, Socket: c.Socket, Core: c.Core, Tasks: tasks[i]},
				snap.cpus[i], end.cpus[i], window))
		}
	}
	rep.Window.CPUBusyNs = int64(busy)
	secs := float64(window) / float64(sim.Second)
	rep.TxPps = float64(rep.Window.TxPackets) / secs
	rep.TxBps = float64(rep.Window.TxBytes) * 8 / secs
	rep.CPUBusyPct = 100 * float64(busy) / (float64(window) * float64(len(e.CPUs)))
	vm := vmstat(snap, end, len(e.CPUs))
	rep.CPUSysPct, rep.CPUIrqPct, rep.CPUSoftPct, rep.CPUIdlePct = vm.SysPct, vm.IrqPct, vm.SoftPct, vm.IdlePct
	rep.RunnableAvg, rep.ContextSwitchesPerS, rep.InterruptsPerS = vm.Runnable, vm.CSPerS, vm.InPerS
	rep.LockCPUs = spec.LockCPUs
	if rep.Window.TxPackets > 0 {
		rep.CPUNsPerPacket = float64(busy) / float64(rep.Window.TxPackets)
	}
	rep.Counters = map[string]uint64{
		"netif_schedule":         net.NetifSchedule,
		"netif_schedule_skipped": net.NetifScheduleSkipped,
		"net_tx_softirq_raised":  net.TxSoftirqRaised,
		"defer_drops":            net.DeferDrops,
		"bypass_xmit":            net.Bypass,
	}
	for i, st := range net.Sched {
		if st.Calls > 0 {
			rep.NetifSchedule = append(rep.NetifSchedule, report.SchedCaller{Caller: netdev.SchedCaller(i).String(),
				Calls: st.Calls, Skipped: st.Skipped, AlreadySched: st.AlreadySched, Raised: st.Raised,
				TxActionTakes: st.TxActionTakes - snap.netSched[i].TxActionTakes, TxActionWaitNs: int64(st.TxActionWait - snap.netSched[i].TxActionWait)})
		}
	}
	rep.NetTxAction = report.TxAction{Qdiscs: net.TxAction.Qdiscs, FoundRunning: net.TxAction.FoundRunning,
		Empty: net.TxAction.Empty, Packets: net.TxAction.Packets}
	var sleeps, wakeups, senderDrops, migrations uint64
	for _, wl := range wls { // every sender group's
		for _, s := range wl.Sockets {
			sleeps += s.Sleeps
			wakeups += s.Wakeups
			senderDrops += s.Dropped
		}
		for _, t := range wl.Tasks {
			migrations += t.Migrations
		}
	}
	var ksoftirqd uint64
	for _, t := range e.Tasks() {
		if strings.HasPrefix(t.Name, "ksoftirqd/") {
			ksoftirqd += t.Wakeups
		}
	}
	rep.Counters["sender_sndbuf_sleeps"] = sleeps
	rep.Counters["sender_sndbuf_wakeups"] = wakeups
	rep.Counters["sender_xmit_drop_seen"] = senderDrops
	rep.Counters["sender_migrations"] = migrations
	rep.Counters["ksoftirqd_wakeups"] = ksoftirqd
	if net.Clones > 0 {
		rep.Counters["qdisc_clones"] = net.Clones // only when a qdisc duplicated, so other reports keep their keys
	}
	if net.RootGrafts+net.MQGrafts+net.NoopDrops > 0 { // only when tc grafted under traffic or deleted an mq child
		rep.Counters["root_grafts"] = net.RootGrafts
		rep.Counters["mq_grafts"] = net.MQGrafts
		rep.Counters["graft_deactivated_ns"] = net.DeactivatedNs
		rep.Counters["noop_drops"] = net.NoopDrops
	}
	// softnet_stat's dropped column summed over the CPUs (every
	// enqueue_to_backlog drop), and the part of it that were packets for
	// the host's sockets: those are not offered, so they are not in drops
	// (the TX identity's reasons). Only when some, so other reports keep
	// their keys.
	var softnetDropped uint64
	for cpu := range e.CPUs {
		softnetDropped += net.Softnet(cpu).Dropped
	}
	if softnetDropped > 0 {
		rep.Counters["softnet_dropped"] = softnetDropped
	}
	if d := net.LocalTCDropped(); d > 0 {
		rep.Counters["local_tc_dropped"] = d
	}
	if d := net.LocalDropped(); d > 0 {
		rep.Counters["local_backlog_dropped"] = d
	}
	if net.GSOSegments > 0 {
		rep.Counters["gso_segments"] = net.GSOSegments // only when a qdisc split GSO skbs (cake's split-gso)
	}
	if net.Deferred > 0 { // only with tx_defer_free
		rep.Counters["skb_deferred"] = net.Deferred
		rep.Counters["skb_defer_ipis"] = net.DeferIPIs
		rep.Counters["skb_defer_full"] = net.DeferFull
	}
	for _, a := range e.ActProfileOf().Totals() {
		rep.CPUProfile = append(rep.CPUProfile, report.ProfileRow{Activity: a.Name, WorkNs: a.Work, SpinNs: a.Spin})
	}
	for _, l := range e.LockStats() {
		if l.Acquired == 0 {
			continue
		}
		rep.Locks = append(rep.Locks, report.Lock{Name: l.Name, Acquired: l.Acquired, Contended: l.Contended,
			TotalWaitNs: int64(l.TotalWait), MaxWaitNs: int64(l.MaxWait), AvgWaitNs: int64(l.AvgWait()), HoldNs: int64(l.HoldTotal),
			MCSContended: l.Queued, MCSTotalWaitNs: int64(l.QueuedWait), MCSMaxWaitNs: int64(l.QueuedMax), MCSAvgWaitNs: int64(l.QueuedAvgWait())})
	}
	drv := dev.Drv.Stats()
	rep.Ethtool = ethtoolStats(driver.EthtoolLines(drv), snap.ethtool, secs)
	for i, q := range dev.Queues {
		rq := report.Queue{Txq: i, TxPackets: q.TxPackets, TxBytes: q.TxBytes, Stops: q.Stops, Wakes: q.Wakes,
			Requeues: q.Requeues, BQLLimit: q.DQL.Limit, Inflight: q.DQL.Inflight(), IRQCPU: dev.TxqIRQCPU(i),
			TxPps: float64(end.qpkts[i]-snap.qpkts[i]) / secs, TxBps: float64(end.qbytes[i]-snap.qbytes[i]) * 8 / secs}
		if i < len(drv) {
			ds := drv[i]
			rq.Ethtool = []report.KV{{Key: "tx_busy", Value: int64(ds.Busy)}, {Key: "tx_restart", Value: int64(ds.Restart)},
				{Key: "tx_stopped", Value: int64(ds.Stopped)}, {Key: "doorbells", Value: int64(ds.Doorbells)},
				{Key: "irqs", Value: int64(ds.Irqs)}, {Key: "napi_polls", Value: int64(ds.Polls)}}
			for _, x := range ds.Extra {
				rq.Ethtool = append(rq.Ethtool, report.KV{Key: x.Name, Value: int64(x.Value)})
			}
		}
		rep.Queues = append(rep.Queues, rq)
	}
	for _, wl := range wls {
		for _, s := range wl.Sockets {
			if q := s.TxQueue(); q >= 0 && q < len(rep.Queues) {
				rep.Queues[q].Sockets++
			}
		}
	}
	rep.Qdisc = qdiscRows(dev)
	rep.Classes = classRows(dev, snap.classBytes, secs)
	for _, f := range dev.Filters() {
		rep.Filters = append(rep.Filters, report.Filters{Parent: f.At.String(), Text: f.Text, Stats: f.Stats})
	}
	rep.Warnings = net.Warnings
	rep.Devices = deviceSections(rep, net, snap, end, secs, &spec)
	rep.XmitNs = histogram(&net.XmitHist)
	if net.DeferBatch.Count > 0 {
		h := histogram(&net.DeferBatch)
		rep.DeferBatch = &h
	}
	rep.Events = e.Events()
}

// ethtoolStats is the device's ethtool -S at the end, each line with
// its rate over the window (ethtool_stats.pl's "/sec").
func ethtoolStats(end, start []driver.Counter, secs float64) []report.EthtoolStat {
	was := map[string]uint64{}
	for _, c := range start {
		was[c.Name] = c.Value
	}
	out := make([]report.EthtoolStat, 0, len(end))
	for _, c := range end {
		st := report.EthtoolStat{Key: c.Name, Value: c.Value}
		if secs > 0 && c.Value >= was[c.Name] {
			st.PerS = float64(c.Value-was[c.Name]) / secs
		}
		out = append(out, st)
	}
	return out
}

// fillRx reports the forward workload's receive side: per RX queue what
// ethtool -S and the model count, the port's drops (softnet_stat is
// fillSoftnet's, for every workload).
func fillRx(rep *report.Report, net *netdev.Net, e *sim.Engine, d *netdev.Device, snap snapshot) {
	if d == nil {
		return
	}
	now := e.Now()
	qs := net.RxQueues(d, now)
	window := now - snap.at
	if window <= 0 {
		window = 1
	}
	secs := float64(window) / float64(sim.Second)
	key, dropped := net.RxPortDropped(d)
	rx := &report.Rx{Device: d.Name, Truesize: d.RxTruesize(), PortDropped: report.KV{Key: key, Value: int64(dropped)},
		MissedErrors: dropped}
	// snap.rxPkts holds every RX device's queues in net.Devs order.
	off := 0
	for _, dd := range net.Devs {
		if dd == d {
			break
		}
		off += dd.RxQueueCount()
	}
	for i, q := range qs {
		rq := report.RxQueue{Rxq: q.Queue, CPU: q.CPU, Packets: q.Packets, Bytes: q.Bytes, Missed: q.Dropped,
			NapiPolls: q.Polls, Irqs: q.Irqs, ItrUsecs: int64(q.ITR / sim.Microsecond), DimChanges: q.DIMChanges, Refills: q.Refills, RingSize: q.RingSize, RingUsed: q.Used,
			RingMax: q.MaxUsed, RingAvg: q.AvgUsed,
			Ethtool: []report.KV{{Key: q.PacketsKey, Value: int64(q.Packets)}, {Key: q.BytesKey, Value: int64(q.Bytes)}}}
		if j := off + i; j < len(snap.rxPkts) {
			rq.Pps = float64(q.Packets-snap.rxPkts[j]) / secs
		}
		rx.Queues = append(rx.Queues, rq)
	}
	rep.Rx = rx
}

// fillSoftnet reports /proc/net/softnet_stat's row of each CPU that
// used its backlog or polled a NAPI (the others' rows are all zero).
func fillSoftnet(rep *report.Report, net *netdev.Net, e *sim.Engine) {
	for cpu := range e.CPUs {
		st := net.Softnet(cpu)
		if st.Polls == 0 && st.Processed == 0 && st.Dropped == 0 && st.InputQlen+st.ProcessQlen == 0 {
			continue
		}
		rep.Softnet = append(rep.Softnet, report.Softnet{Processed: st.Processed, Dropped: st.Dropped, TimeSqueeze: st.TimeSqueeze,
			BacklogLen: st.InputQlen + st.ProcessQlen, CPU: cpu, InputQlen: st.InputQlen, ProcessQlen: st.ProcessQlen, NapiPolls: st.Polls})
	}
}

// fillSlabs reports the slab caches senders' skbs came from.
func fillSlabs(rep *report.Report, net *netdev.Net) {
	for _, k := range net.SlabCaches() {
		g := k.Geometry
		rep.Slabs = append(rep.Slabs, report.SlabCache{Name: g.Name, ObjectSize: g.ObjectSize, Order: g.Order, ObjsPerSlab: g.ObjsPerSlab,
			CPUPartial: g.CPUPartial, CPUPartialSlabs: g.CPUPartialSlabs, MinPartial: g.MinPartial,
			Slabs: k.Slabs(), Partial: k.Partial(), Stats: k.Stats.Map()})
	}
}

// fillLinks reports ip -s link's drop columns of every device.
func fillLinks(rep *report.Report, net *netdev.Net) {
	for _, d := range net.Devs {
		s := d.Link()
		l := report.Link{Name: d.Name, RxDropped: s.RxDropped, TxDropped: s.TxDropped}
		if p, ok := d.LinkPeer(); ok {
			l.Peer = &report.LinkPeer{RxDropped: p.RxDropped, TxDropped: p.TxDropped}
		}
		rep.Links = append(rep.Links, l)
	}
}

// qdiscRows are the device's qdiscs as tc_dump_qdisc reports them: the
// root first (an mq-style root sums its children, as mq_dump does), then
// the children, in creation order (report.WriteText prints tc's order).
// qdiscRow is one qdisc as tc -s -d qdisc show reports it.
func qdiscRow(q *netdev.Qdisc) report.Qdisc {
	st := q.Ops.Stats()
	r := report.Qdisc{Handle: q.Handle.QdiscString(), Parent: q.Parent.String(), Kind: q.Kind, Options: q.Ops.Dump(), Stab: q.StabText(),
		SentPackets: q.SentPkts, SentBytes: q.SentBytes, Dropped: st.Drops, Overlimits: st.Overlimits,
		Requeues: q.Requeues, BacklogPackets: q.Qlen(), BacklogBytes: q.Backlog(), DeferMax: q.DeferMax,
		Invisible: q.Invisible(), UnderClass: q.ParentQdisc() != nil}
	for _, x := range st.XStats {
		r.XStats = append(r.XStats, report.XStat{Key: x.Key, Value: json.Number(x.Number()), Text: x.Text()})
	}
	return r
}

func qdiscRows(dev *netdev.Device) []report.Qdisc {
	out := treeRows(dev)
	if kind, pkts, bytes, drops, ok := dev.Clsact(); ok {
		// tc_dump_qdisc lists the ingress queue's qdisc last
		opts := ""
		if kind == "ingress" {
			opts = "----------------" // ingress_print_opt
		}
		out = append(out, report.Qdisc{Handle: "ffff:", Parent: tc.Clsact.String(), Kind: kind, Options: opts,
			SentPackets: pkts, SentBytes: bytes, Dropped: drops})
	}
	return out
}

// treeRows are the root's tree: a single root and the qdiscs under its
// classes, or an mq-style root and its children.
func treeRows(dev *netdev.Device) []report.Qdisc {
	if dev.Root != nil {
		out := []report.Qdisc{qdiscRow(dev.Root)}
		for _, q := range dev.Tree {
			out = append(out, qdiscRow(q))
		}
		return out
	}
	root := report.Qdisc{Handle: dev.RootHandle.QdiscString(), Parent: tc.Root.String(), Kind: dev.RootKind}
	if dev.RootStab != nil {
		root.Stab = dev.RootStab.String()
	}
	switch {
	case dev.RootKind == "mqprio":
		root.Options = dev.MQPrioOptions() // the device's traffic classes
	case dev.RootKind != "mq" && len(dev.Children) > 0:
		// cake_mq_dump: the configuration its children share.
		root.Options = dev.Children[0].Ops.Dump()
	}
	out := []report.Qdisc{root}
	for _, c := range dev.Children {
		r := qdiscRow(c)
		addStats(&out[0], r)
		out = append(out, r)
	}
	return out
}

// addStats adds a child's counters to sum, as mq_dump and
// mqprio_dump_class_stats add their queues' (gnet_stats_add_basic,
// gnet_stats_add_queue).
func addStats(sum *report.Qdisc, r report.Qdisc) {
	sum.SentPackets += r.SentPackets
	sum.SentBytes += r.SentBytes
	sum.Dropped += r.Dropped
	sum.Overlimits += r.Overlimits
	sum.Requeues += r.Requeues
	sum.BacklogPackets += r.BacklogPackets
	sum.BacklogBytes += r.BacklogBytes
	sum.DeferMax = max(sum.DeferMax, r.DeferMax)
}

// classQdiscs are the device's classful qdiscs in the order
// tc_dump_tclass_root visits them: the root, then the others (the report
// lists them in creation order; the text report prints tc's order).
func classQdiscs(dev *netdev.Device) []*netdev.Qdisc {
	var out []*netdev.Qdisc
	all := append(append([]*netdev.Qdisc{dev.Root}, dev.Children...), dev.Tree...)
	for _, q := range all {
		if q != nil && q.Classful() {
			out = append(out, q)
		}
	}
	return out
}

// classBytes are the sent bytes of every class, by classid.
func classBytes(dev *netdev.Device) map[string]uint64 {
	out := map[string]uint64{}
	for _, q := range classQdiscs(dev) {
		for _, cl := range q.Classes() {
			out[cl.ID.String()] = cl.SentBytes
		}
	}
	for i, c := range mqChildren(dev) {
		out[mqClassID(dev, i).String()] = c.SentBytes
	}
	for _, r := range mqprioClassRows(dev, nil, 0) {
		out[r.ClassID] = r.SentBytes
	}
	return out
}

// mqprioClassRows are mqprio's traffic classes, MAJ:ffe0+k, as
// mqprio_walk lists them before the queues' classes: parent root, no
// leaf, the counters of the queues' qdiscs summed
// (mqprio_dump_class_stats). None for another root.
func mqprioClassRows(dev *netdev.Device, start map[string]uint64, secs float64) []report.Class {
	if dev.RootKind != "mqprio" || dev.Root != nil {
		return nil
	}
	var out []report.Class
	for k := 0; k < dev.NumTC(); k++ {
		var q report.Qdisc
		off, cnt := dev.MQPrioQueues(k)
		for i := off; i < off+cnt && i < len(dev.Children); i++ {
			addStats(&q, qdiscRow(dev.Children[i]))
		}
		r := classOfQdiscRow(mqprioClassID(dev, k), "root", "mqprio", q)
		if secs > 0 {
			r.SentBps = float64(r.SentBytes-start[r.ClassID]) * 8 / secs
		}
		out = append(out, r)
	}
	return out
}

// mqChildren are the per-queue qdiscs of an mq, mqprio or cake_mq root,
// whose classes mq_walk and mqprio_walk list (cake_mq takes mq's class
// ops): none for any other root.
func mqChildren(dev *netdev.Device) []*netdev.Qdisc {
	if dev.Root != nil || (!netdev.MQRoot(dev.RootKind) && dev.RootKind != "cake_mq") {
		return nil
	}
	return dev.Children
}

// mqprioClassID is traffic class k's class, MAJ:ffe0+k
// (TC_H_MIN_PRIORITY + k).
func mqprioClassID(dev *netdev.Device, k int) string {
	return qdisc.MakeClassID(dev.RootHandle.Major(), uint16(netdev.TCHMinPriority+k)).String()
}

// classOfQdiscRow is a class of an mq-style root of kind whose counters
// are q's (its queue's qdisc's, or mqprio's queues' summed).
func classOfQdiscRow(id, parent, kind string, q report.Qdisc) report.Class {
	return report.Class{ClassID: id, Parent: parent, Kind: kind,
		SentPackets: q.SentPackets, SentBytes: q.SentBytes, Dropped: q.Dropped, Overlimits: q.Overlimits,
		Requeues: q.Requeues, BacklogPackets: q.BacklogPackets, BacklogBytes: q.BacklogBytes}
}

// mqClassID is TX queue i's class, TC_H_MAKE(sch->handle, i + 1).
func mqClassID(dev *netdev.Device, i int) qdisc.ClassID {
	return qdisc.MakeClassID(dev.RootHandle.Major(), uint16(i+1))
}

// classRows are every class as tc -s -d class show reports it, with its
// rate over the window (from start, its sent bytes then).
func classRows(dev *netdev.Device, start map[string]uint64, secs float64) []report.Class {
	var out []report.Class
	for _, q := range classQdiscs(dev) {
		for _, cl := range q.Classes() {
			r := report.Class{ClassID: cl.ID.String(), Parent: cl.Parent.String(), Kind: q.Kind, Options: cl.Options,
				SentPackets: cl.SentPackets, SentBytes: cl.SentBytes, Dropped: cl.Drops, Overlimits: cl.Overlimits}
			if cl.Parent == qdisc.RootClass {
				r.Parent = "root"
			}
			if leaf := q.LeafOf(cl.ID); leaf != nil {
				if leaf.Handle != 0 {
					r.Leaf = leaf.Handle.QdiscString()
				}
				if !cl.NoStats {
					r.BacklogPackets, r.BacklogBytes = leaf.Qlen(), leaf.Backlog()
				}
			}
			if secs > 0 {
				r.SentBps = float64(cl.SentBytes-start[r.ClassID]) * 8 / secs
			}
			for _, x := range cl.XStats {
				r.XStats = append(r.XStats, report.XStat{Key: x.Key, Value: json.Number(x.Number()), Text: x.Text()})
				switch x.Key {
				case "borrowed":
					r.Borrowed = x.Bits
				case "lended":
					r.Lended = x.Bits
				}
			}
			out = append(out, r)
		}
	}
	// mq_dump_class and mq_dump_class_stats: a class per TX queue, its
	// leaf the queue's qdisc (tcm_info: its handle), its counters the
	// leaf's, requeues included; mqprio's after its traffic classes,
	// each under its class (none if no class holds the queue).
	out = append(out, mqprioClassRows(dev, start, secs)...)
	for i, c := range mqChildren(dev) {
		q := qdiscRow(c) // the counters of the queue's line in tc qdisc show
		parent := "root"
		if dev.RootKind == "mqprio" {
			parent = ""
			if k := dev.TxqToTC(i); k >= 0 {
				parent = mqprioClassID(dev, k)
			}
		}
		r := classOfQdiscRow(mqClassID(dev, i).String(), parent, dev.RootKind, q)
		if c.Handle != 0 {
			r.Leaf = q.Handle
		}
		if secs > 0 {
			r.SentBps = float64(c.SentBytes-start[r.ClassID]) * 8 / secs
		}
		out = append(out, r)
	}
	return append(out, flowClassRows(dev)...)
}

// flowClassRows are the classes of the device's classless qdiscs that
// list their active flows (fq_codel, sfq, cake: netdev.Qdisc.FlowClasses),
// qdisc by qdisc (the root, the mq children, the others), after the
// classful qdiscs' and mq's classes (a classful root's come first in
// tc_dump_tclass_root; the report's text orders the rest as tc does).
// Each has no leaf and no options; its backlog, drops and xstats are
// the flow's (dump_class_stats), its sent counters 0 as the kernel's.
func flowClassRows(dev *netdev.Device) []report.Class {
	var out []report.Class
	// An mq or cake_mq root's children are all 0: and share one
	// qdisc_hash bucket, newest first: the last queue's flows come
	// first in tc_dump_tclass_root, and the text's order, which groups
	// classes by major, keeps theirs as listed here.
	children := slices.Clone(dev.Children)
	slices.Reverse(children)
	all := append(append([]*netdev.Qdisc{dev.Root}, children...), dev.Tree...)
	for _, q := range all {
		if q == nil || q.Classful() {
			continue
		}
		for _, cl := range q.FlowClasses() {
			r := report.Class{ClassID: cl.ID.String(), Parent: cl.Parent.String(), Kind: q.Kind,
				Dropped: cl.Drops, BacklogPackets: cl.Qlen, BacklogBytes: cl.Backlog}
			for _, x := range cl.XStats {
				r.XStats = append(r.XStats, report.XStat{Key: x.Key, Value: json.Number(x.Number()), Text: x.Text()})
			}
			out = append(out, r)
		}
	}
	return out
}

func histogram(h *netdev.Log2Hist) report.Hist {
	out := report.Hist{Count: h.Count}
	if h.Count > 0 {
		out.MeanNs = float64(h.Sum) / float64(h.Count)
	}
	for i, n := range h.Buckets {
		if n == 0 {
			continue
		}
		lo, hi := int64(0), int64(1)
		if i > 0 {
			lo, hi = int64(1)<<(i-1), int64(1)<<i
		}
		out.Buckets = append(out.Buckets, report.Bucket{Lo: lo, Hi: hi, Count: n})
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].Lo < out.Buckets[j].Lo })
	return out
}

// threadsByCPU counts, per CPU, the threads whose CPU it is now
// (running, waiting or asleep), as ps -eLo psr does: every task but the
// per-CPU kernel threads (ksoftirqd) and the dead.
func threadsByCPU(e *sim.Engine) []int {
	n := make([]int, len(e.CPUs))
	for _, t := range e.Tasks() {
		if c := t.CPU(); c != nil && !t.Kthread() && t.State() != sim.TaskDead {
			n[c.ID]++
		}
	}
	return n
}
