package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/trace"
	"github.com/txlab/txlab/framework/workload"
)

func spec() run.Spec {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 1, 8, 1
	s.Queues = 4
	s.Qdisc = "mq pfifo limit 50"
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 120, Flows: 8, Rate: 3e6}
	// ice's static 50 us ITR keeps the rings full enough for pfifo's 50
	// to overflow (its TX DIM, from 8 us, drains them before it does).
	s.DriverArgs = []string{"adaptive-tx", "off"}
	s.Duration, s.Warmup = 3*sim.Millisecond, sim.Millisecond
	return s
}

func traced(t *testing.T, s run.Spec, cfg trace.Config) (*report.Report, tracetest.SpanStubs, *trace.Run) {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	cfg.SpanExporter = keep{mem}
	tr, err := trace.Start(cfg, "txlab run", s.Seed)
	if err != nil {
		t.Fatal(err)
	}
	tr.Phase("load")
	rep, err := run.RunTraced(s, nil, tr)
	if err != nil {
		t.Fatal(err)
	}
	tr.End()
	return rep, mem.GetSpans(), tr
}

func byName(spans tracetest.SpanStubs) map[string][]tracetest.SpanStub {
	m := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = append(m[s.Name], s)
	}
	return m
}

func TestSpanTreeAndTimestamps(t *testing.T) {
	s := spec()
	rep, spans, tr := traced(t, s, trace.Config{Sample: 0.05})
	n := byName(spans)
	if len(n["txlab run"]) != 1 || len(n["variant 6.19-rc1"]) != 1 {
		t.Fatalf("want one root and one variant span, got %v", keys(n))
	}
	root, variant := n["txlab run"][0], n["variant 6.19-rc1"][0]
	if variant.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Error("the variant is not a child of the run")
	}
	for _, ph := range []string{"load", "setup", "warmup", "measure", "report"} {
		if len(n[ph]) != 1 {
			t.Errorf("phase %q: %d spans", ph, len(n[ph]))
		}
	}
	ids := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		ids[sp.SpanContext.SpanID().String()] = sp
	}
	base := root.StartTime
	if len(n["packet"]) == 0 {
		t.Fatal("no packet journeys")
	}
	for _, name := range []string{"__dev_queue_xmit", "qdisc", "driver", "lock wait"} {
		for _, sp := range n[name] {
			parent := ids[sp.Parent.SpanID().String()]
			want := "packet"
			if name == "lock wait" {
				want = "__dev_queue_xmit"
			}
			if parent.Name != want {
				t.Fatalf("%s span's parent is %q, want %q", name, parent.Name, want)
			}
			if sp.EndTime.Before(sp.StartTime) || sp.StartTime.Before(parent.StartTime) || sp.EndTime.After(parent.EndTime.Add(time.Nanosecond)) {
				t.Fatalf("%s span [%v, %v] not inside its parent [%v, %v]", name, sp.StartTime, sp.EndTime, parent.StartTime, parent.EndTime)
			}
		}
	}
	var xmitSum time.Duration
	for _, sp := range n["packet"] {
		off := sp.EndTime.Sub(base)
		// A CPU may run a few us past the horizon between sync points.
		if sp.StartTime.Before(base) || off > time.Duration(s.Duration)+50*time.Microsecond {
			t.Fatalf("packet span at %v..%v outside the simulated run", sp.StartTime.Sub(base), off)
		}
	}
	for _, sp := range n["__dev_queue_xmit"] {
		xmitSum += sp.EndTime.Sub(sp.StartTime)
	}
	mean := float64(xmitSum) / float64(len(n["__dev_queue_xmit"]))
	if rep.XmitNs.MeanNs > 0 && (mean < 0.5*rep.XmitNs.MeanNs || mean > 2*rep.XmitNs.MeanNs) {
		t.Errorf("sampled __dev_queue_xmit mean %.0f ns far from the report's %.0f ns", mean, rep.XmitNs.MeanNs)
	}
	if ok, failed := tr.Exported(); ok != int64(len(spans)) || failed != 0 {
		t.Errorf("exported %d (failed %d), exporter holds %d", ok, failed, len(spans))
	}
}

func TestDropEventsAndSampling(t *testing.T) {
	s := spec()
	rep, spans, _ := traced(t, s, trace.Config{Sample: 0.1})
	if rep.DroppedPackets == 0 {
		t.Fatal("the scenario should drop (pfifo limit 50)")
	}
	drops := 0
	for _, sp := range spans {
		for _, ev := range sp.Events {
			if ev.Name != "drop" {
				continue
			}
			drops++
			found := false
			for _, a := range ev.Attributes {
				if a.Key == "reason" && a.Value.AsString() != "" {
					found = true
				}
			}
			if !found {
				t.Fatal("a drop event without a reason")
			}
		}
	}
	packets := len(byName(spans)["packet"])
	finished := float64(rep.TxPackets + rep.DroppedPackets)
	frac := float64(packets) / finished
	t.Logf("%d journeys of %.0f finished packets (%.3f), %d drop events", packets, finished, frac, drops)
	if math.Abs(frac-0.1) > 0.02 {
		t.Errorf("sampled %.3f of packets, want 0.1", frac)
	}
	if drops == 0 {
		t.Error("no drop events although packets were dropped")
	}
}

// A window records every packet inside it, under per-CPU spans.
func TestWindow(t *testing.T) {
	s := spec()
	_, spans, _ := traced(t, s, trace.Config{Window: trace.Window{From: 2 * sim.Millisecond, Len: 100 * sim.Microsecond}})
	n := byName(spans)
	cpus := 0
	for name := range n {
		if len(name) > 4 && name[:4] == "cpu " {
			cpus++
		}
	}
	if cpus == 0 || len(n["packet"]) < 100 {
		t.Fatalf("window: %d cpu spans, %d packets", cpus, len(n["packet"]))
	}
}

// fingerprint is what must repeat for one seed: names, attributes and
// simulated offsets of the simulated-time spans.
func fingerprint(spans tracetest.SpanStubs, base time.Time) string {
	var lines []string
	for _, sp := range spans {
		if sp.Name != "packet" && sp.Name != "__dev_queue_xmit" && sp.Name != "qdisc" && sp.Name != "driver" && sp.Name != "lock wait" {
			continue
		}
		attrs, _ := json.Marshal(sp.Attributes)
		lines = append(lines, fmt.Sprintf("%s %d %d %s %s", sp.Name, sp.StartTime.Sub(base), sp.EndTime.Sub(base), attrs, sp.SpanContext.SpanID()))
	}
	sort.Strings(lines)
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func TestSameSeedSameSpansAndNoPerturbation(t *testing.T) {
	s := spec()
	repA, a, _ := traced(t, s, trace.Config{Sample: 0.05})
	_, b, _ := traced(t, s, trace.Config{Sample: 0.05})
	rootA, rootB := byName(a)["txlab run"][0].StartTime, byName(b)["txlab run"][0].StartTime
	if fingerprint(a, rootA) != fingerprint(b, rootB) {
		t.Error("the same seed gave different spans")
	}
	plain, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain.SimWallNs, repA.SimWallNs = 0, 0
	ja, _ := json.Marshal(repA)
	jp, _ := json.Marshal(plain)
	if !bytes.Equal(ja, jp) {
		t.Error("tracing changed the simulation's report")
	}
}

func keys(m map[string][]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keep stops the SDK's shutdown from clearing the in-memory spans.
type keep struct{ *tracetest.InMemoryExporter }

func (keep) Shutdown(context.Context) error { return nil }

var _ sdktrace.SpanExporter = keep{}

// discard drops spans after the SDK has built them (the cost of
// tracing without the cost of a collector).
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracing: simulated packets per wall second with tracing off
// and on at two sampling rates, on BenchmarkSimSmall's host.
func BenchmarkTracing(b *testing.B) {
	for _, rate := range []float64{0, 0.01, 0.1} {
		b.Run(fmt.Sprintf("sample=%g", rate), func(b *testing.B) {
			s := spec()
			s.Qdisc, s.Workload = "mq pfifo", workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 120}
			s.Duration, s.Warmup = 10*sim.Millisecond, 0
			var pkts uint64
			for i := 0; i < b.N; i++ {
				var tr *trace.Run
				if rate > 0 {
					tr, _ = trace.Start(trace.Config{Sample: rate, SpanExporter: discard{}}, "bench", 1)
				}
				rep, err := run.RunTraced(s, nil, tr)
				if err != nil {
					b.Fatal(err)
				}
				tr.End()
				pkts += rep.TxPackets
			}
			b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "simpkts/s")
		})
	}
}
