package run

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
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
