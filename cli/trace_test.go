package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
)

// collector is a minimal OTLP trace receiver: the official service
// definition, served over real gRPC on loopback.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu     sync.Mutex
	names  map[string]int
	attrs  map[string]bool
	kinds  map[string]string // attribute key -> its OTLP value kind
	traces map[string]string // span name -> trace id (hex)
	res    map[string]string // resource attributes
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			c.attrs["resource:"+a.Key] = true
			if c.res != nil {
				c.res[a.Key] = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.names[sp.Name]++
				if c.traces != nil {
					c.traces[sp.Name] = hex.EncodeToString(sp.TraceId)
				}
				for _, a := range sp.Attributes {
					c.attrs[a.Key] = true
					if c.kinds != nil {
						c.kinds[a.Key] = fmt.Sprintf("%T", a.GetValue().GetValue())
					}
				}
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func TestTraceToOTLPReceiver(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &collector{names: map[string]int{}, attrs: map[string]bool{}, kinds: map[string]string{},
		traces: map[string]string{}, res: map[string]string{}}
	coltrace.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	// The scheme alone says plain text (no OTEL_EXPORTER_OTLP_INSECURE).
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	t.Setenv("OTEL_SERVICE_NAME", "txlab-ci")

	args := append(append([]string(nil), quick...), "--trace", "otlp-grpc", "--trace-sample", "0.05",
		"--compare", "profile=6.18,6.19-rc1")
	out, err := txlab(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if id := col.traces["txlab run"]; id == "" || !strings.Contains(out, "trace "+id) {
		t.Errorf("the run's trace id %q is not in the output:\n%s", id, out)
	}
	if col.res["service.name"] != "txlab-ci" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's txlab-ci", col.res["service.name"])
	}
	wall := col.traces["txlab run"]
	for _, name := range []string{"simulated variant 6.18", "simulated variant 6.19-rc1", "packet"} {
		if id := col.traces[name]; id == "" || id == wall {
			t.Errorf("%q is not in a trace of its own (trace %q, the run's %q)", name, id, wall)
		}
	}
	if col.traces["simulated variant 6.18"] == col.traces["simulated variant 6.19-rc1"] {
		t.Error("the two variants' simulated hosts share a trace")
	}
	// Typed attributes: no arrays (a viewer prints them as JSON strings),
	// rates as integers.
	for key, kind := range map[string]string{"variant.0.profile": "*v1.AnyValue_StringValue",
		"result.0.tx_pps": "*v1.AnyValue_IntValue", "tx_pps": "*v1.AnyValue_IntValue", "duration_ns": "*v1.AnyValue_IntValue"} {
		if col.kinds[key] != kind {
			t.Errorf("attribute %s is %s, want %s", key, col.kinds[key], kind)
		}
	}
	for key, kind := range col.kinds {
		if strings.Contains(kind, "ArrayValue") {
			t.Errorf("attribute %s is an array", key)
		}
	}
	for _, want := range []string{"txlab run", "load", "variant 6.18", "variant 6.19-rc1", "setup", "warmup", "measure", "report", "packet", "__dev_queue_xmit", "qdisc", "driver"} {
		if col.names[want] == 0 {
			t.Errorf("the receiver got no %q span (got %v)", want, col.names)
		}
	}
	for _, want := range []string{"profile", "seed", "tx_pps", "resource:txlab.wall_start"} {
		if !col.attrs[want] {
			t.Errorf("no span carries attribute %q", want)
		}
	}
}

// An unreachable collector is a warning, not a failed run or a hang.
func TestTraceUnreachableCollector(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
	out, err := txlab(t, append(append([]string(nil), quick...), "--trace", "otlp-grpc")...)
	if err != nil {
		t.Fatalf("run failed because the collector is down: %v", err)
	}
	if !strings.Contains(out, "txlab: warning: trace export failed") {
		t.Errorf("no warning about the unreachable collector in: %s", out)
	}
	if n := strings.Count(out, "txlab: warning:"); n != 1 {
		t.Errorf("%d warnings about one unreachable collector, want one line: %s", n, out)
	}
}

// metricsCollector is a minimal OTLP metrics receiver over real gRPC.
type metricsCollector struct {
	colmetrics.UnimplementedMetricsServiceServer
	mu       sync.Mutex
	requests int
	names    map[string]int // metric -> data points
	runIDs   map[string]bool
	times    map[string][]uint64 // tx rate point times per variant
}

func (c *metricsCollector) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				var pts []*metricspb.NumberDataPoint
				if g := m.GetGauge(); g != nil {
					pts = g.DataPoints
				}
				if s := m.GetSum(); s != nil {
					pts = s.DataPoints
				}
				if h := m.GetHistogram(); h != nil {
					c.names[m.Name] += len(h.DataPoints)
				}
				for _, p := range pts {
					c.names[m.Name]++
					variant := ""
					for _, a := range p.Attributes {
						switch a.Key {
						case "txlab.run_id":
							c.runIDs[a.GetValue().GetStringValue()] = true
						case "txlab.variant":
							variant = a.GetValue().GetStringValue()
						}
					}
					if m.Name == "txlab.tx.rate" {
						c.times[variant] = append(c.times[variant], p.TimeUnixNano)
					}
				}
			}
		}
	}
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// Metrics reach a real OTLP gRPC receiver: one collection per interval,
// points in simulated-time order, the run's trace id on every series.
func TestMetricsToOTLPReceiver(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &metricsCollector{names: map[string]int{}, runIDs: map[string]bool{}, times: map[string][]uint64{}}
	colmetrics.RegisterMetricsServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())

	out, err := txlab(t, append(append([]string(nil), quick...), "--metrics", "otlp-grpc", "--compare", "profile=6.18,6.19-rc1", "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, name := range []string{"txlab.tx.rate", "txlab.offered.rate", "txlab.drop.rate", "txlab.qdisc.backlog", "txlab.cpu.utilization", "txlab.runnable", "txlab.xmit.duration"} {
		if col.names[name] == 0 {
			t.Errorf("no %s points (got %v)", name, col.names)
		}
	}
	// The llist's batches: one point, 6.19-rc1's (6.18 has no defer list).
	if n := col.names["txlab.defer.batch"]; n != 1 {
		t.Errorf("%d txlab.defer.batch points, want 1 (got %v)", n, col.names)
	}
	if len(col.runIDs) != 1 {
		t.Errorf("run ids %v, want one", col.runIDs)
	}
	for id := range col.runIDs {
		if !strings.Contains(out, "txlab.run_id "+id) {
			t.Errorf("run id %s not printed", id)
		}
	}
	for _, v := range []string{"6.18", "6.19-rc1"} {
		ts := col.times[v]
		if len(ts) < 2 {
			t.Fatalf("variant %s: %d tx rate points", v, len(ts))
		}
		for i := 1; i < len(ts); i++ {
			if ts[i] <= ts[i-1] {
				t.Fatalf("variant %s: points out of order: %v", v, ts)
			}
		}
	}
	if col.requests < len(col.times["6.18"]) {
		t.Errorf("%d export requests for %d intervals: want one collection per interval", col.requests, len(col.times["6.18"]))
	}
}

func TestMetricsFileAndBadExporter(t *testing.T) {
	f := filepath.Join(t.TempDir(), "m.json")
	if _, err := txlab(t, append(append([]string(nil), quick...), "--metrics-out", f)...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil || !strings.Contains(string(b), `"Name":"txlab.tx.rate"`) {
		t.Fatalf("metrics file (%v): %.300s", err, b)
	}
	_, err = txlab(t, append(append([]string(nil), quick...), "--metrics", "prometheus")...)
	if err == nil || !strings.Contains(err.Error(), `metrics: unknown exporter "prometheus"`) {
		t.Errorf("want an unknown exporter error, got %v", err)
	}
}

// An unreachable metrics collector is a warning too, bounded by
// OTEL_EXPORTER_OTLP_TIMEOUT.
func TestMetricsUnreachableCollector(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := lis.Addr().String()
	lis.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
	out, err := txlab(t, append(append([]string(nil), quick...), "--metrics", "otlp-grpc")...)
	if err != nil {
		t.Fatalf("run failed because the metrics collector is down: %v", err)
	}
	if !strings.Contains(out, "txlab: warning: metrics export failed") {
		t.Errorf("no warning about the unreachable collector in: %s", out)
	}
}
