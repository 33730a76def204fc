package run

import (
	"slices"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// The report's RTT distribution: every sample (sorted) up to
// report.CDFPoints; beyond, that many points, point j the nearest-rank
// value at fraction (j+1)/k, the last the largest sample.
func TestPercentilesCDF(t *testing.T) {
	ms := func(v ...int) []sim.Time {
		var out []sim.Time
		for _, x := range v {
			out = append(out, sim.Time(x)*sim.Millisecond)
		}
		return out
	}
	if got := percentiles(ms(5, 1, 3)).CDF; !slices.Equal(got, []float64{1, 3, 5}) {
		t.Errorf("3 samples: CDF %v, want them sorted", got)
	}
	if got := percentiles(nil).CDF; got != nil {
		t.Errorf("no samples: CDF %v", got)
	}
	for _, n := range []int{200, 201, 1000, 4321} {
		var in []sim.Time
		for i := n; i >= 1; i-- { // descending: the order must not matter
			in = append(in, sim.Time(i)*sim.Millisecond)
		}
		p := percentiles(in)
		k := len(p.CDF)
		if k != report.CDFPoints {
			t.Fatalf("%d samples: %d CDF points, want %d", n, k, report.CDFPoints)
		}
		if p.CDF[k-1] != float64(n) {
			t.Errorf("%d samples: last point %v, want the largest, %d", n, p.CDF[k-1], n)
		}
		for j, v := range p.CDF {
			// samples 1..n ms: v ms has v samples at or below it
			f := report.CDFFraction(j, k)
			if v/float64(n) < f-1e-12 || (v-1)/float64(n) >= f {
				t.Errorf("%d samples: point %d = %v ms is not the value at fraction %.4f", n, j, v, f)
			}
		}
		if p.P99 != p.CDF[int(0.99*float64(k))-1] && n%k == 0 {
			t.Errorf("%d samples: p99 %v not on the CDF", n, p.P99)
		}
	}
}

// The RTT series: per interval the mean RTT of the requests sent within
// it, whatever order the answers came in; nil where none was sent.
func TestLatencySeries(t *testing.T) {
	ivs := []report.Interval{{StartNs: 0, EndNs: 10}, {StartNs: 10, EndNs: 20}, {StartNs: 20, EndNs: 30}}
	ms := sim.Millisecond
	samples := []workload.Sample{{At: 12, RTT: 3 * ms}, {At: 0, RTT: 2 * ms}, {At: 19, RTT: 5 * ms}, {At: 30, RTT: 9 * ms}, {At: 9, RTT: 4 * ms}}
	got := rttSeries(samples, ivs)
	want := []float64{3, 4, -1}
	if len(got) != len(want) {
		t.Fatalf("rttSeries: %d values, want %d", len(got), len(want))
	}
	for i, w := range want {
		switch {
		case w < 0 && got[i] != nil:
			t.Errorf("[%d] = %v, want nil", i, *got[i])
		case w >= 0 && (got[i] == nil || *got[i] != w):
			t.Errorf("[%d] = %v, want %v", i, got[i], w)
		}
	}
	if rttSeries(samples, nil) != nil {
		t.Error("a series without intervals")
	}
}
