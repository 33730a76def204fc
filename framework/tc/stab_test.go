package tc

import (
	"slices"
	"strings"
	"testing"
)

// tc's parse_size_table and tc_calc_size_table, and the kernel's
// __qdisc_calculate_pkt_len over the table tc sends.
func TestStab(t *testing.T) {
	for _, tt := range []struct {
		words   string
		show    string // print_size_table
		lens    []uint32
		pktLens []uint32
		rest    string // the words after the table: the kind's
	}{
		// Only an overhead: no table (mtu and tsize 0), len + overhead.
		{"stab overhead 44 htb default 12", " overhead 44 ", []uint32{60, 1514}, []uint32{104, 1558}, "htb default 12"},
		{"stab overhead -10 linklayer ethernet fq", " linklayer ethernet overhead -10 ", []uint32{5, 1000}, []uint32{1, 990}, "fq"},
		// ATM: 48-byte cells sent as 53; 2047 over 512 slots is cells
		// of 4 bytes (cell_log 2), each slot the ATM size of its top.
		{"stab linklayer adsl overhead 40 mtu 2047 tsize 512 fq_codel", " linklayer atm overhead 40 mtu 2047 tsize 512 ", []uint32{8, 60, 1500}, []uint32{53, 159, 1749}, "fq_codel"},
		// mpu: a minimum size, and a table (no link layer given: none shown).
		{"stab mpu 64 pfifo", " mpu 64 mtu 2047 tsize 512 ", []uint32{40, 64, 65, 1500}, []uint32{64, 64, 68, 1500}, "pfifo"},
	} {
		q, err := ParseQdisc(strings.Fields(tt.words))
		if err != nil {
			t.Fatalf("%q: %v", tt.words, err)
		}
		if q.Stab == nil || q.Stab.String() != tt.show || strings.Join(append([]string{q.Kind}, q.Options...), " ") != tt.rest {
			t.Errorf("%q: %+v, shown %q, rest %s %v", tt.words, q.Stab, q.Stab.String(), q.Kind, q.Options)
			continue
		}
		var got []uint32
		for _, l := range tt.lens {
			got = append(got, q.Stab.PktLen(l))
		}
		if !slices.Equal(got, tt.pktLens) {
			t.Errorf("%q: lengths %v count as %v, want %v", tt.words, tt.lens, got, tt.pktLens)
		}
		// The words printed back make the same table.
		again, err := ParseQdisc(q.Words())
		if err != nil || again.Stab.String() != q.Stab.String() || !slices.Equal(again.Stab.Data, q.Stab.Data) {
			t.Errorf("%q printed back as %q: %v", tt.words, q.Words(), err)
		}
	}
}
