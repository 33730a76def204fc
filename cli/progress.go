package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
)

// jobsFlag is -j: how many runs go at once.
func jobsFlag() cli.Flag {
	return &cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: run.DefaultJobs(),
		Usage: fmt.Sprintf("runs at once (variants, sweep points); 1..%d, default the number of CPUs", run.MaxJobs)}
}

// specDurations are the simulated times of specs, what the bar counts.
func specDurations(specs []run.Spec) []sim.Time {
	out := make([]sim.Time, len(specs))
	for i, s := range specs {
		out[i] = s.Duration
	}
	return out
}

// progress shows one bar on stderr for runs that may go at once: the
// simulated time done over all of them. It appears once the runs have
// taken a second of wall time, and never when stderr is not a terminal
// or --no-progress is given.
type progress struct {
	enabled bool
	what    string // "variants", "runs"
	start   time.Time

	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	total int64   // simulated µs of all runs
	done  []int64 // simulated µs done, per run
	sum   int64
	ended int // runs finished
	nRuns int
}

func newProgress(c *cli.Context, what string, durations []sim.Time) *progress {
	p := &progress{start: time.Now(), what: what, done: make([]int64, len(durations)), nRuns: len(durations)}
	p.enabled = !c.Bool("no-progress") && term.IsTerminal(int(os.Stderr.Fd()))
	for _, d := range durations {
		p.total += int64(d / sim.Microsecond)
	}
	return p
}

// run is run i's run.Progress.
func (p *progress) run(i int) run.Progress {
	if !p.enabled {
		return nil
	}
	return func(done, _ sim.Time) {
		p.mu.Lock()
		defer p.mu.Unlock()
		d := int64(done / sim.Microsecond)
		p.sum += d - p.done[i]
		p.done[i] = d
		p.show()
	}
}

// runDone counts a finished run.
func (p *progress) runDone() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended++
	p.show()
}

func (p *progress) label() string {
	if p.nRuns == 1 {
		return "simulating (simulated µs)"
	}
	return fmt.Sprintf("%s %d/%d done (simulated µs)", p.what, p.ended, p.nRuns)
}

// show draws the bar; p.mu is held.
func (p *progress) show() {
	if p.bar == nil {
		if time.Since(p.start) < time.Second {
			return
		}
		p.bar = progressbar.NewOptions64(p.total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(p.label()),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish())
	}
	p.bar.Describe(p.label())
	_ = p.bar.Set64(p.sum)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// orderedLogs keeps the log lines of runs that go at once apart: each
// run writes to its own buffer, and the buffers go to w in run order,
// each once its run and every run before it have ended. Runs going one
// at a time log straight to the script's writer instead (nil here).
type orderedLogs struct {
	mu    sync.Mutex
	w     io.Writer
	bufs  []bytes.Buffer
	ended []bool
	next  int
}

func newOrderedLogs(w io.Writer, n, jobs int) *orderedLogs {
	if jobs <= 1 || n <= 1 {
		return nil
	}
	return &orderedLogs{w: w, bufs: make([]bytes.Buffer, n), ended: make([]bool, n)}
}

// writer is run i's log (nil: the script's own).
func (o *orderedLogs) writer(i int) io.Writer {
	if o == nil {
		return nil
	}
	return &o.bufs[i]
}

// end marks run i ended and writes out what is due.
func (o *orderedLogs) end(i int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended[i] = true
	for o.next < len(o.ended) && o.ended[o.next] {
		_, _ = o.w.Write(o.bufs[o.next].Bytes())
		o.bufs[o.next] = bytes.Buffer{}
		o.next++
	}
}

// countBar shows how many of n things are done (a Slurm sweep's points),
// on a terminal only.
type countBar struct {
	bar *progressbar.ProgressBar
}

func newCountBar(c *cli.Context, what string, n int) *countBar {
	if c.Bool("no-progress") || !term.IsTerminal(int(os.Stderr.Fd())) {
		return &countBar{}
	}
	return &countBar{bar: progressbar.NewOptions(n, progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())}
}

func (b *countBar) set(done int) {
	if b.bar != nil {
		_ = b.bar.Set(done)
	}
}

func (b *countBar) finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}
