package run

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/txlab/txlab/framework/report"
)

// MaxJobs bounds how many runs go at once (txlab run -j, txlab sweep -j).
const MaxJobs = 1024

// DefaultJobs is how many runs go at once unless told: the CPUs this
// process may use.
func DefaultJobs() int { return runtime.GOMAXPROCS(0) }

// CheckJobs refuses a parallelism outside 1..MaxJobs.
func CheckJobs(j int) error {
	if j < 1 || j > MaxJobs {
		return fmt.Errorf("-j %d is out of range: 1..%d (default: the number of CPUs, %d)", j, MaxJobs, DefaultJobs())
	}
	return nil
}

// RunAll runs specs, at most jobs at a time, and returns each spec's
// report and error at its index. Runs share nothing mutable (each has
// its engine, host, random streams and plugin processes), so a report
// does not depend on jobs or on what else runs. opts gives spec i's
// options (nil: none); done, if set, is called as each run ends, from
// the goroutine that ran it. Once opts(i).Stop is closed, specs not yet
// started are not run: their report is nil and their error
// ErrInterrupted.
func RunAll(specs []Spec, jobs int, opts func(i int) Options, done func(i int, rep *report.Report, err error)) ([]*report.Report, []error) {
	reps := make([]*report.Report, len(specs))
	errs := make([]error, len(specs))
	jobs = max(1, min(jobs, len(specs)))
	next := make(chan int)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var o Options
				if opts != nil {
					o = opts(i)
				}
				if Stopped(o.Stop) {
					errs[i] = ErrInterrupted
					continue
				}
				reps[i], errs[i] = RunWith(specs[i], o)
				if done != nil {
					done(i, reps[i], errs[i])
				}
			}
		}()
	}
	for i := range specs {
		next <- i
	}
	close(next)
	wg.Wait()
	return reps, errs
}

// Stopped says whether stop (an Options.Stop) is closed; nil never is.
// RunAll and sweep's local runner check it before starting a run.
func Stopped(stop <-chan struct{}) bool {
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
