package ifname

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"eth0", true},
		{"bond0.100", true},
		{"ifb-in", true},
		{strings.Repeat("a", 15), true},
		{strings.Repeat("a", 16), false}, // IFNAMSIZ with no room for the NUL
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a/b", false},
		{"eth0:1", false},
		{"eth 0", false},
		{"eth\t0", false},
		{"eth\v0", false}, // isspace, not only ' ' and '\t'
		{"eth\f0", false},
		{"eth\r0", false},
	} {
		if got := Valid(c.name); got != c.ok {
			t.Errorf("Valid(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}
