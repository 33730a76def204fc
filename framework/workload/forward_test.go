package workload

import (
	"math"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// split is an uneven RSS split of 10 flows over 3 queues.
var split = [][]int32{{0, 3, 4, 9}, {1, 2, 5, 6, 7, 8}, {}}

// drain takes every frame of s up to t and checks arrival order.
func drain(t *testing.T, s interface {
	Peek() (sim.Time, int32, bool)
	Pop()
}, until sim.Time, flows []int32) (n int, perFlow map[int32]int) {
	t.Helper()
	perFlow = map[int32]int{}
	last := sim.Time(-1)
	for {
		at, f, ok := s.Peek()
		if !ok || at > until {
			return
		}
		if at < last {
			t.Fatalf("frame at %v after one at %v", at, last)
		}
		found := false
		for _, x := range flows {
			found = found || x == f
		}
		if !found {
			t.Fatalf("flow %d is not the queue's (%v)", f, flows)
		}
		last = at
		perFlow[f]++
		n++
		s.Pop()
	}
}

// A constant-rate generator sends frame k at k/rate with the flows in
// turn: the queues' streams together are exactly that sequence.
func TestConstantStreams(t *testing.T) {
	const rate, flows = 5e6, 10
	until := 100 * sim.Microsecond
	total := 0
	var all []sim.Time
	for _, fl := range split {
		s := &constStream{flows: fl, nflows: flows, period: float64(sim.Second) / rate}
		for {
			at, f, ok := s.Peek()
			if !ok || at > until {
				break
			}
			if k := int64(math.Round(float64(at) * rate / float64(sim.Second))); k%flows != int64(f) {
				t.Fatalf("frame at %v (k=%d) is flow %d, want %d", at, k, f, k%flows)
			}
			all = append(all, at)
			s.Pop()
		}
		n, per := drain(t, &constStream{flows: fl, nflows: flows, period: float64(sim.Second) / rate}, until, fl)
		total += n
		for _, f := range fl {
			if per[f] != 50 && per[f] != 51 {
				t.Errorf("flow %d sent %d frames in 100 us at 500K/s", f, per[f])
			}
		}
	}
	if want := int(until*rate/sim.Second) + 1; total != want {
		t.Errorf("%d frames in %v at %g/s, want %d", total, until, rate, want)
	}
	seen := map[sim.Time]bool{}
	for _, at := range all {
		if seen[at] {
			t.Fatalf("two frames at %v", at)
		}
		seen[at] = true
	}
}

// A Poisson generator's queues carry their share of the rate, each
// flow about equally, in arrival order.
func TestPoissonStreams(t *testing.T) {
	const rate, flows = 2e6, 10
	until := 50 * sim.Millisecond
	for q, fl := range split {
		s := newPoissonStream(fl, flows, rate, sim.NewRand(sim.Seed{uint64(q), 9}))
		n, per := drain(t, s, until, fl)
		mean := rate * float64(len(fl)) / flows * float64(until) / float64(sim.Second)
		if math.Abs(float64(n)-mean) > 5*math.Sqrt(mean)+1 {
			t.Errorf("queue %d: %d frames, want %.0f", q, n, mean)
		}
		for _, f := range fl {
			m := mean / float64(len(fl))
			if math.Abs(float64(per[f])-m) > 5*math.Sqrt(m) {
				t.Errorf("queue %d flow %d: %d frames, want %.0f", q, f, per[f], m)
			}
		}
	}
}

func TestForwardValidate(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: Forward, Rate: 5e6, Flows: 16, PacketSize: 22}, ""},
		{Spec{Kind: Forward, Rate: 5e6, Flows: 16, PacketSize: 22, Arrival: "poisson"}, ""},
		{Spec{Kind: Forward, Rate: 0, Flows: 16, PacketSize: 22}, "offered rate"},
		{Spec{Kind: Forward, Rate: 5e6, Flows: 0, PacketSize: 22}, "flows"},
		{Spec{Kind: Forward, Rate: 5e6, Flows: 16, PacketSize: 1473}, "1..1472 bytes"},
		{Spec{Kind: Forward, Rate: 5e6, Flows: 16, PacketSize: 22, Arrival: "bursty"}, `unknown arrival "bursty"`},
	} {
		err := tc.spec.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
}
