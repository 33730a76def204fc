package trace_test

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/trace"
)

func attr(sp tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range sp.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// The wall clock and the simulated clock never share a trace: the
// variant's wall-clock span and its simulated host's root are roots of
// two traces, linked both ways, and every simulated span is in the
// second one, inside its root.
func TestWallAndSimulatedTracesApart(t *testing.T) {
	_, spans, tr := traced(t, spec(), trace.Config{Sample: 0.05})
	n := byName(spans)
	root, variant := n["txlab run"][0], n["variant 6.19-rc1"][0]
	if len(n["simulated variant 6.19-rc1"]) != 1 {
		t.Fatalf("no simulated host root span: %v", keys(n))
	}
	simRoot := n["simulated variant 6.19-rc1"][0]
	wall, simID := root.SpanContext.TraceID(), simRoot.SpanContext.TraceID()
	if wall == simID || simRoot.Parent.IsValid() {
		t.Fatal("the simulated host is not a trace of its own")
	}
	if tr.TraceID() != wall.String() {
		t.Errorf("TraceID %s, want the wall-clock trace %s", tr.TraceID(), wall)
	}
	if len(simRoot.Links) != 1 || simRoot.Links[0].SpanContext.SpanID() != variant.SpanContext.SpanID() {
		t.Error("the simulated root does not link to its wall-clock variant span")
	}
	if len(variant.Links) != 1 || variant.Links[0].SpanContext.SpanID() != simRoot.SpanContext.SpanID() {
		t.Error("the wall-clock variant span does not link to its simulated host")
	}
	for _, name := range []string{"packet", "__dev_queue_xmit", "qdisc", "driver", "lock wait"} {
		for _, sp := range n[name] {
			if sp.SpanContext.TraceID() != simID {
				t.Fatalf("a %s span is in the wall-clock trace", name)
			}
			if sp.StartTime.Before(simRoot.StartTime) || sp.EndTime.After(simRoot.EndTime) {
				t.Fatalf("%s [%v, %v] outside the simulated root [%v, %v]", name, sp.StartTime, sp.EndTime, simRoot.StartTime, simRoot.EndTime)
			}
		}
	}
	for _, name := range []string{"load", "setup", "warmup", "measure", "report"} {
		if n[name][0].SpanContext.TraceID() != wall {
			t.Errorf("the %s phase is not in the wall-clock trace", name)
		}
	}
	// The simulated root marks where the host stood at each phase.
	var events []string
	for _, ev := range simRoot.Events {
		events = append(events, ev.Name)
	}
	if strings.Join(events, " ") != "warmup measure report" {
		t.Errorf("simulated root events %v, want warmup measure report", events)
	}
}

// Two runs with one seed are two traces (a viewer would merge them), with
// the same simulated spans.
func TestEachRunItsOwnTraceID(t *testing.T) {
	_, a, _ := traced(t, spec(), trace.Config{Sample: 0.01})
	_, b, _ := traced(t, spec(), trace.Config{Sample: 0.01})
	ra, rb := byName(a)["txlab run"][0], byName(b)["txlab run"][0]
	if ra.SpanContext.TraceID() == rb.SpanContext.TraceID() {
		t.Error("two runs with one seed share a trace ID")
	}
	sa, sb := byName(a)["simulated variant 6.19-rc1"][0], byName(b)["simulated variant 6.19-rc1"][0]
	if sa.SpanContext.TraceID() == sb.SpanContext.TraceID() {
		t.Error("two runs with one seed share a simulated trace ID")
	}
}

// What Jaeger showed: window CPU spans shorter than their children, lock
// waits of 0 ns, sub-microsecond spans shown as nothing.
func TestSpansAViewerDrawsWell(t *testing.T) {
	s := spec()
	_, spans, _ := traced(t, s, trace.Config{Sample: 0.05, Window: trace.Window{From: 2 * sim.Millisecond, Len: 50 * sim.Microsecond}})
	ids := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		ids[sp.SpanContext.SpanID().String()] = sp
	}
	cpus, sub := 0, 0
	for _, sp := range spans {
		parent, ok := ids[sp.Parent.SpanID().String()]
		if ok && strings.HasPrefix(parent.Name, "cpu ") {
			if sp.EndTime.After(parent.EndTime) || sp.StartTime.Before(parent.StartTime) {
				t.Fatalf("%s [%v, %v] sticks out of %s [%v, %v]", sp.Name, sp.StartTime, sp.EndTime, parent.Name, parent.StartTime, parent.EndTime)
			}
		}
		if strings.HasPrefix(sp.Name, "cpu ") {
			cpus++
		}
		if sp.Name == "lock wait" && !sp.EndTime.After(sp.StartTime) {
			t.Fatal("a lock wait span of 0 ns")
		}
		switch sp.Name {
		case "packet", "__dev_queue_xmit", "qdisc", "driver", "lock wait":
			v, ok := attr(sp, "duration_ns")
			if !ok || v.AsInt64() != int64(sp.EndTime.Sub(sp.StartTime)) {
				t.Fatalf("%s: duration_ns %v, span lasts %v", sp.Name, v.AsInt64(), sp.EndTime.Sub(sp.StartTime))
			}
			if sp.EndTime.Sub(sp.StartTime) < time.Microsecond {
				sub++
			}
		}
	}
	if cpus == 0 {
		t.Fatal("no window CPU spans")
	}
	t.Logf("%d spans under 1 us carry duration_ns", sub)
}

func TestServiceNameFromEnvironment(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "lab-42")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
	res, err := trace.Resource("1.2.3", time.Unix(10, 0))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range res.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	if got["service.name"] != "lab-42" || got["deployment.environment"] != "ci" || got["service.version"] != "1.2.3" {
		t.Errorf("resource %v", got)
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	res, _ = trace.Resource("", time.Unix(10, 0))
	if v, _ := res.Set().Value("service.name"); v.AsString() != "txlab" {
		t.Errorf("default service.name %q, want txlab", v.AsString())
	}
}
