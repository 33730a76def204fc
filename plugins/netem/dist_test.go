package netem

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The kernel's own prandom self-test vectors (lib/random32.c,
// CONFIG_RANDOM32_SELFTEST, "test cases against taus113 from GSL"):
// seeded with its LCG and warmed up ten draws.
func TestPrandomSelftest(t *testing.T) {
	seed := func(v uint32) *rndState {
		s := &rndState{}
		s.s1 = seedFix(v*69069, 2)
		s.s2 = seedFix(s.s1*69069, 8)
		s.s3 = seedFix(s.s2*69069, 16)
		s.s4 = seedFix(s.s3*69069, 128)
		for range 10 {
			s.prandomU32State()
		}
		return s
	}
	for _, c := range [][2]uint32{{1, 3484351685}, {2, 2623130059}, {3, 3125133893}, {4, 984847254}} {
		if got := seed(c[0]).prandomU32State(); got != c[1] {
			t.Errorf("test1 seed %d: %d, want %d", c[0], got, c[1])
		}
	}
	for _, c := range [][3]uint32{{931557656, 959, 2975593782}, {1339693295, 876, 3887776532}, {1545556285, 961, 1615538833}} {
		s := seed(c[0])
		var v uint32
		for range c[1] {
			v = s.prandomU32State()
		}
		if v != c[2] {
			t.Errorf("test2 seed %d after %d: %d, want %d", c[0], c[1], v, c[2])
		}
	}
}

// A correlated stream's values are closer to the last than fresh ones:
// with rho = 3/4 the mean step is about a quarter of the uncorrelated one.
func TestCrandomCorrelation(t *testing.T) {
	var p rndState
	p.prandomSeedState(42)
	step := func(st *crndState) float64 {
		prev := float64(getCrandom(st, &p))
		var sum float64
		for range 20000 {
			v := float64(getCrandom(st, &p))
			sum += math.Abs(v - prev)
			prev = v
		}
		return sum / 20000 / (1 << 32)
	}
	free, corr := step(nil), step(&crndState{rho: 3 << 30})
	if math.Abs(free-1.0/3) > 0.01 || corr > free/3 {
		t.Fatalf("mean |step|: uncorrelated %.3f (want 1/3), rho 75%% %.3f", free, corr)
	}
}

// The tables are the inverse CDFs iproute2's generators print: 4096
// entries, non-decreasing, the normal one symmetric with standard
// deviation NETEM_DIST_SCALE, the Pareto one from -5461 (the mean shift
// at the top of the tail fraction) capped at 32767.
func TestTables(t *testing.T) {
	for name, f := range distTables {
		tab := f()
		if len(tab) != 4096 || !slices.IsSorted(tab) {
			t.Errorf("%s: %d entries, sorted %v", name, len(tab), slices.IsSorted(tab))
		}
	}
	n := normalTable()
	var sum, sq float64
	for _, v := range n {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean, sd := sum/4096, math.Sqrt(sq/4096-(sum/4096)*(sum/4096))
	if math.Abs(mean) > 20 || math.Abs(sd-netemDistScale) > 0.02*netemDistScale || n[0] != math.MinInt16 {
		t.Errorf("normal: mean %.1f sd %.1f first %d", mean, sd, n[0])
	}
	if p := paretoTable(); p[0] != -5461 || p[4095] != 32767 {
		t.Errorf("pareto: first %d last %d", p[0], p[4095])
	}
	// Where iproute2's generated files are at hand (TXLAB_NETEM_DIST=dir
	// holding normal.dist etc. from its netem/ generators), compare.
	if dir := os.Getenv("TXLAB_NETEM_DIST"); dir != "" {
		for name, f := range distTables {
			b, err := os.ReadFile(dir + "/" + name + ".dist")
			if err != nil {
				t.Fatal(err)
			}
			var ref []int16
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "#") {
					continue
				}
				for _, w := range strings.Fields(line) {
					v, _ := strconv.Atoi(w)
					ref = append(ref, int16(v))
				}
			}
			diff := 0
			for i, v := range f() {
				if i >= len(ref) || ref[i] != v {
					diff++
				}
			}
			t.Logf("%s: %d of %d entries differ from %s", name, diff, len(ref), dir)
			if diff > 0 {
				t.Errorf("%s differs from iproute2's in %d entries", name, diff)
			}
		}
	}
}

// tabledist by hand: without a table, uniform in [mu-sigma, mu+sigma);
// with one, mu + sigma x entry / NETEM_DIST_SCALE, rounded.
func TestTabledist(t *testing.T) {
	var p rndState
	p.prandomSeedState(7)
	if v := tabledist(50, 0, nil, &p, nil); v != 50 {
		t.Fatalf("sigma 0: %d", v)
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for range 10000 {
		v := tabledist(1000, 100, nil, &p, nil)
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo != 900 || hi != 1099 {
		t.Fatalf("uniform 1000 +- 100: [%d, %d]", lo, hi)
	}
	// A one-entry table: the entry is the value. sigma 10000, t 4096:
	// (10000 % 8192) * 4096 = 7405568, +4096, /8192 = 904; + 1 * 4096.
	if v := tabledist(0, 10000, nil, &p, []int16{4096}); v != 904+4096 {
		t.Fatalf("table: %d", v)
	}
	if v := tabledist(0, 10000, nil, &p, []int16{-4096}); v != -904-4096 {
		t.Fatalf("table negative: %d", v)
	}
}
