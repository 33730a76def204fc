package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/plot"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sweep"
	"github.com/txlab/txlab/internal/regfile"
)

// maxReportFile bounds the report `txlab plot` and `txlab fidelity`
// read (a comparison of many variants with long series is a few MB).
const maxReportFile = 256 << 20

// readReportFile reads a saved report, refusing before it reads what
// cannot be one: anything but a regular file (a FIFO would block the
// open, a device never ends) and a file over maxReportFile. The read is
// capped too, since a file may grow after the Stat.
func readReportFile(path string) ([]byte, error) {
	f, err := regfile.Open(path, func(st fs.FileInfo) error { return regularReport(path, st) })
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path)
}

// regularReport refuses a file that is not a regular one of at most
// maxReportFile bytes, naming what it is.
func regularReport(path string, st fs.FileInfo) error {
	m := st.Mode()
	switch {
	case m.IsDir():
		return fmt.Errorf("%s: a directory, not a report", path)
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%s: a named pipe, not a report (reports are regular files)", path)
	case m&fs.ModeDevice != 0:
		return fmt.Errorf("%s: a device, not a report (reports are regular files)", path)
	case !m.IsRegular():
		return fmt.Errorf("%s: not a regular file, not a report", path)
	case st.Size() > maxReportFile:
		return fmt.Errorf("%s: %d bytes, more than %d: not a report", path, st.Size(), maxReportFile)
	}
	return nil
}

// readCapped reads r whole, refusing more than maxReportFile bytes.
func readCapped(r io.Reader, name string) ([]byte, error) {
	b, over, err := regfile.ReadAll(r, maxReportFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if over {
		return nil, fmt.Errorf("%s: more than %d bytes, not a report", name, maxReportFile)
	}
	return b, nil
}

// plotOptionFlags are the flags of what to draw, for run --plot, sweep
// --plot and plot; kinds are the kinds the command draws.
func plotOptionFlags(force string, kinds [][2]string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "plot-format", Value: "svg", Usage: "svg or png, for a directory (a FILE.svg or FILE.png says its own)"},
		&cli.StringFlag{Name: "plot-kinds", Usage: "draw only these kinds, comma-separated (txlab plot --list-kinds): " + strings.Join(kindNames(kinds), ",")},
		&cli.BoolFlag{Name: force, Usage: "replace plot files that exist and differ (by default they are kept and it is an error)"},
	}
}

// plotFlags are run's and sweep's: --plot and the options.
func plotFlags(what string, kinds [][2]string) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "plot", Usage: "after the " + what + ", draw its figures into `DIR` (made if missing; its parent must exist), or into FILE.svg / FILE.png when one kind is drawn"},
	}, plotOptionFlags("plot-force", kinds)...)
}

func kindNames(kinds [][2]string) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k[0])
	}
	return out
}

// anyKind accepts a run's kinds and a sweep's: `txlab plot` learns which
// it draws only when it has read the report.
func anyKind(names []string) error {
	if plot.CheckKinds(names) == nil || plot.CheckSweepKinds(names) == nil {
		return nil
	}
	return fmt.Errorf("no plot kind among %s (a run's: %s; a sweep's: %s)", strings.Join(names, ","),
		strings.Join(kindNames(plot.Kinds()), ", "), strings.Join(kindNames(plot.SweepKinds()), ", "))
}

// plotPlan is what run --plot will draw.
type plotPlan struct {
	target, format, script string
	kinds                  []string
	force                  bool
}

// plotConfig reads the plot flags (force is the name of the flag that
// replaces files; check refuses kinds the command cannot draw) and checks
// the target before anything runs.
func plotConfig(c *cli.Context, target, force string, check func([]string) error) (*plotPlan, error) {
	if target == "" {
		return nil, nil
	}
	p := &plotPlan{target: target, format: c.String("plot-format"), force: c.Bool(force)}
	if ff := plot.FileFormat(target); ff != "" {
		if c.IsSet("plot-format") && p.format != ff {
			return nil, fmt.Errorf("--plot-format %s: %s is a .%s file", p.format, target, ff)
		}
		p.format = ff
	} else if p.format != "svg" && p.format != "png" {
		return nil, fmt.Errorf("--plot-format %q: want svg or png", p.format)
	}
	if s := c.String("plot-kinds"); s != "" {
		p.kinds = strings.Split(s, ",")
		if err := check(p.kinds); err != nil {
			return nil, fmt.Errorf("--plot-kinds: %w", err)
		}
	}
	if err := plot.CheckTarget(target); err != nil {
		return nil, err
	}
	return p, nil
}

// runPlotConfig is run's and sweep's: --plot, or an error for a plot
// option without it.
func runPlotConfig(c *cli.Context, check func([]string) error) (*plotPlan, error) {
	if c.String("plot") == "" {
		for _, f := range []string{"plot-format", "plot-kinds", "plot-force"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s: give --plot DIR too", f)
			}
		}
		return nil, nil
	}
	return plotConfig(c, c.String("plot"), "plot-force", check)
}

// draw writes the figures of runs and says where on w.
func (p *plotPlan) draw(w io.Writer, runs []plot.Run) error {
	figs, _, err := plot.Figures(runs, plot.Options{Script: p.script, Kinds: p.kinds})
	if err != nil {
		return err
	}
	if len(figs) == 0 && len(p.kinds) > 0 {
		return fmt.Errorf("plot: the report has no data for %s", strings.Join(p.kinds, ", "))
	}
	if len(figs) == 0 {
		return errors.New("plot: the report has no series and no histogram to draw")
	}
	return p.save(w, figs)
}

// drawSweep writes a sweep's figures and says where on w.
func (p *plotPlan) drawSweep(w io.Writer, r *sweep.Report) error {
	figs, err := plot.SweepFigures(r, plot.Options{Script: p.script, Kinds: p.kinds})
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return p.save(w, figs)
}

func (p *plotPlan) save(w io.Writer, figs []*plot.Figure) error {
	wrote, err := plot.Save(p.target, figs, p.format, p.force)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if len(wrote) == 1 {
		fmt.Fprintf(w, "txlab: plot: wrote %s\n", wrote[0])
	} else {
		fmt.Fprintf(w, "txlab: plot: wrote %d figures to %s\n", len(wrote), p.target)
	}
	return nil
}

// writePlots draws a run's reports (run --plot); a run that failed
// leaves no complete report and no plot.
func writePlots(c *cli.Context, p *plotPlan, reps []*report.Report) error {
	if p == nil {
		return nil
	}
	runs, err := plot.FromReports(reps)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return p.draw(c.App.ErrWriter, runs)
}

// scriptLabel is how titles name a script: as readScript names it.
func scriptLabel(arg string) string {
	if arg == "" {
		return ""
	}
	if name, _, err := readScript(arg); err == nil {
		return name
	}
	return arg
}

func plotCommand() *cli.Command {
	return &cli.Command{
		Name:      "plot",
		Usage:     "draw a JSON report's figures (txlab run --format json -o REPORT.json, or a sweep's sweep.json); - reads stdin",
		ArgsUsage: "REPORT.json",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the figures into `DIR` (made if missing; its parent must exist), or FILE.svg / FILE.png for one kind"},
			&cli.StringFlag{Name: "script", Usage: "name the run in titles (default: the report's script, else its profile)"},
			&cli.BoolFlag{Name: "list-kinds", Usage: "list the figure kinds and exit"},
		}, plotOptionFlags("force", append(plot.Kinds(), plot.SweepKinds()...))...),
		Action: plotAction,
	}
}

func plotAction(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if c.Bool("list-kinds") {
		for _, k := range plot.Kinds() {
			fmt.Fprintf(c.App.Writer, "%-16s %s\n", k[0], k[1])
		}
		fmt.Fprintln(c.App.Writer, "\na sweep's report (sweep.json):")
		for _, k := range plot.SweepKinds() {
			fmt.Fprintf(c.App.Writer, "%-16s %s\n", k[0], k[1])
		}
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("plot: want one REPORT.json, got %d arguments", len(args))
	}
	if c.String("output") == "" {
		return errors.New("plot: give -o DIR (or -o FILE.svg / FILE.png)")
	}
	p, err := plotConfig(c, c.String("output"), "force", anyKind)
	if err != nil {
		return err
	}
	if args[0] != "-" && plot.FileFormat(p.target) != "" {
		if err := checkOutputs([]namedFile{{flag: "the report", path: args[0]}}, []namedFile{{flag: "-o", path: p.target}}); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	p.script = c.String("script")
	runs, sw, err := readReport(c, args[0])
	switch {
	case err != nil:
		return err
	case sw != nil:
		if err := plot.CheckSweepKinds(p.kinds); err != nil {
			return fmt.Errorf("--plot-kinds: %s is a sweep's report: %w", args[0], err)
		}
		return p.drawSweep(c.App.Writer, sw)
	}
	if err := plot.CheckKinds(p.kinds); err != nil {
		return fmt.Errorf("--plot-kinds: %s is a run's report: %w", args[0], err)
	}
	return p.draw(c.App.Writer, runs)
}

// readReport reads and decodes a JSON report file ("-": stdin): a run's
// (or a comparison's) runs, or a sweep's merged report.
func readReport(c *cli.Context, path string) ([]plot.Run, *sweep.Report, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = readCapped(c.App.Reader, "stdin")
	} else {
		b, err = readReportFile(path)
	}
	if err != nil {
		return nil, nil, err
	}
	name := filepath.Clean(path)
	if path == "-" {
		name = "stdin"
	}
	if plot.IsSweep(b) {
		sw, err := plot.DecodeSweep(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, sw, nil
	}
	runs, err := plot.Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return runs, nil, nil
}
