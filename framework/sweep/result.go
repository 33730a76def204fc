package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/txlab/txlab/framework/report"
)

// Stat is one metric over a row's seeds: the mean, the sample standard
// deviation (n-1 in the denominator; 0 for one seed), the least and the
// most. Each is computed in seed order, so the bytes never depend on
// which run finished first.
type Stat struct {
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func statOf(xs []float64) *Stat {
	if len(xs) == 0 {
		return nil
	}
	s := &Stat{Min: xs[0], Max: xs[0]}
	var sum float64
	for _, x := range xs {
		sum += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean = sum / float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// Row is one variant of one point over its seeds.
type Row struct {
	Point   int               `json:"point"`             // the point's index
	Values  map[string]string `json:"values"`            // grid key -> value
	Variant string            `json:"variant,omitempty"` // the script's variant name
	Seeds   []uint64          `json:"seeds"`
	OK      int               `json:"ok"` // runs that succeeded; the stats cover these
	// The metrics, over the runs that succeeded (absent when none did).
	TxPps          *Stat `json:"tx_pps,omitempty"`
	TxBps          *Stat `json:"tx_bps,omitempty"`
	CPUNsPerPacket *Stat `json:"cpu_ns_per_packet,omitempty"`
	CPUBusyPct     *Stat `json:"cpu_busy_pct,omitempty"`
	OfferedPackets *Stat `json:"offered_packets,omitempty"`
	TxPackets      *Stat `json:"tx_packets,omitempty"`
	DroppedPackets *Stat `json:"dropped_packets,omitempty"`
	// Drops are the whole run's drops by reason (a seed without a
	// reason counts 0 for it).
	Drops map[string]Stat `json:"drops"`
	// Reports are the runs' full reports, one per seed, as paths under
	// the sweep directory (absent for a sweep without one).
	Reports []string `json:"reports,omitempty"`
	Errors  []string `json:"errors,omitempty"` // "seed N: why", per failed run
}

// PointResult is one point's rows: what points/I.json holds.
type PointResult struct {
	Index int   `json:"index"`
	Rows  []Row `json:"rows"`
}

// Report is the merged report of a sweep.
type Report struct {
	Format int    `json:"format"`
	Script string `json:"script,omitempty"`
	Grid   []Axis `json:"grid"`
	Seeds  int    `json:"seeds"`
	Points int    `json:"points"`
	Rows   []Row  `json:"rows"`
}

// Failed counts the rows with a failed run.
func (r *Report) Failed() int {
	n := 0
	for _, row := range r.Rows {
		if len(row.Errors) > 0 {
			n++
		}
	}
	return n
}

// sample is what a row keeps of one run.
type sample struct {
	seed   uint64
	err    string
	report string // path under the sweep directory, "" if none
	rep    *report.Report
}

// rows makes a point's rows from its runs' samples (in Runs order) and
// the names of its variants.
func (m *Manifest) rows(p Point, names []string, samples []sample) []Row {
	vals := map[string]string{}
	for i, a := range m.Grid {
		vals[a.Key] = p.Values[i]
	}
	var out []Row
	for v, name := range names {
		row := Row{Point: p.Index, Values: vals, Variant: name, Drops: map[string]Stat{}}
		var pps, bps, ns, busy, offered, tx, dropped []float64
		reasons := map[string]bool{}
		var ok []*report.Report
		for _, s := range samples[v*m.Seeds : (v+1)*m.Seeds] {
			row.Seeds = append(row.Seeds, s.seed)
			if s.report != "" {
				row.Reports = append(row.Reports, s.report)
			}
			if s.err != "" {
				row.Errors = append(row.Errors, fmt.Sprintf("seed %d: %s", s.seed, s.err))
				continue
			}
			r := s.rep
			ok = append(ok, r)
			pps, bps, ns, busy = append(pps, r.TxPps), append(bps, r.TxBps), append(ns, r.CPUNsPerPacket), append(busy, r.CPUBusyPct)
			offered, tx, dropped = append(offered, float64(r.OfferedPackets)), append(tx, float64(r.TxPackets)), append(dropped, float64(r.DroppedPackets))
			for k := range r.Drops {
				reasons[k] = true
			}
		}
		row.OK = len(ok)
		row.TxPps, row.TxBps, row.CPUNsPerPacket, row.CPUBusyPct = statOf(pps), statOf(bps), statOf(ns), statOf(busy)
		row.OfferedPackets, row.TxPackets, row.DroppedPackets = statOf(offered), statOf(tx), statOf(dropped)
		for _, k := range sortedKeys(reasons) {
			xs := make([]float64, len(ok))
			for i, r := range ok {
				xs[i] = float64(r.Drops[k])
			}
			row.Drops[k] = *statOf(xs)
		}
		out = append(out, row)
	}
	return out
}

// Merge puts the points' results in index order into one report.
func (m *Manifest) Merge(results []PointResult) *Report {
	r := &Report{Format: FormatVersion, Script: m.Inputs.Script, Grid: m.Grid, Seeds: m.Seeds, Points: len(m.Points), Rows: []Row{}}
	sorted := append([]PointResult(nil), results...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for _, p := range sorted {
		r.Rows = append(r.Rows, p.Rows...)
	}
	return r
}

// WriteJSON writes the merged report as indented JSON (map keys sorted).
func WriteJSON(w io.Writer, r *Report) error { return encode(w, r) }

func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WriteText writes the merged report as a table: one line per row, the
// grid's values, then each metric's mean and, over several seeds, its
// sample standard deviation.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	spread := ""
	if r.Seeds > 1 {
		spread = fmt.Sprintf("; mean ±sample stddev over %d seeds, min and max in the JSON", r.Seeds)
	}
	script := ""
	if r.Script != "" {
		script = r.Script + ": "
	}
	if _, err := fmt.Fprintf(w, "%ssweep of %d points%s\n", script, r.Points, spread); err != nil {
		return err
	}
	variants := false
	for _, row := range r.Rows {
		variants = variants || row.Variant != ""
	}
	head := []string{"#"}
	for _, a := range r.Grid {
		head = append(head, a.Key)
	}
	if variants {
		head = append(head, "variant")
	}
	head = append(head, "tx_pps", "tx_bps", "dropped", "cpu_ns/pkt", "cpu_busy%", "")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.Rows {
		cols := []string{strconv.Itoa(row.Point)}
		for _, a := range r.Grid {
			cols = append(cols, row.Values[a.Key])
		}
		if variants {
			cols = append(cols, row.Variant)
		}
		note := ""
		if len(row.Errors) > 0 {
			note = fmt.Sprintf("%d of %d runs failed: %s", len(row.Errors), len(row.Seeds), row.Errors[0])
		}
		cols = append(cols, stat(row.TxPps, si), stat(row.TxBps, si), stat(row.DroppedPackets, si),
			stat(row.CPUNsPerPacket, fixed), stat(row.CPUBusyPct, fixed), note)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

func stat(s *Stat, f func(float64) string) string {
	switch {
	case s == nil:
		return "-"
	case s.Min == s.Max:
		return f(s.Mean)
	}
	return f(s.Mean) + " ±" + f(s.Stddev)
}

// si writes a number with about 4 significant digits and an SI
// suffix: 1.234M, 630.0K, 12.35G; a whole number below 1000 as it is.
func si(v float64) string {
	x, suffix := v, ""
	for _, u := range []struct {
		s string
		n float64
	}{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if math.Abs(v) >= u.n {
			x, suffix = v/u.n, u.s
			break
		}
	}
	d := 3
	switch a := math.Abs(x); {
	case suffix == "" && x == math.Trunc(x):
		d = 0
	case a >= 1000:
		d = 0
	case a >= 100:
		d = 1
	case a >= 10:
		d = 2
	}
	return strconv.FormatFloat(x, 'f', d, 64) + suffix
}

func fixed(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
