package plugin

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// A plugin's panic reaches the user as one line naming the plugin, the
// call, the panic and the file:line in the plugin that panicked, and the
// first frames of its stack printed after that line (StackOf).
//
// A panic the plugin recovers (in a call) travels in the error reply:
// its summary on the first line, the stack after. A crash (a panic in a
// goroutine of the plugin's own, a fatal error) is read off the plugin's
// stderr, where the Go runtime prints it before the process exits.

// stackFrames is how many frames of a plugin's stack are shown.
const stackFrames = 8

// PanicError is a panic in a plugin: Msg is one line, Stack the first
// frames.
type PanicError struct {
	Msg   string
	Stack string
}

func (e *PanicError) Error() string { return e.Msg }

// StackOf is the stack of the plugin panic that caused err, ready to
// print after err's line ("" if err is no plugin panic).
func StackOf(err error) string {
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Stack == "" {
		return ""
	}
	var ple *Error
	name := "the plugin"
	if errors.As(err, &ple) {
		name = "plugin " + ple.Plugin
	}
	return fmt.Sprintf("stack of %s (first frames):\n%s", name, pe.Stack)
}

// panicReply is the error text a plugin sends for a panic it recovered:
// the summary, then the stack from the frame that panicked.
func panicReply(r any, stack []byte) string {
	frames := trimStack(string(stack))
	msg := fmt.Sprintf("panic: %v", r)
	if at := panicSite(frames); at != "" {
		msg += " (at " + at + ")"
	}
	return msg + "\n" + frames
}

// remoteError is the host's error for a plugin's error reply: a panic
// (with its stack) when the reply has more than one line.
func remoteError(text string) error {
	msg, stack, ok := strings.Cut(text, "\n")
	if !ok {
		return errors.New(text)
	}
	return &PanicError{Msg: msg, Stack: stack}
}

// trimStack drops what precedes the panicking frame in a stack taken
// while recovering (debug.Stack, the deferred function, the runtime's
// panic), keeps the goroutine line and stackFrames frames, indented.
func trimStack(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var head string
	if len(lines) > 0 && strings.HasPrefix(lines[0], "goroutine ") {
		head, lines = lines[0], lines[1:]
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "panic(") {
			lines = lines[min(i+2, len(lines)):]
			break
		}
	}
	var b strings.Builder
	if head != "" {
		b.WriteString("  " + head + "\n")
	}
	for i := 0; i+1 < len(lines) && i < 2*stackFrames; i += 2 {
		b.WriteString("  " + lines[i] + "\n  " + lines[i+1] + "\n")
	}
	if len(lines) > 2*stackFrames {
		b.WriteString("  ...\n")
	}
	return b.String()
}

// panicSite is the file:line of the first frame outside the Go runtime
// (a runtime error's frames come first).
func panicSite(frames string) string {
	lines := strings.Split(frames, "\n")
	for i := 0; i+1 < len(lines); i++ {
		fn := strings.TrimSpace(lines[i])
		loc := strings.TrimSpace(lines[i+1])
		if fn == "" || strings.HasPrefix(fn, "goroutine ") || !strings.HasPrefix(lines[i+1], "  \t") {
			continue
		}
		if !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "panic(") {
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			return loc
		}
		i++
	}
	return ""
}

// crashWriter keeps what the Go runtime prints when the plugin crashes:
// from the first "panic: " or "fatal error: " line on, up to 16 KB.
type crashWriter struct {
	mu   sync.Mutex
	line []byte // the line being written, until the crash starts
	buf  []byte // the crash, once it started
	on   bool
}

const crashMax = 16 << 10

func (w *crashWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if w.on {
			w.buf = append(w.buf, b[:min(len(b), crashMax-len(w.buf))]...)
			return n, nil
		}
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			if len(w.line) < 256 { // enough to recognise the start of a crash
				w.line = append(w.line, b[:min(len(b), 256-len(w.line))]...)
			}
			return n, nil
		}
		if len(w.line) < 256 {
			w.line = append(w.line, b[:min(i, 256-len(w.line))]...)
		}
		if isCrashLine(string(w.line)) {
			w.on = true
			w.buf = append(w.buf, w.line...)
			w.buf = append(w.buf, '\n')
		}
		w.line = w.line[:0]
		b = b[i+1:]
	}
	return n, nil
}

func isCrashLine(l string) bool {
	return strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")
}

// crash is the crash's summary line (with the panic site) and its first
// frames; ok is false if the plugin did not crash.
func (w *crashWriter) crash() (msg, stack string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on {
		return "", "", false
	}
	text := strings.TrimRight(string(w.buf), "\n")
	msg, rest, _ := strings.Cut(text, "\n")
	// The goroutine that crashed: from its "goroutine N" line up to the
	// next blank line.
	if i := strings.Index(rest, "goroutine "); i >= 0 {
		rest = rest[i:]
	}
	if i := strings.Index(rest, "\n\n"); i >= 0 {
		rest = rest[:i]
	}
	stack = trimStack(rest)
	if at := panicSite(stack); at != "" {
		msg += " (at " + at + ")"
	}
	return msg, stack, true
}

// quietCrash is an hclog Exclude that drops a crash's lines from the
// plugin's log (go-plugin logs each at error level): the crash is shown
// once, after the error line. go-plugin's "plugin process exited" goes
// too: the error that ends the run says so, with the exit status.
func quietCrash() func(hclog.Level, string, ...any) bool {
	var mu sync.Mutex
	crashing := false
	return func(level hclog.Level, msg string, _ ...any) bool {
		mu.Lock()
		defer mu.Unlock()
		if level == hclog.Error && isCrashLine(msg) {
			crashing = true
		}
		if msg == "plugin process exited" {
			return true
		}
		return crashing && level >= hclog.Error
	}
}
