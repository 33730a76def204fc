// Package run builds one simulated host from a Spec (topology, device,
// qdisc tree, senders, toggles, costs), runs it for the set virtual time,
// and returns a report.Report. Every front end (CLI flags, Tengo scripts)
// produces a Spec; the same Spec and seed always give the same report.
package run

import (
	"encoding/json"
	"fmt"
	"github.com/txlab/txlab/framework/plugin"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/trace"
	"github.com/txlab/txlab/framework/workload"
)

// Spec is everything a run needs.
type Spec struct {
	Name    string
	Profile string
	// Plugins says what runs out of process; never in the report, which
	// is the same either way.
	Plugins plugin.Options `json:"-"`
	// Set are "name=value" overrides applied after the profile: a
	// TX-path toggle (netdev.ToggleNames) or "cost.<name>".
	Set []string

	Sockets, Cores, Threads int

	Driver     string
	DriverArgs []string
	Queues     int
	RateBps    int64
	RingSize   int
	Qdisc      string // tc words: "mq pfifo", "pfifo limit 100", "" for default

	Workload workload.Spec

	Duration sim.Time
	Warmup   sim.Time
	Interval sim.Time // time-series step; 0: Duration/20
	Seed     uint64

	// Actions change the host as simulated time runs (see actions.go).
	Actions []Action
}

// Default is the README's first experiment scaled to run in about a
// second: the seeds' E1 host and NIC with fewer senders.
func Default() Spec {
	return Spec{
		Profile: "6.19-rc1",
		Sockets: 2, Cores: 120, Threads: 2,
		Driver: "ice", Queues: 30, RateBps: 100_000_000_000,
		Qdisc:    "mq pfifo",
		Workload: workload.Spec{Kind: workload.UDPStream, Senders: 240, PacketSize: 120, Flows: 240, Placement: "spread"},
		Duration: 20 * sim.Millisecond,
		Warmup:   5 * sim.Millisecond,
		Seed:     1,
	}
}

// Progress is told how far the run is, in simulated time.
type Progress func(done, total sim.Time)

// build resolves the toggles and costs of a spec.
func (s *Spec) build() (netdev.Config, *sim.Costs, error) {
	cfg, err := netdev.Profile(s.Profile)
	if err != nil {
		return cfg, nil, err
	}
	costs := sim.DefaultCosts()
	for _, kv := range s.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, nil, fmt.Errorf("--set %q: want name=value", kv)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if name, isCost := strings.CutPrefix(k, "cost."); isCost {
			if err := costs.Set(name, v); err != nil {
				return cfg, nil, err
			}
			continue
		}
		if err := cfg.Set(k, v); err != nil {
			return cfg, nil, err
		}
	}
	return cfg, costs, nil
}

// Validate checks the parts of a spec that need no building.
func (s *Spec) Validate() error {
	switch {
	case s.Duration <= 0:
		return fmt.Errorf("duration must be > 0, got %dns", s.Duration)
	case s.Warmup < 0 || s.Warmup >= s.Duration:
		return fmt.Errorf("warmup must be in [0, duration), got %dns of %dns", s.Warmup, s.Duration)
	case s.Interval < 0:
		return fmt.Errorf("interval must be >= 0, got %dns", s.Interval)
	case s.RateBps < 0:
		return fmt.Errorf("link rate must be >= 0, got %d", s.RateBps)
	}
	if err := validateActions(s.Actions); err != nil {
		return err
	}
	return s.Workload.Validate()
}

// Run executes spec. It always returns a report, partial on failure, with
// the accounting checked; err says what went wrong.
func Run(spec Spec, progress Progress) (*report.Report, error) {
	return RunTraced(spec, progress, nil)
}

// RunTraced is Run recording the host into tr (nil: no tracing): the
// variant's phases as wall-clock spans and sampled packet journeys in
// simulated time.
func RunTraced(spec Spec, progress Progress, tr *trace.Run) (*report.Report, error) {
	wall := time.Now()
	rep := &report.Report{Name: spec.Name, Profile: spec.Profile, Seed: spec.Seed}
	name := spec.Name
	if name == "" {
		name = spec.Profile
	}
	tv := tr.Variant("variant "+name, attribute.String("profile", spec.Profile), attribute.Int64("seed", int64(spec.Seed)),
		attribute.String("qdisc", spec.Qdisc), attribute.String("driver", spec.Driver),
		attribute.Bool("plugins.isolate", spec.Plugins.Isolate), attribute.StringSlice("plugins.paths", spec.Plugins.Paths),
		attribute.String("plugins.dir", spec.Plugins.Dir))
	tv.Phase("setup")
	fail := func(err error) (*report.Report, error) {
		rep.Error = err.Error()
		rep.Normalize()
		tv.End(attribute.String("error", err.Error()))
		return rep, err
	}
	if err := spec.Validate(); err != nil {
		return fail(err)
	}
	cfg, costs, err := spec.build()
	if err != nil {
		return fail(err)
	}
	topo := sim.Topology{Sockets: spec.Sockets, CoresPerSocket: spec.Cores, ThreadsPerCore: spec.Threads}
	e, err := sim.NewEngine(topo, costs, spec.Seed)
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	net := netdev.NewNet(e, cfg)
	var host *plugin.Host
	if spec.Plugins.Enabled() {
		if host, err = plugin.NewHost(spec.Plugins); err != nil {
			return fail(err)
		}
		defer host.Close()
		net.Plugins = host
		defer func() { rep.PluginOverrides = host.Overrides() }() // also on the failure paths
	}
	var qwords []string
	if q := strings.TrimSpace(spec.Qdisc); q != "" {
		qwords = strings.Fields(q)
	}
	dev, err := net.AddDevice(netdev.DeviceSpec{Name: "eth0", Driver: spec.Driver, Args: spec.DriverArgs,
		Queues: spec.Queues, RateBps: spec.RateBps, RingSize: spec.RingSize, Qdisc: qwords, XPS: true,
		IRQCPUs: irqCPUs(topo, spec.Queues)})
	if err != nil {
		return fail(err)
	}
	wl, err := workload.Start(net, dev, spec.Workload)
	if err != nil {
		return fail(err)
	}
	fillSetup(rep, &spec, topo, dev, cfg, costs)
	tv.Attach(net)
	if spec.Warmup > 0 {
		tv.Phase("warmup")
	} else {
		tv.Phase("measure")
	}

	interval := spec.Interval
	if interval == 0 {
		interval = max(spec.Duration/20, 1)
	}
	snap := take(net, e) // the window starts here unless there is a warmup
	acts := newActionRunner(spec.Actions, &Live{e: e, net: net, dev: dev, wl: wl, store: map[any]any{}}, spec.Duration)
	var runErr error
	prev := snap
	for t := sim.Time(0); t < spec.Duration && runErr == nil; {
		next := min(t+interval, spec.Duration)
		if t < spec.Warmup && next > spec.Warmup {
			next = spec.Warmup
		}
		runErr = acts.runUntil(e, next)
		cur := take(net, e)
		if next > spec.Warmup || spec.Warmup == 0 {
			rep.Series = append(rep.Series, interval_(prev, cur, t, next, net))
		}
		if spec.Warmup > 0 && next == spec.Warmup {
			tv.Phase("measure")
			snap = cur
			e.ResetLockStats()
			net.XmitHist.Reset()
		}
		prev = cur
		t = next
		if progress != nil {
			progress(t, spec.Duration)
		}
	}
	tv.Phase("report")
	if host != nil {
		rep.PluginOverrides = host.Overrides()
	}
	if runErr != nil {
		net.LoseToDeadPlugins()
	}
	fillResults(rep, net, e, dev, wl, snap, spec)
	acts.fillPhases(rep.Counters, take(net, e))
	rep.SimWallNs = time.Since(wall).Nanoseconds()
	rep.Normalize()
	if runErr != nil {
		return fail(runErr)
	}
	if !rep.AccountingOK {
		return fail(fmt.Errorf("%s", rep.AccountingError))
	}
	tv.End(summary(rep)...)
	return rep, nil
}

// summary is a report's headline as span attributes a user filters on.
func summary(rep *report.Report) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.Float64("tx_pps", rep.TxPps), attribute.Float64("cpu_ns_per_packet", rep.CPUNsPerPacket),
		attribute.Int64("tx_packets", int64(rep.TxPackets)), attribute.Int64("dropped_packets", int64(rep.DroppedPackets))}
	reasons := make([]string, 0, len(rep.Drops))
	for r := range rep.Drops {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		kv = append(kv, attribute.Int64("drops."+r, int64(rep.Drops[r])))
	}
	if len(rep.PluginOverrides) > 0 {
		kv = append(kv, attribute.StringSlice("plugins.overrides", rep.PluginOverrides))
	}
	return kv
}

// irqCPUs is ice's default IRQ affinity: vector i on the i-th CPU of
// the device's NUMA node (cpumask_local_spread), node 0 here.
func irqCPUs(topo sim.Topology, queues int) []int {
	out := make([]int, 0, queues)
	for i := 0; i < queues; i++ {
		core := i % topo.CoresPerSocket
		thread := (i / topo.CoresPerSocket) % topo.ThreadsPerCore
		out = append(out, thread*topo.Sockets*topo.CoresPerSocket+core)
	}
	return out
}

// snapshot holds cumulative counters at one instant.
type snapshot struct {
	at      sim.Time
	offered uint64
	tx      uint64
	txBytes uint64
	drops   map[string]uint64
	dropped uint64
	busy    []sim.Time
	qpkts   []uint64 // per txq, completed
	qbytes  []uint64
}

func take(net *netdev.Net, e *sim.Engine) snapshot {
	s := snapshot{at: e.Now(), offered: net.Offered, tx: net.TxPkts, txBytes: net.TxBytes,
		drops: map[string]uint64{}, dropped: net.DroppedPackets()}
	for r, v := range net.Drops {
		s.drops[string(r)] = v
	}
	s.busy = make([]sim.Time, len(e.CPUs))
	for i, c := range e.CPUs {
		s.busy[i] = c.Busy()
	}
	for _, d := range net.Devs {
		for _, q := range d.Queues {
			s.qpkts = append(s.qpkts, q.TxPackets)
			s.qbytes = append(s.qbytes, q.TxBytes)
		}
	}
	return s
}

func interval_(a, b snapshot, from, to sim.Time, net *netdev.Net) report.Interval {
	iv := report.Interval{StartNs: from, EndNs: to, TxPackets: b.tx - a.tx, Offered: b.offered - a.offered, Drops: b.dropped - a.dropped}
	if to > from {
		iv.TxPps = float64(iv.TxPackets) * float64(sim.Second) / float64(to-from)
	}
	for _, q := range net.Qdiscs() {
		iv.Backlog += int64(q.Qlen())
	}
	return iv
}

func fillSetup(rep *report.Report, spec *Spec, topo sim.Topology, dev *netdev.Device, cfg netdev.Config, costs *sim.Costs) {
	w := spec.Workload
	placement := w.Placement
	if placement == "" {
		placement = "spread"
	}
	qd := dev.RootKind
	if dev.Root != nil {
		qd = dev.Root.Spec()
	} else if len(dev.Children) > 0 {
		qd = dev.RootKind + " " + dev.Children[0].Spec()
	}
	rep.Setup = report.Setup{Sockets: topo.Sockets, CoresPerSocket: topo.CoresPerSocket, ThreadsPerCore: topo.ThreadsPerCore,
		CPUs: topo.NumCPUs(), Driver: spec.Driver, Queues: len(dev.Queues), RateBps: dev.Info.RateBps, RingSize: dev.Info.RingSize,
		Qdisc: qd, Workload: w.Kind, Senders: w.Senders, Placement: placement, PacketSize: w.PacketSize, Flows: w.Flows}
	if w.Kind == workload.UDPStream {
		rep.Setup.Flows = w.Senders
	} else {
		rep.Setup.OfferedPps = w.Rate
	}
	rep.Config = map[string]string{}
	for _, k := range netdev.ToggleNames() {
		rep.Config[k] = cfg.Get(k)
	}
	rep.Costs = map[string]int64{}
	for _, c := range costs.List() {
		rep.Costs[c.Name] = c.Value
	}
	rep.DurationNs, rep.WarmupNs, rep.WindowNs = spec.Duration, spec.Warmup, spec.Duration-spec.Warmup
}

func fillResults(rep *report.Report, net *netdev.Net, e *sim.Engine, dev *netdev.Device, wl *workload.Workload, snap snapshot, spec Spec) {
	end := take(net, e)
	window := end.at - snap.at
	if window <= 0 {
		window = 1
	}
	rep.WindowNs = window
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
	var busy sim.Time
	for i := range e.CPUs {
		b := end.busy[i] - snap.busy[i]
		busy += b
		if b > 0 {
			rep.CPUs = append(rep.CPUs, report.CPU{CPU: i, BusyPct: 100 * float64(b) / float64(window)})
		}
	}
	rep.Window.CPUBusyNs = busy
	secs := float64(window) / float64(sim.Second)
	rep.TxPps = float64(rep.Window.TxPackets) / secs
	rep.TxBps = float64(rep.Window.TxBytes) * 8 / secs
	rep.CPUBusyPct = 100 * float64(busy) / (float64(window) * float64(len(e.CPUs)))
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
	var sleeps, senderDrops uint64
	for _, s := range wl.Sockets {
		sleeps += s.Sleeps
		senderDrops += s.Dropped
	}
	rep.Counters["sender_sndbuf_sleeps"] = sleeps
	rep.Counters["sender_xmit_drop_seen"] = senderDrops
	for _, l := range e.LockStats() {
		if l.Acquired == 0 {
			continue
		}
		rep.Locks = append(rep.Locks, report.Lock{Name: l.Name, Acquired: l.Acquired, Contended: l.Contended,
			TotalWaitNs: l.TotalWait, MaxWaitNs: l.MaxWait, AvgWaitNs: l.AvgWait(), HoldNs: l.HoldTotal})
	}
	drv := dev.Drv.Stats()
	for i, q := range dev.Queues {
		rq := report.Queue{Txq: i, TxPackets: q.TxPackets, TxBytes: q.TxBytes, Stops: q.Stops, Wakes: q.Wakes,
			Requeues: q.Requeues, BQLLimit: q.DQL.Limit, Inflight: q.DQL.Inflight(),
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
	rep.Qdisc = qdiscRows(dev)
	rep.XmitNs = histogram(&net.XmitHist)
	rep.Events = e.Events()
}

func qdiscRows(dev *netdev.Device) []report.Qdisc {
	var out []report.Qdisc
	row := func(q *netdev.Qdisc) report.Qdisc {
		st := q.Ops.Stats()
		r := report.Qdisc{Handle: q.Handle, Parent: q.Parent, Kind: q.Kind, Options: q.Ops.Dump(),
			SentPackets: q.SentPkts, SentBytes: q.SentBytes, Dropped: st.Drops, Overlimits: st.Overlimits,
			Requeues: q.Requeues, BacklogPackets: q.Qlen(), BacklogBytes: q.Backlog(), DeferMax: q.DeferMax}
		for _, x := range st.XStats {
			r.XStats = append(r.XStats, report.XStat{Key: x.Key, Value: json.Number(x.Number()), Text: x.Text()})
		}
		return r
	}
	if len(dev.Children) > 0 {
		mq := report.Qdisc{Handle: "8001:", Parent: "root", Kind: dev.RootKind}
		for _, c := range dev.Children {
			r := row(c)
			mq.SentPackets += r.SentPackets
			mq.SentBytes += r.SentBytes
			mq.Dropped += r.Dropped
			mq.Overlimits += r.Overlimits
			mq.Requeues += r.Requeues
			mq.BacklogPackets += r.BacklogPackets
			mq.BacklogBytes += r.BacklogBytes
			mq.DeferMax = max(mq.DeferMax, r.DeferMax)
			out = append(out, r)
		}
		return append([]report.Qdisc{mq}, out...)
	}
	if dev.Root != nil {
		out = append(out, row(dev.Root))
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
