package trace

import "testing"

// With no endpoint and no word on TLS in the environment the OTLP
// exporters talk plain text to the local collector (their own default
// is TLS to localhost, which a lab's Jaeger refuses); anything the
// environment says wins.
func TestPlainLocalDefault(t *testing.T) {
	vars := []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"}
	for _, v := range vars {
		t.Setenv(v, "")
	}
	if !plainLocalDefault("TRACES") {
		t.Error("empty environment: want the plain-text local default")
	}
	for _, v := range vars[:4] {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "https://collector.example:4317")
			if plainLocalDefault("TRACES") {
				t.Errorf("%s set: the environment should decide", v)
			}
		})
	}
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://m.example:4317")
	if !plainLocalDefault("TRACES") || plainLocalDefault("METRICS") {
		t.Error("a metrics endpoint decides for metrics only")
	}
}
