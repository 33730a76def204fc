package report

import (
	"encoding/json"
	"errors"
	"io"
	"math"
)

// WriteJSON writes r as indented JSON followed by a newline. It calls
// Normalize first so collections are never null. Map keys come out
// sorted, so equal reports give equal bytes (after StripWall).
//
// Top-level keys:
//
//	name               variant name (omitted when empty)
//	script             the script the run came from (omitted for a run from flags)
//	profile            profile the run was built from
//	seed               random seed; same seed and config give the same report
//	setup              what was simulated: topology, driver, queues, rate, qdisc, workload
//	config             every TX-path toggle, name -> value
//	costs              the cost table used, name -> ns
//	duration_ns        simulated time, warmup included
//	warmup_ns          simulated time excluded from rates
//	window_ns          measurement window (duration - warmup)
//	offered_packets    packets the workload tried to send, whole run
//	tx_packets         packets the NIC put on the wire, whole run
//	tx_bytes           frame bytes put on the wire, whole run
//	dropped_packets    packets dropped anywhere, whole run
//	in_flight_packets  packets still inside the stack at the end
//	drops              drop reason -> count, whole run (always an object)
//	in_flight_where    where the in-flight packets sit -> count
//	accounting_ok      offered == tx + dropped + in flight
//	accounting_error   why the identity failed (omitted when it holds)
//	window             counts within the measurement window only
//	tx_pps             packets per simulated second, in the window
//	tx_bps             bits per simulated second (frame bytes * 8), in the window
//	cpu_ns_per_packet  busy CPU ns per transmitted packet, in the window
//	cpu_busy_pct       busy share over all CPUs, in the window
//	cpu_sys_pct        vmstat sy (system + irq + softirq), in the window
//	cpu_soft_pct       mpstat %soft, in the window
//	cpu_idle_pct       vmstat id, in the window
//	runnable_avg       vmstat r: runnable tasks (running ones included), time average over the window
//	context_switches_per_s  vmstat cs, in the window
//	interrupts_per_s   vmstat in (device interrupts and local timer ticks), in the window
//	lock_cpus          the CPUs the lock table was recorded on (omitted: all)
//	counters           named event counters, name -> count
//	netif_schedule_callers  __netif_schedule by caller: calls, skipped, already_sched, raised, tx_action_takes, tx_action_wait_ns (always an array)
//	net_tx_action      what net_tx_action found: qdiscs, found_running, empty, packets
//	locks              perf lock contention rows, by total wait (always an array)
//	queues             per TX queue stack and ethtool -S counters (always an array)
//	qdisc              per qdisc tc -s counters (always an array)
//	xmit_latency_ns    log2 histogram of __dev_queue_xmit time
//	series             per-interval throughput, drops, backlog and vmstat columns
//	cpus               busy share of each busy CPU (omitted when none)
//	events             simulator events processed
//	sim_wall_ns        wall time spent simulating; zeroed by StripWall
//	error              why the run failed (omitted when it did not)
func WriteJSON(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("report: nil report")
	}
	r.Normalize()
	return encode(w, r)
}

// WriteJSONList writes several reports as {"variants": [...]}.
func WriteJSONList(w io.Writer, rs []*Report) error {
	for _, r := range rs {
		r.Normalize()
	}
	if rs == nil {
		rs = []*Report{}
	}
	return encode(w, struct {
		Variants []*Report `json:"variants"`
	}{rs})
}

func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Lock names and qdisc options are read by people; keep "<" and "&".
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// StripWall zeroes the one non-deterministic field so two runs of the
// same spec compare byte for byte.
func (r *Report) StripWall() {
	if r != nil {
		r.SimWallNs = 0
	}
}

// Normalize replaces nil maps and slices with empty ones so consumers
// always see {} or [] rather than null, and replaces NaN and infinite
// rates (from an empty window) with 0, which encoding/json cannot write.
func (r *Report) Normalize() {
	if r == nil {
		return
	}
	emptyMap(&r.Config)
	emptyMap(&r.Costs)
	emptyMap(&r.Drops)
	emptyMap(&r.InFlightWhere)
	emptyMap(&r.Counters)
	emptyMap(&r.Window.Drops)
	emptySlice(&r.Locks)
	emptySlice(&r.NetifSchedule)
	emptySlice(&r.Queues)
	emptySlice(&r.Ethtool)
	emptySlice(&r.Qdisc)
	emptySlice(&r.Series)
	emptySlice(&r.XmitNs.Buckets)
	if r.DeferBatch != nil {
		emptySlice(&r.DeferBatch.Buckets)
		finite(&r.DeferBatch.MeanNs)
	}
	for i := range r.Queues {
		emptySlice(&r.Queues[i].Ethtool)
	}
	for i := range r.Ethtool {
		finite(&r.Ethtool[i].PerS)
	}
	for _, f := range []*float64{&r.TxPps, &r.TxBps, &r.CPUNsPerPacket, &r.CPUBusyPct, &r.Setup.OfferedPps, &r.XmitNs.MeanNs,
		&r.CPUSysPct, &r.CPUSoftPct, &r.CPUIdlePct, &r.RunnableAvg, &r.ContextSwitchesPerS, &r.InterruptsPerS} {
		finite(f)
	}
	for i := range r.Series {
		iv := &r.Series[i]
		for _, f := range []*float64{&iv.TxPps, &iv.TxBps, &iv.SysPct, &iv.SoftPct, &iv.IdlePct, &iv.Runnable, &iv.CSPerS, &iv.InPerS} {
			finite(f)
		}
	}
	for i := range r.CPUs {
		finite(&r.CPUs[i].BusyPct)
	}
}

func emptyMap[V any](m *map[string]V) {
	if *m == nil {
		*m = map[string]V{}
	}
}

func emptySlice[T any](s *[]T) {
	if *s == nil {
		*s = []T{}
	}
}

func finite(f *float64) {
	if math.IsNaN(*f) || math.IsInf(*f, 0) {
		*f = 0
	}
}
