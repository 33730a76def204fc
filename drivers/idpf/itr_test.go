package idpf

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// idpf_vport_init copies its DIM tables with memcpy(dst, src,
// IDPF_DIM_PROFILE_SLOTS): five bytes of a u16[5] into the kzalloc'ed
// vport, so only the first two entries and the low byte of the third
// arrive; the last two profiles are ITR 0.
func TestDIMProfileAsVportInitCopiesIt(t *testing.T) {
	us := sim.Microsecond
	for _, tc := range []struct {
		name string
		got  [DimProfileSlots]sim.Time
		want [DimProfileSlots]sim.Time
	}{
		{"tx_itr_profile", TxITRProfile, [DimProfileSlots]sim.Time{2 * us, 8 * us, 64 * us, 0, 0}},
		{"rx_itr_profile", RxITRProfile, [DimProfileSlots]sim.Time{2 * us, 8 * us, 32 * us, 0, 0}},
		{"short copy of 300 (0x12c): its low byte, 0x2c", vportInitProfile([DimProfileSlots]uint16{2, 8, 300, 400, 500}), [DimProfileSlots]sim.Time{2 * us, 8 * us, 44 * us, 0, 0}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// With DIM at a profile the short copy left empty, idpf_tx_dim_work
// writes ITR 0: the vector's interrupts are not throttled. A packet's
// RE (descriptor fetch) completion raises one; the poll it runs finds
// the RS completion not yet written, and the next interrupt comes when
// it is, not an interval after the first.
func TestTxDIMProfileZeroUnthrottled(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	q := d.qs[0]
	q.dim.ProfileIx = 3
	d.vecs[0].ITR = TxITRProfile[q.dim.ProfileIx]
	if d.vecs[0].ITR != 0 {
		t.Fatalf("profile 3's ITR %v, want 0", d.vecs[0].ITR)
	}
	f := newFake(t, 1, false)
	f.Xmit(d, 0, f.Packets(0, 1, 100))
	if len(f.Irqs) != 1 || len(q.fetch) != 1 || f.Irqs[0].At != q.fetch[0].at {
		t.Fatalf("interrupts %v, fetch completions %v: want one at the fetch", f.Irqs, q.fetch)
	}
	first := f.Irqs[0]
	f.Irqs = nil
	f.Clock = first.At
	f.Poll(d, 0, nil)
	if len(q.rs) != 1 || q.rs[0].at <= f.Clock {
		t.Fatalf("the RS completion %v should come after the poll at %v", q.rs, f.Clock)
	}
	if len(f.Irqs) != 1 || f.Irqs[0].At != q.rs[0].at {
		t.Fatalf("interrupts %v: want the next at the RS completion, %v", f.Irqs, q.rs[0].at)
	}
}
