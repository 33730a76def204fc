package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteTextGolden(t *testing.T) {
	failed := sampleReport()
	failed.Name = ""
	failed.AccountingOK = false
	failed.AccountingError = "offered 49860712 != 49860711"
	failed.Error = "accounting identity violated"

	tests := []struct {
		name   string
		report *Report
	}{
		{"text.golden", sampleReport()},
		{"text_failed.golden", failed},
		{"text_empty.golden", &Report{Profile: "empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tt.report); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// TestLockLayout pins the exact perf lock contention row from the brief,
// independent of the golden file.
func TestLockLayout(t *testing.T) {
	var b bytes.Buffer
	writeLocks(&b, sampleReport().Locks[:1])
	want := "" +
		" contended   total wait     max wait     avg wait         type   caller\n" +
		"\n" +
		"    442111      6.79 s     162.47 ms     15.35 us     spinlock   dev_hard_start_xmit+0xcd\n"
	if got := b.String(); !strings.HasSuffix(got, want) {
		t.Errorf("got\n%q\nwant suffix\n%q", got, want)
	}
}

func TestPerfTime(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{0, "      0 ns"},
		{812, "    812 ns"},
		{999, "    999 ns"},
		{1000, "   1.00 us"},
		{25_090, "  25.09 us"},
		{560_630, " 560.63 us"},
		{9_570_000, "   9.57 ms"},
		{6_790_000_000, "   6.79 s "},
		{90_000_000_000, "   1.50 m "},
	}
	for _, tt := range tests {
		if got := perfTime(tt.ns, 10); got != tt.want {
			t.Errorf("perfTime(%d) = %q, want %q", tt.ns, got, tt.want)
		}
	}
	if got := PerfTime(6_790_000_000); got != "6.79 s" {
		t.Errorf("PerfTime = %q", got)
	}
}

func TestTCSize(t *testing.T) {
	tests := []struct {
		sz   int64
		want string
	}{
		{0, "0b"},
		{1514, "1514b"},
		{15140, "15140b"},
		{1024, "1Kb"},
		{1030, "1Kb"}, // within 16 bytes of 1Kb
		{1040, "1040b"},
		{65536, "64Kb"},
		{1 << 20, "1Mb"},
		{32<<20 + 1000, "32Mb"},
		{32<<20 + 2048, "32770Kb"},
	}
	for _, tt := range tests {
		if got := tcSize(tt.sz); got != tt.want {
			t.Errorf("tcSize(%d) = %q, want %q", tt.sz, got, tt.want)
		}
	}
}

func TestHistLabel(t *testing.T) {
	tests := []struct {
		lo   int64
		want string
	}{
		{-5, "(..., 0)"},
		{0, "[0]"},
		{1, "[1]"},
		{2, "[2, 4)"},
		{256, "[256, 512)"},
		{512, "[512, 1K)"},
		{1 << 10, "[1K, 2K)"},
		{512 << 10, "[512K, 1M)"},
		{1 << 20, "[1M, 2M)"},
		{1 << 30, "[1G, 2G)"},
	}
	for _, tt := range tests {
		if got := histLabel(histIndex(tt.lo)); got != tt.want {
			t.Errorf("label for lo=%d = %q, want %q", tt.lo, got, tt.want)
		}
	}
}

func TestHistGapsAndBars(t *testing.T) {
	var b bytes.Buffer
	writeHist(&b, "@x", Hist{Count: 3, Buckets: []Bucket{
		{Lo: 4, Hi: 8, Count: 2},
		{Lo: 16, Hi: 32, Count: 1},
	}})
	want := "\n@x: \n" +
		"[4, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
		"[8, 16)                0 |                                                    |\n" +
		"[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
		"\n@x_count: 3\n\n@x_avg: 0\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteTextNil(t *testing.T) {
	if err := WriteText(&bytes.Buffer{}, nil); err == nil {
		t.Error("want error for nil report")
	}
}

// The text table shows what perf lock records: a site whose waiters only
// ever spun on the pending bit has no row, and the order is the queued
// waits' total.
func TestLockLayoutPerfView(t *testing.T) {
	tests := []struct {
		name  string
		locks []Lock
		want  []string // callers in order; none: "(no contention)"
	}{
		{"pending only", []Lock{{Name: "a", Contended: 900, TotalWaitNs: 9e6}}, nil},
		{"queued waits decide the order", []Lock{
			{Name: "a", Contended: 900, TotalWaitNs: 9e6, MCSContended: 1, MCSTotalWaitNs: 1e3},
			{Name: "b", Contended: 10, TotalWaitNs: 1e5, MCSContended: 10, MCSTotalWaitNs: 1e5},
		}, []string{"b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeLocks(&b, tt.locks)
			var got []string
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.Contains(line, "spinlock") {
					f := strings.Fields(line)
					got = append(got, f[len(f)-1])
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("rows %v, want %v:\n%s", got, tt.want, b.String())
			}
			if tt.want == nil && !strings.Contains(b.String(), "(no contention)") {
				t.Errorf("no rows and no \"(no contention)\":\n%s", b.String())
			}
		})
	}
}

// ip -s link's drop columns (a veth's peer on its line) and
// softnet_stat's rows in /proc/net/softnet_stat's column order.
func TestLinksAndSoftnetText(t *testing.T) {
	r := &Report{Profile: "p",
		Links:   []Link{{Name: "veth0", RxDropped: 3, TxDropped: 7, Peer: &LinkPeer{RxDropped: 7, TxDropped: 3}}, {Name: "eth1"}},
		Softnet: []Softnet{{Processed: 100, Dropped: 10, TimeSqueeze: 2, BacklogLen: 5, CPU: 1, InputQlen: 4, ProcessQlen: 1, NapiPolls: 9}}}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nip -s link drops (whole run)\n  veth0    rx_dropped 3 tx_dropped 7  peer: rx_dropped 7 tx_dropped 3\n  eth1     rx_dropped 0 tx_dropped 0\n",
		"   cpu  processed  dropped time_squeeze received_rps flow_limit_count backlog_len input_qlen process_qlen napi_polls\n" +
			"     1        100       10            2            0                0           5          4            1          9\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks\n%s\ngot\n%s", want, b.String())
		}
	}
}
