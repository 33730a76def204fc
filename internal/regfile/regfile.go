// Package regfile opens the files txlab reads by name (scripts, reports,
// tc batches, plugins and their manifest) only when they are what the
// caller accepts, and reads them within a bound: a FIFO would block the
// open, a device would never end.
package regfile

import (
	"io"
	"io/fs"
	"os"
)

// Kind names what a file that is not a regular one is ("" for a regular
// file), in the words of txlab's refusals ("a named pipe, not a file").
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// Open opens path for reading once check accepts it: check sees the
// name's Stat before the open (opening a FIFO waits for a writer) and the
// opened file's after it (the name may have been replaced in between).
// A name Stat cannot see is left to the open, whose error says why;
// check's own errors come back as they are.
func Open(path string, check func(fs.FileInfo) error) (*os.File, error) {
	if st, err := os.Stat(path); err == nil {
		if err := check(st); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = check(st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadAll reads r to its end, at most max bytes; over says r had more
// (b then holds the first max).
func ReadAll(r io.Reader, max int64) (b []byte, over bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(b)) > max {
		return b[:max], true, err
	}
	return b, false, err
}
