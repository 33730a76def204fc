package khash

import "testing"

// jhash2 against a separate implementation of lookup3's hashword (the
// values from a Python copy of include/linux/jhash.h).
func TestJhash2(t *testing.T) {
	for _, tt := range []struct {
		keys    []uint32
		initval uint32
		want    uint32
	}{
		{nil, 7, 0xdeadbef6}, // no word: the initial state
		{[]uint32{0x0a000001}, 0, 0x3483bc84},
		{[]uint32{0x0a000001, 0x0a010007}, 0x12345678, 0x43dedb37},
		{[]uint32{1, 2, 3, 4}, 0xdeadbeef, 0xda03e646}, // one __jhash_mix, then a final word
		{[]uint32{0x0a000001, 0x0a010007, 17, 40000, 5001}, 0x9e3779b9, 0x82d97433},
	} {
		if got := Jhash2(tt.keys, tt.initval); got != tt.want {
			t.Errorf("Jhash2(%#x, %#x) = %#x, want %#x", tt.keys, tt.initval, got, tt.want)
		}
	}
	// jhash_1word is jhash2 of one word: the same state, the same final.
	if got := Jhash1Word(0x0a000001, 0); got != 0x3483bc84 {
		t.Errorf("Jhash1Word = %#x, want jhash2's 0x3483bc84", got)
	}
}

// SipHash-2-4's reference vectors (the SipHash paper's, key 00..0f,
// message 00..N-1) for 8 and 16 bytes: siphash_1u64 and siphash_2u64.
func TestSipHash(t *testing.T) {
	key := [2]uint64{0x0706050403020100, 0x0f0e0d0c0b0a0908}
	if got := SipHash1u32(key, 0x03020100); got != 0xcf2794e0277187b7 { // 4 bytes
		t.Errorf("4 bytes: %#x, want 0xcf2794e0277187b7", got)
	}
	if got := SipHash(key, []uint64{0x0706050403020100}); got != 0x93f5f5799a932462 {
		t.Errorf("8 bytes: %#x, want 0x93f5f5799a932462", got)
	}
	if got := SipHash(key, []uint64{0x0706050403020100, 0x0f0e0d0c0b0a0908}); got != 0x3f2acc7f57c29bdb {
		t.Errorf("16 bytes: %#x, want 0x3f2acc7f57c29bdb", got)
	}
}
