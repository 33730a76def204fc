package plugintest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
)

// MustRun runs s and fails the test on an error or on accounting that
// does not add up.
func MustRun(t testing.TB, s run.Spec) *report.Report {
	t.Helper()
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AccountingOK {
		t.Fatalf("accounting: %s", rep.AccountingError)
	}
	return rep
}

// ReportJSON is MustRun's report as JSON without its wall time, the one
// field two runs of the same spec may differ in: what tests compare to
// show a report is byte for byte the same in and out of process.
func ReportJSON(t testing.TB, s run.Spec) []byte {
	t.Helper()
	rep := MustRun(t, s)
	rep.SimWallNs = 0
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SameInAndOut runs s in process and again with its plugins in their
// own processes (--isolate), fails t unless the two reports are byte
// for byte the same, and returns the report.
func SameInAndOut(t testing.TB, s run.Spec) report.Report {
	t.Helper()
	in := ReportJSON(t, s)
	s.Plugins.Isolate = true
	if out := ReportJSON(t, s); !bytes.Equal(in, out) {
		t.Fatalf("--isolate changed the report (qdisc %q)", s.Qdisc)
	}
	var rep report.Report
	if err := json.Unmarshal(in, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
