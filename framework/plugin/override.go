package plugin

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
)

// A plugin with a built-in's name replaces the built-in. Named on the
// command line (--plugin PATH) that is the user's choice; found in the
// plugin directory (--plugin-dir, TXLAB_PLUGIN_DIR, often set once and
// forgotten) it is refused unless --plugin-override names it, so a stale
// or stray binary cannot silently stand in for fq_codel in every run.
// Either way the report (plugin_overrides) and the trace say which
// built-ins were replaced, and by what.

// isBuiltin reports whether typ name is a built-in qdisc kind or driver.
func isBuiltin(typ, name string) bool {
	switch typ {
	case "qdisc":
		return slices.Contains(qdisc.Kinds(), name)
	case "driver":
		return slices.Contains(driver.Names(), name)
	}
	return false
}

// CheckOverrides checks o.Override names built-ins.
func (o Options) CheckOverrides() error {
	for _, n := range o.Override {
		if !isBuiltin("qdisc", n) && !isBuiltin("driver", n) {
			return fmt.Errorf("--plugin-override %q: no built-in qdisc or driver has that name", n)
		}
	}
	return nil
}

// Replaces says whether plugin f replaces a built-in and whether o lets
// it: note is the line for the report ("" if it replaces nothing).
func (o Options) Replaces(f Found) (note string, err error) {
	if !isBuiltin(f.Type, f.Name) {
		return "", nil
	}
	fromDir := o.Dir != "" && filepath.Dir(f.Path) == filepath.Clean(o.Dir)
	if fromDir && !slices.Contains(o.Override, f.Name) {
		return "", fmt.Errorf("plugin %s has the name of the built-in %s %s: refused (rename it, or replace the built-in with --plugin-override %s)",
			f.Path, f.Type, f.Name, f.Name)
	}
	return fmt.Sprintf("%s %s: %s", f.Type, f.Name, f.Path), nil
}

type replacement struct {
	note string
	err  error
}

func (h *Host) noteReplacement(key string, f Found) {
	note, err := h.opts.Replaces(f)
	if note == "" && err == nil {
		return
	}
	if h.replacing == nil {
		h.replacing = map[string]replacement{}
	}
	h.replacing[key] = replacement{note, err}
}

// useReplacement is called when the run asks for key ("qdisc/KIND"): a
// refused replacement is the error, an allowed one goes in Overrides.
// Refusing only what a run uses leaves the other runs alone.
func (h *Host) useReplacement(key string) error {
	r, ok := h.replacing[key]
	if !ok {
		return nil
	}
	if r.err != nil {
		return r.err
	}
	if !slices.Contains(h.overrides, r.note) {
		h.overrides = append(h.overrides, r.note)
		slices.Sort(h.overrides)
	}
	return nil
}

// Overrides are the built-ins this host's plugins replaced in the run,
// one line each ("qdisc fq_codel: /path/txlab-qdisc-fq_codel"), sorted.
func (h *Host) Overrides() []string { return h.overrides }
