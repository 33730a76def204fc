//go:build linux

package shm

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

func pair(t testing.TB) (*Chan, *Chan) {
	h, path, err := Create(t.TempDir(), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(path, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	t.Cleanup(func() { h.Close(); p.Close() })
	return h, p
}

// Frames alternate in order, across a sleep on the futex.
func TestPingPong(t *testing.T) {
	h, p := pair(t)
	done := make(chan error)
	go func() {
		for i := 0; i < 100; i++ {
			b, err := p.Recv(time.Second, nil)
			if err != nil {
				done <- err
				return
			}
			if i == 50 {
				time.Sleep(30 * time.Millisecond) // the host sleeps on the futex
			}
			p.Send(append([]byte("re:"), b...))
		}
		done <- nil
	}()
	for i := 0; i < 100; i++ {
		msg := []byte{byte(i), 'x'}
		if err := h.Send(msg); err != nil {
			t.Fatal(err)
		}
		b, err := h.Recv(time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, append([]byte("re:"), msg...)) {
			t.Fatalf("frame %d: got %q", i, b)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestTimeoutAndAlive(t *testing.T) {
	h, _ := pair(t)
	if _, err := h.Recv(20*time.Millisecond, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want timeout", err)
	}
	dead := errors.New("peer exited")
	if _, err := h.Recv(time.Second, func() error { return dead }); !errors.Is(err, dead) {
		t.Fatalf("got %v, want the alive error", err)
	}
	if err := h.Send(make([]byte, 1<<17)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want too large", err)
	}
}

// BenchmarkRoundTrip is one frame each way between two goroutines.
func BenchmarkRoundTrip(b *testing.B) {
	h, p := pair(b)
	go func() {
		for {
			m, err := p.Recv(0, nil)
			if err != nil || len(m) == 0 {
				return
			}
			p.Send(m)
		}
	}()
	msg := make([]byte, 100)
	for b.Loop() {
		h.Send(msg)
		h.Recv(0, nil)
	}
	h.Send(nil)
}
