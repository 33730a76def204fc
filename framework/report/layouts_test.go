package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/units"
)

// The layouts against text copied from the real tools' output. The
// seed is /work/shared/seeds/llist-adoption-thread.txt (netdev, 2025-10,
// "net: dev_queue_xmit() llist adoption"): `vmstat 2 5`, `perf lock
// contention`, a bpftrace hist. Mail dropped the spaces tools leave at
// a line's end; the tests put bpftrace's back where it is the tool's.

// vmstat 2 5 before and after the llist patch: header and rows.
func TestVmstatSeed(t *testing.T) {
	seed := "" +
		"procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n" +
		" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n" +
		"243  0      0 2368988672  51036 1100852    0    0   146     1  242   60  0  9 91  0  0\n" +
		"244  0      0 2368988672  51036 1100852    0    0   536    10 487745 14718  0 52 48  0  0\n" +
		"78  0      0 2369573632  32896 1350988    0    0    22     0  331  254  0  8 92  0  0\n" +
		"104  0      0 2369573632  32896 1350988    0    0   290     0 430238 298247  0 23 76  0  0\n"
	rows := []vmstatRow{
		{R: 243, Free: 2368988672, Buff: 51036, Cache: 1100852, Bi: 146, Bo: 1, In: 242, Cs: 60, Sy: 9, Id: 91},
		{R: 244, Free: 2368988672, Buff: 51036, Cache: 1100852, Bi: 536, Bo: 10, In: 487745, Cs: 14718, Sy: 52, Id: 48},
		{R: 78, Free: 2369573632, Buff: 32896, Cache: 1350988, Bi: 22, In: 331, Cs: 254, Sy: 8, Id: 92},
		{R: 104, Free: 2369573632, Buff: 32896, Cache: 1350988, Bi: 290, In: 430238, Cs: 298247, Sy: 23, Id: 76},
	}
	var b bytes.Buffer
	b.WriteString(vmstatHeader)
	for _, r := range rows {
		r.write(&b)
	}
	if b.String() != seed {
		t.Errorf("got\n%s\nwant (the seed)\n%s", b.String(), seed)
	}
	// What the model fills in: sy and id rounded as procps does.
	got := vmstatOf(VMStat{Runnable: 243.6, InPerS: 487744.5, CSPerS: 14718.2, SysPct: 51.5, IdlePct: 48.5})
	if got.R != 244 || got.In != 487745 || got.Cs != 14718 || got.Sy != 52 || got.Id != 49 {
		t.Errorf("vmstatOf: %+v", got)
	}
}

// perf lock record -C0-7 sleep 1; perf lock contention: the first table.
func TestPerfLockSeed(t *testing.T) {
	seed := "" +
		" contended   total wait     max wait     avg wait         type   caller\n" +
		"\n" +
		"    442111      6.79 s     162.47 ms     15.35 us     spinlock   dev_hard_start_xmit+0xcd\n" +
		"      5961      9.57 ms      8.12 us      1.60 us     spinlock   __dev_queue_xmit+0x3a0\n" +
		"       244    560.63 us      7.63 us      2.30 us     spinlock   do_softirq+0x5b\n" +
		"        13     25.09 us      3.21 us      1.93 us     spinlock   net_tx_action+0xf8\n"
	locks := []Lock{
		{Name: "dev_hard_start_xmit+0xcd", Contended: 442111, TotalWaitNs: 6_790_000_000, MaxWaitNs: 162_470_000, AvgWaitNs: 15_350, MCSContended: 442111, MCSTotalWaitNs: 6_790_000_000, MCSMaxWaitNs: 162_470_000, MCSAvgWaitNs: 15_350},
		{Name: "__dev_queue_xmit+0x3a0", Contended: 5961, TotalWaitNs: 9_570_000, MaxWaitNs: 8_120, AvgWaitNs: 1_600, MCSContended: 5961, MCSTotalWaitNs: 9_570_000, MCSMaxWaitNs: 8_120, MCSAvgWaitNs: 1_600},
		{Name: "do_softirq+0x5b", Contended: 244, TotalWaitNs: 560_630, MaxWaitNs: 7_630, AvgWaitNs: 2_300, MCSContended: 244, MCSTotalWaitNs: 560_630, MCSMaxWaitNs: 7_630, MCSAvgWaitNs: 2_300},
		{Name: "net_tx_action+0xf8", Contended: 13, TotalWaitNs: 25_090, MaxWaitNs: 3_210, AvgWaitNs: 1_930, MCSContended: 13, MCSTotalWaitNs: 25_090, MCSMaxWaitNs: 3_210, MCSAvgWaitNs: 1_930},
	}
	var b bytes.Buffer
	writeLocks(&b, locks)
	_, got, _ := strings.Cut(b.String(), "(perf lock contention layout)\n")
	if got != seed {
		t.Errorf("got\n%s\nwant (the seed)\n%s", got, seed)
	}
}

// bpftrace's @__dev_queue_xmit_ns histograms, before and after.
func TestBpftraceHistSeed(t *testing.T) {
	for _, tt := range []struct {
		name string
		seed string
	}{
		{"before", "" +
			"@__dev_queue_xmit_ns:\n" +
			"[256, 512)            21 |                                                    |\n" +
			"[512, 1K)            631 |                                                    |\n" +
			"[1K, 2K)           27328 |@                                                   |\n" +
			"[2K, 4K)          265392 |@@@@@@@@@@@@@@@@                                    |\n" +
			"[4K, 8K)          417543 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n" +
			"[8K, 16K)         826292 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
			"[16K, 32K)        733822 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@      |\n" +
			"[32K, 64K)         19055 |@                                                   |\n" +
			"[64K, 128K)        17240 |@                                                   |\n" +
			"[128K, 256K)       25633 |@                                                   |\n" +
			"[256K, 512K)           4 |                                                    |\n"},
		{"after", "" +
			"@__dev_queue_xmit_ns:\n" +
			"[128, 256)       1539830 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |\n" +
			"[256, 512)       2299558 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n" +
			"[512, 1K)         483936 |@@@@@@@@@@                                          |\n" +
			"[1K, 2K)          265345 |@@@@@@                                              |\n" +
			"[2K, 4K)          145463 |@@@                                                 |\n" +
			"[4K, 8K)           54571 |@                                                   |\n" +
			"[8K, 16K)          10270 |                                                    |\n" +
			"[16K, 32K)          9385 |                                                    |\n" +
			"[32K, 64K)          7749 |                                                    |\n" +
			"[64K, 128K)        26799 |                                                    |\n" +
			"[128K, 256K)        2665 |                                                    |\n" +
			"[256K, 512K)         665 |                                                    |\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h Hist
			lines := strings.Split(strings.TrimSpace(tt.seed), "\n")[1:]
			for _, l := range lines {
				var lo int64
				label := strings.TrimSpace(l[:16])
				for k := 0; k < 40; k++ {
					if histLabel(histIndex(int64(1)<<k)) == label {
						lo = int64(1) << k
						break
					}
				}
				var n uint64
				for _, f := range strings.Fields(l[16:24]) {
					for _, c := range f {
						n = n*10 + uint64(c-'0')
					}
				}
				h.Buckets = append(h.Buckets, Bucket{Lo: lo, Hi: 2 * lo, Count: n})
				h.Count += n
			}
			var b bytes.Buffer
			writeHist(&b, "@__dev_queue_xmit_ns", h)
			got, _, _ := strings.Cut(strings.TrimPrefix(b.String(), "\n"), "\n\n")
			// bpftrace prints "@name: " with a space; the mail lost it.
			want := strings.Replace(tt.seed, "@__dev_queue_xmit_ns:\n", "@__dev_queue_xmit_ns: \n", 1)
			if got+"\n" != want {
				t.Errorf("got\n%s\nwant (the seed)\n%s", got, want)
			}
		})
	}
}

// sysstat's layouts, against rows copied from real `sar -n DEV` and
// `mpstat` output (sysstat's documentation and users' captures).
func TestSarAndMpstatLayouts(t *testing.T) {
	var b bytes.Buffer
	writeSarHeader(&b, "22:36:57")
	writeSarRow(&b, "22:36:58", "azure0", 68, 79, 27.79*1024, 52.79*1024, 0)
	want := "" +
		"22:36:57        IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil\n" +
		"22:36:58       azure0     68.00     79.00     27.79     52.79      0.00      0.00      0.00      0.00\n"
	if b.String() != want {
		t.Errorf("sar got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeMpstatHeader(&b)
	writeMpstatRow(&b, "  all", 49.5, 0, 3.25, 47.25)
	// The per-CPU row is `mpstat -P 511 1 1` on an interrupt CPU, as
	// Eric Dumazet's "net: fix napi_consume_skb() with alien skbs"
	// (Nov 2025) quotes it.
	writeMpstatRow(&b, fmt.Sprintf(" %4d", 511), 0, 0, 98, 2)
	writeMpstatRow(&b, fmt.Sprintf(" %4d", 7), 12.5, 1.25, 30, 56.25)
	want = "" +
		"Average:     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n" +
		"Average:     all    0.00    0.00   49.50    0.00    0.00    3.25    0.00    0.00    0.00   47.25\n" +
		"Average:     511    0.00    0.00    0.00    0.00    0.00   98.00    0.00    0.00    0.00    2.00\n" +
		"Average:       7    0.00    0.00   12.50    0.00    1.25   30.00    0.00    0.00    0.00   56.25\n"
	if b.String() != want {
		t.Errorf("mpstat got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestIRQCPUs: the CPUs the queues' interrupts go to, each once and
// sorted, in the kernel's cpulist format; a queue without one (-1)
// adds none.
func TestIRQCPUs(t *testing.T) {
	for _, tt := range []struct {
		irq  []int
		want string
	}{
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{3, 1, 0, 1, 7}, "0-1,3,7"},
		{[]int{-1, -1}, ""},
		{[]int{448, 449, 450, 12}, "12,448-450"},
	} {
		var qs []Queue
		for i, c := range tt.irq {
			qs = append(qs, Queue{Txq: i, IRQCPU: c})
		}
		if got := units.RangeList(IRQCPUs(qs)); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.irq, got, tt.want)
		}
	}
}

// ethtool_stats.pl's lines in the seed (Toke's cake test on an ice NIC,
// 6.17.7, the rates of `ethtool -S ice0p1` over one second).
func TestEthtoolStatsSeed(t *testing.T) {
	seed := "" +
		"Ethtool(ice0p1  ) stat:     40321218 (     40,321,218) <= tx_bytes /sec\n" +
		"Ethtool(ice0p1  ) stat:     42841424 (     42,841,424) <= tx_bytes.nic /sec\n" +
		"Ethtool(ice0p1  ) stat:      5248505 (      5,248,505) <= tx_queue_0_bytes /sec\n" +
		"Ethtool(ice0p1  ) stat:        82008 (         82,008) <= tx_queue_0_packets /sec\n" +
		"Ethtool(ice0p1  ) stat:      3425984 (      3,425,984) <= tx_queue_1_bytes /sec\n" +
		"Ethtool(ice0p1  ) stat:        53531 (         53,531) <= tx_queue_1_packets /sec\n" +
		"Ethtool(ice0p1  ) stat:            1 (              1) <= tx_restart /sec\n" +
		"Ethtool(ice0p1  ) stat:       630023 (        630,023) <= tx_size_127.nic /sec\n" +
		"Ethtool(ice0p1  ) stat:       630019 (        630,019) <= tx_unicast /sec\n" +
		"Ethtool(ice0p1  ) stat:       630020 (        630,020) <= tx_unicast.nic /sec\n"
	// In the driver's order (ice's get_strings), as the report keeps
	// them; the printer sorts as the script does and leaves out what did
	// not change.
	st := []EthtoolStat{
		{Key: "tx_unicast", PerS: 630019.4}, {Key: "tx_bytes", PerS: 40321218}, {Key: "tx_busy", PerS: 0},
		{Key: "tx_restart", PerS: 1.2}, {Key: "tx_queue_0_packets", PerS: 82008}, {Key: "tx_queue_0_bytes", PerS: 5248505},
		{Key: "tx_queue_1_packets", PerS: 53531}, {Key: "tx_queue_1_bytes", PerS: 3425984}, {Key: "tx_bytes.nic", PerS: 42841424},
		{Key: "tx_unicast.nic", PerS: 630020}, {Key: "tx_size_127.nic", PerS: 630023}, {Key: "tx_size_64.nic", PerS: 0.4},
	}
	var b bytes.Buffer
	writeEthtoolRates(&b, "ice0p1", st)
	if b.String() != seed {
		t.Errorf("got\n%s\nwant (the seed)\n%s", b.String(), seed)
	}
	for in, want := range map[string]string{"1": "1", "999": "999", "1000": "1,000", "40321218": "40,321,218", "-1234": "-1,234"} {
		if got := commify(in); got != want {
			t.Errorf("commify(%s) = %s, want %s", in, got, want)
		}
	}
}

// `ethtool -S` itself: ethtool's "NIC statistics:" and five spaces
// before each line (ethtool.c, do_gstats).
func TestEthtoolLayout(t *testing.T) {
	var b bytes.Buffer
	writeEthtool(&b, "eth0", []EthtoolStat{{Key: "tx_unicast", Value: 7}, {Key: "tx_queue_0_packets", Value: 7}})
	if !strings.Contains(b.String(), "NIC statistics:\n     tx_unicast: 7\n     tx_queue_0_packets: 7\n") {
		t.Errorf("got\n%s", b.String())
	}
}
