package skb

// skb->truesize as the allocator gives it on x86_64, from
// include/linux/skbuff.h (SKB_DATA_ALIGN, SKB_HEAD_ALIGN,
// SKB_TRUESIZE, SKB_WITH_OVERHEAD) and net/core/skbuff.c
// (kmalloc_reserve, skb_small_head_cache, __build_skb_around). The
// truesize is what a socket is charged (sk_wmem_alloc) and what cake's
// memory_limit counts.
//
// The size of struct skb_shared_info, hence of every skb head, depends
// on CONFIG_MAX_SKB_FRAGS (3948b05950fd, 6.3: 17 by default, 17..45):
// the *Frags functions take it; the others assume the default.
const (
	L1CacheBytes = 64 // L1_CACHE_BYTES = SMP_CACHE_BYTES on x86_64
	// SizeofSkBuff is sizeof(struct sk_buff) (pahole, x86_64 6.x: 232);
	// it counts as SKB_DATA_ALIGN of it, 256.
	SizeofSkBuff = 232
	// DefaultMaxSkbFrags is CONFIG_MAX_SKB_FRAGS's default; the
	// Kconfig range is MinMaxSkbFrags..MaxMaxSkbFrags. Google's
	// production kernels use 45 (Eric Dumazet in 26782aad00cc, "Google
	// production kernel has increased MAX_SKB_FRAGS to 45 for BIG-TCP
	// rollout", and 7e692df39336, "we use CONFIG_MAX_SKB_FRAGS=45").
	DefaultMaxSkbFrags = 17
	MinMaxSkbFrags     = 17
	MaxMaxSkbFrags     = 45
	// SizeofSharedInfo is sizeof(struct skb_shared_info) with
	// MAX_SKB_FRAGS = 17: 48 bytes of fields and 17 16-byte frags.
	SizeofSharedInfo = 48 + DefaultMaxSkbFrags*16
	// MaxHeader is MAX_HEADER: LL_MAX_HEADER (128 with Hyper-V or WLAN
	// built, as distribution kernels are) + 48 for the IP tunnels.
	MaxHeader = 128 + 48
	// MaxTCPHeader is MAX_TCP_HEADER = L1_CACHE_ALIGN(128 + MAX_HEADER).
	MaxTCPHeader = (128 + MaxHeader + L1CacheBytes - 1) / L1CacheBytes * L1CacheBytes
	// GROMaxHeadPad is GRO_MAX_HEAD_PAD = GRO_MAX_HEAD (MAX_HEADER + 128)
	// + NET_SKB_PAD (max(32, L1_CACHE_BYTES)) + NET_IP_ALIGN (0 on x86).
	GROMaxHeadPad = MaxHeader + 128 + max(32, L1CacheBytes) + 0
	// SmallHeadSize is SKB_SMALL_HEAD_SIZE =
	// SKB_HEAD_ALIGN(max(MAX_TCP_HEADER, GRO_MAX_HEAD_PAD)): 704.
	SmallHeadSize = (max(MaxTCPHeader, GROMaxHeadPad)+L1CacheBytes-1)/L1CacheBytes*L1CacheBytes +
		(SizeofSharedInfo+L1CacheBytes-1)/L1CacheBytes*L1CacheBytes
	// LLReservedSpace is LL_RESERVED_SPACE(dev) for Ethernet
	// (hard_header_len 14 rounded down to HH_DATA_MOD 16, plus 16).
	LLReservedSpace = 14&^15 + 16
	// kmallocMaxCacheSize is KMALLOC_MAX_CACHE_SIZE with SLUB (two
	// pages); larger heads are whole page orders.
	kmallocMaxCacheSize = 8192
	pageSize            = 4096
)

// SkbTruesize is SKB_TRUESIZE(x): x bytes of data with the aligned
// sk_buff and skb_shared_info (the default MAX_SKB_FRAGS) around them;
// SKB_TRUESIZE(1), 577, is TCP's bound for "nothing in a host queue".
func SkbTruesize(x int) uint32 { return SkbTruesizeFrags(x, DefaultMaxSkbFrags) }

// SkbTruesizeFrags is SKB_TRUESIZE(x) with maxFrags frags.
func SkbTruesizeFrags(x, maxFrags int) uint32 {
	return uint32(x + DataAlign(SizeofSkBuff) + DataAlign(SharedInfoSize(maxFrags)))
}

// WmemDefault is SK_WMEM_DEFAULT, the boot value of
// net.core.wmem_default (and wmem_max): _SK_MEM_OVERHEAD, i.e.
// SKB_TRUESIZE(256), times _SK_MEM_PACKETS (256). SKB_TRUESIZE holds the
// aligned skb_shared_info, so the default grows with MAX_SKB_FRAGS:
// 212992 with 17 frags, 327680 with 45.
func WmemDefault(maxFrags int) int { return 256 * int(SkbTruesizeFrags(256, maxFrags)) }

// SharedInfoSize is sizeof(struct skb_shared_info) with maxFrags
// frags: 48 bytes of fields (flags to destructor_arg) and a 16-byte
// skb_frag_t per frag.
func SharedInfoSize(maxFrags int) int { return 48 + maxFrags*16 }

// SmallHeadCacheSize is SKB_SMALL_HEAD_CACHE_SIZE: the small head
// size, plus a cache line if it is a power of two (it is not: 704).
func SmallHeadCacheSize() int { return SmallHeadCacheSizeFrags(DefaultMaxSkbFrags) }

// SmallHeadCacheSizeFrags is SKB_SMALL_HEAD_CACHE_SIZE with maxFrags
// frags: 704 with 17, 1152 with 45.
func SmallHeadCacheSizeFrags(maxFrags int) int {
	n := DataAlign(max(MaxTCPHeader, GROMaxHeadPad)) + DataAlign(SharedInfoSize(maxFrags))
	if n&(n-1) == 0 {
		return n + L1CacheBytes
	}
	return n
}

// DataAlign is SKB_DATA_ALIGN: round up to a cache line.
func DataAlign(n int) int { return (n + L1CacheBytes - 1) / L1CacheBytes * L1CacheBytes }

// HeadAlign is SKB_HEAD_ALIGN: a head of n bytes plus the aligned
// skb_shared_info at its end.
func HeadAlign(n int) int { return headAlign(n, DefaultMaxSkbFrags) }

func headAlign(n, maxFrags int) int { return DataAlign(n) + DataAlign(SharedInfoSize(maxFrags)) }

// kmallocSizeRoundup is kmalloc_size_roundup with the kmalloc caches
// (8 ... 8192 bytes, with the 96 and 192 ones) and page orders beyond.
func kmallocSizeRoundup(n int) int {
	switch {
	case n <= 8:
		return 8
	case n <= 64:
		return 1 << bitLen(n-1)
	case n <= 96:
		return 96
	case n <= 128:
		return 128
	case n <= 192:
		return 192
	case n <= kmallocMaxCacheSize:
		return 1 << bitLen(n-1)
	}
	p := pageSize
	for p < n {
		p *= 2
	}
	return p
}

func bitLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// TruesizeAllocSkb is the truesize of __alloc_skb(size): kmalloc_reserve
// takes the head from skb_small_head_cache when SKB_HEAD_ALIGN(size)
// fits it, else from kmalloc, and truesize is
// SKB_TRUESIZE(SKB_WITH_OVERHEAD(head)) = head + SKB_DATA_ALIGN(sizeof
// struct sk_buff).
func TruesizeAllocSkb(size int) uint32 { return TruesizeAllocSkbFrags(size, DefaultMaxSkbFrags) }

// TruesizeAllocSkbFrags is TruesizeAllocSkb with maxFrags frags.
func TruesizeAllocSkbFrags(size, maxFrags int) uint32 {
	head := headAlign(size, maxFrags)
	if small := SmallHeadCacheSizeFrags(maxFrags); head <= small {
		head = small
	} else {
		head = kmallocSizeRoundup(head)
	}
	return uint32(head + DataAlign(SizeofSkBuff))
}

// TruesizeUDP is the truesize of the skb udp_sendmsg builds for l3len
// bytes of IP packet on Ethernet: __ip_append_data asks
// sock_alloc_send_skb for alloclen + hh_len + 15. A 120-byte payload
// (l3len 148) gets a small head: 704 + 256 = 960.
func TruesizeUDP(l3len int) uint32 { return TruesizeUDPFrags(l3len, DefaultMaxSkbFrags) }

// TruesizeUDPFrags is TruesizeUDP with maxFrags frags: with 45, the
// 120-byte payload's small head is 1152 and its truesize 1408.
func TruesizeUDPFrags(l3len, maxFrags int) uint32 {
	return TruesizeAllocSkbFrags(l3len+LLReservedSpace+15, maxFrags)
}

// TruesizeUDPKmalloc is TruesizeUDPFrags in a kernel without
// skb_small_head_cache (before 6.3, bf9f1baa279f): the head comes from
// kmalloc, and truesize is SKB_TRUESIZE(SKB_WITH_OVERHEAD(ksize)), the
// kmalloc object and the aligned sk_buff. A 120-byte payload's head is
// kmalloc-512: truesize 768.
func TruesizeUDPKmalloc(l3len, maxFrags int) uint32 {
	return uint32(kmallocSizeRoundup(headAlign(l3len+LLReservedSpace+15, maxFrags)) + DataAlign(SizeofSkBuff))
}

// TruesizeFrag is the truesize of an skb built around a page fragment
// of fragSize bytes (napi_build_skb / build_skb on a driver's RX
// buffer: the fragment's truesize plus the aligned sk_buff).
func TruesizeFrag(fragSize int) uint32 { return uint32(fragSize + DataAlign(SizeofSkBuff)) }
