package main

// Input files named on the command line: each is checked with Stat
// before it is opened (opening a FIFO waits for a writer; a device never
// ends), and read through a bound.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/txlab/txlab/framework/plugin"
	"github.com/txlab/txlab/internal/regfile"
)

// readInputFile reads the file path that flag names (e.g. "--tc-file"),
// at most max bytes of it: only a regular file (symlinks followed),
// checked with Stat before the open and again on what was opened, and
// read through an io.LimitReader. Errors are one line naming the flag
// and the file: "--tc-file ff: a named pipe, not a file".
func readInputFile(flag, path string, max int64) ([]byte, error) {
	check := func(st fs.FileInfo) error {
		if what := regfile.Kind(st.Mode()); what != "" {
			return fmt.Errorf("%s %s: %s, not a file", flag, path, what)
		}
		if st.Size() > max {
			return fmt.Errorf("%s %s: %d bytes, more than the %d allowed", flag, path, st.Size(), max)
		}
		return nil
	}
	f, err := regfile.Open(path, check)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: %w", flag, err) // the open's: it names the file
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, over, err := regfile.ReadAll(f, max)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if over {
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
