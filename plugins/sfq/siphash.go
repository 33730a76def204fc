package sfq

import "math/bits"

// siphash2 is SipHash-2-4 (as lib/siphash.c's siphash()) of a 16-byte
// message given as two little-endian words: the flow keys sfq hashes.
func siphash2(key [2]uint64, m0, m1 uint64) uint64 {
	v0 := key[0] ^ 0x736f6d6570736575
	v1 := key[1] ^ 0x646f72616e646f6d
	v2 := key[0] ^ 0x6c7967656e657261
	v3 := key[1] ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	for _, m := range [3]uint64{m0, m1, 16 << 56} { // the last block carries the length
		v3 ^= m
		round()
		round()
		v0 ^= m
	}
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
