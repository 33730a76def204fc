package main

import (
	"context"
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
	mu    sync.Mutex
	names map[string]int
	attrs map[string]bool
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			c.attrs["resource:"+a.Key] = true
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.names[sp.Name]++
				for _, a := range sp.Attributes {
					c.attrs[a.Key] = true
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
	col := &collector{names: map[string]int{}, attrs: map[string]bool{}}
	coltrace.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")

	args := append(append([]string(nil), quick...), "--trace", "otlp-grpc", "--trace-sample", "0.05",
		"--compare", "profile=6.18,6.19-rc1")
	if _, err := txlab(t, args...); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
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
