package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/workload"
)

// pluginFlags say which plugins a run may use.
func pluginFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "isolate", Usage: "run the built-in qdiscs and drivers out of process, served by this binary"},
		&cli.StringSliceFlag{Name: "plugin", Usage: "a plugin binary (txlab-qdisc-KIND or txlab-driver-NAME); repeatable"},
		&cli.StringFlag{Name: "plugin-dir", EnvVars: []string{plugin.EnvDir}, Usage: "a plugin directory, checksums in its " + plugin.Manifest},
		&cli.StringSliceFlag{Name: "plugin-override", EnvVars: []string{plugin.EnvOverride}, Usage: "let the plugin directory's plugin named NAME replace the built-in NAME (refused otherwise); repeatable"},
		&cli.DurationFlag{Name: "plugin-timeout", Value: plugin.DefaultTimeout, Usage: "how long one plugin call may take before the plugin counts as hung"},
		&cli.StringFlag{Name: "plugin-transport", EnvVars: []string{plugin.EnvTransport}, Value: "shm", Usage: "plugin data path: shm (shared memory) or grpc (a stream)"},
		&cli.StringFlag{Name: "plugin-log", Value: "error", Usage: "plugin log level shown on stderr: trace, debug, info, warn, error, off"},
	}
}

func pluginOptions(c *cli.Context) (plugin.Options, error) {
	o := plugin.Options{Isolate: c.Bool("isolate"), Paths: c.StringSlice("plugin"), Dir: c.String("plugin-dir"),
		Timeout: c.Duration("plugin-timeout"), Transport: c.String("plugin-transport"), LogLevel: c.String("plugin-log"),
		Override: c.StringSlice("plugin-override"), Log: c.App.ErrWriter}
	for _, p := range o.Paths {
		if err := checkPluginFile("--plugin", p); err != nil {
			return o, err
		}
	}
	if o.Timeout <= 0 || o.Timeout > maxTimeoutFlag {
		return o, fmt.Errorf("--plugin-timeout %v is out of range: 1ns..%v", o.Timeout, maxTimeoutFlag)
	}
	if t := o.Transport; t != "shm" && t != "grpc" {
		return o, fmt.Errorf("--plugin-transport %q: want shm or grpc", t)
	}
	if err := o.CheckOverrides(); err != nil {
		return o, err
	}
	if err := o.CheckLogLevel(); err != nil {
		return o, err
	}
	return o, nil
}

func pluginCommand() *cli.Command {
	flags := pluginFlags()
	return &cli.Command{
		Name:  "plugin",
		Usage: "list, check and install qdisc and driver plugins",
		// Run when the word after "plugin" names no subcommand (urfave's
		// default says "No help topic" and exits 3).
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("no command \"plugin %s\" (txlab plugin --help lists them)", c.Args().First())
			}
			return cli.ShowSubcommandHelp(c)
		},
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "list the built-ins and the plugins --plugin and --plugin-dir name, with their versions",
				Flags:  flags,
				Action: pluginList,
			},
			{
				Name:      "test",
				Usage:     "run the conformance suite against a plugin (a path, or a kind in --plugin-dir, or a built-in)",
				ArgsUsage: "PATH-OR-NAME",
				Flags: append(flags,
					&cli.StringFlag{Name: "args", Usage: "tc options to init the qdisc with, e.g. \"limit 100\""},
					&cli.IntFlag{Name: "limit", Usage: fmt.Sprintf("the packet limit --args sets, to check it is respected (0: not checked; at most %d)", qdisctest.MaxLimit)},
					&cli.StringSliceFlag{Name: "class", Usage: "a classful qdisc's class, in tc class add words after \"class add\" (\"parent 1: classid 1:10 htb rate 100mbit\"), added after init; repeatable, in order (the qdisc's handle is 1:)"},
					&cli.StringSliceFlag{Name: "leaf", Usage: "a built-in qdisc on a leaf class, in tc qdisc add words after \"qdisc add\" (\"parent 1:10 netem delay 1ms duplicate 10%\"), in place of its pfifo; repeatable"},
					&cli.IntFlag{Name: "packets", Value: 3000, Usage: fmt.Sprintf("packets the accounting-identity check pushes (1 to %d)", qdisctest.MaxPkts)},
				),
				Action: pluginTest,
			},
			{
				Name:      "add",
				Usage:     "copy a plugin into a plugin directory and record its checksum",
				ArgsUsage: "PATH",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "dir", EnvVars: []string{plugin.EnvDir}, Usage: "the plugin directory (required)"}},
				Action: func(c *cli.Context) error {
					args, err := positionalArgs(c)
					if err != nil {
						return err
					}
					if len(args) != 1 {
						return errors.New("plugin add: want one PATH")
					}
					if c.String("dir") == "" {
						return errors.New("plugin add: --dir (or " + plugin.EnvDir + ") names the plugin directory")
					}
					dst, err := plugin.Add(c.String("dir"), args[0], plugin.Options{Log: c.App.ErrWriter})
					if err != nil {
						return fmt.Errorf("plugin add: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "added %s (checksum in %s)\n", dst, plugin.Manifest)
					return nil
				},
			},
		},
	}
}

func pluginList(c *cli.Context) error {
	o, err := pluginOptions(c)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.App.Writer, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "TYPE\tNAME\tVERSION\tSOURCE\tDESCRIPTION")
	for _, k := range qdisc.Kinds() {
		fmt.Fprintf(w, "qdisc\t%s\t%s\tbuilt-in\t%s\n", k, version, qdisc.Help(k))
	}
	for _, n := range driver.Names() {
		fmt.Fprintf(w, "driver\t%s\t%s\tbuilt-in\t%s\n", n, version, driver.Help(n))
	}
	if _, err := os.Stat(o.Dir); o.Dir != "" && errors.Is(err, fs.ErrNotExist) {
		// A directory not made yet holds no plugins: list the built-ins.
		fmt.Fprintf(c.App.ErrWriter, "txlab: plugin list: %s does not exist: no plugins from it\n", o.Dir)
		o.Dir = ""
	}
	found, err := plugin.Discover(o)
	if err != nil {
		return err
	}
	var bad error
	for _, f := range found {
		if _, err := o.Replaces(f); err != nil {
			fmt.Fprintf(w, "%s\t%s\t-\t%s\tREFUSED: %v\n", f.Type, f.Name, f.Path, err)
			bad = err
			continue
		}
		p, err := plugin.Start(f, o)
		if err != nil {
			fmt.Fprintf(w, "%s\t%s\t-\t%s\tREFUSED: %v\n", f.Type, f.Name, f.Path, err)
			bad = err
			continue
		}
		for _, k := range p.Desc.Kinds {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", k.Type, k.Name, p.Desc.Version, f.Path, k.Help)
		}
		p.Close()
	}
	w.Flush()
	if bad != nil {
		return cli.Exit("some plugins were refused", 1)
	}
	return nil
}

// locate finds what `plugin test` names: a path, a plugin in the
// directory, or a built-in (served by this binary).
func locate(o plugin.Options, arg string) (plugin.Found, string, error) {
	if strings.Contains(arg, "/") {
		if err := checkPluginFile("", arg); err != nil {
			return plugin.Found{}, "", err
		}
		f, err := plugin.Locate(arg)
		return f, f.Name, err
	}
	found, err := plugin.Discover(o)
	if err != nil {
		return plugin.Found{}, "", err
	}
	for _, f := range found {
		if f.Name == arg {
			return f, arg, nil
		}
	}
	self, err := plugin.Self()
	if err != nil {
		return self, "", err
	}
	for _, k := range qdisc.Kinds() {
		if k == arg {
			self.Type = "builtin-qdisc"
			return self, arg, nil
		}
	}
	for _, n := range driver.Names() {
		if n == arg {
			self.Type = "builtin-driver"
			return self, arg, nil
		}
	}
	return plugin.Found{}, "", fmt.Errorf("no plugin %q: not a path, not in --plugin-dir, not a built-in", arg)
}

// checkTestClass checks one --class: tc class add words naming a
// classid and the plugin's own kind (tc_ctl_tclass compares the kind).
func checkTestClass(line, kind string) error {
	cmd, err := tc.ParseClass(strings.Fields(line))
	switch {
	case err != nil:
		return err
	case cmd.ClassID == tc.Unspec:
		return errors.New(`no "classid" (want the words after "class add": parent 1: classid 1:10 KIND OPTIONS)`)
	case cmd.Kind != kind:
		return fmt.Errorf("the class kind is %q, not %q (want the words after \"class add\": parent 1: classid 1:10 %s OPTIONS)", cmd.Kind, kind, kind)
	}
	return nil
}

func pluginTest(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return errors.New("plugin test: want one PATH-OR-NAME")
	}
	o, err := pluginOptions(c)
	if err != nil {
		return err
	}
	topts := qdisctest.Options{Args: strings.Fields(c.String("args")), Classes: c.StringSlice("class"), Leaves: c.StringSlice("leaf"),
		Limit: c.Int("limit"), Pkts: c.Int("packets")}
	switch {
	case topts.Pkts < 1 || topts.Pkts > qdisctest.MaxPkts:
		return fmt.Errorf("plugin test: --packets %d: want 1 to %d", topts.Pkts, qdisctest.MaxPkts)
	case topts.Limit < 0 || topts.Limit > qdisctest.MaxLimit:
		return fmt.Errorf("plugin test: --limit %d: want 0 (not checked) to %d", topts.Limit, qdisctest.MaxLimit)
	}
	f, name, err := locate(o, args[0])
	if err != nil {
		return fmt.Errorf("plugin test: %w", err)
	}
	isQdisc := f.Type == "qdisc" || f.Type == "builtin-qdisc"
	for _, line := range topts.Classes {
		if err := checkTestClass(line, name); err != nil {
			return fmt.Errorf("plugin test: --class %q: %w", line, err)
		}
	}
	if strings.HasPrefix(f.Type, "builtin") {
		f.Type = "builtin"
	}
	p, err := plugin.Start(f, o)
	if err != nil {
		return fmt.Errorf("plugin test: %w", err)
	}
	defer func() { p.Close() }() // p is replaced when a check kills the plugin
	out := c.App.Writer
	fmt.Fprintf(out, "plugin %s %s (%s), version %s\n", map[bool]string{true: "qdisc", false: "driver"}[isQdisc], name, f.Path, p.Desc.Version)
	if !isQdisc {
		return driverSmoke(c, o, f, name)
	}
	// Each check gets a fresh instance, and a fresh process if the last
	// check killed the plugin, so one failure does not hide the others.
	factory := func() qdisc.Qdisc {
		if p.Err() != nil {
			p.Close()
			np, err := plugin.Start(f, o)
			if err != nil {
				return brokenQdisc{err}
			}
			p = np
		}
		q, err := p.NewQdisc(name)
		if err != nil {
			return brokenQdisc{err}
		}
		return q
	}
	results := qdisctest.Run(factory, topts)
	byCheck := map[string]qdisctest.Result{}
	for _, r := range results {
		byCheck[r.Check] = r
	}
	checks := qdisctest.Checks()
	if r, ok := byCheck["init"]; ok {
		fmt.Fprintf(out, "  FAIL  init: %v\n", r.Err)
		fmt.Fprint(c.App.ErrWriter, plugin.StackOf(r.Err))
		what := fmt.Sprintf("%q", c.String("args"))
		if cl := c.StringSlice("class"); len(cl) > 0 {
			what += fmt.Sprintf(" and classes %q", cl)
		}
		if l := c.StringSlice("leaf"); len(l) > 0 {
			what += fmt.Sprintf(" and leaves %q", l)
		}
		return cli.Exit(fmt.Sprintf("plugin test: %s does not init with %s: %s", name, what, firstLine(r.Err)), 1)
	}
	var failed []string
	notRun := 0
	skipped := topts.Skipped()
	for _, ch := range checks {
		r, ok := byCheck[ch]
		switch {
		case ok && r.Blocked:
			fmt.Fprintf(out, "  --    %s: not run to its end: %v\n", ch, r.Err)
			notRun++
		case ok:
			fmt.Fprintf(out, "  FAIL  %s: %v\n", ch, r.Err)
			fmt.Fprint(c.App.ErrWriter, plugin.StackOf(r.Err))
			failed = append(failed, ch)
		case skipped[ch] != "":
			fmt.Fprintf(out, "  skip  %s: %s\n", ch, skipped[ch])
		default:
			fmt.Fprintf(out, "  ok    %s\n", ch)
		}
	}
	if len(failed) > 0 {
		return cli.Exit(fmt.Sprintf("plugin test: %s failed %d of %d checks (%s; %d not run): %s: %s", name, len(failed), len(checks),
			strings.Join(failed, ", "), notRun, failed[0], firstLine(byCheck[failed[0]].Err)), 1)
	}
	fmt.Fprintf(out, "PASS: %d checks (%d skipped)\n", len(checks)-len(skipped), len(skipped))
	return nil
}

// firstLine is err's message up to its first line break: the error
// line is one line.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// brokenQdisc stands in for an instance the plugin would not make, so
// every check reports why.
type brokenQdisc struct{ err error }

func (b brokenQdisc) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{}, b.err
}
func (b brokenQdisc) Enqueue(qdisc.Ctx, []skb.Packet, []qdisc.Code)                        {}
func (b brokenQdisc) Dequeue(_ qdisc.Ctx, _ qdisc.DequeueReq, o []skb.Packet) []skb.Packet { return o }
func (b brokenQdisc) Stats() qdisc.Stats                                                   { return qdisc.Stats{} }
func (b brokenQdisc) Dump() string                                                         { return "" }

// driverSmoke runs the driver out of process under two workloads and
// checks packets get through and the accounting balances.
func driverSmoke(c *cli.Context, o plugin.Options, f plugin.Found, name string) error {
	out := c.App.Writer
	if f.Type == "builtin" {
		o.Isolate = true
	} else {
		o.Paths = []string{f.Path}
	}
	fails, first := 0, ""
	fail := func(check, why string) {
		fmt.Fprintf(out, "  FAIL  %s: %s\n", check, why)
		if fails++; fails == 1 {
			first = check + ": " + why
		}
	}
	for _, w := range []workload.Spec{
		{Kind: workload.UDPStream, Senders: 4, PacketSize: 120},
		{Kind: workload.UDPRate, Senders: 4, Flows: 16, PacketSize: 64, Rate: 5e6},
	} {
		s := run.Default()
		s.Sockets, s.Cores, s.Threads, s.Queues = 1, 4, 1, 2
		s.Driver, s.Qdisc, s.Workload, s.Plugins = name, "", w, o
		s.Duration, s.Warmup = 2*sim.Millisecond, 500*sim.Microsecond
		start := time.Now()
		rep, err := run.Run(s, nil)
		check := fmt.Sprintf("%s through the driver", w.Kind)
		switch {
		case err != nil:
			fail(check, firstLine(err))
		case rep.TxPackets == 0:
			fail(check, "nothing transmitted")
		default:
			fmt.Fprintf(out, "  ok    %s: %d packets, accounting balanced (%v)\n", check, rep.TxPackets, time.Since(start).Round(time.Millisecond))
		}
	}
	if fails > 0 {
		return cli.Exit(fmt.Sprintf("plugin test: %s failed %d of 2 checks: %s", name, fails, first), 1)
	}
	fmt.Fprintln(out, "PASS: 2 checks")
	return nil
}
