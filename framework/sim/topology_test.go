package sim

import (
	"math"
	"strings"
	"testing"
)

// Absurd topologies are an error, never a wrapped product, a division by
// zero or a huge allocation (issue 13: --sockets 4294967296 --cores
// 4294967296 used to wrap around the 8192-CPU check).
func TestTopologyValidate(t *testing.T) {
	tests := []struct {
		s, c, th int
		want     string // "" for valid
	}{
		{1, 1, 1, ""},
		{2, 120, 2, ""},
		{1, 8192, 1, ""},
		{8, 128, 8, ""},
		{0, 1, 1, "sockets must be in [1, 8192], got 0"},
		{-1, 1, 1, "sockets must be in [1, 8192], got -1"},
		{1, 0, 1, "cores per socket must be in [1, 8192], got 0"},
		{1, 1, 0, "threads per core must be 1..8, got 0"},
		{1, 1, 9, "threads per core must be 1..8, got 9"},
		{4294967296, 4294967296, 1, "sockets must be in [1, 8192], got 4294967296"},
		{1 << 32, 1 << 32, 2, "sockets must be in [1, 8192]"},
		{1, 1 << 62, 4, "cores per socket must be in [1, 8192]"},
		{math.MaxInt, math.MaxInt, 8, "sockets must be in [1, 8192]"},
		{math.MinInt, 1, 1, "sockets must be in [1, 8192]"},
		{8192, 8192, 8, "8192 sockets x 8192 cores x 8 threads is 536870912 CPUs, more than the 8192 supported"},
		{2, 4097, 1, "is 8194 CPUs, more than the 8192 supported"},
	}
	for _, tt := range tests {
		topo := Topology{Sockets: tt.s, CoresPerSocket: tt.c, ThreadsPerCore: tt.th}
		err := topo.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", topo, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want %q", topo, err, tt.want)
		}
		// NewEngine refuses the same, without panicking.
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%+v: NewEngine panicked: %v", topo, r)
				}
			}()
			e, err := NewEngine(topo, DefaultCosts(), 1)
			if (err == nil) != (tt.want == "") {
				t.Errorf("%+v: NewEngine error %v", topo, err)
			}
			if e != nil {
				if len(e.CPUs) != topo.NumCPUs() {
					t.Errorf("%+v: %d CPUs", topo, len(e.CPUs))
				}
				e.Close()
			}
		}()
	}
	if _, err := NewEngine(Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, nil, 1); err == nil {
		t.Error("NewEngine without costs: no error")
	}
}

// The engine's Distance, from the CPUs' recorded places, agrees with
// the topology's for every pair of CPUs.
func TestEngineDistance(t *testing.T) {
	for _, topo := range []Topology{{1, 4, 1}, {2, 3, 2}, {2, 2, 4}} {
		e, err := NewEngine(topo, DefaultCosts(), 1)
		if err != nil {
			t.Fatal(err)
		}
		for a := 0; a < topo.NumCPUs(); a++ {
			for b := 0; b < topo.NumCPUs(); b++ {
				if got, want := e.Distance(a, b), topo.Distance(a, b); got != want {
					t.Errorf("%+v: Distance(%d, %d) = %d, want %d", topo, a, b, got, want)
				}
			}
		}
	}
}
