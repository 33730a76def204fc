package skb

import "testing"

func TestTruesize(t *testing.T) {
	if got := SmallHeadCacheSize(); got != 704 {
		t.Fatalf("SKB_SMALL_HEAD_CACHE_SIZE = %d, want 704", got)
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
	} {
		if tc.got != tc.want {
			t.Errorf("%s: truesize %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
