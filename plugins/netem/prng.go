package netem

// rndState is struct rnd_state: the kernel's prandom_u32_state, L'Ecuyer's
// maximally equidistributed combined Tausworthe generator (taus113,
// lib/random32.c). netem draws its decisions from its own one, seeded by
// `seed` (at init or a change) or a random u64 at init, so `seed N` replays the
// kernel's own sequence of decisions.
type rndState struct{ s1, s2, s3, s4 uint32 }

// seedFix is __seed: each component has a minimum for the generator.
func seedFix(x, m uint32) uint32 {
	if x < m {
		return x + m
	}
	return x
}

// prandomSeedState is prandom_seed_state.
func (s *rndState) prandomSeedState(seed uint64) {
	i := uint32((seed >> 32) ^ (seed << 10) ^ seed)
	s.s1, s.s2, s.s3, s.s4 = seedFix(i, 2), seedFix(i, 8), seedFix(i, 16), seedFix(i, 128)
}

// taus is TAUSWORTHE(s, a, b, c, d).
func taus(s, a, b, c, d uint32) uint32 { return ((s & c) << d) ^ (((s << a) ^ s) >> b) }

// prandomU32State is prandom_u32_state.
func (s *rndState) prandomU32State() uint32 {
	s.s1 = taus(s.s1, 6, 13, 4294967294, 18)
	s.s2 = taus(s.s2, 2, 27, 4294967288, 2)
	s.s3 = taus(s.s3, 13, 21, 4294967280, 7)
	s.s4 = taus(s.s4, 3, 12, 4294967168, 13)
	return s.s1 ^ s.s2 ^ s.s3 ^ s.s4
}

// crndState is struct crndstate: a correlated random stream, each value
// rho/2^32 of the last one and the rest a fresh draw.
type crndState struct{ last, rho uint32 }

// getCrandom is get_crandom.
func getCrandom(st *crndState, p *rndState) uint32 {
	if st == nil || st.rho == 0 {
		return p.prandomU32State()
	}
	value := uint64(p.prandomU32State())
	rho := uint64(st.rho) + 1
	answer := uint32((value*((1<<32)-rho) + uint64(st.last)*rho) >> 32)
	st.last = answer
	return answer
}
