package script

import (
	"fmt"

	"github.com/txlab/txlab/framework/run"
)

// Check builds every variant's host without simulating it (run.Check:
// no actions but their checks), so what only the whole build can find —
// a driver option, a qdisc that needs more queues, an offered rate above
// the link, a qdisc change the qdisc refuses — fails here, named
// by variant.
func (pl *Plan) Check() error {
	for _, s := range pl.Specs {
		if err := run.Check(s); err != nil {
			what := pl.File
			if s.Name != "" {
				what += ": variant " + s.Name
			}
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := run.CheckGiven(pl.Specs); err != nil {
		return fmt.Errorf("%s: %w", pl.File, err)
	}
	return nil
}

// CheckSpec dry-builds one spec and tries its actions' checks (qdisc
// changes) on that host (run.Check): what a run would refuse, the check
// refuses.
func CheckSpec(s run.Spec) error { return run.Check(s) }
