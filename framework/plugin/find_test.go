package plugin_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/framework/plugin/plugintest"
)

// A plugin directory's manifest is read within bounds: a line too long
// (a 100 MB file of one line), a file too large, a manifest that is not
// a file are one line naming the file (and the line), read in bounded
// time and memory.
func TestManifestBounds(t *testing.T) {
	sum := strings.Repeat("ab", 32) + "  txlab-qdisc-x\n"
	for _, tc := range []struct {
		name  string
		make  func(path string) error
		want  string // after the manifest's path
		empty bool   // no error: read as no checksums
	}{
		{"100 MB on one line", func(p string) error { return sparse(p, 100<<20) }, ":1: line longer than 4096 bytes", false},
		{"a long third line", func(p string) error {
			return os.WriteFile(p, []byte(sum+"# ok\n"+strings.Repeat("x", plugin.MaxManifestLine+1)+"\n"), 0o644)
		}, ":3: line longer than 4096 bytes", false},
		{"a line at the bound", func(p string) error {
			return os.WriteFile(p, []byte("#"+strings.Repeat("x", plugin.MaxManifestLine-1)), 0o644)
		}, "", true},
		{"larger than the bound in short lines", func(p string) error {
			return os.WriteFile(p, bytes.Repeat([]byte("# a comment line\n"), plugin.MaxManifestSize/17+10), 0o644)
		}, ": larger than 1048576 bytes (a line per plugin)", false},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }, ": not a regular file (a directory)", false},
		{"a bad line", func(p string) error { return os.WriteFile(p, []byte(sum+"nonsense\n"), 0o644) }, `:2: want "SHA256  FILE"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, plugin.Manifest)
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := plugin.Discover(plugin.Options{Dir: dir})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			switch {
			case tc.empty && err != nil:
				t.Errorf("error %v", err)
			case !tc.empty && (err == nil || err.Error() != path+tc.want):
				t.Errorf("error %v, want %q", err, path+tc.want)
			}
		})
	}
}

// sparse makes path a file of size zero bytes (no line break), without
// writing them.
func sparse(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plugin add takes only a plugin: a file that is not a program, or a
// program that does not answer the handshake for the kind its name says,
// is refused with one line naming it, and the directory is neither made
// nor changed.
func TestAddRefusesNonPlugins(t *testing.T) {
	src := t.TempDir()
	write := func(name, text string, perm os.FileMode) string {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte(text), perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notExec := write("txlab-qdisc-text", "hello, world\n", 0o644)
	text := write("txlab-qdisc-text2", "hello, world\n", 0o755)
	empty := write("txlab-qdisc-empty", "", 0o755)
	script := write("txlab-qdisc-script", "#!/bin/sh\necho not a plugin\n", 0o755)
	dirPlugin := filepath.Join(src, "txlab-qdisc-dir")
	if err := os.Mkdir(dirPlugin, 0o755); err != nil {
		t.Fatal(err)
	}
	misnamed := plugintest.Link(t, src, plugin.QdiscPrefix, "not_served")
	good := plugintest.Link(t, src, plugin.QdiscPrefix, "test_fifo")
	cases := []struct {
		path, want string
	}{
		{notExec, notExec + " is not executable (mode -rw-r--r--): a plugin is a program (chmod +x it if it is one)"},
		{text, text + ` is not a program: it starts with "hell", not an ELF, Mach-O or PE header or "#!"`},
		{empty, empty + ` is not a program: it starts with "", not an ELF, Mach-O or PE header or "#!"`},
		{dirPlugin, dirPlugin + " is not a regular file (a directory): a plugin is a program"},
		{misnamed, "is named for qdisc not_served but serves "},
		{filepath.Join(src, "txlab-qdisc-none"), "no such file or directory"},
	}
	if _, err := exec.LookPath("sh"); err == nil {
		cases = append(cases, struct{ path, want string }{script, "the plugin process exited during start-up"})
	}
	for _, tc := range cases {
		dir := filepath.Join(t.TempDir(), "not", "made")
		_, err := plugin.Add(dir, tc.path, plugin.Options{Log: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", filepath.Base(tc.path), err, tc.want)
		}
		if _, err := os.Stat(filepath.Dir(dir)); err == nil {
			t.Errorf("%s: the plugin directory's parent was made", filepath.Base(tc.path))
		}
	}
	// A plugin is added; a bad manifest stops the next one before it
	// is copied.
	dir := filepath.Join(t.TempDir(), "plugins")
	dst, err := plugin.Add(dir, good, plugin.Options{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if found, err := plugin.Discover(plugin.Options{Dir: dir}); err != nil || len(found) != 1 || found[0].SumErr != nil || found[0].Path != dst {
		t.Fatalf("after add: %+v, %v", found, err)
	}
	manifest := filepath.Join(dir, plugin.Manifest)
	if err := os.WriteFile(manifest, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := plugintest.Link(t, t.TempDir(), plugin.QdiscPrefix, "test_leaky")
	if _, err := plugin.Add(dir, other, plugin.Options{Log: &bytes.Buffer{}}); err == nil || err.Error() != manifest+`:1: want "SHA256  FILE"` {
		t.Errorf("add with a bad manifest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.Base(other))); err == nil {
		t.Error("the plugin was copied though the manifest is bad")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in the directory, want the plugin and the manifest", len(ents))
	}
}
