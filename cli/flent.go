package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	flentdata "github.com/txlab/txlab/framework/flent"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
)

func flentFlag() cli.Flag {
	return &cli.StringFlag{Name: "flent", Usage: "write flent's data file `FILE.flent.gz` (flent -i FILE.flent.gz -p totals -o out.png plots it), one file per variant"}
}

// flentPlan is the data files a run writes: nothing without --flent.
type flentPlan struct {
	tests []*flentdata.Test
	paths []string
	outs  []*outFile
	start time.Time
}

// flentConfig checks --flent against the specs (each run a flent test
// describes, distinct file names) and opens the files, so that a path
// that cannot be written fails before the run.
func flentConfig(c *cli.Context, specs []run.Spec, start time.Time) (*flentPlan, error) {
	path := c.String("flent")
	if path == "" {
		return nil, nil
	}
	if !strings.HasSuffix(path, flentdata.Suffix) {
		return nil, fmt.Errorf("--flent %s: the name must end in %s (flent reads the data file by its suffix)", path, flentdata.Suffix)
	}
	p := &flentPlan{start: start}
	seen := map[string]string{}
	for _, s := range specs {
		t, err := flentdata.For(s.Workload)
		if err != nil {
			return nil, labelled(s, len(specs), fmt.Errorf("--flent: %w", err))
		}
		f := flentPath(path, s, len(specs))
		if other, dup := seen[f]; dup {
			return nil, fmt.Errorf("--flent: variants %q and %q would both write %s", other, s.Name, f)
		}
		seen[f] = s.Name
		p.tests, p.paths = append(p.tests, t), append(p.paths, f)
	}
	return p, nil
}

// open creates the files (each replaced only by a complete one).
func (p *flentPlan) open(g *stage) error {
	if p == nil {
		return nil
	}
	for _, path := range p.paths {
		o, err := g.create(path)
		if err != nil {
			p.abort()
			return fmt.Errorf("--flent: %w", err)
		}
		p.outs = append(p.outs, o)
	}
	return nil
}

func (p *flentPlan) abort() {
	if p == nil {
		return
	}
	for _, o := range p.outs {
		o.Abort()
	}
}

// finish writes each variant's file from its report.
func (p *flentPlan) finish(c *cli.Context, specs []run.Spec, reps []*report.Report) error {
	if p == nil {
		return nil
	}
	var first error
	for i, r := range reps {
		err := fmt.Errorf("no report")
		if r != nil {
			err = p.write(i, specs[i], r)
		}
		if err != nil {
			p.outs[i].Abort()
			if first == nil {
				first = fmt.Errorf("--flent: %s: %w", p.paths[i], err)
			}
			continue
		}
		p.outs[i].say(c.App.ErrWriter, fmt.Sprintf("txlab: flent: %s: test %s, %d points (flent -i %s -p totals -o %s)",
			p.paths[i], p.tests[i].Name, len(r.Series), p.paths[i], strings.TrimSuffix(filepath.Base(p.paths[i]), flentdata.Suffix)+".png"))
	}
	return first
}

func (p *flentPlan) write(i int, s run.Spec, r *report.Report) error {
	title := s.Name
	if title == "" {
		title = s.Profile
	}
	f, err := flentdata.FromReport(p.tests[i], r, flentdata.Options{Title: title, Time: p.start, Version: version,
		Note: fmt.Sprintf("txlab %s: simulated, profile %s, seed %d", variantLabel(s), s.Profile, s.Seed)})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := f.Write(&buf, filepath.Base(p.paths[i])); err != nil {
		return err
	}
	_, _ = p.outs[i].Write(buf.Bytes())
	return p.outs[i].Commit()
}

// flentPath is one variant's file: path for a run of one, else NAME
// before the suffix (e2.flent.gz -> e2-6.18.flent.gz).
func flentPath(path string, s run.Spec, n int) string {
	if n == 1 {
		return path
	}
	// variantPath puts the name before the extension: give it one to strip.
	v := variantPath(strings.TrimSuffix(path, flentdata.Suffix)+".x", s, n)
	return strings.TrimSuffix(v, ".x") + flentdata.Suffix
}
