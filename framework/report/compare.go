package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// compareRow is one line of the comparison table. num holds the values a
// ratio is computed from; nil means the row is not numeric.
type compareRow struct {
	label string
	cells []string
	num   []float64
}

// WriteCompare renders variants side by side: one column per report and,
// for exactly two, a "B/A" ratio column so a speedup reads directly.
func WriteCompare(w io.Writer, rs []*Report) error {
	if len(rs) == 0 {
		return errors.New("report: nothing to compare")
	}
	// A failed variant may come back nil; keep its column so the others
	// stay in place.
	reps := make([]*Report, len(rs))
	for i, r := range rs {
		if r == nil {
			r = &Report{Name: fmt.Sprintf("#%d", i+1), Error: "no report"}
		}
		reps[i] = r
	}
	heads := make([]string, len(reps))
	for i, r := range reps {
		heads[i] = columnName(r, i)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "Comparison of %d variants\n\n", len(reps))
	writeTable(&b, "", heads, compareRows(reps), len(reps) == 2)
	writeCompareSeries(&b, heads, reps)
	// Each variant's tools, as a single run prints them (vmstat's and
	// mpstat's window figures are in the table).
	for i, r := range reps {
		if r.Error == "no report" {
			continue
		}
		fmt.Fprintf(&b, "\n=== %s: the tools' view ===\n", heads[i])
		writeLockHeader(&b, r)
		writeLocks(&b, r.Locks)
		writeHist(&b, "@__dev_queue_xmit_ns", r.XmitNs)
		writeDeferBatch(&b, r)
		writeTC(&b, r)
		writeEthtool(&b, Device, r.Ethtool)
		writeSar(&b, r)
	}
	for i, r := range reps {
		if r.Error != "" {
			fmt.Fprintf(&b, "\nerror (%s): %s\n", heads[i], r.Error)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func columnName(r *Report, i int) string {
	switch {
	case r.Name != "":
		return r.Name
	case r.Profile != "":
		return r.Profile
	}
	return fmt.Sprintf("#%d", i+1)
}

func compareRows(reps []*Report) []compareRow {
	var rows []compareRow
	numeric := func(label string, format func(float64) string, get func(*Report) float64) {
		row := compareRow{label: label}
		for _, r := range reps {
			v := get(r)
			row.cells = append(row.cells, format(v))
			row.num = append(row.num, v)
		}
		rows = append(rows, row)
	}
	text := func(label string, get func(*Report) string) {
		row := compareRow{label: label}
		for _, r := range reps {
			row.cells = append(row.cells, get(r))
		}
		rows = append(rows, row)
	}
	f1 := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	f3 := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

	numeric("tx Mpps", f3, func(r *Report) float64 { return r.TxPps / 1e6 })
	numeric("tx Gbit/s", f3, func(r *Report) float64 { return r.TxBps / 1e9 })
	numeric("CPU busy %", f1, func(r *Report) float64 { return r.CPUBusyPct })
	numeric("CPU ns/pkt", f1, func(r *Report) float64 { return r.CPUNsPerPacket })
	numeric("vmstat r", f1, func(r *Report) float64 { return r.RunnableAvg })
	numeric("vmstat cs/s", count, func(r *Report) float64 { return r.ContextSwitchesPerS })
	numeric("vmstat in/s", count, func(r *Report) float64 { return r.InterruptsPerS })
	numeric("vmstat sy %", f1, func(r *Report) float64 { return r.CPUSysPct })
	numeric("vmstat id %", f1, func(r *Report) float64 { return r.CPUIdlePct })
	numeric("mpstat %irq", f1, func(r *Report) float64 { return r.CPUIrqPct })
	numeric("mpstat %soft", f1, func(r *Report) float64 { return r.CPUSoftPct })
	numeric("offered", count, func(r *Report) float64 { return float64(r.OfferedPackets) })
	numeric("tx packets", count, func(r *Report) float64 { return float64(r.TxPackets) })
	numeric("dropped", count, func(r *Report) float64 { return float64(r.DroppedPackets) })
	for _, reason := range dropReasons(reps) {
		numeric("  "+reason, count, func(r *Report) float64 { return float64(r.Drops[reason]) })
	}
	numeric("in flight", count, func(r *Report) float64 { return float64(r.InFlightPackets) })
	// tcp_stream variants: what flent's totals and ping plots show.
	if anyReport(reps, func(r *Report) bool { return r.GoodputBps != nil }) {
		numeric("goodput Mbit/s", f1, func(r *Report) float64 { return r.Goodput() / 1e6 })
	}
	if anyReport(reps, func(r *Report) bool { return r.Latency != nil }) {
		rtt := func(get func(*Percentiles) float64) func(*Report) float64 {
			return func(r *Report) float64 {
				if r.Latency == nil {
					return 0
				}
				return get(&r.Latency.Loaded)
			}
		}
		f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
		numeric("loaded RTT p50 ms", f2, rtt(func(p *Percentiles) float64 { return p.P50 }))
		numeric("loaded RTT p99 ms", f2, rtt(func(p *Percentiles) float64 { return p.P99 }))
	}
	text("accounting", func(r *Report) string {
		if r.AccountingOK {
			return "OK"
		}
		return "FAILED"
	})
	// The top lock gets its own rows so the wait can carry a ratio.
	text("top lock", func(r *Report) string {
		if l, ok := topLock(r.Locks); ok {
			return l.Name
		}
		return "-"
	})
	numeric("  total wait", func(v float64) string { return PerfTime(int64(v)) }, func(r *Report) float64 {
		l, _ := topLock(r.Locks)
		return float64(l.TotalWaitNs)
	})
	return rows
}

// anyReport reports whether has holds for one of reps.
func anyReport(reps []*Report, has func(*Report) bool) bool {
	for _, r := range reps {
		if has(r) {
			return true
		}
	}
	return false
}

// dropReasons is the sorted union of reasons over all reports.
func dropReasons(reps []*Report) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range reps {
		for k := range r.Drops {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// topLock is the contended lock with the most total wait; the first wins
// a tie so the answer does not depend on map order upstream.
func topLock(locks []Lock) (Lock, bool) {
	var best Lock
	found := false
	for _, l := range locks {
		if l.Contended == 0 {
			continue
		}
		if !found || l.TotalWaitNs > best.TotalWaitNs {
			best, found = l, true
		}
	}
	return best, found
}

// ratio formats b/a as "1.81x"; "-" when a is zero since no ratio exists.
func ratio(a, b float64) string {
	if a == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", b/a)
}

// writeTable aligns labels left and values right, each column as wide as
// its widest cell.
func writeTable(b *bytes.Buffer, corner string, heads []string, rows []compareRow, withRatio bool) {
	cols := len(heads)
	if withRatio {
		cols++
	}
	widths := make([]int, cols)
	var labelW int
	cell := func(row compareRow, c int) string {
		if c < len(row.cells) {
			return row.cells[c]
		}
		if row.num == nil {
			return ""
		}
		return ratio(row.num[0], row.num[1])
	}
	for c := range heads {
		widths[c] = len(heads[c])
	}
	if withRatio {
		widths[cols-1] = len("B/A")
	}
	labelW = len(corner)
	for _, row := range rows {
		labelW = max(labelW, len(row.label))
		for c := 0; c < cols; c++ {
			widths[c] = max(widths[c], len(cell(row, c)))
		}
	}
	line := func(label string, cells []string) {
		var sb strings.Builder
		fmt.Fprintf(&sb, "  %-*s", labelW, label)
		for c, s := range cells {
			fmt.Fprintf(&sb, "  %*s", widths[c], s)
		}
		b.WriteString(strings.TrimRight(sb.String(), " ") + "\n")
	}
	hs := append([]string(nil), heads...)
	if withRatio {
		hs = append(hs, "B/A")
	}
	line(corner, hs)
	for _, row := range rows {
		cells := make([]string, cols)
		for c := range cells {
			cells[c] = cell(row, c)
		}
		line(row.label, cells)
	}
}

// writeCompareSeries lines the intervals up by start time; a variant
// without a given interval shows "-".
func writeCompareSeries(b *bytes.Buffer, heads []string, reps []*Report) {
	byStart := make([]map[int64]float64, len(reps))
	var starts []int64
	seen := map[int64]bool{}
	for i, r := range reps {
		byStart[i] = map[int64]float64{}
		for _, iv := range r.Series {
			byStart[i][iv.StartNs] = iv.TxPps
			if !seen[iv.StartNs] {
				seen[iv.StartNs] = true
				starts = append(starts, iv.StartNs)
			}
		}
	}
	if len(starts) == 0 {
		return
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	b.WriteString("\nThroughput over time (tx Mpps)\n")
	var rows []compareRow
	for _, s := range starts {
		row := compareRow{label: fmt.Sprintf("%7.1f ms", float64(s)/1e6)}
		for i := range reps {
			v, ok := byStart[i][s]
			if !ok {
				row.cells = append(row.cells, "-")
				continue
			}
			row.cells = append(row.cells, mpps(v))
		}
		rows = append(rows, row)
	}
	writeTable(b, "start", heads, rows, false)
}
