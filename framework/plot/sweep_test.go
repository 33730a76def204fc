package plot

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"

	"github.com/txlab/txlab/framework/sweep"
)

// sweepOf is a merged report over axes a (first) and b, two variants,
// tx pps from f(a-index, b-index, variant); a nil stat where f < 0 (a row
// whose runs failed).
func sweepOf(a, b []string, seeds int, f func(i, j, v int) float64) *sweep.Report {
	r := &sweep.Report{Format: sweep.FormatVersion, Script: "t.tengo", Seeds: seeds,
		Grid: []sweep.Axis{{Key: "senders", Values: a}, {Key: "profile", Values: b}}, Points: len(a) * len(b)}
	for i, av := range a {
		for j, bv := range b {
			for v, name := range []string{"cake", "fq_codel"} {
				row := sweep.Row{Point: i*len(b) + j, Values: map[string]string{"senders": av, "profile": bv}, Variant: name}
				if y := f(i, j, v); y >= 0 {
					row.TxPps = &sweep.Stat{Mean: y, Stddev: y / 10, Min: y * 0.9, Max: y * 1.1}
					row.CPUNsPerPacket = &sweep.Stat{Mean: 1e9 / (y + 1)}
					row.DroppedPackets = &sweep.Stat{Mean: float64(i * 100)}
				}
				r.Rows = append(r.Rows, row)
			}
		}
	}
	return r
}

func TestSweepFigures(t *testing.T) {
	flat := func(i, j, v int) float64 { return float64(1e6 + 1e5*i - 1e4*j + 1e3*v) }
	collapse := func(i, j, v int) float64 {
		if v == 0 && j == 1 {
			return 300 // cake collapses on the second profile
		}
		return 1e6
	}
	cases := []struct {
		name      string
		a         []string
		f         func(i, j, v int) float64
		kinds     []string
		figs      []string
		lines     int  // legend entries of the first figure
		nominal   bool // the first axis is not numbers
		logPPS    bool
		wantFirst string // a label the first figure's legend has
	}{
		{"every kind", []string{"16", "64", "240"}, flat, nil,
			[]string{"sweep", "sweep-pps", "sweep-bps", "sweep-cpu", "sweep-drops"}, 4, false, false, "profile=6.18 cake"},
		{"one kind", []string{"16", "64"}, flat, []string{"sweep-cpu"}, []string{"sweep-cpu"}, 4, false, false, "profile=net-next fq_codel"},
		{"words on the first axis", []string{"mq fq", "cake"}, flat, []string{"sweep-pps"}, []string{"sweep-pps"}, 4, true, false, "profile=6.18 fq_codel"},
		{"a collapse spans decades", []string{"16", "64"}, collapse, []string{"sweep-pps"}, []string{"sweep-pps"}, 4, false, true, "profile=net-next cake"},
		{"failed rows are left out", []string{"16", "64"}, func(i, j, v int) float64 {
			if v == 1 {
				return -1
			}
			return 5e5
		}, []string{"sweep-pps"}, []string{"sweep-pps"}, 2, false, false, "profile=6.18 cake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sweepOf(c.a, []string{"6.18", "net-next"}, 3, c.f)
			figs, err := SweepFigures(r, Options{Kinds: c.kinds})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range figs {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, c.figs) {
				t.Fatalf("figures %v, want %v", names, c.figs)
			}
			f := figs[0]
			if got := f.Labels(); len(got) != c.lines || !slices.Contains(got, c.wantFirst) {
				t.Errorf("legend %q: want %d lines with %q", got, c.lines, c.wantFirst)
			}
			if !strings.Contains(f.Title, "t.tengo · 4 points over senders (2) × profile (2) · mean ±sd of 3 seeds") &&
				!strings.Contains(f.Title, "6 points over senders (3)") {
				t.Errorf("title %q", f.Title)
			}
			p := f.panels[0].p
			_, isLog := p.Y.Scale.(gplot.LogScale)
			if isLog != c.logPPS {
				t.Errorf("log y axis %v, want %v", isLog, c.logPPS)
			}
			ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
			var labels []string
			for _, tk := range ticks {
				if tk.Label != "" {
					labels = append(labels, tk.Label)
				}
			}
			if !slices.Equal(labels, c.a) {
				t.Errorf("x ticks %q, want the grid's values %q", labels, c.a)
			}
			if c.nominal && (p.X.Min != -0.5 && p.X.Min != 0) {
				t.Errorf("a nominal axis from %v", p.X.Min)
			}
			// The same report draws the same bytes.
			one, err := Render(f, "svg")
			if err != nil {
				t.Fatal(err)
			}
			again, _ := SweepFigures(r, Options{Kinds: c.kinds})
			two, _ := Render(again[0], "svg")
			if !bytes.Equal(one, two) {
				t.Error("the same sweep drew other bytes")
			}
		})
	}
}

func TestSweepBadInput(t *testing.T) {
	r := sweepOf([]string{"1"}, []string{"a"}, 1, func(i, j, v int) float64 { return 1 })
	if _, err := SweepFigures(r, Options{Kinds: []string{"overview"}}); err == nil || !strings.Contains(err.Error(), `no sweep plot kind "overview"`) {
		t.Errorf("a run's kind for a sweep: %v", err)
	}
	if _, err := SweepFigures(&sweep.Report{Grid: r.Grid}, Options{}); err == nil || !strings.Contains(err.Error(), "no rows") {
		t.Errorf("no rows: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"grid": [], "rows": []}`, "without a grid"},
		{`{"grid": 3, "rows": []}`, "grid is a JSON number"},
	} {
		if !IsSweep([]byte(c.in)) {
			t.Errorf("%s: not taken for a sweep", c.in)
		}
		if _, err := DecodeSweep([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	if IsSweep([]byte(`{"rows": []}`)) || IsSweep([]byte(`[1]`)) {
		t.Error("not a sweep taken for one")
	}
}
