package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/plot"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/trace"
)

// runFlags are the flags of a run: the knobs (run.Knobs) and what to do
// with the run.
func runFlags() []cli.Flag {
	return append(knobFlags(),
		&cli.StringSliceFlag{Name: "set", Usage: "override a toggle or cost: `name=value` (txlab list shows them)"},
		&cli.GenericFlag{Name: "compare", Value: &compareList{}, Usage: "run variants side by side: `key=v1,v2,...` (key: profile or any --set name); repeat it for every combination (the cartesian product), also of a script's variants"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to FILE (replaced only by a complete report)"},
		&cli.BoolFlag{Name: "no-progress", Usage: "never show the progress bar"},
		jobsFlag(),
		tcFileFlag(),
		flentFlag(),
		&cli.BoolFlag{Name: "tc-show", Usage: "after the report, print tc -s -d qdisc show, tc -s -d class show and tc filter show of eth0 (on stderr when a JSON report goes to stdout)"},
	)
}

// tcFileFlag is --tc-file, for run and sweep.
func tcFileFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "tc-file", Usage: "run the tc commands of `FILE` (as tc -batch reads it: qdisc, class and filter add/change/replace/del) on eth0 after its root qdisc is made (with --bond, on the device each line names: dev bond0, dev eth1); repeatable, in order"}
}

// maxTCFile bounds a --tc-file (tc's own batch files are small).
const maxTCFile = 1 << 20

// tcFiles reads the --tc-file files.
func tcFiles(c *cli.Context) ([]run.TCBatch, error) {
	var out []run.TCBatch
	for _, path := range c.StringSlice("tc-file") {
		b, err := readInputFile("--tc-file", path, maxTCFile)
		if err != nil {
			return nil, err
		}
		out = append(out, run.TCBatch{Name: path, Text: string(b)})
	}
	return out, nil
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run an experiment configured from flags, or from a Tengo script (flags given override the script)",
		ArgsUsage: "[SCRIPT.tengo]",
		Flags:     append(append(append(append(append(runFlags(), scriptFlags()...), traceFlags()...), pcapFlags()...), pluginFlags()...), plotFlags("run", plot.Kinds())...),
		Action:    runAction,
	}
}

// compareList is --compare: each one given, in order (a StringSlice
// flag would split the values at their commas).
type compareList []string

func (l *compareList) Set(v string) error { *l = append(*l, v); return nil }
func (l *compareList) String() string     { return strings.Join(*l, " ") }

// compares is the --compare values given.
func compares(c *cli.Context) []string {
	if l, ok := c.Generic("compare").(*compareList); ok {
		return *l
	}
	return nil
}

// variants expands each --compare key over specs: every spec once per
// value, so that several keys give their cartesian product. A variant's
// name is its values in order ("6.18 fast_path=on"), after the name of
// the spec it came from (a script's variant).
func variants(specs []run.Spec, cmps []string) ([]run.Spec, error) {
	seen := map[string]bool{}
	for _, cmp := range cmps {
		key, vals, ok := strings.Cut(cmp, "=")
		if !ok || vals == "" || key == "" {
			return nil, fmt.Errorf("--compare %q: want key=v1,v2", cmp)
		}
		if seen[key] {
			return nil, fmt.Errorf("--compare %s: the key is given twice (give its values in one --compare %s=v1,v2)", key, key)
		}
		seen[key] = true
		values := strings.Split(vals, ",")
		given := map[string]bool{}
		for _, v := range values {
			if given[v] {
				return nil, fmt.Errorf("--compare %s: the value %q is given twice", key, v)
			}
			given[v] = true
		}
		if n := len(specs) * len(values); n > run.MaxVariants { // a product of --compare keys grows fast
			return nil, fmt.Errorf("--compare %s: %d variants, at most %d (txlab sweep runs grids)", key, n, run.MaxVariants)
		}
		var out []run.Spec
		for _, base := range specs {
			for _, v := range values {
				s := base
				label := key + "=" + v
				if key == "profile" {
					s.Profile = v
					label = v
				} else {
					s.Set = append(append([]string(nil), base.Set...), key+"="+v)
				}
				s.Name = strings.TrimSpace(base.Name + " " + label)
				out = append(out, s)
			}
		}
		specs = out
	}
	return specs, nil
}

// runSpecs builds the specs a run command line asks for: a script's (with
// the flags given applied to each) or run.Default() with the flags, then
// --compare, then the plugin options.
func runSpecs(c *cli.Context, script string) ([]run.Spec, error) {
	var specs []run.Spec
	if script != "" {
		plan, err := loadPlan(c, script)
		if err != nil {
			return nil, err
		}
		specs = plan.Specs
		for i := range specs {
			if err := applyFlags(c, &specs[i]); err != nil {
				return nil, err
			}
		}
		if specs, err = variants(specs, compares(c)); err != nil {
			return nil, err
		}
	} else {
		// The script flags mean nothing without a script: one given is a
		// mistake (a forgotten path), not a no-op.
		for _, f := range scriptFlags() {
			if name := f.Names()[0]; c.IsSet(name) {
				return nil, fmt.Errorf("--%s: it is a script's flag, and no SCRIPT.tengo was given", name)
			}
		}
		base := run.Default()
		if err := applyFlags(c, &base); err != nil {
			return nil, err
		}
		var err error
		if specs, err = variants([]run.Spec{base}, compares(c)); err != nil {
			return nil, err
		}
	}
	if err := run.CheckGiven(specs); err != nil {
		return nil, err
	}
	po, err := pluginOptions(c)
	if err != nil {
		return nil, err
	}
	tcs, err := tcFiles(c)
	if err != nil {
		return nil, err
	}
	for i := range specs {
		specs[i].Plugins = po
		specs[i].TC = append(append([]run.TCBatch(nil), specs[i].TC...), tcs...)
	}
	return specs, nil
}

// checkSpecs refuses a configuration before anything is written: every
// spec's values (run.Spec.Validate), then its host built once and
// dropped (run.Check), so a run never fails for its configuration after
// another has run.
func checkSpecs(specs []run.Spec) error {
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			return labelled(s, len(specs), err)
		}
	}
	for _, s := range specs {
		if err := run.Check(s); err != nil {
			return labelled(s, len(specs), err)
		}
	}
	return nil
}

func labelled(s run.Spec, n int, err error) error {
	if n > 1 || s.Name != "" {
		return fmt.Errorf("%s: %w", variantLabel(s), err)
	}
	return err
}

func runAction(c *cli.Context) error {
	loadStart := time.Now()
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return fmt.Errorf("run: want at most one SCRIPT.tengo, got %d arguments", len(args))
	}
	if err := run.CheckJobs(c.Int("jobs")); err != nil {
		return err
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return fmt.Errorf("--format %q: want text or json", format)
	}
	script := ""
	if len(args) == 1 {
		script = args[0]
	}
	tcfg, err := traceConfig(c)
	if err != nil {
		return err
	}
	mcfg, err := metricsConfig(c)
	if err != nil {
		return err
	}
	specs, err := runSpecs(c, script)
	if err != nil {
		return err
	}
	pplan, err := pcapConfig(c, specs)
	if err != nil {
		return err
	}
	plots, err := runPlotConfig(c, plot.CheckKinds)
	if err != nil {
		return err
	}
	fplan, err := flentConfig(c, specs, time.Now())
	if err != nil {
		return err
	}
	if err := checkSpecs(specs); err != nil {
		return err
	}
	if err := checkOutputs(runFiles(c, script, tcfg, mcfg, pplan, fplan, plots)); err != nil {
		return err
	}
	// The configuration is valid: from here on files are written, and a
	// signal stops the run rather than the process (signals.go). Every
	// file goes through the stage: none replaces its name before the
	// command knows how it ended.
	watching.Store(true)
	defer watching.Store(false)
	g := &stage{}
	var caps *captures
	var mout, rout *outFile
	var tr *runTrace
	if path := c.String("output"); path != "" {
		// Made now, as the others are: a name that cannot take the
		// report stops the command before the run, not after it.
		if rout, err = g.create(path); err != nil {
			err = fmt.Errorf("-o: %w", err)
		}
	}
	if err == nil {
		err = fplan.open(g)
	}
	if err == nil {
		caps, err = pplan.open(specs, g)
	}
	if err == nil {
		mout, err = openMetrics(mcfg, g)
	}
	if err == nil {
		tr, err = startTrace(c, tcfg, script, loadStart, g)
	}
	if err != nil {
		_, _ = g.finish(stageAbort, c.App.ErrWriter)
		return err
	}
	describeTrace(tr.Run, specs)
	jobs := c.Int("jobs")
	if tr.Run != nil {
		jobs = 1 // span ids are handed out in order: one variant at a time
	}
	bar := newProgress(c, "variants", specDurations(specs))
	logs := newOrderedLogs(c.App.ErrWriter, len(specs), jobs)
	reps, errs := run.RunAll(specs, jobs, func(i int) run.Options {
		return run.Options{Progress: bar.run(i), Trace: tr.Run, Stop: interrupted, Log: logs.writer(i), Observe: caps.observe(i)}
	}, func(i int, _ *report.Report, _ error) {
		logs.end(i)
		bar.runDone()
	})
	bar.finish()
	// What went on the wire is kept whatever became of the run.
	pcapErr := caps.finish(c)
	var firstErr error
	for i, err := range errs {
		if errors.Is(err, run.ErrInterrupted) {
			// Keep what was traced; a partial report replaces nothing.
			fplan.abort()
			err = joinErrs(err, pcapErr)
			return endStage(c, g, stageNewOnly, joinErrs(err, tr.finish(c, reps, err)))
		}
		if err != nil && firstErr == nil {
			firstErr = labelled(specs[i], len(specs), err)
		}
	}
	if script != "" {
		name := scriptLabel(script)
		for _, r := range reps {
			if r != nil {
				r.Script = name
			}
		}
	}
	if firstErr != nil {
		// A failed run's partial report, trace and capture say how it
		// failed (the accounting balances in it too); they go only
		// where no file was.
		fplan.abort()
		err = joinErrs(firstErr, pcapErr)
		if simulated(reps) {
			err = joinErrs(err, writeReports(c, format, reps, rout))
		}
		return endStage(c, g, stageNewOnly, joinErrs(err, tr.finish(c, reps, err)))
	}
	err = joinErrs(pcapErr, fplan.finish(c, specs, reps))
	if err == nil {
		err = exportMetrics(c, mcfg, tr.Run, loadStart, reps, mout)
	}
	if err == nil {
		err = writeReports(c, format, reps, rout)
	}
	if err == nil && c.Bool("tc-show") {
		err = writeTCShow(c, format, reps)
	}
	err = joinErrs(err, tr.finish(c, reps, err))
	if err == nil {
		// The figures are the one output not staged: drawn last, once
		// every staged file was written whole.
		err = writePlots(c, plots, reps)
	}
	if err != nil {
		return endStage(c, g, stageAbort, err)
	}
	return endStage(c, g, stageCommit, nil)
}

// runFiles are the files a run reads (the script, --tc-file) and the
// ones it writes, each with its flag, for checkOutputs.
func runFiles(c *cli.Context, script string, tcfg trace.Config, mcfg trace.MetricsConfig, pplan *pcapPlan, fplan *flentPlan, plots *plotPlan) (in, out []namedFile) {
	in = inputFiles(c, script)
	add := func(flag string, paths ...string) {
		for _, p := range paths {
			if p != "" {
				out = append(out, namedFile{flag: flag, path: p})
			}
		}
	}
	add("-o", c.String("output"))
	add("--trace-out", tcfg.File)
	add("--metrics-out", mcfg.File)
	if pplan != nil {
		add("--pcap", pplan.paths...)
	}
	if fplan != nil {
		add("--flent", fplan.paths...)
	}
	if plots != nil && plot.FileFormat(plots.target) != "" {
		add("--plot", plots.target)
	}
	return in, out
}

// inputFiles are the files a run or sweep reads by name: the script,
// the --tc-file files, the --plugin binaries and the --plugin-dir.
func inputFiles(c *cli.Context, script string) (in []namedFile) {
	if script != "" {
		in = append(in, namedFile{flag: "the script", path: script})
	}
	for _, f := range c.StringSlice("tc-file") {
		in = append(in, namedFile{flag: "--tc-file " + f, path: f})
	}
	for _, f := range c.StringSlice("plugin") {
		in = append(in, namedFile{flag: "--plugin " + f, path: f})
	}
	if d := c.String("plugin-dir"); d != "" {
		in = append(in, namedFile{flag: "--plugin-dir", path: d, dir: true})
	}
	return in
}

// endStage ends the command's files as mode says and adds to err what
// became of them: a rename that failed, or the names a failed run left
// as they were.
func endStage(c *cli.Context, g *stage, mode int, err error) error {
	kept, ferr := g.finish(mode, c.App.ErrWriter)
	err = joinErrs(err, ferr)
	if len(kept) > 0 && err != nil {
		was := "it was"
		if len(kept) > 1 {
			was = "they were"
		}
		err = fmt.Errorf("%w (%s left as %s: a failed or stopped run writes new files only)", err, strings.Join(kept, ", "), was)
	}
	return err
}

// simulated reports whether any run got past its set-up: a run that
// failed before its first event (a --pcap-dev the host lacks) has no
// report worth a file.
func simulated(reps []*report.Report) bool {
	for _, r := range reps {
		if r != nil && r.OfferedPackets+r.TxPackets > 0 {
			return true
		}
	}
	return false
}

// writeTCShow prints each variant's tc show output after the report: on
// stdout, or on stderr when a JSON report went to stdout.
func writeTCShow(c *cli.Context, format string, reps []*report.Report) error {
	var buf bytes.Buffer
	for _, r := range reps {
		if len(reps) > 1 {
			fmt.Fprintf(&buf, "== variant %s ==\n", r.Name)
		}
		if err := report.WriteTCShow(&buf, r); err != nil {
			return err
		}
	}
	w := c.App.Writer
	if format == "json" && c.String("output") == "" {
		w = c.App.ErrWriter
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing the tc show: %w", err)
	}
	return nil
}

func variantLabel(s run.Spec) string {
	if s.Name != "" {
		return "variant " + s.Name
	}
	return "run"
}

// writeReports renders the reports and writes them to o (-o, made in the
// stage before the run) or, without one, stdout; a failed write is the
// error.
func writeReports(c *cli.Context, format string, reps []*report.Report, o *outFile) error {
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
	if o != nil {
		_, _ = o.Write(buf.Bytes())
		return o.Commit()
	}
	if _, err := c.App.Writer.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
