// Package flent writes flent's data file format, so that `flent -i
// FILE.flent.gz -p totals -o out.png` plots a run beside a testbed's.
//
// The format is flent's ResultSet.serialise (flent/resultset.py,
// FILEFORMAT_VERSION 4): gzipped JSON, keys sorted, with
//
//	metadata    the recorded settings (NAME is the test, flent/tests/NAME.conf,
//	            whose DATA_SETS name the series and whose PLOTS draw them),
//	            SERIES_META per series (UNITS, RUNNER, IDX, MEAN_VALUE)
//	version     4
//	x_values    seconds since the start, one per step
//	results     series name -> one value (or null) per x value
//	raw_values  series name -> [{"t": unix seconds, "val": v}, ...]
//
// Which flent test describes a txlab run, and how the report's series
// become the test's, is the table in tests.go.
package flent

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// FileFormatVersion is flent's FILEFORMAT_VERSION the files are written in.
const FileFormatVersion = 4

// Suffix is the name ending flent gives its data files.
const Suffix = ".flent.gz"

// Series is one of a test's data sets.
type Series struct {
	Name   string    // as the test's DATA_SETS name it ("UDP upload")
	Units  string    // as DATA_SETS gives them ("Mbits/s", "ms")
	Runner string    // the flent runner class the series stands in for (SERIES_META RUNNER)
	Values []float64 // one per x value; NaN: no value (null)
}

// File is one data file: one run of one test.
type File struct {
	Test      string    // flent's test name (NAME)
	Title     string    // TITLE: what tells this file from others in a combined plot
	Time      time.Time // TIME and T0: when the run started (UTC)
	LocalHost string    // LOCAL_HOST: where the test ran
	Host      string    // HOST: the test's target
	Note      string    // NOTE
	StepSize  float64   // STEP_SIZE, seconds
	Length    float64   // LENGTH, seconds
	// TotalLength is TOTAL_LENGTH in seconds (0: Length).
	TotalLength float64
	// TestParameters are flent's --test-parameter values the test reads
	// (TEST_PARAMETERS), e.g. tcp_nup's upload_streams.
	TestParameters map[string]string
	X              []float64 // x values, seconds since Time
	Series         []Series
	// Extra are further metadata keys (the writer's own: TXLAB_*).
	Extra map[string]any
}

// recordedSettings are flent's RECORDED_SETTINGS (resultset.py): every
// data file carries each, null when unset.
var recordedSettings = []string{
	"NAME", "HOST", "HOSTS", "TIME", "LOCAL_HOST", "TITLE", "NOTE", "LENGTH",
	"TOTAL_LENGTH", "STEP_SIZE", "TEST_PARAMETERS", "FLENT_VERSION", "IP_VERSION",
	"BATCH_NAME", "BATCH_TIME", "BATCH_TITLE", "BATCH_UUID", "DATA_FILENAME",
	"HTTP_GETTER_URLLIST", "HTTP_GETTER_DNS", "HTTP_GETTER_WORKERS",
}

// timeFormat is flent's format_date(..., utc=True).
const timeFormat = "2006-01-02T15:04:05.000000Z"

// Validate checks what flent needs to load the file.
func (f *File) Validate() error {
	switch {
	case f.Test == "":
		return fmt.Errorf("flent: no test name")
	case len(f.X) == 0:
		return fmt.Errorf("flent: no data points")
	case !(f.StepSize > 0):
		return fmt.Errorf("flent: step size %v, want > 0", f.StepSize)
	}
	seen := map[string]bool{}
	for _, s := range f.Series {
		if seen[s.Name] {
			return fmt.Errorf("flent: series %q twice", s.Name)
		}
		seen[s.Name] = true
		if len(s.Values) != len(f.X) {
			return fmt.Errorf("flent: series %q has %d values for %d x values", s.Name, len(s.Values), len(f.X))
		}
	}
	return nil
}

// value is a JSON number, or null for NaN.
type value float64

func (v value) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(v))
}

type rawPoint struct {
	T   float64 `json:"t"`
	Val value   `json:"val"`
}

// document is the JSON flent loads (ResultSet.unserialise).
func (f *File) document(filename string) map[string]any {
	t0 := f.Time.UTC()
	total := f.TotalLength
	if total == 0 {
		total = f.Length
	}
	md := map[string]any{}
	for _, k := range recordedSettings {
		md[k] = nil
	}
	for k, v := range f.Extra {
		md[k] = v
	}
	params := map[string]string{}
	for k, v := range f.TestParameters {
		params[k] = v
	}
	md["NAME"] = f.Test
	md["HOST"] = f.Host
	md["HOSTS"] = []string{f.Host}
	md["TIME"] = t0.Format(timeFormat)
	md["T0"] = t0.Format(timeFormat)
	md["LOCAL_HOST"] = f.LocalHost
	md["TITLE"] = f.Title
	if f.Note != "" {
		md["NOTE"] = f.Note
	}
	md["LENGTH"] = f.Length
	md["TOTAL_LENGTH"] = total
	md["STEP_SIZE"] = f.StepSize
	md["TEST_PARAMETERS"] = params
	md["IP_VERSION"] = 4
	md["DATA_FILENAME"] = filename
	md["FAILED_RUNNERS"] = 0

	meta := map[string]any{}
	results := map[string][]value{}
	raw := map[string][]rawPoint{}
	start := float64(t0.UnixNano()) / 1e9
	for i, s := range f.Series {
		vals := make([]value, len(s.Values))
		pts := []rawPoint{}
		sum, n := 0.0, 0
		for j, v := range s.Values {
			vals[j] = value(v)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			pts = append(pts, rawPoint{T: start + f.X[j], Val: value(v)})
			sum += v
			n++
		}
		sm := map[string]any{"IDX": i, "UNITS": s.Units, "RUNNER": s.Runner}
		if n > 0 {
			sm["MEAN_VALUE"] = sum / float64(n)
		} else {
			sm["MEAN_VALUE"] = nil
		}
		meta[s.Name] = sm
		results[s.Name] = vals
		raw[s.Name] = pts
	}
	md["SERIES_META"] = meta
	return map[string]any{
		"metadata":   md,
		"version":    FileFormatVersion,
		"x_values":   f.X,
		"results":    results,
		"raw_values": raw,
	}
}

// Write writes the file gzipped, as flent's dump_file writes a
// .flent.gz (JSON with sorted keys, indented by 2). filename is the
// name recorded as DATA_FILENAME (flent appends its suffix if missing).
func (f *File) Write(w io.Writer, filename string) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if !strings.HasSuffix(filename, Suffix) {
		filename += Suffix
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f.document(filename)); err != nil {
		return fmt.Errorf("flent: %w", err)
	}
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return err
	}
	return zw.Close()
}
