package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Open refuses what check refuses before opening it (a FIFO would block
// the open: the test would hang), leaves a missing name to the open's
// error, and opens what check accepts.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	fifo, file := filepath.Join(dir, "ff"), filepath.Join(dir, "f")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	os.WriteFile(file, []byte("abc"), 0o644)
	regular := func(st fs.FileInfo) error {
		if k := Kind(st.Mode()); k != "" {
			return errors.New(k + ", not a file")
		}
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := Open(fifo, regular); err == nil || err.Error() != "a named pipe, not a file" {
			t.Errorf("a FIFO: %v", err)
		}
		if _, err := Open(dir, regular); err == nil || err.Error() != "a directory, not a file" {
			t.Errorf("a directory: %v", err)
		}
		if _, err := Open(filepath.Join(dir, "none"), regular); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "open ") {
			t.Errorf("a missing file: %v", err)
		}
		f, err := Open(file, regular)
		if err != nil {
			t.Errorf("a regular file: %v", err)
			return
		}
		defer f.Close()
		b, over, err := ReadAll(f, 2)
		if string(b) != "ab" || !over || err != nil {
			t.Errorf("ReadAll(3 bytes, 2) = %q, %v, %v", b, over, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
}
