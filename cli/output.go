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
// temporary file over the name; otherwise it removes it and says why.
func (o *outFile) Commit() error {
	if err := o.f.Close(); err != nil && o.err == nil {
		o.err = fmt.Errorf("%s: %w", o.path, err)
	}
	if o.tmp == "" {
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
	}
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
