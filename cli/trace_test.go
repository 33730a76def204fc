package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
}
