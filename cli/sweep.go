package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/plot"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sweep"
)

// Executors of a sweep.
const (
	execLocal = "local"
	execSlurm = "slurm"
)

// sweepOutFlags say where the merged report goes.
func sweepOutFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "format", Value: "text", Usage: "the merged report: text (a table) or json"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the merged report to FILE (replaced only by a complete report)"},
		&cli.BoolFlag{Name: "no-progress", Usage: "never show the progress bar"},
	}, plotFlags("sweep", plot.SweepKinds())...)
}

// slurmFlags are how a sweep's points are submitted and waited for.
func slurmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "no-wait", Usage: "slurm: return once the job array is submitted (merge later with txlab sweep collect DIR)"},
		&cli.IntFlag{Name: "array-limit", Usage: "slurm: at most N array tasks at once (sbatch --array=...%N; 0: all)"},
		listFlag("sbatch-arg", "slurm: an argument for sbatch, e.g. --sbatch-arg=--partition=short; repeatable"),
		&cli.DurationFlag{Name: "poll", Value: 2 * time.Second, Usage: "slurm: how often to look at the job array while waiting"},
	}
}

func sweepCommand() *cli.Command {
	flags := append(knobFlags(),
		&cli.StringSliceFlag{Name: "set", Usage: "override a toggle or cost in every point: `name=value`"},
		tcFileFlag(),
		listFlag("grid", "a grid axis: `key=v1,v2,...` (key: a knob's flag name, profile, a --set toggle, cost.NAME or a script --param); repeatable, the points are every combination"),
		&cli.IntFlag{Name: "seeds", Value: 1, Usage: fmt.Sprintf("runs per point and variant, with seeds seed, seed+1, ...; 1..%d", sweep.MaxSeeds)},
		&cli.StringFlag{Name: "executor", Value: execLocal, Usage: "local (here, -j at once) or slurm (one job array; needs --dir)"},
		&cli.StringFlag{Name: "dir", Usage: "the sweep directory: manifest, each point's result and full reports, the merged report; a sweep run again in it resumes"},
		jobsFlag(),
	)
	flags = append(append(append(append(flags, sweepOutFlags()...), slurmFlags()...), scriptFlags()...), pluginFlags()...)
	return &cli.Command{
		Name:      "sweep",
		Usage:     "run a grid of points (every combination of --grid values), locally or on Slurm, and merge their results",
		ArgsUsage: "[SCRIPT.tengo]",
		Flags:     flags,
		Action:    sweepAction,
		Subcommands: []*cli.Command{
			{
				Name:      "task",
				Usage:     "run one point of the sweep in DIR (what each Slurm array task runs)",
				ArgsUsage: "DIR INDEX",
				Flags: []cli.Flag{&cli.IntFlag{Name: "jobs", Aliases: []string{"j"},
					Usage: "runs at once (default: $SLURM_CPUS_PER_TASK, else 1)"}},
				Action: sweepTaskAction,
			},
			{
				Name:      "collect",
				Usage:     "wait for the sweep in DIR (unless --no-wait) and merge its points' results",
				ArgsUsage: "DIR",
				Flags: append(sweepOutFlags(),
					&cli.BoolFlag{Name: "no-wait", Usage: "do not wait for queued jobs: merge now, or say which points have no result"},
					&cli.DurationFlag{Name: "poll", Value: 2 * time.Second, Usage: "how often to look at the job array while waiting"}),
				Action: sweepCollectAction,
			},
			{
				Name:      "resubmit",
				Usage:     "submit points of the sweep in DIR again (those whose task failed), then wait and merge",
				ArgsUsage: "DIR",
				Flags: append(append(sweepOutFlags(), slurmFlags()...),
					&cli.IntSliceFlag{Name: "index", Usage: "a point to run again; repeatable"}),
				Action: sweepResubmitAction,
			},
		},
	}
}

// sweepInputs reads what every point is built from: the script (its
// text) or run.Default(), the knob flags, --set, the script's options
// and the plugin options (paths made absolute: tasks run elsewhere).
func sweepInputs(c *cli.Context, scriptArg string) (sweep.Inputs, error) {
	var in sweep.Inputs
	for _, name := range removedFlagNames() {
		if c.IsSet(name) {
			return in, errors.New(removedFlags[name])
		}
	}
	so, err := scriptOptions(c) // also checks the plugin flags
	if err != nil {
		return in, err
	}
	if scriptArg != "" {
		name, src, err := readScript(scriptArg)
		if err != nil {
			return in, err
		}
		in.Script, in.Source = name, string(src)
	} else {
		for _, f := range []string{"param", "quick"} {
			if c.IsSet(f) {
				return in, fmt.Errorf("--%s is for a script, and no SCRIPT.tengo is given", f)
			}
		}
	}
	for _, k := range run.Knobs() {
		if c.IsSet(k.Flag) {
			if in.Knobs == nil {
				in.Knobs = map[string]string{}
			}
			in.Knobs[k.Flag] = c.String(k.Flag)
			s := run.Default()
			if err := k.Set(&s, in.Knobs[k.Flag]); err != nil {
				return in, fmt.Errorf("--%s: %w", k.Flag, err)
			}
		}
	}
	in.Set = c.StringSlice("set")
	if in.TC, err = tcFiles(c); err != nil {
		return in, err
	}
	in.Params, in.Quick = so.Params, so.Quick
	if c.IsSet("max-allocs") {
		in.MaxAllocs = so.MaxAllocs
	}
	if c.IsSet("script-timeout") {
		in.ScriptTimeout = so.Timeout
	}
	if c.IsSet("hook-max-allocs") {
		in.HookMaxAllocs = so.HookMaxAllocs
	}
	if c.IsSet("hook-timeout") {
		in.HookTimeout = so.HookTimeout
	}
	in.Plugins = sweep.PluginInputsOf(so.Plugins)
	for i, p := range in.Plugins.Paths {
		if in.Plugins.Paths[i], err = filepath.Abs(p); err != nil {
			return in, err
		}
	}
	if in.Plugins.Dir != "" {
		if in.Plugins.Dir, err = filepath.Abs(in.Plugins.Dir); err != nil {
			return in, err
		}
	}
	return in, nil
}

// checkOut refuses a bad --format or --plot before anything runs.
func checkOut(c *cli.Context) error {
	if f := c.String("format"); f != "text" && f != "json" {
		return fmt.Errorf("--format %q: want text or json", f)
	}
	_, err := runPlotConfig(c, plot.CheckSweepKinds)
	return err
}

func sweepAction(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return fmt.Errorf("sweep: want at most one SCRIPT.tengo, got %d arguments", len(args))
	}
	if err := run.CheckJobs(c.Int("jobs")); err != nil {
		return err
	}
	if err := checkOut(c); err != nil {
		return err
	}
	executor, dir := c.String("executor"), c.String("dir")
	switch executor {
	case execLocal:
		for _, f := range []string{"no-wait", "array-limit", "sbatch-arg"} {
			if c.IsSet(f) {
				return fmt.Errorf("--%s is for --executor slurm", f)
			}
		}
	case execSlurm:
		if dir == "" {
			return errors.New("--executor slurm needs --dir DIR, on a filesystem the nodes share: the points, logs and results go there")
		}
		if err := sweep.LookSlurm(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--executor %q: want local or slurm", executor)
	}
	if n := c.Int("array-limit"); n < 0 {
		return fmt.Errorf("--array-limit %d is out of range: 0 (all) or more", n)
	}
	if p := c.Duration("poll"); p <= 0 || p > time.Hour {
		return fmt.Errorf("--poll %v is out of range: 1ns..1h", p)
	}
	scriptArg := ""
	if len(args) == 1 {
		scriptArg = args[0]
	}
	var outs []namedFile
	if o := c.String("output"); o != "" {
		outs = append(outs, namedFile{flag: "-o", path: o})
	}
	if p := c.String("plot"); p != "" && plot.FileFormat(p) != "" {
		outs = append(outs, namedFile{flag: "--plot", path: p})
	}
	if err := checkOutputs(inputFiles(c, scriptArg), outs); err != nil {
		return err
	}
	in, err := sweepInputs(c, scriptArg)
	if err != nil {
		return err
	}
	var grid []sweep.Axis
	for _, g := range listOf(c, "grid") {
		a, err := sweep.ParseAxis(g)
		if err != nil {
			return err
		}
		grid = append(grid, a)
	}
	m, err := sweep.New(version, in, grid, c.Int("seeds"))
	if err != nil {
		return err
	}
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return err
		}
		if _, err := sweep.CheckDir(dir, m); err != nil {
			return err
		}
		if executor == execSlurm {
			if q, err := sweep.Queued(dir); err != nil {
				return err
			} else if len(q) > 0 {
				return fmt.Errorf("job %s of the sweep in %s is still queued: wait for it with `txlab sweep collect %s`", strings.Join(q, ", "), dir, dir)
			}
		}
	}
	// Every point is built and checked before anything runs or is
	// written.
	specs, err := m.Check()
	if err != nil {
		return err
	}
	if dir != "" {
		if err := sweep.Create(dir, m); err != nil {
			return err
		}
	}
	if executor == execSlurm {
		return sweepSlurm(c, m, dir)
	}
	return sweepLocal(c, m, dir, specs)
}

// sweepLocal runs the points not done yet here, -j runs at once.
func sweepLocal(c *cli.Context, m *sweep.Manifest, dir string, specs [][]run.Spec) error {
	todo := make([]int, 0, len(m.Points))
	var have []sweep.PointResult
	if dir != "" {
		var err error
		if have, todo, err = m.Results(dir); err != nil {
			return err
		}
		if len(have) > 0 {
			fmt.Fprintf(c.App.ErrWriter, "txlab: sweep: %d of %d points done already in %s; running the other %d\n", len(have), len(m.Points), dir, len(todo))
		}
	} else {
		for _, p := range m.Points {
			todo = append(todo, p.Index)
		}
	}
	jobs := m.Jobs(todo, specs)
	runSpecs := make([]run.Spec, len(jobs))
	for i, j := range jobs {
		runSpecs[i] = j.Spec
	}
	bar := newProgress(c, "runs", specDurations(runSpecs))
	watching.Store(true)
	defer watching.Store(false)
	res, err := m.RunPoints(todo, specs, sweep.RunOptions{Dir: dir, Jobs: c.Int("jobs"), Stop: interrupted,
		Progress: bar.run, RunDone: bar.runDone})
	bar.finish()
	if errors.Is(err, run.ErrInterrupted) && dir != "" {
		return fmt.Errorf("%w: the points done are in %s; run the same sweep again to finish it", err, dir)
	}
	if err != nil {
		return err
	}
	return mergeAndWrite(c, m, dir, append(have, res...))
}

// mergeAndWrite merges results into the report, writes it to the sweep
// directory (if any) and to -o or stdout, and says whether a run failed.
func mergeAndWrite(c *cli.Context, m *sweep.Manifest, dir string, results []sweep.PointResult) error {
	rep := m.Merge(results)
	if dir != "" {
		if _, err := sweep.WriteMerged(dir, rep); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	var err error
	if c.String("format") == "json" {
		err = sweep.WriteJSON(&buf, rep)
	} else {
		err = sweep.WriteText(&buf, rep)
	}
	if err != nil {
		return err
	}
	// The figures draw what succeeded, failed rows or not; drawn first,
	// so that a plot refused leaves -o as it was.
	if plots, err := runPlotConfig(c, plot.CheckSweepKinds); err != nil {
		return err
	} else if plots != nil {
		plots.script = rep.Script
		if err := plots.drawSweep(c.App.ErrWriter, rep); err != nil {
			return err
		}
	}
	if path := c.String("output"); path != "" {
		err = writeOut(path, buf.Bytes())
	} else if _, werr := c.App.Writer.Write(buf.Bytes()); werr != nil {
		err = fmt.Errorf("writing the report: %w", werr)
	}
	if err != nil {
		return err
	}
	if n := rep.Failed(); n > 0 {
		return fmt.Errorf("sweep: %d of %d rows have failed runs (each row's errors are in the report)", n, len(rep.Rows))
	}
	return nil
}

// sweepSlurm submits the points not done yet as one job array, then
// waits and merges (unless --no-wait).
func sweepSlurm(c *cli.Context, m *sweep.Manifest, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := sweep.Prepare(dir, self); err != nil {
		return err
	}
	_, todo, err := m.Results(dir)
	if err != nil {
		return err
	}
	if len(todo) > 0 {
		if err := submit(c, dir, todo); err != nil {
			return err
		}
	}
	return waitAndCollect(c, m, dir, !c.Bool("no-wait"))
}

func submit(c *cli.Context, dir string, indices []int) error {
	id, err := sweep.Submit(dir, indices, c.Int("array-limit"), listOf(c, "sbatch-arg"))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "txlab: sweep: submitted job %s: %d points (--array=%s) of %s\n", id, len(indices), sweep.ArraySpec(indices), dir)
	return nil
}

// waitAndCollect waits for the sweep's jobs (if wait), then merges.
func waitAndCollect(c *cli.Context, m *sweep.Manifest, dir string, wait bool) error {
	if !wait {
		if q, err := sweep.Queued(dir); err == nil && len(q) > 0 {
			fmt.Fprintf(c.App.ErrWriter, "txlab: sweep: not waiting for job %s; merge later with `txlab sweep collect %s`\n", strings.Join(q, ", "), dir)
			return nil
		}
	} else {
		watching.Store(true)
		bar := newCountBar(c, "points done", len(m.Points))
		err := m.Wait(dir, c.Duration("poll"), interrupted, bar.set)
		bar.finish()
		watching.Store(false)
		if errors.Is(err, run.ErrInterrupted) {
			return fmt.Errorf("%w: the job array goes on; merge it later with `txlab sweep collect %s`", err, dir)
		}
		if err != nil {
			return err
		}
	}
	return collect(c, m, dir)
}

// collect merges the results in dir, or says which points have none.
func collect(c *cli.Context, m *sweep.Manifest, dir string) error {
	have, missing, err := m.Results(dir)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		q, qerr := sweep.Queued(dir)
		if qerr == nil && len(q) > 0 {
			return fmt.Errorf("%d of %d points have no result yet, and job %s is still queued: `txlab sweep collect %s` waits for it", len(missing), len(m.Points), strings.Join(q, ", "), dir)
		}
		for _, line := range m.Failures(dir, missing) {
			fmt.Fprintln(c.App.ErrWriter, "txlab: sweep:", line)
		}
		idx := make([]string, len(missing))
		for i, n := range missing {
			idx[i] = "--index " + strconv.Itoa(n)
		}
		return fmt.Errorf("%d of %d points have no result: run them again with `txlab sweep resubmit %s %s`", len(missing), len(m.Points), dir, strings.Join(idx, " "))
	}
	return mergeAndWrite(c, m, dir, have)
}

func dirArg(c *cli.Context, want int, usage string) ([]string, error) {
	args, err := positionalArgs(c)
	if err != nil {
		return nil, err
	}
	if len(args) != want {
		return nil, fmt.Errorf("want %s, got %d arguments", usage, len(args))
	}
	return args, nil
}

func sweepCollectAction(c *cli.Context) error {
	args, err := dirArg(c, 1, "DIR")
	if err != nil {
		return fmt.Errorf("sweep collect: %w", err)
	}
	if err := checkOut(c); err != nil {
		return err
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	m, err := sweep.Open(dir)
	if err != nil {
		return err
	}
	return waitAndCollect(c, m, dir, !c.Bool("no-wait"))
}

func sweepResubmitAction(c *cli.Context) error {
	args, err := dirArg(c, 1, "DIR")
	if err != nil {
		return fmt.Errorf("sweep resubmit: %w", err)
	}
	if err := checkOut(c); err != nil {
		return err
	}
	if err := sweep.LookSlurm(); err != nil {
		return err
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	m, err := sweep.Open(dir)
	if err != nil {
		return err
	}
	idx := append([]int(nil), c.IntSlice("index")...)
	if err := m.CheckResubmit(dir, idx); err != nil {
		return err
	}
	sort.Ints(idx)
	if err := submit(c, dir, idx); err != nil {
		return err
	}
	return waitAndCollect(c, m, dir, !c.Bool("no-wait"))
}

func sweepTaskAction(c *cli.Context) error {
	args, err := dirArg(c, 2, "DIR INDEX")
	if err != nil {
		return fmt.Errorf("sweep task: %w", err)
	}
	index, err := strconv.Atoi(args[1])
	if err != nil {
		return fmt.Errorf("sweep task: INDEX %q is not a whole number", args[1])
	}
	jobs := 1
	if c.IsSet("jobs") {
		jobs = c.Int("jobs")
	} else if n, err := strconv.Atoi(os.Getenv("SLURM_CPUS_PER_TASK")); err == nil {
		jobs = n
	}
	if err := run.CheckJobs(jobs); err != nil {
		return err
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	watching.Store(true)
	defer watching.Store(false)
	return sweep.Task(dir, index, jobs, interrupted)
}

// listValue is a repeatable flag whose values are kept whole: urfave's
// slice flags split at commas, and a grid's values are comma-separated.
type listValue struct{ vals []string }

func (l *listValue) Set(s string) error { l.vals = append(l.vals, s); return nil }
func (l *listValue) String() string     { return strings.Join(l.vals, " ") }

func listFlag(name, usage string) cli.Flag {
	return &cli.GenericFlag{Name: name, Value: &listValue{}, Usage: usage}
}

// listOf is a listFlag's values.
func listOf(c *cli.Context, name string) []string {
	if l, ok := c.Generic(name).(*listValue); ok {
		return l.vals
	}
	return nil
}
