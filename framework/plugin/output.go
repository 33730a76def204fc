package plugin

// What a plugin process prints: its stdout and stderr lines reach the
// user prefixed with its name; the end of its stderr is kept for the
// error when it dies. Both writers are linear in what they are given and
// hold a bounded amount of it.

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// tailKeep is how much of a plugin's stderr tailWriter keeps.
const tailKeep = 4096

// tailWriter keeps the last tailKeep bytes of the plugin's raw stderr,
// for the error when it dies.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte // at most 2*tailKeep; the tail is its last tailKeep bytes
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if len(b) >= tailKeep {
		t.buf = append(t.buf[:0], b[len(b)-tailKeep:]...)
		return n, nil
	}
	if len(t.buf)+len(b) > 2*tailKeep {
		// Keep what is still in the tail and start over: each byte is
		// copied at most twice.
		keep := tailKeep - len(b)
		copy(t.buf, t.buf[len(t.buf)-keep:])
		t.buf = t.buf[:keep]
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

// last is the last line the plugin printed, for an error message.
func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := t.buf
	if len(buf) > tailKeep {
		buf = buf[len(buf)-tailKeep:]
	}
	lines := strings.Split(strings.TrimSpace(string(buf)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "goroutine ") && !strings.HasPrefix(l, "exit status") &&
			!strings.HasPrefix(l, `{"@level"`) {
			// Prefer the panic line if there is one.
			for _, m := range lines {
				if strings.HasPrefix(strings.TrimSpace(m), "panic:") {
					return ": " + strings.TrimSpace(m)
				}
			}
			return ": " + l
		}
	}
	return ""
}

// maxLine is the longest line prefixWriter holds back waiting for its
// newline; a longer one is written in pieces of this size.
const maxLine = 64 << 10

// prefixWriter writes whole lines to out, each after prefix.
type prefixWriter struct {
	mu      sync.Mutex
	out     io.Writer
	prefix  string
	partial []byte // the start of a line whose newline has not come yet
	line    []byte // scratch: prefix + one line
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			room := maxLine - len(w.partial)
			if len(b) < room {
				w.partial = append(w.partial, b...)
				return n, nil
			}
			w.partial = append(w.partial, b[:room]...)
			b = b[room:]
			w.emit(nil)
			continue
		}
		w.emit(b[:i])
		b = b[i+1:]
	}
	return n, nil
}

// emit writes prefix, the held partial line, rest and a newline in one
// write, and empties partial. An error writing the log is dropped: the
// plugin's output must keep draining, or the plugin blocks on it.
func (w *prefixWriter) emit(rest []byte) {
	w.line = append(append(append(append(w.line[:0], w.prefix...), w.partial...), rest...), '\n')
	w.partial = w.partial[:0]
	_, _ = w.out.Write(w.line)
}
