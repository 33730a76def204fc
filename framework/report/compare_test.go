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
