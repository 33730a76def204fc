package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteCompareGolden(t *testing.T) {
	third := sampleReport()
	third.Name = ""
	third.Profile = "mlx5-udp-flood"
	third.Locks = nil

	tests := []struct {
		name    string
		reports []*Report
	}{
		{"compare2.golden", []*Report{sampleReport(), lockedReport()}},
		{"compare3.golden", []*Report{sampleReport(), lockedReport(), third}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCompare(&b, tt.reports); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestCompareRatio(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCompare(&b, []*Report{sampleReport(), lockedReport()}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "tx Mpps") {
			if !strings.HasSuffix(line, "1.81x") {
				t.Errorf("tx Mpps line %q: want ratio 1.81x", line)
			}
			return
		}
	}
	t.Error("no tx Mpps row")
}

func TestWriteCompareEdge(t *testing.T) {
	if err := WriteCompare(&bytes.Buffer{}, nil); err == nil {
		t.Error("want error for no reports")
	}
	var b bytes.Buffer
	if err := WriteCompare(&b, []*Report{sampleReport(), nil}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "error (#2): no report") {
		t.Errorf("nil report not shown:\n%s", b.String())
	}
}

// Variants that ran TCP compare their goodput and loaded RTT (flent's
// totals and ping plots); a variant without them shows 0, and a
// comparison of UDP runs has no such rows (the goldens).
func TestCompareTCPRows(t *testing.T) {
	tcp := sampleReport()
	g := 95.6e6
	tcp.GoodputBps = &g
	tcp.Latency = &Latency{Loaded: Percentiles{P50: 32.22, P99: 32.34}}
	var b bytes.Buffer
	if err := WriteCompare(&b, []*Report{tcp, sampleReport()}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"goodput Mbit/s": "95.6", "loaded RTT p50 ms": "32.22", "loaded RTT p99 ms": "32.34"}
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		for label, v := range want {
			if strings.HasPrefix(strings.TrimSpace(line), label+" ") {
				n := len(strings.Fields(label))
				if len(f) < n+2 || f[n] != v || (f[n+1] != "0.0" && f[n+1] != "0.00") {
					t.Errorf("%s row %q: want %s and 0", label, line, v)
				}
				delete(want, label)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("rows missing: %v\n%s", want, b.String())
	}
}
