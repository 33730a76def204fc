package units

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  string
	}{
		{"100G", 100e9, ""},
		{"25Gbit", 25e9, ""},
		{"2.5g", 2.5e9, ""},
		{"800M", 800e6, ""},
		{"1000", 1000, ""},
		{"0", 0, ""},
		{"-5G", 0, "negative"},
		{"fast", 0, "not a rate"},
		{"", 0, "not a rate"},
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
	for _, s := range []string{"100G", "25Gbit", "-1", "1e400", "nan", "5kbps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && r < 0 {
			t.Fatalf("ParseRate(%q) = %d without error", s, r)
		}
	})
}
