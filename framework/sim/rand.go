package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Rand is one component's random stream.
type Rand = rand.Rand

// Streams hands out independent, reproducible random streams, one per
// component name, all derived from the run seed.
type Streams struct {
	seed    uint64
	streams map[string]*Rand
}

// NewStreams derives streams from seed.
func NewStreams(seed uint64) *Streams { return &Streams{seed: seed, streams: map[string]*Rand{}} }

// Stream returns the stream for name; the same name always gets the same
// stream, and its sequence depends only on the seed and the name.
func (s *Streams) Stream(name string) *Rand {
	if r, ok := s.streams[name]; ok {
		return r
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	r := rand.New(rand.NewPCG(s.seed, h.Sum64()))
	s.streams[name] = r
	return r
}
