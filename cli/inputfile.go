package main

// Input files named on the command line: each is checked with Stat
// before it is opened (opening a FIFO waits for a writer; a device never
// ends), and read through a bound.

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/txlab/txlab/framework/plugin"
)

// readInputFile reads the file path that flag names (e.g. "--tc-file"),
// at most max bytes of it: only a regular file (symlinks followed),
// checked with Stat before the open and again on what was opened, and
// read through an io.LimitReader. Errors are one line naming the flag
// and the file: "--tc-file ff: a named pipe, not a file".
func readInputFile(flag, path string, max int64) ([]byte, error) {
	check := func(st fs.FileInfo) error {
		if what := plugin.FileKind(st.Mode()); what != "" {
			return fmt.Errorf("%s %s: %s, not a file", flag, path, what)
		}
		if st.Size() > max {
			return fmt.Errorf("%s %s: %d bytes, more than the %d allowed", flag, path, st.Size(), max)
		}
		return nil
	}
	// A missing file is left to the Open, whose error says so.
	if st, err := os.Stat(path); err == nil {
		if err := check(st); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil { // path may have been replaced since the Stat
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := check(st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s %s: more than %d bytes", flag, path, max)
	}
	return b, nil
}

// checkPluginFile refuses a plugin binary that flag ("" for none) names when it is
// there but is not a regular file of at most plugin.MaxPluginSize bytes,
// before anything opens or hashes it. A missing one is left to
// plugin.Locate, which says so.
func checkPluginFile(flag, path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	if err := plugin.CheckFile(path); err != nil {
		if flag != "" {
			return fmt.Errorf("%s %s: %w", flag, path, err)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
