package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// outFile is a file the user names (-o, --trace-out). A regular file, or
// a new one, is written to a temporary file in the same directory and
// renamed over the name only by Commit, once everything was written: an
// existing file is replaced by a complete one or not at all. Anything
// else (a device such as /dev/stdout or /dev/full, a pipe) is written in
// place. Every write, close and rename error is kept and returned.
type outFile struct {
	path string
	tmp  string // "" when writing in place
	f    *os.File
	err  error
	// staged: Commit only closes the file; its stage renames it.
	staged    bool
	committed bool
}

// createOut opens path for writing as outFile says.
func createOut(path string) (*outFile, error) {
	o := &outFile{path: path}
	st, err := os.Stat(path)
	switch {
	case err == nil && !st.Mode().IsRegular():
		o.f, err = os.OpenFile(path, os.O_WRONLY, 0)
	case err == nil || errors.Is(err, fs.ErrNotExist):
		o.f, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
		if err == nil {
			o.tmp = o.f.Name()
		}
	}
	var pe *fs.PathError
	if err != nil && o.tmp == "" && errors.As(err, &pe) && pe.Path != path {
		// The temporary file's name says nothing to the user: name the
		// directory it was to be made in.
		return nil, fmt.Errorf("%s: cannot create a file in %s: %w", path, filepath.Dir(path), pe.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// Write writes to the file, keeping the first error.
func (o *outFile) Write(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.f.Write(b)
	if err != nil {
		o.err = fmt.Errorf("%s: %w", o.path, err)
	}
	return n, o.err
}

// Commit closes the file and, if everything was written, renames the
// temporary file over the name (a staged file waits for its stage);
// otherwise it removes it and says why.
func (o *outFile) Commit() error {
	if err := o.f.Close(); err != nil && o.err == nil {
		o.err = fmt.Errorf("%s: %w", o.path, err)
	}
	if o.tmp == "" {
		return o.err
	}
	if o.staged {
		if o.err != nil {
			os.Remove(o.tmp)
			o.tmp = ""
		}
		o.committed = o.err == nil
		return o.err
	}
	if o.err == nil {
		// CreateTemp makes the file 0600; a report is as readable as a
		// file os.Create would make.
		if err := os.Chmod(o.tmp, 0o644); err != nil {
			o.err = fmt.Errorf("%s: %w", o.path, err)
		} else if err := os.Rename(o.tmp, o.path); err != nil {
			o.err = fmt.Errorf("%s: %w", o.path, err)
		}
	}
	if o.err != nil {
		os.Remove(o.tmp)
	}
	return o.err
}

// Abort drops what was written: the name keeps what it had.
func (o *outFile) Abort() {
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
		o.tmp = ""
	}
	o.committed = false
}

// stage is the set of files one command writes. Each is written to its
// own temporary file, and finish puts them under their names together,
// after the command knows how it ended: a bad --plot or an unwritable
// --trace-out found after the run then leaves -o as it was.
type stage struct{ files []*outFile }

// create is createOut for a file of the stage (a nil stage: createOut).
func (g *stage) create(path string) (*outFile, error) {
	o, err := createOut(path)
	if err == nil && g != nil {
		o.staged = true
		g.files = append(g.files, o)
	}
	return o, err
}

// How a stage ends.
const (
	stageCommit  = iota // the command succeeded: every file replaces its name
	stageNewOnly        // a failed or stopped run: what it wrote goes only where no file was
	stageAbort          // the command failed on its own output: nothing is written
)

// finish ends the stage as mode says. It returns the names a failed run
// left as they were (stageNewOnly) and the first rename error.
func (g *stage) finish(mode int) (kept []string, err error) {
	if g == nil {
		return nil, nil
	}
	for _, o := range g.files {
		if !o.committed {
			o.Abort() // opened and never finished: the command stopped first
			continue
		}
		if o.tmp == "" {
			continue
		}
		tmp := o.tmp
		o.tmp, o.committed = "", false
		if mode == stageAbort {
			os.Remove(tmp)
			continue
		}
		e := os.Chmod(tmp, 0o644)
		switch {
		case e != nil:
		case mode == stageCommit:
			e = os.Rename(tmp, o.path)
		default:
			// link(2) refuses an existing name: no window in which
			// another file could be replaced.
			if e = os.Link(tmp, o.path); errors.Is(e, fs.ErrExist) {
				kept, e = append(kept, o.path), nil
			}
		}
		os.Remove(tmp)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", o.path, e)
		}
	}
	return kept, err
}

// writeOut writes b to path as outFile does.
func writeOut(path string, b []byte) error {
	o, err := createOut(path)
	if err != nil {
		return err
	}
	_, _ = o.Write(b)
	return o.Commit()
}

// namedFile is a file a command line names, with the flag that names it
// ("the script" for a script's path).
type namedFile struct{ flag, path string }

// checkOutputs refuses outputs that would clobber each other or an
// input: two flags naming one file, or -o naming the script itself.
// Devices (/dev/null, /dev/stdout) may be named more than once.
func checkOutputs(inputs, outputs []namedFile) error {
	type seen struct {
		flag, abs string
		st        os.FileInfo
		input     bool
	}
	var all []seen
	for i, f := range append(append([]namedFile{}, inputs...), outputs...) {
		st, err := os.Stat(f.path)
		if err != nil {
			st = nil
		} else if !st.Mode().IsRegular() {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			abs = filepath.Clean(f.path)
		}
		input := i < len(inputs)
		for _, o := range all {
			if o.abs != abs && (o.st == nil || st == nil || !os.SameFile(o.st, st)) {
				continue
			}
			switch {
			case input: // an input named twice is read twice
			case o.input:
				return fmt.Errorf("%s names %s, which is %s: the output would replace it", f.flag, f.path, o.flag)
			case o.flag == f.flag:
				return fmt.Errorf("%s: two of its files are %s", f.flag, f.path)
			default:
				return fmt.Errorf("%s and %s both name %s: one output would replace the other", o.flag, f.flag, f.path)
			}
		}
		all = append(all, seen{f.flag, abs, st, input})
	}
	return nil
}
