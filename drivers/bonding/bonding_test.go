package bonding

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/skb"
)

// layer3+4 as the kernel computes it on x86: the ports and addresses as
// they sit in the packet (network order), read as little-endian u32s,
// XORed and folded; the lowest bit dropped.
func TestXmitHashLayer34Bytes(t *testing.T) {
	p := skb.Packet{Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010002, SrcPort: 32768, DstPort: 12866, Proto: 17}}
	le := func(b ...byte) uint32 { return binary.LittleEndian.Uint32(b) }
	h := le(0x80, 0x00, 0x32, 0x42) ^ le(10, 1, 0, 2) ^ le(10, 0, 0, 1) // ports, daddr, saddr
	h ^= h >> 16
	h ^= h >> 8
	got, _ := XmitHash(PolicyLayer34, p, false)
	if want := h >> 1; got != want || got != 0x20b9b979 {
		t.Fatalf("layer3+4 hash %#x, want %#x", got, want)
	}
	// layer2+3: bond_eth_hash in place of the ports, the lowest bit kept.
	e := uint32(0x02^0x01) ^ 0x0800 ^ le(10, 1, 0, 2) ^ le(10, 0, 0, 1)
	e ^= e >> 16
	e ^= e >> 8
	if got, _ := XmitHash(PolicyLayer23, p, false); got != e {
		t.Errorf("layer2+3 hash %#x, want %#x", got, e)
	}
	if got, _ := XmitHash(PolicyLayer2, p, false); got != 0x803 {
		t.Errorf("layer2 hash %#x, want 0x803: the one neighbour's MAC", got)
	}
	p.Hash = 0xdeadbeef
	if got, _ := XmitHash(PolicyEncap34, p, false); got != 0xdeadbeef {
		t.Errorf("encap3+4 on an skb with l4_hash: %#x, want skb->hash", got)
	}
}

// What bond_xmit_hash reads for each policy, and the lowest bit of the
// fold: only encap2+3 runs the flow dissector (bond_flow_dissect reads
// layer2+3's and layer3+4's headers itself, in 4.7 as now); layer3+4
// drops the lowest bit since b5f862180d70, layer2+3 keeps it
// (49aefd131739), and a 4.7/4.8 kernel keeps it for layer3+4 too.
func TestXmitHashWork(t *testing.T) {
	p := skb.Packet{Hash: 0xdeadbeef, Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010002, SrcPort: 32768, DstPort: 12866, Proto: 17}}
	const fold34 = 0x417372f2 // layer3+4's fold before the shift (TestXmitHashLayer34Bytes)
	for _, tc := range []struct {
		policy     Policy
		keepLowBit bool
		work       Work
		hash       uint32 // 0: not checked here
	}{
		{PolicyLayer2, false, WorkNone, 0x803},
		{PolicyLayer23, false, WorkHeaders, 0},
		{PolicyLayer34, false, WorkHeaders, fold34 >> 1},
		{PolicyLayer34, true, WorkHeaders, fold34},
		{PolicyEncap23, false, WorkDissect, 0},
		{PolicyEncap34, false, WorkNone, 0xdeadbeef},
		{PolicyVlanSrcMAC, false, WorkNone, 0x020000 ^ 0x000001},
	} {
		got, work := XmitHash(tc.policy, p, tc.keepLowBit)
		if work != tc.work {
			t.Errorf("%s: work %d, want %d", tc.policy, work, tc.work)
		}
		if tc.hash != 0 && got != tc.hash {
			t.Errorf("%s (keep low bit %v): hash %#x, want %#x", tc.policy, tc.keepLowBit, got, tc.hash)
		}
	}
	// layer2+3 keeps its lowest bit whatever the kernel.
	a, _ := XmitHash(PolicyLayer23, p, false)
	b, _ := XmitHash(PolicyLayer23, p, true)
	if a != b {
		t.Errorf("layer2+3: %#x and %#x", a, b)
	}
}

// Over many flows to one host from ephemeral ports, layer3+4 uses every
// slave and a flow always the same one.
func TestXmitHashSpreads(t *testing.T) {
	for _, n := range []uint32{2, 3, 4} {
		count := make([]int, n)
		for i := 0; i < 4000; i++ {
			p := skb.Packet{Keys: skb.FlowKeys{Src: 0x0a000001, Dst: 0x0a010002, SrcPort: uint16(32768 + uint32(i)*2654435761>>17), DstPort: 12866, Proto: 17}}
			h, _ := XmitHash(PolicyLayer34, p, false)
			h2, _ := XmitHash(PolicyLayer34, p, false)
			if h != h2 {
				t.Fatal("not a function of the flow")
			}
			count[h%n]++
		}
		for i, c := range count {
			if c < 4000/int(n)/2 {
				t.Errorf("%d slaves: slave %d got %d of 4000 flows (%v)", n, i, c, count)
			}
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  string // Words() of the result, or the error
	}{
		{"mode balance-xor xmit_hash_policy layer3+4 slaves 2", "bond0 mode balance-xor xmit_hash_policy layer3+4 packets_per_slave 1 numtxqueues 16 slaves 2"},
		{"bond1 mode 2 xmit_hash_policy 1 numtxqueues 8 slaves eth0,eth1", "bond1 mode balance-xor xmit_hash_policy layer3+4 packets_per_slave 1 numtxqueues 8 slaves eth0,eth1"},
		{"mode balance-rr packets_per_slave 0 tx_queues 4 slaves 1", "bond0 mode balance-rr xmit_hash_policy layer2 packets_per_slave 0 numtxqueues 4 slaves 1"},
		{"mode balance-xr slaves 2", `Error: argument "balance-xr" is wrong: invalid mode`},
		{"mode 802.3ad slaves 2", "mode 802.3ad is not modelled (balance-rr, active-backup and balance-xor are)"},
		{"mode balance-xor xmit_hash_policy layer4 slaves 2", `Error: argument "layer4" is wrong: invalid xmit_hash_policy`},
		{"mode balance-xor slaves 0", "slaves 0: a bond needs 1..64 slaves (bond_start_xmit drops every packet of a bond without one)"},
		{"mode balance-xor", "bond bond0 has no slaves: give \"slaves N\" (N new NICs) or \"slaves eth0,eth1\" (bond_start_xmit drops every packet of a bond without one)"},
		{"mode balance-xor slaves 2 mode balance-rr", `Error: duplicate "mode": "balance-rr" is the second value.`},
		{"mode balance-xor slaves 2 miimon 100", `bond: unknown command "miimon"? (a bond takes mode, xmit_hash_policy, packets_per_slave, numtxqueues or tx_queues, and slaves)`},
		{"mode balance-xor slaves", `Command line is not complete: "slaves" needs a value`},
		{"mode balance-rr numtxqueues 5000 slaves 1", "Error: Invalid number of transmit queues (numtxqueues 5000: 1..4096)."},
		{"mode balance-rr tx_queues 300 slaves 1", "tx_queues (300) should be between 1 and 255"},
		{"mode balance-rr packets_per_slave 70000 slaves 1", "option packets_per_slave: invalid value (70000): allowed values 0 - 65535"},
		{"mode balance-rr packets_per_slave x slaves 1", `Error: argument "x" is wrong: invalid packets_per_slave`},
		{"averyveryverylongname mode balance-rr slaves 1", `Error: argument "averyveryverylongname" is wrong: "name" not a valid ifname (at most 15 bytes)`},
	} {
		p, err := Parse(strings.Fields(tc.words), "bond0")
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = p.Words()
			back, err := Parse(strings.Fields(got), "x")
			if err != nil || back.Words() != got {
				t.Errorf("%q does not read back: %v, %q", got, err, back.Words())
			}
		}
		if got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.words, got, tc.want)
		}
	}
}

func TestParseList(t *testing.T) {
	ps, err := ParseList("mode balance-rr slaves 2; bond7 mode balance-xor slaves eth2 ; mode active-backup slaves bond7")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "bond0 bond7 bond2" {
		t.Errorf("names %v", names)
	}
	if _, err := ParseList("bond0 mode balance-rr slaves 1; bond0 mode balance-rr slaves 1"); err == nil || !strings.Contains(err.Error(), "File exists") {
		t.Errorf("two bond0: %v", err)
	}
	if _, err := ParseList("mode balance-rr slaves 1;;"); err == nil {
		t.Error("an empty bond in the list was accepted")
	}
}

func TestSelectQueue(t *testing.T) {
	for _, tc := range []struct {
		rx      uint16
		n, want int
	}{{0, 16, 0}, {1, 16, 0}, {5, 16, 4}, {17, 16, 0}, {40, 16, 7}, {3, 1, 0}} {
		if got := SelectQueue(tc.rx, tc.n); got != tc.want {
			t.Errorf("SelectQueue(%d, %d) = %d, want %d", tc.rx, tc.n, got, tc.want)
		}
	}
}
