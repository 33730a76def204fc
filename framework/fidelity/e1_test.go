package fidelity

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// seedReport is a report carrying the seed's own figures for one run.
func seedReport(profile, placement string, mpps float64, vm vmstatRows, locks []lockRow, hist []report.Bucket) *report.Report {
	r := &report.Report{Profile: profile, WindowNs: int64(sim.Second), TxPps: mpps * 1e6, LockCPUs: "0-7"}
	r.Setup.Placement, r.Setup.CPUs = placement, 480 // the seed's host: 2 x 120 cores x 2
	r.RunnableAvg, r.CPUIdlePct, r.CPUSysPct = mean(vm.r), mean(vm.id), mean(vm.sy)
	r.ContextSwitchesPerS, r.InterruptsPerS = mean(vm.cs), mean(vm.in)
	r.CPUNsPerPacket = r.CPUSysPct / 100 * 480 * 1e9 / r.TxPps
	for _, l := range locks {
		// perf lock's rows are the MCS-queued waits; the model's
		// every-waiter counts are larger.
		r.Locks = append(r.Locks, report.Lock{Name: l.site, Contended: 3 * uint64(l.contended), AvgWaitNs: int64(l.avgNs) / 2,
			TotalWaitNs:  int64(1.5 * l.contended * l.avgNs),
			MCSContended: uint64(l.contended), MCSAvgWaitNs: int64(l.avgNs), MCSTotalWaitNs: int64(l.contended * l.avgNs), MCSMaxWaitNs: l.maxNs})
	}
	r.XmitNs.Buckets = slices.Clone(hist)
	return r
}

// seedRuns are the seed's E1 as four reports. The pinned runs have no
// vmstat in the seed; they get the unpinned ones (rows use unpinned).
func seedRuns() E1Runs {
	return E1Runs{
		BusylockUnpinned: seedReport("6.18", workload.Unpinned, seedBusylockUnpinnedMpps, seedVMStatBefore,
			append(slices.Clip(seedLocksBeforeUnpinned), seedTxActionBeforeUnpinned), seedXmitBefore),
		LlistUnpinned: seedReport("6.19-rc1", workload.Unpinned, seedLlistUnpinnedMpps, seedVMStatAfter,
			append(slices.Clip(seedLocksAfterUnpinned), seedSlabAfterUnpinned, seedTxActionAfterUnpinned), seedXmitAfter),
		BusylockPinned: seedReport("6.18", workload.Spread, seedBusylockPinnedMpps, seedVMStatBefore, seedLocksBeforePinned, seedXmitBefore),
		LlistPinned: seedReport("6.19-rc1", workload.Spread, seedLlistPinnedMpps, seedVMStatAfter,
			append(slices.Clip(seedLocksAfterPinned), seedSlabAfterPinned, seedTxActionAfterPinned), seedXmitAfter),
	}
}

// held is the judged rows' verdicts by name.
func held(rows []Row) map[string]bool {
	m := map[string]bool{}
	for _, r := range rows {
		if r.Judged() {
			m[r.Name] = r.Holds
		}
	}
	return m
}

// The seed against itself: every figure holds.
func TestE1SeedHoldsAgainstItself(t *testing.T) {
	rows := E1(seedRuns())
	if len(rows) < 20 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Judged() && !r.Holds {
			t.Errorf("%s: seed %s, model %s does not hold (%s)", r.Name, r.Seed, r.Model, r.Tolerance)
		}
	}
	// The perf lock rows show the max wait column beside the judged
	// ones, and the callers row the model's table as perf lock prints it.
	for _, r := range rows {
		switch r.Name {
		case "perf lock before, unpinned: dev_hard_start_xmit+0xcd (__dev_xmit_skb (busylock))":
			if want := "442111/s, avg 15.35 us, max 162.47 ms"; r.Seed != want || r.Model != want {
				t.Errorf("%s: seed %q, model %q, want %q", r.Name, r.Seed, r.Model, want)
			}
		case "perf lock before, unpinned: share of the CPUs' time spent waiting":
			// The seed's report has every row of that table but the
			// do_softirq one (561 us of 6.80 s).
			if r.Ratio < 0.999 || r.Ratio > 1 || r.Judged() {
				t.Errorf("%s: model %q, ratio %.4f, want the seed's share, unjudged", r.Name, r.Model, r.Ratio)
			}
		case "@__dev_queue_xmit_ns mode before, pinned":
			// 70% of the seed's calls are longer than a pinned sender's
			// whole packet (240 senders at 41 Mpps: 5.85 us).
			if want := "70% of the seed's calls take 5.85 us or more"; !strings.Contains(r.Why, want) {
				t.Errorf("%s: why %q lacks %q", r.Name, r.Why, want)
			}
		case "perf lock after, unpinned: callers on top":
			if want := "__dev_xmit_skb (root_lock) 2524/s, avg 46.02 us, max 486.61 us"; !strings.Contains(r.Why, want) {
				t.Errorf("%s: why %q lacks %q", r.Name, r.Why, want)
			}
		}
	}
}

// Each tolerance fails the rows it should, and only those.
func TestE1Tolerances(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *E1Runs)
		fail   []string
	}{
		{"llist unpinned 30% faster", func(r *E1Runs) { r.LlistUnpinned.TxPps *= 1.3 },
			[]string{"unpinned: llist / busylock", "llist: pinned / unpinned"}},
		{"llist unpinned 15% faster stays in", func(r *E1Runs) { r.LlistUnpinned.TxPps *= 1.15 }, nil},
		{"r rises after the change", func(r *E1Runs) { r.LlistUnpinned.RunnableAvg = 300 },
			[]string{"vmstat r before -> after"}},
		{"sy falls too little", func(r *E1Runs) { r.LlistUnpinned.CPUSysPct = 40 },
			[]string{"vmstat sy after / before"}},
		{"CPU per packet halves only", func(r *E1Runs) { r.LlistUnpinned.CPUNsPerPacket = r.BusylockUnpinned.CPUNsPerPacket / 2 },
			[]string{"CPU per packet after / before"}},
		{"busylock wait 4x short", func(r *E1Runs) { r.BusylockUnpinned.Locks[0].MCSAvgWaitNs /= 4 },
			[]string{"perf lock before, unpinned: dev_hard_start_xmit+0xcd (__dev_xmit_skb (busylock))"}},
		{"net_tx_action waits 10x long after the change", func(r *E1Runs) {
			for i, l := range r.LlistUnpinned.Locks {
				if l.Name == siteTxAction {
					r.LlistUnpinned.Locks[i].MCSAvgWaitNs *= 10
				}
			}
		}, []string{"perf lock after, unpinned: net_tx_action+0xf8 (net_tx_action (root_lock))"}},
		{"another site on top", func(r *E1Runs) {
			r.LlistPinned.Locks = append([]report.Lock{{Name: "net_tx_action (root_lock)", Contended: 1e6, AvgWaitNs: 1,
				MCSContended: 1e6, MCSAvgWaitNs: 1e3, MCSTotalWaitNs: 1e9}}, r.LlistPinned.Locks...)
		}, []string{"perf lock after, pinned: callers on top"}},
		{"every-waiter counts do not decide", func(r *E1Runs) {
			for i := range r.LlistUnpinned.Locks {
				r.LlistUnpinned.Locks[i].Contended *= 1000
				r.LlistUnpinned.Locks[i].AvgWaitNs /= 1000
			}
		}, nil},
		{"a pending-only site is not on top", func(r *E1Runs) {
			r.LlistPinned.Locks = append([]report.Lock{{Name: "net_tx_action (root_lock)", Contended: 1e6, AvgWaitNs: 1e3, TotalWaitNs: 1e9}}, r.LlistPinned.Locks...)
		}, nil},
		{"histogram mode two buckets up", func(r *E1Runs) {
			for i := range r.BusylockPinned.XmitNs.Buckets {
				r.BusylockPinned.XmitNs.Buckets[i].Lo *= 4
			}
		}, []string{"@__dev_queue_xmit_ns mode before, pinned"}},
		{"histogram mode one bucket up", func(r *E1Runs) {
			for i := range r.LlistPinned.XmitNs.Buckets {
				r.LlistPinned.XmitNs.Buckets[i].Lo *= 2
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := seedRuns()
			tt.change(&runs)
			got := held(E1(runs))
			want := map[string]bool{}
			for _, f := range tt.fail {
				if _, ok := got[f]; !ok {
					t.Fatalf("no row %q", f)
				}
				want[f] = true
			}
			for name, ok := range got {
				if ok == want[name] {
					t.Errorf("%s: holds %v, want %v", name, ok, !want[name])
				}
			}
		})
	}
}

func TestFindE1(t *testing.T) {
	s := seedRuns()
	other := &report.Report{Profile: "net-next"}
	got, err := FindE1([]*report.Report{other, s.LlistPinned, nil, s.BusylockUnpinned, s.BusylockPinned, s.LlistUnpinned})
	if err != nil {
		t.Fatal(err)
	}
	if got.BusylockUnpinned != s.BusylockUnpinned || got.LlistUnpinned != s.LlistUnpinned ||
		got.BusylockPinned != s.BusylockPinned || got.LlistPinned != s.LlistPinned || len(got.More) != 0 {
		t.Errorf("FindE1 picked %+v", got)
	}
	_, err = FindE1([]*report.Report{s.LlistPinned, s.BusylockUnpinned})
	if err == nil || !strings.Contains(err.Error(), "6.19-rc1 unpinned, 6.18 pinned") {
		t.Errorf("missing variants: %v", err)
	}
}

// seedCopy is the seed's four runs as the reports of run seed n.
func seedCopy(n uint64) E1Runs {
	r := seedRuns()
	for _, rep := range []*report.Report{r.BusylockUnpinned, r.LlistUnpinned, r.BusylockPinned, r.LlistPinned} {
		rep.Seed = n
	}
	return r
}

// Several seeds: the lowest seed's runs first, the rest in More; the
// rate rows judge the seeds' mean rates and list each seed's ratio; a
// seed short of a variant is named.
func TestE1Seeds(t *testing.T) {
	s1, s2 := seedCopy(1), seedCopy(2)
	// Alone, either seed's unpinned llist misses the ±20%; their mean
	// (29 Mpps) is the seed's.
	s1.LlistUnpinned.TxPps *= 1.3
	s2.LlistUnpinned.TxPps *= 0.7
	reps := []*report.Report{s2.LlistPinned, s2.BusylockUnpinned, s2.BusylockPinned, s2.LlistUnpinned,
		s1.LlistPinned, s1.BusylockUnpinned, s1.BusylockPinned, s1.LlistUnpinned}
	got, err := FindE1(reps)
	if err != nil {
		t.Fatal(err)
	}
	if got.LlistUnpinned != s1.LlistUnpinned || len(got.More) != 1 || got.More[0].LlistUnpinned != s2.LlistUnpinned {
		t.Fatalf("FindE1: first seed %d, %d more", got.LlistUnpinned.Seed, len(got.More))
	}
	rows := E1(got)
	row := rows[0]
	if row.Name != "unpinned: llist / busylock" || !row.Holds || !strings.Contains(row.Model, "2 seeds: 2.36x 1.27x") {
		t.Errorf("%s: %s, holds %v: want the mean judged and each seed listed", row.Name, row.Model, row.Holds)
	}
	if one := E1(s1); held(one)["unpinned: llist / busylock"] {
		t.Errorf("seed 1 alone holds: the case does not test the mean")
	}
	if _, err := FindE1(reps[1:]); err == nil || !strings.Contains(err.Error(), "6.19-rc1 pinned (") || !strings.HasSuffix(err.Error(), "(seed 2)") {
		t.Errorf("seed 2 without its pinned llist run: %v", err)
	}
}

// E1's rows from real model runs, scaled down to run in CI: 16 CPUs,
// 8 senders on 4 queues of mq fq, 4 ms. The rows are computed from the
// reports (not from the seed), and the table prints.
func TestE1ScaledRun(t *testing.T) {
	spec := func(profile, placement string) run.Spec {
		s := run.Default()
		s.Profile = profile
		s.Sockets, s.Cores, s.Threads = 2, 4, 2
		s.Queues, s.Qdisc = 4, "mq fq"
		s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 120, Placement: placement}
		s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
		s.LockCPUs = "0-3"
		return s
	}
	var reps []*report.Report
	for _, pl := range []string{workload.Unpinned, workload.Spread} {
		for _, p := range []string{"6.18", "6.19-rc1"} {
			rep, err := run.Run(spec(p, pl), nil)
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, rep)
		}
	}
	runs, err := FindE1(reps)
	if err != nil {
		t.Fatal(err)
	}
	rows := E1(runs)
	first := rows[0]
	want := fmt.Sprintf("%.2fx", runs.LlistUnpinned.TxPps/runs.BusylockUnpinned.TxPps)
	if first.Name != "unpinned: llist / busylock" || !strings.HasPrefix(first.Model, want) {
		t.Errorf("first row %+v, want the model's ratio %s", first, want)
	}
	var b bytes.Buffer
	if err := WriteRows(&b, rows); err != nil {
		t.Fatal(err)
	}
	judged := 0
	for _, r := range rows {
		if r.Judged() {
			judged++
		}
	}
	if !strings.Contains(b.String(), fmt.Sprintf("of %d figures hold", judged)) {
		t.Errorf("table:\n%s", b.String())
	}
	t.Logf("\n%s", b.String())
}

// The why line sets BQL's limit, in packets of the queues' mean size,
// beside the ring: the median over the queues that sent, none without.
func TestBQLWhy(t *testing.T) {
	q := func(pkts, bytes uint64, limit uint32) report.Queue {
		return report.Queue{TxPackets: pkts, TxBytes: bytes, BQLLimit: limit}
	}
	for _, tc := range []struct {
		name   string
		queues []report.Queue
		want   string
	}{
		{"odd", []report.Queue{q(10, 1620, 16200), q(10, 1620, 64800), q(10, 1620, 32400), q(0, 0, 99999)}, ", BQL limit 200 packets"},
		{"even", []report.Queue{q(10, 1620, 16200), q(10, 1620, 32400)}, ", BQL limit 150 packets"},
		{"mean size", []report.Queue{q(4, 1000, 5000)}, ", BQL limit 20 packets"},
		{"none sent", []report.Queue{q(0, 0, 5000)}, ""},
		{"no BQL", []report.Queue{q(10, 1620, 0)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report.Report{Queues: tc.queues}
			r.Setup.RingSize = 256
			got := bqlWhy(r)
			if tc.want == "" {
				if got != "" {
					t.Errorf("got %q, want nothing", got)
				}
				return
			}
			if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, "on a 256-descriptor ring") {
				t.Errorf("got %q, want %q... on a 256-descriptor ring", got, tc.want)
			}
		})
	}
}

// The why line says how the sockets spread over the queues: the queues
// that carry any, the busiest and the least busy of those.
func TestSocketsWhy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sockets []int
		want    string
	}{
		{"crowded", []int{52, 0, 1, 42, 0, 3}, ", 4 queues carry the 98 sockets (52 on the busiest, 1 on the least busy)"},
		{"even", []int{8, 8}, ", 2 queues carry the 16 sockets (8 on the busiest, 8 on the least busy)"},
		{"no sockets", []int{0, 0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report.Report{}
			for _, n := range tc.sockets {
				r.Queues = append(r.Queues, report.Queue{Sockets: n})
			}
			if got := socketsWhy(r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The why line says where the senders ran: how many on each socket and
// how many cores run two or more of them (their hyperthreads share it).
func TestPlacementWhy(t *testing.T) {
	cpu := func(socket, core, tasks int) report.CPU { return report.CPU{Socket: socket, Core: core, Tasks: tasks} }
	for _, tc := range []struct {
		name string
		cpus []report.CPU
		want string
	}{
		{"crowded socket", []report.CPU{cpu(0, 0, 1), cpu(0, 0, 1), cpu(0, 1, 1), cpu(1, 0, 1)}, ", the senders by socket: 3 / 1, 1 cores run two or more"},
		{"two on one thread", []report.CPU{cpu(0, 3, 2)}, ", the senders by socket: 2 / 0, 1 cores run two or more"},
		{"spread", []report.CPU{cpu(0, 0, 1), cpu(1, 0, 1)}, ", the senders by socket: 1 / 1, 0 cores run two or more"},
		{"busy CPUs only", []report.CPU{{BusyPct: 50}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report.Report{CPUs: tc.cpus}
			r.Setup.Sockets = 2
			if got := placementWhy(r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A run's report puts each sender thread on the CPU it was pinned to,
// with that CPU's socket and core (kernel threads left out:
// TestThreadsByCPULeavesKthreadsOut).
func TestReportCountsTasksByCPU(t *testing.T) {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 2, 2, 2
	s.Queues, s.Qdisc = 2, "mq fq"
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 3, PacketSize: 120, Placement: "1,2,6"}
	s.Duration, s.Warmup = sim.Millisecond, 0
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]report.CPU{}
	for _, c := range rep.CPUs {
		if c.Tasks > 0 {
			got[c.CPU] = c
		}
	}
	// CPU ids: thread x 4 + socket x 2 + core.
	want := map[int]report.CPU{1: {CPU: 1, Socket: 0, Core: 1, Tasks: 1}, 2: {CPU: 2, Socket: 1, Core: 0, Tasks: 1}, 6: {CPU: 6, Socket: 1, Core: 0, Tasks: 1}}
	if len(got) != len(want) {
		t.Fatalf("CPUs with tasks %v, want %v", got, want)
	}
	for id, w := range want {
		g := got[id]
		// mpstat -P's columns add up to 100, the first three to busy_pct.
		if sum := g.SysPct + g.IrqPct + g.SoftPct + g.IdlePct; math.Abs(sum-100) > 1e-6 || math.Abs(g.SysPct+g.IrqPct+g.SoftPct-min(g.BusyPct, 100)) > 1e-6 {
			t.Errorf("CPU %d: %%sys %.2f + %%irq %.2f + %%soft %.2f + %%idle %.2f (busy %.2f)", id, g.SysPct, g.IrqPct, g.SoftPct, g.IdlePct, g.BusyPct)
		}
		g.BusyPct, g.SysPct, g.IrqPct, g.SoftPct, g.IdlePct = 0, 0, 0, 0, 0
		if g != w {
			t.Errorf("CPU %d: %+v, want %+v", id, g, w)
		}
	}
}

// A run's report counts each udp_stream socket on the queue it cached.
func TestReportCountsSocketsByQueue(t *testing.T) {
	s := run.Default()
	s.Sockets, s.Cores, s.Threads = 1, 4, 1
	s.Queues, s.Qdisc = 2, "mq fq"
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 4, PacketSize: 120, Placement: workload.Spread}
	s.Duration, s.Warmup = sim.Millisecond, 0
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, q := range rep.Queues {
		total += q.Sockets
		if q.Sockets > 0 && q.TxPackets == 0 {
			t.Errorf("queue %d: %d sockets cached it but it sent nothing", q.Txq, q.Sockets)
		}
	}
	if total != 4 {
		t.Errorf("%d sockets counted over the queues, want the 4 senders'", total)
	}
}

// TestWithoutDrops: the packets dropped in the stack cost their share
// of what every offer passes through, and their frees; taken out, the
// CPU per packet is what the sent ones cost.
func TestWithoutDrops(t *testing.T) {
	r := &report.Report{Window: report.Window{OfferedPackets: 300, TxPackets: 100, CPUBusyNs: 100 * 1000,
		Drops: map[string]uint64{"FQ_FLOW_LIMIT": 200}}}
	r.CPUProfile = []report.ProfileRow{
		{Activity: workload.ActSend, WorkNs: 300 * 100},           // 100 ns an offer
		{Activity: netdev.ActPusher, WorkNs: 0, SpinNs: 300 * 20}, // 20 an offer
		{Activity: netdev.ActFree, WorkNs: 200 * 50},              // 50 a drop
		{Activity: netdev.ActDequeue, WorkNs: 100 * 300},          // the sent ones' only
	}
	// 200 drops x 120 ns + 200 x 50 ns = 34000 of the 100000 ns.
	if got, d := withoutDrops(r); got != 660 || d != 2 {
		t.Errorf("without drops %v ns a packet, %v drops a packet; want 660 and 2", got, d)
	}
	if why := dropCostWhy(r, r); !strings.Contains(why, "660 -> 660 ns, 1.00x") {
		t.Errorf("why %q", why)
	}
	if why := dropCostWhy(&report.Report{}, r); why != "" {
		t.Errorf("without a profile: %q", why)
	}
}

// A rate still moving over the window is named in the why, the first
// and last intervals' rates; a steady one is not.
func TestTrendWhy(t *testing.T) {
	series := func(pps ...float64) *report.Report {
		r := &report.Report{}
		for _, p := range pps {
			r.Series = append(r.Series, report.Interval{TxPps: p})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *report.Report
		want string
	}{
		{"climbing", series(52e6, 54e6, 57e6, 60e6, 62e6), "52.0 Mpps in its first interval, 62.0 in its last"},
		{"falling", series(40e6, 35e6, 30e6, 20e6), "40.0 Mpps in its first interval, 20.0 in its last"},
		{"steady within 10%", series(30e6, 33e6, 28e6, 31e6), ""},
		{"too few intervals", series(10e6, 30e6), ""},
	} {
		got := trendWhy(tc.r)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The histograms' modes and long calls as the seed prints them, and the
// tail row's sides: the share of calls of 32 us and more, their fullest
// bucket, and how long a quota's run lasts at each side's rate.
func TestE1XmitTail(t *testing.T) {
	tests := []struct {
		name     string
		hist     []report.Bucket
		mode     int64
		share    float64 // percent
		top      int64
		shareTol float64
	}{
		{"seed before", seedXmitBefore, 8192, 2.65, 128 << 10, 0.01},
		{"seed after", seedXmitAfter, 256, 0.78, 64 << 10, 0.01},
		{"no tail", log2Buckets(256, 5, 9, 1), 512, 0, 0, 0},
		{"empty", nil, 0, 0, 0, 0},
		{"the tail starts at 32K", log2Buckets(16<<10, 1, 1), 16 << 10, 50, 32 << 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m := histMode(tt.hist); m.Lo != tt.mode {
				t.Errorf("mode %d, want %d", m.Lo, tt.mode)
			}
			share, top := histTail(tt.hist)
			if math.Abs(100*share-tt.share) > tt.shareTol || top.Lo != tt.top {
				t.Errorf("tail %.3f%% most in %d, want %.2f%% in %d", 100*share, top.Lo, tt.share, tt.top)
			}
		})
	}
	for i, b := range seedXmitBefore[1:] {
		if b.Lo != seedXmitBefore[i].Hi || b.Hi != 2*b.Lo {
			t.Fatalf("bucket %d [%d, %d) does not follow [%d, %d)", i+1, b.Lo, b.Hi, seedXmitBefore[i].Lo, seedXmitBefore[i].Hi)
		}
	}

	rep := seedRuns().BusylockPinned
	rep.Config = map[string]string{"dev_tx_weight": "64"}
	rep.Setup.Queues, rep.TxPackets = 30, 6500
	rep.NetifSchedule = []report.SchedCaller{{Caller: "quota", Calls: 100}, {Caller: "bql_wake", Calls: 300}}
	row := tailRow("tail", seedXmitBefore, seedBusylockPinnedMpps, rep)
	if row.Judged() {
		t.Errorf("the tail row is judged (%q): the seed gives no quota", row.Tolerance)
	}
	// 41 Mpps over 30 queues: 1.37 Mpps a queue, 64 packets in 46.8 us.
	if want := "2.65% of calls, most in [128K, 256K); a run of 64 packets at 1.37 Mpps a queue: 46.8 us"; row.Seed != want {
		t.Errorf("seed %q, want %q", row.Seed, want)
	}
	if want := "once every 65 packets sent (25% of __netif_schedule's calls)"; !strings.Contains(row.Why, want) {
		t.Errorf("why %q lacks %q", row.Why, want)
	}
	rep.NetifSchedule = rep.NetifSchedule[1:]
	rep.Config = nil // the profile's quota, 6.18's 64
	row = tailRow("tail", seedXmitBefore, seedBusylockPinnedMpps, rep)
	if want := "never stopped at its quota (dev_tx_weight 64) in 6500 packets sent"; !strings.Contains(row.Why, want) {
		t.Errorf("why %q lacks %q", row.Why, want)
	}
}

// The perf lock and histogram rows pool the seeds' windows: counts and
// waits add by call site, the longest wait stays, a site only one seed
// has is kept, buckets add by their bounds, the windows' lengths add;
// one seed is its own report.
func TestE1Pooled(t *testing.T) {
	one := seedRuns()
	if got := pooled([]E1Runs{one}, func(x E1Runs) *report.Report { return x.LlistPinned }); got != one.LlistPinned {
		t.Fatalf("one seed: pooled %p, want the seed's own report %p", got, one.LlistPinned)
	}
	a, b := seedRuns(), seedRuns()
	a.LlistPinned.Locks = []report.Lock{{Name: siteRootEnq, Contended: 10, TotalWaitNs: 1000, MCSContended: 4, MCSTotalWaitNs: 800, MCSMaxWaitNs: 300}}
	b.LlistPinned.Locks = []report.Lock{
		{Name: siteRootEnq, Contended: 30, TotalWaitNs: 5000, MCSContended: 6, MCSTotalWaitNs: 1200, MCSMaxWaitNs: 500},
		{Name: "net_tx_action (root_lock)", Contended: 2, TotalWaitNs: 90, MCSContended: 1, MCSTotalWaitNs: 90, MCSMaxWaitNs: 90},
	}
	a.LlistPinned.XmitNs.Buckets = log2Buckets(256, 1, 2)
	b.LlistPinned.XmitNs.Buckets = log2Buckets(128, 4, 8, 16)
	p := pooled([]E1Runs{a, b}, func(x E1Runs) *report.Report { return x.LlistPinned })
	if p.WindowNs != 2*int64(sim.Second) {
		t.Errorf("window %d, want two seconds", p.WindowNs)
	}
	want := []report.Lock{
		{Name: siteRootEnq, Contended: 40, TotalWaitNs: 6000, AvgWaitNs: 150, MCSContended: 10, MCSTotalWaitNs: 2000, MCSMaxWaitNs: 500, MCSAvgWaitNs: 200},
		{Name: "net_tx_action (root_lock)", Contended: 2, TotalWaitNs: 90, AvgWaitNs: 45, MCSContended: 1, MCSTotalWaitNs: 90, MCSMaxWaitNs: 90, MCSAvgWaitNs: 90},
	}
	if !slices.Equal(p.Locks, want) {
		t.Errorf("locks\n%+v\nwant\n%+v", p.Locks, want)
	}
	if wantB := log2Buckets(128, 4, 9, 18); !slices.Equal(p.XmitNs.Buckets, wantB) {
		t.Errorf("buckets %+v, want %+v", p.XmitNs.Buckets, wantB)
	}
	if len(a.LlistPinned.Locks) != 1 || a.LlistPinned.Locks[0].Contended != 10 || a.LlistPinned.XmitNs.Buckets[0].Count != 1 {
		t.Errorf("pooling changed the first seed's report: %+v %+v", a.LlistPinned.Locks, a.LlistPinned.XmitNs.Buckets)
	}
}

// The share of time spent waiting is over the perf lock CPUs, or over
// every CPU for a table recorded on all of them.
func TestLockShareRowCPUs(t *testing.T) {
	rep := &report.Report{WindowNs: 1e9, LockCPUs: "0-3", Setup: report.Setup{CPUs: 16},
		Locks: []report.Lock{{Name: siteRootEnq, MCSContended: 1, MCSTotalWaitNs: 2e9}}}
	if r := lockShareRow("t", 4e9, rep); !strings.HasPrefix(r.Model, "50.0% ") || r.Judged() {
		t.Errorf("2 s of waiting on CPUs 0-3 in 1 s: %+v, want 50.0%%, unjudged", r)
	}
	rep.LockCPUs = ""
	if r := lockShareRow("t", 4e9, rep); !strings.HasPrefix(r.Model, "12.5% ") {
		t.Errorf("2 s of waiting on all 16 CPUs in 1 s: %+v, want 12.5%%", r)
	}
}
