package plot

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/txlab/txlab/framework/sweep"
)

// sweepMetric is one metric of a sweep's rows, as a figure draws it.
type sweepMetric struct {
	kind, title, unit string
	stat              func(sweep.Row) *sweep.Stat
}

var sweepMetrics = []sweepMetric{
	{"sweep-pps", "tx packets per second", "pps", func(r sweep.Row) *sweep.Stat { return r.TxPps }},
	{"sweep-bps", "tx bits per second", "bit/s", func(r sweep.Row) *sweep.Stat { return r.TxBps }},
	{"sweep-cpu", "CPU time per packet", "ns", func(r sweep.Row) *sweep.Stat { return r.CPUNsPerPacket }},
	{"sweep-drops", "packets dropped", "packets", func(r sweep.Row) *sweep.Stat { return r.DroppedPackets }},
}

// sweepOverview is the kind that stacks pps, CPU per packet and drops.
const sweepOverview = "sweep"

// SweepKinds lists the figure kinds of a sweep: name and what it shows.
func SweepKinds() [][2]string {
	out := [][2]string{{sweepOverview, "tx pps, CPU ns per packet and drops against the grid's first axis, stacked"}}
	for _, m := range sweepMetrics {
		out = append(out, [2]string{m.kind, m.title + " against the grid's first axis"})
	}
	return out
}

// CheckSweepKinds refuses a sweep kind that does not exist.
func CheckSweepKinds(names []string) error {
	var all []string
	for _, k := range SweepKinds() {
		all = append(all, k[0])
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return fmt.Errorf("no sweep plot kind %q (kinds: %s)", n, strings.Join(all, ", "))
		}
	}
	return nil
}

// IsSweep says whether a JSON document is a sweep's merged report.
func IsSweep(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	_, rows := top["rows"]
	_, grid := top["grid"]
	return rows && grid
}

// DecodeSweep reads a sweep's merged report (sweep.json).
func DecodeSweep(data []byte) (*sweep.Report, error) {
	var r sweep.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("not a sweep report: %s", jsonErr(err))
	}
	if len(r.Grid) == 0 {
		return nil, errors.New("a sweep report without a grid: nothing to plot")
	}
	return &r, nil
}

// SweepFigures draws a sweep: each metric against the grid's first axis,
// one line per combination of the other axes' values (and variant), the
// mean over seeds with a bar of ±1 sample standard deviation when there
// are several. Rows whose runs all failed are left out.
func SweepFigures(r *sweep.Report, opt Options) ([]*Figure, error) {
	if err := CheckSweepKinds(opt.Kinds); err != nil {
		return nil, err
	}
	if len(r.Grid) == 0 || len(r.Rows) == 0 {
		return nil, errors.New("the sweep has no rows to plot")
	}
	d := newSweepDrawing(r, opt.Script)
	want := func(k string) bool { return len(opt.Kinds) == 0 || slices.Contains(opt.Kinds, k) }
	var figs []*Figure
	if want(sweepOverview) {
		var ps []*panel
		for _, m := range sweepMetrics {
			if m.kind != "sweep-bps" {
				ps = append(ps, d.panel(m))
			}
		}
		figs = append(figs, d.fig(sweepOverview, "sweep", ps))
	}
	for _, m := range sweepMetrics {
		if want(m.kind) {
			figs = append(figs, d.fig(m.kind, m.title, []*panel{d.panel(m)}))
		}
	}
	return figs, nil
}

// sweepDrawing is a sweep's x axis (the first grid axis: numbers when
// every value is one, else its values in grid order) and its lines.
type sweepDrawing struct {
	r       *sweep.Report
	script  string
	xs      []float64 // per value of the first axis
	nominal bool
	lines   []string   // legend names, first seen first
	at      []rowPlace // per row of r
}

// rowPlace is where a row is drawn: its line, and its x (ok false when
// its first-axis value is not in the grid).
type rowPlace struct {
	line int
	x    float64
	ok   bool
}

func newSweepDrawing(r *sweep.Report, script string) *sweepDrawing {
	d := &sweepDrawing{r: r, script: script}
	first := r.Grid[0].Values
	for _, v := range first {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			d.nominal = true
		}
		d.xs = append(d.xs, x)
	}
	if d.nominal {
		for i := range d.xs {
			d.xs[i] = float64(i)
		}
	}
	line := map[string]int{}
	for _, row := range r.Rows {
		name := d.lineName(row)
		if _, ok := line[name]; !ok {
			line[name] = len(d.lines)
			d.lines = append(d.lines, name)
		}
		at := rowPlace{line: line[name]}
		if i := slices.Index(first, row.Values[r.Grid[0].Key]); i >= 0 {
			at.x, at.ok = d.xs[i], true
		}
		d.at = append(d.at, at)
	}
	return d
}

// lineName is what a row's line is called: the other axes' values and
// the variant ("all" when there are neither).
func (d *sweepDrawing) lineName(row sweep.Row) string {
	var parts []string
	for _, a := range d.r.Grid[1:] {
		parts = append(parts, a.Key+"="+row.Values[a.Key])
	}
	if row.Variant != "" {
		parts = append(parts, row.Variant)
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// errXYs is a line's points with their error bars.
type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

func (d *sweepDrawing) panel(m sweepMetric) *panel {
	peak := 0.0
	for _, row := range d.r.Rows {
		if s := m.stat(row); s != nil {
			peak = math.Max(peak, math.Abs(s.Mean)+s.Stddev)
		}
	}
	div, unit := 1.0, m.unit
	if m.unit != "ns" {
		div, unit = scale(peak, m.unit)
	}
	pts := make([]errXYs, len(d.lines))
	lo, hi := math.Inf(1), 0.0
	for i, row := range d.r.Rows {
		s, at := m.stat(row), d.at[i]
		if s == nil || !at.ok {
			continue
		}
		l := &pts[at.line]
		y, sd := s.Mean/div, s.Stddev/div
		l.XYs = append(l.XYs, plotter.XY{X: at.x, Y: y})
		l.YErrors = append(l.YErrors, struct{ Low, High float64 }{sd, sd})
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	// A collapse next to a baseline spans decades: a linear axis would
	// flatten all but the largest.
	logY := lo > 0 && hi/lo >= 1000
	p := newPanel(m.title, d.r.Grid[0].Key, unit) // the title names the metric
	for i, l := range pts {
		if len(l.XYs) == 0 {
			continue
		}
		p.linePoints(d.lines[i], i, false, l.XYs)
		if d.r.Seeds < 2 {
			continue
		}
		if logY { // a bar reaching 0 or below has no place on a log axis
			for k := range l.YErrors {
				l.YErrors[k].Low = math.Min(l.YErrors[k].Low, 0.9*l.XYs[k].Y)
			}
		}
		if eb, err := plotter.NewYErrorBars(l); err == nil {
			eb.LineStyle.Color = palette[i%len(palette)]
			eb.CapWidth = vg.Points(6)
			p.p.Add(eb)
		}
	}
	if d.nominal {
		p.p.NominalX(d.r.Grid[0].Values...)
	} else if len(d.xs) <= 12 {
		// A tick at each grid value: the points are where the runs were.
		var ticks gplot.ConstantTicks
		for i, x := range d.xs {
			ticks = append(ticks, gplot.Tick{Value: x, Label: d.r.Grid[0].Values[i]})
		}
		p.p.X.Tick.Marker = ticks
	}
	if logY {
		p.p.Y.Scale = gplot.LogScale{}
		p.p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
		p.p.Y.Label.Text += ", log"
		return p
	}
	p.yFrom(0)
	return p
}

// fig makes a sweep figure: its title names the script and the grid.
func (d *sweepDrawing) fig(name, title string, ps []*panel) *Figure {
	src := d.script
	if src == "" {
		src = d.r.Script
	}
	if src == "" {
		src = "flags"
	}
	var axes []string
	for _, a := range d.r.Grid {
		axes = append(axes, fmt.Sprintf("%s (%d)", a.Key, len(a.Values)))
	}
	sub := fmt.Sprintf("%s · %d points over %s", src, d.r.Points, strings.Join(axes, " × "))
	if d.r.Seeds > 1 {
		sub += fmt.Sprintf(" · mean ±sd of %d seeds", d.r.Seeds)
	}
	return newFigure(name, title+"\n"+sub, ps)
}
