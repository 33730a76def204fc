package psched

import (
	"math"
	"testing"
)

// psched_ratecfg_precompute picks the largest mult below 2^31: the
// reciprocal is exact for rates that divide 1e9 and within a part in
// 2^31 otherwise.
func TestRatecfg(t *testing.T) {
	for _, c := range []struct {
		rate      uint64
		len       uint32
		wantNs    uint64
		exact     bool
		overhead  uint16
		mpu       uint16
		linklayer uint8
	}{
		{rate: 125_000_000, len: 1500, wantNs: 12000, exact: true}, // 1 Gbit/s
		{rate: 1250, len: 1500, wantNs: 1_200_000_000, exact: true},
		{rate: 12_500_000_000, len: 1500, wantNs: 120},                   // 100 Gbit/s, RATE64: 0.08 ns a byte, truncated
		{rate: 3_000_000, len: 1000, wantNs: 333333},                     // 24 Mbit/s: 333333.3 ns
		{rate: 2500, len: 1500, overhead: 300, wantNs: 720_000_000},      // tc-testing c975
		{rate: 2500, len: 1500, linklayer: LinkATM, wantNs: 678_400_000}, // 32 cells of 53
		{rate: 125_000, len: 40, mpu: 64, wantNs: 512_000, exact: true},
	} {
		r := Precompute(uint32(min(c.rate, math.MaxUint32)), c.rate, c.overhead, c.mpu, c.linklayer)
		got := r.L2T(c.len)
		if c.exact && got != c.wantNs || !c.exact && (got > c.wantNs || c.wantNs-got > 1) {
			t.Errorf("rate %d len %d: %d ns (mult %d shift %d), want %d", c.rate, c.len, got, r.Mult, r.Shift, c.wantNs)
		}
		if r.Mult&(1<<31) == 0 && uint64(1e9)<<r.Shift&(1<<63) == 0 {
			t.Errorf("rate %d: mult %d shift %d stopped early", c.rate, r.Mult, r.Shift)
		}
	}
	if r := Precompute(0, 0, 0, 0, 0); r.Mult != 1 || r.Shift != 0 || r.Present() {
		t.Errorf("rate 0: %+v", r)
	}
}

// tc's ticks: 64 ns, tc_calc_xmittime rounding up, tc_calc_xmitsize back.
func TestTicks(t *testing.T) {
	if TicksToNs(3) != 192 || NsToTicks(191) != 2 {
		t.Fatal("PSCHED_SHIFT 6")
	}
	// htb's tokens in debt: an arithmetic shift rounds toward -inf.
	if SignedNsToTicks(191) != 2 || SignedNsToTicks(-1) != -1 || SignedNsToTicks(-128) != -2 || SignedNsToTicks(-129) != -3 {
		t.Fatal("signed PSCHED_NS2TICKS")
	}
	// 1500 bytes at 1250 B/s: 1.2 s = 18750000 ticks.
	if got := CalcXmittime(1250, 1500); got != 18_750_000 {
		t.Fatalf("xmittime %d", got)
	}
	if got := CalcXmitsize(1250, 18_750_000); got != 1500 {
		t.Fatalf("xmitsize %d", got)
	}
	if got := CalcXmittime(1, 1<<40); got != math.MaxUint32 {
		t.Fatalf("saturates: %d", got)
	}
}

func TestWords(t *testing.T) {
	if !Matches("lat", "latency") || Matches("", "limit") || Matches("limits", "limit") {
		t.Fatal("matches")
	}
	for _, c := range []struct {
		in   string
		size uint64
		cell int
		ok   bool
	}{{"10kb", 10240, -1, true}, {"1514/8", 1514, 3, true}, {"64k/1", 65536, 0, true}, {"1k/3", 0, -1, false}, {"x/8", 0, -1, false}} {
		s, cl, err := SizeAndCell(c.in)
		if (err == nil) != c.ok || c.ok && (s != c.size || cl != c.cell) {
			t.Errorf("SizeAndCell(%q) = %d, %d, %v", c.in, s, cl, err)
		}
	}
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{{"1%", .01, true}, {"0.5", .005, true}, {"100%", 1, true}, {"101%", 0, false}, {"5x", 0, false}, {"-1%", 0, false}} {
		v, err := Percent(c.in)
		if (err == nil) != c.ok || c.ok && math.Abs(v-c.want) > 1e-12 {
			t.Errorf("Percent(%q) = %v, %v", c.in, v, err)
		}
	}
	if Scaled(1) != math.MaxUint32 || Scaled(0.01) != 42949673 {
		t.Errorf("set_percent: %d %d", Scaled(1), Scaled(0.01))
	}
	if r, err := PercentRate64("10%", 10e9); err != nil || r != 125_000_000 {
		t.Errorf("10%% of 10 Gbit/s: %d %v", r, err)
	}
	if _, err := PercentRate64("10%", 0); err == nil {
		t.Error("a percentage of no speed")
	}
	for in, want := range map[string]uint8{"ethernet": LinkEthernet, "eth": LinkEthernet, "atm": LinkATM, "adsl": LinkATM} {
		if l, err := Linklayer(in); err != nil || l != want {
			t.Errorf("Linklayer(%q) = %d %v", in, l, err)
		}
	}
	if _, err := Linklayer("x25"); err == nil {
		t.Error("x25")
	}
}
