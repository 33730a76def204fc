package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/fidelity"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/script"
)

// fidelityCommand runs the seeds' experiments (or reads a saved report
// of one) and prints each seed figure beside the model's.
func fidelityCommand() *cli.Command {
	return &cli.Command{
		Name: "fidelity",
		Usage: "run the seeds' experiments and print each figure of the seed beside the model's, with mechanism checks; " +
			"or read a saved report of one experiment (txlab fidelity e1 REPORT.json)",
		ArgsUsage: "[EXPERIMENT REPORT.json]   (REPORT: txlab run scripts/e1.tengo --format json -o REPORT.json)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "quick", Usage: "run the scripts scaled down (txlab.quick() is true): the whole command in well under a minute"},
			&cli.StringFlag{Name: "only", Usage: "run only these experiments, comma-separated: E1, E2, E2n, E2b, E3, E4, E5"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the result to FILE (replaced only by a complete result)"},
			&cli.StringSliceFlag{Name: "set", Usage: "a what-if: override a toggle or cost in every run, `name=value` (txlab list shows them); each experiment's header says so"},
			jobsFlag(),
			&cli.BoolFlag{Name: "no-progress", Usage: "never show the progress bar"},
		},
		Action: fidelityAction,
	}
}

func fidelityAction(c *cli.Context) error {
	// Flags may come after the experiment and report too, as for run:
	// urfave stops at the first argument and would leave them as more.
	args, err := positionalArgs(c)
	if err != nil {
		return fmt.Errorf("fidelity: %w", err)
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return fmt.Errorf("fidelity: --format %q: want text or json", format)
	}
	var results []fidelity.Result
	switch len(args) {
	case 0:
		sel := fidelity.Experiments()
		if c.IsSet("only") { // --only "" is refused, not taken as all
			if sel, err = fidelity.Select(c.String("only")); err != nil {
				return fmt.Errorf("fidelity: --only: %w", err)
			}
		}
		if results, err = runExperiments(c, sel); err != nil {
			return err
		}
	case 2:
		if c.IsSet("only") || c.IsSet("quick") || c.IsSet("set") || c.IsSet("jobs") {
			return errors.New("fidelity: --only, --quick, --set and -j are for running the experiments; a saved report is read as it is")
		}
		if o := c.String("output"); o != "" {
			if err := checkOutputs([]namedFile{{flag: "the report", path: args[1]}}, []namedFile{{flag: "-o", path: o}}); err != nil {
				return fmt.Errorf("fidelity: %w", err)
			}
		}
		r, err := readExperiment(args[0], args[1])
		if err != nil {
			return err
		}
		results = []fidelity.Result{r}
	default:
		return fmt.Errorf("fidelity: want no arguments (run the experiments) or an experiment and a report (txlab fidelity e1 REPORT.json), got %d arguments", len(args))
	}
	var buf bytes.Buffer
	switch {
	case format == "json":
		err = fidelity.WriteResultsJSON(&buf, results)
	case len(args) == 2:
		err = fidelity.WriteRows(&buf, results[0].Rows)
	default:
		err = fidelity.WriteResults(&buf, results)
	}
	if err != nil {
		return err
	}
	if path := c.String("output"); path != "" {
		return writeOut(path, buf.Bytes())
	}
	_, err = c.App.Writer.Write(buf.Bytes())
	return err
}

// readExperiment evaluates one experiment on a saved report.
func readExperiment(id, path string) (fidelity.Result, error) {
	exp, err := fidelity.Find(id)
	if err != nil {
		return fidelity.Result{}, fmt.Errorf("fidelity: %w", err)
	}
	if exp.Script == "" {
		return fidelity.Result{}, fmt.Errorf("fidelity: %s is not modelled yet: no script makes a report of it", exp.ID)
	}
	reps, err := readReports(path)
	if err != nil {
		return fidelity.Result{}, fmt.Errorf("fidelity: %w", err)
	}
	if err := exp.CheckReports(reps); err != nil {
		return fidelity.Result{}, fmt.Errorf("fidelity: %s: %w", path, err)
	}
	rows, err := exp.Evaluate(reps)
	if err != nil {
		return fidelity.Result{}, fmt.Errorf("fidelity: %s: %w", path, err)
	}
	return fidelity.Result{ID: exp.ID, Title: exp.Title, Script: exp.Script, Runs: len(reps), Rows: rows}, nil
}

// runExperiments runs each experiment's shipped script (every variant,
// for each of its seeds), -j runs at a time over all the experiments
// asked for, and evaluates each experiment's reports once they are all
// in. Every run is checked before any starts.
func runExperiments(c *cli.Context, sel []fidelity.Experiment) ([]fidelity.Result, error) {
	jobs := c.Int("jobs")
	if err := run.CheckJobs(jobs); err != nil {
		return nil, fmt.Errorf("fidelity: %w", err)
	}
	results := make([]fidelity.Result, len(sel))
	var specs []run.Spec
	first := make([]int, len(sel)+1) // experiment e's runs are specs[first[e]:first[e+1]]
	for e, exp := range sel {
		results[e] = fidelity.Result{ID: exp.ID, Title: exp.Title, Script: exp.Script, Set: c.StringSlice("set")}
		first[e] = len(specs)
		if exp.Script == "" {
			continue
		}
		s, err := experimentSpecs(c, exp)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	first[len(sel)] = len(specs)
	watching.Store(true)
	defer watching.Store(false)
	bar := newProgress(c, "runs", specDurations(specs))
	starts, walls := make([]time.Time, len(specs)), make([]time.Duration, len(specs))
	reps, errs := run.RunAll(specs, jobs, func(i int) run.Options {
		starts[i] = time.Now()
		return run.Options{Progress: bar.run(i), Stop: interrupted}
	}, func(i int, _ *report.Report, _ error) {
		walls[i] = time.Since(starts[i])
		bar.runDone()
	})
	bar.finish()
	for e, exp := range sel {
		lo, hi := first[e], first[e+1]
		for i := lo; i < hi; i++ {
			if errs[i] != nil {
				return nil, fmt.Errorf("fidelity: %s: %s (seed %d): %w", exp.ID, variantLabel(specs[i]), specs[i].Seed, errs[i])
			}
			results[e].WallS += walls[i].Seconds()
		}
		if exp.Script != "" {
			results[e].Runs = hi - lo
		}
		var runs []*report.Report // nil for an experiment without a script
		if hi > lo {
			runs = reps[lo:hi]
		}
		rows, err := exp.Evaluate(runs)
		if err != nil {
			return nil, fmt.Errorf("fidelity: %s: %w", exp.ID, err)
		}
		results[e].Rows = rows
	}
	return results, nil
}

// experimentSpecs are the runs of an experiment: its script's variants,
// once with the script's seed, or for each of seeds 1..Seeds.
func experimentSpecs(c *cli.Context, exp fidelity.Experiment) ([]run.Spec, error) {
	name, src, err := readScript(exp.Script)
	if err != nil {
		return nil, err
	}
	prog, err := script.Load(name, src, script.Options{Quick: c.Bool("quick"), Log: c.App.ErrWriter})
	if err != nil {
		return nil, err
	}
	plan, err := prog.Eval()
	if err != nil {
		return nil, err
	}
	for i := range plan.Specs {
		if err := applyFlags(c, &plan.Specs[i]); err != nil { // --set, as txlab run applies it to a script's variants
			return nil, err
		}
	}
	if err := checkSpecs(plan.Specs); err != nil {
		return nil, fmt.Errorf("fidelity: %s: %w", exp.ID, err)
	}
	if err := run.CheckGiven(plan.Specs); err != nil {
		return nil, fmt.Errorf("fidelity: %s: %w", exp.ID, err)
	}
	if exp.Seeds == 0 {
		return plan.Specs, nil
	}
	var out []run.Spec
	for seed := 1; seed <= exp.Seeds; seed++ {
		for _, s := range plan.Specs {
			s.Seed = uint64(seed)
			out = append(out, s)
		}
	}
	return out, nil
}

// readReports reads a JSON report: one report or {"variants": [...]}.
func readReports(path string) ([]*report.Report, error) {
	b, err := readReportFile(path)
	if err != nil {
		return nil, err
	}
	var list struct {
		Variants []*report.Report `json:"variants"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: not a txlab JSON report: %v", path, err)
	}
	if len(list.Variants) > 0 {
		return list.Variants, nil
	}
	var one report.Report
	if err := json.Unmarshal(b, &one); err != nil || one.Profile == "" {
		return nil, fmt.Errorf("%s: not a txlab JSON report", path)
	}
	return []*report.Report{&one}, nil
}
