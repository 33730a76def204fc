// Package trace exports a txlab run as OpenTelemetry: traces (below) and
// run metrics (metrics.go).
//
// A run makes one wall-clock trace and, per variant, one simulated-time
// trace. The wall-clock trace ("txlab run") holds what the user waited
// for: the load phase and one span per variant with its setup, warmup,
// measure and report phases. Each variant's simulated host gets a trace
// of its own ("simulated variant X"), linked both ways to the variant's
// wall-clock span: sampled packet journeys (__dev_queue_xmit ->
// defer/direct -> qdisc -> dequeue bulk -> driver -> completion, drops
// as events with the kernel drop reason, lock waits as child spans) and,
// in a window, every packet under per-CPU spans. A trace viewer draws
// one trace on one clock; simulated nanoseconds and wall-clock seconds
// on one timeline put packets before the spans that simulated them, so
// the two clocks never share a trace. Simulated time 0 of every variant
// is the run's wall-clock start (resource attribute txlab.wall_start),
// so the variants' timelines line up and a viewer's default time range
// finds them.
//
// Every run gets fresh random trace IDs (two runs with one seed never
// merge in a viewer); span IDs and everything else simulated come from
// the seed, and nothing of the trace reaches the report.
//
// With tracing off nothing is installed in the TX path: the netdev hooks
// stay nil.
package trace

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/txlab/txlab/framework/sim"
)

// Exporter kinds.
const (
	ExportNone     = "none"
	ExportOTLPGRPC = "otlp-grpc"
	ExportOTLPHTTP = "otlp-http"
	ExportFile     = "file"
)

// Config selects what to trace and where to send it.
type Config struct {
	Exporter string // none, otlp-grpc, otlp-http, file
	File     string // for file: the JSON output path
	// Out, if set, is where the file exporter writes instead of creating
	// File (the CLI hands a file it replaces atomically).
	Out io.Writer
	// Start is the run's wall-clock start (zero: when Start is called):
	// the root span begins there and simulated time 0 is there.
	Start  time.Time
	Sample float64 // fraction of packets whose journey is recorded, 0..1
	// Window, if Len > 0: every packet and every CPU's __dev_queue_xmit
	// between From and From+Len (simulated) is recorded.
	Window Window
	// Version is txlab's version (the resource's service.version).
	Version string
	// Exporter overrides the exporter (tests: an in-memory one).
	SpanExporter sdktrace.SpanExporter
	// Warn receives warnings (an unreachable collector); nil: stderr.
	Warn func(string)
}

// Window is a span of simulated time.
type Window struct{ From, Len sim.Time }

// Enabled reports whether any trace is produced.
func (c Config) Enabled() bool {
	return c.SpanExporter != nil || (c.Exporter != "" && c.Exporter != ExportNone)
}

// ParseWindow parses "10ms@500ms" (length at start).
func ParseWindow(s string) (Window, error) {
	if s == "" {
		return Window{}, nil
	}
	l, at, ok := strings.Cut(s, "@")
	if !ok {
		return Window{}, fmt.Errorf("trace window %q: want LENGTH@START, e.g. 10ms@500ms", s)
	}
	ld, err := time.ParseDuration(l)
	if err != nil || ld <= 0 {
		return Window{}, fmt.Errorf("trace window %q: bad length %q", s, l)
	}
	ad, err := time.ParseDuration(at)
	if err != nil || ad < 0 {
		return Window{}, fmt.Errorf("trace window %q: bad start %q", s, at)
	}
	return Window{From: sim.Time(ad), Len: sim.Time(ld)}, nil
}

// Validate checks a config with clear messages.
func (c Config) Validate() error {
	switch c.Exporter {
	case "", ExportNone, ExportOTLPGRPC, ExportOTLPHTTP:
	case ExportFile:
		if c.File == "" && c.Out == nil {
			return errors.New("trace: the file exporter needs --trace-out FILE")
		}
	default:
		return fmt.Errorf("trace: unknown exporter %q (known: none, otlp-grpc, otlp-http, file)", c.Exporter)
	}
	if !(c.Sample >= 0 && c.Sample <= 1) {
		return fmt.Errorf("trace: sample rate %v must be in [0, 1]", c.Sample)
	}
	return nil
}

// plainLocalDefault is the OTLP exporters' extra option when the
// environment names no endpoint and says nothing of TLS: the exporters
// would then use TLS to localhost, where a lab's collector (Jaeger
// all-in-one, otelcol) listens in plain text. An endpoint given with
// an https:// or http:// scheme, or OTEL_EXPORTER_OTLP_INSECURE, decides
// as the OpenTelemetry specification says.
func plainLocalDefault(signal string) bool {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_" + signal + "_INSECURE"} {
		if os.Getenv(v) != "" {
			return false
		}
	}
	return true
}

// newSpanExporter makes the configured exporter (the OTLP ones read the
// OTEL_EXPORTER_OTLP_* variables).
func newSpanExporter(ctx context.Context, cfg Config, r *Run) (sdktrace.SpanExporter, error) {
	switch {
	case cfg.SpanExporter != nil:
		return cfg.SpanExporter, nil
	case cfg.Exporter == ExportOTLPGRPC:
		var opts []otlptracegrpc.Option
		if plainLocalDefault("TRACES") {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	case cfg.Exporter == ExportOTLPHTTP:
		var opts []otlptracehttp.Option
		if plainLocalDefault("TRACES") {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(ctx, opts...)
	case cfg.Exporter == ExportFile && cfg.Out != nil:
		return stdouttrace.New(stdouttrace.WithWriter(cfg.Out))
	default:
		f, err := os.Create(cfg.File)
		if err != nil {
			return nil, err
		}
		r.file = f
		return stdouttrace.New(stdouttrace.WithWriter(f))
	}
}

// Resource is the process's OpenTelemetry resource: service.name txlab
// (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it), the
// version, the SDK, and the run's wall-clock start (simulated time 0).
func Resource(version string, start time.Time) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName("txlab"),
		attribute.String("txlab.wall_start", start.UTC().Format(time.RFC3339Nano)),
		attribute.Int64("txlab.wall_start_unix_ns", start.UnixNano())}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	// Later options override earlier ones: the environment wins.
	return resource.New(context.Background(), resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
}

// countingExporter counts what reaches the real exporter and keeps its
// first error.
type countingExporter struct {
	sdktrace.SpanExporter
	spans  atomic.Int64
	failed atomic.Int64
	first  atomic.Pointer[error]
	warn   func(string) // nil: no warning (the file exporter fails the run instead)
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.failed.Add(int64(len(spans)))
		if e.first.CompareAndSwap(nil, &err) && e.warn != nil {
			e.warn(fmt.Sprintf("trace export failed (%v); the run goes on without its trace", err))
		}
		return err
	}
	e.spans.Add(int64(len(spans)))
	return nil
}

// idGen makes span IDs from the run seed (the same seed gives the same
// span IDs) and trace IDs at random: every run is a trace of its own in
// a viewer, whatever its seed.
type idGen struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (g *idGen) spanID() oteltrace.SpanID {
	var s oteltrace.SpanID
	binary.BigEndian.PutUint64(s[:], g.rng.Uint64()|1)
	return s
}

func (g *idGen) NewIDs(context.Context) (oteltrace.TraceID, oteltrace.SpanID) {
	var t oteltrace.TraceID
	if _, err := crand.Read(t[:]); err != nil || !t.IsValid() {
		t[15] |= 1 // crypto/rand does not fail on Linux; never an invalid ID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return t, g.spanID()
}

func (g *idGen) NewSpanID(context.Context, oteltrace.TraceID) oteltrace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spanID()
}

// Run is one run's traces.
type Run struct {
	cfg    Config
	tp     *sdktrace.TracerProvider
	exp    *countingExporter
	tracer oteltrace.Tracer
	ctx    context.Context
	root   oteltrace.Span
	base   time.Time // wall-clock start: simulated time 0
	file   io.Closer
	phase  oteltrace.Span
	pctx   context.Context
	res    *resource.Resource
}

// Start opens the run's trace with a root span named name. It returns
// nil (and no error) when tracing is off.
func Start(cfg Config, name string, seed uint64, attrs ...attribute.KeyValue) (*Run, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Warn == nil {
		cfg.Warn = func(s string) { fmt.Fprintln(os.Stderr, "txlab: warning:", s) }
	}
	r := &Run{cfg: cfg, base: cfg.Start}
	if r.base.IsZero() {
		r.base = time.Now()
	}
	ctx := context.Background()
	exp, err := newSpanExporter(ctx, cfg, r)
	if err != nil {
		return nil, fmt.Errorf("trace: %s exporter: %w", cfg.Exporter, err)
	}
	r.exp = &countingExporter{SpanExporter: exp, warn: cfg.Warn}
	// Export errors reach the user through the counting exporter (a
	// warning, or End's error); OpenTelemetry's global handler would log
	// each one again, in several lines.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	if cfg.Exporter == ExportFile && cfg.SpanExporter == nil {
		r.exp.warn = nil // a file that cannot be written fails the run (End)
	}
	if r.res, err = Resource(cfg.Version, r.base); err != nil {
		return nil, fmt.Errorf("trace: resource: %w", err)
	}
	// A blocking batch processor: spans are never dropped; the simulation
	// waits for the exporter instead. Batches of 512 (the SDK's default)
	// stay far below a receiver's 4 MiB gRPC message limit, which a
	// batch of 4096 packet spans passes.
	bsp := sdktrace.NewBatchSpanProcessor(r.exp, sdktrace.WithBlocking(),
		sdktrace.WithMaxQueueSize(1<<16), sdktrace.WithMaxExportBatchSize(512))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bsp), sdktrace.WithResource(r.res),
		sdktrace.WithIDGenerator(&idGen{rng: rand.New(rand.NewPCG(seed, 0x74786c6162))}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	r.tracer = r.tp.Tracer("github.com/txlab/txlab/framework/trace")
	r.ctx, r.root = r.tracer.Start(ctx, name, oteltrace.WithTimestamp(r.base), oteltrace.WithAttributes(attrs...))
	return r, nil
}

// Phase starts a wall-clock phase span (load, setup, warmup, measure,
// report) under the root, ending the previous phase.
func (r *Run) Phase(name string) { r.PhaseAt(name, time.Now()) }

// PhaseAt is Phase for a phase that began at t (the load phase, begun
// before the trace could be opened).
func (r *Run) PhaseAt(name string, t time.Time) {
	if r == nil {
		return
	}
	if r.phase != nil {
		r.phase.End(oteltrace.WithTimestamp(t))
	}
	r.pctx, r.phase = r.tracer.Start(r.ctx, name, oteltrace.WithTimestamp(t))
}

// SetAttributes adds attributes to the root span (the result summary).
func (r *Run) SetAttributes(kv ...attribute.KeyValue) {
	if r != nil {
		r.root.SetAttributes(kv...)
	}
}

// Fail marks the run's root span as failed.
func (r *Run) Fail(err error) {
	if r != nil && err != nil {
		r.root.RecordError(err)
		r.root.SetStatus(codes.Error, err.Error())
	}
}

// TraceID is the wall-clock trace's ID (hex), "" when tracing is off.
func (r *Run) TraceID() string {
	if r == nil {
		return ""
	}
	return r.root.SpanContext().TraceID().String()
}

// Base is simulated time 0 on the wall clock.
func (r *Run) Base() time.Time { return r.base }

// Exporter names where the trace goes.
func (r *Run) Exporter() string {
	if r == nil {
		return ExportNone
	}
	if r.cfg.SpanExporter != nil {
		return "custom"
	}
	return r.cfg.Exporter
}

// Exported is how many spans reached the exporter, and how many failed.
func (r *Run) Exported() (ok, failed int64) {
	if r == nil {
		return 0, 0
	}
	return r.exp.spans.Load(), r.exp.failed.Load()
}

// End ends the root span and flushes the exporter, bounded in time: an
// unreachable collector is a warning, never a hang. With the file
// exporter, any span that could not be written, or a failed close, is
// the error End returns.
func (r *Run) End() error {
	if r == nil {
		return nil
	}
	if r.phase != nil {
		r.phase.End()
		r.phase = nil
	}
	r.root.End()
	// A collector that refused an export already has had its one-line
	// warning: the flush gets a second, not ten, and says nothing more.
	failed := r.exp.first.Load() != nil && r.exp.warn != nil
	wait := 10 * time.Second
	if failed {
		wait = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var fileErr error
	if err := r.tp.Shutdown(ctx); err != nil {
		if r.exp.warn == nil {
			fileErr = fmt.Errorf("trace: flush: %w", err)
		} else if r.exp.first.Load() == nil { // no export failed, before or during the flush
			r.cfg.Warn(fmt.Sprintf("trace flush: %v", err))
		}
	}
	if p := r.exp.first.Load(); p != nil && r.exp.warn == nil && fileErr == nil {
		// The exporter joins one error per span: the first says it.
		first, _, _ := strings.Cut((*p).Error(), "\n")
		fileErr = fmt.Errorf("trace: %d spans not written: %s", r.exp.failed.Load(), first)
	}
	if r.file != nil {
		if err := r.file.Close(); err != nil && fileErr == nil {
			fileErr = fmt.Errorf("trace: %w", err)
		}
	}
	return fileErr
}

// simTime converts simulated ns to a timestamp on the run's clock.
func (r *Run) simTime(t sim.Time) time.Time { return r.base.Add(time.Duration(t)) }

// attr helpers
func intAttr(k string, v int) attribute.KeyValue { return attribute.Int(k, v) }
func strAttr(k, v string) attribute.KeyValue     { return attribute.String(k, v) }

func itoa(i int) string { return strconv.Itoa(i) }
