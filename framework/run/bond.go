package run

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/drivers/bonding"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/workload"
)

// A run with --bond (a script's device kind "bonding") transmits on a
// bonding device over slave NICs: the bonds as `ip link add NAME type
// bond ...` makes them, the NICs of the run's driver, queues, rate,
// options and root qdisc (--qdisc is the NICs'; a bond starts with
// noqueue), enslaved in order as `ip link set SLAVE master BOND`. The
// senders use the first bond. tc commands name their device (`qdisc add
// dev bond0 root ...`).

// validateBond checks --bond's words and what a bond cannot be used
// with.
func (s *Spec) validateBond() error {
	if strings.TrimSpace(s.Bond) == "" {
		return nil
	}
	if _, err := bonding.ParseList(s.Bond); err != nil {
		return fmt.Errorf("%s: %w", KnobByFlag("bond").Name(), err)
	}
	if s.Workload.Kind == workload.Forward {
		return fmt.Errorf("%s: the forward workload receives on the NIC it forwards out of; a bond has no receive side here (use udp_stream or udp_rate)", KnobByFlag("bond").Name())
	}
	if s.Workload.Kind == workload.TCPStream {
		return fmt.Errorf("%s: tcp_stream's ACKs and answers come back through the device's receive path, which a bond has none of here (use udp_stream or udp_rate)", KnobByFlag("bond").Name())
	}
	return nil
}

// setupBonded builds a --bond run's devices and senders into h (setup's
// part after the host's Net exists).
func setupBonded(h *host, spec *Spec, qwords []string, xps netdev.XPSMode) (*host, error) {
	fail := func(err error) (*host, error) { return h, &SetupError{err} }
	// What ip refuses of the bonds and their slaves (a slave named
	// twice, a loop of bonds) is --bond's: the error names it.
	bondFail := func(err error) (*host, error) { return fail(fmt.Errorf("%s: %w", KnobByFlag("bond").Name(), err)) }
	bonds, err := bonding.ParseList(spec.Bond)
	if err != nil {
		return bondFail(err)
	}
	isBond := map[string]bool{}
	named := map[string]bool{}
	for _, p := range bonds {
		isBond[p.Name] = true
		for _, s := range p.Slaves {
			named[s] = true
		}
	}
	for _, p := range bonds {
		if _, err := h.net.AddBond(p); err != nil {
			return bondFail(err)
		}
	}
	next := 0
	freeEth := func() string {
		for ; ; next++ {
			if name := fmt.Sprintf("eth%d", next); !named[name] && !isBond[name] && h.net.DeviceByName(name) == nil {
				next++
				return name
			}
		}
	}
	nic := func(name string) (*netdev.Device, error) {
		if d := h.net.DeviceByName(name); d != nil {
			return d, nil
		}
		if strings.HasPrefix(name, "bond") {
			return nil, bonding.Error(fmt.Sprintf("Error: argument %q is wrong: Device does not exist (no bond of that name)", name))
		}
		return h.net.AddDevice(netdev.DeviceSpec{Name: name, Driver: spec.Driver, Args: spec.DriverArgs,
			Queues: spec.Queues, RateBps: spec.RateBps, Qdisc: qwords, XPS: xps, IRQCPUs: h.irqCPUs(spec.Queues)})
	}
	type link struct{ bond, slave *netdev.Device }
	var links []link
	for _, p := range bonds {
		names := p.Slaves
		for i := 0; i < p.SlaveCount; i++ {
			names = append(names, freeEth())
		}
		for _, name := range names {
			d, err := nic(name)
			if err != nil {
				return bondFail(err)
			}
			links = append(links, link{h.net.DeviceByName(p.Name), d})
		}
	}
	for _, l := range links {
		if err := h.net.Enslave(l.bond, l.slave); err != nil {
			return bondFail(err)
		}
	}
	h.dev = h.net.DeviceByName(bonds[0].Name)
	if m := h.dev.Master; m != nil {
		return bondFail(fmt.Errorf("the senders transmit on the first bond, %s, but it is a slave of %s: name the top bond first", h.dev.Name, m.Name))
	}
	if err := addIfbs(h, spec); err != nil {
		return fail(err)
	}
	for _, b := range spec.TC {
		if err := h.net.TCBatch(h.dev, b.Name, b.Text); err != nil {
			return fail(err)
		}
	}
	if err := startSenders(h, spec, spec.Workload); err != nil {
		return fail(err)
	}
	return h, nil
}

// devStart is a device's counters at the window's start.
type devStart struct {
	classBytes            map[string]uint64
	ethtool               []driver.Counter
	restarts, restartPkts uint64
}

// runQdiscs are the qdiscs the device's xmit runs (qdisc_run): its
// single root, or the mq children; none for noqueue.
func runQdiscs(d *netdev.Device) []*netdev.Qdisc {
	if d.Root != nil {
		return []*netdev.Qdisc{d.Root}
	}
	return d.Children
}

// restarts sums the device's qdisc_restart counts and their skbs.
func restarts(d *netdev.Device) (n, pkts uint64) {
	for _, q := range runQdiscs(d) {
		n += q.Restarts
		pkts += q.RestartPkts
	}
	return n, pkts
}

// deviceStarts are every device's devStart, when the host is stacked.
func deviceStarts(net *netdev.Net) map[string]devStart {
	if !stacked(net) {
		return nil
	}
	out := map[string]devStart{}
	for _, d := range net.Devs {
		st := devStart{classBytes: classBytes(d), ethtool: driver.EthtoolLines(d.Drv.Stats())}
		st.restarts, st.restartPkts = restarts(d)
		out[d.Name] = st
	}
	return out
}

// stacked reports whether the host has a bond or an ifb: devices whose
// qdiscs the report shows beside the one the run transmits on.
func stacked(net *netdev.Net) bool {
	for _, d := range net.Devs {
		if d.Bond != nil || d.Ifb != nil {
			return true
		}
	}
	return false
}

// deviceSections are a stacked host's devices for the report, in
// creation order (the bonds, then their slaves); nil for a host without
// a bond.
func deviceSections(rep *report.Report, net *netdev.Net, snap, end snapshot, secs float64, spec *Spec) []report.DeviceSection {
	if !stacked(net) {
		return nil
	}
	rep.Setup.Bond, rep.Setup.Ifb = spec.Bond, spec.Ifb
	var out []report.DeviceSection
	off := 0
	for _, d := range net.Devs {
		ds := report.DeviceSection{Name: d.Name, Kind: d.DriverName(), RateBps: d.Info.RateBps, Ethtool: []report.EthtoolStat{}}
		if d.Master != nil {
			ds.Master = d.Master.Name
		}
		if b := d.Bond; b != nil {
			ds.Options = b.Options()
			for _, s := range b.Slaves {
				ds.Slaves = append(ds.Slaves, s.Name)
			}
			ds.SlaveTx = append([]uint64(nil), b.SlaveTx...)
			ds.TxDropped = b.TxDropped
		}
		if f := d.Ifb; f != nil {
			ds.TxDropped, ds.RxDropped = f.TxDropped, f.RxDropped
			for i := range f.Qs {
				ds.TaskletRuns += f.Qs[i].TaskletRuns
				ds.TaskletResched += f.Qs[i].Rescheduled
			}
		}
		var pkts, bytes uint64
		drv := d.Drv.Stats()
		for i, q := range d.Queues {
			rq := report.Queue{Txq: i, TxPackets: q.TxPackets, TxBytes: q.TxBytes, Stops: q.Stops, Wakes: q.Wakes,
				Requeues: q.Requeues, BQLLimit: q.DQL.Limit, Inflight: q.DQL.Inflight(), IRQCPU: d.TxqIRQCPU(i), Ethtool: []report.KV{}}
			if j := off + i; j < len(end.qpkts) && j < len(snap.qpkts) {
				rq.TxPps = float64(end.qpkts[j]-snap.qpkts[j]) / secs
				rq.TxBps = float64(end.qbytes[j]-snap.qbytes[j]) * 8 / secs
				pkts += end.qpkts[j] - snap.qpkts[j]
				bytes += end.qbytes[j] - snap.qbytes[j]
			}
			if i < len(drv) {
				st := drv[i]
				rq.Ethtool = append(rq.Ethtool, report.KV{Key: "tx_busy", Value: int64(st.Busy)}, report.KV{Key: "tx_restart", Value: int64(st.Restart)},
					report.KV{Key: "tx_stopped", Value: int64(st.Stopped)}, report.KV{Key: "doorbells", Value: int64(st.Doorbells)},
					report.KV{Key: "irqs", Value: int64(st.Irqs)}, report.KV{Key: "napi_polls", Value: int64(st.Polls)})
				for _, x := range st.Extra {
					rq.Ethtool = append(rq.Ethtool, report.KV{Key: x.Name, Value: int64(x.Value)})
				}
			}
			ds.TxPackets += q.TxPackets
			ds.TxBytes += q.TxBytes
			ds.Queues = append(ds.Queues, rq)
		}
		off += len(d.Queues)
		ds.TxPps, ds.TxBps = float64(pkts)/secs, float64(bytes)*8/secs
		start := snap.devices[d.Name]
		if lines := ethtoolStats(driver.EthtoolLines(drv), start.ethtool, secs); len(lines) > 0 {
			ds.Ethtool = lines
		}
		n, pkts := restarts(d)
		ds.QdiscRestarts, ds.RestartPackets = n-start.restarts, pkts-start.restartPkts
		ds.Qdisc = qdiscRows(d)
		ds.Classes = classRows(d, start.classBytes, secs)
		for _, f := range d.Filters() {
			ds.Filters = append(ds.Filters, report.Filters{Parent: f.At.String(), Text: f.Text, Stats: f.Stats})
		}
		out = append(out, ds)
	}
	return out
}
