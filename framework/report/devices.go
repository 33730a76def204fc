package report

import (
	"bytes"
	"fmt"
)

// DeviceSection is one device of a stacked host (a bond and its
// slaves): what it is, what it sent, and its own tc, queue and ethtool
// views.
type DeviceSection struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "bonding", or the NIC's driver model
	// Master is the bond a slave is enslaved to.
	Master string `json:"master,omitempty"`
	// Options is a bond's mode and policy as `ip -d link show` lists
	// them, Slaves its slaves in enslaving order.
	Options string   `json:"options,omitempty"`
	Slaves  []string `json:"slaves,omitempty"`
	// TxPackets and TxBytes are what the device sent over the run: a
	// NIC's completed packets, what a bond handed its slaves; TxPps and
	// TxBps the same over the window.
	TxPackets uint64  `json:"tx_packets"`
	TxBytes   uint64  `json:"tx_bytes"`
	TxPps     float64 `json:"tx_pps"`
	TxBps     float64 `json:"tx_bps"`
	RateBps   int64   `json:"rate_bps"` // link speed (a bond: its slaves' sum)
	// SlaveTx is, for a bond, the skbs bond_start_xmit gave each slave.
	SlaveTx []uint64 `json:"slave_tx,omitempty"`
	// TxDropped is what a bond freed itself: no slave, or the xmit
	// recursion limit.
	TxDropped uint64 `json:"tx_dropped"`
	// RxDropped is what an ifb freed for not being redirected to it;
	// TaskletRuns its queues' ifb_ri_tasklet runs, TaskletResched those
	// that ended rescheduling the tasklet (more in rq, or the queue's
	// lock busy).
	RxDropped      uint64 `json:"rx_dropped,omitempty"`
	TaskletRuns    uint64 `json:"tasklet_runs,omitempty"`
	TaskletResched uint64 `json:"tasklet_resched,omitempty"`
	// QdiscRestarts are the qdisc_restart calls of the device's qdiscs
	// that dequeued, RestartPackets their skbs, over the window: their
	// ratio is the mean bulk, and each restart is one round trip of the
	// dequeuer on the root lock (sch_direct_xmit drops and retakes it).
	QdiscRestarts  uint64        `json:"qdisc_restarts"`
	RestartPackets uint64        `json:"restart_packets"`
	Queues         []Queue       `json:"queues"`
	Ethtool        []EthtoolStat `json:"ethtool"`
	Qdisc          []Qdisc       `json:"qdisc"`
	Classes        []Class       `json:"classes,omitempty"`
	Filters        []Filters     `json:"filters,omitempty"`
}

// writeDevices prints the stacked devices, one line each.
func writeDevices(b *bytes.Buffer, ds []DeviceSection) {
	if len(ds) == 0 {
		return
	}
	b.WriteString("\nDevices (tx over the window)\n")
	for _, d := range ds {
		what := d.Kind
		switch {
		case d.Options != "":
			what += " " + d.Options + " slaves"
			for i, s := range d.Slaves {
				sep := ","
				if i == 0 {
					sep = " "
				}
				what += sep + s
			}
		case d.Master != "":
			what += ", slave of " + d.Master
		}
		fmt.Fprintf(b, "  %-8s %-60s %10.0f pps %8.3f Gbit/s  %d queues", d.Name, what, d.TxPps, d.TxBps/1e9, len(d.Queues))
		if d.TxDropped > 0 {
			fmt.Fprintf(b, "  tx_dropped %d", d.TxDropped)
		}
		if d.RxDropped > 0 {
			fmt.Fprintf(b, "  rx_dropped %d", d.RxDropped)
		}
		if d.TaskletRuns > 0 {
			fmt.Fprintf(b, "  tasklet runs %d (%d rescheduled)", d.TaskletRuns, d.TaskletResched)
		}
		if len(d.SlaveTx) > 0 {
			fmt.Fprintf(b, "  handed to slaves %v", d.SlaveTx)
		}
		if d.QdiscRestarts > 0 {
			fmt.Fprintf(b, "  bulk %.2f skbs per qdisc_restart", float64(d.RestartPackets)/float64(d.QdiscRestarts))
		}
		b.WriteString("\n")
	}
}

// writeDeviceTC is writeTC for a stacked host: `tc -s -d qdisc show`
// over every device (each line names its device), then each device's
// classes and filters.
func writeDeviceTC(b *bytes.Buffer, r *Report) {
	b.WriteString("\nqdisc (tc -s -d qdisc show layout)\n")
	for _, d := range r.Devices {
		for _, q := range tcDumpOrder(d.Qdisc) {
			if !q.Invisible {
				writeQdisc(b, q, d.Name, tcRefcnt(q, d.Qdisc, len(d.Queues)))
			}
		}
	}
	for _, d := range r.Devices {
		if len(d.Classes) > 0 {
			fmt.Fprintf(b, "\nclass (tc -s -d class show dev %s layout)\n", d.Name)
			for _, c := range tcClassOrder(d.Classes) {
				writeClass(b, c)
			}
		}
		for _, f := range d.Filters {
			fmt.Fprintf(b, "\nfilter (%s dev %s parent %s layout)\n%s", f.Command(), d.Name, f.Parent, f.Text)
		}
	}
}

// writeDeviceTCShow is WriteTCShow for each device of a stacked host.
func writeDeviceTCShow(b *bytes.Buffer, r *Report) {
	for _, d := range r.Devices {
		fmt.Fprintf(b, "$ tc -s -d qdisc show dev %s\n", d.Name)
		for _, q := range tcDumpOrder(d.Qdisc) {
			if !q.Invisible {
				writeQdisc(b, q, "", tcRefcnt(q, d.Qdisc, len(d.Queues)))
			}
		}
		fmt.Fprintf(b, "$ tc -s -d class show dev %s\n", d.Name)
		for _, c := range tcClassOrder(d.Classes) {
			writeClass(b, c)
		}
		for _, f := range d.Filters {
			fmt.Fprintf(b, "$ %s dev %s parent %s\n%s", f.Command(), d.Name, f.Parent, f.Text)
		}
	}
}

// writeEthtools prints ethtool -S of the device, or of every device of a
// stacked host that has lines (a bond has none: "no stats available").
func writeEthtools(b *bytes.Buffer, r *Report) {
	if len(r.Devices) == 0 {
		writeEthtool(b, Device, r.Ethtool)
		return
	}
	for _, d := range r.Devices {
		writeEthtool(b, d.Name, d.Ethtool)
	}
}

// writeDeviceSar is writeSar's Average block with a row per device: a
// bond's tx is what it handed its slaves; %ifutil against each device's
// own speed (a bond's: its slaves' sum).
func writeDeviceSar(b *bytes.Buffer, ds []DeviceSection) {
	b.WriteString("\nsar -n DEV over the window\n")
	writeSarHeader(b, "Average:")
	for _, d := range ds {
		util := 0.0
		if d.RateBps > 0 {
			util = d.TxBps * 100 / float64(d.RateBps)
		}
		writeSarRow(b, "Average:", d.Name, 0, d.TxPps, 0, d.TxBps/8, util)
	}
}
