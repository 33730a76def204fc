package script

import (
	"fmt"

	"github.com/txlab/txlab/framework/run"
)

// Check builds every variant's host without simulating it (a run of one
// nanosecond, no actions but their checks), so what only the whole build
// can find — a driver option, a qdisc that needs more queues, a placement
// outside the CPUs, a qdisc change the qdisc refuses — fails here, named
// by variant.
func (pl *Plan) Check() error {
	for _, s := range pl.Specs {
		if err := CheckSpec(s); err != nil {
			what := pl.File
			if s.Name != "" {
				what += ": variant " + s.Name
			}
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// CheckSpec dry-builds one spec, and tries its actions' checks (qdisc
// changes) on that host: what a run would refuse, the check refuses.
func CheckSpec(s run.Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.Duration, s.Warmup, s.Interval, s.Actions = 1, 0, 0, run.CheckActions(s.Actions)
	_, err := run.Run(s, nil)
	return err
}
