package flent

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/workload"
)

// Test is a flent test a txlab run can be written as: its name (its
// flent/tests/NAME.conf), the workloads it describes, and how a report
// becomes its data sets.
type Test struct {
	Name string // flent's test name
	// Kinds are the workload kinds (workload.Spec.Kind) the test
	// describes.
	Kinds []string
	// Params are the test's TEST_PARAMETERS for a run (nil: none).
	Params func(r *report.Report) map[string]string
	// Series are the test's data sets from a report, each with one value
	// per interval of r.Series.
	Series func(r *report.Report) []Series
}

// Tests are the flent tests txlab writes, first fit first.
//
// udp_flood (flent/tests/udp_flood.conf: "UDP flood w/ping") is the
// UDP test: its data set "UDP upload" (Mbits/s, an iperf UDP sender)
// is what the host puts on the wire; "Ping (ms) ICMP" is left out
// (these runs have no ping; flent draws what is there).
var Tests = []Test{
	{Name: "udp_flood", Kinds: []string{workload.UDPStream, workload.UDPRate, workload.Forward},
		Series: func(r *report.Report) []Series {
			return []Series{{Name: "UDP upload", Units: "Mbits/s", Runner: "IperfCsvRunner", Values: txMbits(r)}}
		}},
}

// For is the test that describes a run of workload kind, or an error
// that says which kinds flent's tests describe.
func For(kind string) (*Test, error) {
	var known []string
	for i := range Tests {
		for _, k := range Tests[i].Kinds {
			if k == kind {
				return &Tests[i], nil
			}
			known = append(known, k+" ("+Tests[i].Name+")")
		}
	}
	sort.Strings(known)
	return nil, fmt.Errorf("no flent test describes %s senders (flent's tests are written for: %s)", kind, strings.Join(known, ", "))
}

// txMbits is what went on the wire per interval, in Mbit/s of frame
// bytes (the series' tx_bps).
func txMbits(r *report.Report) []float64 {
	out := make([]float64, len(r.Series))
	for i, iv := range r.Series {
		out[i] = iv.TxBps / 1e6
	}
	return out
}

// Options are what a file records besides the report.
type Options struct {
	Title   string    // TITLE (the variant)
	Time    time.Time // when the run started
	Version string    // txlab's version
	Note    string
}

// FromReport is a run's data file for test t: x values are the
// intervals' ends in seconds of simulated time.
func FromReport(t *Test, r *report.Report, o Options) (*File, error) {
	if len(r.Series) == 0 {
		return nil, fmt.Errorf("flent: the report has no time series")
	}
	f := &File{
		Test:      t.Name,
		Title:     o.Title,
		Time:      o.Time,
		LocalHost: "txlab",
		Host:      "txlab-sim",
		Note:      o.Note,
		Length:    float64(r.DurationNs) / 1e9,
		StepSize:  float64(r.Series[0].EndNs-r.Series[0].StartNs) / 1e9,
		Extra: map[string]any{
			"TXLAB_VERSION":   o.Version,
			"TXLAB_PROFILE":   r.Profile,
			"TXLAB_SEED":      r.Seed,
			"TXLAB_WARMUP":    float64(r.WarmupNs) / 1e9,
			"TXLAB_SIMULATED": true,
		},
	}
	for _, iv := range r.Series {
		f.X = append(f.X, float64(iv.EndNs)/1e9)
	}
	if t.Params != nil {
		f.TestParameters = t.Params(r)
	}
	f.Series = t.Series(r)
	return f, f.Validate()
}
