package trace_test

import (
	"context"
	"math"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/trace"
)

// memMetrics keeps what it is given (an sdkmetric.Exporter).
type memMetrics struct{ got []metricdata.ResourceMetrics }

func (m *memMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (m *memMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (m *memMetrics) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	m.got = append(m.got, *rm)
	return nil
}
func (m *memMetrics) ForceFlush(context.Context) error { return nil }
func (m *memMetrics) Shutdown(context.Context) error   { return nil }

func TestExportMetrics(t *testing.T) {
	s := spec()
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.DroppedPackets == 0 || len(rep.Series) == 0 {
		t.Fatal("the scenario should drop and have a series")
	}
	start := time.Unix(1700000000, 0)
	mem := &memMetrics{}
	n, err := trace.ExportMetrics(trace.MetricsConfig{MetricExporter: mem, Start: start, RunID: "abc"}, []*report.Report{rep})
	if err != nil {
		t.Fatal(err)
	}
	if len(mem.got) != len(rep.Series)+1 {
		t.Fatalf("%d collections, want one per interval (%d) and the totals", len(mem.got), len(rep.Series))
	}
	points, cpuPoints := 0, 0
	for k, rm := range mem.got[:len(rep.Series)] {
		iv := rep.Series[k]
		for _, m := range rm.ScopeMetrics[0].Metrics {
			g, ok := m.Data.(metricdata.Gauge[float64])
			if !ok {
				t.Fatalf("%s is %T, want a gauge", m.Name, m.Data)
			}
			for _, dp := range g.DataPoints {
				points++
				if want := start.Add(time.Duration(iv.EndNs)); !dp.Time.Equal(want) {
					t.Fatalf("%s point at %v, want the interval's simulated end %v", m.Name, dp.Time, want)
				}
				if v, _ := dp.Attributes.Value("txlab.run_id"); v.AsString() != "abc" {
					t.Fatalf("%s without txlab.run_id", m.Name)
				}
				if m.Name == trace.MetricTxRate && dp.Value != float64(int64(iv.TxPps+0.5)) {
					t.Errorf("interval %d: tx rate %v, report %v", k, dp.Value, iv.TxPps)
				}
				if m.Name == trace.MetricBacklog && dp.Value != float64(iv.Backlog) {
					t.Errorf("interval %d: backlog %v, report %d", k, dp.Value, iv.Backlog)
				}
				if m.Name == trace.MetricCPU {
					cpuPoints++
					mode, _ := dp.Attributes.Value("cpu.mode")
					want := map[string]float64{"system": iv.SysPct, "interrupt": iv.IrqPct, "softirq": iv.SoftPct, "idle": iv.IdlePct}
					if w, ok := want[mode.AsString()]; !ok || math.Abs(dp.Value-w/100) > 1e-4 {
						t.Errorf("interval %d: cpu.mode %q %v, report %v%%", k, mode.AsString(), dp.Value, w)
					}
				}
			}
		}
	}
	if cpuPoints != 4*len(rep.Series) {
		t.Errorf("%d %s points, want system, interrupt, softirq and idle for each of %d intervals", cpuPoints, trace.MetricCPU, len(rep.Series))
	}
	var drops int64
	var histCount uint64
	for _, m := range mem.got[len(rep.Series)].ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				points++
				reason, _ := dp.Attributes.Value("reason")
				if uint64(dp.Value) != rep.Drops[reason.AsString()] {
					t.Errorf("drops %s = %d, report %d", reason.AsString(), dp.Value, rep.Drops[reason.AsString()])
				}
				drops += dp.Value
			}
		case metricdata.Histogram[int64]:
			for _, dp := range d.DataPoints {
				points++
				histCount = dp.Count
				var sum uint64
				for _, c := range dp.BucketCounts {
					sum += c
				}
				if sum != dp.Count || len(dp.BucketCounts) != len(dp.Bounds)+1 {
					t.Errorf("histogram: buckets add to %d of %d, %d counts for %d bounds", sum, dp.Count, len(dp.BucketCounts), len(dp.Bounds))
				}
			}
		}
	}
	if uint64(drops) != rep.DroppedPackets || histCount != rep.XmitNs.Count {
		t.Errorf("drops %d (report %d), histogram count %d (report %d)", drops, rep.DroppedPackets, histCount, rep.XmitNs.Count)
	}
	if n != points {
		t.Errorf("ExportMetrics says %d points, the exporter got %d", n, points)
	}
}
