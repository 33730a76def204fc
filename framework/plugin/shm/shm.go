//go:build linux

// Package shm is the plugin data path's shared-memory channel: two
// one-frame mailboxes in a memory-mapped file, one per direction. The
// sides strictly alternate (the host sends a frame, the plugin answers
// one), so a mailbox is a sequence number, a length and the bytes. The
// receiver spins for an adaptive budget, then sleeps on a futex on the
// sequence number; the sender wakes it only when it sleeps. The budget
// follows what spinning bought lately: it grows while answers come
// within it (the peer has a core of its own) and halves each time one
// does not (the peer waits for a core, maybe the one we spin on), down
// to blocking at once on a busy machine, with a short probe now and
// then to notice when the machine is free again.
package shm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Supported reports whether this platform has the channel.
const Supported = true

const (
	hdrSize = 64 // each mailbox header on its own cache line
	dataOff = 4096
	// DefaultSize is each direction's capacity: an enqueue batch of
	// 100k packets fits.
	DefaultSize = 8 << 20
)

// mailbox header: seq, sleeping, length.
type mailbox struct {
	seq      uint32
	sleeping uint32
	n        uint32
}

// Chan is one side of a channel.
type Chan struct {
	mem    []byte
	tx, rx *mailbox
	txBuf  []byte
	rxBuf  []byte
	last   uint32 // last rx seq consumed
	// Spin is the most a receive spins before it sleeps.
	Spin       time.Duration
	pollPeriod time.Duration
	budget     time.Duration // the current spin budget, 0..Spin
	blocked    int           // receives since the budget last reached 0
}

// The spin budget's bounds and steps.
const (
	spinStart  = 20 * time.Microsecond // a plugin call's usual work fits
	spinProbe  = 4 * time.Microsecond  // one receive in probeEvery spins this much at budget 0
	probeEvery = 64
)

// ErrTooLarge is a frame larger than the channel.
var ErrTooLarge = errors.New("frame larger than the shared-memory channel")

// Create makes a channel file in dir ("" for /dev/shm or the temp dir)
// and maps it: the host's side. The caller passes Path to the plugin and
// removes the file once the plugin has opened it.
func Create(dir string, size int) (*Chan, string, error) {
	if dir == "" {
		dir = "/dev/shm"
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			dir = os.TempDir()
		}
	}
	f, err := os.CreateTemp(dir, "txlab-plugin-*")
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	total := dataOff + 2*size
	if err := f.Truncate(int64(total)); err != nil {
		os.Remove(f.Name())
		return nil, "", err
	}
	c, err := mapFile(f, total, size, true)
	if err != nil {
		os.Remove(f.Name())
		return nil, "", err
	}
	return c, f.Name(), nil
}

// Open maps a channel the host created: the plugin's side.
func Open(path string, size int) (*Chan, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != int64(dataOff+2*size) {
		return nil, fmt.Errorf("shm %s: size %d, want %d", path, st.Size(), dataOff+2*size)
	}
	return mapFile(f, dataOff+2*size, size, false)
}

func mapFile(f *os.File, total, size int, host bool) (*Chan, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, total, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	a := (*mailbox)(unsafe.Pointer(&mem[0]))
	b := (*mailbox)(unsafe.Pointer(&mem[hdrSize]))
	bufA, bufB := mem[dataOff:dataOff+size], mem[dataOff+size:dataOff+2*size]
	c := &Chan{mem: mem, Spin: 200 * time.Microsecond, pollPeriod: 10 * time.Millisecond, budget: spinStart}
	if host {
		c.tx, c.rx, c.txBuf, c.rxBuf = a, b, bufA, bufB
	} else {
		c.tx, c.rx, c.txBuf, c.rxBuf = b, a, bufB, bufA
	}
	c.last = atomic.LoadUint32(&c.rx.seq)
	return c, nil
}

// Send publishes frame to the other side.
func (c *Chan) Send(frame []byte) error {
	if len(frame) > len(c.txBuf) {
		return fmt.Errorf("%w (%d bytes, %d fit)", ErrTooLarge, len(frame), len(c.txBuf))
	}
	copy(c.txBuf, frame)
	atomic.StoreUint32(&c.tx.n, uint32(len(frame)))
	atomic.AddUint32(&c.tx.seq, 1)
	if atomic.LoadUint32(&c.tx.sleeping) != 0 {
		futexWake(&c.tx.seq)
	}
	return nil
}

// ErrTimeout is no frame within the deadline.
var ErrTimeout = errors.New("no answer in time")

// Stats are this process's receive counters, over every channel: how
// receives ended (the frame was there, came while spinning, or after a
// sleep on the futex) and the wall time spent waiting. Benchmarks read
// them to say where an out-of-process run's time goes.
type Stats struct {
	Recvs, Ready, Spun, Slept uint64
	WaitNs                    uint64 // spinning and sleeping
}

var stats struct {
	recvs, ready, spun, slept, waitNs atomic.Uint64
}

// ReadStats returns the counters so far.
func ReadStats() Stats {
	return Stats{Recvs: stats.recvs.Load(), Ready: stats.ready.Load(), Spun: stats.spun.Load(),
		Slept: stats.slept.Load(), WaitNs: stats.waitNs.Load()}
}

// Recv waits for the next frame. The returned bytes are valid until the
// next Send. alive, if set, is asked every poll period while sleeping; its
// error ends the wait. A zero timeout waits for ever.
func (c *Chan) Recv(timeout time.Duration, alive func() error) ([]byte, error) {
	stats.recvs.Add(1)
	if c.ready() {
		stats.ready.Add(1)
		return c.take()
	}
	start := time.Now()
	budget := c.budget
	if budget == 0 {
		c.blocked++
		if c.blocked%probeEvery == 0 {
			budget = spinProbe
		}
	}
	if budget > 0 && c.spin(start, budget) {
		// Answered while spinning: spinning pays, allow a little more.
		waited := time.Since(start)
		c.budget = min(c.Spin, max(c.budget+c.budget/4, spinProbe, waited*2))
		stats.spun.Add(1)
		stats.waitNs.Add(uint64(waited))
		return c.take()
	}
	stats.slept.Add(1)
	defer func() { stats.waitNs.Add(uint64(time.Since(start))) }()
	// Spinning did not pay: halve it (below a microsecond, stop).
	if c.budget /= 2; c.budget < time.Microsecond {
		c.budget = 0
	}
	for {
		atomic.StoreUint32(&c.rx.sleeping, 1)
		seq := atomic.LoadUint32(&c.rx.seq)
		if seq == c.last {
			futexWait(&c.rx.seq, seq, c.pollPeriod)
		}
		atomic.StoreUint32(&c.rx.sleeping, 0)
		if c.ready() {
			return c.take()
		}
		if alive != nil {
			if err := alive(); err != nil {
				return nil, err
			}
		}
		if timeout > 0 && time.Since(start) > timeout {
			return nil, ErrTimeout
		}
	}
}

// spin polls for a frame for up to budget from start.
func (c *Chan) spin(start time.Time, budget time.Duration) bool {
	for i := 0; ; i++ {
		if c.ready() {
			return true
		}
		if i&63 == 63 && time.Since(start) > budget {
			return false
		}
	}
}

func (c *Chan) ready() bool { return atomic.LoadUint32(&c.rx.seq) != c.last }

func (c *Chan) take() ([]byte, error) {
	c.last = atomic.LoadUint32(&c.rx.seq)
	n := atomic.LoadUint32(&c.rx.n)
	if int(n) > len(c.rxBuf) {
		return nil, fmt.Errorf("shm: peer announced a %d-byte frame, %d fit", n, len(c.rxBuf))
	}
	return c.rxBuf[:n], nil
}

// Close unmaps the channel.
func (c *Chan) Close() error {
	if c.mem == nil {
		return nil
	}
	err := syscall.Munmap(c.mem)
	c.mem = nil
	return err
}

const (
	futexWaitOp = 0 // FUTEX_WAIT (shared: the mapping is in two processes)
	futexWakeOp = 1 // FUTEX_WAKE
)

func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

func futexWake(addr *uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1, 0, 0, 0)
}
