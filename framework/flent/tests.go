package flent

import (
	"fmt"
	"math"
	"sort"
	"strconv"
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
	// Fits, if set, narrows Kinds to the specs the test describes
	// (tcp_nup: uploads only).
	Fits func(w workload.Spec) bool
	// Why says what Fits asks, for the error when nothing fits.
	Why string
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
// is what the host puts on the wire; "Ping (ms) ICMP" is the ping
// probe's RTT series where the run has one (flent draws what is there).
var Tests = []Test{
	{Name: "udp_flood", Kinds: []string{workload.UDPStream, workload.UDPRate, workload.Forward},
		Series: func(r *report.Report) []Series {
			return append([]Series{{Name: "UDP upload", Units: "Mbits/s", Runner: "IperfCsvRunner", Values: txMbits(r)}}, pingSeries(r)...)
		}},
	// tcp_nup and tcp_ndown (flent/tests/tcp_nup.conf, tcp_ndown.conf):
	// one netperf TCP_STREAM (TCP_MAERTS) per flow, "TCP upload::N"
	// from 1, with the sum, average and Jain's fairness over them;
	// "Ping (ms) ICMP" as udp_flood's.
	{Name: "tcp_nup", Kinds: []string{workload.TCPStream}, Why: "uploads only (--down 0)",
		Fits:   func(w workload.Spec) bool { return w.Down == 0 && w.Flows > 0 },
		Params: func(r *report.Report) map[string]string { return streams(r, "upload_streams", workload.Up) },
		Series: func(r *report.Report) []Series {
			return append(tcpSeries(r, workload.Up, "TCP upload"), pingSeries(r)...)
		}},
	{Name: "tcp_ndown", Kinds: []string{workload.TCPStream}, Why: "downloads only (--flows 0 --down N)",
		Fits:   func(w workload.Spec) bool { return w.Down > 0 && w.Flows == 0 },
		Params: func(r *report.Report) map[string]string { return streams(r, "download_streams", workload.Down) },
		Series: func(r *report.Report) []Series {
			return append(tcpSeries(r, workload.Down, "TCP download"), pingSeries(r)...)
		}},
	// rrul (flent/tests/rrul.conf, "Realtime Response Under Load"): one
	// TCP_STREAM and one TCP_MAERTS per diffserv mark, "TCP upload BE"
	// ... (the goodput of the flows of that mark, summed), their average
	// and sum each way, "TCP totals" over both; "Ping (ms) UDP EF/BK/BE"
	// from the UDP_RR probes of those marks, "Ping (ms) ICMP" from ping,
	// "Ping (ms) avg" over the pings.
	{Name: "rrul", Kinds: []string{workload.TCPStream}, Why: "uploads and downloads (--down N) marked among 0, 8, 40, 46",
		Fits:   rrulFits,
		Series: rrulSeries},
}

// rrulMarks are rrul's diffserv marks (netperf -Y CS0, CS1, CS5, EF) and
// the names its data sets give them, in its order.
var rrulMarks = []struct {
	DSCP uint8
	Name string
}{{0, "BE"}, {8, "BK"}, {40, "CS5"}, {46, "EF"}}

func rrulName(dscp uint8) string {
	for _, m := range rrulMarks {
		if m.DSCP == dscp {
			return m.Name
		}
	}
	return ""
}

func rrulFits(w workload.Spec) bool {
	if w.Flows == 0 || w.Down == 0 {
		return false
	}
	for _, m := range w.Marks {
		if rrulName(m) == "" {
			return false
		}
	}
	return true
}

// rrulSeries are rrul's data sets, in the order of its DATA_SETS.
func rrulSeries(r *report.Report) []Series {
	n := len(r.Series)
	var out, all []Series
	for _, d := range []struct{ dir, name string }{{workload.Up, "TCP upload"}, {workload.Down, "TCP download"}} {
		var marks []Series
		for _, m := range rrulMarks {
			var v []float64
			if r.TCP != nil {
				for _, f := range r.TCP.Flows {
					if f.Dir != d.dir || f.DSCP != m.DSCP {
						continue
					}
					fv := flowValues(f, n)
					if v == nil {
						v = fv
						continue
					}
					for i := range v {
						v[i] += fv[i] // NaN stays NaN: the flows share the window
					}
				}
			}
			if v != nil {
				marks = append(marks, Series{Name: d.name + " " + m.Name, Units: "Mbits/s", Runner: "NetperfDemoRunner", Values: v})
			}
		}
		sum, avg := combine(marks, n)
		out = append(out, marks...)
		out = append(out, Series{Name: d.name + " avg", Units: "Mbits/s", Runner: "AverageRunner", Values: avg},
			Series{Name: d.name + " sum", Units: "Mbits/s", Runner: "SumRunner", Values: sum})
		all = append(all, marks...)
	}
	total, _ := combine(all, n)
	out = append(out, Series{Name: "TCP totals", Units: "Mbits/s", Runner: "SumRunner", Values: total})
	var pings []Series
	if r.Latency != nil {
		for _, m := range []string{"EF", "BK", "BE"} {
			for _, p := range r.Latency.Probes {
				if p.Kind == workload.ProbeUDPRR && rrulName(p.DSCP) == m && len(p.Series) == n {
					pings = append(pings, Series{Name: "Ping (ms) UDP " + m, Units: "ms", Runner: "NetperfDemoRunner", Values: msValues(p.Series)})
					break
				}
			}
		}
	}
	pings = append(pings, pingSeries(r)...)
	if len(pings) > 0 {
		_, avg := combine(pings, n)
		pings = append(pings, Series{Name: "Ping (ms) avg", Units: "ms", Runner: "AverageRunner", Values: avg})
	}
	return append(out, pings...)
}

// combine is the sum and mean per interval of the series' values there
// (NaN where none has one).
func combine(ss []Series, n int) (sum, avg []float64) {
	sum, avg = make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		s, k := 0.0, 0
		for _, x := range ss {
			if v := x.Values[i]; !math.IsNaN(v) {
				s += v
				k++
			}
		}
		if k == 0 {
			sum[i], avg[i] = math.NaN(), math.NaN()
			continue
		}
		sum[i], avg[i] = s, s/float64(k)
	}
	return sum, avg
}

// flowValues are a flow's Mbit/s per report interval: its series covers
// the window, the report's last intervals; the warmup's are NaN.
func flowValues(f report.Flow, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	off := n - len(f.SeriesBps)
	for k, b := range f.SeriesBps {
		if off+k >= 0 {
			v[off+k] = b / 1e6
		}
	}
	return v
}

// pingSeries is flent's "Ping (ms) ICMP" (its ping runner: an RTT per
// step) from the report's first ping probe, the mean RTT of the requests
// sent in each interval; none without a ping probe.
func pingSeries(r *report.Report) []Series {
	if r.Latency == nil {
		return nil
	}
	for _, p := range r.Latency.Probes {
		if p.Kind == workload.ProbePing && len(p.Series) == len(r.Series) {
			return []Series{{Name: "Ping (ms) ICMP", Units: "ms", Runner: "PingRunner", Values: msValues(p.Series)}}
		}
	}
	return nil
}

// msValues are a report series' values, NaN (null) for a missing one.
func msValues(s []*float64) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = math.NaN()
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

// streams is a TEST_PARAMETERS map with the count of dir's flows.
func streams(r *report.Report, key, dir string) map[string]string {
	n := 0
	if r.TCP != nil {
		for _, f := range r.TCP.Flows {
			if f.Dir == dir {
				n++
			}
		}
	}
	return map[string]string{key: strconv.Itoa(n)}
}

// tcpSeries are the flows of dir as flent's netperf runners give them
// (Mbit/s of goodput per interval, "NAME::N"), then the sum, average and
// Jain's index per interval. A flow's series covers the measurement
// window, the report's last intervals; the warmup's are null.
func tcpSeries(r *report.Report, dir, name string) []Series {
	n := len(r.Series)
	var flows []Series
	if r.TCP != nil {
		for _, f := range r.TCP.Flows {
			if f.Dir != dir {
				continue
			}
			flows = append(flows, Series{Name: fmt.Sprintf("%s::%d", name, len(flows)+1), Units: "Mbits/s", Runner: "NetperfDemoRunner", Values: flowValues(f, n)})
		}
	}
	sum, avg, fair := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		s, sq, k := 0.0, 0.0, 0
		for _, f := range flows {
			if x := f.Values[i]; !math.IsNaN(x) {
				s += x
				sq += x * x
				k++
			}
		}
		if k == 0 {
			sum[i], avg[i], fair[i] = math.NaN(), math.NaN(), math.NaN()
			continue
		}
		sum[i], avg[i] = s, s/float64(k)
		fair[i] = math.NaN()
		if sq > 0 {
			fair[i] = s * s / (float64(k) * sq) // Jain's index
		}
	}
	return append(flows,
		Series{Name: name + " sum", Units: "Mbits/s", Runner: "SumRunner", Values: sum},
		Series{Name: name + " avg", Units: "Mbits/s", Runner: "AverageRunner", Values: avg},
		Series{Name: name + " fairness", Units: "Idx", Runner: "FairnessRunner", Values: fair})
}

// For is the test that describes a run of w, or an error that says
// which runs flent's tests describe.
func For(w workload.Spec) (*Test, error) {
	var known []string
	for i := range Tests {
		t := &Tests[i]
		for _, k := range t.Kinds {
			if k == w.Kind && (t.Fits == nil || t.Fits(w)) {
				return t, nil
			}
			what := k
			if t.Why != "" {
				what += " " + t.Why
			}
			known = append(known, what+" ("+t.Name+")")
		}
	}
	sort.Strings(known)
	return nil, fmt.Errorf("no flent test describes these %s senders (flent's tests are written for: %s)", w.Kind, strings.Join(known, ", "))
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
