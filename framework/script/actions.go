package script

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/d5/tengo/v2"

	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/workload"
)

// actionDef is a parsed action map.
type actionDef struct {
	desc      string
	phase     string
	stop      []int
	hasStop   bool
	start     []int
	hasStart  bool
	group     int // the sender group stop, start and rate act on (1 the first); 0: every one
	rate      float64
	qdisc     []string
	queue     int
	tc        string // tc -batch lines
	log       string
	hook      *hookObj
	fromAHook bool
}

var actionKeys = []string{"phase", "stop", "start", "group", "rate", "qdisc", "queue", "tc", "log", "hook"}

// parseAction reads {rate: "2M", stop: "0-3", start: "all", qdisc:
// "limit 100", queue: 2, phase: "burst", log: "...", hook: h}, or a bare
// hook. fromHook forbids nesting hooks.
func parseAction(v any, fromHook bool) (*actionDef, error) {
	if h, ok := v.(*hookObj); ok && !fromHook {
		return &actionDef{desc: "hook", hook: h, queue: -1}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("an action is a map like {rate: \"2M\"} or a hook, got %s", typeName(v))
	}
	known := actionKeys
	if fromHook {
		known = actionKeys[:len(actionKeys)-1]
	}
	if err := checkKeys("action", m, known...); err != nil {
		return nil, err
	}
	a := &actionDef{queue: -1, fromAHook: fromHook}
	var err error
	if x, ok := m["phase"]; ok {
		if a.phase, err = asString("phase", x); err != nil {
			return nil, err
		}
		if a.phase == "" || strings.ContainsAny(a.phase, " \t\n.") {
			return nil, fmt.Errorf("phase %q: want a non-empty word without dots", a.phase)
		}
	}
	if x, ok := m["stop"]; ok {
		if a.stop, err = senderList("stop", x); err != nil {
			return nil, err
		}
		a.hasStop = true
	}
	if x, ok := m["start"]; ok {
		if a.start, err = senderList("start", x); err != nil {
			return nil, err
		}
		a.hasStart = true
	}
	if x, ok := m["group"]; ok {
		if w, isStr := x.(string); isStr && w == "all" {
			a.group = 0
		} else if a.group, err = asIntGroup(x); err != nil {
			return nil, err
		}
		if !a.hasStop && !a.hasStart && m["rate"] == nil {
			return nil, fmt.Errorf("group goes with stop, start or rate")
		}
	}
	if x, ok := m["rate"]; ok {
		if a.rate, err = asCount("rate", x); err != nil {
			return nil, err
		}
		if !(a.rate > 0) {
			return nil, fmt.Errorf("rate must be > 0 packets/s (stop the senders instead)")
		}
	}
	if x, ok := m["qdisc"]; ok {
		if a.qdisc, err = changeWords(x); err != nil {
			return nil, err
		}
	}
	if x, ok := m["queue"]; ok {
		if a.qdisc == nil {
			return nil, fmt.Errorf("queue goes with a qdisc change")
		}
		n, err := asInt("queue", x, 0, 4095)
		if err != nil {
			return nil, err
		}
		a.queue = int(n)
		if cmd, _ := tc.ParseQdisc(a.qdisc); cmd.Selects() {
			return nil, fmt.Errorf("qdisc change %q: give queue or the qdisc's handle/parent, not both", strings.Join(a.qdisc, " "))
		}
	}
	if x, ok := m["tc"]; ok {
		var probe run.Spec
		if err := addTC(&probe, x); err != nil { // tc's words, read now
			return nil, err
		}
		a.tc = probe.TC[0].Text
	}
	if x, ok := m["log"]; ok {
		if a.log, err = asString("log", x); err != nil {
			return nil, err
		}
	}
	if x, ok := m["hook"]; ok {
		h, isHook := x.(*hookObj)
		if !isHook {
			return nil, fmt.Errorf("hook: want txlab.hook(`...`), got %s", typeName(x))
		}
		a.hook = h
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		if k == "hook" {
			parts = append(parts, "hook")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %v", k, m[k]))
	}
	a.desc = "{" + strings.Join(parts, ", ") + "}"
	return a, nil
}

// changeWords are a qdisc change's tc words (`tc qdisc change dev eth0
// ...`): a string or array of words, or a map whose handle and parent
// keys select the qdisc, whose kind (needed after a selector, as tc
// needs it) must be the qdisc's, and whose other keys are options. Just
// options ("limit 100", {limit: 100}) change the root or every mq child.
func changeWords(x any) ([]string, error) {
	var words []string
	var err error
	switch q := x.(type) {
	case map[string]any:
		if words, err = selectorWords("qdisc", q); err != nil {
			return nil, err
		}
		if k, ok := q["kind"]; ok {
			kind, err := asString("qdisc kind", k)
			if err != nil {
				return nil, err
			}
			words = append(words, kind)
		} else if len(words) > 0 {
			return nil, fmt.Errorf("qdisc change: after handle or parent tc wants the kind too, e.g. {parent: \"8001:2\", kind: \"pfifo\", limit: 100}")
		}
		opts, err := optionWords("qdisc", q, "kind", "handle", "parent")
		if err != nil {
			return nil, err
		}
		words = append(words, opts...)
	default:
		if words, err = qdiscWords("qdisc", x); err != nil {
			return nil, err
		}
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("qdisc change: no options given")
	}
	if _, err := tc.ParseQdisc(words); err != nil {
		return nil, fmt.Errorf("qdisc change %q: %w", strings.Join(words, " "), err)
	}
	return words, nil
}

// asIntGroup reads an action's group: a sender group's number.
func asIntGroup(x any) (int, error) {
	n, err := asInt("group", x, 1, 1<<20)
	if err != nil {
		return 0, fmt.Errorf("group: want a sender group's number (1 the first) or \"all\": %w", err)
	}
	return int(n), nil
}

// check validates an action against a spec (run-time-only errors are
// found early this way: a group that does not exist, a rate on
// udp_stream, a sender out of range).
func (a *actionDef) check(s *run.Spec) error {
	groups := append([]workload.Spec{s.Workload}, s.Also...)
	if a.group > len(groups) {
		return fmt.Errorf("senders group %d does not exist (groups 1-%d)", a.group, len(groups))
	}
	w, name := s.Workload, ""
	if a.group > 0 {
		w = groups[a.group-1]
		if len(groups) > 1 {
			name = fmt.Sprintf("senders group %d: ", a.group)
		}
	}
	if a.rate > 0 && w.Kind != workload.UDPRate && (a.group > 0 || !slices.ContainsFunc(groups, func(g workload.Spec) bool { return g.Kind == workload.UDPRate })) {
		return fmt.Errorf("%srate changes need udp_rate senders (these are %s)", name, w.Kind)
	}
	if a.group > 0 || len(groups) == 1 {
		for _, l := range [][]int{a.stop, a.start} {
			for _, i := range l {
				if i >= w.Senders {
					return fmt.Errorf("%ssender %d out of range (senders 0-%d)", name, i, w.Senders-1)
				}
			}
		}
	}
	if a.queue >= 0 && a.queue >= s.Queues {
		return fmt.Errorf("queue %d out of range (queues 0-%d)", a.queue, s.Queues-1)
	}
	return nil
}

// do applies the action: phase, stop, start, rate, qdisc, tc, log, hook.
func (a *actionDef) do(p *Program, l *run.Live, key any) error {
	if a.phase != "" {
		if err := l.Phase(a.phase); err != nil {
			return err
		}
	}
	if a.hasStop {
		if err := l.StopSenders(a.group, a.stop); err != nil {
			return err
		}
	}
	if a.hasStart {
		if err := l.StartSenders(a.group, a.start); err != nil {
			return err
		}
	}
	if a.rate > 0 {
		if err := l.SetRate(a.group, a.rate); err != nil {
			return err
		}
	}
	if a.qdisc != nil {
		if err := l.ChangeQdisc(a.queue, a.qdisc); err != nil {
			return err
		}
	}
	if a.tc != "" {
		if err := l.TC(a.tc); err != nil {
			return err
		}
	}
	if a.log != "" {
		w := l.Log()
		if w == nil {
			w = p.opts.Log
		}
		fmt.Fprintf(w, "%s: [%s] %s\n", p.name, fmtNs(l.Now()), a.log)
	}
	if a.hook != nil {
		return a.hook.run(p, l, key)
	}
	return nil
}

func (b *builder) addAction(act run.Action, v any) error {
	a, err := parseAction(v, false)
	if err != nil {
		return err
	}
	if err := a.check(&b.base); err != nil {
		return err
	}
	when := "at " + fmtNs(act.At)
	if act.Every > 0 {
		when = "every " + fmtNs(act.Every)
	}
	act.Name = when + " " + a.desc
	p, key := b.p, new(int)
	act.Do = func(l *run.Live) error { return a.do(p, l, key) }
	switch {
	case a.qdisc != nil && a.tc != "":
		act.Check = func(l *run.Live) error {
			if err := l.ChangeQdisc(a.queue, a.qdisc); err != nil {
				return err
			}
			return l.TC(a.tc)
		}
	case a.qdisc != nil:
		act.Check = func(l *run.Live) error { return l.ChangeQdisc(a.queue, a.qdisc) }
	case a.tc != "":
		act.Check = func(l *run.Live) error { return l.TC(a.tc) }
	}
	b.actions = append(b.actions, act)
	b.actionDefs = append(b.actionDefs, a)
	b.actionPos = append(b.actionPos, b.here())
	return nil
}

func fmtNs(t sim.Time) string {
	switch {
	case t != 0 && t%sim.Second == 0:
		return fmt.Sprintf("%ds", t/sim.Second)
	case t != 0 && t%sim.Millisecond == 0:
		return fmt.Sprintf("%dms", t/sim.Millisecond)
	case t != 0 && t%sim.Microsecond == 0:
		return fmt.Sprintf("%dus", t/sim.Microsecond)
	}
	return fmt.Sprintf("%dns", t)
}

// hookObj is a compiled hook: a small script re-run at each occurrence
// with the globals live (read-only stats), state (a map kept between
// runs) and act (set it to an action map to act).
type hookObj struct {
	tengo.ObjectImpl
	src      string
	bytecode *tengo.Bytecode
	nglobals int
	base     *srcPos // where the source starts in the script, if known
}

func (h *hookObj) TypeName() string { return "hook" }
func (h *hookObj) String() string   { return "<hook>" }

var hookGlobals = []string{"live", "state", "act"}

func (p *Program) newHook(src string) (*hookObj, error) {
	h := &hookObj{src: src}
	if pos, ok := p.rawHooks[src]; ok {
		h.base = &pos
	}
	if len(src) > MaxSourceBytes { // a script's bound: a hook built at run time is no bigger
		return nil, h.place(&Error{File: p.name, Msg: fmt.Sprintf("source is %d bytes, more than the %d allowed", len(src), MaxSourceBytes)})
	}
	release := holdBound(p.opts.valueBound())
	bc, n, err := compile(p.name, []byte(src), hookModules(), hookGlobals, true)
	release()
	if err != nil {
		return nil, h.place(err)
	}
	h.bytecode, h.nglobals = bc, n
	return h, nil
}

// place moves an error's position from the hook's text into the script
// file, or says it is inside a hook.
func (h *hookObj) place(err error) error {
	var se *Error
	if !errors.As(err, &se) {
		return err
	}
	out := *se
	switch {
	case se.Line == 0 && h.base != nil:
		out.Line, out.Col = h.base.line, h.base.col // where the hook's text starts
		out.Msg = "in hook: " + se.Msg
	case se.Line == 0:
		out.Msg = "in hook: " + se.Msg
	case h.base != nil:
		if se.Line == 1 {
			out.Col = h.base.col + se.Col - 1
		}
		out.Line = h.base.line + se.Line - 1
		out.Msg = "in hook: " + se.Msg
	default:
		out.Msg = fmt.Sprintf("in hook, at its line %d col %d: %s", se.Line, se.Col, se.Msg)
		out.Line, out.Col = 0, 0
	}
	return &out
}

// hookState is one hook's state in one run.
type hookState struct {
	state *tengo.Map
	prev  run.LiveStats
	runs  int64
}

func (h *hookObj) run(p *Program, l *run.Live, key any) error {
	st, _ := l.Store()[key].(*hookState)
	if st == nil {
		st = &hookState{state: &tengo.Map{Value: map[string]tengo.Object{}}}
		l.Store()[key] = st
	}
	cur := l.Stats()
	globals := newGlobals(h.nglobals, len(hookGlobals))
	globals[0] = liveObject(cur, st.prev, st.runs)
	globals[1] = st.state
	globals[2] = tengo.UndefinedValue
	if err := runVM(p.name, h.bytecode, globals, p.opts.valueBound(), p.opts.HookMaxAllocs, p.opts.HookTimeout, "--hook-max-allocs", "--hook-timeout"); err != nil {
		return h.place(err)
	}
	st.prev, st.runs = cur, st.runs+1
	switch s := globals[1].(type) {
	case *tengo.Map:
		st.state = s
	default:
		return h.place(&Error{File: p.name, Msg: fmt.Sprintf("state must stay a map, got %s", s.TypeName())})
	}
	if globals[2] == tengo.UndefinedValue {
		return nil
	}
	v, err := fromObj(globals[2])
	if err != nil {
		return h.place(&Error{File: p.name, Msg: "act: " + err.Error()})
	}
	a, err := parseAction(v, true)
	if err != nil {
		return h.place(&Error{File: p.name, Msg: "act: " + err.Error()})
	}
	return a.do(p, l, nil)
}

// liveObject is the live map a hook sees.
func liveObject(cur, prev run.LiveStats, runs int64) tengo.Object {
	i := func(v int64) tengo.Object { return &tengo.Int{Value: v} }
	f := func(v float64) tengo.Object { return &tengo.Float{Value: v} }
	dt := cur.Now - prev.Now
	rate := func(a, b uint64) tengo.Object {
		if dt <= 0 {
			return f(0)
		}
		return f(float64(a-b) * float64(sim.Second) / float64(dt))
	}
	drops := map[string]tengo.Object{}
	for k, v := range cur.Drops {
		drops[k] = i(int64(v))
	}
	return &tengo.ImmutableMap{Value: map[string]tengo.Object{
		"now_ns":          i(int64(cur.Now)),
		"dt_ns":           i(int64(dt)),
		"runs":            i(runs),
		"offered_packets": i(int64(cur.OfferedPackets)),
		"tx_packets":      i(int64(cur.TxPackets)),
		"tx_bytes":        i(int64(cur.TxBytes)),
		"dropped_packets": i(int64(cur.DroppedPackets)),
		"backlog_packets": i(cur.BacklogPackets),
		"drops":           &tengo.ImmutableMap{Value: drops},
		"rate":            f(cur.Rate),
		"senders":         i(int64(cur.Senders)),
		"running":         i(int64(cur.Running)),
		"tx_pps":          rate(cur.TxPackets, prev.TxPackets),
		"offered_pps":     rate(cur.OfferedPackets, prev.OfferedPackets),
		"drop_pps":        rate(cur.DroppedPackets, prev.DroppedPackets),
	}}
}
