//go:build !linux

package shm

import (
	"errors"
	"time"
)

// Supported reports whether this platform has the channel.
const Supported = false

// DefaultSize is each direction's capacity.
const DefaultSize = 8 << 20

var errUnsupported = errors.New("shared-memory channel: linux only")

// ErrTimeout is no frame within the deadline.
var ErrTimeout = errors.New("no answer in time")

// Stats are this process's receive counters (none here).
type Stats struct {
	Recvs, Ready, Spun, Slept uint64
	WaitNs                    uint64
}

// ReadStats returns zeros: there is no channel.
func ReadStats() Stats { return Stats{} }

// Chan is one side of a channel.
type Chan struct{}

func Create(string, int) (*Chan, string, error)                  { return nil, "", errUnsupported }
func Open(string, int) (*Chan, error)                            { return nil, errUnsupported }
func (c *Chan) Send([]byte) error                                { return errUnsupported }
func (c *Chan) Recv(time.Duration, func() error) ([]byte, error) { return nil, errUnsupported }
func (c *Chan) Close() error                                     { return nil }
