package skb

import "testing"

func TestTruesize(t *testing.T) {
	if got := SmallHeadCacheSize(); got != 704 {
		t.Fatalf("SKB_SMALL_HEAD_CACHE_SIZE = %d, want 704", got)
	}
	if got := SmallHeadCacheSizeFrags(45); got != 1152 {
		t.Fatalf("SKB_SMALL_HEAD_CACHE_SIZE with MAX_SKB_FRAGS 45 = %d, want 1152", got)
	}
	for _, tc := range []struct {
		name string
		got  uint32
		want uint32
	}{
		{"UDP 120 B payload (E1)", TruesizeUDP(120 + 8 + 20), 960},
		{"UDP 64 B payload", TruesizeUDP(64 + 8 + 20), 960},
		{"largest small head: head 353+31 aligns to 384", TruesizeUDP(353), 960},
		{"one past the small head: kmalloc-1k", TruesizeUDP(354), 1024 + 256},
		{"UDP 1472 B payload: head 1856 in kmalloc-2k", TruesizeUDP(1500), 2048 + 256},
		{"64 KiB: an order-5 page block", TruesizeUDP(65535), 131072 + 256},
		{"half-page RX fragment", TruesizeFrag(2048), 2048 + 256},
		// CONFIG_MAX_SKB_FRAGS=45: skb_shared_info is 48 + 45 x 16 =
		// 768, the small head 384 + 768 = 1152.
		{"MAX_SKB_FRAGS 45: UDP 120 B payload", TruesizeUDPFrags(120+8+20, 45), 1152 + 256},
		{"MAX_SKB_FRAGS 45: largest small head 384 + 768", TruesizeUDPFrags(353, 45), 1152 + 256},
		{"MAX_SKB_FRAGS 45: one past: 1216 in kmalloc-2k", TruesizeUDPFrags(354, 45), 2048 + 256},
		{"MAX_SKB_FRAGS 17 explicitly", TruesizeUDPFrags(148, 17), 960},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: truesize %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
