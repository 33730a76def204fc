package skb

// Truesize of an skb built around a page fragment, as the RX path of a
// NIC driver makes one (napi_build_skb / build_skb on a buffer of its RX
// ring).
//
// __build_skb_around (net/core/skbuff.c) takes the fragment's size,
// subtracts the shared info that lives at its end, and sets
//
//	skb->truesize = SKB_TRUESIZE(frag_size - SKB_DATA_ALIGN(sizeof(struct skb_shared_info)))
//
// where SKB_TRUESIZE(X) = X + SKB_DATA_ALIGN(sizeof(struct sk_buff)) +
// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) (include/linux/skbuff.h).
// The shared info cancels out: truesize is the fragment plus the aligned
// struct sk_buff. On x86-64 sizeof(struct sk_buff) is 232 bytes, which
// SKB_DATA_ALIGN (SMP_CACHE_BYTES = 64) rounds to 256.
const skbuffAligned = 256 // SKB_DATA_ALIGN(sizeof(struct sk_buff)) on x86-64

// TruesizeFrag is skb->truesize of an skb that napi_build_skb built on
// an RX buffer of fragSize bytes: a 2048-byte half page (ice before its
// page_pool conversion, i40e: ice_rx_frame_truesize / i40e_rx_frame_truesize
// with 4 KiB pages), or libeth's fq->truesize (ice after 93f53db9f9dc,
// idpf), which for a 1500-byte MTU is also 2048, gives 2304.
func TruesizeFrag(fragSize int) uint32 { return uint32(fragSize + skbuffAligned) }
