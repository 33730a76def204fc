package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
)

func runFlags() []cli.Flag {
	d := run.Default()
	return []cli.Flag{
		&cli.StringFlag{Name: "profile", Value: d.Profile, Usage: "kernel profile: 6.18, 6.19-rc1, net-next"},
		&cli.IntFlag{Name: "sockets", Value: d.Sockets, Usage: "CPU sockets"},
		&cli.IntFlag{Name: "cores", Value: d.Cores, Usage: "cores per socket"},
		&cli.IntFlag{Name: "smt", Value: d.Threads, Usage: "threads per core"},
		&cli.IntFlag{Name: "cpus", Usage: "total CPUs (sets cores = cpus / (sockets*smt))"},
		&cli.StringFlag{Name: "driver", Value: d.Driver, Usage: "NIC driver model: ice, veth"},
		&cli.StringFlag{Name: "driver-opts", Usage: "driver options in ethtool words, e.g. \"tx 512 tx-usecs 50\""},
		&cli.IntFlag{Name: "queues", Value: d.Queues, Usage: "TX queues"},
		&cli.StringFlag{Name: "rate", Value: "100Gbit", Usage: "link rate in tc words (e.g. 100Gbit, 25gbit, 2.5gbit; bps is bytes/s); 0 = the driver's default"},
		&cli.IntFlag{Name: "ring", Usage: "TX ring size (0 = the driver's default)"},
		&cli.StringFlag{Name: "qdisc", Value: d.Qdisc, Usage: "root qdisc in tc words, e.g. \"mq pfifo\", \"pfifo limit 100\", noqueue"},
		&cli.StringFlag{Name: "workload", Value: d.Workload.Kind, Usage: "udp_stream or udp_rate"},
		&cli.IntFlag{Name: "senders", Value: d.Workload.Senders, Usage: "sender threads"},
		&cli.StringFlag{Name: "placement", Value: "spread", Usage: "sender CPUs: spread, or a CPU list like 0-7,16"},
		&cli.IntFlag{Name: "size", Value: d.Workload.PacketSize, Usage: "UDP payload bytes (netperf -m)"},
		&cli.IntFlag{Name: "flows", Value: 16, Usage: "flows (udp_rate; udp_stream has one per sender)"},
		&cli.StringFlag{Name: "offered-rate", Value: "1M", Usage: "udp_rate total offered packets/s (e.g. 5M, 630K)"},
		&cli.DurationFlag{Name: "duration", Value: time.Duration(d.Duration), Usage: "simulated time, warmup included"},
		&cli.DurationFlag{Name: "warmup", Value: time.Duration(d.Warmup), Usage: "simulated time before measuring"},
		&cli.DurationFlag{Name: "interval", Usage: "time-series step (default duration/20)"},
		&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "run seed"},
		&cli.StringSliceFlag{Name: "set", Usage: "override a toggle or cost: name=value (see `txlab list`)"},
		&cli.StringFlag{Name: "compare", Usage: "run variants side by side: key=v1,v2,... (key: profile or any --set name)"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to FILE"},
		&cli.BoolFlag{Name: "no-progress", Usage: "never show the progress bar"},
	}
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run an experiment configured from flags, or from a Tengo script (flags set explicitly override it)",
		ArgsUsage: "[SCRIPT.tengo]",
		Flags:     append(append(append(runFlags(), scriptFlags()...), traceFlags()...), pluginFlags()...),
		Action:    runAction,
	}
}

// specFromFlags builds a run.Spec from the command line.
func specFromFlags(c *cli.Context) (run.Spec, error) {
	s := run.Default()
	s.Profile = c.String("profile")
	s.Sockets, s.Cores, s.Threads = c.Int("sockets"), c.Int("cores"), c.Int("smt")
	if n := c.Int("cpus"); n > 0 {
		per := s.Sockets * s.Threads
		if per <= 0 || n%per != 0 {
			return s, fmt.Errorf("--cpus %d is not a multiple of sockets*smt = %d", n, per)
		}
		s.Cores = n / per
	}
	s.Driver = c.String("driver")
	s.DriverArgs = strings.Fields(c.String("driver-opts"))
	s.Queues = c.Int("queues")
	rate, err := units.ParseRate(c.String("rate"))
	if err != nil {
		return s, fmt.Errorf("--rate: %w", err)
	}
	s.RateBps = rate
	s.RingSize = c.Int("ring")
	s.Qdisc = c.String("qdisc")
	s.Workload.Kind = c.String("workload")
	s.Workload.Senders = c.Int("senders")
	s.Workload.Placement = c.String("placement")
	s.Workload.PacketSize = c.Int("size")
	s.Workload.Flows = c.Int("flows")
	pps, err := units.ParseCount(c.String("offered-rate"))
	if err != nil {
		return s, fmt.Errorf("--offered-rate: %w", err)
	}
	s.Workload.Rate = pps
	s.Duration = sim.Time(c.Duration("duration"))
	s.Warmup = sim.Time(c.Duration("warmup"))
	s.Interval = sim.Time(c.Duration("interval"))
	s.Seed = c.Uint64("seed")
	s.Set = c.StringSlice("set")
	return s, nil
}

// variants expands --compare into one spec per value.
func variants(base run.Spec, compare string) ([]run.Spec, error) {
	if compare == "" {
		return []run.Spec{base}, nil
	}
	key, vals, ok := strings.Cut(compare, "=")
	if !ok || vals == "" {
		return nil, fmt.Errorf("--compare %q: want key=v1,v2", compare)
	}
	var out []run.Spec
	for _, v := range strings.Split(vals, ",") {
		s := base
		s.Name = key + "=" + v
		if key == "profile" {
			s.Profile = v
			s.Name = v
		} else {
			s.Set = append(append([]string(nil), base.Set...), key+"="+v)
		}
		out = append(out, s)
	}
	return out, nil
}

func runAction(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return fmt.Errorf("run: want at most one SCRIPT.tengo, got %d arguments", len(args))
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return fmt.Errorf("--format %q: want text or json", format)
	}
	script := ""
	if len(args) == 1 {
		script = args[0]
	}
	tr, err := startTrace(c, script)
	if err != nil {
		return err
	}
	var specs []run.Spec
	if len(args) == 1 {
		if specs, err = scriptSpecs(c, args[0]); err != nil {
			finishTrace(c, tr, nil, err)
			return err
		}
	} else {
		base, err := specFromFlags(c)
		if err == nil {
			specs, err = variants(base, c.String("compare"))
		}
		if err != nil {
			finishTrace(c, tr, nil, err)
			return err
		}
	}
	po, err := pluginOptions(c)
	if err != nil {
		finishTrace(c, tr, nil, err)
		return err
	}
	for i := range specs {
		specs[i].Plugins = po
	}
	describeTrace(tr, specs)
	var reps []*report.Report
	var firstErr error
	for i, s := range specs {
		bar := newProgress(c, s.Name, i, len(specs))
		rep, err := run.RunTraced(s, bar.update, tr)
		bar.finish()
		reps = append(reps, rep)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", variantLabel(s), err)
		}
	}
	err = writeReports(c, format, reps)
	if err == nil {
		err = firstErr
	}
	finishTrace(c, tr, reps, err)
	return err
}

func variantLabel(s run.Spec) string {
	if s.Name != "" {
		return "variant " + s.Name
	}
	return "run"
}

func writeReports(c *cli.Context, format string, reps []*report.Report) error {
	var buf bytes.Buffer
	var err error
	switch {
	case format == "json" && len(reps) == 1:
		err = report.WriteJSON(&buf, reps[0])
	case format == "json":
		err = report.WriteJSONList(&buf, reps)
	case len(reps) == 1:
		err = report.WriteText(&buf, reps[0])
	default:
		err = report.WriteCompare(&buf, reps)
	}
	if err != nil {
		return err
	}
	var w io.Writer = c.App.Writer
	if path := c.String("output"); path != "" {
		return os.WriteFile(path, buf.Bytes(), 0o644)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// progress shows a bar on stderr once a run has taken a second of wall
// time, and never when stderr is not a terminal.
type progress struct {
	enabled bool
	label   string
	start   time.Time
	bar     *progressbar.ProgressBar
}

func newProgress(c *cli.Context, name string, i, n int) *progress {
	p := &progress{start: time.Now(), label: "simulating"}
	p.enabled = !c.Bool("no-progress") && term.IsTerminal(int(os.Stderr.Fd()))
	if n > 1 {
		p.label = fmt.Sprintf("variant %d/%d %s", i+1, n, name)
	}
	return p
}

func (p *progress) update(done, total sim.Time) {
	if !p.enabled {
		return
	}
	if p.bar == nil {
		if time.Since(p.start) < time.Second {
			return
		}
		p.bar = progressbar.NewOptions64(int64(total/sim.Microsecond),
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(p.label+" (simulated µs)"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish())
	}
	_ = p.bar.Set64(int64(done / sim.Microsecond))
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
