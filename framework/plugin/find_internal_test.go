package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPluginFilesBounded: what hashes a plugin binary (Locate for
// --plugin and `plugin test PATH`, the checksum check before a start)
// refuses a FIFO (the open would block), a device (/dev/zero never ends)
// and a file over MaxPluginSize, naming what it is, before it opens or
// hashes it; Discover marks such a file in the directory refused. Each
// call runs under a deadline, so one that blocks fails, not stalls.
func TestPluginFilesBounded(t *testing.T) {
	dir := t.TempDir()
	ff := filepath.Join(dir, QdiscPrefix+"ff")
	if _, err := exec.LookPath("mkfifo"); err != nil {
		t.Skip("no mkfifo")
	}
	if out, err := exec.Command("mkfifo", ff).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v %s", err, out)
	}
	z := filepath.Join(dir, QdiscPrefix+"z")
	if err := os.Symlink("/dev/zero", z); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, QdiscPrefix+"big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(50 << 30); err != nil { // sparse: nothing written
		t.Skipf("no sparse 50 GB file here: %v", err)
	}
	f.Close()
	within := func(what string, fn func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still running after 10s", what)
			return nil
		}
	}
	for _, tc := range []struct{ path, want string }{
		{ff, "a named pipe, not a file"},
		{z, "a device, not a file"},
		{big, "53687091200 bytes, more than the 1073741824 a plugin may be"},
	} {
		err := within("Locate "+tc.path, func() error { _, err := Locate(tc.path); return err })
		if want := "plugin " + tc.path + ": " + tc.want; err == nil || err.Error() != want {
			t.Errorf("Locate(%s) = %v, want %q", tc.path, err, want)
		}
		err = within("runner "+tc.path, func() error {
			_, err := newProcRunner(tc.path, make([]byte, 32)).runnerFunc(nil, exec.Command("true"), "")
			return err
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("the checksum check of %s = %v, want %q", tc.path, err, tc.want)
		}
	}
	var found []Found
	if err := within("Discover", func() (err error) { found, err = Discover(Options{Dir: dir}); return err }); err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 {
		t.Fatalf("Discover found %d plugins, want 3", len(found))
	}
	for _, f := range found {
		if f.SumErr == nil || !strings.Contains(f.SumErr.Error(), "(in --plugin-dir "+dir+")") {
			t.Errorf("Discover: %s: SumErr %v, want it refused", f.Path, f.SumErr)
		}
	}
}
