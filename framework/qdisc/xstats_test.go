package qdisc

import (
	"math"
	"testing"
)

// Texts as iproute2 prints them (print_size, print_rate without -iec,
// print_time64), numbers as JSON reports keep them.
func TestXStatText(t *testing.T) {
	for _, tc := range []struct {
		x         XStat
		text, num string
	}{
		{XInt("drops", -3), "-3", "-3"},
		{XUint("big", math.MaxUint64), "18446744073709551615", "18446744073709551615"},
		{XSize("memory_used", 1514), "1514b", "1514"},
		{XSize("memory_used", 65536), "64Kb", "65536"},
		{XSize("memory_used", 32<<20), "32Mb", "33554432"},
		{XRate("rate", 125_000_000), "1Gbit", "125000000"},
		{XRate("rate", 12_500_000), "100Mbit", "12500000"},
		{XRate("rate", 125), "1Kbit", "125"},
		{XRate("rate", 1001), "8008bit", "1001"},
		{XTime("delay", 5_000_000), "5ms", "5000000"},
		{XTime("delay", 1_234_567), "1.23ms", "1234567"},
		{XTime("delay", 999), "999ns", "999"},
		{XTime("delay", 2_500), "2.5us", "2500"},
		{XTime("delay", 3_000_000_000), "3s", "3000000000"},
		{XFloat("prob", 0.0125), "0.0125", "0.0125"},
		{XFloat("prob", 1.2512044e-05), "1.2512e-05", "1.2512044e-05"},
		{XFloat("prob", math.NaN()), "0", "0"},
	} {
		if got := tc.x.Text(); got != tc.text {
			t.Errorf("%s %+v: text %q, want %q", tc.x.Key, tc.x, got, tc.text)
		}
		if got := tc.x.Number(); got != tc.num {
			t.Errorf("%s %+v: number %q, want %q", tc.x.Key, tc.x, got, tc.num)
		}
	}
	if XUint("big", math.MaxUint64).Int64() != math.MaxInt64 || XInt("n", -5).Int64() != -5 {
		t.Error("Int64 does not saturate or keep the sign")
	}
	if XFloat("p", 2.75).Int64() != 2 {
		t.Error("Int64 of a float")
	}
	if XType(numXTypes).Valid() || !XTypeFloat.Valid() {
		t.Error("Valid")
	}
}
