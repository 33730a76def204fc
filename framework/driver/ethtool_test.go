package driver

import (
	"reflect"
	"testing"
)

// Queue 0's list is the template: device-wide lines before its first
// per-queue line lead (summed), every queue's own lines follow in queue
// order, device-wide lines after them close (summed) — ice's VSI lines,
// tx_queue_N lines, then its .nic port lines.
func TestEthtoolLines(t *testing.T) {
	q := func(i int, n uint64) QueueStats {
		return QueueStats{Queue: i, Ethtool: []Counter{
			{Name: "tx_unicast", Value: n, Dev: true},
			{Name: "tx_queue_" + string(rune('0'+i)) + "_packets", Value: n},
			{Name: "tx_unicast.nic", Value: n, Dev: true},
		}}
	}
	got := EthtoolLines([]QueueStats{q(0, 5), q(1, 7), q(2, 1)})
	want := []Counter{{Name: "tx_unicast", Value: 13, Dev: true},
		{Name: "tx_queue_0_packets", Value: 5}, {Name: "tx_queue_1_packets", Value: 7}, {Name: "tx_queue_2_packets", Value: 1},
		{Name: "tx_unicast.nic", Value: 13, Dev: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if EthtoolLines(nil) != nil || len(EthtoolLines([]QueueStats{{}})) != 0 {
		t.Error("no queues or no lines: no ethtool lines")
	}
}
