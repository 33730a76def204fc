// Package run builds one simulated host from a Spec (topology, device,
// qdisc tree, senders, toggles, costs), runs it for the set virtual time,
// and returns a report.Report. Every front end (CLI flags, Tengo scripts)
// produces a Spec; the same Spec and seed always give the same report.
package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/tcp"
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
	// CPU is the processor the host runs on (sim.CPUModels): its
	// cache-to-cache and DRAM latencies; "" is sim.DefaultCPU.
	CPU string

	Driver     string
	DriverArgs []string
	Queues     int
	RateBps    int64  // 0: the driver's default
	Qdisc      string // tc words: "mq pfifo", "pfifo limit 100", "" for default
	XPS        string // the XPS_CPUS map (netdev.XPSModes); "": the driver's (irq)
	// IRQCPUs is where the device's queue interrupts go, a CPU list in
	// queue order (/proc/irq/N/smp_affinity_list, as an administrator or
	// irqbalance sets it); "": the driver's (cpumask_local_spread).
	IRQCPUs string
	// RxQueues are the RX queues of the forward workload's RX port (0:
	// as many as Queues, ethtool -L combined); RxPort is "same" (the
	// DUT forwards back out of the port it receives on, the seeds'
	// case; "" means same) or "other" (a second port of the same model
	// receives, eth1).
	RxQueues int
	RxPort   string
	// Bond is `ip link add ... type bond` in words (bonding.ParseList):
	// the senders transmit on its first bond, whose slaves are NICs of
	// Driver with Queues, RateBps, DriverArgs and Qdisc; "" for one NIC.
	Bond string
	// Ifb is `ip link add NAME [numtxqueues N] [txqueuelen N] type ifb`
	// in words, several separated by ';' (netdev.ParseIfbList): ifb
	// devices for tc's mirred to redirect to; "" for none.
	Ifb string
	// TC are tc batches (`tc -batch` text) run on the device after the
	// root qdisc is made (--tc-file, a script's txlab.tc): qdiscs,
	// classes and filters.
	TC []TCBatch

	Workload workload.Spec
	// Also are more sender groups on the host beside Workload, started
	// with it (a script's txlab.senders([...])): udp_stream or udp_rate
	// groups, as 240 netperf UDP_STREAMs under the TCP flows and probes
	// of a tcp_stream Workload. Their sockets, flows and tasks are
	// numbered after Workload's and each other's; a timed action acts on
	// the group it names (Live's group 1 is Workload, 2 Also[0], ...) or
	// on every group.
	Also []workload.Spec
	// tcp_stream's knobs in words (tcp.go): the path's bottleneck rate
	// (tc's rate words, "" for none) and loss ("0.1%"), and a ping
	// probe's interval (0: none).
	PathRate     string
	PathRateDown string
	PathLoss     string
	Ping         sim.Time

	Duration sim.Time
	Warmup   sim.Time
	Interval sim.Time // time-series step; 0: Duration/20
	Seed     uint64

	// LockCPUs records the lock table on these CPUs only (a CPU list,
	// as perf lock record -C takes it); "": every CPU.
	LockCPUs string

	// Actions change the host as simulated time runs (see actions.go).
	Actions []Action

	// Given are the knobs a front end set explicitly (Give): a knob
	// none of a run's specs uses is refused (CheckGiven).
	Given []Given `json:"-"`
}

// Given is a knob (its flag name) set by a front end: the command line
// (By ""), a script ("script") or a sweep's grid ("--grid").
type Given struct{ Flag, By string }

// Give records that by set the knob flag (once; a copy of s keeps its
// own list).
func (s *Spec) Give(flag, by string) {
	if s.given(flag) {
		return
	}
	s.Given = append(s.Given[:len(s.Given):len(s.Given)], Given{flag, by})
}

// given reports whether a front end set the knob flag.
func (s *Spec) given(flag string) bool {
	for _, g := range s.Given {
		if g.Flag == flag {
			return true
		}
	}
	return false
}

// rootQdisc is the root the device gets: the spec's, except that the
// default (mq pfifo), when no front end gave --qdisc, is its child alone
// on a one-queue device, as attach_default_qdiscs puts the default
// qdisc on the only queue of a device that is not multiqueue (mq would
// refuse it).
func (s *Spec) rootQdisc() string {
	if s.Queues != 1 || s.Qdisc != defaultQdisc || s.given("qdisc") {
		return s.Qdisc
	}
	return "pfifo"
}

// CheckGiven refuses a knob given to specs (a run's variants, a sweep's
// points) none of which uses it: --offered-rate for udp_stream's
// closed-loop senders, --placement for forward, whose traffic comes
// from the wire. Silently ignored, it would let a user believe the run
// did what the knob says.
func CheckGiven(specs []Spec) error {
	by := map[string]string{}
	for _, s := range specs {
		for _, g := range s.Given {
			if _, ok := by[g.Flag]; !ok {
				by[g.Flag] = g.By
			}
		}
	}
	for _, k := range knobs { // the table's order: the same error every time
		b, ok := by[k.Flag]
		if !ok {
			continue
		}
		name := k.Name()
		switch b {
		case "":
		case "script":
			name = "the script's " + k.Script + " (--" + k.Flag + ")"
		default:
			name = b + " " + k.Flag
		}
		if err := k.Unused(specs, name); err != nil {
			return err
		}
	}
	return nil
}

// TCBatch is one tc batch: its text, and the name its errors give
// ("FILE:LINE: ...").
type TCBatch struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// defaultQdisc is the root of Default: mq with a pfifo on each queue.
const defaultQdisc = "mq pfifo"

// Default is what `txlab run` runs without flags and where a script
// starts: the seeds' E1 host and NIC (mq pfifo) scaled to run in about a
// second; for udp_rate, 16 flows at 1M packets/s. Every knob's default
// (Knobs) is its value here.
func Default() Spec {
	return Spec{
		Profile: "6.19-rc1",
		Sockets: 2, Cores: 120, Threads: 2,
		// RateBps 0: the driver's own line rate (ice 100G, i40e 25G, idpf
		// 200G), so that --driver alone gives the NIC's speed.
		Driver: "ice", Queues: 30, XPS: string(netdev.XPSIRQ),
		Qdisc: defaultQdisc,
		Workload: workload.Spec{Kind: workload.UDPStream, Senders: 240, PacketSize: 120, Flows: 16, Rate: 1e6,
			CC: tcp.CCCubic, Path: path.Config{RTT: 20 * sim.Millisecond, Limit: path.DefaultLimit}},
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
	if err := costs.ApplyCPU(s.CPU); err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", KnobByFlag("cpu").Name(), err)
	}
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
	if cfg.Lockdep {
		costs.ApplyLockdep()
	}
	return cfg, costs, nil
}

// Validate checks everything in a spec that needs no host built: every
// knob's range (Knobs), the topology, warmup and samples against the
// duration, the toggles and costs, the actions and the senders. The CLI
// and scripts both end here, so a value is refused the same way from
// either.
func (s *Spec) Validate() error {
	for _, k := range knobs {
		if err := k.check(s); err != nil {
			return err
		}
	}
	if err := s.CheckSenders(); err != nil {
		return err
	}
	topo := sim.Topology{Sockets: s.Sockets, CoresPerSocket: s.Cores, ThreadsPerCore: s.Threads}
	if err := topo.Validate(); err != nil {
		return err
	}
	if s.Warmup >= s.Duration {
		return fmt.Errorf("warmup %v must be shorter than duration %v (set --warmup, or warmup in the script, below it)", s.Warmup, s.Duration)
	}
	if s.Interval > 0 {
		if n := (s.Duration + s.Interval - 1) / s.Interval; n > MaxSamples {
			least := (s.Duration + MaxSamples - 1) / MaxSamples
			return fmt.Errorf("interval %v gives %d samples over duration %v, at most %d: use an interval of %v or more",
				s.Interval, n, s.Duration, MaxSamples, formatTime(least))
		}
	}
	if _, _, err := s.build(); err != nil {
		return err
	}
	if err := validateActions(s.Actions, s.Duration); err != nil {
		return err
	}
	if w := s.Workload; w.Launch > 0 && w.Kind != workload.UDPStream {
		return fmt.Errorf("%s: only udp_stream's netperf processes are launched one by one; %s senders all start at once",
			KnobByFlag("launch").Name(), w.Kind)
	}
	if s.Workload.Kind == workload.TCPStream {
		if _, err := s.tcpWorkload(); err != nil {
			return err
		}
	} else if err := s.Workload.Validate(); err != nil {
		return err
	}
	if s.Workload.Kind == workload.Forward {
		switch s.RxPort {
		case "", RxPortSame, RxPortOther:
		default:
			return fmt.Errorf("%s: %q is not %s or %s", KnobByFlag("rx-port").Name(), s.RxPort, RxPortSame, RxPortOther)
		}
	} else if s.Workload.Kind == workload.TCPStream {
		if _, _, err := workload.TCPPlace(&s.Workload, topo); err != nil { // a CPU list must name CPUs of the host
			return fmt.Errorf("--placement (senders.placement): %w", err)
		}
	} else if _, _, err := workload.Place(&s.Workload, topo); err != nil { // forward has no sender threads: the traffic comes from the wire
		if s.Workload.Placement == "" {
			return countError(s.Workload, topo.NumCPUs(), KnobByFlag("senders").Name(), "--placement")
		}
		return fmt.Errorf("--placement (senders.placement): %w", err)
	}
	if _, err := s.lockCPUs(topo); err != nil {
		return err
	}
	if _, err := s.irqCPUList(topo); err != nil {
		return err
	}
	if _, err := netdev.ParseXPS(s.XPS); err != nil {
		return fmt.Errorf("%s: %w", KnobByFlag("xps").Name(), err)
	}
	if w := s.Workload; w.Launch > 0 && w.Kind == workload.UDPStream {
		if last := sim.Time(w.Senders-1) * w.Launch; last >= s.Duration {
			return fmt.Errorf("%s: the last of %d senders would start at %v, after the run's %v",
				KnobByFlag("launch").Name(), w.Senders, last, s.Duration)
		}
	}
	for i := range s.Also {
		if err := s.validateAlso(i, topo); err != nil {
			return err
		}
	}
	if _, err := netdev.ParseIfbList(s.Ifb); err != nil {
		return fmt.Errorf("%s: %w", KnobByFlag("ifb").Name(), err)
	}
	return s.validateBond()
}

// CheckSenders checks the sender threads of every group together
// against --senders' range: each group's count is in range on its own,
// but the threads all run on the one host, and every thread costs its
// socket and task.
func (s *Spec) CheckSenders() error {
	total, groups := 0, 0
	if udpThreads(s) {
		total, groups = s.Workload.Senders, 1
	}
	for _, w := range s.Also {
		total += w.Senders
		groups++
	}
	if groups > 1 && total > workload.MaxSenders {
		return fmt.Errorf("%d sender threads in %d groups, at most %d in all (%s: its range is for every group together)",
			total, groups, workload.MaxSenders, KnobByFlag("senders").Name())
	}
	return nil
}

// countError is Place's error for a spec that gave no placement: the
// kind's default pins one sender per CPU and there are more senders
// than CPUs, so the count is what the user gave wrong (count names it,
// placement the way out).
func countError(w workload.Spec, ncpu int, count, placement string) error {
	return fmt.Errorf("%s: %d senders but only %d CPUs, and %s's default placement (%s) pins one sender per CPU: give at most %d, or %s unpinned to let them share CPUs",
		count, w.Senders, ncpu, w.Kind, w.PlacementWord(), ncpu, placement)
}

// validateAlso checks sender group i+2 (Also[i]): a UDP group beside a
// first group that has senders of its own.
func (s *Spec) validateAlso(i int, topo sim.Topology) error {
	w := s.alsoSpec(i)
	name := fmt.Sprintf("senders group %d (%s)", i+2, w.Kind)
	if s.Workload.Kind == workload.Forward {
		return fmt.Errorf("%s: forward's traffic comes from the wire; it runs with no sender groups beside it", name)
	}
	if w.Kind != workload.UDPStream && w.Kind != workload.UDPRate {
		return fmt.Errorf("%s: only udp_stream and udp_rate groups run beside a run's first group (tcp_stream is the first, if any)", name)
	}
	if err := w.Validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, _, err := workload.Place(&w, topo); err != nil {
		if w.Placement == "" {
			return fmt.Errorf("%s: %w", name, countError(w, topo.NumCPUs(), "count", "placement"))
		}
		return fmt.Errorf("%s: placement: %w", name, err)
	}
	if w.Launch > 0 {
		if last := sim.Time(w.Senders-1) * w.Launch; last >= s.Duration {
			return fmt.Errorf("%s: launch: the last of %d senders would start at %v, after the run's %v", name, w.Senders, last, s.Duration)
		}
	}
	return nil
}

// startAlso starts the sender groups beside the first on h's device.
func startAlso(h *host, spec *Spec) error {
	for i := range spec.Also {
		w := spec.alsoSpec(i)
		if w.Kind == workload.UDPRate {
			if err := checkOfferedRate(w.Rate, w.PacketSize, h.dev); err != nil {
				return fmt.Errorf("senders group %d: %w", i+2, err)
			}
		}
		wl, err := workload.Start(h.net, h.dev, w)
		if err != nil {
			return fmt.Errorf("senders group %d: %w", i+2, err)
		}
		h.also = append(h.also, wl)
	}
	return nil
}

// alsoSpec is Also[i] numbered after the groups before it.
func (s *Spec) alsoSpec(i int) workload.Spec {
	base := max(s.Workload.Sockets(), s.Workload.FlowCount())
	for _, w := range s.Also[:i] {
		base += max(w.Sockets(), w.FlowCount())
	}
	w := s.Also[i]
	w.Group, w.Base = i+1, base
	return w
}

// irqCPUList parses IRQCPUs (--irq-cpus) against topo's CPUs: nil for
// the driver's spread.
func (s *Spec) irqCPUList(topo sim.Topology) ([]int, error) {
	return cpuListKnob(s.IRQCPUs, "irq-cpus", topo)
}

// lockCPUs resolves LockCPUs on topo: nil for every CPU.
func (s *Spec) lockCPUs(topo sim.Topology) ([]int, error) {
	return cpuListKnob(s.LockCPUs, "lock-cpus", topo)
}

// cpuListKnob parses a CPU-list knob's value against topo's CPUs, nil
// when empty, its errors naming the knob.
func cpuListKnob(list, flag string, topo sim.Topology) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	cpus, err := workload.ParseCPUList(list, topo.NumCPUs())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KnobByFlag(flag).Name(), err)
	}
	return cpus, nil
}

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
