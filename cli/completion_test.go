package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlab/txlab/scripts"
)

// The completion scripts in a real shell: bash completes commands, a
// command's flags and the shipped scripts' names, by asking the binary
// (this test binary, linked as txlab, runs main).
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "txlab")); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		script := `source <(txlab completion bash) || exit 1
COMP_WORDS=(` + strings.Join(words, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _txlab_complete; echo "${COMPREPLY[*]}"`
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "TXLAB_TEST_MAIN=args")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The shipped scripts whose names start with "e2", as the embedded
	// directory has them (a new script joins the expected list).
	e2s, err := fs.Glob(scripts.FS, "e2*.tengo")
	if err != nil || len(e2s) < 2 {
		t.Fatalf("shipped e2 scripts: %v %v", e2s, err)
	}
	for i, f := range e2s {
		e2s[i] = strings.TrimSuffix(f, ".tengo")
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"txlab", "ru"}, "run"},
		{[]string{"txlab", "c"}, "check completion"},
		{[]string{"txlab", "run", "--dur"}, "--duration"},
		{[]string{"txlab", "run", "--fle"}, "--flent"},
		{[]string{"txlab", "run", "e2"}, strings.Join(e2s, " ")},
		{[]string{"txlab", "check", "ha"}, ""}, // no shipped name: the shell's file names
		{[]string{"txlab", "plugin", "l"}, "list"},
	} {
		if got := complete(c.words...); got != c.want {
			t.Errorf("%v: %q, want %q", c.words, got, c.want)
		}
	}
	if _, err := exec.LookPath("zsh"); err == nil {
		out, err := exec.Command("zsh", "-n", "-c", zshCompletion).CombinedOutput()
		if err != nil {
			t.Errorf("zsh -n: %v\n%s", err, out)
		}
	}
}

func TestCompletionErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"completion"}, "completion: want one shell, bash or zsh, got 0 arguments"},
		{[]string{"completion", "fish"}, `completion: unknown shell "fish" (bash or zsh)`},
	} {
		if _, err := txlab(t, c.args...); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	out, err := txlab(t, "completion", "zsh")
	if err != nil || !strings.HasPrefix(out, "#compdef txlab") {
		t.Errorf("completion zsh: %v\n%s", err, out)
	}
}
