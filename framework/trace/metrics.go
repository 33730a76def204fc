package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/txlab/txlab/framework/report"
)

// MetricsConfig says where a run's metrics go.
type MetricsConfig struct {
	Exporter string // none, otlp-grpc, otlp-http, file
	File     string // for file: the JSON output path
	Out      io.Writer
	// Start is simulated time 0 on the wall clock (the run's start, as
	// for the traces): a point of the series at simulated t is stamped
	// Start + t.
	Start   time.Time
	Version string
	// RunID tells this run's series from another's with the same seed
	// (the run's trace ID when it is traced).
	RunID string
	// MetricExporter overrides the exporter (tests).
	MetricExporter sdkmetric.Exporter
	// Warn receives the warning for an unreachable collector.
	Warn func(string)
}

// Enabled reports whether metrics are exported.
func (c MetricsConfig) Enabled() bool {
	return c.MetricExporter != nil || (c.Exporter != "" && c.Exporter != ExportNone)
}

// Validate checks a config with clear messages.
func (c MetricsConfig) Validate() error {
	switch c.Exporter {
	case "", ExportNone, ExportOTLPGRPC, ExportOTLPHTTP:
	case ExportFile:
		if c.File == "" && c.Out == nil {
			return errors.New("metrics: the file exporter needs --metrics-out FILE")
		}
	default:
		return fmt.Errorf("metrics: unknown exporter %q (known: none, otlp-grpc, otlp-http, file)", c.Exporter)
	}
	return nil
}

func newMetricExporter(ctx context.Context, c MetricsConfig) (sdkmetric.Exporter, io.Closer, error) {
	switch {
	case c.MetricExporter != nil:
		return c.MetricExporter, nil, nil
	case c.Exporter == ExportOTLPGRPC:
		var opts []otlpmetricgrpc.Option
		if plainLocalDefault("METRICS") {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		e, err := otlpmetricgrpc.New(ctx, opts...)
		return e, nil, err
	case c.Exporter == ExportOTLPHTTP:
		var opts []otlpmetrichttp.Option
		if plainLocalDefault("METRICS") {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		e, err := otlpmetrichttp.New(ctx, opts...)
		return e, nil, err
	case c.Out != nil:
		e, err := stdoutmetric.New(stdoutmetric.WithWriter(c.Out))
		return e, nil, err
	default:
		f, err := os.Create(c.File)
		if err != nil {
			return nil, nil, err
		}
		e, err := stdoutmetric.New(stdoutmetric.WithWriter(f))
		return e, f, err
	}
}

// Metric names, their units as UCUM annotations.
const (
	MetricTxRate      = "txlab.tx.rate"         // gauge {packet}/s, per interval
	MetricOfferedRate = "txlab.offered.rate"    // gauge {packet}/s, per interval
	MetricDropRate    = "txlab.drop.rate"       // gauge {packet}/s, per interval, all reasons
	MetricDrops       = "txlab.drops"           // cumulative sum {packet} by reason, at the run's end
	MetricBacklog     = "txlab.qdisc.backlog"   // gauge {packet}, all qdiscs, at each interval's end
	MetricCPU         = "txlab.cpu.utilization" // gauge 1 by cpu.mode, per interval
	MetricRunnable    = "txlab.runnable"        // gauge {task}: vmstat's r, per interval
	MetricXmit        = "txlab.xmit.duration"   // histogram ns of __dev_queue_xmit, the window
	MetricDeferBatch  = "txlab.defer.batch"     // histogram {packet}: each llist_del_all's list, the window
)

// ExportMetrics exports the runs' series as OTLP metrics: one collection
// per interval of the series, in order, each point stamped with its
// interval's simulated end on the run's clock, then the run's totals
// (drops by reason, the __dev_queue_xmit histogram), each at its
// variant's end. Every series carries txlab.run_id, txlab.variant and
// txlab.profile. It returns how many data points it exported; a failed
// OTLP export is a warning (as for traces), a file that cannot be
// written the error.
func ExportMetrics(cfg MetricsConfig, reps []*report.Report) (int, error) {
	if !cfg.Enabled() {
		return 0, nil
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if cfg.Warn == nil {
		cfg.Warn = func(s string) { fmt.Fprintln(os.Stderr, "txlab: warning:", s) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Resource(cfg.Version, cfg.Start)
	if err != nil {
		return 0, fmt.Errorf("metrics: resource: %w", err)
	}
	exp, file, err := newMetricExporter(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("metrics: %s exporter: %w", cfg.Exporter, err)
	}
	fail := func(err error) error {
		if cfg.Exporter == ExportFile || cfg.MetricExporter != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		cfg.Warn(fmt.Sprintf("metrics export failed (%v)", err))
		return nil
	}
	scope := instrumentation.Scope{Name: "github.com/txlab/txlab/framework/trace", Version: cfg.Version}
	points := 0
	var firstErr error
	for _, rm := range collections(cfg, reps) {
		rm.Resource = res
		for i := range rm.ScopeMetrics {
			rm.ScopeMetrics[i].Scope = scope
		}
		if err := exp.Export(ctx, rm); err != nil {
			firstErr = err
			break
		}
		points += countPoints(rm)
	}
	if err := exp.Shutdown(ctx); err != nil && firstErr == nil && !errors.Is(err, context.Canceled) {
		firstErr = err
	}
	if file != nil {
		if err := file.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return points, fail(firstErr)
	}
	return points, nil
}

func countPoints(rm *metricdata.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				n += len(d.DataPoints)
			case metricdata.Sum[int64]:
				n += len(d.DataPoints)
			case metricdata.Histogram[int64]:
				n += len(d.DataPoints)
			}
		}
	}
	return n
}

// collections lays the reports' series out as the collections a
// periodic reader would have made: the k-th holds every variant's k-th
// interval; the last adds the run's totals.
func collections(cfg MetricsConfig, reps []*report.Report) []*metricdata.ResourceMetrics {
	at := func(ns int64) time.Time { return cfg.Start.Add(time.Duration(ns)) }
	longest := 0
	for _, r := range reps {
		if r != nil {
			longest = max(longest, len(r.Series))
		}
	}
	var out []*metricdata.ResourceMetrics
	for k := 0; k < longest; k++ {
		g := map[string][]metricdata.DataPoint[float64]{}
		for vi, r := range reps {
			if r == nil || k >= len(r.Series) {
				continue
			}
			iv := r.Series[k]
			set := variantAttrs(cfg, vi, r)
			span := float64(iv.EndNs-iv.StartNs) / 1e9
			rate := func(n uint64) float64 {
				if span <= 0 {
					return 0
				}
				return math.Round(float64(n) / span)
			}
			pt := func(name string, v float64, extra ...attribute.KeyValue) {
				s := set
				if len(extra) > 0 {
					s = attribute.NewSet(append(set.ToSlice(), extra...)...)
				}
				g[name] = append(g[name], metricdata.DataPoint[float64]{Attributes: s, StartTime: at(iv.StartNs), Time: at(iv.EndNs), Value: v})
			}
			pt(MetricTxRate, math.Round(iv.TxPps))
			pt(MetricOfferedRate, rate(iv.Offered))
			pt(MetricDropRate, rate(iv.Drops))
			pt(MetricBacklog, float64(iv.Backlog))
			pt(MetricCPU, round4(iv.SysPct/100), attribute.String("cpu.mode", "system"))
			pt(MetricCPU, round4(iv.IrqPct/100), attribute.String("cpu.mode", "interrupt"))
			pt(MetricCPU, round4(iv.SoftPct/100), attribute.String("cpu.mode", "softirq"))
			pt(MetricCPU, round4(iv.IdlePct/100), attribute.String("cpu.mode", "idle"))
			pt(MetricRunnable, math.Round(iv.Runnable*10)/10)
		}
		var ms []metricdata.Metrics
		for _, d := range gaugeDefs {
			if pts := g[d.name]; len(pts) > 0 {
				ms = append(ms, metricdata.Metrics{Name: d.name, Description: d.desc, Unit: d.unit, Data: metricdata.Gauge[float64]{DataPoints: pts}})
			}
		}
		out = append(out, &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: ms}}})
	}
	// The totals: drops by reason over the whole run, and the window's
	// __dev_queue_xmit histogram.
	var drops []metricdata.DataPoint[int64]
	var hists, batches []metricdata.HistogramDataPoint[int64]
	for vi, r := range reps {
		if r == nil {
			continue
		}
		set := variantAttrs(cfg, vi, r)
		reasons := make([]string, 0, len(r.Drops))
		for reason := range r.Drops {
			reasons = append(reasons, reason)
		}
		sort.Strings(reasons)
		for _, reason := range reasons {
			drops = append(drops, metricdata.DataPoint[int64]{
				Attributes: attribute.NewSet(append(set.ToSlice(), attribute.String("reason", reason))...),
				StartTime:  at(0), Time: at(r.DurationNs), Value: int64(r.Drops[reason])})
		}
		if h := r.XmitNs; h.Count > 0 {
			hists = append(hists, log2Histogram(set, at(r.WarmupNs), at(r.DurationNs), h))
		}
		if h := r.DeferBatch; h != nil && h.Count > 0 {
			batches = append(batches, log2Histogram(set, at(r.WarmupNs), at(r.DurationNs), *h))
		}
	}
	var ms []metricdata.Metrics
	if len(drops) > 0 {
		ms = append(ms, metricdata.Metrics{Name: MetricDrops, Description: "packets dropped, by the kernel's drop reason, over the whole run",
			Unit: "{packet}", Data: metricdata.Sum[int64]{DataPoints: drops, Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}})
	}
	if len(hists) > 0 {
		ms = append(ms, metricdata.Metrics{Name: MetricXmit, Description: "__dev_queue_xmit latency over the measurement window",
			Unit: "ns", Data: metricdata.Histogram[int64]{DataPoints: hists, Temporality: metricdata.CumulativeTemporality}})
	}
	if len(batches) > 0 {
		ms = append(ms, metricdata.Metrics{Name: MetricDeferBatch, Description: "skbs each llist drainer took off a qdisc's defer_list over the measurement window",
			Unit: "{packet}", Data: metricdata.Histogram[int64]{DataPoints: batches, Temporality: metricdata.CumulativeTemporality}})
	}
	if len(ms) > 0 {
		out = append(out, &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: ms}}})
	}
	return out
}

var gaugeDefs = []struct{ name, unit, desc string }{
	{MetricTxRate, "{packet}/s", "packets transmitted per simulated second"},
	{MetricOfferedRate, "{packet}/s", "packets offered to __dev_queue_xmit per simulated second"},
	{MetricDropRate, "{packet}/s", "packets dropped per simulated second, all reasons"},
	{MetricBacklog, "{packet}", "packets queued in all qdiscs at the interval's end"},
	{MetricCPU, "1", "share of CPU time by mode (vmstat sy, mpstat %irq and %soft, id)"},
	{MetricRunnable, "{task}", "runnable tasks, time-averaged (vmstat r)"},
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

func variantAttrs(cfg MetricsConfig, i int, r *report.Report) attribute.Set {
	name := r.Name
	if name == "" {
		name = r.Profile
	}
	kv := []attribute.KeyValue{attribute.String("txlab.variant", name), attribute.String("txlab.profile", r.Profile),
		attribute.Int("txlab.variant_index", i), attribute.Int64("txlab.seed", int64(r.Seed))}
	if cfg.RunID != "" {
		kv = append(kv, attribute.String("txlab.run_id", cfg.RunID))
	}
	return attribute.NewSet(kv...)
}

// log2Histogram is a report's log2 histogram as explicit bounds: the
// report's bucket [lo, hi) of integers is OpenTelemetry's (lo-1, hi-1].
func log2Histogram(set attribute.Set, start, end time.Time, h report.Hist) metricdata.HistogramDataPoint[int64] {
	bs := append([]report.Bucket(nil), h.Buckets...)
	sort.Slice(bs, func(i, j int) bool { return bs[i].Lo < bs[j].Lo })
	var bounds []float64
	var counts []uint64
	for i, b := range bs {
		if i == 0 || bs[i-1].Hi != b.Lo { // a gap or the first: open a bucket below it
			bounds = append(bounds, float64(b.Lo-1))
			counts = append(counts, 0)
		}
		bounds = append(bounds, float64(b.Hi-1))
		counts = append(counts, b.Count)
	}
	counts = append(counts, 0) // (last bound, +inf)
	dp := metricdata.HistogramDataPoint[int64]{Attributes: set, StartTime: start, Time: end, Count: h.Count,
		Bounds: bounds, BucketCounts: counts, Sum: int64(math.Round(h.MeanNs * float64(h.Count)))}
	return dp
}
