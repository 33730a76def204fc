package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/plugin/plugintest"
)

// The test binary is also the txlab command (TXLAB_TEST_MAIN=1, to check
// exit codes, with the arguments in TXLAB_TEST_ARGS; TXLAB_TEST_MAIN=args
// with its own arguments, as a sweep's copy run by a Slurm task is) and a
// plugin serving the built-ins plus plugintest's qdiscs.
func TestMain(m *testing.M) {
	plugintest.ServeIfPlugin()
	switch os.Getenv("TXLAB_TEST_MAIN") {
	case "1":
		os.Args = append([]string{"txlab"}, strings.Split(os.Getenv("TXLAB_TEST_ARGS"), "\x1f")...)
		main()
		os.Exit(0)
	case "args":
		main()
		os.Exit(0)
	}
	// Nothing the tests start may survive them: plugins, their
	// grandchildren, shared-memory files.
	os.Exit(plugintest.RunChecked(m))
}

// link makes dir/txlab-qdisc-KIND, a link to this test binary.
func link(t *testing.T, dir, kind string) string {
	return plugintest.Link(t, dir, plugin.QdiscPrefix, kind)
}

// exitOf runs the real command in a process: stderr and the exit code.
func exitOf(t *testing.T, args ...string) (string, int) {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f"))
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

func TestRunIsolateSameJSON(t *testing.T) {
	for _, extra := range [][]string{
		{"--qdisc", "mq fq_codel"},
		{"--qdisc", "mq codel target 500us interval 1ms"},
		// The forward workload: the driver's RX side (RxInfo) crosses
		// the plugin boundary at init; its NAPI polls are one call each.
		{"--qdisc", "cake besteffort", "--workload", "forward", "--driver", "i40e", "--queues", "4", "--rate", "25Gbit",
			"--offered-rate", "21M", "--size", "22", "--arrival", "poisson"},
	} {
		args := append(append(append([]string{}, quickFor(extra)...), "--format", "json"), extra...)
		in, err := txlab(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := txlab(t, append(args, "--isolate")...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stripWall(t, in), stripWall(t, out)) {
			t.Fatalf("--isolate changed the report (%v)", extra)
		}
	}
}

func TestPluginListAndTest(t *testing.T) {
	dir := t.TempDir()
	p := link(t, dir, "test_fifo")
	out, err := txlab(t, "plugin", "list", "--plugin", p)
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"fq_codel", "built-in", "ice", "test_fifo", p} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin list lacks %q:\n%s", want, out)
		}
	}
	out, err = txlab(t, "plugin", "test", p, "--args", "limit 40", "--limit", "40")
	if err != nil || !strings.Contains(out, "PASS: 7 checks") {
		t.Fatalf("plugin test of a conforming plugin: %v\n%s", err, out)
	}
	out, err = txlab(t, "plugin", "test", "fq_codel", "--args", "limit 100", "--limit", "100")
	if err != nil || !strings.Contains(out, "PASS") {
		t.Fatalf("plugin test of a built-in: %v\n%s", err, out)
	}
	out, err = txlab(t, "plugin", "test", "htb", "--class", "parent 1: classid 1:1 htb rate 100mbit", "--class", "parent 1:1 classid 1:10 htb rate 50mbit ceil 100mbit")
	if err != nil || !strings.Contains(out, "PASS") {
		t.Fatalf("plugin test of a classful built-in: %v\n%s", err, out)
	}
	// Out of process, htb's leaves are the suite's: netem duplicating
	// (its clones enqueued at htb, the root) and tbf shaping.
	out, err = txlab(t, "plugin", "test", "htb", "--args", "default 20", "--class", "parent 1: classid 1:1 htb rate 200mbit",
		"--class", "parent 1:1 classid 1:2 htb rate 100mbit ceil 200mbit", "--class", "parent 1:1 classid 1:20 htb rate 100mbit ceil 200mbit",
		"--leaf", "parent 1:2 handle 2: netem delay 1ms duplicate 30%", "--leaf", "parent 1:20 handle 20: tbf rate 50mbit burst 20k limit 100k")
	if err != nil || !strings.Contains(out, "PASS") {
		t.Fatalf("plugin test of htb with netem and tbf leaves: %v\n%s", err, out)
	}
	out, err = txlab(t, "plugin", "test", "ice")
	if err != nil || !strings.Contains(out, "PASS: 2 checks") {
		t.Fatalf("plugin test of a built-in driver: %v\n%s", err, out)
	}
}

// A plugin that breaks the contract fails the suite with a readable
// report and a non-zero exit.
func TestPluginTestFails(t *testing.T) {
	p := link(t, t.TempDir(), "test_leaky")
	stderr, code := exitOf(t, "plugin", "test", p)
	if line := strings.TrimSpace(stderr); code != 1 || strings.Contains(line, "\n") ||
		!strings.HasPrefix(line, "txlab: plugin test: test_leaky failed 1 of ") ||
		!strings.Contains(line, "(qlen and backlog agree with contents; 3 not run): qlen and backlog agree with contents: after enqueue: ") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// A shaper that holds packets, returns none and arms no watchdog:
	// the suite no longer moves time for it.
	p = link(t, t.TempDir(), "test_stalled")
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join([]string{"plugin", "test", p}, "\x1f"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "FAIL  dequeue progresses or arms the watchdog") ||
		!strings.Contains(string(out), "no watchdog is armed") {
		t.Fatalf("plugin test of a qdisc that forgets its watchdog: %v\n%s", err, out)
	}
	// Each failure under the check it belongs to: the stall fails the
	// progress check only; the checks it stopped say so.
	for _, tc := range []struct{ kind, fails, stopped string }{
		{"test_stalled", "dequeue progresses or arms the watchdog", "accounting identity"},
		{"test_leaky", "qlen and backlog agree with contents", "accounting identity"},
	} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join([]string{"plugin", "test", link(t, t.TempDir(), tc.kind)}, "\x1f"))
		out, err := cmd.CombinedOutput()
		if err == nil || strings.Count(string(out), "FAIL") != 1 || !strings.Contains(string(out), "FAIL  "+tc.fails+":") ||
			!strings.Contains(string(out), "--    "+tc.stopped+": not run to its end: stopped by the failure of \""+tc.fails+"\"") ||
			!strings.Contains(string(out), "skip  limit respected") {
			t.Errorf("plugin test %s: %v\n%s", tc.kind, err, out)
		}
	}
}

// Every plugin test flag is bounded: a bad value is one line naming the
// flag and its range, exit 1, before anything starts.
func TestPluginTestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--packets", "-5"}, "--packets -5: want 1 to 1000000"},
		{[]string{"--packets", "0"}, "--packets 0: want 1 to 1000000"},
		{[]string{"--packets", "1000001"}, "--packets 1000001: want 1 to 1000000"},
		{[]string{"--limit", "-1"}, "--limit -1: want 0 (not checked) to 100000"},
		{[]string{"--limit", "100001"}, "--limit 100001: want 0 (not checked) to 100000"},
		{[]string{"--plugin-timeout", "0s"}, "--plugin-timeout 0s is out of range: 1ns..1h0m0s"},
		{[]string{"--plugin-timeout", "2h"}, "--plugin-timeout 2h0m0s is out of range: 1ns..1h0m0s"},
		{[]string{"--plugin-transport", "udp"}, `--plugin-transport "udp": want shm or grpc`},
		{[]string{"--plugin-log", "loud"}, `--plugin-log "loud": want trace, debug, info, warn, error or off`},
		{[]string{"--plugin-override", "nosuch"}, `--plugin-override "nosuch": no built-in qdisc or driver has that name`},
		{[]string{"--args", "limit -3"}, `does not init with "limit -3": pfifo: Illegal value for "limit": "-3" is not a size: it is negative`},
		{[]string{"--args", "limit abc"}, `does not init with "limit abc": pfifo: Illegal value for "limit": "abc" is not a size`},
		{[]string{"--class", "rate 1mbit"}, `--class "rate 1mbit": no "classid"`},
		{[]string{"--class", "classid 1:1 htb rate 1mbit"}, `the class kind is "htb", not "pfifo"`},
		{[]string{"--class", "classid 1:1 pfifo"}, `does not init with "" and classes ["classid 1:1 pfifo"]`},
		{[]string{"--leaf", "parent 1:1 netem"}, `does not init with "" and leaves ["parent 1:1 netem"]`},
	} {
		stderr, code := exitOf(t, append([]string{"plugin", "test", "pfifo"}, tc.args...)...)
		line := strings.TrimSpace(stderr)
		// On stderr, as main prints every error: "txlab: " and the reason.
		if code != 1 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "txlab: ") || !strings.Contains(line, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// A plugin that crashes, panics, hangs or hands back a packet twice or
// one it never got, mid-run: one clear line naming it and what it did
// (for a panic, where), exit 1; a panic's first frames after that line.
func TestRunBadPluginExit(t *testing.T) {
	for _, tc := range []struct{ kind, what string }{
		{"test_crash", "exited: panic: test_crash: crashing on purpose (at "},
		{"test_panic", "panic: test_panic: a bug in the plugin (at "},
		{"test_hang", "no answer within 1s: the plugin hangs"},
		{"test_twice", "twice"},
		{"test_forge", "which it was never handed"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			p := link(t, t.TempDir(), tc.kind)
			timeout := "60s" // a loaded machine must not turn a misbehaving plugin into a hanging one
			if tc.kind == "test_hang" {
				timeout = "1s"
			}
			stderr, code := exitOf(t, append(append([]string{}, quick...), "--plugin", p, "--qdisc", "mq "+tc.kind,
				"--plugin-timeout", timeout)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			// The error line, then (a panic) its stack.
			last, stack, _ := strings.Cut(stderr[strings.LastIndex(stderr, "txlab: "):], "\n")
			for _, w := range []string{"txlab:", "plugin qdisc " + tc.kind, "dequeue", tc.what} {
				if !strings.Contains(last, w) {
					t.Errorf("error line %q lacks %q", last, w)
				}
			}
			panicked := strings.Contains(tc.what, "panic")
			if panicked != strings.HasPrefix(stack, "stack of plugin qdisc "+tc.kind) ||
				panicked && !strings.Contains(stack, "plugintest.go:") {
				t.Errorf("after the error line: %q", stack)
			}
		})
	}
}

// plugin add records the checksum; a tampered plugin is refused before
// it starts.
func TestPluginDirChecksum(t *testing.T) {
	src := link(t, t.TempDir(), "test_fifo")
	dir := t.TempDir()
	if out, err := txlab(t, "plugin", "add", src, "--dir", dir); err != nil {
		t.Fatal(err, out)
	}
	run := append(append([]string{}, quick...), "--plugin-dir", dir, "--qdisc", "mq test_fifo")
	if out, err := txlab(t, run...); err != nil {
		t.Fatalf("run with the added plugin: %v\n%s", err, out)
	}
	// Tamper: the manifest no longer matches the binary.
	sum := filepath.Join(dir, plugin.Manifest)
	b, _ := os.ReadFile(sum)
	bad := strings.Repeat("0", 64) + string(b[64:])
	if err := os.WriteFile(sum, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, code := exitOf(t, run...)
	if code != 1 || !strings.Contains(stderr, "checksums did not match") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// A script names a plugin's kind like a built-in's; without the plugin
// it is an unknown kind at the script line.
func TestScriptWithPlugin(t *testing.T) {
	p := link(t, t.TempDir(), "test_fifo")
	script := writeScript(t, `txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 2})
txlab.qdisc("mq test_fifo limit 30")
txlab.senders({kind: "udp_stream", count: 4, size: 120})
txlab.duration("2ms")
txlab.warmup("500us")
`)
	if out, err := txlab(t, "check", script); err == nil || !strings.Contains(err.Error(), `unknown qdisc "test_fifo"`) {
		t.Fatalf("check without the plugin: %v\n%s", err, out)
	}
	if out, err := txlab(t, "check", script, "--plugin", p); err != nil {
		t.Fatalf("check with the plugin: %v\n%s", err, out)
	}
	out, err := txlab(t, "run", script, "--plugin", p, "--no-progress")
	if err != nil || !strings.Contains(out, "mq test_fifo limit 30") {
		t.Fatalf("run with the plugin: %v\n%s", err, out)
	}
}

// children lists the pids of pid's child processes.
func children(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			var c int
			fmt.Sscan(w, &c)
			out = append(out, c)
		}
	}
	return out
}

// SIGINT during an isolated run stops the plugin processes too.
func TestSignalStopsPlugins(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc")
	}
	self, _ := os.Executable()
	args := append(append([]string{}, quick...), "--isolate", "--duration", "10s", "--cores", "16")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var kids []int
	for start := time.Now(); len(kids) == 0 && time.Since(start) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
		kids = children(t, cmd.Process.Pid)
	}
	if len(kids) == 0 {
		cmd.Process.Kill()
		t.Fatal("no plugin process started")
	}
	time.Sleep(200 * time.Millisecond) // inside the run
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", err)
	}
	for _, k := range kids {
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if err := syscall.Kill(k, 0); err != nil {
				break // gone
			}
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", k)); strings.Contains(string(b), ") Z ") {
				break // a zombie: dead, waiting for init to reap it
			}
			if time.Since(start) > 3*time.Second {
				syscall.Kill(k, syscall.SIGKILL)
				t.Fatalf("plugin process %d still running after SIGINT", k)
			}
		}
	}
}

// A binary that is no plugin, or a path with the wrong name: one line.
func TestNotAPlugin(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, plugin.QdiscPrefix+"bogus")
	if err := os.WriteFile(bogus, []byte("#!/bin/sh\necho not a plugin\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{bogus, "Unrecognized remote plugin message: not a plugin"},
		{filepath.Join(dir, "bogus"), "name it txlab-qdisc-KIND"},
		{filepath.Join(dir, plugin.QdiscPrefix+"missing"), "no such file"},
	} {
		_, err := txlab(t, append(append([]string{}, quick...), "--plugin", tc.path, "--qdisc", "mq bogus")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", tc.path, err, tc.want)
		}
	}
}

// A host killed with SIGKILL runs no cleanup at all: its plugins (the
// built-ins served for --isolate, and a plugin from --plugin) and what
// they forked (test_fork's grandchild, which also holds the host's
// stdout and stderr) must still all be gone within a few seconds.
func TestSigkillLeavesNoPlugin(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	pids := t.TempDir()
	p := link(t, t.TempDir(), "test_fork")
	self, _ := os.Executable()
	args := append(append([]string{}, quick...), "--isolate", "--plugin", p, "--qdisc", "mq test_fork", "--duration", "30s")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f"), plugintest.EnvPidDir+"="+pids)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Both plugins up, and the grandchild forked.
	for start := time.Now(); len(plugintest.Pids(pids, "plugin")) < 2 || len(plugintest.Pids(pids, "sleeper")) < 1; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("plugins %v, grandchildren %v", plugintest.Pids(pids, "plugin"), plugintest.Pids(pids, "sleeper"))
		}
	}
	time.Sleep(200 * time.Millisecond) // inside the run
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := plugintest.Leftovers(pids, 3*time.Second, nil); err != nil {
		t.Fatal(err)
	}
}

// countWriter counts what is written to it and keeps the last line.
type countWriter struct {
	n    int
	tail []byte
}

func (c *countWriter) Write(b []byte) (int, error) {
	c.n += len(b)
	c.tail = append(c.tail, b...)
	if len(c.tail) > 4096 {
		c.tail = c.tail[len(c.tail)-2048:]
	}
	return len(b), nil
}

// A plugin flooding stdout, stderr and raw fd 2 (16 MB each, and a
// 256 KB line) does not grow the host: its peak RSS stays within 32 MB
// of the same run's without the flood, and the run ends as usual.
func TestFloodBoundedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS in KB from getrusage is Linux's")
	}
	p := link(t, t.TempDir(), "test_flood")
	self, _ := os.Executable()
	rss := map[string]int64{}
	for _, mb := range []string{"0", "16"} {
		args := append(append([]string{}, quick...), "--plugin", p, "--qdisc", "mq test_flood", "--format", "json")
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f"), plugintest.EnvFloodMB+"="+mb)
		var stdout bytes.Buffer
		stderr := &countWriter{}
		cmd.Stdout, cmd.Stderr = &stdout, stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("flood %s MB: %v: %s", mb, err, stderr.tail)
		}
		if !strings.Contains(stdout.String(), `"accounting_ok": true`) {
			t.Fatalf("flood %s MB: accounting not OK", mb)
		}
		if mb != "0" && stderr.n < 32<<20 {
			t.Fatalf("flood %s MB: only %d bytes reached the host's stderr", mb, stderr.n)
		}
		rss[mb] = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KB on Linux
	}
	if rss["16"] > rss["0"]+32<<10 {
		t.Fatalf("peak RSS %d KB with the flood, %d KB without", rss["16"], rss["0"])
	}
	t.Logf("peak RSS %d KB with a 48 MB flood, %d KB without", rss["16"], rss["0"])
}

// A plugin directory that does not exist holds no plugins: plugin list
// shows the built-ins, says so, and succeeds.
func TestPluginListMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	out, err := txlab(t, "plugin", "list", "--plugin-dir", dir)
	if err != nil {
		t.Fatalf("plugin list --plugin-dir %s: %v\n%s", dir, err, out)
	}
	if !strings.Contains(out, dir+" does not exist: no plugins from it") || !regexp.MustCompile(`qdisc +fq_codel +\S+ +built-in`).MatchString(out) {
		t.Errorf("output:\n%s", out)
	}
	if strings.Contains(out, "REFUSED") || strings.Contains(out, dir+"/") {
		t.Errorf("a plugin listed from a missing directory:\n%s", out)
	}
}
