package idpf

import "testing"

// idpf never calls netif_set_xps_queue (ice does, ice_cfg_xps_tx_ring;
// idpf's queue and vector setup in idpf_txrx.c and idpf_lib.c sets only
// the IRQs' affinity): the device's own XPS map stays empty and every
// socket's queue is skb_tx_hash's.
func TestNoDriverXPSMap(t *testing.T) {
	info, err := (&IDPF{}).Init(setup(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !info.NoXPS {
		t.Error("Info.NoXPS false: the host would give each queue its IRQ CPU as an XPS map idpf never sets")
	}
}
