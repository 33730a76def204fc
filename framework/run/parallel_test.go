package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

// parallelSpecs are variants that exercise different qdiscs, drivers and
// profiles, so concurrent runs touch every registry and plugin wrapper.
func parallelSpecs() []Spec {
	var out []Spec
	for _, v := range []struct{ profile, qdisc, driver string }{
		{"6.18", "mq pfifo", "ice"}, {"6.19-rc1", "mq fq_codel", "ice"}, {"net-next", "mq cake", "i40e"},
		{"6.19-rc1", "mq sfq", "idpf"}, {"6.18", "mq fq", "ice"}, {"net-next", "pfifo_fast", "veth"},
	} {
		s := small()
		s.Name, s.Profile, s.Qdisc, s.Driver = v.profile+"/"+v.qdisc, v.profile, v.qdisc, v.driver
		s.Duration = 3e6
		out = append(out, s)
	}
	return out
}

func reportJSON(t *testing.T, reps []*report.Report, errs []error) [][]byte {
	t.Helper()
	var out [][]byte
	for i, r := range reps {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		r.StripWall()
		var b bytes.Buffer
		if err := report.WriteJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	return out
}

// The reports of RunAll do not depend on how many runs go at once (run
// with -race: the runs share no mutable state).
func TestRunAllJobsIdentical(t *testing.T) {
	specs := parallelSpecs()
	var calls atomic.Int32
	reps, errs := RunAll(specs, 1, nil, nil)
	seq := reportJSON(t, reps, errs)
	reps, errs = RunAll(specs, 4, nil, func(int, *report.Report, error) { calls.Add(1) })
	par := reportJSON(t, reps, errs)
	if int(calls.Load()) != len(specs) {
		t.Errorf("done called %d times for %d runs", calls.Load(), len(specs))
	}
	for i := range specs {
		if !bytes.Equal(seq[i], par[i]) {
			t.Errorf("%s: -j 4 gave another report than -j 1", specs[i].Name)
		}
		var r report.Report
		if err := json.Unmarshal(par[i], &r); err != nil || r.Name != specs[i].Name {
			t.Errorf("report %d is %q, want %q (%v)", i, r.Name, specs[i].Name, err)
		}
	}
}

// Once Stop is closed, runs not yet started do not start.
func TestRunAllStop(t *testing.T) {
	specs := parallelSpecs()
	stop := make(chan struct{})
	close(stop)
	reps, errs := RunAll(specs, 2, func(int) Options { return Options{Stop: stop} }, nil)
	for i := range specs {
		if reps[i] != nil || !errors.Is(errs[i], ErrInterrupted) {
			t.Errorf("run %d: report %v, error %v; want none and ErrInterrupted", i, reps[i] != nil, errs[i])
		}
	}
}

func TestCheckJobs(t *testing.T) {
	for _, tc := range []struct {
		j  int
		ok bool
	}{{1, true}, {MaxJobs, true}, {0, false}, {-3, false}, {MaxJobs + 1, false}} {
		if err := CheckJobs(tc.j); (err == nil) != tc.ok {
			t.Errorf("CheckJobs(%d) = %v", tc.j, err)
		}
	}
}
