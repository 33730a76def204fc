// Package run builds one simulated host from a Spec (topology, device,
// qdisc tree, senders, toggles, costs), runs it for the set virtual time,
// and returns a report.Report. Every front end (CLI flags, Tengo scripts)
// produces a Spec; the same Spec and seed always give the same report.
package run

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/trace"
	"github.com/txlab/txlab/framework/workload"
)

// ErrInterrupted is what a run stopped by Options.Stop returns.
var ErrInterrupted = errors.New("interrupted")

// SetupError is a run that failed before simulating anything: a value
// that only the built host can refuse (an unknown driver or qdisc
// option, a plugin that does not start, an offered rate above what the
// link carries). Check finds these before any run starts.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Options say how RunWith runs a spec.
type Options struct {
	// Progress is told how far the run is (nil: nobody).
	Progress Progress
	// Trace records the host (nil: no tracing): the variant's phases as
	// wall-clock spans and sampled packet journeys in simulated time.
	Trace *trace.Run
	// Stop, once closed, stops the run at the next event boundary; it
	// then returns its partial report and ErrInterrupted.
	Stop <-chan struct{}
	// Log, if set, receives the lines the run's actions log (a script's
	// act.log), in place of the script's own log: runs that go at once
	// each keep theirs apart.
	Log io.Writer
	// Observe, if set, is handed the built host and its device before
	// the first event (a packet capture installs its tap there).
	Observe func(n *netdev.Net, dev *netdev.Device) error
	// MaxLiveSKBs, if above 0, is the bound on skbs alive at once in
	// place of MaxLiveSKBs (a test reaches a small one in little time).
	MaxLiveSKBs int
}

// Run executes spec. It always returns a report, partial on failure, with
// the accounting checked; err says what went wrong.
func Run(spec Spec, progress Progress) (*report.Report, error) {
	return RunWith(spec, Options{Progress: progress})
}

// RunTraced is Run recording the host into tr.
func RunTraced(spec Spec, progress Progress, tr *trace.Run) (*report.Report, error) {
	return RunWith(spec, Options{Progress: progress, Trace: tr})
}

// host is a built, not yet started, simulated host.
type host struct {
	e       *sim.Engine
	net     *netdev.Net
	dev     *netdev.Device
	rxDev   *netdev.Device // the forward workload's RX port (dev itself, or eth1)
	wl      *workload.Workload
	also    []*workload.Workload // Spec.Also's groups
	cfg     netdev.Config
	costs   *sim.Costs
	topo    sim.Topology
	irq     []int // --irq-cpus, parsed; nil: the driver's spread
	plugins *plugin.Host
}

// close unwinds the CPUs before it hands the plugin processes on: a task
// parked inside a plugin call puts the call back as it unwinds.
func (h *host) close() {
	if h.e != nil {
		h.e.Close()
	}
	if h.plugins != nil {
		h.plugins.Close()
	}
}

// addIfbs makes spec's ifb devices (--ifb), after the device the run
// transmits on and before its tc commands, which may name them.
func addIfbs(h *host, spec *Spec) error {
	ifbs, err := netdev.ParseIfbList(spec.Ifb)
	if err != nil {
		return fmt.Errorf("%s: %w", KnobByFlag("ifb").Name(), err)
	}
	for _, p := range ifbs {
		if _, err := h.net.AddIfb(p); err != nil {
			return fmt.Errorf("%s: %w", KnobByFlag("ifb").Name(), err)
		}
	}
	return nil
}

// setup validates spec and builds its host; errors are SetupErrors.
// Close the host when done, also on error.
func setup(spec *Spec) (*host, error) {
	h := &host{}
	fail := func(err error) (*host, error) { return h, &SetupError{err} }
	if err := spec.Validate(); err != nil {
		return fail(err)
	}
	var err error
	if h.cfg, h.costs, err = spec.build(); err != nil {
		return fail(err)
	}
	h.topo = sim.Topology{Sockets: spec.Sockets, CoresPerSocket: spec.Cores, ThreadsPerCore: spec.Threads}
	if h.irq, err = spec.irqCPUList(h.topo); err != nil {
		return fail(err)
	}
	if h.e, err = sim.NewEngine(h.topo, h.costs, spec.Seed); err != nil {
		return fail(err)
	}
	h.e.EnableActProfile() // the report's cpu_profile
	h.e.PvSpinlocks = h.cfg.PvSpinlocks
	// The host makes every qdisc and driver behind the plugin boundary:
	// the registered built-ins in process, plugins (and, isolated, the
	// built-ins) in their own processes.
	if h.plugins, err = plugin.NewHost(spec.Plugins); err != nil {
		return fail(err)
	}
	h.net = netdev.NewNet(h.e, h.cfg, h.plugins)
	var qwords []string
	if q := strings.TrimSpace(spec.rootQdisc()); q != "" {
		qwords = strings.Fields(q)
	}
	forward := spec.Workload.Kind == workload.Forward
	rxq := 0
	if forward {
		rxq = spec.RxQueues
		if rxq == 0 {
			rxq = spec.Queues // ethtool -L combined: queue pairs
		}
	}
	other := forward && spec.RxPort == RxPortOther
	xps, err := netdev.ParseXPS(spec.XPS)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", KnobByFlag("xps").Name(), err))
	}
	devRxq := rxq
	if other {
		devRxq = 0
	}
	if strings.TrimSpace(spec.Bond) != "" {
		return setupBonded(h, spec, qwords, xps)
	}
	tcpRun := spec.Workload.Kind == workload.TCPStream
	if tcpRun {
		devRxq = spec.Queues // ACKs and answers come back through the NIC's RX queues
	}
	h.dev, err = h.net.AddDevice(netdev.DeviceSpec{Name: report.Device, Driver: spec.Driver, Args: spec.DriverArgs,
		Queues: spec.Queues, RateBps: spec.RateBps, Qdisc: qwords, XPS: xps,
		IRQCPUs: h.irqCPUs(max(spec.Queues, devRxq)), RxQueues: devRxq})
	if tcpRun && errors.Is(err, netdev.ErrNoRxSide) {
		// veth: no NIC RX rings; what comes back is the peer's netif_rx.
		h.dev, err = h.net.AddDevice(netdev.DeviceSpec{Name: report.Device, Driver: spec.Driver, Args: spec.DriverArgs,
			Queues: spec.Queues, RateBps: spec.RateBps, Qdisc: qwords, XPS: xps, IRQCPUs: h.irqCPUs(spec.Queues)})
	}
	if err != nil {
		return fail(rxError(err, spec.Driver))
	}
	if err := addIfbs(h, spec); err != nil {
		return fail(err)
	}
	for _, b := range spec.TC {
		if err := h.net.TCBatch(h.dev, b.Name, b.Text); err != nil {
			return fail(err)
		}
	}
	if forward {
		h.rxDev = h.dev
		if other {
			// The second port of the NIC: as many queue pairs as RX
			// queues, its TX side unused, its IRQs on the same CPUs.
			h.rxDev, err = h.net.AddDevice(netdev.DeviceSpec{Name: RxPortDevice, Driver: spec.Driver, Args: spec.DriverArgs,
				Queues: rxq, RateBps: spec.RateBps, XPS: netdev.XPSIRQ, IRQCPUs: h.irqCPUs(rxq), RxQueues: rxq})
			if err != nil {
				return fail(rxError(err, spec.Driver))
			}
		}
		if most := h.rxDev.Info.Rx.MaxQueues; rxq > most {
			as := ""
			if spec.RxQueues == 0 {
				as = " (as many as --queues)"
			}
			return fail(fmt.Errorf("%s: %d RX queues%s is more than %s spreads RSS over: at most %d",
				KnobByFlag("rx-queues").Name(), rxq, as, spec.Driver, most))
		}
		if err := checkOfferedRate(spec.Workload.Rate, spec.Workload.PacketSize, h.rxDev); err != nil {
			return fail(err)
		}
		if h.wl, err = workload.StartForward(h.net, h.rxDev, h.dev, spec.Workload); err != nil {
			return fail(err)
		}
		if err := setLockCPUs(h, spec); err != nil {
			return fail(err)
		}
		return h, nil
	}
	if spec.Workload.Kind == workload.UDPRate {
		if err := checkOfferedRate(spec.Workload.Rate, spec.Workload.PacketSize, h.dev); err != nil {
			return fail(err)
		}
	}
	wspec := spec.Workload
	if tcpRun {
		if wspec, err = spec.tcpWorkload(); err != nil {
			return fail(err)
		}
	}
	if err := startSenders(h, spec, wspec); err != nil {
		return fail(err)
	}
	return h, nil
}

// startSenders starts the workload on the host's device, the script's
// other sender groups, and the perf-lock CPU set: the last steps of
// building a host whose senders are local.
func startSenders(h *host, spec *Spec, wspec workload.Spec) error {
	var err error
	if h.wl, err = workload.Start(h.net, h.dev, wspec); err != nil {
		return err
	}
	if err := startAlso(h, spec); err != nil {
		return err
	}
	return setLockCPUs(h, spec)
}

// setLockCPUs records lock contention on --lock-cpus only, as perf lock
// record -C does; forwarding and local senders alike.
func setLockCPUs(h *host, spec *Spec) error {
	cpus, err := spec.lockCPUs(h.topo)
	if err != nil {
		return err
	}
	h.e.SetLockCPUs(cpus)
	return nil
}

// RxPortDevice is the name of the forward workload's second port
// (--rx-port other).
const RxPortDevice = "eth1"

// RX ports of the forward workload.
const (
	RxPortSame  = "same"
	RxPortOther = "other"
)

// rxError names the knob when a driver has no receive side.
func rxError(err error, drv string) error {
	if errors.Is(err, netdev.ErrNoRxSide) {
		return fmt.Errorf("%s: driver %s has no NIC receive side; forward needs a NIC with RX rings (ice, i40e, idpf)",
			KnobByFlag("workload").Name(), drv)
	}
	return err
}

// Check builds spec's host without running it: every error a run would
// meet before simulating anything, as a SetupError. On that host it then
// tries the actions' checks (qdisc changes: the same call the run makes)
// in the order the run meets them, each on the state the ones before it
// left, so that a check refuses what the run would.
func Check(spec Spec) error {
	h, err := setup(&spec)
	defer h.close()
	if err != nil {
		return err
	}
	live := &Live{e: h.e, net: h.net, dev: h.dev, wl: h.wl, also: h.also, store: map[any]any{}}
	for i, a := range CheckActions(spec.Actions) {
		if err := a.Do(live); err != nil {
			return fmt.Errorf("%s: %w", actionWhen(a, i, 0), err)
		}
	}
	return nil
}

// wirePps is how many frames of payload bytes of UDP a link of rateBps
// carries per second (driver.WireBytes: padding, FCS, preamble, gap).
func wirePps(rateBps int64, payload int) float64 {
	l2 := payload + 8 + 20 + 14 // UDP, IPv4, Ethernet headers
	return float64(rateBps) / float64(8*driver.WireBytes(uint32(l2)))
}

// checkOfferedRate bounds an offered packet rate by what dev's link
// carries (a device without a wire, veth, has only workload.MaxRate).
func checkOfferedRate(pps float64, payload int, dev *netdev.Device) error {
	if !dev.Info.Wire || dev.Info.RateBps <= 0 {
		return nil
	}
	if most := wirePps(dev.Info.RateBps, payload); pps > most {
		return fmt.Errorf("offered rate %s packets/s is more than the %s link carries: at most %s packets/s of %d-byte payloads (--offered-rate, senders.rate)",
			formatCount(pps), formatRate(dev.Info.RateBps), formatCount(math.Floor(most)), payload)
	}
	return nil
}

// RunWith executes spec as o says. It always returns a report, partial
// on failure, with the accounting checked; err says what went wrong (a
// SetupError if nothing was simulated).
func RunWith(spec Spec, o Options) (*report.Report, error) {
	wall := time.Now()
	rep := &report.Report{Name: spec.Name, Profile: spec.Profile, Seed: spec.Seed}
	name := spec.Name
	if name == "" {
		name = spec.Profile
	}
	tv := o.Trace.Variant("variant "+name, attribute.String("profile", spec.Profile), attribute.Int64("seed", int64(spec.Seed)),
		attribute.String("qdisc", spec.Qdisc), attribute.String("driver", spec.Driver),
		attribute.Bool("plugins.isolate", spec.Plugins.Isolate), attribute.String("plugins.paths", strings.Join(spec.Plugins.Paths, ",")),
		attribute.String("plugins.dir", spec.Plugins.Dir))
	tv.Phase("setup")
	fail := func(err error) (*report.Report, error) {
		rep.Error = err.Error()
		rep.Normalize()
		tv.End(attribute.String("error", err.Error()))
		return rep, err
	}
	h, err := setup(&spec)
	defer h.close()
	defer func() { // also on the failure paths
		if h.plugins != nil {
			rep.PluginOverrides = h.plugins.Overrides()
		}
	}()
	if err != nil {
		return fail(err)
	}
	e, net, dev, wl := h.e, h.net, h.dev, h.wl
	limit := MaxLiveSKBs
	if o.MaxLiveSKBs > 0 {
		limit = o.MaxLiveSKBs
	}
	var tooMany *LiveSKBsError
	net.Pool.SetLimit(limit, func(live int) {
		tooMany = &LiveSKBsError{Live: live, Limit: limit, At: e.Now()}
		e.Interrupt(tooMany)
	})
	if o.Stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-o.Stop:
				e.Interrupt(ErrInterrupted)
			case <-done:
			}
		}()
	}
	fillSetup(rep, &spec, h.topo, dev, h.cfg, h.costs)
	rxDev := h.rxDev
	tv.Attach(net)
	if o.Observe != nil {
		if err := o.Observe(net, dev); err != nil {
			return fail(err)
		}
	}
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
	snap.classBytes = classBytes(dev)
	snap.ethtool = driver.EthtoolLines(dev.Drv.Stats())
	snap.devices = deviceStarts(net)
	net.Up() // dev_open: from here a root graft deactivates the device
	acts := newActionRunner(spec.Actions, &Live{e: e, net: net, dev: dev, wl: wl, also: h.also, store: map[any]any{}, log: o.Log}, spec.Duration)
	ts := newTCPSeries(wl)
	var runErr error
	prev := snap
	for t := sim.Time(0); t < spec.Duration && runErr == nil; {
		next := min(t+interval, spec.Duration)
		if t < spec.Warmup && next > spec.Warmup {
			next = spec.Warmup
		}
		runErr = acts.runUntil(e, next)
		cur := take(net, e)
		ts.sample(next)
		if next > spec.Warmup || spec.Warmup == 0 {
			rep.Series = append(rep.Series, interval_(prev, cur, t, next, net))
		}
		if spec.Warmup > 0 && next == spec.Warmup {
			tv.Phase("measure")
			snap = cur
			snap.classBytes = classBytes(dev)
			snap.ethtool = driver.EthtoolLines(dev.Drv.Stats())
			snap.devices = deviceStarts(net)
			e.ResetLockStats()
			e.ActProfileOf().Reset()
			net.XmitHist.Reset()
			net.DeferBatch.Reset()
		}
		prev = cur
		t = next
		if o.Progress != nil {
			o.Progress(t, spec.Duration)
		}
	}
	tv.Phase("report")
	if runErr != nil {
		net.LoseToDeadPlugins()
	}
	if tooMany != nil && errors.Is(runErr, tooMany) {
		tooMany.blame(net)
	}
	fillResults(rep, net, e, dev, append([]*workload.Workload{wl}, h.also...), snap, spec)
	fillTCP(rep, ts, spec, snap.at, e.Now())
	fillRx(rep, net, e, rxDev, snap)
	fillLinks(rep, net)
	fillSoftnet(rep, net, e)
	fillSlabs(rep, net)
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

// LiveSKBsError ends a run that had more than MaxLiveSKBs skbs alive at
// once: a queue that grows without end (a qdisc whose limit is far
// above what the link drains, as netem's with a long delay), which
// would hold the memory of every packet it takes.
type LiveSKBsError struct {
	Live  int      // skbs alive when the bound was passed
	Limit int      // the bound (MaxLiveSKBs)
	At    sim.Time // when
	// Qdisc is the qdisc that held the most packets when the run
	// stopped, and Held how many (its tree's).
	Qdisc string
	Held  int
}

func (e *LiveSKBsError) Error() string {
	msg := fmt.Sprintf("%d skbs in flight at %v of simulated time, more than the %d a run may hold", e.Live, e.At, e.Limit)
	if e.Qdisc != "" && e.Held >= e.Live/4 {
		return msg + fmt.Sprintf(": qdisc %s holds %d packets; a qdisc limit far above what the link drains lets its queue grow without end (lower the limit)", e.Qdisc, e.Held)
	}
	return msg + ": a queue grew without end (a qdisc's limit far above what the link drains, most likely)"
}

// blame names the qdisc that holds the most packets (the last of equals:
// a child before the root that counts its tree).
func (e *LiveSKBsError) blame(net *netdev.Net) {
	for _, q := range net.Qdiscs() {
		if n := q.Qlen(); n > 0 && n >= e.Held {
			e.Qdisc, e.Held = q.Name(), n
		}
	}
}

// summary is a report's headline as span attributes a user filters on:
// typed, rates rounded (a viewer prints a float's every digit).
func summary(rep *report.Report) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.Int64("tx_pps", int64(math.Round(rep.TxPps))),
		attribute.Float64("cpu_ns_per_packet", math.Round(rep.CPUNsPerPacket*10)/10),
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
		kv = append(kv, attribute.String("plugins.overrides", strings.Join(rep.PluginOverrides, "; ")))
	}
	return kv
}

// irqCPUs is where a device's vectors interrupt: the --irq-cpus list in
// vector order (wrapping round it), else ice's default IRQ affinity,
// vector i on the i-th CPU of the device's NUMA node
// (cpumask_local_spread), node 0 here.
func (h *host) irqCPUs(queues int) []int {
	if queues < 1 || queues > netdev.MaxQueues {
		return nil // AddDevice refuses the count, naming the bound
	}
	out := make([]int, 0, queues)
	if len(h.irq) > 0 {
		for i := 0; i < queues; i++ {
			out = append(out, h.irq[i%len(h.irq)])
		}
		return out
	}
	topo := h.topo
	for i := 0; i < queues; i++ {
		core := i % topo.CoresPerSocket
		thread := (i / topo.CoresPerSocket) % topo.ThreadsPerCore
		out = append(out, thread*topo.Sockets*topo.CoresPerSocket+core)
	}
	return out
}
