package sweep

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/units"
)

// LookSlurm refuses the Slurm executor where Slurm's commands are not
// on PATH.
func LookSlurm() error {
	for _, c := range []string{"sbatch", "squeue"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("--executor slurm needs %s on PATH, and it is not (is this a Slurm login node? --executor local runs here)", c)
		}
	}
	return nil
}

// Prepare puts what the array's tasks run into dir: a copy of binary
// (this txlab, so every task runs the build that checked the sweep, even
// if the original goes away, as `go run`'s does) and the batch script.
// dir must be absolute.
func Prepare(dir, binary string) error {
	if err := copyBinary(binary, filepath.Join(dir, BinaryFile)); err != nil {
		return fmt.Errorf("copying %s into the sweep: %w", binary, err)
	}
	script := fmt.Sprintf(`#!/bin/sh
# One task of a txlab sweep's Slurm job array: it runs the sweep's point
# number $SLURM_ARRAY_TASK_ID and writes points/$SLURM_ARRAY_TASK_ID.json.
exec %s sweep task %s "$SLURM_ARRAY_TASK_ID"
`, shellQuote(filepath.Join(dir, BinaryFile)), shellQuote(dir))
	return WriteAtomic(filepath.Join(dir, BatchFile), []byte(script))
}

func copyBinary(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, to) // a task running the old copy keeps it
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ArraySpec writes indices (ascending) as sbatch's --array list, runs
// of consecutive ones as ranges: 0-3, 1,3-5.
func ArraySpec(indices []int) string { return units.RangeList(indices) }

// Submit submits points (indices, ascending) of the sweep in dir as one
// job array, at most limit tasks at once (0: all of them), with extra
// sbatch arguments, records the job in dir/jobs and returns its id.
// Each task's stdout and stderr go to logs/I.out and logs/I.err.
func Submit(dir string, indices []int, limit int, extra []string) (string, error) {
	if len(indices) == 0 {
		return "", errors.New("no points to submit")
	}
	if limit <= 0 {
		limit = len(indices)
	}
	array := fmt.Sprintf("%s%%%d", ArraySpec(indices), limit)
	args := []string{"--parsable", "--job-name=txlab-sweep", "--array=" + array,
		"--output=" + filepath.Join(dir, LogsDir, "%a.out"), "--error=" + filepath.Join(dir, LogsDir, "%a.err"),
		"--chdir=" + dir}
	args = append(append(args, extra...), filepath.Join(dir, BatchFile))
	cmd := exec.Command("sbatch", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("sbatch --array=%s: %v: %s", array, err, firstLine(stderr.String()))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // "JOBID" or "JOBID;CLUSTER"
	if _, perr := strconv.ParseUint(id, 10, 64); perr != nil {
		return "", fmt.Errorf("sbatch --parsable printed %q, not a job id", strings.TrimSpace(string(out)))
	}
	f, err := os.OpenFile(filepath.Join(dir, JobsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return id, err
	}
	_, err = fmt.Fprintf(f, "%s %s\n", id, array)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return id, err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Jobs are the ids of the jobs submitted for the sweep in dir, oldest
// first.
func Jobs(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, JobsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out, nil
}

// Queued are the jobs of the sweep in dir that Slurm still has pending
// or running (squeue lists neither finished jobs nor those it forgot).
func Queued(dir string) ([]string, error) {
	jobs, err := Jobs(dir)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	if _, err := exec.LookPath("squeue"); err != nil {
		return nil, fmt.Errorf("%s lists Slurm jobs, but squeue is not on PATH", filepath.Join(dir, JobsFile))
	}
	var out []string
	for _, id := range jobs {
		cmd := exec.Command("squeue", "--noheader", "--format=%i", "--jobs="+id)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			if strings.Contains(stderr.String(), "Invalid job id") {
				continue // long finished: slurmctld forgot it
			}
			return nil, fmt.Errorf("squeue --jobs=%s: %v: %s", id, err, firstLine(stderr.String()))
		}
		if strings.TrimSpace(string(b)) != "" {
			out = append(out, id)
		}
	}
	return out, nil
}

// Wait waits until every point of the sweep in dir has a result or none
// of its jobs is queued any more, looking every poll; progress, if set,
// is told how many points are done. A closed stop ends the wait with
// run.ErrInterrupted (the jobs go on; collect merges them later).
func (m *Manifest) Wait(dir string, poll time.Duration, stop <-chan struct{}, progress func(done int)) error {
	done := map[int]bool{}
	failures := 0
	for {
		for _, p := range m.Points {
			if !done[p.Index] {
				if _, err := os.Stat(PointFile(dir, p.Index)); err == nil {
					done[p.Index] = true
				}
			}
		}
		if progress != nil {
			progress(len(done))
		}
		if len(done) == len(m.Points) {
			return nil
		}
		q, err := Queued(dir)
		switch {
		case err != nil:
			// slurmctld may be busy or restarting: give it a few polls.
			if failures++; failures >= 10 {
				return err
			}
		case len(q) == 0:
			return nil
		default:
			failures = 0
		}
		select {
		case <-stop:
			return run.ErrInterrupted
		case <-time.After(poll):
		}
	}
}

// Failures says, one line per point, why the points missing have no
// result: the last line of the task's stderr (logs/I.err).
func (m *Manifest) Failures(dir string, missing []int) []string {
	var out []string
	for _, i := range missing {
		log := filepath.Join(LogsDir, strconv.Itoa(i)+".err")
		why := "no " + log + " (did the task start?)"
		if b, err := os.ReadFile(filepath.Join(dir, log)); err == nil {
			if last := lastLine(string(b)); last != "" {
				why = log + ": " + last
			} else {
				why = log + " is empty"
			}
		}
		out = append(out, fmt.Sprintf("point %d (%s) has no result: %s", i, m.Label(m.Points[i]), why))
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 400 {
		last = last[:400] + "..."
	}
	return last
}

// Task runs point index of the sweep in dir, as one Slurm array task
// does, with up to jobs runs at once: each run's report goes to
// reports/, the point's result to points/I.json. A point already done
// is left as it is.
func Task(dir string, index, jobs int, stop <-chan struct{}) error {
	m, err := Open(dir)
	if err != nil {
		return err
	}
	if index < 0 || index >= len(m.Points) {
		return fmt.Errorf("%s: no point %d (the sweep has 0..%d)", dir, index, len(m.Points)-1)
	}
	if _, err := ReadPoint(dir, index); err == nil {
		return nil
	}
	p := m.Points[index]
	specs, err := m.Specs(p)
	if err != nil {
		return fmt.Errorf("point %d (%s): %w", index, m.Label(p), err)
	}
	all := make([][]run.Spec, len(m.Points))
	all[index] = specs
	_, err = m.RunPoints([]int{index}, all, RunOptions{Dir: dir, Jobs: jobs, Stop: stop})
	return err
}

// CheckResubmit refuses to resubmit points that are not in the sweep or
// already have a result, or while a job of the sweep is still queued.
func (m *Manifest) CheckResubmit(dir string, indices []int) error {
	if len(indices) == 0 {
		return errors.New("resubmit: give the points with --index I (repeatable)")
	}
	seen := map[int]bool{}
	for _, i := range indices {
		if i < 0 || i >= len(m.Points) {
			return fmt.Errorf("--index %d: the sweep in %s has points 0..%d", i, dir, len(m.Points)-1)
		}
		if seen[i] {
			return fmt.Errorf("--index %d given twice", i)
		}
		seen[i] = true
		if _, err := ReadPoint(dir, i); err == nil {
			return fmt.Errorf("--index %d: point %d is done (%s); remove that file to run it again", i, i, PointFile(dir, i))
		}
	}
	q, err := Queued(dir)
	if err != nil {
		return err
	}
	if len(q) > 0 {
		return fmt.Errorf("job %s of the sweep in %s is still queued: wait for it (txlab sweep collect %s) before resubmitting", strings.Join(q, ", "), dir, dir)
	}
	return nil
}
