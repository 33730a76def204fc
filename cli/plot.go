package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/plot"
	"github.com/txlab/txlab/framework/report"
)

// maxReportFile bounds the report `txlab plot` reads (a comparison of
// many variants with long series is a few MB).
const maxReportFile = 256 << 20

// plotOptionFlags are the flags of what to draw, for run --plot and plot.
func plotOptionFlags(force string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "plot-format", Value: "svg", Usage: "svg or png, for a directory (a FILE.svg or FILE.png says its own)"},
		&cli.StringFlag{Name: "plot-kinds", Usage: "draw only these kinds, comma-separated (txlab plot --list-kinds): " + strings.Join(kindNames(), ",")},
		&cli.BoolFlag{Name: force, Usage: "replace plot files that exist and differ (by default they are kept and it is an error)"},
	}
}

// plotFlags are run's: --plot and the options.
func plotFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "plot", Usage: "after the run, draw its figures into `DIR` (made if missing; its parent must exist), or into FILE.svg / FILE.png when one kind is drawn"},
	}, plotOptionFlags("plot-force")...)
}

func kindNames() []string {
	var out []string
	for _, k := range plot.Kinds() {
		out = append(out, k[0])
	}
	return out
}

// plotPlan is what run --plot will draw.
type plotPlan struct {
	target, format, script string
	kinds                  []string
	force                  bool
}

// plotConfig reads the plot flags (force is the name of the flag that
// replaces files) and checks the target before anything runs.
func plotConfig(c *cli.Context, target, force string) (*plotPlan, error) {
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
		if err := plot.CheckKinds(p.kinds); err != nil {
			return nil, fmt.Errorf("--plot-kinds: %w", err)
		}
	}
	if err := plot.CheckTarget(target); err != nil {
		return nil, err
	}
	return p, nil
}

// runPlotConfig is run's: --plot, or an error for a plot option without it.
func runPlotConfig(c *cli.Context) (*plotPlan, error) {
	if c.String("plot") == "" {
		for _, f := range []string{"plot-format", "plot-kinds", "plot-force"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s: give --plot DIR too", f)
			}
		}
		return nil, nil
	}
	return plotConfig(c, c.String("plot"), "plot-force")
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
	wrote, err := plot.Save(p.target, figs, p.format, p.force)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if len(wrote) == 1 {
		fmt.Fprintf(w, "plot: wrote %s\n", wrote[0])
	} else {
		fmt.Fprintf(w, "plot: wrote %d figures to %s\n", len(wrote), p.target)
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
		Usage:     "draw a JSON report's figures (txlab run --format json -o REPORT.json); - reads stdin",
		ArgsUsage: "REPORT.json",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the figures into `DIR` (made if missing; its parent must exist), or FILE.svg / FILE.png for one kind"},
			&cli.StringFlag{Name: "script", Usage: "name the run in titles (default: the report's script, else its profile)"},
			&cli.BoolFlag{Name: "list-kinds", Usage: "list the figure kinds and exit"},
		}, plotOptionFlags("force")...),
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
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("plot: want one REPORT.json, got %d arguments", len(args))
	}
	if c.String("output") == "" {
		return errors.New("plot: give -o DIR (or -o FILE.svg / FILE.png)")
	}
	p, err := plotConfig(c, c.String("output"), "force")
	if err != nil {
		return err
	}
	p.script = c.String("script")
	runs, err := readReport(c, args[0])
	if err != nil {
		return err
	}
	return p.draw(c.App.Writer, runs)
}

// readReport reads and decodes a JSON report file ("-": stdin).
func readReport(c *cli.Context, path string) ([]plot.Run, error) {
	var f io.Reader = c.App.Reader
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		if st, err := file.Stat(); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s: a directory, not a report", path)
		}
		f = file
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReportFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxReportFile {
		return nil, fmt.Errorf("%s: more than %d bytes, not a report", path, maxReportFile)
	}
	runs, err := plot.Decode(b)
	if err != nil {
		name := filepath.Clean(path)
		if path == "-" {
			name = "stdin"
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return runs, nil
}
