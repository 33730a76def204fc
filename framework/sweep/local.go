package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
)

// RunOptions say how RunPoints runs.
type RunOptions struct {
	// Dir is the sweep directory: each run's report goes to reports/,
	// each point's result to points/I.json once the point is done. ""
	// keeps everything in memory (rows then list no reports).
	Dir string
	// Jobs is how many runs go at once (all points' runs share them).
	Jobs int
	// Stop, once closed, stops the runs going and starts no more;
	// RunPoints then returns run.ErrInterrupted with the points done.
	Stop <-chan struct{}
	// Progress, if set, gives job i's run.Progress (Jobs' order).
	Progress func(i int) run.Progress
	// RunDone, if set, is called as each run ends.
	RunDone func()
}

// Job is one run of a sweep: a point's variant with one seed.
type Job struct {
	Point int // the point's index
	Index int // the run's index within the point (Runs order)
	Run
}

// Jobs lists the runs of points (indices), in order: point by point,
// each in Runs order. specs are the points' specs by index.
func (m *Manifest) Jobs(points []int, specs [][]run.Spec) []Job {
	var out []Job
	for _, p := range points {
		for j, r := range m.Runs(specs[p]) {
			out = append(out, Job{Point: p, Index: j, Run: r})
		}
	}
	return out
}

// ReportFile is where a run's full report goes, under the sweep
// directory: reports/POINT-VARIANT-SEED.json.
func ReportFile(point, variant int, seed uint64) string {
	return filepath.Join(ReportsDir, fmt.Sprintf("%d-%d-%d.json", point, variant, seed))
}

// RunPoints runs the points named (their specs by index, from Check or
// Specs) with up to o.Jobs runs at once, and returns their results in
// the order the points finished. Each result depends only on its point
// (run.RunWith shares nothing between runs), never on Jobs or on which
// run finished first.
func (m *Manifest) RunPoints(points []int, specs [][]run.Spec, o RunOptions) ([]PointResult, error) {
	jobs := m.Jobs(points, specs)
	samples := map[int][]sample{}
	left := map[int]int{}
	for _, p := range points {
		n := len(specs[p]) * m.Seeds
		samples[p], left[p] = make([]sample, n), n
	}
	var (
		mu       sync.Mutex
		results  []PointResult
		firstErr error
		quit     = make(chan struct{}) // a file could not be written: start no more
		quitOnce sync.Once
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		quitOnce.Do(func() { close(quit) })
	}
	finish := func(j Job, s sample) {
		mu.Lock()
		defer mu.Unlock()
		samples[j.Point][j.Index] = s
		if left[j.Point]--; left[j.Point] > 0 {
			return
		}
		names := make([]string, len(specs[j.Point]))
		for v, sp := range specs[j.Point] {
			names[v] = sp.Name
		}
		res := PointResult{Index: j.Point, Rows: m.rows(m.Points[j.Point], names, samples[j.Point])}
		delete(samples, j.Point)
		if o.Dir != "" {
			var b bytes.Buffer
			err := encode(&b, res)
			if err == nil {
				err = WriteAtomic(PointFile(o.Dir, j.Point), b.Bytes())
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				quitOnce.Do(func() { close(quit) })
				return
			}
		}
		results = append(results, res)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	interrupted := false
	for range max(1, min(o.Jobs, len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				ro := run.Options{Stop: o.Stop}
				if o.Progress != nil {
					ro.Progress = o.Progress(i)
				}
				rep, err := run.RunWith(j.Spec, ro)
				if o.RunDone != nil {
					o.RunDone()
				}
				if errors.Is(err, run.ErrInterrupted) {
					continue
				}
				if rep != nil {
					rep.Script = m.Inputs.Script // as txlab run names it: plot titles read it
				}
				s := sample{seed: j.Spec.Seed, rep: rep}
				if err != nil {
					s.err = err.Error()
				}
				if o.Dir != "" && rep != nil {
					s.report = ReportFile(j.Point, j.Variant, j.Spec.Seed)
					var b bytes.Buffer
					if werr := report.WriteJSON(&b, rep); werr != nil {
						fail(werr)
						continue
					}
					if werr := WriteAtomic(filepath.Join(o.Dir, s.report), b.Bytes()); werr != nil {
						fail(werr)
						continue
					}
				}
				finish(j, s)
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case <-o.Stop:
			interrupted = true
			break feed
		case <-quit:
			break feed
		case next <- i:
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return results, firstErr
	}
	if len(results) < len(points) && (interrupted || run.Stopped(o.Stop)) {
		return results, run.ErrInterrupted
	}
	return results, nil
}
