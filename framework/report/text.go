package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/tc"
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
	writeVMStat(&b, r)
	writeLockHeader(&b, r)
	writeLocks(&b, r.Locks)
	writeHist(&b, "@__dev_queue_xmit_ns", r.XmitNs)
	writeQdiscs(&b, r.Qdisc, r.Setup.Queues)
	writeQueues(&b, r.Queues)
	writeRx(&b, r.Rx)
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

// writeVMStat prints `vmstat 1`'s procs, system and cpu columns, one
// row per interval of the series and a last row for the window, with
// mpstat's %soft after them. Memory, swap and io are not modelled, nor
// user time (us 0: a sender's user-space loop is folded into its
// syscall cost), so sy + id = 100.
func writeVMStat(b *bytes.Buffer, r *Report) {
	if len(r.Series) == 0 && r.WindowNs == 0 {
		return
	}
	b.WriteString("\nvmstat (vmstat 1 columns per interval, then the window; sy includes irq and softirq, si is mpstat's %soft)\n")
	b.WriteString("procs ----system---- ------cpu----- mpstat\n")
	fmt.Fprintf(b, "%4s %2s %8s %8s %2s %2s %2s %2s %2s %6s\n", "r", "b", "in", "cs", "us", "sy", "id", "wa", "st", "%soft")
	row := func(v VMStat) {
		fmt.Fprintf(b, "%4.0f %2d %8.0f %8.0f %2d %2.0f %2.0f %2d %2d %6.2f\n", v.Runnable, 0, v.InPerS, v.CSPerS, 0, v.SysPct, v.IdlePct, 0, 0, v.SoftPct)
	}
	for _, iv := range r.Series {
		row(iv.VMStat)
	}
	b.WriteString("window:\n")
	row(VMStat{SysPct: r.CPUSysPct, SoftPct: r.CPUSoftPct, IdlePct: r.CPUIdlePct, Runnable: r.RunnableAvg,
		CSPerS: r.ContextSwitchesPerS, InPerS: r.InterruptsPerS})
}

func writeLockHeader(b *bytes.Buffer, r *Report) {
	if r.LockCPUs != "" {
		fmt.Fprintf(b, "\nperf lock record -C%s over the window; perf lock contention\n", r.LockCPUs)
	}
}

// writeLocks prints perf lock contention's default (-a, caller) layout:
// "%10s " per count column, "%12s " per time column, then
// "  %10s   %s" for type and caller.
func writeLocks(b *bytes.Buffer, locks []Lock) {
	b.WriteString("\nLock contention (perf lock contention layout)\n")
	fmt.Fprintf(b, "%10s %12s %12s %12s   %10s   %s\n\n",
		"contended", "total wait", "max wait", "avg wait", "type", "caller")
	n := 0
	for _, l := range locks {
		if l.Contended == 0 {
			continue
		}
		avg := l.AvgWaitNs
		if avg == 0 {
			avg = l.TotalWaitNs / int64(l.Contended)
		}
		fmt.Fprintf(b, "%10d %12s %12s %12s   %10s   %s\n",
			l.Contended, perfTime(l.TotalWaitNs, 12), perfTime(l.MaxWaitNs, 12),
			perfTime(avg, 12), "spinlock", l.Name)
		n++
	}
	if n == 0 {
		b.WriteString("  (no contention)\n")
	}
}

// writeHist prints a bpftrace hist(): label left in 16, count right in 8,
// then a 52-wide bar scaled to the fullest bucket. Buckets between the
// first and last non-empty ones are printed even when empty, as bpftrace
// does; the report stores only non-empty ones.
func writeHist(b *bytes.Buffer, name string, h Hist) {
	fmt.Fprintf(b, "\n%s:\n", name)
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
	fmt.Fprintf(b, "  (%d samples, mean %.1f ns)\n", h.Count, h.MeanNs)
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
		writeQdisc(b, q, Device, tcRefcnt(q, qs, queues))
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
		if c.Parent != "root" {
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
// leaves the device out; refcnt is printed when it is not 1. The xstats
// line and defer_max are txlab's.
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
	fmt.Fprintf(b, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n",
		q.SentBytes, q.SentPackets, q.Dropped, q.Overlimits, q.Requeues)
	fmt.Fprintf(b, " backlog %s %dp requeues %d\n", tcSize(q.BacklogBytes), q.BacklogPackets, q.Requeues)
	if len(q.XStats) > 0 {
		parts := make([]string, len(q.XStats))
		for i, x := range q.XStats {
			v := x.Text
			if v == "" {
				v = x.Value.String()
			}
			parts[i] = x.Key + " " + v
		}
		b.WriteString("  " + strings.Join(parts, " ") + "\n")
	}
	if q.DeferMax > 0 {
		fmt.Fprintf(b, "  defer_max %d\n", q.DeferMax) // txlab addition
	}
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

func writeQueues(b *bytes.Buffer, qs []Queue) {
	if len(qs) == 0 {
		return
	}
	b.WriteString("\nQueues (ethtool -S layout)\n")
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
	const row = "  %4s %4s %10s %10s %8s %8s %6s %8s %8s\n"
	fmt.Fprintf(b, "\n"+row, "rxq", "cpu", "rx Mpps", "missed", "polls", "irqs", "ring", "avg used", "max used")
	for _, q := range rx.Queues {
		fmt.Fprintf(b, row, strconv.Itoa(q.Rxq), strconv.Itoa(q.CPU), mpps(q.Pps), strconv.FormatUint(q.Missed, 10),
			strconv.FormatUint(q.NapiPolls, 10), strconv.FormatUint(q.Irqs, 10), strconv.Itoa(q.RingSize),
			strconv.FormatFloat(q.RingAvg, 'f', 1, 64), strconv.FormatUint(q.RingMax, 10))
	}
	if len(rx.Softnet) > 0 {
		b.WriteString("\nsoftnet_stat (processed, time_squeeze) and NAPI polls per CPU\n")
		for _, s := range rx.Softnet {
			fmt.Fprintf(b, "  cpu%-4d processed %d time_squeeze %d napi_polls %d\n", s.CPU, s.Processed, s.TimeSqueeze, s.NapiPolls)
		}
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
