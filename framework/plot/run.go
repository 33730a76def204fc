// Package plot draws a txlab report as the figures people in the field
// look at: throughput, drops by reason, qdisc backlog, CPU sys/soft/idle
// and cake's and CoDel's state over simulated time, the __dev_queue_xmit
// latency histogram, and, when the report has them, RTT CDFs and per-flow
// goodput. One report gives per-run figures; a comparison overlays its
// variants (one line each) and adds a figure per variant where a run has
// several series of its own (drops by reason, CPU).
//
// Figures read the report's JSON keys (docs/report.md), so optional keys
// that a workload adds (latency, tcp, series goodput) are drawn when
// present and skipped when not. The same report gives the same bytes.
package plot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/txlab/txlab/framework/report"
)

// Run is what the figures read of one report.
type Run struct {
	Name       string     `json:"name"`
	Profile    string     `json:"profile"`
	Script     string     `json:"script"`
	Setup      Setup      `json:"setup"`
	DurationNs int64      `json:"duration_ns"`
	WarmupNs   int64      `json:"warmup_ns"`
	Qdisc      []Qdisc    `json:"qdisc"`
	Devices    []Device   `json:"devices"`
	XmitNs     *Hist      `json:"xmit_latency_ns"`
	Series     []Interval `json:"series"`
	Latency    *Latency   `json:"latency"`
	TCP        *TCP       `json:"tcp"`
	// CPUProfile and the window's packets: the cpu-profile figure.
	CPUProfile []report.ProfileRow `json:"cpu_profile"`
	Window     struct {
		TxPackets uint64 `json:"tx_packets"`
	} `json:"window"`
}

// Setup is the part of the report's setup a title names.
type Setup struct {
	Qdisc    string `json:"qdisc"`
	Workload string `json:"workload"`
	Driver   string `json:"driver"`
}

// Qdisc is one of the report's qdiscs: its kind says which state
// figures apply.
type Qdisc struct {
	Kind string `json:"kind"`
}

// Device is one of a stacked host's devices (a bond, its slaves): its
// qdiscs count as the run's.
type Device struct {
	Qdisc []Qdisc `json:"qdisc"`
}

// Hist is the report's log2 histogram.
type Hist struct {
	Count   uint64          `json:"count"`
	Buckets []report.Bucket `json:"buckets"`
}

// Interval is one point of the report's series; a pointer is a key
// some reports lack (older ones, other workloads, omitted zeros).
type Interval struct {
	StartNs       int64             `json:"start_ns"`
	EndNs         int64             `json:"end_ns"`
	TxPps         float64           `json:"tx_pps"`
	TxBps         *float64          `json:"tx_bps"`
	Backlog       int64             `json:"backlog_packets"`
	DropsBy       map[string]uint64 `json:"drops"`
	BlueP         *float64          `json:"blue_p_max"`
	CoDelDropping *int64            `json:"codel_dropping"`
	GoodputBps    *float64          `json:"goodput_bps"`
	SysPct        float64           `json:"cpu_sys_pct"`
	SoftPct       float64           `json:"cpu_soft_pct"`
	IdlePct       float64           `json:"cpu_idle_pct"`
}

// Latency is the report's latency key (latency probes): RTT
// percentiles and distributions idle and under load, over all probes
// and per probe.
type Latency struct {
	Idle   Percentiles `json:"idle_rtt_ms"`
	Loaded Percentiles `json:"loaded_rtt_ms"`
	Probes []Probe     `json:"probes"`
}

// Percentiles are RTT percentiles in ms.
type Percentiles struct {
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Samples int     `json:"samples"`
	// CDF is the distribution (report.Percentiles.CDF): point j of k at
	// fraction (j+1)/k.
	CDF []float64 `json:"cdf_ms"`
}

// Probe is one latency probe's RTTs.
type Probe struct {
	ID     int         `json:"id"`
	Kind   string      `json:"kind"`
	DSCP   int         `json:"dscp"`
	Idle   Percentiles `json:"idle_rtt_ms"`
	Loaded Percentiles `json:"loaded_rtt_ms"`
}

// TCP is the report's tcp key: the connections' goodput per series
// interval of the window.
type TCP struct {
	Flows []Flow `json:"flows"`
}

// Flow is one TCP connection.
type Flow struct {
	ID        int       `json:"id"`
	Dir       string    `json:"dir"`
	DSCP      int       `json:"dscp"`
	SeriesBps []float64 `json:"series_bps"`
}

// Decode reads a report as txlab run --format json writes it: one
// report, or a comparison's {"variants": [...]}. Anything else (another
// JSON document, a sweep's merged report) is an error saying what it is.
func Decode(data []byte) ([]Run, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a txlab report: %s", jsonErr(err))
	}
	if _, ok := top["rows"]; ok {
		if _, ok := top["grid"]; ok {
			return nil, errors.New("a sweep's report, not a run's: DecodeSweep reads it")
		}
	}
	if raw, ok := top["variants"]; ok {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("not a txlab report: variants: %s", jsonErr(err))
		}
		if len(list) == 0 {
			return nil, errors.New("a comparison without variants: nothing to plot")
		}
		runs := make([]Run, len(list))
		for i, r := range list {
			if err := decodeOne(r, &runs[i]); err != nil {
				return nil, fmt.Errorf("variant %d: %w", i+1, err)
			}
		}
		return runs, nil
	}
	var r Run
	if err := decodeOne(data, &r); err != nil {
		return nil, err
	}
	return []Run{r}, nil
}

// required are keys every run report has (docs/report.md).
var required = []string{"profile", "setup", "series", "xmit_latency_ns", "window_ns"}

func decodeOne(data []byte, r *Run) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return fmt.Errorf("not a txlab report: %s", jsonErr(err))
	}
	for _, k := range required {
		if _, ok := keys[k]; !ok {
			return fmt.Errorf("not a txlab report: no %q key", k)
		}
	}
	if err := json.Unmarshal(data, r); err != nil {
		return fmt.Errorf("not a txlab report: %s", jsonErr(err))
	}
	return nil
}

// jsonErr is encoding/json's error without its "json: " prefix.
func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return fmt.Sprintf("a JSON %s, not an object", te.Value)
	}
	if errors.As(err, &te) {
		return fmt.Sprintf("%s is a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// FromReports reads reports as Decode reads their JSON.
func FromReports(rs []*report.Report) ([]Run, error) {
	if len(rs) == 0 {
		return nil, errors.New("no report to plot")
	}
	runs := make([]Run, len(rs))
	for i, r := range rs {
		var b bytes.Buffer
		if err := report.WriteJSON(&b, r); err != nil {
			return nil, err
		}
		if err := decodeOne(b.Bytes(), &runs[i]); err != nil {
			return nil, err
		}
	}
	return runs, nil
}
