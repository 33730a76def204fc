package main

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.opentelemetry.io/otel/attribute"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/trace"
)

func traceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "trace", Value: "none", Usage: "OpenTelemetry export: none, otlp-grpc, otlp-http, file (OTEL_EXPORTER_OTLP_* apply)"},
		&cli.StringFlag{Name: "trace-out", Usage: "write the trace as JSON to FILE (implies --trace file)"},
		&cli.Float64Flag{Name: "trace-sample", Value: 0.001, Usage: "fraction of packets whose journey is traced, 0..1"},
		&cli.StringFlag{Name: "trace-window", Usage: "trace every packet and CPU in LEN@START of simulated time, e.g. 10ms@500ms"},
		&cli.StringFlag{Name: "metrics", Value: "none", Usage: "OpenTelemetry metrics export: none, otlp-grpc, otlp-http, file (OTEL_EXPORTER_OTLP_* apply)"},
		&cli.StringFlag{Name: "metrics-out", Usage: "write the metrics as JSON to FILE (implies --metrics file)"},
	}
}

// metricsConfig reads the metrics flags; nothing is opened.
func metricsConfig(c *cli.Context) (trace.MetricsConfig, error) {
	cfg := trace.MetricsConfig{Exporter: c.String("metrics"), File: c.String("metrics-out"), Version: version,
		Warn: func(s string) { fmt.Fprintln(c.App.ErrWriter, "txlab: warning:", s) }}
	if cfg.File != "" && (cfg.Exporter == "" || cfg.Exporter == trace.ExportNone) {
		cfg.Exporter = trace.ExportFile
	}
	return cfg, cfg.Validate()
}

// openMetrics creates --metrics-out's file in the stage before the run,
// so that a name that cannot be written stops the command first (nil:
// no file exporter).
func openMetrics(cfg trace.MetricsConfig, g *stage) (*outFile, error) {
	if !cfg.Enabled() || cfg.Exporter != trace.ExportFile {
		return nil, nil
	}
	o, err := g.create(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return o, nil
}

// exportMetrics sends the runs' metrics (nothing when off) to the OTLP
// exporter or to o, openMetrics's file. The series are stamped on the
// traces' clock: simulated time 0 is loadStart.
func exportMetrics(c *cli.Context, cfg trace.MetricsConfig, tr *trace.Run, loadStart time.Time, reps []*report.Report, o *outFile) error {
	if !cfg.Enabled() {
		return nil
	}
	cfg.Start, cfg.RunID = loadStart, tr.TraceID()
	if cfg.RunID == "" {
		var id [16]byte
		_, _ = crand.Read(id[:])
		cfg.RunID = hex.EncodeToString(id[:])
	}
	if o != nil {
		cfg.Out = o
	}
	n, err := trace.ExportMetrics(cfg, reps)
	if o != nil {
		if err == nil {
			err = o.Commit()
		} else {
			o.Abort()
		}
	}
	if err == nil {
		line := fmt.Sprintf("txlab: metrics: %d points exported via %s; txlab.run_id %s", n, cfg.Exporter, cfg.RunID)
		if o != nil {
			o.say(c.App.ErrWriter, line)
		} else {
			fmt.Fprintln(c.App.ErrWriter, line)
		}
	}
	return err
}

// traceConfig reads the trace flags; nothing is opened.
func traceConfig(c *cli.Context) (trace.Config, error) {
	cfg := trace.Config{Exporter: c.String("trace"), File: c.String("trace-out"), Sample: c.Float64("trace-sample"),
		Version: version, Warn: func(s string) { fmt.Fprintln(c.App.ErrWriter, "txlab: warning:", s) }}
	if cfg.File != "" && (cfg.Exporter == "" || cfg.Exporter == trace.ExportNone) {
		cfg.Exporter = trace.ExportFile
	}
	w, err := trace.ParseWindow(c.String("trace-window"))
	if err != nil {
		return cfg, err
	}
	cfg.Window = w
	return cfg, cfg.Validate()
}

// runTrace is the run's open trace and the file it goes to (nil: none).
type runTrace struct {
	*trace.Run
	out *outFile
}

// startTrace opens the run's trace (a nil Run when tracing is off). The
// root span and the load phase begin at loadStart; the trace file is
// replaced only by a complete trace (outFile).
func startTrace(c *cli.Context, cfg trace.Config, script string, loadStart time.Time, g *stage) (*runTrace, error) {
	rt := &runTrace{}
	if !cfg.Enabled() {
		return rt, nil
	}
	if cfg.Exporter == trace.ExportFile {
		o, err := g.create(cfg.File)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		rt.out, cfg.Out = o, o
	}
	cfg.Start = loadStart
	attrs := []attribute.KeyValue{attribute.String("txlab.version", version)}
	if script != "" {
		attrs = append(attrs, attribute.String("script", script))
	}
	tr, err := trace.Start(cfg, "txlab run", c.Uint64("seed"), attrs...)
	if err != nil {
		if rt.out != nil {
			rt.out.Abort()
		}
		return nil, err
	}
	rt.Run = tr
	tr.PhaseAt("load", loadStart)
	return rt, nil
}

// describeTrace puts what a user filters on onto the root span, as typed
// attributes (a viewer shows an array attribute as a JSON string): the
// run's driver and seed, and per variant i `variant.i.name`,
// `variant.i.profile` and `variant.i.qdisc` (its kinds: "mq fq").
func describeTrace(tr *trace.Run, specs []run.Spec) {
	if tr == nil || len(specs) == 0 {
		return
	}
	tr.SetAttributes(attribute.String("driver", specs[0].Driver), attribute.Int64("seed", int64(specs[0].Seed)),
		attribute.Int("variants", len(specs)))
	for i, s := range specs {
		p := fmt.Sprintf("variant.%d.", i)
		kv := []attribute.KeyValue{attribute.String(p+"profile", s.Profile)}
		if s.Name != "" {
			kv = append(kv, attribute.String(p+"name", s.Name))
		}
		if f := strings.Fields(s.Qdisc); len(f) > 0 {
			kinds := f[0]
			if len(f) > 1 && f[0] == "mq" {
				kinds += " " + f[1]
			}
			kv = append(kv, attribute.String(p+"qdisc", kinds))
		}
		tr.SetAttributes(kv...)
	}
	if len(specs) == 1 {
		tr.SetAttributes(attribute.String("profile", specs[0].Profile))
	}
}

// finish records the results and the run's error on the root span,
// flushes, and commits the trace file. Its error is a trace that could
// not be written.
func (rt *runTrace) finish(c *cli.Context, reps []*report.Report, err error) error {
	if rt.Run == nil {
		return nil
	}
	tr := rt.Run
	for i, r := range reps {
		if r != nil {
			tr.SetAttributes(attribute.Int64(fmt.Sprintf("result.%d.tx_pps", i), int64(math.Round(r.TxPps))))
			for _, reason := range sortedReasons(r.Drops) {
				tr.SetAttributes(attribute.Int64(fmt.Sprintf("result.%d.drops.%s", i, reason), int64(r.Drops[reason])))
			}
		}
	}
	tr.Fail(err)
	endErr := tr.End()
	if rt.out != nil {
		if endErr == nil {
			endErr = rt.out.Commit()
		} else {
			rt.out.Abort()
		}
	}
	if endErr != nil {
		return endErr // the error's one line says what was not written
	}
	ok, failed := tr.Exported()
	line := fmt.Sprintf("txlab: trace: %d spans exported (%d failed) via %s; trace %s", ok, failed, tr.Exporter(), tr.TraceID())
	if rt.out != nil {
		rt.out.say(c.App.ErrWriter, line)
	} else {
		fmt.Fprintln(c.App.ErrWriter, line)
	}
	return nil
}

func sortedReasons(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// joinErrs keeps the run's error first and adds a trace or write error.
func joinErrs(first, second error) error {
	if first == nil {
		return second
	}
	if second == nil {
		return first
	}
	return fmt.Errorf("%w; and %v", first, second)
}
