package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// outFile is a file the user names (-o, --trace-out). A regular file, or
// a new one, is written to a temporary file in the same directory and
// renamed over the name only by Commit, once everything was written: an
// existing file is replaced by a complete one or not at all. Anything
// else (a device such as /dev/stdout or /dev/full, a pipe) is written in
// place. Every write, close and rename error is kept and returned.
type outFile struct {
	path   string // as the user named it, for messages
	target string // the file renamed over: path with its links followed
	tmp    string // "" when writing in place
	f      *os.File
	err    error
	// staged: Commit only closes the file; its stage renames it.
	staged    bool
	committed bool
	// note is the line that says what the file holds, printed by the
	// stage once the file is under its name (never for a file kept out).
	note string
}

// say prints what o holds now, or leaves it to o's stage.
func (o *outFile) say(w io.Writer, line string) {
	if o.staged {
		o.note = line
		return
	}
	fmt.Fprintln(w, line)
}

// createOut opens path for writing as outFile says. A symbolic link is
// followed: the file it names is replaced, not the link. Names under
// /dev and /proc (/dev/stdout, /proc/self/fd/1) are written in place,
// whatever they lead to: a temporary file there would replace the
// system's own link, or cannot be made.
func createOut(path string) (*outFile, error) {
	o := &outFile{path: path, target: path}
	if lst, err := os.Lstat(path); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("%s: a symbolic link to nothing: %w", path, err)
		}
		o.target = t
	}
	st, err := os.Stat(o.target)
	switch {
	case err == nil && (!st.Mode().IsRegular() || systemPath(path) || systemPath(o.target)):
		flags := os.O_WRONLY
		if st.Mode().IsRegular() {
			flags |= os.O_TRUNC // a shell's "> file" behind /dev/stdout
		}
		o.f, err = os.OpenFile(o.target, flags, 0)
	case err == nil || errors.Is(err, fs.ErrNotExist):
		o.f, err = os.CreateTemp(filepath.Dir(o.target), "."+filepath.Base(o.target)+".*.tmp")
		if err == nil {
			o.tmp = o.f.Name()
		}
	}
	var pe *fs.PathError
	if err != nil && o.tmp == "" && errors.As(err, &pe) && pe.Path != o.target {
		// The temporary file's name says nothing to the user: name the
		// directory it was to be made in.
		return nil, fmt.Errorf("%s: cannot create a file in %s: %w", path, filepath.Dir(o.target), pe.Err)
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
		} else if err := os.Rename(o.tmp, o.target); err != nil {
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

// finish ends the stage as mode says, printing on w what each file
// put under its name holds. It returns the names a failed run left as
// they were (stageNewOnly) and the first rename error.
func (g *stage) finish(mode int, w io.Writer) (kept []string, err error) {
	if g == nil {
		return nil, nil
	}
	for _, o := range g.files {
		if !o.committed {
			o.Abort() // opened and never finished: the command stopped first
			continue
		}
		if o.tmp == "" {
			if o.note != "" && mode != stageAbort {
				fmt.Fprintln(w, o.note) // written in place: it holds what it says
			}
			continue
		}
		tmp := o.tmp
		o.tmp, o.committed = "", false
		if mode == stageAbort {
			os.Remove(tmp)
			continue
		}
		e := os.Chmod(tmp, 0o644)
		wrote := false
		switch {
		case e != nil:
		case mode == stageCommit:
			e = os.Rename(tmp, o.target)
			wrote = e == nil
		default:
			// link(2) refuses an existing name: no window in which
			// another file could be replaced.
			e = os.Link(tmp, o.target)
			wrote = e == nil
			if errors.Is(e, fs.ErrExist) {
				kept, e = append(kept, o.path), nil
			}
		}
		os.Remove(tmp)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", o.path, e)
		}
		if wrote && o.note != "" {
			fmt.Fprintln(w, o.note)
		}
	}
	return kept, err
}

// systemPath reports whether path is in /dev or /proc, where txlab
// makes no file of its own.
func systemPath(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	return abs == "/dev" || abs == "/proc" || strings.HasPrefix(abs, "/dev/") || strings.HasPrefix(abs, "/proc/")
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
// ("the script" for a script's path); dir: a directory the command reads
// from (--plugin-dir), in which no output may go.
type namedFile struct {
	flag, path string
	dir        bool
}

// canonical is path with every symbolic link followed, of the path
// itself when it exists, else of its directory.
func canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(d, filepath.Base(abs))
	}
	return abs
}

// checkOutputs refuses outputs that would clobber each other or an
// input: two flags naming one file (also through links), -o naming the
// script, a plugin or a file of the plugin directory. Devices and
// /proc's files (/dev/null, /dev/stdout) may be named more than once.
func checkOutputs(inputs, outputs []namedFile) error {
	type seen struct {
		namedFile
		canon string
		input bool
	}
	var all []seen
	for i, f := range append(append([]namedFile{}, inputs...), outputs...) {
		if st, err := os.Stat(f.path); err == nil && !st.Mode().IsRegular() && !f.dir || systemPath(f.path) {
			continue
		}
		c := canonical(f.path)
		input := i < len(inputs)
		for _, o := range all {
			inDir := o.dir && strings.HasPrefix(c, o.canon+string(filepath.Separator))
			if o.canon != c && !inDir {
				continue
			}
			switch {
			case input: // an input named twice is read twice
			case o.input && inDir:
				return fmt.Errorf("%s names %s, in %s %s: the output would replace a file txlab reads", f.flag, f.path, o.flag, o.path)
			case o.input:
				return fmt.Errorf("%s names %s, which is %s: the output would replace it", f.flag, f.path, o.flag)
			case o.flag == f.flag:
				return fmt.Errorf("%s: two of its files are %s", f.flag, f.path)
			default:
				return fmt.Errorf("%s and %s both name %s: one output would replace the other", o.flag, f.flag, f.path)
			}
		}
		all = append(all, seen{f, c, input})
	}
	return nil
}
