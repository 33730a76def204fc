package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// sweepArgs is a 4-point sweep of a host that runs in milliseconds.
var sweepArgs = []string{"sweep", "--sockets", "1", "--cores", "8", "--smt", "1", "--queues", "4", "--duration", "2ms",
	"--warmup", "500us", "--grid", "senders=2,8", "--grid", "profile=6.18,net-next", "--no-progress", "--format", "json"}

// exitOfEnv is exitOf with env added to the test binary's.
func exitOfEnv(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f")), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stderr.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return stderr.String(), 0
}

// listing is every file under dir with its bytes, to see that nothing
// changed.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// TestSweepBadInput: each bad sweep command line is a one-line error and
// a non-zero exit before anything runs or is written: no directory made,
// a directory holding another sweep left byte for byte.
func TestSweepBadInput(t *testing.T) {
	tmp := t.TempDir()
	other := filepath.Join(tmp, "other")
	if _, err := txlab(t, append(append([]string{}, sweepArgs...), "--dir", other)...); err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(tmp, "busy")
	os.MkdirAll(busy, 0o755)
	os.WriteFile(filepath.Join(busy, "notes.txt"), []byte("mine"), 0o644)
	before := listing(t, tmp)
	fresh := filepath.Join(tmp, "fresh")
	noSlurm := []string{"PATH=" + tmp}                       // no sbatch, no squeue
	base := sweepArgs[: len(sweepArgs)-7 : len(sweepArgs)-7] // without the grid and output flags
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{append(sweepArgs, "-j", "0"), nil, "-j 0 is out of range: 1..1024"},
		{append(sweepArgs, "-j", "-3"), nil, "-j -3 is out of range: 1..1024"},
		{[]string{"run", "-j", "0", "--no-progress"}, nil, "-j 0 is out of range: 1..1024"},
		{append(base, "--grid", "sendrs=1,2"), nil, "--grid sendrs: no such key (knobs: profile, sockets, cores, smt,"},
		{append(base, "--no-progress"), nil, "no --grid given: a sweep needs at least one --grid key=v1,v2"},
		{append(base, "--grid", "senders="), nil, "--grid senders: no values"},
		{append(base, "--grid", "senders=2,,4"), nil, `--grid senders=2,,4: an empty value`},
		{append(base, "--grid", "senders=2", "--grid", "senders=4"), nil, "--grid senders given twice"},
		{append(sweepArgs, "--seeds", "0"), nil, "--seeds 0 is out of range: 1..10000"},
		{append(sweepArgs, "--executor", "slurm", "--dir", fresh), noSlurm, "--executor slurm needs sbatch on PATH, and it is not"},
		{append(sweepArgs, "--executor", "slurm"), nil, "--executor slurm needs --dir DIR"},
		{append(sweepArgs, "--executor", "pbs"), nil, `--executor "pbs": want local or slurm`},
		{append(sweepArgs, "--no-wait"), nil, "--no-wait is for --executor slurm"},
		{append(base, "--grid", "senders=2,4", "--dir", other), nil, "holds another sweep (its manifest.json differs from this one's); nothing was written"},
		{append(sweepArgs, "--dir", busy), nil, "is not empty and holds no sweep (no manifest.json)"},
		{append(sweepArgs, "--senders", "4"), nil, "--senders and --grid senders both given"},
		{append(base, "--grid", "senders=2,9000"), nil, "--grid senders=9000: 9000 is out of range: 1..8192"},
		{append(base, "--grid", "placement=unpinned,0-99"), nil, "point 1 (placement=0-99): --placement (senders.placement):"},
		{append(base, "--grid", "size=120,many"), nil, `--grid size=many: "many" is not a whole number`},
		{append(base, "--grid", "offered-rate=1M,2M"), nil, "--grid offered-rate does nothing for the udp_stream workload: it is for udp_rate and forward"},
		{append(base, "--grid", "senders=2,4", "--flows", "8"), nil, "--flows (senders.flows) does nothing for the udp_stream workload"},
		{append(sweepArgs, "--param", "x=1"), nil, "--param is for a script, and no SCRIPT.tengo is given"},
		{append(sweepArgs, "--format", "csv"), nil, `--format "csv": want text or json`},
		{append(sweepArgs, "--plot", fresh, "--plot-kinds", "overview"), nil, `--plot-kinds: no sweep plot kind "overview" (kinds: sweep, sweep-pps,`},
		{append(sweepArgs, "--plot-kinds", "sweep"), nil, "--plot-kinds: give --plot DIR too"},
		{append(sweepArgs, "--plot", filepath.Join(tmp, "no", "p")), nil, "its parent " + filepath.Join(tmp, "no") + " does not exist"},
		{append(sweepArgs, "--tc-file", filepath.Join(tmp, "none.tc")), nil, "--tc-file: open " + filepath.Join(tmp, "none.tc") + ": no such file"},
		{append(sweepArgs, "--tc-file", "testdata/norate.tc"), nil, `point 0 (senders=2 profile=6.18): testdata/norate.tc:2: class add dev eth0 parent 1: classid 1:10 htb ceil 1gbit: htb: "rate" is required.`},
		{append(sweepArgs, "a.tengo", "b.tengo"), nil, "sweep: want at most one SCRIPT.tengo, got 2 arguments"},
		{[]string{"sweep", "collect", fresh}, nil, fresh + " holds no sweep (no manifest.json)"},
		{[]string{"sweep", "resubmit", other, "--index", "1"}, noSlurm, "--executor slurm needs sbatch on PATH"},
		{[]string{"sweep", "task", other, "two"}, nil, `sweep task: INDEX "two" is not a whole number`},
		{[]string{"sweep", "task", other, "4"}, nil, "no point 4 (the sweep has 0..3)"},
	} {
		t.Run(strings.Join(tc.args[min(len(base), len(tc.args)-1):], " "), func(t *testing.T) {
			stderr, code := exitOfEnv(t, tc.env, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, stderr, tc.want)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 {
				t.Fatalf("%d lines on stderr, want one: %q", lines, stderr)
			}
		})
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused sweep made its directory")
	}
	after := listing(t, tmp)
	if len(after) != len(before) {
		t.Errorf("files before %d, after %d", len(before), len(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("%s changed", p)
		}
	}
}

// A local sweep gives the same merged bytes for any -j, in memory or in
// a directory (where running it again resumes: nothing to do, the same
// bytes), with the plugins out of process too.
func TestSweepLocal(t *testing.T) {
	one, err := txlab(t, append(sweepArgs, "-j", "1", "--seeds", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	two, err := txlab(t, append(sweepArgs, "-j", "2", "--seeds", "2", "--isolate")...)
	if err != nil {
		t.Fatal(err)
	}
	if one != two {
		t.Fatal("-j 2 --isolate gave another merged report than -j 1")
	}
	dir := filepath.Join(t.TempDir(), "s")
	a, _, err := txlabSplit(t, append(sweepArgs, "--seeds", "2", "--dir", dir)...)
	if err != nil {
		t.Fatal(err)
	}
	plots := filepath.Join(t.TempDir(), "plots")
	b, log, err := txlabSplit(t, append(sweepArgs, "--seeds", "2", "--dir", dir, "--plot", plots)...)
	if err != nil || !strings.Contains(log, "4 of 4 points done already") || !strings.Contains(log, "plot: wrote 5 figures to "+plots) {
		t.Fatal(err, log)
	}
	// txlab plot draws sweep.json as the sweep drew it.
	pps := filepath.Join(t.TempDir(), "pps.svg")
	if out, err := txlab(t, "plot", filepath.Join(dir, "sweep.json"), "-o", pps, "--plot-kinds", "sweep-pps"); err != nil {
		t.Fatalf("plot sweep.json: %v\n%s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(plots, "sweep-pps.svg"))
	if got, _ := os.ReadFile(pps); len(want) == 0 || !bytes.Equal(got, want) {
		t.Error("txlab plot sweep.json drew another sweep-pps than sweep --plot")
	}
	merged, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if a != b || a != string(merged) || !strings.Contains(a, `"reports/3-0-2.json"`) {
		t.Fatal("a resumed sweep, or sweep.json, differs from the first run's report")
	}
	c, _, err := txlabSplit(t, "sweep", "collect", dir, "--format", "json")
	if err != nil || c != a {
		t.Fatalf("collect: %v", err)
	}
	txt, _, err := txlabSplit(t, "sweep", "collect", dir)
	if err != nil || !strings.Contains(txt, "sweep of 4 points; mean ±sample stddev over 2 seeds") ||
		!strings.Contains(txt, "senders   profile") {
		t.Fatalf("collect as text: %v\n%s", err, txt)
	}
}

// fakeSlurm puts an sbatch and a squeue on PATH that run a job array's
// tasks here, one after another in the background, and return its
// point-I task's failure if dir/fail-I exists (once).
func fakeSlurm(t *testing.T) (bin, state string) {
	bin, state = t.TempDir(), t.TempDir()
	sbatch := `#!/bin/sh
state=` + state + `
for a; do
	case $a in
	--array=*) array=${a#--array=} ;;
	--output=*) out=${a#--output=} ;;
	--error=*) err=${a#--error=} ;;
	--chdir=*) chdir=${a#--chdir=} ;;
	-*) ;;
	*) script=$a ;;
	esac
done
n=$(cat $state/next 2>/dev/null || echo 100); echo $((n + 1)) >$state/next
touch $state/running-$n
idx=$(echo "${array%%\%*}" | tr , '\n' | while IFS=- read a b; do seq $a ${b:-$a}; done)
(
	for i in $idx; do
		o=$(echo "$out" | sed "s/%a/$i/"); e=$(echo "$err" | sed "s/%a/$i/")
		if [ -e $state/fail-$i ]; then rm $state/fail-$i; echo "slurmstepd: error: *** task $i CANCELLED ***" >$e; continue; fi
		(cd "$chdir" && SLURM_ARRAY_TASK_ID=$i sh "$script") >$o 2>$e
	done
	rm $state/running-$n
) >/dev/null 2>&1 &
echo $n
`
	squeue := `#!/bin/sh
for a; do case $a in --jobs=*) id=${a#--jobs=} ;; esac; done
[ -e ` + state + `/running-$id ] && echo $id
exit 0
`
	os.WriteFile(filepath.Join(bin, "sbatch"), []byte(sbatch), 0o755)
	os.WriteFile(filepath.Join(bin, "squeue"), []byte(squeue), 0o755)
	return bin, state
}

// The Slurm executor's logic against a fake Slurm: the sweep submits one
// array, a failed task is reported by index with its stderr, resubmitting
// it alone completes the sweep, and the merged report is byte for byte
// the local executor's.
func TestSweepSlurmFake(t *testing.T) {
	bin, state := fakeSlurm(t)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("TXLAB_TEST_MAIN", "args") // the sweep's copy of this test binary is txlab
	dir := filepath.Join(t.TempDir(), "s")
	os.WriteFile(filepath.Join(state, "fail-2"), nil, 0o644)
	_, stderr, err := txlabSplit(t, append(sweepArgs, "--executor", "slurm", "--dir", dir, "--poll", "50ms")...)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 points have no result: run them again with `txlab sweep resubmit "+dir+" --index 2`") {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(stderr, "submitted job 100: 4 points (--array=0-3)") ||
		!strings.Contains(stderr, "point 2 (senders=8 profile=6.18) has no result: logs/2.err: slurmstepd: error: *** task 2 CANCELLED ***") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep.json")); err == nil {
		t.Fatal("an incomplete sweep wrote its merged report")
	}
	if jobs, _ := os.ReadFile(filepath.Join(dir, "jobs")); string(jobs) != "100 0-3%4\n" {
		t.Fatalf("jobs file %q", jobs)
	}
	if _, err := txlab(t, "sweep", "resubmit", dir, "--index", "1"); err == nil || !strings.Contains(err.Error(), "point 1 is done") {
		t.Fatalf("resubmitting a done point: %v", err)
	}
	out, stderr, err := txlabSplit(t, "sweep", "resubmit", dir, "--index", "2", "--format", "json", "--poll", "50ms")
	if err != nil || !strings.Contains(stderr, "submitted job 101: 1 points (--array=2)") {
		t.Fatalf("resubmit: %v\n%s", err, stderr)
	}
	local, _, err := txlabSplit(t, append(sweepArgs, "--dir", filepath.Join(t.TempDir(), "l"))...)
	if err != nil {
		t.Fatal(err)
	}
	if out != local {
		t.Fatal("the Slurm executor's merged report differs from the local executor's")
	}
	// Collecting again changes nothing.
	again, _, err := txlabSplit(t, "sweep", "collect", dir, "--format", "json")
	if err != nil || again != out {
		t.Fatalf("collect again: %v", err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*"))
	sort.Strings(logs)
	if len(logs) != 8 {
		t.Errorf("logs %v, want an .out and an .err per point", logs)
	}
}

// A sweep's run reports name the script as txlab run's do, so that
// `txlab plot reports/I-V-S.json` titles them by it.
func TestSweepReportsNameScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if out, err := txlab(t, "sweep", "hello", "--quick", "--grid", "senders=2", "--dir", dir, "--no-progress", "--format", "json"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "reports", "*.json"))
	if len(files) == 0 {
		t.Fatal("no run report in the sweep directory")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), `"script": "scripts/hello.tengo"`) {
			t.Errorf("%s does not name its script", f)
		}
	}
}
