package run

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/workload"
)

// Action is something done to a running host at a point of simulated
// time: once at At, or at At, At+Every, ... while before Until (0: the end
// of the run). Actions run between engine steps, in engine context (no
// CPU is mid-step): every event up to that time has been processed.
// Actions due at the same time run in the order of Spec.Actions.
type Action struct {
	Name  string // shown in errors
	At    sim.Time
	Every sim.Time
	Until sim.Time
	Do    func(*Live) error
	// Check, if set, is the part of Do a dry run can try on the built
	// host before any time passes (a qdisc change: the same call that
	// runs it), so that a check refuses what the run would.
	Check func(*Live) error
}

// CheckActions returns the checks of acts as actions at time 0, in the
// order the run would meet them: a dry build runs them against its host,
// each on the state the ones before it left.
func CheckActions(acts []Action) []Action {
	var out []Action
	idx := make([]int, len(acts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool { return acts[idx[x]].At < acts[idx[y]].At })
	for _, i := range idx {
		if acts[i].Check != nil {
			out = append(out, Action{Name: "check of " + acts[i].Name, Do: acts[i].Check})
		}
	}
	return out
}

// LiveStats are cumulative counters at the instant an action runs.
type LiveStats struct {
	Now            sim.Time
	OfferedPackets uint64
	TxPackets      uint64
	TxBytes        uint64
	DroppedPackets uint64
	Drops          map[string]uint64 // by reason
	BacklogPackets int64             // all qdiscs
	Rate           float64           // udp_rate: the current total rate (of every udp_rate group)
	Senders        int               // of every group
	Running        int               // senders not paused
}

// Live is what an action sees and may change.
type Live struct {
	e      *sim.Engine
	net    *netdev.Net
	dev    *netdev.Device
	wl     *workload.Workload
	also   []*workload.Workload // sender groups 2, 3, ... (Spec.Also)
	store  map[any]any
	log    io.Writer
	phases []phaseMark
}

type phaseMark struct {
	name string
	snap snapshot
}

// Now is the current simulated time.
func (l *Live) Now() sim.Time { return l.e.Now() }

// Stats returns the host's counters now.
func (l *Live) Stats() LiveStats {
	l.net.RxCatchUp(l.e.Now()) // the wire's frames up to now (forward): offered and RX drops current
	s := LiveStats{Now: l.e.Now(), OfferedPackets: l.net.Offered, TxPackets: l.net.TxPkts, TxBytes: l.net.TxBytes,
		DroppedPackets: l.net.DroppedPackets(), Drops: map[string]uint64{}, Rate: l.wl.Rate()}
	for r, v := range l.net.Drops {
		s.Drops[string(r)] = v
	}
	for _, q := range l.net.Qdiscs() {
		s.BacklogPackets += int64(q.Qlen())
	}
	if len(l.also) > 0 { // several groups: every udp_rate group's rate
		s.Rate = 0
	}
	for g := 1; g <= l.Groups(); g++ {
		w, _ := l.group(g)
		if len(l.also) > 0 && w.Spec.Kind == workload.UDPRate {
			s.Rate += w.Rate()
		}
		s.Senders += len(w.CPUs)
		for i := range w.CPUs {
			if !w.Paused(i) {
				s.Running++
			}
		}
	}
	return s
}

// Store is scratch space that lives as long as this run (an action's
// state between its occurrences); keys are the action's own.
func (l *Live) Store() map[any]any { return l.store }

// Log is where this run's action log lines go (Options.Log), or nil:
// then wherever the action's author sends them.
func (l *Live) Log() io.Writer { return l.log }

// Groups is how many sender groups the run has (the first and
// Spec.Also's).
func (l *Live) Groups() int { return 1 + len(l.also) }

// group returns sender group g (1 the first, as errors name them).
func (l *Live) group(g int) (*workload.Workload, error) {
	if g < 1 || g > l.Groups() {
		return nil, fmt.Errorf("senders group %d does not exist (groups 1-%d)", g, l.Groups())
	}
	if g == 1 {
		return l.wl, nil
	}
	return l.also[g-2], nil
}

// eachGroup runs f on group g, or on every group (g 0) that takes the
// change (ok: not a kind it does not apply to); none taking it is want's
// error.
func (l *Live) eachGroup(g int, ok func(*workload.Workload) bool, want string, f func(int, *workload.Workload) error) error {
	if g != 0 {
		w, err := l.group(g)
		if err != nil {
			return err
		}
		if !ok(w) {
			return fmt.Errorf("senders group %d: %s (these are %s)", g, want, w.Spec.Kind)
		}
		return f(g, w)
	}
	took := 0
	for i := 1; i <= l.Groups(); i++ {
		w, _ := l.group(i)
		if !ok(w) {
			continue
		}
		took++
		if err := f(i, w); err != nil {
			if l.Groups() > 1 {
				return fmt.Errorf("senders group %d: %w", i, err)
			}
			return err
		}
	}
	if took == 0 {
		return fmt.Errorf("%s (these are %s)", want, l.wl.Spec.Kind)
	}
	return nil
}

func isUDP(w *workload.Workload) bool { return w.Spec.Kind != workload.TCPStream }

// SetRate changes the total offered rate of sender group g's udp_rate
// senders (g 0: each udp_rate group's), within what the link carries.
func (l *Live) SetRate(g int, pps float64) error {
	isRate := func(w *workload.Workload) bool { return w.Spec.Kind == workload.UDPRate }
	if g == 0 && !isRate(l.wl) && len(l.also) == 0 {
		return l.wl.SetRate(pps) // the workload's own word on why not
	}
	return l.eachGroup(g, isRate, "rate changes need udp_rate senders", func(_ int, w *workload.Workload) error {
		if pps > 0 {
			if err := checkOfferedRate(pps, w.Spec.PacketSize, l.dev); err != nil {
				return err
			}
		}
		return w.SetRate(pps)
	})
}

// StopSenders pauses the listed senders (indexes 0..senders-1 within
// the group; nil: all) of group g (0: of every UDP group).
func (l *Live) StopSenders(g int, idx []int) error {
	return l.eachSender(g, idx, func(w *workload.Workload, i int) { w.Pause(i) })
}

// StartSenders resumes the listed senders (nil: all) of group g (0: of
// every UDP group).
func (l *Live) StartSenders(g int, idx []int) error {
	return l.eachSender(g, idx, func(w *workload.Workload, i int) { w.Resume(i, l.e.Now()) })
}

func (l *Live) eachSender(g int, idx []int, f func(*workload.Workload, int)) error {
	want := fmt.Sprintf("stop and start act on UDP senders; %s's connections and probes run to the end (netperf has no pause)", workload.TCPStream)
	return l.eachGroup(g, isUDP, want, func(_ int, w *workload.Workload) error {
		n := len(w.CPUs)
		for _, i := range idx {
			if i < 0 || i >= n {
				return fmt.Errorf("sender %d out of range (senders 0-%d)", i, n-1)
			}
		}
		if idx == nil {
			for i := 0; i < n; i++ {
				f(w, i)
			}
		}
		for _, i := range idx {
			f(w, i)
		}
		return nil
	})
}

// ChangeQdisc is `tc qdisc change`. args are tc's words for it: "root
// fq_codel limit 100", "parent 8001:3 pfifo limit 5", "handle 1: cake
// ...", or just the options ("limit 100"), which change the root, or
// every mq child when queue < 0, or mq child queue. The kind, if given,
// must be the target's. An mq-style root such as cake_mq changes its
// shared configuration on every child at once; a child of one cannot be
// changed on its own, as in the kernel. Each change runs as the kernel
// runs it (netdev's Net.ChangeQdisc): what it drops is freed after it.
func (l *Live) ChangeQdisc(queue int, args []string) error {
	cmd, err := tc.ParseQdisc(args)
	if err != nil {
		return fmt.Errorf("change qdisc %q: %w", strings.Join(args, " "), err)
	}
	opts := args // without a selector, a first word that is no kind starts the options
	if cmd.Selects() {
		if queue >= 0 {
			return fmt.Errorf("change qdisc %q: give queue or the qdisc's handle/parent, not both", strings.Join(args, " "))
		}
		opts = cmd.Options
	}
	var targets []*netdev.Qdisc
	_, mqStyle := qdisc.MultiQueueChild(l.dev.RootKind)
	switch {
	case cmd.Selects() || queue < 0:
		targets, err = l.dev.ChangeTargets(cmd)
		if err != nil {
			return fmt.Errorf("change qdisc %q: %w", strings.Join(args, " "), err)
		}
	case l.dev.Root != nil:
		return fmt.Errorf("change qdisc: queue %d given but the root %s is not mq", queue, l.dev.Root.Kind)
	case len(l.dev.Children) == 0:
		return fmt.Errorf("change qdisc: %s has no qdisc to change", l.dev.RootKind)
	case queue >= len(l.dev.Children):
		return fmt.Errorf("change qdisc: queue %d out of range (mq has %d children)", queue, len(l.dev.Children))
	case mqStyle:
		// cake_change: "can't reconfigure cake_mq sub-qdiscs" (EOPNOTSUPP).
		return fmt.Errorf("change qdisc %s: %w", l.dev.Children[queue].Name(),
			qdisc.Refusef(l.dev.RootKind, "can't reconfigure %s sub-qdiscs (change the root: no queue)", l.dev.RootKind))
	default:
		targets = []*netdev.Qdisc{l.dev.Children[queue]}
	}
	// A kind word: tc sends it and the kernel checks it against the
	// qdisc ("Invalid qdisc name"). After a selector tc wants the kind.
	switch {
	case cmd.Kind == targets[0].Kind:
		opts = cmd.Options
	case slices.Contains(qdisc.Kinds(), cmd.Kind):
		return fmt.Errorf("change qdisc %s: %w", targets[0].Name(),
			&qdisc.OptionError{Class: qdisc.ErrKernel, Msg: fmt.Sprintf("invalid qdisc name %q (it is %s)", cmd.Kind, targets[0].Kind)})
	case cmd.Selects() && cmd.Kind != "":
		// tc's parse_noqopt: a kind it has no module for takes no words.
		sel := tc.Qdisc{Dev: cmd.Dev, Handle: cmd.Handle, Parent: cmd.Parent}.Words()
		return fmt.Errorf("change qdisc %q: %w", strings.Join(args, " "), &qdisc.OptionError{Class: qdisc.ErrParse,
			Msg: fmt.Sprintf("unknown qdisc %q, hence its options are unparsable (after root, handle or parent comes the kind: %q)",
				cmd.Kind, strings.Join(append(sel, targets[0].Kind, cmd.Kind), " ")+" ...")})
	}
	for _, q := range targets {
		if err := l.net.ChangeQdisc(q, opts); err != nil {
			return fmt.Errorf("change qdisc %s: %w", q.Name(), err)
		}
	}
	return nil
}

// TC runs tc -batch lines on the running host (a class's rates changed,
// a filter added, a leaf replaced), each as the kernel applies it between
// two engine steps: what a change purges is freed after it, as
// rtnl_kfree_skbs frees it. A root replaced or deleted deactivates the
// device first, as qdisc_graft does on a device that is up.
func (l *Live) TC(text string) error {
	return l.net.TCBatch(l.dev, "tc", text)
}

// Phase marks the start of a named phase (it ends where the next one
// starts, or at the end of the run). The report's counters get, per
// phase, "phase.<name>.start_ns", ".end_ns", ".offered_packets",
// ".tx_packets", ".dropped_packets" and ".tx_pps".
func (l *Live) Phase(name string) error {
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, " \t\n.") {
		return fmt.Errorf("phase name %q: want a non-empty word without dots", name)
	}
	for _, p := range l.phases {
		if p.name == name {
			return fmt.Errorf("phase %q marked twice", name)
		}
	}
	l.phases = append(l.phases, phaseMark{name: name, snap: take(l.net, l.e)})
	return nil
}

// Runs is how many times a runs in a run of duration: once if At is
// before the end, else never; every Every from At while before Until
// (0: the end).
func (a Action) Runs(duration sim.Time) int64 {
	end := duration
	if a.Every > 0 && a.Until > 0 && a.Until < end {
		end = a.Until
	}
	switch {
	case a.At >= end:
		return 0
	case a.Every <= 0:
		return 1
	}
	return int64((end - a.At + a.Every - 1) / a.Every)
}

// Validate checks a on its own against a run of duration: something to
// do, no negative time, a start before the end (else it never runs) and
// at most MaxActionRuns runs. i numbers it when it has no name.
func (a Action) Validate(i int, duration sim.Time) error {
	what := a.Name
	if what == "" {
		what = fmt.Sprintf("action %d", i)
	}
	switch {
	case a.Do == nil:
		return fmt.Errorf("%s: nothing to do", what)
	case a.At < 0:
		return fmt.Errorf("%s: time %dns is negative", what, a.At)
	case a.Every < 0:
		return fmt.Errorf("%s: interval %dns is negative", what, a.Every)
	case a.Until < 0:
		return fmt.Errorf("%s: until %dns is negative", what, a.Until)
	case a.At >= duration:
		return fmt.Errorf("%s: %s is not before the end of the run (duration %s): it would never run", what, startWord(a), formatTime(duration))
	}
	if n := a.Runs(duration); n > MaxActionRuns {
		end := duration
		if a.Until > 0 && a.Until < end {
			end = a.Until
		}
		return fmt.Errorf("%s: every %v runs %d times in %v, at most %d: use an interval of %v or more",
			what, a.Every, n, duration, MaxActionRuns, formatTime((end-a.At+MaxActionRuns-1)/MaxActionRuns))
	}
	return nil
}

// RunsInAll is how many times acts run over a run of duration, together.
func RunsInAll(acts []Action, duration sim.Time) int64 {
	var total int64
	for _, a := range acts {
		total += a.Runs(duration)
	}
	return total
}

func validateActions(acts []Action, duration sim.Time) error {
	for i, a := range acts {
		if err := a.Validate(i, duration); err != nil {
			return err
		}
	}
	if RunsInAll(acts, duration) > MaxActionRuns {
		return errors.New(TooManyRuns(acts, duration, nil))
	}
	return nil
}

// startWord names when an action starts, for an error: its time, or an
// every's first run.
func startWord(a Action) string {
	if a.Every > 0 {
		return "its first run at " + formatTime(a.At)
	}
	return "its time " + formatTime(a.At)
}

// TooManyRuns is the message for actions whose runs add up to more than
// MaxActionRuns over a run of duration: the total, the bound and the
// actions that run most (where, if set, says where action i was
// declared: a script's file:line).
func TooManyRuns(acts []Action, duration sim.Time, where func(i int) string) string {
	total := RunsInAll(acts, duration)
	idx := make([]int, len(acts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool { return acts[idx[x]].Runs(duration) > acts[idx[y]].Runs(duration) })
	const named = 3
	var most []string
	for _, i := range idx[:min(named, len(idx))] {
		what := acts[i].Name
		if what == "" {
			what = fmt.Sprintf("action %d", i)
		}
		if where != nil {
			what = where(i) + " " + what
		}
		most = append(most, fmt.Sprintf("%s (%d)", what, acts[i].Runs(duration)))
	}
	more := ""
	if len(acts) > named {
		more = fmt.Sprintf(", and %d more", len(acts)-named)
	}
	return fmt.Sprintf("%d timed actions would run %d times over the run's %v, at most %d in all: %s%s; use longer intervals or fewer actions",
		len(acts), total, formatTime(duration), MaxActionRuns, strings.Join(most, ", "), more)
}

// actionRunner interleaves actions with engine steps. Pending
// occurrences wait in a min-heap keyed by (time, index), so finding the
// next one costs O(log n) however many actions a script declares, and
// those due at one time pop in Spec.Actions order.
type actionRunner struct {
	acts []Action
	next []sim.Time // next occurrence per action
	heap []int      // indexes of the actions still to run, by (next, index)
	end  sim.Time
	live *Live
}

func newActionRunner(acts []Action, live *Live, end sim.Time) *actionRunner {
	r := &actionRunner{acts: acts, next: make([]sim.Time, len(acts)), end: end, live: live}
	for i, a := range acts {
		r.next[i] = a.At
		r.schedule(i)
	}
	return r
}

// schedule queues action i at r.next[i] unless that is past its bound
// (Until, or the end of the run): then it is done.
func (r *actionRunner) schedule(i int) {
	until := r.acts[i].Until
	if until == 0 || until > r.end {
		until = r.end
	}
	if r.next[i] >= until {
		return
	}
	r.heap = append(r.heap, i)
	r.up(len(r.heap) - 1)
}

func (r *actionRunner) less(x, y int) bool {
	a, b := r.heap[x], r.heap[y]
	return r.next[a] < r.next[b] || r.next[a] == r.next[b] && a < b
}

func (r *actionRunner) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !r.less(j, p) {
			return
		}
		r.heap[j], r.heap[p] = r.heap[p], r.heap[j]
		j = p
	}
}

// pop removes and returns the earliest pending action.
func (r *actionRunner) pop() int {
	top := r.heap[0]
	last := len(r.heap) - 1
	r.heap[0] = r.heap[last]
	r.heap = r.heap[:last]
	for j := 0; ; {
		c := 2*j + 1
		if c >= last {
			break
		}
		if c+1 < last && r.less(c+1, c) {
			c++
		}
		if !r.less(c, j) {
			break
		}
		r.heap[j], r.heap[c] = r.heap[c], r.heap[j]
		j = c
	}
	return top
}

// due is the earliest pending occurrence, or -1.
func (r *actionRunner) due() sim.Time {
	if len(r.heap) == 0 {
		return -1
	}
	return r.next[r.heap[0]]
}

// runUntil advances the engine to until, stopping at each action due on
// the way (including at until) to run it.
func (r *actionRunner) runUntil(e *sim.Engine, until sim.Time) error {
	for {
		t := r.due()
		if t < 0 || t > until {
			return e.Run(until)
		}
		if t > e.Now() {
			if err := e.Run(t); err != nil {
				return err
			}
		}
		for r.due() == t {
			i := r.pop()
			a := r.acts[i]
			if err := a.Do(r.live); err != nil {
				return fmt.Errorf("%s: %w", actionWhen(a, i, t), err)
			}
			if a.Every > 0 {
				r.next[i] = t + a.Every
				r.schedule(i)
			}
		}
	}
}

// actionWhen names action i for an error at time t: its name and the
// time, unless the name already says when (a script's "at 1ms {...}",
// or a check, run at 0 for an action due later).
func actionWhen(a Action, i int, t sim.Time) string {
	what := a.Name
	if what == "" {
		what = fmt.Sprintf("action %d", i)
	}
	if strings.HasPrefix(what, "at ") || strings.HasPrefix(what, "check of ") {
		return what
	}
	return what + " at " + fmtTime(t)
}

// fillPhases writes the phase counters into the report.
func (r *actionRunner) fillPhases(counters map[string]uint64, end snapshot) {
	ph := r.live.phases
	for i, p := range ph {
		stop := end
		if i+1 < len(ph) {
			stop = ph[i+1].snap
		}
		k := "phase." + p.name + "."
		counters[k+"start_ns"] = uint64(p.snap.at)
		counters[k+"end_ns"] = uint64(stop.at)
		counters[k+"offered_packets"] = stop.offered - p.snap.offered
		counters[k+"tx_packets"] = stop.tx - p.snap.tx
		counters[k+"dropped_packets"] = stop.dropped - p.snap.dropped
		if d := stop.at - p.snap.at; d > 0 {
			counters[k+"tx_pps"] = uint64(float64(stop.tx-p.snap.tx) * float64(sim.Second) / float64(d))
		}
	}
}

// fmtTime prints a simulated time the way a script writes it.
func fmtTime(t sim.Time) string {
	units := []struct {
		s string
		n sim.Time
	}{{"s", sim.Second}, {"ms", sim.Millisecond}, {"us", sim.Microsecond}}
	for _, u := range units {
		if t != 0 && t%u.n == 0 {
			return fmt.Sprintf("%d%s", t/u.n, u.s)
		}
	}
	return fmt.Sprintf("%dns", t)
}
