package tcp

import (
	"slices"
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// scriptOut transmits, failing (a qdisc's NET_XMIT_DROP) the skbs whose
// index is in drop.
type scriptOut struct {
	drop map[int]bool
	n    int
}

func (*scriptOut) SmallQueueCheck(*Sock, int, uint) bool { return false }

func (o *scriptOut) Transmit(*Sock, int64, int, sim.Time, bool, bool) bool {
	o.n++
	return !o.drop[o.n-1]
}

func TestPacingStartsAtTenSegments(t *testing.T) {
	// __tcp_transmit_skb adds the skb to data_segs_out before
	// tcp_update_skb_after_send tests data_segs_out >= 10, and before
	// queue_xmit, so a dropped skb counts too. At 1,448,000 B/s a
	// segment is 1 ms; the clock stays at 0, so no credit.
	for _, c := range []struct {
		name string
		segs []int
		drop map[int]bool
		want []sim.Time // tcp_wstamp_ns after each skb
	}{
		{"one skb of 10 is paced", []int{10}, nil, []sim.Time{10 * sim.Millisecond}},
		{"the skb reaching 10", []int{9, 1, 2}, nil, []sim.Time{0, sim.Millisecond, 3 * sim.Millisecond}},
		{"4+4+4", []int{4, 4, 4}, nil, []sim.Time{0, 0, 4 * sim.Millisecond}},
		{"a dropped skb counts", []int{6, 4}, map[int]bool{0: true}, []sim.Time{0, 4 * sim.Millisecond}},
	} {
		tp := NewSock(Reno{}, false, 0)
		tp.PacingFQ, tp.PacingRate = true, 1448000
		out := &scriptOut{drop: c.drop}
		var got []sim.Time
		seq := int64(0)
		for _, n := range c.segs {
			tp.transmit(out, seq, n, false)
			seq += int64(n)
			got = append(got, tp.WstampNs)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: tcp_wstamp_ns %v, want %v", c.name, got, c.want)
		}
	}
}
