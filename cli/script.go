package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/script"
	"github.com/txlab/txlab/internal/regfile"
	"github.com/txlab/txlab/scripts"
)

// scriptFlags are the flags of the Tengo front end, on `run` and `check`.
func scriptFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "quick", Usage: "script: txlab.quick() returns true (scripts scale themselves down)"},
		listFlag("param", "script: txlab.param(name, default) returns value: name=value (kept whole: a CPU list's commas are the value's); repeatable"),
		&cli.Int64Flag{Name: "max-allocs", Value: script.DefaultMaxAllocs, Usage: fmt.Sprintf("script: most objects one run of the script may allocate; 1..%d", maxAllocsFlag)},
		&cli.DurationFlag{Name: "script-timeout", Value: script.DefaultTimeout, Usage: fmt.Sprintf("script: wall-time bound of one run of the script; 1ns..%v", maxTimeoutFlag)},
		&cli.Int64Flag{Name: "hook-max-allocs", Value: script.DefaultHookMaxAllocs, Usage: fmt.Sprintf("script: most objects one run of a hook may allocate; 1..%d", maxAllocsFlag)},
		&cli.DurationFlag{Name: "hook-timeout", Value: script.DefaultHookTimeout, Usage: fmt.Sprintf("script: wall-time bound of one run of a hook; 1ns..%v", maxTimeoutFlag)},
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
			if err := noArgs(c); err != nil {
				return err
			}
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
// "e1.tengo", "scripts/e1.tengo") when there is no such file. A file
// that is there but is not a regular one (a FIFO, which would block the
// open; a device) is refused, naming it, before it is opened;
// script.ReadFile reads at most script.MaxSourceBytes.
func readScript(arg string) (string, []byte, error) {
	if st, err := os.Stat(arg); err == nil {
		if what := regfile.Kind(st.Mode()); what != "" {
			return "", nil, fmt.Errorf("%s: %s, not a script file", arg, what)
		}
	}
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

// Bounds of the script flags.
const (
	maxAllocsFlag  = 1_000_000_000 // --max-allocs, --hook-max-allocs
	maxTimeoutFlag = time.Hour     // --script-timeout, --hook-timeout
)

func scriptOptions(c *cli.Context) (script.Options, error) {
	o := script.Options{Quick: c.Bool("quick"), MaxAllocs: c.Int64("max-allocs"), Timeout: c.Duration("script-timeout"),
		HookMaxAllocs: c.Int64("hook-max-allocs"), HookTimeout: c.Duration("hook-timeout"), Log: c.App.ErrWriter}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max-allocs", o.MaxAllocs}, {"hook-max-allocs", o.HookMaxAllocs}} {
		if f.v < 1 || f.v > maxAllocsFlag {
			return o, fmt.Errorf("--%s %d is out of range: 1..%d", f.name, f.v, maxAllocsFlag)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"script-timeout", o.Timeout}, {"hook-timeout", o.HookTimeout}} {
		if f.v <= 0 || f.v > maxTimeoutFlag {
			return o, fmt.Errorf("--%s %v is out of range: 1ns..%v", f.name, f.v, maxTimeoutFlag)
		}
	}
	var err error
	if o.Plugins, err = pluginOptions(c); err != nil {
		return o, err
	}
	for _, kv := range listOf(c, "param") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return o, fmt.Errorf("--param %q: want name=value", kv)
		}
		if o.Params == nil {
			o.Params = map[string]string{}
		}
		k = strings.TrimSpace(k)
		if old, dup := o.Params[k]; dup {
			return o, fmt.Errorf("--param %s: given twice (%q and %q)", k, old, v)
		}
		o.Params[k] = v
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
