package script

import (
	"errors"
	"fmt"
	"github.com/txlab/txlab/drivers/bonding"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/d5/tengo/v2"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/workload"
)

// builder is one evaluation's state.
type builder struct {
	p           *Program
	base        run.Spec
	description string
	variants    []variantDef
	actions     []run.Action
	actionDefs  []*actionDef
	paramsRead  map[string]bool
	sendersSet  bool // txlab.senders was called
	// vm is the script's VM while it runs: a module function asks it
	// where it was called (here), for errors found only against the
	// finished spec (finish) to point at the line that caused them.
	vm         *tengo.VM
	actionPos  []srcPos // per action
	sendersPos srcPos   // the last txlab.senders or config with senders
}

type variantDef struct {
	name  string
	apply func(*run.Spec) error
	pos   srcPos
}

// here is where the module function running now was called; zero when
// unknown.
func (b *builder) here() srcPos {
	if b.vm == nil {
		return srcPos{}
	}
	if p, ok := callPos(b.vm, b.p.bytecode.FileSet); ok {
		return srcPos{p.Line, p.Column}
	}
	return srcPos{}
}

// at is msg as an error at pos, or in the file when pos is unknown.
func (b *builder) at(pos srcPos, msg string) *Error {
	return &Error{File: b.p.name, Line: pos.line, Col: pos.col, Msg: msg}
}

// inVariant prefixes err with the variant it is about, keeping its
// place if it has one.
func inVariant(name string, err error) error {
	var se *Error
	if errors.As(err, &se) {
		out := *se
		out.Msg = "variant " + name + ": " + se.Msg
		return &out
	}
	return fmt.Errorf("variant %s: %w", name, err)
}

// BaseSpec is where a script starts: exactly what `txlab run` with no
// flags runs (run.Default).
func BaseSpec() run.Spec { return run.Default() }

func newBuilder(p *Program) *builder {
	b := &builder{p: p, base: BaseSpec(), paramsRead: map[string]bool{}}
	b.base.Plugins = p.opts.Plugins
	b.description = Describe(p.src)
	return b
}

// finish applies the variants to the finished base spec.
func (b *builder) finish() ([]run.Spec, error) {
	for _, k := range sortedKeysS(b.p.opts.Params) {
		if !b.paramsRead[k] {
			read := make([]string, 0, len(b.paramsRead))
			for r := range b.paramsRead {
				read = append(read, r)
			}
			sort.Strings(read)
			if len(read) == 0 {
				return nil, fmt.Errorf("unknown parameter %q (the script reads no parameters)", k)
			}
			return nil, fmt.Errorf("unknown parameter %q (the script reads: %s)", k, strings.Join(read, ", "))
		}
	}
	var out []run.Spec
	if len(b.variants) == 0 {
		s := cloneSpec(b.base)
		s.Actions = append([]run.Action(nil), b.actions...)
		if err := b.validate(&s); err != nil {
			return nil, err
		}
		return []run.Spec{s}, nil
	}
	for _, v := range b.variants {
		s := cloneSpec(b.base)
		s.Name = v.name
		if err := v.apply(&s); err != nil {
			return nil, b.at(v.pos, fmt.Sprintf("variant %s: %v", v.name, err))
		}
		s.Actions = append([]run.Action(nil), b.actions...)
		if err := b.validate(&s); err != nil {
			return nil, inVariant(v.name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func (b *builder) validate(s *run.Spec) error {
	if err := b.validatePlaced(s); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	for i, a := range b.actionDefs {
		if err := a.check(s); err != nil {
			return fmt.Errorf("%s: %w", b.actions[i].Name, err)
		}
	}
	return nil
}

// validatePlaced checks what only the finished spec can tell (the
// duration and the groups may be set after the lines that use them)
// and that a script's line caused, placing the error at that line:
// the sender threads of all groups together, each action's time
// against the duration, and the actions' and hooks' runs in all.
func (b *builder) validatePlaced(s *run.Spec) error {
	if err := s.CheckSenders(); err != nil {
		return b.at(b.sendersPos, err.Error())
	}
	for i, a := range s.Actions {
		if err := a.Validate(i, s.Duration); err != nil {
			return b.at(b.actionPos[i], err.Error())
		}
	}
	line := func(i int) string { return fmt.Sprintf("line %d", b.actionPos[i].line) }
	most := func(acts []int) int { // the one that runs most, first of equals
		m := acts[0]
		for _, i := range acts {
			if s.Actions[i].Runs(s.Duration) > s.Actions[m].Runs(s.Duration) {
				m = i
			}
		}
		return m
	}
	if len(s.Actions) > 0 && run.RunsInAll(s.Actions, s.Duration) > run.MaxActionRuns {
		all := make([]int, len(s.Actions))
		for i := range all {
			all[i] = i
		}
		return b.at(b.actionPos[most(all)], run.TooManyRuns(s.Actions, s.Duration, line))
	}
	var hooks []int
	var hookActs []run.Action
	for i, d := range b.actionDefs {
		if d.hook != nil {
			hooks = append(hooks, i)
			hookActs = append(hookActs, s.Actions[i])
		}
	}
	if n := run.RunsInAll(hookActs, s.Duration); n > MaxHookRuns {
		m := most(hooks)
		what := "a hook"
		if len(hooks) > 1 {
			what = fmt.Sprintf("%d hooks", len(hooks))
		}
		return b.at(b.actionPos[m], fmt.Sprintf("%s would run %d times over the run's %s, at most %d in all (each run is a fresh VM, tens of microseconds): %s runs %d times; use a longer interval",
			what, n, fmtNs(s.Duration), MaxHookRuns, s.Actions[m].Name, s.Actions[m].Runs(s.Duration)))
	}
	return nil
}

func sortedKeysS(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func cloneSpec(s run.Spec) run.Spec {
	s.Set = append([]string(nil), s.Set...)
	s.DriverArgs = append([]string(nil), s.DriverArgs...)
	s.Actions = append([]run.Action(nil), s.Actions...)
	return s
}

// fn wraps a module function: args converted to Go, errors prefixed
// with the function's name.
func (p *Program) fn(name string, min, max int, f func(b *builder, args []any) (tengo.Object, error)) *tengo.UserFunction {
	full := "txlab." + name
	return &tengo.UserFunction{Name: name, Value: func(args ...tengo.Object) (tengo.Object, error) {
		if len(args) < min || len(args) > max {
			want := strconv.Itoa(min)
			if max != min {
				want = fmt.Sprintf("%d to %d", min, max)
			}
			return nil, fmt.Errorf("%s: want %s arguments, got %d", full, want, len(args))
		}
		b := p.cur
		if b == nil {
			return nil, fmt.Errorf("%s: not available here", full)
		}
		conv := make([]any, len(args))
		for i, a := range args {
			v, err := fromObj(a)
			if err != nil {
				return nil, fmt.Errorf("%s: argument %d: %w", full, i+1, err)
			}
			conv[i] = v
		}
		ret, err := f(b, conv)
		var se *Error
		if errors.As(err, &se) {
			return nil, err // already placed (an error inside a hook)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", full, err)
		}
		if ret == nil {
			ret = tengo.UndefinedValue
		}
		return ret, nil
	}}
}

// section is a module function that sets one part of the base spec from
// a map (or, for qdisc, tc words).
func (p *Program) section(key string) *tengo.UserFunction {
	return p.fn(key, 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		return nil, applySection(&b.base, key, a[0])
	})
}

// module is the `txlab` module.
func (p *Program) module() map[string]tengo.Object {
	m := map[string]tengo.Object{}
	for _, k := range []string{"host", "device", "qdisc", "senders", "path", "profile", "duration", "warmup", "interval", "seed", "name", "lock_cpus"} {
		m[k] = p.section(k)
	}
	m["senders"] = p.fn("senders", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		// A later map naming another kind than the first group's adds a
		// group beside the ones before (240 udp_stream, then 8
		// tcp_stream), as the array form does; one without a kind, or
		// with the first group's, changes the first group's keys.
		b.sendersPos = b.here()
		if m, ok := a[0].(map[string]any); ok && b.sendersSet {
			if k, ok := m["kind"].(string); ok && k != b.base.Workload.Kind {
				return nil, addSenderGroup(&b.base, m)
			}
		}
		b.sendersSet = true
		return nil, applySection(&b.base, "senders", a[0])
	})
	m["set"] = p.fn("set", 1, 2, func(b *builder, a []any) (tengo.Object, error) {
		v, err := pairOrMap(a)
		if err != nil {
			return nil, err
		}
		return nil, applySection(&b.base, "set", v)
	})
	m["cost"] = p.fn("cost", 1, 2, func(b *builder, a []any) (tengo.Object, error) {
		v, err := pairOrMap(a)
		if err != nil {
			return nil, err
		}
		return nil, applySection(&b.base, "cost", v)
	})
	m["tc"] = p.fn("tc", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		return nil, applySection(&b.base, "tc", a[0])
	})
	m["config"] = p.fn("config", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		cm, err := asMap("config", a[0])
		if err != nil {
			return nil, err
		}
		if _, ok := cm["senders"]; ok {
			b.sendersPos = b.here()
		}
		return nil, applyConfig(&b.base, cm)
	})
	m["variant"] = p.fn("variant", 2, 2, func(b *builder, a []any) (tengo.Object, error) {
		name, err := asString("name", a[0])
		if err != nil {
			return nil, err
		}
		cm, err := asMap("variant "+name, a[1])
		if err != nil {
			return nil, err
		}
		return nil, b.addVariant(name, cm)
	})
	m["variants"] = p.fn("variants", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		list, ok := a[0].([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("want a non-empty array of maps, e.g. [{profile: \"6.18\"}, {profile: \"6.19-rc1\"}]")
		}
		for i, e := range list {
			cm, err := asMap(fmt.Sprintf("variant %d", i+1), e)
			if err != nil {
				return nil, err
			}
			name := ""
			if n, ok := cm["name"]; ok {
				if name, err = asString(fmt.Sprintf("variant %d name", i+1), n); err != nil {
					return nil, err
				}
			} else if pr, ok := cm["profile"].(string); ok {
				name = pr
			} else {
				return nil, fmt.Errorf("variant %d: give it a name (or a profile, which names it)", i+1)
			}
			if err := b.addVariant(name, cm); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	m["compare"] = p.fn("compare", 2, 2, func(b *builder, a []any) (tengo.Object, error) {
		key, err := asString("key", a[0])
		if err != nil {
			return nil, err
		}
		list, ok := a[1].([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("want a key and a non-empty array of values, e.g. compare(\"profile\", [\"6.18\", \"6.19-rc1\"])")
		}
		for _, e := range list {
			v, err := word(key, e)
			if err != nil {
				return nil, err
			}
			var cm map[string]any
			name := key + "=" + v
			switch {
			case key == "profile":
				name, cm = v, map[string]any{"profile": v}
			case strings.HasPrefix(key, "cost."):
				cm = map[string]any{"cost": map[string]any{strings.TrimPrefix(key, "cost."): e}}
			default:
				cm = map[string]any{"set": map[string]any{key: e}}
			}
			if err := b.addVariant(name, cm); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	m["at"] = p.fn("at", 2, 2, func(b *builder, a []any) (tengo.Object, error) {
		t, err := asDuration("time", a[0])
		if err != nil {
			return nil, err
		}
		return nil, b.addAction(run.Action{At: t}, a[1])
	})
	m["every"] = p.fn("every", 2, 3, func(b *builder, a []any) (tengo.Object, error) {
		iv, err := asDuration("interval", a[0])
		if err != nil {
			return nil, err
		}
		if iv <= 0 {
			return nil, fmt.Errorf("interval must be > 0")
		}
		act := run.Action{At: iv, Every: iv}
		if len(a) == 3 {
			om, err := asMap("options", a[2])
			if err != nil {
				return nil, err
			}
			if err := checkKeys("options", om, "from", "until"); err != nil {
				return nil, err
			}
			if v, ok := om["from"]; ok {
				if act.At, err = asDuration("from", v); err != nil {
					return nil, err
				}
			}
			if v, ok := om["until"]; ok {
				if act.Until, err = asDuration("until", v); err != nil {
					return nil, err
				}
				if act.Until <= act.At {
					return nil, fmt.Errorf("until (%dns) must be after from (%dns)", act.Until, act.At)
				}
			}
		}
		return nil, b.addAction(act, a[1])
	})
	m["hook"] = p.fn("hook", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		src, err := asString("source", a[0])
		if err != nil {
			return nil, err
		}
		return b.p.newHook(src)
	})
	m["describe"] = p.fn("describe", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		d, err := asString("description", a[0])
		if err != nil {
			return nil, err
		}
		b.description = strings.TrimSpace(strings.SplitN(d, "\n", 2)[0])
		return nil, nil
	})
	m["quick"] = p.fn("quick", 0, 0, func(b *builder, a []any) (tengo.Object, error) {
		if b.p.opts.Quick {
			return tengo.TrueValue, nil
		}
		return tengo.FalseValue, nil
	})
	m["param"] = p.fn("param", 2, 2, func(b *builder, a []any) (tengo.Object, error) {
		name, err := asString("name", a[0])
		if err != nil {
			return nil, err
		}
		b.paramsRead[name] = true
		raw, ok := b.p.opts.Params[name]
		if !ok {
			return tengo.FromInterface(a[1])
		}
		return paramValue(name, raw, a[1])
	})
	m["ns"] = p.fn("ns", 1, 1, func(b *builder, a []any) (tengo.Object, error) {
		t, err := asDuration("time", a[0])
		if err != nil {
			return nil, err
		}
		return &tengo.Int{Value: int64(t)}, nil
	})
	m["log"] = p.fn("log", 0, 64, func(b *builder, a []any) (tengo.Object, error) {
		parts := make([]string, len(a))
		for i, v := range a {
			parts[i] = fmt.Sprint(v)
		}
		fmt.Fprintf(b.p.opts.Log, "%s: %s\n", b.p.name, strings.Join(parts, " "))
		return nil, nil
	})
	m["qdiscs"] = p.fn("qdiscs", 0, 0, func(b *builder, a []any) (tengo.Object, error) {
		return stringArray(qdisc.Kinds()), nil
	})
	m["drivers"] = p.fn("drivers", 0, 0, func(b *builder, a []any) (tengo.Object, error) {
		return stringArray(driver.Names()), nil
	})
	m["profiles"] = p.fn("profiles", 0, 0, func(b *builder, a []any) (tengo.Object, error) {
		return stringArray(netdev.Profiles()), nil
	})
	return m
}

func stringArray(ss []string) tengo.Object {
	out := &tengo.ImmutableArray{}
	for _, s := range ss {
		out.Value = append(out.Value, &tengo.String{Value: s})
	}
	return out
}

// paramValue converts --param text to the type of the default.
func paramValue(name, raw string, def any) (tengo.Object, error) {
	switch def.(type) {
	case int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not a whole number", name, raw)
		}
		return &tengo.Int{Value: n}, nil
	case float64:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not a number", name, raw)
		}
		return &tengo.Float{Value: f}, nil
	case bool:
		f, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not true or false", name, raw)
		}
		return tengo.FromInterface(f)
	}
	return &tengo.String{Value: raw}, nil
}

func pairOrMap(a []any) (any, error) {
	if len(a) == 2 {
		k, err := asString("name", a[0])
		if err != nil {
			return nil, err
		}
		return map[string]any{k: a[1]}, nil
	}
	return a[0], nil
}

func (b *builder) addVariant(name string, cm map[string]any) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("a variant needs a non-empty name")
	}
	if len(b.variants) >= run.MaxVariants {
		return fmt.Errorf("variant %s would be variant %d, at most %d (--compare's bound too; txlab sweep runs grids)",
			name, len(b.variants)+1, run.MaxVariants)
	}
	for _, v := range b.variants {
		if v.name == name {
			return fmt.Errorf("variant %q declared twice", name)
		}
	}
	apply := func(s *run.Spec) error {
		c := make(map[string]any, len(cm))
		for k, v := range cm {
			if k != "name" {
				c[k] = v
			}
		}
		return applyConfig(s, c)
	}
	// Check it now against the base so far, to fail at this line.
	scratch := cloneSpec(b.base)
	if err := apply(&scratch); err != nil {
		return fmt.Errorf("variant %s: %w", name, err)
	}
	b.variants = append(b.variants, variantDef{name: name, apply: apply, pos: b.here()})
	return nil
}

// configKeys are what a config or variant map may hold, applied in
// this order.
var configKeys = []string{"name", "profile", "host", "device", "qdisc", "tc", "senders", "path", "set", "cost", "duration", "warmup", "interval", "seed", "lock_cpus"}

func applyConfig(s *run.Spec, m map[string]any) error {
	if err := checkKeys("config", m, configKeys...); err != nil {
		return err
	}
	for _, k := range configKeys {
		if v, ok := m[k]; ok {
			if err := applySection(s, k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func applySection(s *run.Spec, key string, v any) error {
	var err error
	switch key {
	case "name":
		s.Name, err = asString("name", v)
	case "profile":
		var p string
		if p, err = asString("profile", v); err == nil {
			if _, err = netdev.Profile(p); err == nil {
				s.Profile = p
			}
		}
	case "host":
		err = setHost(s, v)
	case "device":
		err = setDevice(s, v)
	case "qdisc":
		err = setQdisc(s, v)
	case "tc":
		err = addTC(s, v)
	case "senders":
		err = setSenders(s, v)
	case "path":
		err = setPath(s, v)
	case "set":
		err = setToggles(s, v)
	case "cost":
		err = setCosts(s, v)
	case "duration":
		s.Duration, err = asDuration("duration", v)
		if err == nil && s.Duration <= 0 {
			err = fmt.Errorf("duration must be > 0")
		}
	case "warmup":
		s.Warmup, err = asDuration("warmup", v)
	case "interval":
		s.Interval, err = asDuration("interval", v)
	case "seed":
		var n int64
		if n, err = asInt("seed", v, 0, 1<<62); err == nil {
			s.Seed = uint64(n)
		}
	case "lock_cpus":
		var l string
		if l, err = asString("lock_cpus", v); err == nil {
			if _, err = workload.ParseCPUList(l, 1<<16); err == nil {
				s.LockCPUs = l
			}
		}
	default:
		err = fmt.Errorf("unknown section %q", key)
	}
	return err
}

// removedKeys are section keys that named a knob twice; a script that
// uses one learns the name that stays.
var removedKeys = map[string]string{
	"host.cpus":   "host cpus was removed: give sockets, cores and smt (the CPUs are sockets x cores x smt)",
	"device.ring": "device ring was removed: give the ring size in opts, ethtool's word: opts: \"tx 512\"",
}

func checkRemoved(section string, m map[string]any) error {
	for _, k := range sortedKeys(m) {
		if msg, ok := removedKeys[section+"."+k]; ok {
			return errors.New(msg)
		}
	}
	return nil
}

// knobInt reads a whole number in the range the run's knob table gives
// the knob of flag.
func knobInt(what string, v any, flag string) (int64, error) {
	k := run.KnobByFlag(flag)
	return asInt(what, v, int64(k.Min), int64(k.Max))
}

// knobRange checks v against the knob table's range for flag.
func knobRange(what string, v float64, flag string) error {
	if err := run.KnobByFlag(flag).InRange(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// checkedString sets *dst from m[key], a string the parser check
// accepts; errors name the section and key ("device xps: ...").
func checkedString(m map[string]any, section, key string, dst *string, check func(string) error) error {
	x, ok := m[key]
	if !ok {
		return nil
	}
	v, err := asString(section+" "+key, x)
	if err != nil {
		return err
	}
	if err := check(v); err != nil {
		return fmt.Errorf("%s %s: %w", section, key, err)
	}
	*dst = v
	return nil
}

func setHost(s *run.Spec, v any) error {
	m, err := asMap("host", v)
	if err != nil {
		return err
	}
	if err := checkRemoved("host", m); err != nil {
		return err
	}
	if err := checkKeys("host", m, "sockets", "cores", "smt", "cpu"); err != nil {
		return err
	}
	if err := checkedString(m, "host", "cpu", &s.CPU, func(v string) error { _, err := sim.LookupCPU(v); return err }); err != nil {
		return err
	}
	for _, f := range []struct {
		k, flag string
		p       *int
	}{{"sockets", "sockets", &s.Sockets}, {"smt", "smt", &s.Threads}, {"cores", "cores", &s.Cores}} {
		if x, ok := m[f.k]; ok {
			n, err := knobInt("host "+f.k, x, f.flag)
			if err != nil {
				return err
			}
			*f.p = int(n)
		}
	}
	return nil
}

func setDevice(s *run.Spec, v any) error {
	m, err := asMap("device", v)
	if err != nil {
		return err
	}
	if err := checkRemoved("device", m); err != nil {
		return err
	}
	if err := checkKeys("device", m, "driver", "queues", "rate", "opts", "rx_queues", "rx_port", "xps", "irq_cpus", "bond", "ifb"); err != nil {
		return err
	}
	giveKeys(s, "device", m)
	if x, ok := m["driver"]; ok {
		d, err := asString("device driver", x)
		if err != nil {
			return err
		}
		if !s.Plugins.Serves("driver", d) {
			if _, err := driver.New(d); err != nil {
				return err
			}
		}
		s.Driver = d
	}
	if x, ok := m["queues"]; ok {
		n, err := knobInt("device queues", x, "queues")
		if err != nil {
			return err
		}
		s.Queues = int(n)
	}
	if x, ok := m["rate"]; ok {
		if s.RateBps, err = asLinkRate("device rate", x, func(bits float64, given string) error {
			if k := run.KnobByFlag("rate"); k.InRange(bits) != nil {
				return fmt.Errorf("%s is out of range: %s", given, k.Range())
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if x, ok := m["rx_queues"]; ok {
		n, err := asInt("device rx_queues", x, 0, int64(run.KnobByFlag("rx-queues").Max))
		if err != nil {
			return err
		}
		s.RxQueues = int(n)
	}
	if x, ok := m["rx_port"]; ok {
		p, err := asString("device rx_port", x)
		if err != nil {
			return err
		}
		if p != run.RxPortSame && p != run.RxPortOther {
			return fmt.Errorf("device rx_port %q is not %s or %s", p, run.RxPortSame, run.RxPortOther)
		}
		s.RxPort = p
	}
	if err := checkedString(m, "device", "bond", &s.Bond, func(v string) error { _, err := bonding.ParseList(v); return err }); err != nil {
		return err
	}
	if err := checkedString(m, "device", "ifb", &s.Ifb, func(v string) error { _, err := netdev.ParseIfbList(v); return err }); err != nil {
		return err
	}
	if err := checkedString(m, "device", "xps", &s.XPS, func(v string) error { _, err := netdev.ParseXPS(v); return err }); err != nil {
		return err
	}
	// Which CPUs exist is the host's to say (Spec.Validate); here the list's form.
	if err := checkedString(m, "device", "irq_cpus", &s.IRQCPUs, func(v string) error { _, err := workload.ParseCPUList(v, sim.MaxCPUs); return err }); err != nil {
		return err
	}
	if x, ok := m["opts"]; ok {
		var words []string
		switch o := x.(type) {
		case string:
			words = strings.Fields(o)
		case map[string]any:
			if words, err = optionWords("device opts", o); err != nil {
				return err
			}
		default:
			if words, err = qdiscWords("device opts", x); err != nil {
				return err
			}
		}
		s.DriverArgs = words
	}
	return nil
}

func setQdisc(s *run.Spec, v any) error {
	words, err := qdiscWords("qdisc", v)
	if err != nil {
		return err
	}
	if err := checkQdisc(words, max(s.Queues, 1), s.Plugins); err != nil {
		return err
	}
	s.Qdisc = strings.Join(words, " ")
	return nil
}

// checkQdisc builds the qdisc (or mq's child) once with a scratch setup,
// so a bad tc word, an unknown kind, option or value fails at the script
// line. A kind a plugin serves is checked when the run starts it.
func checkQdisc(words []string, queues int, plugins plugin.Options) (err error) {
	cmd, err := netdev.ParseRootQdisc(report.Device, words)
	if err != nil {
		return err
	}
	kind := cmd.Kind
	words = append([]string{kind}, cmd.Options...)
	switch kind {
	case "noqueue":
		if len(words) > 1 {
			return fmt.Errorf("noqueue takes no options, got %q", words[1])
		}
		return nil
	case "mqprio":
		return netdev.CheckMQPrio(words[1:], queues)
	case "mq":
		if len(words) == 1 {
			return nil
		}
		if words[1] == "mq" || words[1] == "noqueue" || words[1] == "mqprio" {
			return fmt.Errorf("%s can only be the root qdisc", words[1])
		}
		words, queues = words[1:], 1
		kind = words[0]
	}
	if plugins.Serves("qdisc", kind) {
		return nil
	}
	ops, err := qdisc.New(kind)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("qdisc %s panicked in init: %v", kind, r)
		}
	}()
	_, err = ops.Init(qdisc.CheckCtx(), qdisc.Setup{Handle: "8001:", Parent: "root", MTU: 1514, DevMTU: 1500,
		TxQueueLen: 1000, NumTxQ: queues, DevTxQ: queues}, words[1:])
	return err
}

// setSenders reads txlab.senders' argument: a map sets (or, in a variant
// or config, changes) the run's first sender group; an array of maps
// sets every group, the first (or the tcp_stream one) first and the UDP
// groups that run beside it (run.Spec.Also).
func setSenders(s *run.Spec, v any) error {
	var err error
	if list, ok := v.([]any); ok {
		err = setSenderGroups(s, list)
	} else {
		err = setSenderMap(s, v)
	}
	if err != nil {
		return err
	}
	return s.CheckSenders() // here, at the line, not after the run's end
}

// tcpOnlyKeys are the senders keys only tcp_stream reads.
var tcpOnlyKeys = []string{"down", "cc", "ecn", "marks", "hosts", "start", "ping", "probes"}

func setSenderGroups(s *run.Spec, list []any) error {
	if len(list) == 0 {
		return fmt.Errorf("senders: an empty array; give one map per sender group, e.g. [{kind: \"udp_stream\", count: 240}, {kind: \"tcp_stream\", flows: 8}]")
	}
	first := 0
	tcps := 0
	for i, x := range list {
		m, err := asMap(fmt.Sprintf("senders[%d]", i), x)
		if err != nil {
			return err
		}
		if k, _ := m["kind"].(string); k == workload.TCPStream {
			first = i
			tcps++
		}
	}
	if tcps > 1 {
		return fmt.Errorf("senders: %d tcp_stream groups; one holds every TCP connection and probe of a run", tcps)
	}
	var also []workload.Spec
	for i, x := range list {
		if i == first {
			continue
		}
		m := x.(map[string]any)
		for _, k := range tcpOnlyKeys {
			if _, ok := m[k]; ok {
				if k == "ecn" {
					return fmt.Errorf("senders[%d]: %w", i, udpECN(m[k]))
				}
				return fmt.Errorf("senders[%d]: %q is tcp_stream's; a UDP group beside the first has none", i, k)
			}
		}
		g := run.Default()
		if err := setSenderMap(&g, m); err != nil {
			return fmt.Errorf("senders[%d]: %w", i, err)
		}
		also = append(also, g.Workload)
	}
	if err := setSenderMap(s, list[first]); err != nil {
		return fmt.Errorf("senders[%d]: %w", first, err)
	}
	s.Also = also
	return nil
}

// udpECN is the error for an ecn key on UDP senders, saying what is
// wrong with its value: the key is tcp_stream's (true or false:
// net.ipv4.tcp_ecn), and a UDP sender's codepoint is set per flow
// group (groups: [{ecn: ...}]).
func udpECN(v any) error {
	const ours = "ecn: true or false is tcp_stream's (net.ipv4.tcp_ecn)"
	if b, ok := v.(bool); ok {
		return fmt.Errorf("ecn: %v is tcp_stream's (net.ipv4.tcp_ecn); UDP senders set a codepoint (not-ect, ect1, ect0 or ce) per flow group: groups: [{ecn: \"ect0\"}]", b)
	}
	var g workload.Group
	if err := g.Set("ecn", fmt.Sprint(v)); err != nil {
		return fmt.Errorf("ecn %s is not an ECN codepoint: UDP senders take not-ect, ect1, ect0 or ce, per flow group (groups: [{ecn: \"ect0\"}]); %s", quoteValue(v), ours)
	}
	return fmt.Errorf("ecn %s: UDP senders take a codepoint per flow group, groups: [{ecn: %s}]; %s", quoteValue(v), quoteValue(v), ours)
}

// quoteValue is a script value as the script writes it: strings quoted.
func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// addSenderGroup adds the group m to s's: a tcp_stream group becomes
// the first (the groups so far run beside it), a UDP group runs beside
// the others (run.Spec.Also), each from the defaults with its own keys.
func addSenderGroup(s *run.Spec, m map[string]any) error {
	k, _ := m["kind"].(string)
	if k == workload.Forward || s.Workload.Kind == workload.Forward {
		return fmt.Errorf("a group of %s senders beside %s ones: forward runs alone", k, s.Workload.Kind)
	}
	if k == workload.TCPStream {
		old := s.Workload
		s.Workload = run.Default().Workload
		if err := setSenderMap(s, m); err != nil {
			s.Workload = old
			return err
		}
		s.Also = append([]workload.Spec{old}, s.Also...)
		return s.CheckSenders()
	}
	for _, key := range tcpOnlyKeys {
		if _, ok := m[key]; ok {
			if key == "ecn" {
				return fmt.Errorf("senders: %w", udpECN(m[key]))
			}
			return fmt.Errorf("senders: %q is tcp_stream's; a UDP group beside the first has none", key)
		}
	}
	g := run.Default()
	if err := setSenderMap(&g, m); err != nil {
		return err
	}
	s.Also = append(s.Also, g.Workload)
	return s.CheckSenders()
}

func setSenderMap(s *run.Spec, v any) error {
	m, err := asMap("senders", v)
	if err != nil {
		return err
	}
	if err := checkKeys("senders", m, "kind", "count", "placement", "size", "flows", "rate", "dscp", "priority", "arrival", "mark", "groups", "launch",
		"down", "cc", "ecn", "marks", "hosts", "start", "ping", "probes"); err != nil {
		return err
	}
	if err := setTCPSenders(s, m); err != nil {
		return err
	}
	w := &s.Workload
	if x, ok := m["kind"]; ok {
		k, err := asString("senders kind", x)
		if err != nil {
			return err
		}
		known := workload.Kinds()
		found := false
		for _, n := range known {
			found = found || n == k
		}
		if !found {
			return fmt.Errorf("unknown sender kind %q (known: %s)", k, strings.Join(known, ", "))
		}
		w.Kind = k
	}
	ints := []struct {
		k, flag string
		p       *int
	}{{"count", "senders", &w.Senders}, {"size", "size", &w.PacketSize}, {"flows", "flows", &w.Flows}}
	for _, f := range ints {
		if x, ok := m[f.k]; ok {
			if f.k == "flows" && w.Kind == workload.TCPStream {
				// tcp_stream: 0 uploads is a downloads-only run (tcp_ndown).
				n, err := asInt("senders flows", x, 0, int64(run.KnobByFlag("flows").Max))
				if err != nil {
					return err
				}
				*f.p = int(n)
				continue
			}
			n, err := knobInt("senders "+f.k, x, f.flag)
			if err != nil {
				return err
			}
			*f.p = int(n)
		}
	}
	if x, ok := m["placement"]; ok {
		if w.Placement, err = asString("senders placement", x); err != nil {
			return err
		}
		if w.Placement != workload.Spread && w.Placement != workload.Unpinned {
			if _, err := workload.ParseCPUList(strings.TrimPrefix(w.Placement, workload.UnpinnedOn), 1<<16); err != nil {
				return err
			}
		}
	}
	if x, ok := m["rate"]; ok {
		if w.Rate, err = asCount("senders rate", x); err != nil {
			return err
		}
		if err := knobRange("senders rate", w.Rate, "offered-rate"); err != nil {
			return err
		}
	}
	if x, ok := m["launch"]; ok {
		if w.Launch, err = asDuration("senders launch", x); err != nil {
			return err
		}
		if err := knobRange("senders launch", float64(w.Launch), "launch"); err != nil {
			return err
		}
	}
	if x, ok := m["arrival"]; ok {
		a, err := asString("senders arrival", x)
		if err != nil {
			return err
		}
		if a != workload.ArrivalConstant && a != workload.ArrivalPoisson {
			return fmt.Errorf("senders arrival %q is not %s", a, strings.Join(workload.Arrivals(), " or "))
		}
		w.Arrival = a
	}
	if x, ok := m["dscp"]; ok {
		n, err := asInt("senders dscp", x, 0, 63)
		if err != nil {
			return err
		}
		w.DSCP = uint8(n)
	}
	if x, ok := m["priority"]; ok {
		n, err := asInt("senders priority", x, 0, 1<<32-1)
		if err != nil {
			return err
		}
		w.Priority = uint32(n)
	}
	if x, ok := m["mark"]; ok {
		n, err := asInt("senders mark", x, 0, 1<<32-1)
		if err != nil {
			return err
		}
		w.Mark = uint32(n)
	}
	if x, ok := m["groups"]; ok {
		if w.Groups, err = asGroups(x); err != nil {
			return err
		}
	}
	giveKeys(s, "senders", m)
	return nil
}

// giveKeys records the section's keys that are knobs some workloads do
// not use (run.Spec.Give): the plan refuses one none of its specs uses
// (run.CheckGiven), once its variants and the command line's flags are
// applied.
func giveKeys(s *run.Spec, section string, m map[string]any) {
	for _, key := range sortedKeys(m) {
		if k := run.KnobByScript(section + "." + key); k != nil && k.Only != nil {
			s.Give(k.Flag, "script")
		}
	}
}

// asGroups reads senders.groups: the CLI's --groups words, or an array
// of maps with the keys dscp, ecn (not-ect, ect1, ect0, ce), priority
// (a classid string "1:10" or a number), mark and dport.
func asGroups(v any) ([]workload.Group, error) {
	switch x := v.(type) {
	case string:
		return workload.ParseGroups(x)
	case []any:
		out := make([]workload.Group, len(x))
		for i, e := range x {
			what := fmt.Sprintf("senders groups[%d]", i)
			gm, err := asMap(what, e)
			if err != nil {
				return nil, err
			}
			if err := checkKeys(what, gm, "dscp", "ecn", "priority", "mark", "dport"); err != nil {
				return nil, err
			}
			for _, k := range sortedKeys(gm) {
				val := fmt.Sprint(gm[k])
				if err := out[i].Set(k, val); err != nil {
					return nil, fmt.Errorf("%s: %w", what, err)
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("senders groups: want a string (\"dport=5001,prio=1:10 dport=5002\") or an array of maps, got %s", typeName(v))
}

func setToggles(s *run.Spec, v any) error {
	m, err := asMap("set", v)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		val, err := word("set "+k, m[k])
		if err != nil {
			return err
		}
		cfg, _ := netdev.Profile("6.18")
		if err := cfg.Set(k, val); err != nil {
			return err
		}
		s.Set = append(s.Set, k+"="+val)
	}
	return nil
}

func setCosts(s *run.Spec, v any) error {
	m, err := asMap("cost", v)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		n, err := asInt("cost "+k, m[k], math.MinInt64, math.MaxInt64) // sim.Costs.Set checks the range
		if err != nil {
			return err
		}
		val := strconv.FormatInt(n, 10)
		if err := sim.DefaultCosts().Set(k, val); err != nil {
			return err
		}
		s.Set = append(s.Set, "cost."+k+"="+val)
	}
	return nil
}

// addTC appends a tc batch (txlab.tc, a config's tc key): a string of
// tc -batch lines, or an array of lines. Its words are read here, so a
// command tc cannot parse fails at this line; the host runs it when the
// run is built (txlab check too).
func addTC(s *run.Spec, v any) error {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case []any:
		lines := make([]string, len(x))
		for i, e := range x {
			l, err := asString(fmt.Sprintf("tc line %d", i+1), e)
			if err != nil {
				return err
			}
			lines[i] = l
		}
		text = strings.Join(lines, "\n")
	default:
		return fmt.Errorf("tc: want tc -batch lines as a string or an array of strings, got %s", typeName(v))
	}
	cmds, err := tc.ParseBatch(text)
	if err != nil {
		return fmt.Errorf("tc: %w", err)
	}
	for _, c := range cmds {
		var perr error
		switch c.Object {
		case tc.ObjQdisc:
			_, perr = tc.ParseQdisc(c.Words)
		case tc.ObjClass:
			_, perr = tc.ParseClass(c.Words)
		case tc.ObjFilter:
			_, perr = tc.ParseFilter(c.Words)
		}
		if perr != nil {
			return fmt.Errorf("tc: line %d: %s: %w", c.Line, c, perr)
		}
	}
	s.TC = append(append([]run.TCBatch(nil), s.TC...), run.TCBatch{Name: fmt.Sprintf("txlab.tc #%d", len(s.TC)+1), Text: text})
	return nil
}

// ModuleNames are the names the `txlab` module defines, sorted.
func ModuleNames() []string {
	m := (&Program{}).module()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
