package units

import (
	"math"
	"strings"
	"testing"
)

func TestGetRate64(t *testing.T) {
	cases := []struct {
		in   string
		want uint64 // bytes/s, as tc sends it
		err  string
	}{
		{"100mbit", 12_500_000, ""},
		{"100Mbit", 12_500_000, ""},
		{"1gbit", 125_000_000, ""},
		{"25Gbit", 3_125_000_000, ""},
		{"100gbit", 12_500_000_000, ""},
		{"2.5gbit", 312_500_000, ""},
		{"1tbit", 125_000_000_000, ""},
		{"8000", 1000, ""}, // no unit: bits/s
		{"8000bit", 1000, ""},
		{"1001bit", 125, ""}, // tc truncates to whole bytes/s
		{"1kbit", 125, ""},
		{"1Kibit", 128, ""},
		{"1mibit", 131072, ""},
		{"1bps", 1, ""},          // bps is BYTES/s
		{"100kbps", 100_000, ""}, // matches KBps: 1000 bytes/s
		{"100gbps", 100_000_000_000, ""},
		{"1KiBps", 1024, ""},
		{"1MiBps", 1 << 20, ""},
		{"1e3kbit", 125_000, ""},
		{"0x10", 2, ""}, // strtod reads hex: 16 bit/s
		{".5mbit", 62_500, ""},
		{"0", 0, ""},
		{"100G", 0, `unknown unit "G"`},
		{"100M", 0, `unknown unit "M"`},
		{"5 mbit", 0, `unknown unit " mbit"`},
		{"0x10bit", 0, `unknown unit "it"`}, // "0x10b" is the hex number, as in C
		{"5ebit", 0, `unknown unit "ebit"`}, // no digits after e: not an exponent
		{"mbit", 0, "no number"},
		{"", 0, "no number"},
		{"-1mbit", 0, "negative"},
		{"1e400bit", 0, "out of range"},
		{"inf", 0, "inf and nan"},
		{"nan", 0, "inf and nan"},
		{"200000000000000000000tbit", 0, "out of range"},
	}
	for _, c := range cases {
		got, err := GetRate64(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("GetRate64(%q) = %d, %v; want error containing %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("GetRate64(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestGetRate(t *testing.T) {
	// get_rate keeps 32 bits: 34.359738360 Gbit/s is the most it takes.
	if r, err := GetRate("34359738360bit"); err != nil || r != math.MaxUint32 {
		t.Errorf("GetRate(34359738360bit) = %d, %v", r, err)
	}
	if _, err := GetRate("34359738368bit"); err == nil || !strings.Contains(err.Error(), "32-bit rate") {
		t.Errorf("GetRate above 2^32 bytes/s: %v", err)
	}
	if r, err := GetRate("10gbit"); err != nil || r != 1_250_000_000 {
		t.Errorf("GetRate(10gbit) = %d, %v", r, err)
	}
}

func TestGetSize(t *testing.T) {
	cases := []struct {
		in   string
		want uint32
		err  string
	}{
		{"1514", 1514, ""},
		{"1514b", 1514, ""},
		{"64kb", 65536, ""},
		{"64K", 65536, ""},
		{"32Mb", 32 << 20, ""},
		{"32m", 32 << 20, ""},
		{"1gb", 1 << 30, ""},
		{"8kbit", 1024, ""},
		{"8mbit", 1 << 20, ""},
		{"1.5k", 1536, ""},
		{"3028.9", 3028, ""}, // tc keeps the integer part
		{"4gb", 0, "32-bit size"},
		{"100p", 0, `unknown unit "p"`},
		{"10kib", 0, `unknown unit "kib"`},
		{"-1", 0, "negative"},
		{"b", 0, "no number"},
	}
	for _, c := range cases {
		got, err := GetSize(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("GetSize(%q) = %d, %v; want error containing %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("GetSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if n, err := GetSize64("4gb"); err != nil || n != 4<<30 {
		t.Errorf("GetSize64(4gb) = %d, %v", n, err)
	}
}

func TestGetTime(t *testing.T) {
	cases := []struct {
		in   string
		want uint32 // us
		err  string
	}{
		{"5ms", 5000, ""},
		{"100ms", 100_000, ""},
		{"1.5SEC", 1_500_000, ""},
		{"10s", 10_000_000, ""},
		{"40msecs", 40_000, ""},
		{"500us", 500, ""},
		{"500usec", 500, ""},
		{"100", 100, ""}, // no unit: microseconds
		{"1ns", 0, `unknown unit "ns"`},
		{"ms", 0, "no number"},
		{"-1", 0, "negative"},
		{"5000s", 0, "32-bit time"},
	}
	for _, c := range cases {
		got, err := GetTime(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("GetTime(%q) = %d, %v; want error containing %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("GetTime(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for in, want := range map[string]int64{"10us": 10_000, "1ms": 1_000_000, "500": 500, "500nsecs": 500, "2s": 2e9} {
		if got, err := GetTime64(in); err != nil || got != want {
			t.Errorf("GetTime64(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// The printers against text current tc prints: the fq line of a real
// `tc -s -d qdisc show` (quantum 3028b initial_quantum 15140b, quantum
// 18Kb initial_quantum 92120b at MTU 9000, low_rate_threshold 550Kbit,
// refill_delay 40ms, timer_slack 10us, horizon 10s, latency 19.1us and
// 2.32us), fq_codel's (memory_limit 32Mb, target 5ms from the kernel's
// 4999us, interval 100ms), cake's (rtt 100ms, memory used 15503616b of
// 15140Kb) and htb's (rate 100Mbit, burst 1600b).
func TestPrinters(t *testing.T) {
	sizes := map[uint64]string{3028: "3028b", 15140: "15140b", 18 * 1024: "18Kb", 92120: "92120b", 32 << 20: "32Mb",
		15503616: "15503616b", 15140 * 1024: "15140Kb", 1600: "1600b", 1514: "1514b", 65536: "64Kb",
		4 << 30: "4Gb", 1<<20 + 1000: "1Mb", 1<<20 + 1024: "1025Kb", 0: "0b"}
	for in, want := range sizes {
		if got := SprintSize(in); got != want {
			t.Errorf("SprintSize(%d) = %q, want %q", in, got, want)
		}
	}
	rates := map[uint64]string{68750: "550Kbit", 12_500_000: "100Mbit", 125: "1Kbit", 1: "8bit", 0: "0bit",
		187_500: "1500Kbit", 12_500_000_000: "100Gbit", 3_125_000_000: "25Gbit", 125_000_000_000_000: "1000Tbit",
		1_250_125: "10001Kbit", 100_000: "800Kbit"}
	for in, want := range rates {
		if got := SprintRate(in); got != want {
			t.Errorf("SprintRate(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[uint64]string{128: "1Kibit", 131072: "1Mibit", 125: "1000bit", 12_500_000: "97656Kibit"} {
		if got := SprintRateIEC(in); got != want {
			t.Errorf("SprintRateIEC(%d) = %q, want %q", in, got, want)
		}
	}
	times := map[uint32]string{40_000: "40ms", 10_000_000: "10s", 4999: "5ms", 100_000: "100ms", 500: "500us",
		1_500_000: "1.5s", 1000: "1ms", 999: "999us", 12345: "12.3ms", 0: "0us"}
	for in, want := range times {
		if got := SprintTime(in); got != want {
			t.Errorf("SprintTime(%d) = %q, want %q", in, got, want)
		}
	}
	times64 := map[int64]string{10_000: "10us", 19_100: "19.1us", 2_320: "2.32us", 500: "500ns", 2_500_000: "2.5ms",
		3e9: "3s", 1_000_000_000_000: "1e+03s"}
	for in, want := range times64 {
		if got := SprintTime64(in); got != want {
			t.Errorf("SprintTime64(%d) = %q, want %q", in, got, want)
		}
	}
}

// A printed value reads back as itself wherever the printer is exact.
func TestRoundTrip(t *testing.T) {
	for _, r := range []uint64{125, 68750, 12_500_000, 3_125_000_000, 1} {
		if got, err := GetRate64(SprintRate(r)); err != nil || got != r {
			t.Errorf("GetRate64(SprintRate(%d)) = %d, %v", r, got, err)
		}
	}
	for _, sz := range []uint64{1514, 3028, 65536, 32 << 20} {
		if got, err := GetSize64(SprintSize(sz)); err != nil || got != sz {
			t.Errorf("GetSize64(SprintSize(%d)) = %d, %v", sz, got, err)
		}
	}
	for _, us := range []uint32{5000, 100_000, 10_000_000, 500} {
		if got, err := GetTime(SprintTime(us)); err != nil || got != us {
			t.Errorf("GetTime(SprintTime(%d)) = %d, %v", us, got, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  string
	}{
		{"100gbit", 100e9, ""},
		{"100Gbit", 100e9, ""},
		{"25Gbit", 25e9, ""},
		{"2.5gbit", 2.5e9, ""},
		{"800mbit", 800e6, ""},
		{"100gbps", 800e9, ""}, // bytes, as tc reads bps
		{"12.5GBps", 100e9, ""},
		{"1000", 1000, ""},
		{" 10gbit ", 10e9, ""},
		{"0", 0, ""},
		{"100G", 0, `unknown unit "G"`},
		{"-5gbit", 0, "negative"},
		{"fast", 0, "not a rate"},
		{"", 0, "not a rate"},
		{"2pbit", 0, "unknown unit"},
		{"2000tbit", 0, "2000tbit is above 1 Pbit/s"},
		// tc keeps whole bytes/s: 15bit is 1 byte/s, 8bit; a rate that
		// is not 0 but below 1 byte/s would be 0, the line rate: refused.
		{"8bit", 8, ""},
		{"15bit", 8, ""},
		{"1Bps", 8, ""},
		{"7bit", 0, "7bit is below 8bit, the smallest rate (1 byte/s)"},
		{"0.1bit", 0, "0.1bit is below 8bit, the smallest rate (1 byte/s)"},
		{"1", 0, "1 is below 8bit"},
		{" 1bit ", 0, "1bit is below 8bit"},
		{"0.5Bps", 0, "0.5Bps is below 8bit"},
		{"1e-300kbit", 0, "below 8bit"},
		{"0bit", 0, ""},
		{"0.0e5gbit", 0, ""},
	}
	for _, c := range cases {
		got, err := ParseRate(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseRate(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// ParseRateBits reads a number of bits/s as ParseRate reads its word,
// checking it before it becomes an int64 (1e40 used to wrap to -2^63).
func TestParseRateBits(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
		err  string
	}{
		{100e9, 100e9, ""},
		{0, 0, ""},
		{15, 8, ""},
		{8, 8, ""},
		{7, 0, "7bit is below 8bit, the smallest rate (1 byte/s)"},
		{0.1, 0, "0.1bit is below 8bit"},
		{1e40, 0, "1e+40bit is above 1 Pbit/s"},
		{math.MaxInt64, 0, "9.223372036854776e+18bit is above 1 Pbit/s"},
		{-1, 0, "-1bit is not a rate: it is negative"},
		{math.Inf(1), 0, "+Infbit is not a rate"},
		{math.NaN(), 0, "NaNbit is not a rate"},
	} {
		got, err := ParseRateBits(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err && !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("ParseRateBits(%v) = %d, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRateBits(%v) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]float64{"5M": 5e6, "630K": 630e3, "5Mpps": 5e6, "100": 100} {
		if got, err := ParseCount(in); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseCount("-1"); err == nil {
		t.Error("negative count accepted")
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100gbit", "25Gbit", "-1", "1e400", "nan", "5kbps", "0x1p4KiBps", "100G", "7bit", "0.1bit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && (r < 0 || r%8 != 0) {
			t.Fatalf("ParseRate(%q) = %d without error", s, r)
		}
		// 0 is the driver's line rate: only a rate of 0 may read as 0.
		if b, berr := rateBytes(strings.TrimSpace(s)); err == nil && r == 0 && (berr != nil || b != 0) {
			t.Fatalf("ParseRate(%q) = 0 for %v bytes/s", s, b)
		}
		b, err := GetRate64(s)
		if err != nil {
			return
		}
		// What tc accepts it prints; print_rate only drops digits past
		// the thousandth of a unit it divides by, so the print reads
		// back a little low at most.
		if b > math.MaxUint64>>3 {
			return // tc's bits/s wrap in 64 bits
		}
		p := SprintRate(b)
		back, err := GetRate64(p)
		if err != nil || back > b || float64(back) < float64(b)*0.999 {
			t.Fatalf("GetRate64(%q) = %d; SprintRate = %q reads back %d, %v", s, b, p, back, err)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1514", "64kb", "32Mb", "1.5k", "4gb", "-1", "0x10", "8kbit", "1e19"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := GetSize64(s)
		if err != nil {
			return
		}
		if n32, err32 := GetSize(s); (err32 == nil) != (n <= math.MaxUint32) || (err32 == nil && uint64(n32) != n) {
			t.Fatalf("GetSize(%q) = %d, %v but GetSize64 = %d", s, n32, err32, n)
		}
		// sprint_size is exact below 1Kb and for whole Kb (up to the six
		// digits of %g).
		if n < 1024 || n%1024 == 0 && n < 1024*1e6 { // %g keeps six digits
			if back, err := GetSize64(SprintSize(n)); err != nil || back != n {
				t.Fatalf("GetSize64(SprintSize(%d) = %q) = %d, %v", n, SprintSize(n), back, err)
			}
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"5ms", "100us", "1.5s", "10", "-1", "1e10s", "3usecs", "0x20ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ns, err := GetTime64(s); err == nil && ns < 0 {
			t.Fatalf("GetTime64(%q) = %d", s, ns)
		}
		us, err := GetTime(s)
		if err != nil {
			return
		}
		// sprint_time keeps three significant digits: what it prints
		// reads back within half a unit of the third digit.
		back, err := GetTime(SprintTime(us))
		if err != nil || math.Abs(float64(back)-float64(us)) > float64(us)/200+1 {
			t.Fatalf("GetTime(SprintTime(%d) = %q) = %d, %v", us, SprintTime(us), back, err)
		}
	})
}

// get_unsigned and get_integer read the whole word with strtoul/strtol.
func TestGetUnsignedInteger(t *testing.T) {
	for _, c := range []struct {
		in   string
		base int
		want uint32
		err  string
	}{
		{"100", 0, 100, ""}, {"0x10", 0, 16, ""}, {"010", 0, 8, ""}, {"0", 0, 0, ""}, {"-0", 0, 0, ""},
		{" 5", 0, 5, ""}, {"+7", 10, 7, ""}, {"010", 10, 10, ""}, {"ff", 16, 255, ""}, {"0xff", 16, 255, ""},
		{"4294967295", 0, math.MaxUint32, ""}, {"4294967296", 0, 0, "out of range"}, {"-1", 0, 0, "out of range"},
		{"12a", 0, 0, "not a number to its end"}, {"100p", 0, 0, "not a number to its end"}, {"0x", 0, 0, "not a number to its end"},
		{"", 0, 0, "no number"}, {"08", 0, 0, "not a number to its end"}, {"99999999999999999999999", 0, 0, "out of range"},
	} {
		got, err := GetUnsigned(c.in, c.base)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("GetUnsigned(%q, %d) = %d, %v; want %q", c.in, c.base, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("GetUnsigned(%q, %d) = %d, %v; want %d", c.in, c.base, got, err, c.want)
		}
	}
	for in, want := range map[string]int32{"-5": -5, "2147483647": math.MaxInt32, "-2147483648": math.MinInt32, "0x10": 16} {
		if got, err := GetInteger(in, 0); err != nil || got != want {
			t.Errorf("GetInteger(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"2147483648", "-2147483649", "1.5", "x"} {
		if _, err := GetInteger(in, 0); err == nil {
			t.Errorf("GetInteger(%q) accepted", in)
		}
	}
}

// RangeList writes runs as ranges, as /proc/irq/N/smp_affinity_list and
// sbatch's --array do.
func TestRangeList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{5}, "5"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{0, 1, 3, 7, 8}, "0-1,3,7-8"},
		{[]int{80, 81, 82, 120}, "80-82,120"},
	} {
		if got := RangeList(tc.in); got != tc.want {
			t.Errorf("RangeList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
