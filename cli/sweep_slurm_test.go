package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSweepSlurmReal runs a 4-point sweep (a script with variants, a
// --param axis, two seeds) through a real Slurm cluster, as .ci/run does
// after .ci/slurm-up: the job array is held, a collector waiting for it
// is interrupted (nothing is lost), one task is made to fail (it is
// reported by index with its stderr), that point is resubmitted alone,
// and the merged report is byte for byte the local executor's. Skipped
// unless TXLAB_SLURM=1 and sbatch is on PATH.
func TestSweepSlurmReal(t *testing.T) {
	if os.Getenv("TXLAB_SLURM") != "1" {
		t.Skip("set TXLAB_SLURM=1 (with a cluster up: .ci/slurm-up) to run the Slurm integration test")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		t.Skip("TXLAB_SLURM=1 but sbatch is not on PATH")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "txlab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	txl := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), stderr.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), stderr.String(), 0
	}
	args := []string{"sweep", "../scripts/e2.tengo", "--quick", "--grid", "netperf=false,true", "--grid", "size=64,120",
		"--seeds", "2", "--format", "json", "--no-progress", "--poll", "200ms"}
	local := filepath.Join(tmp, "local")
	want, stderr, code := txl(append(args, "--dir", local)...)
	if code != 0 {
		t.Fatalf("local sweep: exit %d\n%s", code, stderr)
	}

	dir := filepath.Join(tmp, "slurm")
	_, stderr, code = txl(append(args, "--executor", "slurm", "--dir", dir, "--no-wait", "--sbatch-arg=--hold")...)
	m := regexp.MustCompile(`submitted job (\d+): 4 points \(--array=0-3\)`).FindStringSubmatch(stderr)
	if code != 0 || m == nil || !strings.Contains(stderr, "merge later with `txlab sweep collect "+dir+"`") {
		t.Fatalf("submit: exit %d\n%s", code, stderr)
	}
	job := m[1]

	// A collector interrupted while it waits loses nothing.
	cmd := exec.Command(bin, "sweep", "collect", dir, "--poll", "200ms", "--no-progress")
	var cerr bytes.Buffer
	cmd.Stderr = &cerr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(cerr.String(), "the job array goes on; merge it later with `txlab sweep collect") {
		t.Fatalf("interrupted collect: %v\n%s", err, cerr.String())
	}

	// Point 3's task fails: its binary is swapped for one that does,
	// while the array is held.
	real := filepath.Join(dir, "txlab.real")
	if err := os.Rename(filepath.Join(dir, "txlab"), real); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n[ \"$4\" = 3 ] && { echo 'txlab: injected failure of point 3' >&2; exit 1; }\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "txlab"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("scontrol", "release", job).CombinedOutput(); err != nil {
		t.Fatalf("scontrol release %s: %v\n%s", job, err, out)
	}
	_, stderr, code = txl("sweep", "collect", dir, "--poll", "200ms", "--no-progress")
	if code != 1 || !strings.Contains(stderr, "point 3 (netperf=true size=120) has no result: logs/3.err: txlab: injected failure of point 3") ||
		!strings.Contains(stderr, "1 of 4 points have no result: run them again with `txlab sweep resubmit "+dir+" --index 3`") {
		t.Fatalf("collect of a failed task: exit %d\n%s", code, stderr)
	}
	if err := os.Rename(real, filepath.Join(dir, "txlab")); err != nil {
		t.Fatal(err)
	}
	got, stderr, code := txl("sweep", "resubmit", dir, "--index", "3", "--format", "json", "--poll", "200ms", "--no-progress")
	if code != 0 || !strings.Contains(stderr, "1 points (--array=3)") {
		t.Fatalf("resubmit: exit %d\n%s", code, stderr)
	}
	if got != want {
		t.Fatalf("the Slurm sweep's merged report differs from the local one's:\nslurm:\n%s\nlocal:\n%s", got, want)
	}
	a, _ := os.ReadFile(filepath.Join(local, "sweep.json"))
	b, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if !bytes.Equal(a, b) || string(a) != want {
		t.Fatal("sweep.json differs between the executors")
	}
	if !strings.Contains(want, `"variant": "sfq/6.19-rc1"`) || !strings.Contains(want, `"netperf": "true"`) {
		t.Fatalf("the merged report lacks the script's variants or the param axis:\n%s", want)
	}
}
