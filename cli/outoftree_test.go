package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The out-of-tree example builds as an author outside the repository
// builds it (its own module, a replace pointing at a txlab checkout,
// go mod tidy, go build) and passes txlab plugin test.
func TestOutOfTreePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "shaper.go"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", "outoftree", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "txlab-qdisc-shaper")
	for _, args := range [][]string{
		{"mod", "edit", "-replace", "github.com/txlab/txlab=" + root},
		{"mod", "tidy"},
		{"build", "-o", bin, "."},
	} {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := txlab(t, "plugin", "test", bin, "--args", "rate 100mbit burst 16kb limit 64kb")
	if err != nil || !strings.Contains(out, "PASS: 6 checks (1 skipped)") {
		t.Fatalf("plugin test of the out-of-tree plugin: %v\n%s", err, out)
	}
	// docs/plugins.md's run with it (scaled to 2 ms).
	out, err = txlab(t, "run", "--plugin", bin, "--qdisc", "shaper rate 100mbit", "--sockets", "1", "--cores", "4", "--smt", "1", "--queues", "4", "--senders", "2",
		"--duration", "2ms", "--warmup", "1ms", "--no-progress")
	if err != nil {
		t.Fatalf("run with the out-of-tree plugin: %v\n%s", err, out)
	}
}
