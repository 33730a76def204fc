package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/plugin"
)

// mkfifo makes a named pipe at path, or skips the test where there is
// no mkfifo.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("mkfifo"); err != nil {
		t.Skip("no mkfifo")
	}
	if out, err := exec.Command("mkfifo", path).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v %s", err, out)
	}
}

// sparse makes a file of size bytes with nothing written (mode perm).
func sparse(t *testing.T, path string, size int64, perm os.FileMode) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, perm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", size, err)
	}
}

// TestInputFilesRefused: a script, a --plugin, a `plugin test` PATH or a
// --plugin-dir plugin that is not a regular file (a FIFO, which blocked
// the open forever; /dev/zero, hashed forever) or is too big to hash
// (a sparse file over plugin.MaxPluginSize) is refused in one line
// naming the flag and the file, exit 1, before it is opened. Each runs
// as a process under a deadline, so one that hangs fails, not stalls.
func TestInputFilesRefused(t *testing.T) {
	dir := t.TempDir()
	ff := filepath.Join(dir, "ff.tengo")
	mkfifo(t, ff)
	pff := filepath.Join(dir, "txlab-qdisc-ff")
	mkfifo(t, pff)
	if err := os.Chmod(pff, 0o755); err != nil {
		t.Fatal(err)
	}
	pz := filepath.Join(dir, "txlab-qdisc-z")
	if err := os.Symlink("/dev/zero", pz); err != nil {
		t.Fatal(err)
	}
	pbig := filepath.Join(dir, "txlab-qdisc-big")
	sparse(t, pbig, plugin.MaxPluginSize+1, 0o755)
	// A plugin directory whose manifest vouches for a FIFO and for
	// /dev/zero: without the Stat, the checksum check opens and hashes
	// them.
	pd := filepath.Join(dir, "pd")
	if err := os.Mkdir(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(pd, "txlab-qdisc-ff"))
	if err := os.Symlink("/dev/zero", filepath.Join(pd, "txlab-qdisc-z")); err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	if err := os.WriteFile(filepath.Join(pd, plugin.Manifest), []byte(sum+"  txlab-qdisc-ff\n"+sum+"  txlab-qdisc-z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) []string { return append(append([]string(nil), quick...), extra...) }
	big := fmt.Sprintf("%d bytes, more than the %d a plugin may be", plugin.MaxPluginSize+1, plugin.MaxPluginSize)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", ff}, "txlab: " + ff + ": a named pipe, not a script file"},
		{[]string{"check", "/dev/zero"}, "txlab: /dev/zero: a device, not a script file"},
		{[]string{"check", dir}, "txlab: " + dir + ": a directory, not a script file"},
		{run(ff), "txlab: " + ff + ": a named pipe, not a script file"},
		{[]string{"sweep", ff, "--grid", "size=64,120", "--no-progress"}, "txlab: " + ff + ": a named pipe, not a script file"},
		{run("--plugin", pff, "--qdisc", "ff"), "txlab: --plugin " + pff + ": a named pipe, not a file"},
		{run("--tc-file", ff), "txlab: --tc-file " + ff + ": a named pipe, not a file"},
		{run("--plugin", pz, "--qdisc", "z"), "txlab: --plugin " + pz + ": a device, not a file"},
		{run("--plugin", pbig, "--qdisc", "big"), "txlab: --plugin " + pbig + ": " + big},
		{[]string{"plugin", "test", pff}, "txlab: plugin test: " + pff + ": a named pipe, not a file"},
		{[]string{"plugin", "test", pz}, "txlab: plugin test: " + pz + ": a device, not a file"},
		{[]string{"plugin", "test", pbig}, "txlab: plugin test: " + pbig + ": " + big},
		{run("--plugin-dir", pd, "--qdisc", "ff"), "a named pipe, not a file (in --plugin-dir " + pd + ")"},
		{run("--plugin-dir", pd, "--qdisc", "z"), "a device, not a file (in --plugin-dir " + pd + ")"},
		{[]string{"plugin", "test", "z", "--plugin-dir", pd}, "a device, not a file (in --plugin-dir " + pd + ")"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stderr, code := exitWithin(t, 20*time.Second, tc.args...)
			line := strings.TrimSpace(stderr)
			if code != 1 || !strings.Contains(line, tc.want) || strings.Contains(line, "\n") {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line with %q", code, trunc([]byte(stderr)), tc.want)
			}
		})
	}
}

// TestReadInputFile: readInputFile (--tc-file's reader) refuses what is
// not a regular file, or is over the bound, before reading it, in one
// line naming the flag and the file, and reads at most the bound. It
// runs under a deadline: a FIFO opened would block.
func TestReadInputFile(t *testing.T) {
	dir := t.TempDir()
	ff := filepath.Join(dir, "ff")
	mkfifo(t, ff)
	ok := filepath.Join(dir, "ok.tc")
	if err := os.WriteFile(ok, []byte("qdisc add dev eth0 root pfifo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.tc")
	sparse(t, big, 1<<20+1, 0o644)
	for _, tc := range []struct{ path, want string }{
		{ff, "--tc-file " + ff + ": a named pipe, not a file"},
		{"/dev/zero", "--tc-file /dev/zero: a device, not a file"},
		{dir, "--tc-file " + dir + ": a directory, not a file"},
		{big, fmt.Sprintf("--tc-file %s: %d bytes, more than the %d allowed", big, 1<<20+1, 1<<20)},
		{filepath.Join(dir, "none"), "--tc-file: open " + filepath.Join(dir, "none") + ": no such file or directory"},
		{ok, ""},
	} {
		done := make(chan error, 1)
		go func() {
			b, err := readInputFile("--tc-file", tc.path, 1<<20)
			if err == nil && string(b) != "qdisc add dev eth0 root pfifo\n" {
				err = fmt.Errorf("read %q", b)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
				t.Errorf("readInputFile(%s) = %v, want %q", tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("readInputFile(%s) still reading after 10s", tc.path)
		}
	}
}
