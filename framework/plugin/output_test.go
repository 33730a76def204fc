package plugin

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestPrefixWriter(t *testing.T) {
	long := strings.Repeat("x", maxLine)
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one line", []string{"a\n"}, "[p] a\n"},
		{"lines in one write", []string{"a\nb\nc\n"}, "[p] a\n[p] b\n[p] c\n"},
		{"a line in pieces", []string{"a", "b", "c\nd", "\n"}, "[p] abc\n[p] d\n"},
		{"no newline yet", []string{"abc"}, ""},
		{"empty lines", []string{"\n\n"}, "[p] \n[p] \n"},
		{"a long line in one write stays whole", []string{long + "yz\n"}, "[p] " + long + "yz\n"},
		{"an overlong held line is cut", []string{long[:10], long[10:], "\n"}, "[p] " + long + "\n[p] \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := &prefixWriter{out: &out, prefix: "[p] "}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%d bytes) = %d, %v", len(s), n, err)
				}
			}
			if got := out.String(); got != tc.want {
				t.Errorf("got %q\nwant %q", trim(got), trim(tc.want))
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%s...(%d bytes)", s[:80], len(s))
	}
	return s
}

func TestTailWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"last line", []string{"a\nb\n"}, ": b"},
		{"the panic line wins", []string{"panic: boom\n", "goroutine 1 [running]:\nmain.main()\n"}, ": panic: boom"},
		{"skips goroutine and exit lines", []string{"real error\ngoroutine 5\nexit status 2\n"}, ": real error"},
		{"only the tail is kept", []string{"old line\n", strings.Repeat("y", 3*tailKeep) + "\nnew\n"}, ": new"},
		{"many small writes", append(strings.Split(strings.Repeat("z", 3*tailKeep), ""), "\nend\n"), ": end"},
		{"nothing", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &tailWriter{}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				if len(w.buf) > 2*tailKeep {
					t.Fatalf("holds %d bytes, more than %d", len(w.buf), 2*tailKeep)
				}
			}
			if got := w.last(); got != tc.want {
				t.Errorf("last() = %q, want %q", trim(got), tc.want)
			}
		})
	}
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestOutputWritersLinear: the work (here: bytes allocated) to pass N
// bytes of plugin output is O(N), whether it comes as many lines in one
// write or one long line in many writes (the old writer copied the held
// bytes once per line and per write: quadratic).
func TestOutputWritersLinear(t *testing.T) {
	const size = 4 << 20
	lines := bytes.Repeat([]byte("0123456789abcde\n"), size/16)
	pieces := bytes.Repeat([]byte("x"), size)
	for _, tc := range []struct {
		name string
		feed func(w interface{ Write([]byte) (int, error) })
	}{
		{"many lines in one write", func(w interface{ Write([]byte) (int, error) }) { _, _ = w.Write(lines) }},
		{"one long line in 64-byte writes", func(w interface{ Write([]byte) (int, error) }) {
			for i := 0; i < len(pieces); i += 64 {
				_, _ = w.Write(pieces[i : i+64])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out countWriter
			pw := &prefixWriter{out: &out, prefix: "[plugin x] "}
			if got := allocated(func() { tc.feed(pw) }); got > 8*maxLine {
				t.Errorf("prefixWriter allocated %d bytes for %d bytes of output", got, size)
			}
			tw := &tailWriter{}
			if got := allocated(func() { tc.feed(tw) }); got > 8*tailKeep+(1<<16) {
				t.Errorf("tailWriter allocated %d bytes for %d bytes of output", got, size)
			}
			if out.n < size {
				t.Errorf("prefixWriter passed on %d bytes of %d", out.n, size)
			}
		})
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(b []byte) (int, error) { c.n += len(b); return len(b), nil }

// BenchmarkPrefixWriter reports ns per byte for growing outputs: flat
// when the writer is linear.
func BenchmarkPrefixWriter(b *testing.B) {
	for _, size := range []int{1 << 16, 1 << 20, 1 << 24} {
		data := bytes.Repeat([]byte("0123456789abcde\n"), size/16)
		b.Run(fmt.Sprintf("lines/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			w := &prefixWriter{out: &countWriter{}, prefix: "[plugin x] "}
			for b.Loop() {
				_, _ = w.Write(data)
			}
		})
		b.Run(fmt.Sprintf("pieces/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			w := &prefixWriter{out: &countWriter{}, prefix: "[plugin x] "}
			one := bytes.Repeat([]byte("x"), 64)
			for b.Loop() {
				for i := 0; i < size; i += 64 {
					_, _ = w.Write(one)
				}
			}
		})
	}
}
