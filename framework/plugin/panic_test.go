package plugin

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

// A stack as the Go runtime prints it when a goroutine's panic kills the
// process, after lines the plugin printed before.
const crashOutput = `some output
{"@level":"debug","@message":"a log line"}
panic: boom [recovered]
	panic: boom

goroutine 43 [running]:
example.com/p.(*q).Dequeue(0xc000010000)
	/src/p/q.go:42 +0x25
example.com/p.run(...)
	/src/p/run.go:7
created by example.com/p.start in goroutine 40
	/src/p/start.go:12 +0x1a

goroutine 1 [select]:
main.main()
	/src/main.go:3 +0x10
`

func TestCrashWriter(t *testing.T) {
	for _, chunk := range []int{1, 7, 64, len(crashOutput)} {
		w := &crashWriter{}
		for s := crashOutput; s != ""; {
			n := min(chunk, len(s))
			w.Write([]byte(s[:n]))
			s = s[n:]
		}
		msg, stack, ok := w.crash()
		if !ok || msg != "panic: boom [recovered] (at /src/p/q.go:42)" {
			t.Fatalf("chunks of %d: %v %q", chunk, ok, msg)
		}
		if !strings.HasPrefix(stack, "  goroutine 43 [running]:\n  example.com/p.(*q).Dequeue") ||
			!strings.Contains(stack, "created by") || strings.Contains(stack, "main.main") {
			t.Fatalf("chunks of %d: stack %q", chunk, stack)
		}
	}
	w := &crashWriter{}
	fmt.Fprintf(w, "%s\n", strings.Repeat("x", 100000)) // a long line is no crash, and not kept
	fmt.Fprintf(w, "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/m.go:9 +0x1\n")
	if msg, _, ok := w.crash(); !ok || msg != "fatal error: all goroutines are asleep - deadlock! (at /m.go:9)" || len(w.line) > 256 {
		t.Fatalf("%v %q", ok, msg)
	}
	for range 100 {
		w.Write([]byte(strings.Repeat("y", 1000)))
	}
	if len(w.buf) > crashMax {
		t.Fatalf("crash kept %d bytes", len(w.buf))
	}
	if _, _, ok := (&crashWriter{}).crash(); ok {
		t.Fatal("a crash from nothing")
	}
}

// A recovered panic's reply: the summary with the panicking frame's
// file:line (a runtime error's runtime frames skipped), then the first
// frames, from that frame on.
func TestPanicReply(t *testing.T) {
	var text string
	func() {
		defer func() { text = panicReply(recover(), debug.Stack()) }()
		var s []int
		_ = s[3] // index out of range: runtime frames first
	}()
	err := remoteError(text)
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("%T %v", err, err)
	}
	if !strings.HasPrefix(pe.Msg, "panic: runtime error: index out of range") || !strings.Contains(pe.Msg, "panic_test.go:") {
		t.Fatalf("summary %q", pe.Msg)
	}
	first := strings.Split(pe.Stack, "\n")[1]
	if !strings.Contains(first, "TestPanicReply") || strings.Contains(pe.Stack, "debug.Stack") || strings.Count(pe.Stack, "\n") > 2*stackFrames+2 {
		t.Fatalf("stack %q", pe.Stack)
	}
	wrapped := fmt.Errorf("run: %w", &Error{Plugin: "qdisc x (/p)", What: "dequeue", Err: err})
	if s := StackOf(wrapped); !strings.HasPrefix(s, "stack of plugin qdisc x (/p) (first frames):\n  goroutine ") {
		t.Fatalf("StackOf: %q", s)
	}
	if StackOf(errors.New("plain")) != "" || remoteError("one line").Error() != "one line" {
		t.Fatal("a plain error has a stack")
	}
}
