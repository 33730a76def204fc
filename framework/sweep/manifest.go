package sweep

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/script"
	"github.com/txlab/txlab/framework/sim"
)

// FormatVersion is the manifest's and the merged report's format.
const FormatVersion = 1

// Inputs are what a sweep's runs are built from, besides the grid: a
// script (its text, so that a Slurm task builds what the submitter
// checked, whatever happens to the file) or run.Default(), and the
// command line's flags.
type Inputs struct {
	Script string `json:"script,omitempty"` // the name given (messages)
	Source string `json:"source,omitempty"` // the script's text
	// Knobs are the knob flags given (flag name -> text), applied in
	// run.Knobs order as `txlab run` does.
	Knobs map[string]string `json:"knobs,omitempty"`
	Set   []string          `json:"set,omitempty"` // --set name=value
	// TC are the --tc-file batches (their text, as for the script),
	// run after the script's own.
	TC     []run.TCBatch     `json:"tc,omitempty"`
	Params map[string]string `json:"params,omitempty"` // --param name=value
	Quick  bool              `json:"quick,omitempty"`
	// The script's bounds (0: the script package's defaults).
	MaxAllocs     int64         `json:"max_allocs,omitempty"`
	ScriptTimeout time.Duration `json:"script_timeout_ns,omitempty"`
	HookMaxAllocs int64         `json:"hook_max_allocs,omitempty"`
	HookTimeout   time.Duration `json:"hook_timeout_ns,omitempty"`
	Plugins       PluginInputs  `json:"plugins"`
}

// PluginInputs are plugin.Options without the log writer; paths are
// absolute, so a Slurm task finds them from its own directory.
type PluginInputs struct {
	Isolate   bool          `json:"isolate,omitempty"`
	Paths     []string      `json:"paths,omitempty"`
	Dir       string        `json:"dir,omitempty"`
	Timeout   time.Duration `json:"timeout_ns,omitempty"`
	Transport string        `json:"transport,omitempty"`
	Override  []string      `json:"override,omitempty"`
	LogLevel  string        `json:"log_level,omitempty"`
}

// PluginInputsOf keeps what a run needs of o.
func PluginInputsOf(o plugin.Options) PluginInputs {
	return PluginInputs{Isolate: o.Isolate, Paths: o.Paths, Dir: o.Dir, Timeout: o.Timeout, Transport: o.Transport,
		Override: o.Override, LogLevel: o.LogLevel}
}

func (p PluginInputs) options() plugin.Options {
	return plugin.Options{Isolate: p.Isolate, Paths: p.Paths, Dir: p.Dir, Timeout: p.Timeout, Transport: p.Transport,
		Override: p.Override, LogLevel: p.LogLevel}
}

// Manifest is a sweep: what every point runs. It is what a sweep
// directory's manifest.json holds.
type Manifest struct {
	Format int     `json:"format"`
	Txlab  string  `json:"txlab"` // the version that made it
	Inputs Inputs  `json:"inputs"`
	Grid   []Axis  `json:"grid"`
	Seeds  int     `json:"seeds"`
	Points []Point `json:"points"`

	params []string // the script's parameter names
}

// New checks a sweep's inputs, grid and seeds and returns its manifest.
// Every error is a one-line bad-input error; nothing is run but the
// script (to learn its parameters).
func New(version string, in Inputs, grid []Axis, seeds int) (*Manifest, error) {
	if seeds < 1 || seeds > MaxSeeds {
		return nil, fmt.Errorf("--seeds %d is out of range: 1..%d", seeds, MaxSeeds)
	}
	if err := CheckGrid(grid); err != nil {
		return nil, err
	}
	m := &Manifest{Format: FormatVersion, Txlab: version, Inputs: in, Grid: grid, Seeds: seeds}
	if in.Script != "" {
		plan, err := m.eval(in.Params)
		if err != nil {
			return nil, err
		}
		m.params = plan.Params
	}
	for _, a := range grid {
		if err := m.checkAxis(a); err != nil {
			return nil, err
		}
	}
	m.Points = Points(grid)
	return m, nil
}

// checkAxis refuses a key that does not exist or that a flag sets too,
// and a value its key cannot take.
func (m *Manifest) checkAxis(a Axis) error {
	in := &m.Inputs
	switch ClassifyKey(a.Key, m.params) {
	case NoKey:
		return fmt.Errorf("--grid %s: no such key (%s)", a.Key, KnownKeys(m.params, in.Script != ""))
	case KnobKey:
		if _, ok := in.Knobs[a.Key]; ok {
			return fmt.Errorf("--%s and --grid %s both given: give its values in the grid only", a.Key, a.Key)
		}
		k := run.KnobByFlag(a.Key)
		for _, v := range a.Values {
			s := run.Default()
			if err := k.Set(&s, v); err != nil {
				return fmt.Errorf("--grid %s=%s: %w", a.Key, v, err)
			}
		}
	case ToggleKey, CostKey:
		for _, kv := range in.Set {
			if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == a.Key {
				return fmt.Errorf("--set %s and --grid %s both given: give its values in the grid only", kv, a.Key)
			}
		}
		for _, v := range a.Values {
			var err error
			if name, ok := strings.CutPrefix(a.Key, "cost."); ok {
				err = sim.DefaultCosts().Set(name, v)
			} else {
				cfg, _ := netdev.Profile(run.Default().Profile)
				err = cfg.Set(a.Key, v)
			}
			if err != nil {
				return fmt.Errorf("--grid %s=%s: %w", a.Key, v, err)
			}
		}
	case ParamKey:
		if _, ok := in.Params[a.Key]; ok {
			return fmt.Errorf("--param %s and --grid %s both given: give its values in the grid only", a.Key, a.Key)
		}
	}
	return nil
}

// eval runs the script with params.
func (m *Manifest) eval(params map[string]string) (*script.Plan, error) {
	in := &m.Inputs
	// A sweep evaluates the script once per point: its txlab.log lines
	// would repeat, so they go nowhere.
	prog, err := script.Load(in.Script, []byte(in.Source), script.Options{MaxAllocs: in.MaxAllocs, Timeout: in.ScriptTimeout,
		HookMaxAllocs: in.HookMaxAllocs, HookTimeout: in.HookTimeout, Quick: in.Quick, Params: params,
		Log: io.Discard, Plugins: in.Plugins.options()})
	if err != nil {
		return nil, err
	}
	return prog.Eval()
}

// Label is point p as "senders=16 profile=6.18".
func (m *Manifest) Label(p Point) string { return label(m.Grid, p) }

// Specs builds point p's specs, one per variant of the script (one
// without a script), before seeds: the script evaluated with the point's
// parameters, then the knob flags, --set, and the point's knobs, toggles
// and costs, as `txlab run` applies its flags.
func (m *Manifest) Specs(p Point) ([]run.Spec, error) {
	in := &m.Inputs
	if len(p.Values) != len(m.Grid) {
		return nil, fmt.Errorf("point %d has %d values for a grid of %d keys", p.Index, len(p.Values), len(m.Grid))
	}
	var specs []run.Spec
	if in.Script != "" {
		params := map[string]string{}
		for k, v := range in.Params {
			params[k] = v
		}
		for i, a := range m.Grid {
			if ClassifyKey(a.Key, m.params) == ParamKey {
				params[a.Key] = p.Values[i]
			}
		}
		plan, err := m.eval(params)
		if err != nil {
			return nil, err
		}
		specs = plan.Specs
	} else {
		specs = []run.Spec{run.Default()}
	}
	for i := range specs {
		s := &specs[i]
		for _, k := range run.Knobs() {
			if v, ok := in.Knobs[k.Flag]; ok {
				if err := k.Set(s, v); err != nil {
					return nil, fmt.Errorf("--%s: %w", k.Flag, err)
				}
				s.Give(k.Flag, "")
			}
		}
		s.Set = append(append([]string(nil), s.Set...), in.Set...)
		s.TC = append(append([]run.TCBatch(nil), s.TC...), in.TC...)
		for j, a := range m.Grid {
			v := p.Values[j]
			switch ClassifyKey(a.Key, m.params) {
			case KnobKey:
				if err := run.KnobByFlag(a.Key).Set(s, v); err != nil {
					return nil, fmt.Errorf("--grid %s=%s: %w", a.Key, v, err)
				}
				s.Give(a.Key, "--grid")
			case ToggleKey, CostKey:
				s.Set = append(s.Set, a.Key+"="+v)
			}
		}
		s.Plugins = in.Plugins.options()
	}
	return specs, nil
}

// Ready learns what a manifest read from a file needs to build its
// points (the script's parameter names).
func (m *Manifest) Ready() error {
	if m.Format != FormatVersion {
		return fmt.Errorf("manifest format %d, this txlab reads %d", m.Format, FormatVersion)
	}
	if m.Inputs.Script == "" {
		return nil
	}
	plan, err := m.eval(m.Inputs.Params)
	if err != nil {
		return err
	}
	m.params = plan.Params
	return nil
}

// Run is one run of a point: a variant with one of the seeds.
type Run struct {
	Variant int // index into the point's specs
	Seed    int // 0..Seeds-1: the spec's seed plus this
	Spec    run.Spec
}

// Runs expands a point's specs over the seeds: variant-major, seed k of
// a variant is its spec's seed + k.
func (m *Manifest) Runs(specs []run.Spec) []Run {
	out := make([]Run, 0, len(specs)*m.Seeds)
	for v, s := range specs {
		for k := range m.Seeds {
			r := Run{Variant: v, Seed: k, Spec: s}
			r.Spec.Seed = s.Seed + uint64(k)
			out = append(out, r)
		}
	}
	return out
}

// Check builds every point's specs and checks them as `txlab run` does
// before running anything (run.Spec.Validate, then run.Check builds each
// host once), so that no point fails for its configuration after
// others ran. It returns the specs, by point index.
func (m *Manifest) Check() ([][]run.Spec, error) {
	out := make([][]run.Spec, len(m.Points))
	for _, p := range m.Points {
		specs, err := m.Specs(p)
		if err == nil {
			for _, s := range specs {
				if err = s.Validate(); err == nil {
					err = run.Check(s)
				}
				if err != nil {
					if s.Name != "" {
						err = fmt.Errorf("variant %s: %w", s.Name, err)
					}
					break
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("point %d (%s): %w", p.Index, m.Label(p), err)
		}
		out[p.Index] = specs
	}
	// A knob (flag, grid axis or the script's) that no point uses.
	var all []run.Spec
	for _, specs := range out {
		all = append(all, specs...)
	}
	if err := run.CheckGiven(all); err != nil {
		return nil, err
	}
	return out, nil
}
