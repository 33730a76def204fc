// Package khash holds the kernel's hash functions the model computes
// bit for bit: SipHash-2-4 (lib/siphash.c) and Bob Jenkins' lookup3 as
// include/linux/jhash.h has it.
package khash

import (
	"math/bits"

	"github.com/txlab/txlab/framework/skb"
)

// SipHash is siphash() (lib/siphash.c, SipHash-2-4) of the message made
// of the little-endian words m, under key: siphash_1u64 for one word,
// siphash_2u64 for two, and so on.
func SipHash(key [2]uint64, m []uint64) uint64 {
	return sipHash(key, m, uint64(len(m)*8)<<56) // the last block carries the length
}

// SipHash1u32 is siphash_1u32: SipHash-2-4 of a 4-byte message, which
// is all in the last block.
func SipHash1u32(key [2]uint64, first uint32) uint64 {
	return sipHash(key, nil, 4<<56|uint64(first))
}

// sipHash compresses the full words m, then the last block.
func sipHash(key [2]uint64, m []uint64, last uint64) uint64 {
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
	block := func(b uint64) {
		v3 ^= b
		round()
		round()
		v0 ^= b
	}
	for _, b := range m {
		block(b)
	}
	block(last)
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}

// jhashInitval is JHASH_INITVAL, an arbitrary value.
const jhashInitval = 0xdeadbeef

// Jhash2 is jhash2: lookup3's hashword over u32 keys with an initial
// value.
func Jhash2(k []uint32, initval uint32) uint32 {
	a := jhashInitval + uint32(len(k))<<2 + initval
	b, c := a, a
	for len(k) > 3 {
		a += k[0]
		b += k[1]
		c += k[2]
		a, b, c = mix(a, b, c)
		k = k[3:]
	}
	switch len(k) {
	case 3:
		c += k[2]
		fallthrough
	case 2:
		b += k[1]
		fallthrough
	case 1:
		a += k[0]
		c = final(a, b, c)
	}
	return c
}

// Jhash1Word is jhash_1word: jhash_3words(a, 0, 0, initval), the final
// mix alone.
func Jhash1Word(a, initval uint32) uint32 {
	iv := initval + jhashInitval + 1<<2
	return final(a+iv, iv, iv)
}

// mix is __jhash_mix.
func mix(a, b, c uint32) (uint32, uint32, uint32) {
	rol := bits.RotateLeft32
	a -= c
	a ^= rol(c, 4)
	c += b
	b -= a
	b ^= rol(a, 6)
	a += c
	c -= b
	c ^= rol(b, 8)
	b += a
	a -= c
	a ^= rol(c, 16)
	c += b
	b -= a
	b ^= rol(a, 19)
	a += c
	c -= b
	c ^= rol(b, 4)
	b += a
	return a, b, c
}

// final is __jhash_final.
func final(a, b, c uint32) uint32 {
	rol := bits.RotateLeft32
	c ^= b
	c -= rol(b, 14)
	a ^= c
	a -= rol(c, 11)
	b ^= a
	b -= rol(a, 25)
	c ^= b
	c -= rol(b, 16)
	a ^= c
	a -= rol(c, 4)
	b ^= a
	b -= rol(a, 14)
	c ^= b
	c -= rol(b, 24)
	return c
}

// HashPerturb is skb_get_hash_perturb: a siphash of the flow keys under
// key (sfq's and sfb's perturbation). As __flow_hash_from_keys does, the
// keys are first put in a canonical order so both directions of a flow
// hash alike, and a zero hash becomes 1. A packet without dissected
// keys hashes its skb hash.
func HashPerturb(p *skb.Packet, key [2]uint64) uint32 {
	k := p.Keys
	var m0, m1 uint64
	if k == (skb.FlowKeys{}) {
		m0 = uint64(p.Hash)
	} else {
		if k.Dst < k.Src || (k.Dst == k.Src && k.DstPort < k.SrcPort) { // flow_hash_consistentify
			k.Src, k.Dst = k.Dst, k.Src
			k.SrcPort, k.DstPort = k.DstPort, k.SrcPort
		}
		m0 = uint64(k.Src) | uint64(k.Dst)<<32
		m1 = uint64(k.SrcPort) | uint64(k.DstPort)<<16 | uint64(k.Proto)<<32
	}
	h := uint32(SipHash(key, []uint64{m0, m1}))
	if h == 0 {
		h = 1
	}
	return h
}
