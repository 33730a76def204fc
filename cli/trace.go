package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

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
		&cli.Float64Flag{Name: "trace-sample", Value: 0.001, Usage: "fraction of packets whose journey is traced"},
		&cli.StringFlag{Name: "trace-window", Usage: "trace every packet and CPU in LEN@START of simulated time, e.g. 10ms@500ms"},
	}
}

// startTrace opens the run's trace from the flags (nil when off) and
// makes sure it is flushed on SIGINT/SIGTERM too.
func startTrace(c *cli.Context, script string) (*trace.Run, error) {
	cfg := trace.Config{Exporter: c.String("trace"), File: c.String("trace-out"), Sample: c.Float64("trace-sample"),
		Warn: func(s string) { fmt.Fprintln(c.App.ErrWriter, "txlab: warning:", s) }}
	if cfg.File != "" && (cfg.Exporter == "" || cfg.Exporter == trace.ExportNone) {
		cfg.Exporter = trace.ExportFile
	}
	w, err := trace.ParseWindow(c.String("trace-window"))
	if err != nil {
		return nil, err
	}
	cfg.Window = w
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("txlab.version", version)}
	if script != "" {
		attrs = append(attrs, attribute.String("script", script))
	}
	tr, err := trace.Start(cfg, "txlab run", c.Uint64("seed"), attrs...)
	if err != nil || tr == nil {
		return tr, err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sig; ok {
			tr.Fail(fmt.Errorf("interrupted"))
			tr.End()
			os.Exit(130)
		}
	}()
	tr.Phase("load")
	return tr, nil
}

// describeTrace puts what a user filters on onto the root span.
func describeTrace(tr *trace.Run, specs []run.Spec) {
	if tr == nil || len(specs) == 0 {
		return
	}
	var profiles, qdiscs []string
	for _, s := range specs {
		profiles = append(profiles, s.Profile)
		if f := strings.Fields(s.Qdisc); len(f) > 0 {
			kinds := f[0]
			if len(f) > 1 && f[0] == "mq" {
				kinds += " " + f[1]
			}
			qdiscs = append(qdiscs, kinds)
		}
	}
	tr.SetAttributes(attribute.StringSlice("profile", profiles), attribute.StringSlice("qdisc", qdiscs),
		attribute.String("driver", specs[0].Driver), attribute.Int64("seed", int64(specs[0].Seed)),
		attribute.Int("variants", len(specs)))
}

// finishTrace records the results and flushes.
func finishTrace(c *cli.Context, tr *trace.Run, reps []*report.Report, err error) {
	if tr == nil {
		return
	}
	for i, r := range reps {
		if r != nil {
			tr.SetAttributes(attribute.Float64(fmt.Sprintf("result.%d.tx_pps", i), r.TxPps))
			for reason, n := range r.Drops {
				tr.SetAttributes(attribute.Int64(fmt.Sprintf("result.%d.drops.%s", i, reason), int64(n)))
			}
		}
	}
	tr.Fail(err)
	tr.End()
	ok, failed := tr.Exported()
	fmt.Fprintf(c.App.ErrWriter, "txlab: trace: %d spans exported (%d failed) via %s\n", ok, failed, tr.Exporter())
}
