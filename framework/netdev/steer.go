package netdev

import (
	"fmt"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Steering: which TX queue a CPU's packets take (XPS) and which CPU a
// received flow's interrupt comes to (RSS).

// XPSMode is the XPS_CPUS map a device is given
// (/sys/class/net/DEV/queues/tx-N/xps_cpus).
type XPSMode string

// XPS maps.
const (
	// XPSNone: no map (also a DeviceSpec's zero value); get_xps_queue
	// finds nothing and every socket's queue is skb_tx_hash's.
	XPSNone XPSMode = "none"
	// XPSIRQ is what ice (ice_cfg_xps_tx_ring: the q_vector's affinity
	// mask, one CPU from cpumask_local_spread) and gve
	// (gve_tx_add_to_block: get_cpu_mask(ntfy_idx)) set up: each queue
	// gets its interrupt's CPU, so only those CPUs are in the map and
	// the others hash. A driver that sets none (veth: Info.NoXPS)
	// leaves it empty.
	XPSIRQ XPSMode = "irq"
	// XPSCores is an administrator's map that gives every queue a
	// contiguous group of cores with all their SMT threads, as Eric
	// Dumazet's test hosts are set up ("32 TX queues, shared by groups
	// of 8 cores", echo ff >tx-0/xps_cpus ..., in 4a7708443dec "net:
	// allow busy connected flows to switch tx queues"): core k (CPU
	// numbering as Linux's, sockets' cores in order) goes to queue
	// k*queues/cores, so each socket's CPUs use their own queues.
	XPSCores XPSMode = "cores"
)

// XPSModes lists the XPS maps a device may be given.
func XPSModes() []XPSMode { return []XPSMode{XPSIRQ, XPSCores, XPSNone} }

// ParseXPS reads an XPS map's name ("" is the driver's: XPSIRQ).
func ParseXPS(s string) (XPSMode, error) {
	if s == "" {
		return XPSIRQ, nil
	}
	for _, m := range XPSModes() {
		if XPSMode(s) == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown XPS map %q (known: irq, cores, none)", s)
}

// setXPS builds d.xps, the CPU -> queue map get_xps_queue reads (each
// CPU in at most one queue's mask here, so a map of one entry: no hash
// among several queues).
func (d *Device) setXPS(mode XPSMode, topo sim.Topology) error {
	for i := range d.xps {
		d.xps[i] = -1
	}
	switch mode {
	case XPSNone, "": // a DeviceSpec that names no map has none
	case XPSIRQ:
		if d.Info.NoXPS {
			break // veth: no driver map
		}
		for qi := range d.Queues {
			if qi < len(d.Info.QueueVec) {
				d.xps[d.vecCPU[d.Info.QueueVec[qi]]] = qi
			}
		}
	case XPSCores:
		cores := topo.Sockets * topo.CoresPerSocket
		nq := len(d.Queues)
		for cpu := range d.xps {
			s, c, _ := topo.Place(cpu)
			d.xps[cpu] = int(int64(s*topo.CoresPerSocket+c) * int64(nq) / int64(cores))
		}
	default:
		return fmt.Errorf("unknown XPS map %q", mode)
	}
	return nil
}

// XPSQueue is the queue CPU cpu's XPS_CPUS map gives, or -1.
func (d *Device) XPSQueue(cpu int) int { return d.xps[cpu] }

// TxqIRQCPU is the CPU txq q's interrupt vector is affine to, where its
// TX completions run, or -1 for a device without interrupts (veth's
// NAPI is scheduled by its sender).
func (d *Device) TxqIRQCPU(q int) int {
	if !d.Info.Wire || q < 0 || q >= len(d.Info.QueueVec) {
		return -1
	}
	return d.vecCPU[d.Info.QueueVec[q]]
}

// rssLUTNoRx is the indirection table's size assumed for a device built
// without RX queues (transmit only): RSS over its queue pairs.
const rssLUTNoRx = 128

// RxCPU is the CPU whose interrupt delivers a frame of flow k received
// on d: the NIC's RSS hash (RSSHash) indexes the indirection table,
// filled round robin over the RX queues (the queue pairs of a device
// built transmit-only), and the queue's vector has its IRQ CPU. Every
// frame the host receives steers by it: netperf's control replies and
// the local receive path's (local.go) ACKs, downloads and probe replies.
func (n *Net) RxCPU(d *Device, k skb.FlowKeys) int {
	_, _, cpu := n.rxSteer(d, k)
	return cpu
}

// rxSteer is RSS for a frame of flow k received on d: the device whose
// ring takes it (a bond's slave), the RX queue (of the queue pairs on a
// device built transmit-only) and its vector's IRQ CPU.
func (n *Net) rxSteer(d *Device, k skb.FlowKeys) (*Device, int, int) {
	h := RSSHash(n.rssKey(), k)
	// A bond receives through its slaves (bond_handle_frame, their
	// rx_handler); which slave a frame arrives on is the peer switch's
	// port-channel hash, taken here as the flow's hash over the slaves.
	for d.Bond != nil && len(d.Bond.Slaves) > 0 {
		d = d.Bond.Slaves[h%uint32(len(d.Bond.Slaves))]
	}
	if rx := d.Info.Rx; rx != nil && d.numRxQ > 0 {
		q := RSSQueue(h, rx.LUTSize, d.numRxQ)
		return d, q, d.vecCPU[rx.QueueVec[q]]
	}
	nq := min(len(d.Queues), len(d.Info.QueueVec))
	q := RSSQueue(h, rssLUTNoRx, nq)
	return d, q, d.vecCPU[d.Info.QueueVec[q]]
}
