package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// histBarWidth is bpftrace's bar width for hist().
const histBarWidth = 52

// WriteText renders r for people. The tool-shaped sections reproduce the
// layouts of perf lock contention, bpftrace, tc and ethtool so numbers can
// be compared by eye with a real machine.
func WriteText(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("report: nil report")
	}
	var b bytes.Buffer
	writeHeader(&b, r)
	writeSummary(&b, r)
	writeTCP(&b, r)
	writeSortedMap(&b, "Drops by reason", r.Drops)
	writeSortedMap(&b, "Counters", r.Counters)
	writeNetifSchedule(&b, r)
	writeVMStat(&b, r)
	writeLockHeader(&b, r)
	writeLocks(&b, r.Locks)
	writeHist(&b, "@__dev_queue_xmit_ns", r.XmitNs)
	writeDeferBatch(&b, r)
	writeTC(&b, r)
	writeEthtools(&b, r)
	writeQueues(&b, r.Queues)
	writeDevices(&b, r.Devices)
	writeLinks(&b, r.Links)
	writeRx(&b, r.Rx)
	writeSoftnet(&b, r.Softnet)
	writeSlabs(&b, r.Slabs)
	writeSar(&b, r)
	writeSeries(&b, r.Series)
	for _, o := range r.PluginOverrides {
		fmt.Fprintf(&b, "\nbuilt-in replaced by a plugin: %s\n", o)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s\n", r.Error)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeHeader(b *bytes.Buffer, r *Report) {
	if r.Name != "" {
		fmt.Fprintf(b, "variant:  %s\n", r.Name)
	}
	fmt.Fprintf(b, "profile:  %s\n", r.Profile)
	fmt.Fprintf(b, "seed:     %d\n", r.Seed)
	s := r.Setup
	if s.Workload == "forward" {
		fmt.Fprintf(b, "setup:    %dx%dx%d CPUs (%d), driver %s, %d queues, %s Gbit, qdisc %s, workload forward: %s Mpps %s into %d RX queues (port %s), %d B packets, %d flows\n",
			s.Sockets, s.CoresPerSocket, s.ThreadsPerCore, s.CPUs, s.Driver, s.Queues,
			strconv.FormatFloat(float64(s.RateBps)/1e9, 'g', -1, 64),
			s.Qdisc, mpps(s.OfferedPps), s.Arrival, s.RxQueues, s.RxPort, s.PacketSize, s.Flows)
	} else {
		fmt.Fprintf(b, "setup:    %dx%dx%d CPUs (%d), driver %s, %d queues, %s Gbit, qdisc %s, workload %s, %d senders, %d B packets, %d flows\n",
			s.Sockets, s.CoresPerSocket, s.ThreadsPerCore, s.CPUs, s.Driver, s.Queues,
			strconv.FormatFloat(float64(s.RateBps)/1e9, 'g', -1, 64),
			s.Qdisc, s.Workload, s.Senders, s.PacketSize, s.Flows)
	}
	for _, g := range s.Also {
		fmt.Fprintf(b, "  and:    workload %s, %d senders (%s), %d B packets, %d flows", g.Workload, g.Senders, g.Placement, g.PacketSize, g.Flows)
		if g.OfferedPps > 0 {
			fmt.Fprintf(b, ", %s Mpps offered", mpps(g.OfferedPps))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "duration: %s ms (warmup %s ms)\n", ms(r.DurationNs), ms(r.WarmupNs))
}

func writeSummary(b *bytes.Buffer, r *Report) {
	b.WriteString("\nSummary\n")
	rows := [][2]string{
		{"tx", mpps(r.TxPps) + " Mpps"},
		{"tx rate", gbps(r.TxBps) + " Gbit/s"},
		{"cpu busy", fmt.Sprintf("%.1f %%", r.CPUBusyPct)},
		{"cpu/pkt", fmt.Sprintf("%.1f ns", r.CPUNsPerPacket)},
		{"offered", strconv.FormatUint(r.OfferedPackets, 10)},
		{"tx pkts", strconv.FormatUint(r.TxPackets, 10)},
		{"dropped", strconv.FormatUint(r.DroppedPackets, 10)},
		{"in flight", strconv.FormatInt(r.InFlightPackets, 10)},
	}
	for _, row := range rows {
		fmt.Fprintf(b, "  %-10s %s\n", row[0]+":", row[1])
	}
	fmt.Fprintf(b, "  accounting: offered %d = tx %d + dropped %d + in flight %d  %s\n",
		r.OfferedPackets, r.TxPackets, r.DroppedPackets, r.InFlightPackets, accountingWord(r))
}

// accountingWord is the verdict the summary and the comparison print.
func accountingWord(r *Report) string {
	if r.AccountingOK {
		return "OK"
	}
	if r.AccountingError != "" {
		return "FAILED: " + r.AccountingError
	}
	return "FAILED"
}

func writeSortedMap(b *bytes.Buffer, title string, m map[string]uint64) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	width := 0
	for k := range m {
		keys = append(keys, k)
		width = max(width, len(k))
	}
	sort.Strings(keys)
	fmt.Fprintf(b, "\n%s\n", title)
	for _, k := range keys {
		fmt.Fprintf(b, "  %-*s  %d\n", width, k, m[k])
	}
}

// vmstatRow is one row of vmstat's default layout: every column, the
// ones the model has no notion of (memory, swap, io, wa, st) at 0.
type vmstatRow struct {
	R, B                    uint64
	Swpd, Free, Buff, Cache uint64
	Si, So, Bi, Bo, In, Cs  uint64
	Us, Sy, Id, Wa, St      uint64
}

// vmstatHeader is procps-ng's new_header without -w or -t.
const vmstatHeader = "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n" +
	" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"

// write prints the row with procps-ng's format (new_format): a value
// wider than its column pushes the rest right, as vmstat's does.
func (v vmstatRow) write(b *bytes.Buffer) {
	fmt.Fprintf(b, "%2d %2d %6d %6d %6d %6d %4d %4d %5d %5d %4d %4d %2d %2d %2d %2d %2d\n",
		v.R, v.B, v.Swpd, v.Free, v.Buff, v.Cache, v.Si, v.So, v.Bi, v.Bo, v.In, v.Cs, v.Us, v.Sy, v.Id, v.Wa, v.St)
}

// round is procps' and sysstat's rounding of a non-negative rate.
func round(x float64) uint64 {
	if x <= 0 {
		return 0
	}
	return uint64(math.Floor(x + 0.5))
}

func vmstatOf(v VMStat) vmstatRow {
	return vmstatRow{R: round(v.Runnable), In: round(v.InPerS), Cs: round(v.CSPerS), Sy: round(v.SysPct), Id: round(v.IdlePct)}
}

// writeVMStat prints `vmstat 1`'s layout, one row per interval of the
// series, then the window's row, then `mpstat`'s Average line for the
// window. Memory, swap and io are not modelled (0), nor user time (us
// 0: a sender's user-space loop is folded into its syscall cost), so
// sy + id = 100; mpstat's %sys holds the hard interrupt time too (the
// report keeps no separate %irq).
func writeVMStat(b *bytes.Buffer, r *Report) {
	if len(r.Series) == 0 && r.WindowNs == 0 {
		return
	}
	b.WriteString("\nvmstat (vmstat 1 layout: one row per interval of the series; memory, swap and io not modelled)\n")
	b.WriteString(vmstatHeader)
	for _, iv := range r.Series {
		vmstatOf(iv.VMStat).write(b)
	}
	b.WriteString("\nvmstat over the window\n")
	b.WriteString(vmstatHeader)
	vmstatOf(VMStat{SysPct: r.CPUSysPct, SoftPct: r.CPUSoftPct, IdlePct: r.CPUIdlePct, Runnable: r.RunnableAvg,
		CSPerS: r.ContextSwitchesPerS, InPerS: r.InterruptsPerS}).write(b)
	irqCPUs := IRQCPUs(r.Queues)
	if len(irqCPUs) == 0 {
		b.WriteString("\nmpstat over the window\n")
	} else {
		fmt.Fprintf(b, "\nmpstat -P ALL over the window: all CPUs, then those the TX queues' interrupts go to (%s)\n", units.RangeList(irqCPUs))
	}
	writeMpstatHeader(b)
	writeMpstatRow(b, "  all", max(0, r.CPUSysPct-r.CPUIrqPct-r.CPUSoftPct), r.CPUIrqPct, r.CPUSoftPct, r.CPUIdlePct)
	for _, c := range r.CPURows(irqCPUs) {
		writeMpstatRow(b, fmt.Sprintf(" %4d", c.CPU), c.SysPct, c.IrqPct, c.SoftPct, c.IdlePct)
	}
}

// CPURows are the report's rows of CPUs ids, in that order; a CPU the
// report does not list (no busy time and no task) gets an idle row.
func (r *Report) CPURows(ids []int) []CPU {
	byID := map[int]CPU{}
	for _, c := range r.CPUs {
		byID[c.CPU] = c
	}
	rows := make([]CPU, len(ids))
	for i, id := range ids {
		c, ok := byID[id]
		if !ok {
			c = CPU{CPU: id, IdlePct: 100}
		}
		rows[i] = c
	}
	return rows
}

// IRQCPUs are the CPUs the queues' interrupts go to (irq_cpu), sorted,
// each once.
func IRQCPUs(qs []Queue) []int {
	var ids []int
	seen := map[int]bool{}
	for _, q := range qs {
		if q.IRQCPU >= 0 && !seen[q.IRQCPU] {
			seen[q.IRQCPU] = true
			ids = append(ids, q.IRQCPU)
		}
	}
	sort.Ints(ids)
	return ids
}

// writeMpstatHeader prints sysstat mpstat's Average header: "%-11s"
// for the label, then the columns.
func writeMpstatHeader(b *bytes.Buffer) {
	fmt.Fprintf(b, "%-11s  CPU    %%usr   %%nice    %%sys %%iowait    %%irq   %%soft  %%steal  %%guest  %%gnice   %%idle\n", "Average:")
}

// writeMpstatRow prints one of mpstat's Average rows as sysstat does
// (write_plain_cpu_stats): "%-11s" for the label, " %s" with " all" or
// " %4d" for the CPU (cpu is either, five wide), then " %7.2f" per
// column; the model has no user, nice, iowait, steal or guest time.
func writeMpstatRow(b *bytes.Buffer, cpu string, sys, irq, soft, idle float64) {
	fmt.Fprintf(b, "%-11s%s", "Average:", cpu)
	for _, v := range []float64{0, 0, sys, 0, irq, soft, 0, 0, 0, idle} {
		fmt.Fprintf(b, " %7.2f", v)
	}
	b.WriteString("\n")
}

func writeLockHeader(b *bytes.Buffer, r *Report) {
	if r.LockCPUs != "" {
		fmt.Fprintf(b, "\nperf lock record -C%s over the window; perf lock contention\n", r.LockCPUs)
	}
}

// PerfLockRows are the locks perf lock contention lists: those with
// waits that queued on qspinlock's MCS path (the mcs_* fields), most
// total wait first.
func PerfLockRows(locks []Lock) []Lock {
	var rows []Lock
	for _, l := range locks {
		if l.MCSContended > 0 {
			rows = append(rows, l)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].MCSTotalWaitNs > rows[j].MCSTotalWaitNs })
	return rows
}

// writeLocks prints perf lock contention's default (-a, caller) layout:
// "%10s " per count column, "%12s " per time column, then
// "  %10s   %s" for type and caller. The rows are what perf lock records
// (the mcs_* fields: qspinlock's contention tracepoint fires only for a
// waiter that queues on its MCS path), most total wait first.
func writeLocks(b *bytes.Buffer, locks []Lock) {
	b.WriteString("\nLock contention (perf lock contention layout)\n")
	fmt.Fprintf(b, "%10s %12s %12s %12s   %10s   %s\n\n",
		"contended", "total wait", "max wait", "avg wait", "type", "caller")
	rows := PerfLockRows(locks)
	for _, l := range rows {
		avg := l.MCSAvgWaitNs
		if avg == 0 {
			avg = l.MCSTotalWaitNs / int64(l.MCSContended)
		}
		fmt.Fprintf(b, "%10d %12s %12s %12s   %10s   %s\n",
			l.MCSContended, perfTime(l.MCSTotalWaitNs, 12), perfTime(l.MCSMaxWaitNs, 12),
			perfTime(avg, 12), "spinlock", l.Name)
	}
	if len(rows) == 0 {
		b.WriteString("  (no contention)\n")
	}
}

// writeDeferBatch prints the llist's batch sizes, as a bpftrace
// hist() of the skbs each llist_del_all took (llist runs only).
func writeDeferBatch(b *bytes.Buffer, r *Report) {
	if r.DeferBatch != nil {
		writeHist(b, "@defer_batch", *r.DeferBatch)
	}
}

// writeHist prints a bpftrace hist() as bpftrace prints a map at exit:
// "@name: " (the space is bpftrace's), each bucket as the label left in
// 16, the count right in 8, then a 52-wide bar scaled to the fullest
// bucket, and an empty line. Buckets between the first and last
// non-empty ones are printed even when empty, as bpftrace does; the
// report stores only non-empty ones. The count and mean follow as
// bpftrace prints count() and avg() maps: "@name_count: N", "@name_avg: M".
func writeHist(b *bytes.Buffer, name string, h Hist) {
	fmt.Fprintf(b, "\n%s: \n", name)
	counts := map[int]uint64{}
	lo, hi := -1, -1
	var top uint64
	for _, bk := range h.Buckets {
		if bk.Count == 0 {
			continue
		}
		i := histIndex(bk.Lo)
		counts[i] += bk.Count
		if lo == -1 || i < lo {
			lo = i
		}
		hi = max(hi, i)
		top = max(top, counts[i])
	}
	if lo == -1 {
		b.WriteString("  (no samples)\n")
		return
	}
	for i := lo; i <= hi; i++ {
		v := counts[i]
		// bpftrace computes the bar in float and truncates.
		bar := int(float32(v) / float32(top) * histBarWidth)
		fmt.Fprintf(b, "%-16s%8d |%-*s|\n", histLabel(i), v, histBarWidth, strings.Repeat("@", bar))
	}
	// avg() prints the integer average, truncated.
	fmt.Fprintf(b, "\n%s_count: %d\n\n%s_avg: %d\n", name, h.Count, name, int64(h.MeanNs))
}

// Device is the name of the simulated host's one device (framework/run
// names it); tc's show line names it and the JSON does not carry it.
const Device = "eth0"

// writeQdiscs prints `tc -s -d qdisc show` (every device, so each line
// names its device), in the order the kernel dumps the qdiscs.
func writeQdiscs(b *bytes.Buffer, qs []Qdisc, queues int) {
	if len(qs) == 0 {
		return
	}
	b.WriteString("\nqdisc (tc -s -d qdisc show layout)\n")
	for _, q := range tcDumpOrder(qs) {
		if !q.Invisible {
			writeQdisc(b, q, Device, tcRefcnt(q, qs, queues))
		}
	}
}

// tcRefcnt is sch->refcnt as tc_fill_qdisc reports it (tcm_info), from
// how the qdisc was attached: qdisc_graft on the root takes a reference
// per TX queue and one for dev->qdisc unless the qdisc has ->attach (mq,
// cake_mq: a root with children keeps 1); attach_default_qdiscs' root
// (handle 0:) has 2; an mq child from qdisc_create_dflt has 1.
func tcRefcnt(q Qdisc, all []Qdisc, queues int) int {
	if q.Parent != "root" {
		return 1
	}
	for _, c := range all {
		if c.Parent != "root" && !c.UnderClass {
			return 1
		}
	}
	if q.Handle == "0:" || queues < 1 {
		return 2
	}
	return queues + 1
}

// writeQdisc is print_qdisc with -s: the spaces tc leaves are kept
// (after "root", "refcnt N" and the Sent line; after the options when
// the qdisc's printer leaves one). dev is "" for `show dev X`, which
// leaves the device out; refcnt is printed when it is not 1. fq's,
// fq_codel's and codel's xstats are tc's (writeQdiscXStats); other kinds' one line
// of them and defer_max are txlab's.
func writeQdisc(b *bytes.Buffer, q Qdisc, dev string, refcnt int) {
	fmt.Fprintf(b, "qdisc %s %s ", q.Kind, q.Handle)
	if dev != "" {
		fmt.Fprintf(b, "dev %s ", dev)
	}
	switch q.Parent {
	case "root":
		b.WriteString("root ")
	case "", "none":
	default:
		fmt.Fprintf(b, "parent %s ", q.Parent)
	}
	if refcnt != 1 {
		fmt.Fprintf(b, "refcnt %d ", refcnt)
	}
	b.WriteString(q.Options)
	b.WriteString("\n")
	if q.Stab != "" {
		b.WriteString(q.Stab + "\n") // print_size_table, with -d
	}
	fmt.Fprintf(b, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n",
		q.SentBytes, q.SentPackets, q.Dropped, q.Overlimits, q.Requeues)
	fmt.Fprintf(b, " backlog %s %dp requeues %d\n", tcSize(q.BacklogBytes), q.BacklogPackets, q.Requeues)
	writeQdiscXStats(b, q.Kind, q.XStats)
	if q.DeferMax > 0 {
		fmt.Fprintf(b, "  defer_max %d\n", q.DeferMax) // txlab addition
	}
}

// fqCodelXStats is q_fq_codel.c's print_xstats for the qdisc: ce_mark,
// memory_used and drop_overmemory only when not zero, and
// new_flows_len on a line of its own; the keys it does not print
// (txlab's codel_dropping) follow on a third line.
var fqCodelXStats = map[string]bool{"maxpacket": true, "drop_overlimit": true, "new_flow_count": true, "ecn_mark": true,
	"ce_mark": true, "memory_used": true, "drop_overmemory": true, "new_flows_len": true, "old_flows_len": true}

// writeQdiscXStats prints a qdisc's xstats: fq's, fq_codel's and codel's
// as tc does (writeFQXStats, fqCodelXStats, writeCodelXStats), any other kind's on one
// line in its order.
func writeQdiscXStats(b *bytes.Buffer, kind string, xs []XStat) {
	if len(xs) == 0 || kind == "codel" && writeCodelXStats(b, xs) || kind == "fq" && writeFQXStats(b, xs) ||
		kind == "dualpi2" && writeDualPI2XStats(b, xs) {
		return
	}
	text := func(x XStat) string {
		if x.Text != "" {
			return x.Key + " " + x.Text
		}
		return x.Key + " " + x.Value.String()
	}
	if kind != "fq_codel" {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = text(x)
		}
		b.WriteString("  " + strings.Join(parts, " ") + "\n")
		return
	}
	var lines [3][]string
	for _, x := range xs {
		switch {
		case !fqCodelXStats[x.Key]:
			lines[2] = append(lines[2], text(x))
		case x.Key == "new_flows_len" || x.Key == "old_flows_len":
			lines[1] = append(lines[1], text(x))
		case (x.Key == "ce_mark" || x.Key == "memory_used" || x.Key == "drop_overmemory") && x.Value.String() == "0":
		default:
			lines[0] = append(lines[0], text(x))
		}
	}
	for _, l := range lines {
		if len(l) > 0 {
			b.WriteString("  " + strings.Join(l, " ") + "\n")
		}
	}
}

// fqXStats are tc_fq_qd_stats' fields as fq reports them, in
// q_fq.c's order: "throttled" twice, the flows throttled now and then
// the throttle events.
var fqXStats = []string{"flows", "inactive", "throttled", "band0_pkts", "band1_pkts", "band2_pkts", "next_packet_delay",
	"gc", "highprio", "fastpath", "retrans", "throttled", "latency", "ce_mark", "flows_plimit",
	"pkts_too_long", "alloc_errors", "horizon_drops", "horizon_caps", "band0_drops", "band1_drops", "band2_drops"}

// writeFQXStats is q_fq.c's fq_print_xstats: the flows and band counts,
// next_packet_delay only when above 0; gc, highprio and the throttle
// events, fastpath, retrans, latency, ce_mark and flows_plimit only when
// not 0; the rare counters on a third line, each only when not 0, and
// the line only when one is. It prints nothing and returns false unless
// xs are fq's fields.
func writeFQXStats(b *bytes.Buffer, xs []XStat) bool {
	v, ok := xstatInts(xs, fqXStats)
	if !ok {
		return false
	}
	text := func(i int) string {
		if xs[i].Text != "" {
			return xs[i].Text
		}
		return xs[i].Value.String()
	}
	fmt.Fprintf(b, "  flows %d (inactive %d throttled %d) band0_pkts %d band1_pkts %d band2_pkts %d", v[0], v[1], v[2], v[3], v[4], v[5])
	if v[6] > 0 {
		b.WriteString(" next_packet_delay " + text(6))
	}
	fmt.Fprintf(b, "\n  gc %d highprio %d", v[7], v[8])
	for _, i := range []int{9, 10} { // fastpath, retrans
		if v[i] != 0 {
			fmt.Fprintf(b, " %s %d", fqXStats[i], v[i])
		}
	}
	fmt.Fprintf(b, " throttled %d", v[11])
	if v[12] != 0 {
		b.WriteString(" latency " + text(12))
	}
	for _, i := range []int{13, 14} { // ce_mark, flows_plimit
		if v[i] != 0 {
			fmt.Fprintf(b, " %s %d", fqXStats[i], v[i])
		}
	}
	rare := ""
	for i := 15; i < len(v); i++ {
		if v[i] == 0 {
			continue
		}
		sep := " "
		if fqXStats[i] == "horizon_caps" {
			sep = "  " // q_fq.c's format has two spaces there
		}
		rare += fmt.Sprintf("%s%s %d", sep, fqXStats[i], v[i])
	}
	if rare != "" {
		b.WriteString("\n" + rare)
	}
	b.WriteString("\n")
	return true
}

// xstatInts is xs's values when xs are exactly keys, in order, each an
// integer: a kind's own fields, which its tc printer lays out.
func xstatInts(xs []XStat, keys []string) ([]int64, bool) {
	if len(xs) != len(keys) {
		return nil, false
	}
	v := make([]int64, len(xs))
	for i, x := range xs {
		n, err := x.Value.Int64()
		if x.Key != keys[i] || err != nil {
			return nil, false
		}
		v[i] = n
	}
	return v, true
}

// dualpi2XStats are tc_dualpi2_xstats' fields as dualpi2 reports
// them, in q_dualpi2.c's order.
var dualpi2XStats = []string{"prob", "delay_c", "delay_l", "pkts_in_c", "pkts_in_l", "maxq", "ecn_mark", "step_mark", "credit",
	"memory_used", "max_memory_used", "memory_limit"}

// writeDualPI2XStats is q_dualpi2.c's dualpi2_print_xstats: five lines
// from the first column, each ended by print_nl, and print_qdisc's own
// print_nl after them (an empty line). It prints nothing and returns
// false unless xs are dualpi2's fields.
func writeDualPI2XStats(b *bytes.Buffer, xs []XStat) bool {
	if len(xs) != len(dualpi2XStats) {
		return false
	}
	prob, err := xs[0].Value.Float64()
	if xs[0].Key != "prob" || err != nil {
		return false
	}
	v, ok := xstatInts(xs[1:], dualpi2XStats[1:])
	if !ok {
		return false
	}
	queue := "L-queue"
	if v[7] > 0 {
		queue = "C-queue"
	}
	fmt.Fprintf(b, "prob %f delay_c %dus delay_l %dus\n", prob, v[0], v[1])
	fmt.Fprintf(b, "pkts_in_c %d pkts_in_l %d maxq %d\n", v[2], v[3], v[4])
	fmt.Fprintf(b, "ecn_mark %d step_mark %d\n", v[5], v[6])
	fmt.Fprintf(b, "credit %d (%s)\n", v[7], queue)
	fmt.Fprintf(b, "memory_used %d (max %d) of memory limit %d\n\n", v[8], v[9], v[10])
	return true
}

// codelXStats are tc_codel_xstats' fields as codel reports them, in
// q_codel.c's order.
var codelXStats = []string{"count", "lastcount", "ldelay", "dropping", "drop_next", "maxpacket", "ecn_mark", "drop_overlimit", "ce_mark"}

// writeCodelXStats is q_codel.c's print_xstats: ldelay and drop_next
// (us) in sprint_time, drop_next negative when past, "dropping" and
// ce_mark only when set, maxpacket on a second line. It prints nothing
// and returns false unless xs are codel's fields.
func writeCodelXStats(b *bytes.Buffer, xs []XStat) bool {
	ints, ok := xstatInts(xs, codelXStats)
	if !ok {
		return false
	}
	v := map[string]int64{}
	for i, k := range codelXStats {
		v[k] = ints[i]
	}
	us := func(n int64) string {
		if n < 0 {
			return "-" + units.SprintTime(uint32(-n))
		}
		return units.SprintTime(uint32(n))
	}
	fmt.Fprintf(b, "  count %d lastcount %d ldelay %s", v["count"], v["lastcount"], us(v["ldelay"]))
	if v["dropping"] != 0 {
		b.WriteString(" dropping")
	}
	fmt.Fprintf(b, " drop_next %s\n  maxpacket %d ecn_mark %d drop_overlimit %d", us(v["drop_next"]), v["maxpacket"], v["ecn_mark"], v["drop_overlimit"])
	if v["ce_mark"] != 0 {
		fmt.Fprintf(b, " ce_mark %d", v["ce_mark"])
	}
	b.WriteString("\n")
	return true
}

// tcDumpOrder is tc_dump_qdisc_root's order: the root (dev->qdisc), then
// the device's qdisc_hash bucket by bucket, each bucket newest first (the
// report lists qdiscs in creation order). So mq's children, all 0:,
// come last queue first.
func tcDumpOrder(qs []Qdisc) []Qdisc {
	type item struct {
		q           Qdisc
		bucket, seq int
	}
	var roots []Qdisc
	var rest []item
	for i, q := range qs {
		if q.Parent == "root" {
			roots = append(roots, q)
			continue
		}
		h, _ := tc.ParseQdiscHandle(q.Handle)
		rest = append(rest, item{q, tc.HashBucket(h), i})
	}
	sort.SliceStable(rest, func(i, j int) bool {
		if rest[i].bucket != rest[j].bucket {
			return rest[i].bucket < rest[j].bucket
		}
		return rest[i].seq > rest[j].seq
	})
	for _, it := range rest {
		roots = append(roots, it.q)
	}
	return roots
}

// writeEthtool prints `ethtool -S dev` (ethtool's do_gstats: "NIC
// statistics:", then "     %s: %llu" per line) with the driver's own
// names, then the window's rates as ethtool_stats.pl prints them.
func writeEthtool(b *bytes.Buffer, dev string, st []EthtoolStat) {
	if len(st) == 0 {
		return
	}
	fmt.Fprintf(b, "\nethtool -S %s (the driver's lines the model counts)\nNIC statistics:\n", dev)
	for _, s := range st {
		fmt.Fprintf(b, "     %s: %d\n", s.Key, s.Value)
	}
	fmt.Fprintf(b, "\nethtool_stats.pl --dev %s over the window (the lines that changed)\n", dev)
	writeEthtoolRates(b, dev, st)
}

// writeEthtoolRates is ethtool_stats.pl's difference(): keys in sort
// order, rounded with "%.0f", printed with "Ethtool(%-8s) stat: %12d
// (%15s) <= %s /sec" and thousands commas; unchanged lines left out.
func writeEthtoolRates(b *bytes.Buffer, dev string, st []EthtoolStat) {
	sorted := append([]EthtoolStat(nil), st...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	for _, s := range sorted {
		v := fmt.Sprintf("%.0f", s.PerS)
		if v == "0" || v == "-0" {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		fmt.Fprintf(b, "Ethtool(%-8s) stat: %12d (%15s) <= %s /sec\n", dev, n, commify(v), s.Key)
	}
}

// commify puts a comma between each three digits from the right.
func commify(digits string) string {
	var out []byte
	for i := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 && digits[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, digits[i])
	}
	return string(out)
}

func writeQueues(b *bytes.Buffer, qs []Queue) {
	if len(qs) == 0 {
		return
	}
	b.WriteString("\nQueues (the stack's counters and the driver model's own, per TX queue)\n")
	for _, q := range qs {
		stat := func(key string, v any) { fmt.Fprintf(b, "     tx-%d.%s: %v\n", q.Txq, key, v) }
		stat("packets", q.TxPackets)
		stat("bytes", q.TxBytes)
		stat("stops", q.Stops)
		stat("wakes", q.Wakes)
		stat("requeues", q.Requeues)
		stat("bql_limit", q.BQLLimit)
		stat("bql_inflight", q.Inflight)
		for _, kv := range q.Ethtool {
			stat(kv.Key, kv.Value)
		}
	}
}

// writeRx prints the forward workload's RX port: the driver's ethtool -S
// keys, then the model's view of each ring, then softnet_stat's columns.
func writeRx(b *bytes.Buffer, rx *Rx) {
	if rx == nil {
		return
	}
	fmt.Fprintf(b, "\nRX port %s (ethtool -S layout; skb truesize %d)\n", rx.Device, rx.Truesize)
	for _, q := range rx.Queues {
		for _, kv := range q.Ethtool {
			fmt.Fprintf(b, "     %s: %d\n", kv.Key, kv.Value)
		}
	}
	fmt.Fprintf(b, "     %s: %d\n", rx.PortDropped.Key, rx.PortDropped.Value)
	fmt.Fprintf(b, "  rx_missed_errors (ip -s link): %d\n", rx.MissedErrors)
	const row = "  %4s %4s %10s %10s %8s %8s %6s %6s %8s %8s\n"
	fmt.Fprintf(b, "\n"+row, "rxq", "cpu", "rx Mpps", "missed", "polls", "irqs", "itr us", "ring", "avg used", "max used")
	for _, q := range rx.Queues {
		fmt.Fprintf(b, row, strconv.Itoa(q.Rxq), strconv.Itoa(q.CPU), mpps(q.Pps), strconv.FormatUint(q.Missed, 10),
			strconv.FormatUint(q.NapiPolls, 10), strconv.FormatUint(q.Irqs, 10), strconv.FormatInt(q.ItrUsecs, 10), strconv.Itoa(q.RingSize),
			strconv.FormatFloat(q.RingAvg, 'f', 1, 64), strconv.FormatUint(q.RingMax, 10))
	}
}

// writeLinks prints ip -s link's drop columns of each device (a veth's
// peer on its line).
func writeLinks(b *bytes.Buffer, ls []Link) {
	if len(ls) == 0 {
		return
	}
	b.WriteString("\nip -s link drops (whole run)\n")
	for _, l := range ls {
		fmt.Fprintf(b, "  %-8s rx_dropped %d tx_dropped %d", l.Name, l.RxDropped, l.TxDropped)
		if p := l.Peer; p != nil {
			fmt.Fprintf(b, "  peer: rx_dropped %d tx_dropped %d", p.RxDropped, p.TxDropped)
		}
		b.WriteString("\n")
	}
}

// writeSoftnet prints /proc/net/softnet_stat's columns the model has,
// in its order, and the NAPI polls, per CPU that used them.
func writeSoftnet(b *bytes.Buffer, ss []Softnet) {
	if len(ss) == 0 {
		return
	}
	const row = "  %4s %10s %8s %12s %12s %16s %11s %10s %12s %10s\n"
	b.WriteString("\nsoftnet_stat per CPU (/proc/net/softnet_stat columns, whole run; backlog at the end) and NAPI polls\n")
	fmt.Fprintf(b, row, "cpu", "processed", "dropped", "time_squeeze", "received_rps", "flow_limit_count", "backlog_len", "input_qlen", "process_qlen", "napi_polls")
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, s := range ss {
		fmt.Fprintf(b, row, strconv.Itoa(s.CPU), u(s.Processed), u(s.Dropped), u(s.TimeSqueeze), u(s.ReceivedRPS), u(s.FlowLimitCount),
			u(s.BacklogLen), u(s.InputQlen), u(s.ProcessQlen), u(s.NapiPolls))
	}
}

// writeSlabs prints each slab cache's sysfs shape and its SLUB stats,
// in the order /sys/kernel/slab lists the stat files.
func writeSlabs(b *bytes.Buffer, ks []SlabCache) {
	if len(ks) == 0 {
		return
	}
	b.WriteString("\nslab caches of the senders' skbs, sk_buffs and heads (/sys/kernel/slab/NAME; CONFIG_SLUB_STATS, whole run)\n")
	for _, k := range ks {
		fmt.Fprintf(b, "  %s: object_size %d, objs_per_slab %d, order %d, cpu_partial %d (%d slabs), min_partial %d; %d slabs, %d partial\n",
			k.Name, k.ObjectSize, k.ObjsPerSlab, k.Order, k.CPUPartial, k.CPUPartialSlabs, k.MinPartial, k.Slabs, k.Partial)
		names := make([]string, 0, len(k.Stats))
		for n := range k.Stats {
			names = append(names, n)
		}
		sort.Strings(names)
		var line []string
		for _, n := range names {
			line = append(line, n+" "+strconv.FormatUint(k.Stats[n], 10))
		}
		b.WriteString("    " + strings.Join(line, "  ") + "\n")
	}
}

const seriesRow = "  %10s  %10s  %10s  %10s\n"

func writeSeries(b *bytes.Buffer, series []Interval) {
	if len(series) == 0 {
		return
	}
	b.WriteString("\nThroughput over time\n")
	fmt.Fprintf(b, seriesRow, "start", "tx Mpps", "drops", "backlog")
	for _, iv := range series {
		fmt.Fprintf(b, seriesRow, ms(iv.StartNs)+" ms", mpps(iv.TxPps),
			strconv.FormatUint(iv.Drops, 10), strconv.FormatInt(iv.Backlog, 10))
	}
}

// writeTC prints tc's view: the qdiscs, the classes and filters of a
// classful tree, and tc's warnings for the run's tc commands.
func writeTC(b *bytes.Buffer, r *Report) {
	if len(r.Devices) > 0 {
		writeDeviceTC(b, r)
	} else {
		writeQdiscs(b, r.Qdisc, r.Setup.Queues)
		writeClasses(b, r.Classes)
		writeFilters(b, r.Filters)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\ntc warnings\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(b, "  %s\n", w)
		}
	}
}

// writeClasses prints `tc -s -d class show dev eth0`.
func writeClasses(b *bytes.Buffer, cs []Class) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "\nclass (tc -s -d class show dev %s layout)\n", Device)
	for _, c := range tcClassOrder(cs) {
		writeClass(b, c)
	}
}

// tcClassOrder is tc_dump_tclass_root's order: the root qdisc's classes
// (the report lists them first), then each other qdisc's, by its
// qdisc_hash bucket, newest first within one; each qdisc's classes in
// its own walk order.
func tcClassOrder(cs []Class) []Class {
	type group struct {
		maj         string
		bucket, seq int
		cs          []Class
	}
	var groups []*group
	by := map[string]*group{}
	for _, c := range cs {
		maj, _, _ := strings.Cut(c.ClassID, ":")
		g := by[maj]
		if g == nil {
			h, _ := tc.ParseQdiscHandle(maj + ":")
			g = &group{maj: maj, bucket: tc.HashBucket(h), seq: len(groups)}
			by[maj] = g
			groups = append(groups, g)
		}
		g.cs = append(g.cs, c)
	}
	if len(groups) > 1 {
		rest := groups[1:]
		sort.SliceStable(rest, func(i, j int) bool {
			if rest[i].bucket != rest[j].bucket {
				return rest[i].bucket < rest[j].bucket
			}
			return rest[i].seq > rest[j].seq
		})
	}
	var out []Class
	for _, g := range groups {
		out = append(out, g.cs...)
	}
	return out
}

// writeClass is print_class with -s -d for `tc class show dev X`.
func writeClass(b *bytes.Buffer, c Class) {
	fmt.Fprintf(b, "class %s %s ", c.Kind, c.ClassID)
	switch c.Parent {
	case "root":
		b.WriteString("root ")
	case "": // tcm_parent 0 (an mqprio queue no traffic class holds)
	default:
		fmt.Fprintf(b, "parent %s ", c.Parent)
	}
	if c.Leaf != "" {
		fmt.Fprintf(b, "leaf %s ", c.Leaf)
	}
	b.WriteString(c.Options)
	b.WriteString("\n")
	if flowClassKinds[c.Kind] {
		// fq_codel, sfq and cake dump_class_stats copy no basic stats
		// (no TCA_STATS_BASIC: print_tcstats2_attr prints no "Sent"),
		// and their print_xstats end without a newline, so print_class's
		// ends the class: no blank line after it.
		fmt.Fprintf(b, " (dropped %d, overlimits %d requeues %d) \n", c.Dropped, c.Overlimits, c.Requeues)
		fmt.Fprintf(b, " backlog %s %dp requeues %d\n", tcSize(c.BacklogBytes), c.BacklogPackets, c.Requeues)
		writeClassXStats(b, c.Kind, c.XStats)
		return
	}
	fmt.Fprintf(b, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n", c.SentBytes, c.SentPackets, c.Dropped, c.Overlimits, c.Requeues)
	fmt.Fprintf(b, " backlog %s %dp requeues %d\n", tcSize(c.BacklogBytes), c.BacklogPackets, c.Requeues)
	writeClassXStats(b, c.Kind, c.XStats)
	b.WriteString("\n")
}

// flowClassKinds are the classless kinds whose classes are their flows
// (netdev's FlowClasses).
var flowClassKinds = map[string]bool{"fq_codel": true, "sfq": true, "cake": true}

// writeClassXStats is the kind's print_xstats: htb's two lines
// (htb_print_xstats), or the statistics in a line.
func writeClassXStats(b *bytes.Buffer, kind string, xs []XStat) {
	if len(xs) == 0 {
		return
	}
	v := map[string]string{}
	for _, x := range xs {
		v[x.Key] = x.Value.String()
	}
	switch kind {
	case "htb":
		fmt.Fprintf(b, " lended: %s borrowed: %s giants: %s\n", v["lended"], v["borrowed"], v["giants"])
		fmt.Fprintf(b, " tokens: %s ctokens: %s\n", v["tokens"], v["ctokens"])
		return
	case "drr":
		fmt.Fprintf(b, " deficit %s \n", xs[0].Text) // drr_print_xstats
		return
	case "hfsc":
		// hfsc_print_xstats: work and rtwork only when not 0
		fmt.Fprintf(b, " period %s ", v["period"])
		for _, k := range []string{"work", "rtwork"} {
			if n := v[k]; n != "0" && n != "" {
				fmt.Fprintf(b, "%s %s bytes ", k, n)
			}
		}
		fmt.Fprintf(b, " level %s \n", v["level"])
		return
	case "fq_codel", "sfq", "cake":
		if writeFlowXStats(b, kind, xs) {
			return
		}
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		t := x.Text
		if t == "" {
			t = x.Value.String()
		}
		parts[i] = x.Key + " " + t
	}
	b.WriteString(" " + strings.Join(parts, " ") + "\n")
}

// writeFlowXStats is the print_xstats of a flow class (netdev's
// FlowClasses): q_fq_codel.c's TCA_FQ_CODEL_XSTATS_CLASS (deficit, count,
// lastcount, ldelay; dropping and drop_next only in the dropping state),
// q_sfq.c's allot, q_cake.c's class stats (deficit, count, dropping and
// drop_next when dropping, blue_prob, blue_timer when present). Times
// are us in sprint_time. It prints nothing and returns false unless xs
// hold the kind's fields.
func writeFlowXStats(b *bytes.Buffer, kind string, xs []XStat) bool {
	v := map[string]int64{}
	for _, x := range xs {
		n, err := x.Value.Int64()
		if err != nil {
			return false
		}
		v[x.Key] = n
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := v[k]; !ok {
				return false
			}
		}
		return true
	}
	us := func(n int64) string {
		if n < 0 {
			return "-" + units.SprintTime(uint32(-n))
		}
		return units.SprintTime(uint32(n))
	}
	switch kind {
	case "fq_codel":
		if !has("deficit", "count", "lastcount", "ldelay", "dropping", "drop_next") {
			return false
		}
		fmt.Fprintf(b, "  deficit %d count %d lastcount %d ldelay %s", v["deficit"], v["count"], v["lastcount"], us(v["ldelay"]))
		if v["dropping"] != 0 {
			fmt.Fprintf(b, " dropping drop_next %s", us(v["drop_next"]))
		}
	case "sfq":
		if !has("allot") {
			return false
		}
		fmt.Fprintf(b, "  allot %d", v["allot"])
	case "cake":
		if !has("deficit", "count", "dropping", "blue_prob") {
			return false
		}
		fmt.Fprintf(b, "  deficit %d count %d", v["deficit"], v["count"])
		if v["dropping"] != 0 {
			b.WriteString(" dropping")
			if n, ok := v["drop_next"]; ok {
				fmt.Fprintf(b, " drop_next %s", us(n))
			}
		}
		fmt.Fprintf(b, " blue_prob %d", v["blue_prob"])
		if n, ok := v["blue_timer"]; ok {
			fmt.Fprintf(b, " blue_timer %s", us(n))
		}
	default:
		return false
	}
	b.WriteString("\n")
	return true
}

// writeFilters prints `tc filter show dev eth0 parent X` for each block.
func writeFilters(b *bytes.Buffer, fs []Filters) {
	for _, f := range fs {
		fmt.Fprintf(b, "\nfilter (%s dev %s parent %s layout)\n%s", f.Command(), Device, f.Parent, f.Text)
	}
}

// WriteTCShow writes what tc prints for the device after the run: `tc -s
// -d qdisc show dev eth0`, `tc -s -d class show dev eth0` and `tc filter
// show dev eth0 parent X` for each qdisc or class with filters, each
// after its command line.
func WriteTCShow(w io.Writer, r *Report) error {
	var b bytes.Buffer
	if len(r.Devices) > 0 {
		writeDeviceTCShow(&b, r)
		_, err := w.Write(b.Bytes())
		return err
	}
	fmt.Fprintf(&b, "$ tc -s -d qdisc show dev %s\n", Device)
	for _, q := range tcDumpOrder(r.Qdisc) {
		if !q.Invisible {
			writeQdisc(&b, q, "", tcRefcnt(q, r.Qdisc, r.Setup.Queues))
		}
	}
	fmt.Fprintf(&b, "$ tc -s -d class show dev %s\n", Device)
	for _, c := range tcClassOrder(r.Classes) {
		writeClass(&b, c)
	}
	for _, f := range r.Filters {
		fmt.Fprintf(&b, "$ %s dev %s parent %s\n%s", f.Command(), Device, f.Parent, f.Text)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeNetifSchedule prints __netif_schedule's callers and what
// net_tx_action found, when anything called it.
func writeNetifSchedule(b *bytes.Buffer, r *Report) {
	if len(r.NetifSchedule) == 0 {
		return
	}
	b.WriteString("\n__netif_schedule callers (net_tx_action's root-lock takes of what they queued, on the lock CPUs)\n")
	fmt.Fprintf(b, "  %-10s %10s %10s %14s %10s %10s %12s\n", "caller", "calls", "skipped", "already_sched", "raised",
		"takes", "avg wait")
	for _, s := range r.NetifSchedule {
		wait := "-"
		if s.TxActionTakes > 0 {
			wait = perfTime(s.TxActionWaitNs/int64(s.TxActionTakes), 12)
		}
		fmt.Fprintf(b, "  %-10s %10d %10d %14d %10d %10d %12s\n", s.Caller, s.Calls, s.Skipped, s.AlreadySched, s.Raised,
			s.TxActionTakes, wait)
	}
	t := r.NetTxAction
	fmt.Fprintf(b, "  net_tx_action: %d qdiscs, %d found running, %d empty, %d packets sent\n",
		t.Qdiscs, t.FoundRunning, t.Empty, t.Packets)
}

// writeSar prints `sar -n DEV`'s Average block over the window: "%-11s
// %9s" for the label and the interface, " %9.2f" per column; kB are
// 1024 bytes of skb->len (what /proc/net/dev counts); %ifutil is the
// busier direction's bits over the link speed (full duplex). The
// transmitting device is eth0; the forward workload's RX port is eth0
// itself or eth1.
func writeSar(b *bytes.Buffer, r *Report) {
	if r.WindowNs == 0 {
		return
	}
	if len(r.Devices) > 0 {
		writeDeviceSar(b, r.Devices)
		return
	}
	type row struct {
		dev            string
		rxpck, txpck   float64
		rxbyte, txbyte float64 // per second
	}
	rows := []row{{dev: Device, txpck: r.TxPps, txbyte: r.TxBps / 8}}
	if rx := r.Rx; rx != nil {
		var pps, bps float64
		for _, q := range rx.Queues {
			pps += q.Pps
			if q.Packets > 0 {
				bps += q.Pps * float64(q.Bytes) / float64(q.Packets)
			}
		}
		if rx.Device == Device {
			rows[0].rxpck, rows[0].rxbyte = pps, bps
		} else {
			rows = append(rows, row{dev: rx.Device, rxpck: pps, rxbyte: bps})
		}
	}
	b.WriteString("\nsar -n DEV over the window\n")
	writeSarHeader(b, "Average:")
	for _, w := range rows {
		util := 0.0
		if r.Setup.RateBps > 0 {
			util = max(w.rxbyte, w.txbyte) * 8 * 100 / float64(r.Setup.RateBps)
		}
		writeSarRow(b, "Average:", w.dev, w.rxpck, w.txpck, w.rxbyte, w.txbyte, util)
	}
}

func writeSarHeader(b *bytes.Buffer, label string) {
	fmt.Fprintf(b, "%-11s     IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %%ifutil\n", label)
}

// writeSarRow prints one interface: rx and tx bytes per second (shown in
// kB of 1024), compressed and multicast 0.
func writeSarRow(b *bytes.Buffer, label, dev string, rxpck, txpck, rxbyte, txbyte, util float64) {
	fmt.Fprintf(b, "%-11s %9s", label, dev)
	for _, v := range []float64{rxpck, txpck, rxbyte / 1024, txbyte / 1024, 0, 0, 0, util} {
		fmt.Fprintf(b, " %9.2f", v)
	}
	b.WriteString("\n")
}
