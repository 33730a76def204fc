package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/script"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/scripts"
)

// scriptFlags are the flags of the Tengo front end, on `run` and `check`.
func scriptFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "quick", Usage: "script: txlab.quick() returns true (scripts scale themselves down)"},
		&cli.StringSliceFlag{Name: "param", Usage: "script: txlab.param(name, default) returns value: name=value"},
		&cli.Int64Flag{Name: "max-allocs", Value: script.DefaultMaxAllocs, Usage: "script: most objects one run of the script may allocate"},
		&cli.DurationFlag{Name: "script-timeout", Value: script.DefaultTimeout, Usage: "script: wall-time bound of one run of the script"},
		&cli.Int64Flag{Name: "hook-max-allocs", Value: script.DefaultHookMaxAllocs, Usage: "script: most objects one run of a hook may allocate"},
		&cli.DurationFlag{Name: "hook-timeout", Value: script.DefaultHookTimeout, Usage: "script: wall-time bound of one run of a hook"},
	}
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "compile and validate a script without running it",
		ArgsUsage: "SCRIPT.tengo",
		Flags:     append(scriptFlags(), pluginFlags()...),
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return fmt.Errorf("check: want one SCRIPT.tengo, got %d arguments", len(args))
			}
			plan, err := loadPlan(c, args[0])
			if err != nil {
				return err
			}
			if err := plan.Check(); err != nil {
				return err
			}
			names := make([]string, len(plan.Specs))
			for i, s := range plan.Specs {
				names[i] = s.Name
			}
			if len(plan.Specs) == 1 {
				fmt.Fprintf(c.App.Writer, "%s: ok (one run)\n", plan.File)
			} else {
				fmt.Fprintf(c.App.Writer, "%s: ok (%d variants: %s)\n", plan.File, len(names), strings.Join(names, ", "))
			}
			return nil
		},
	}
}

func scriptsCommand() *cli.Command {
	return &cli.Command{
		Name:  "scripts",
		Usage: "list the shipped scripts (run one with `txlab run NAME`)",
		Action: func(c *cli.Context) error {
			list, err := shippedScripts()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(c.App.Writer, 2, 8, 2, ' ', 0)
			for _, s := range list {
				fmt.Fprintf(w, "%s\t%s\n", s.name, s.desc)
			}
			return w.Flush()
		},
	}
}

type shipped struct{ name, file, desc string }

func shippedScripts() ([]shipped, error) {
	files, err := fs.Glob(scripts.FS, "*.tengo")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []shipped
	for _, f := range files {
		src, err := scripts.FS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, shipped{name: strings.TrimSuffix(f, ".tengo"), file: "scripts/" + f, desc: script.Describe(src)})
	}
	return out, nil
}

// readScript reads a script file, or a shipped script by name ("e1",
// "e1.tengo", "scripts/e1.tengo") when there is no such file.
func readScript(arg string) (string, []byte, error) {
	src, err := script.ReadFile(arg)
	if err == nil {
		return arg, src, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	base := strings.TrimSuffix(path.Base(arg), ".tengo") + ".tengo"
	if emb, eerr := scripts.FS.ReadFile(base); eerr == nil {
		return "scripts/" + base, emb, nil
	}
	var names []string
	list, _ := shippedScripts()
	for _, s := range list {
		names = append(names, s.name)
	}
	return "", nil, fmt.Errorf("no script %q (no such file, and the shipped ones are: %s)", arg, strings.Join(names, ", "))
}

func scriptOptions(c *cli.Context) (script.Options, error) {
	o := script.Options{Quick: c.Bool("quick"), MaxAllocs: c.Int64("max-allocs"), Timeout: c.Duration("script-timeout"),
		HookMaxAllocs: c.Int64("hook-max-allocs"), HookTimeout: c.Duration("hook-timeout"), Log: c.App.ErrWriter}
	if o.MaxAllocs <= 0 || o.HookMaxAllocs <= 0 || o.Timeout <= 0 || o.HookTimeout <= 0 {
		return o, fmt.Errorf("--max-allocs, --script-timeout, --hook-max-allocs and --hook-timeout must be > 0")
	}
	var err error
	if o.Plugins, err = pluginOptions(c); err != nil {
		return o, err
	}
	for _, kv := range c.StringSlice("param") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return o, fmt.Errorf("--param %q: want name=value", kv)
		}
		if o.Params == nil {
			o.Params = map[string]string{}
		}
		o.Params[strings.TrimSpace(k)] = v
	}
	return o, nil
}

func loadPlan(c *cli.Context, arg string) (*script.Plan, error) {
	name, src, err := readScript(arg)
	if err != nil {
		return nil, err
	}
	opts, err := scriptOptions(c)
	if err != nil {
		return nil, err
	}
	prog, err := script.Load(name, src, opts)
	if err != nil {
		return nil, err
	}
	return prog.Eval()
}

// scriptSpecs builds the specs of a script, with every flag given
// explicitly on the command line applied on top of each.
func scriptSpecs(c *cli.Context, arg string) ([]run.Spec, error) {
	plan, err := loadPlan(c, arg)
	if err != nil {
		return nil, err
	}
	specs := plan.Specs
	for i := range specs {
		if err := overrideFromFlags(c, &specs[i]); err != nil {
			return nil, err
		}
	}
	if cmp := c.String("compare"); cmp != "" {
		if len(specs) > 1 {
			return nil, fmt.Errorf("--compare: %s already declares %d variants", plan.File, len(specs))
		}
		return variants(specs[0], cmp)
	}
	return specs, nil
}

// overrideFromFlags applies the flags set on the command line (only
// those: c.IsSet) to a script's spec.
func overrideFromFlags(c *cli.Context, s *run.Spec) error {
	set := c.IsSet
	if set("profile") {
		s.Profile = c.String("profile")
	}
	if set("sockets") {
		s.Sockets = c.Int("sockets")
	}
	if set("cores") {
		s.Cores = c.Int("cores")
	}
	if set("smt") {
		s.Threads = c.Int("smt")
	}
	if set("cpus") {
		n, per := c.Int("cpus"), s.Sockets*s.Threads
		if per <= 0 || n%per != 0 {
			return fmt.Errorf("--cpus %d is not a multiple of sockets*smt = %d", n, per)
		}
		s.Cores = n / per
	}
	if set("driver") {
		s.Driver = c.String("driver")
	}
	if set("driver-opts") {
		s.DriverArgs = strings.Fields(c.String("driver-opts"))
	}
	if set("queues") {
		s.Queues = c.Int("queues")
	}
	if set("rate") {
		r, err := units.ParseRate(c.String("rate"))
		if err != nil {
			return fmt.Errorf("--rate: %w", err)
		}
		s.RateBps = r
	}
	if set("ring") {
		s.RingSize = c.Int("ring")
	}
	if set("qdisc") {
		s.Qdisc = c.String("qdisc")
	}
	if set("workload") {
		s.Workload.Kind = c.String("workload")
	}
	if set("senders") {
		s.Workload.Senders = c.Int("senders")
	}
	if set("placement") {
		s.Workload.Placement = c.String("placement")
	}
	if set("size") {
		s.Workload.PacketSize = c.Int("size")
	}
	if set("flows") {
		s.Workload.Flows = c.Int("flows")
	}
	if set("offered-rate") {
		pps, err := units.ParseCount(c.String("offered-rate"))
		if err != nil {
			return fmt.Errorf("--offered-rate: %w", err)
		}
		s.Workload.Rate = pps
	}
	if set("duration") {
		s.Duration = sim.Time(c.Duration("duration"))
	}
	if set("warmup") {
		s.Warmup = sim.Time(c.Duration("warmup"))
	}
	if set("interval") {
		s.Interval = sim.Time(c.Duration("interval"))
	}
	if set("seed") {
		s.Seed = c.Uint64("seed")
	}
	if set("set") {
		s.Set = append(append([]string(nil), s.Set...), c.StringSlice("set")...)
	}
	return nil
}

// positionalArgs returns the command's positional arguments, applying any
// flags written after them (`txlab run x.tengo --set a=b`): urfave/cli v2
// stops parsing flags at the first positional argument.
func positionalArgs(c *cli.Context) ([]string, error) {
	rest := c.Args().Slice()
	var pos []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := findFlag(c.Command.Flags, name)
		if f == nil {
			return nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasVal {
			val, hasVal = "true", true
		}
		if !hasVal {
			if i+1 >= len(rest) {
				return nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			val = rest[i]
		}
		if err := c.Set(name, val); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag -%s: %v", val, name, err)
		}
	}
	return pos, nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}
