// Package sweep runs a grid of txlab runs: every combination of the
// values of some knobs, toggles, costs or script parameters (a point),
// each over one or more seeds, locally at once or as one Slurm job array,
// and merges the results into one report (docs/report.md, "Sweeps").
//
// A sweep in a directory keeps everything there: manifest.json (what to
// run: the inputs, the grid, the seeds, the points), points/I.json (point
// I's result, written atomically when the point is done), reports/ (each
// run's full report), logs/ (a Slurm task's stdout and stderr), jobs
// (the Slurm jobs submitted) and sweep.json (the merged report). Results
// are only ever added, so a collector that stops loses nothing, and
// collecting again gives the same bytes.
package sweep

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
)

// Bounds of a sweep.
const (
	MaxPoints = 100_000 // points in one grid
	MaxSeeds  = 10_000  // --seeds
)

// Axis is one grid key and its values, in the order given.
type Axis struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// KeyKind says what a grid key sets.
type KeyKind int

// Key kinds.
const (
	NoKey     KeyKind = iota
	KnobKey           // a run knob by its flag name (run.Knobs): senders, profile, qdisc, ...
	ToggleKey         // a TX-path toggle, as --set name=value
	CostKey           // cost.NAME, as --set cost.NAME=ns
	ParamKey          // a script parameter, as --param name=value
)

// ClassifyKey says what key sets; params are the script's parameter
// names (nil without a script).
func ClassifyKey(key string, params []string) KeyKind {
	switch {
	case run.KnobByFlag(key) != nil:
		return KnobKey
	case contains(netdev.ToggleNames(), key):
		return ToggleKey
	case strings.HasPrefix(key, "cost.") && contains(costNames(), strings.TrimPrefix(key, "cost.")):
		return CostKey
	case contains(params, key):
		return ParamKey
	}
	return NoKey
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func costNames() []string {
	var out []string
	for _, c := range sim.DefaultCosts().List() {
		out = append(out, c.Name)
	}
	return out
}

// KnownKeys lists the keys a grid may use, as one line: the knobs, the
// toggles, the costs and the script's parameters.
func KnownKeys(params []string, script bool) string {
	var knobs []string
	for _, k := range run.Knobs() {
		knobs = append(knobs, k.Flag)
	}
	ps := "none (no script given)"
	if script {
		ps = "none (the script reads no txlab.param)"
	}
	if len(params) > 0 {
		ps = strings.Join(params, ", ")
	}
	return fmt.Sprintf("knobs: %s; toggles: %s; costs: cost.%s; script params: %s",
		strings.Join(knobs, ", "), strings.Join(netdev.ToggleNames(), ", "), strings.Join(costNames(), ", cost."), ps)
}

// ParseAxis reads one --grid argument: key=v1,v2,...
func ParseAxis(arg string) (Axis, error) {
	key, vals, ok := strings.Cut(arg, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return Axis{}, fmt.Errorf("--grid %q: want key=v1,v2 (values separated by commas)", arg)
	}
	if strings.TrimSpace(vals) == "" {
		return Axis{}, fmt.Errorf("--grid %s: no values (want %s=v1,v2,...)", key, key)
	}
	a := Axis{Key: key}
	seen := map[string]bool{}
	for _, v := range strings.Split(vals, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return Axis{}, fmt.Errorf("--grid %s=%s: an empty value", key, vals)
		}
		if seen[v] {
			return Axis{}, fmt.Errorf("--grid %s=%s: value %q given twice", key, vals, v)
		}
		seen[v] = true
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// CheckGrid refuses an empty grid, a key given twice, and too many
// points.
func CheckGrid(grid []Axis) error {
	if len(grid) == 0 {
		return errors.New("no --grid given: a sweep needs at least one --grid key=v1,v2")
	}
	seen := map[string]bool{}
	n := 1
	for _, a := range grid {
		if seen[a.Key] {
			return fmt.Errorf("--grid %s given twice: give all its values in one --grid %s=v1,v2", a.Key, a.Key)
		}
		seen[a.Key] = true
		if len(a.Values) == 0 {
			return fmt.Errorf("--grid %s: no values", a.Key)
		}
		n *= len(a.Values)
		if n > MaxPoints {
			return fmt.Errorf("the grid has more than %d points", MaxPoints)
		}
	}
	return nil
}

// Point is one combination of the grid's values.
type Point struct {
	Index  int      `json:"index"`
	Values []string `json:"values"` // one per axis, in grid order
}

// Points is the grid's cartesian product, the last axis varying
// fastest (as nested loops over the axes in the order given).
func Points(grid []Axis) []Point {
	n := 1
	for _, a := range grid {
		n *= len(a.Values)
	}
	out := make([]Point, n)
	for i := range out {
		vals := make([]string, len(grid))
		rest := i
		for j := len(grid) - 1; j >= 0; j-- {
			m := len(grid[j].Values)
			vals[j] = grid[j].Values[rest%m]
			rest /= m
		}
		out[i] = Point{Index: i, Values: vals}
	}
	return out
}

// label is a point as "senders=16 profile=6.18".
func label(grid []Axis, p Point) string {
	parts := make([]string, len(grid))
	for i, a := range grid {
		parts[i] = a.Key + "=" + p.Values[i]
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
