package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (run go test -update if intended)\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// sampleReport is shaped like a real 64-queue ixgbe run with fq_codel
// under mq and heavy root-lock contention; the lock row is the one from
// the kernel thread this simulator was built to reproduce.
func sampleReport() *Report {
	return &Report{
		Name:    "baseline",
		Profile: "ixgbe-udp-flood",
		Seed:    42,
		Setup: Setup{
			Sockets: 2, CoresPerSocket: 16, ThreadsPerCore: 2, CPUs: 64,
			Driver: "ixgbe", Queues: 64, RateBps: 10_000_000_000, RingSize: 512,
			Qdisc: "mq+fq_codel", Workload: "udp_flood", Senders: 32,
			Placement: "spread", PacketSize: 18, Flows: 1024,
		},
		Config:     map[string]string{"bql": "on", "xmit_more": "on"},
		Costs:      map[string]int64{"qdisc_enqueue": 60, "lock_acquire": 20},
		DurationNs: 300_000_000,
		WarmupNs:   50_000_000,
		WindowNs:   250_000_000,

		OfferedPackets:  49_860_712,
		TxPackets:       13_658_545,
		TxBytes:         873_146_880 + 8_335_962,
		DroppedPackets:  36_165_260,
		InFlightPackets: 36_907,
		Drops:           map[string]uint64{"QDISC_DROP": 36_165_000, "CAKE_FLOOD": 260},
		InFlightWhere:   map[string]int64{"qdisc": 36_000, "ring": 907},
		AccountingOK:    true,
		Window: Window{
			OfferedPackets: 41_550_593, TxPackets: 11_382_121, TxBytes: 728_455_744,
			Drops: map[string]uint64{"QDISC_DROP": 30_137_500}, CPUBusyNs: 14_000_000_000,
		},
		TxPps:          29_012_345.6,
		TxBps:          14_853_320_000,
		CPUNsPerPacket: 1229.9,
		CPUBusyPct:     87.5,
		// The seed's vmstat before the llist: r 244, in 487745, cs 14718, sy 52, id 48.
		CPUSysPct: 52, CPUIrqPct: 0.5, CPUSoftPct: 3.25, CPUIdlePct: 48, RunnableAvg: 244, ContextSwitchesPerS: 14718, InterruptsPerS: 487745,
		LockCPUs: "0-7",
		Counters: map[string]uint64{"xmit_more": 9_000_000, "napi_poll": 120_000, "bql_stop": 5_212},
		NetifSchedule: []SchedCaller{
			{Caller: "bql_wake", Calls: 311, Skipped: 200, AlreadySched: 11, Raised: 100, TxActionTakes: 90, TxActionWaitNs: 2_541_600},
			{Caller: "quota", Calls: 5_000, Raised: 5_000},
		},
		NetTxAction: TxAction{Qdiscs: 5_100, FoundRunning: 4_000, Empty: 100, Packets: 64_000},
		Locks: []Lock{
			{Name: "dev_hard_start_xmit+0xcd", Acquired: 13_700_000, Contended: 442_111,
				TotalWaitNs: 6_790_000_000, MaxWaitNs: 162_470_000, AvgWaitNs: 15_350, HoldNs: 1_200_000_000, MCSContended: 442_111, MCSTotalWaitNs: 6_790_000_000, MCSMaxWaitNs: 162_470_000, MCSAvgWaitNs: 15_350},
			{Name: "__dev_queue_xmit+0x8ab", Acquired: 13_700_000, Contended: 3_001,
				TotalWaitNs: 1_682_000, MaxWaitNs: 9_570, AvgWaitNs: 560, HoldNs: 300_000_000, MCSContended: 3_001, MCSTotalWaitNs: 1_682_000, MCSMaxWaitNs: 9_570, MCSAvgWaitNs: 560},
			{Name: "sch_direct_xmit+0x4a", Acquired: 120_000, Contended: 0},
		},
		Ethtool: []EthtoolStat{{Key: "tx_unicast", Value: 13658668, PerS: 29012345.6}, {Key: "tx_busy", Value: 0},
			{Key: "tx_restart", Value: 311, PerS: 1244}, {Key: "tx_queue_0_packets", Value: 214000, PerS: 856000},
			{Key: "tx_queue_3_packets", Value: 123, PerS: 492}},
		Queues: []Queue{
			{Txq: 0, TxPackets: 214_000, TxBytes: 13_696_000, Stops: 311, Wakes: 311, Requeues: 2,
				BQLLimit: 30_280, Inflight: 15_140,
				Ethtool: []KV{{"restart_queue", 311}, {"tx_busy", 0}}},
			{Txq: 3, TxPackets: 123, TxBytes: 456, Stops: 0, Wakes: 0, Requeues: 0,
				BQLLimit: 1_514, Inflight: 0, IRQCPU: 7},
		},
		Qdisc: []Qdisc{
			{Handle: "8001:", Parent: "root", Kind: "mq",
				SentPackets: 13_658_545, SentBytes: 9_633_155_852, Dropped: 36_165_260, Requeues: 42,
				BacklogPackets: 10, BacklogBytes: 15_140},
			{Handle: "0:", Parent: "8001:1", Kind: "fq_codel",
				Options:     "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64",
				SentPackets: 214_000, SentBytes: 13_696_000, Dropped: 565_000, Requeues: 2,
				BacklogPackets: 1_024, BacklogBytes: 1_048_576, DeferMax: 37,
				XStats: []XStat{{"maxpacket", "1514", ""}, {"drop_overlimit", "0", ""}, {"new_flow_count", "12", ""}, {"ecn_mark", "0", ""}}},
			{Handle: "0:", Parent: "8001:2", Kind: "fq_codel",
				Options:     "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64",
				SentPackets: 209_871, SentBytes: 13_431_744, Dropped: 562_113, Requeues: 0,
				BacklogPackets: 64, BacklogBytes: 65_536,
				XStats: []XStat{{"maxpacket", "64", ""}, {"drop_overlimit", "1", ""}, {"new_flow_count", "9", ""}, {"ecn_mark", "0", ""}}},
		},
		XmitNs: Hist{
			Count:  9_437,
			MeanNs: 4_812.7,
			// [64K, 128K) is absent on purpose: gaps print as 0.
			Buckets: []Bucket{
				{Lo: 256, Hi: 512, Count: 21},
				{Lo: 512, Hi: 1024, Count: 1_930},
				{Lo: 1024, Hi: 2048, Count: 4_210},
				{Lo: 2048, Hi: 4096, Count: 2_100},
				{Lo: 4096, Hi: 8192, Count: 720},
				{Lo: 8192, Hi: 16384, Count: 301},
				{Lo: 16384, Hi: 32768, Count: 97},
				{Lo: 32768, Hi: 65536, Count: 50},
				{Lo: 131072, Hi: 262144, Count: 6},
				{Lo: 262144, Hi: 524288, Count: 2},
			},
		},
		Series: []Interval{
			{StartNs: 50_000_000, EndNs: 100_000_000, TxPackets: 1_450_617, TxPps: 29_012_340, Offered: 5_300_000, Drops: 3_811_000, Backlog: 1_100,
				VMStat: VMStat{SysPct: 52, SoftPct: 3.1, IdlePct: 48, Runnable: 244, CSPerS: 14718, InPerS: 487745}},
			{StartNs: 100_000_000, EndNs: 150_000_000, TxPackets: 1_450_600, TxPps: 29_012_000, Offered: 5_300_000, Drops: 3_849_400, Backlog: 1_098,
				VMStat: VMStat{SysPct: 52, SoftPct: 3.3, IdlePct: 48, Runnable: 244, CSPerS: 46033, InPerS: 503067}},
			{StartNs: 150_000_000, EndNs: 200_000_000, TxPackets: 1_451_000, TxPps: 29_020_000, Offered: 5_300_000, Drops: 3_849_000, Backlog: 1_088,
				VMStat: VMStat{SysPct: 52, SoftPct: 3.2, IdlePct: 48, Runnable: 244, CSPerS: 12107, InPerS: 494807}},
		},
		CPUs: []CPU{{CPU: 0, BusyPct: 99.1, SysPct: 61.4, IrqPct: 0.7, SoftPct: 37, IdlePct: 0.9},
			{CPU: 1, BusyPct: 98.7, SysPct: 98.7, IdlePct: 1.3}},
		Events:    123_456_789,
		SimWallNs: 4_200_000_000,
	}
}

// lockedReport is the same machine with a variant that relieves the root
// lock, as a --compare run would produce.
func lockedReport() *Report {
	r := sampleReport()
	r.Name = "defer"
	r.TxPps = 52_512_000
	r.TxBps = 26_886_144_000
	r.CPUNsPerPacket = 679.5
	r.CPUBusyPct = 91.2
	r.CPUSysPct, r.CPUSoftPct, r.CPUIdlePct, r.RunnableAvg, r.ContextSwitchesPerS, r.InterruptsPerS = 23, 2.5, 76, 85.4, 280199, 425713
	r.TxPackets = 24_800_000
	r.DroppedPackets = 25_023_805
	r.InFlightPackets = 36_907
	r.Drops = map[string]uint64{"QDISC_DROP": 25_000_000, "TC_EGRESS": 23_805}
	r.Locks = []Lock{
		{Name: "__dev_queue_xmit+0x8ab", Contended: 91_000, TotalWaitNs: 25_090_000, MaxWaitNs: 560_630, AvgWaitNs: 275, MCSContended: 91_000, MCSTotalWaitNs: 25_090_000, MCSMaxWaitNs: 560_630, MCSAvgWaitNs: 275},
	}
	r.Series = r.Series[1:]
	for i := range r.Series {
		r.Series[i].TxPps *= 1.81
	}
	return r
}
