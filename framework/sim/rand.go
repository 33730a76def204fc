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
	r := NewRand(s.Seed(name))
	s.streams[name] = r
	return r
}

// Seed is the pair a stream's PCG starts from: a fresh stream can be
// rebuilt anywhere, in another process too, from its Seed alone.
type Seed [2]uint64

// Seed returns the seed of name's stream (the one Stream(name) starts
// from). The caller rebuilds the stream with NewRand; Stream(name) is
// not touched.
func (s *Streams) Seed(name string) Seed {
	h := fnv.New64a()
	h.Write([]byte(name))
	return Seed{s.seed, h.Sum64()}
}

// NewRand rebuilds a stream from its seed.
func NewRand(s Seed) *Rand { return rand.New(rand.NewPCG(s[0], s[1])) }
