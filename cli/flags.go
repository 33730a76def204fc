package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/run"
)

// knobFlags are run.Knobs as flags: one flag per knob, its default the
// knob's value in run.Default(), its help the knob's help and range. The
// removed knobs stay as hidden flags that say the name to use.
func knobFlags() []cli.Flag {
	d := run.Default()
	var out []cli.Flag
	for _, k := range run.Knobs() {
		def := k.Get(&d)
		out = append(out, &cli.StringFlag{Name: k.Flag, Value: def, DefaultText: def, Usage: knobUsage(k)})
	}
	for _, name := range removedFlagNames() {
		out = append(out, &cli.StringFlag{Name: name, Hidden: true})
	}
	return out
}

// knobUsage is a knob's help line: what it is, and its range.
func knobUsage(k *run.Knob) string {
	if r := k.Range(); r != "" {
		return k.Help + "; " + r
	}
	return k.Help
}

// removedFlags named a thing that has another name; giving one is a
// one-line error that says which.
var removedFlags = map[string]string{
	"cpus": "--cpus was removed: give --sockets, --cores and --smt (the CPUs are sockets x cores x smt)",
	"ring": "--ring was removed: give the ring size in ethtool's word, --driver-opts \"tx N\"",
}

func removedFlagNames() []string { return []string{"cpus", "ring"} }

// applyFlags is the one mapping from the command line to a run: every
// knob flag set on the command line is parsed into s (run.Default() for
// a run from flags, or a script's spec), then --set is appended.
func applyFlags(c *cli.Context, s *run.Spec) error {
	for _, name := range removedFlagNames() {
		if c.IsSet(name) {
			return errors.New(removedFlags[name])
		}
	}
	for _, k := range run.Knobs() {
		if !c.IsSet(k.Flag) {
			continue
		}
		if err := k.Set(s, c.String(k.Flag)); err != nil {
			return fmt.Errorf("--%s: %w", k.Flag, err)
		}
		s.Give(k.Flag, "")
	}
	if c.IsSet("set") {
		given := map[string]string{}
		for _, kv := range c.StringSlice("set") {
			k, v, _ := strings.Cut(kv, "=")
			if old, dup := given[k]; dup {
				return fmt.Errorf("--set %s: given twice (%s and %s)", k, old, v)
			}
			given[k] = v
		}
		s.Set = append(append([]string(nil), s.Set...), c.StringSlice("set")...)
	}
	return nil
}

// positionalArgs returns the command's positional arguments, applying
// the flags written after them (`txlab run x.tengo -o FILE`): urfave/cli
// v2 stops parsing flags at the first positional argument. A flag is set
// by every one of its names (urfave keeps a value per name for most
// kinds, so setting only the name written, say the alias -o, would leave
// --output unset); kinds whose names share one value (the slices) are
// set once.
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
		names := f.Names()
		if sharesValue(f) {
			names = names[:1]
		}
		for _, n := range names {
			if err := c.Set(n, val); err != nil {
				return nil, fmt.Errorf("invalid value %q for flag -%s: %v", val, name, err)
			}
		}
	}
	return pos, nil
}

// sharesValue reports whether urfave registers one value for all of a
// flag's names (the slice flags), so that setting each name would set
// it more than once.
func sharesValue(f cli.Flag) bool {
	switch f.(type) {
	case *cli.StringSliceFlag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.Float64SliceFlag,
		*cli.UintSliceFlag, *cli.Uint64SliceFlag:
		return true
	}
	return false
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
