package netdev

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/drivers/bonding"
	"github.com/txlab/txlab/framework/cls"
	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// A bonding device is stacked: its ndo_start_xmit (bond_start_xmit)
// picks a slave by the bond's mode and calls the slave's
// __dev_queue_xmit, which runs the slave's own qdisc and driver on the
// same CPU. The bond itself is IFF_NO_QUEUE (noqueue unless tc gives it
// a qdisc) and lltx (no HARD_TX_LOCK). Its driver is the host's own
// (the recursion cannot cross the plugin boundary); the slaves' drivers
// are any driver model, in or out of process.

// XmitRecursionLimit is XMIT_RECURSION_LIMIT: __dev_queue_xmit's noqueue
// path drops an skb once this CPU's softnet_data.xmit.recursion is above
// it ("Dead loop on virtual device %s, fix it urgently!").
const XmitRecursionLimit = 8

// DropRecursionLimit is SKB_DROP_REASON_RECURSION_LIMIT, the reason
// __dev_queue_xmit's recursion alert frees with (6.20's "net: plumb drop
// reasons to __dev_queue_xmit()").
const DropRecursionLimit skb.DropReason = "RECURSION_LIMIT"

// Bond is a bonding device's host side: the bonding policy and its
// slaves, in enslaving order.
type Bond struct {
	*bonding.Bond
	Slaves []*Device
	// SlaveTx counts the skbs bond_start_xmit handed each slave.
	SlaveTx []uint64
	// TxDropped counts skbs the bond freed itself (bond_tx_drop: no
	// slave) and its recursion alerts.
	TxDropped uint64
}

// stackState is what the stacked devices keep per host.
type stackState struct {
	recursion []int // softnet_data.xmit.recursion, per CPU
	// RecursionAlerts counts the skbs the recursion limit dropped.
	RecursionAlerts uint64
}

// bondDriver is the bond's ndo_* for the parts of the host that ask
// every device's driver: no rings, no NAPI, no ethtool -S lines. Its
// transmit is the host's (bondHardStartXmit).
type bondDriver struct{}

func (bondDriver) Init(driver.Setup, []string) (driver.Info, error) { return driver.Info{}, nil }
func (bondDriver) Xmit(driver.Ctx, int, []skb.Packet) (int, driver.TxCode) {
	panic("bonding: the host transmits on a bond (bond_start_xmit), never through its driver")
}
func (bondDriver) Poll(driver.Ctx, int, int) (int, bool) { return 0, true }
func (bondDriver) Stats() []driver.QueueStats            { return nil }

// DeviceByName is __dev_get_by_name, or nil.
func (n *Net) DeviceByName(name string) *Device {
	for _, d := range n.Devs {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// AddBond is `ip link add NAME type bond ...`: a bonding device with
// p's TX queues and no slaves yet, noqueue on it (IFF_NO_QUEUE).
func (n *Net) AddBond(p bonding.Params) (*Device, error) {
	if n.DeviceByName(p.Name) != nil {
		return nil, fmt.Errorf("%s: RTNETLINK answers: File exists", p.Name)
	}
	if p.TxQueues < 1 || p.TxQueues > MaxQueues {
		return nil, bonding.Error(fmt.Sprintf("%s: Error: Invalid number of transmit queues (%d).", p.Name, p.TxQueues))
	}
	r := n.E.Rand("bonding/" + p.Name)
	d := &Device{Name: p.Name, MTU: 1500, Drv: bondDriver{}, net: n, driverName: "bonding", filters: cls.NewSet(),
		Info: driver.Info{LLTX: true, NoQueue: true}}
	d.Bond = &Bond{Bond: bonding.New(p, len(n.E.CPUs), r.Uint32)}
	d.Bond.KeepLowBit = n.Cfg.BondKeepLowBit
	n.softQueues(d, p.TxQueues)
	if err := n.attachQdiscs(d, nil); err != nil {
		return nil, fmt.Errorf("device %s: %w", p.Name, err)
	}
	if n.stack.recursion == nil {
		n.stack.recursion = make([]int, len(n.E.CPUs))
	}
	if err := n.register(d); err != nil {
		return nil, err
	}
	return d, nil
}

// softQueues gives a software device (a bond, an ifb) its per-CPU driver
// contexts, ntx TX queues and an empty XPS map.
func (n *Net) softQueues(d *Device, ntx int) {
	d.ctxs = make([]dctx, len(n.E.CPUs))
	for i := range d.ctxs {
		d.ctxs[i] = dctx{net: n, dev: d, cpu: n.E.CPUs[i]}
	}
	for i := 0; i < ntx; i++ {
		q := &TxQueue{Index: i, dev: d}
		q.xmitLock.Name = fmt.Sprintf("%s-tx-%d _xmit_lock", d.Name, i)
		q.DQL.Init(HZ, 0)
		d.Queues = append(d.Queues, q)
	}
	d.xps = make([]int, len(n.E.CPUs))
	for i := range d.xps {
		d.xps[i] = -1
	}
}

// The refusals of `ip link set SLAVE master BOND`.
var (
	ErrInUse    error = bonding.Error("Error: Device is in use and cannot be enslaved.")
	ErrSelf     error = bonding.Error("Error: Cannot enslave bond to itself.")
	ErrLoop     error = bonding.Error("RTNETLINK answers: Device or resource busy")
	ErrTooDeep  error = bonding.Error("RTNETLINK answers: Too many links")
	ErrNotABond error = bonding.Error("RTNETLINK answers: Operation not supported")
)

// Enslave is `ip link set SLAVE master BOND`: bond_enslave's checks
// (the slave already has a master: its rx_handler is busy; the bond
// itself), then __netdev_upper_dev_link's: a loop (the slave is already
// above the bond) and a stack deeper than MAX_NEST_DEV. The bond's
// speed is then its slaves' sum, as bond_update_speed_duplex adds them
// up for ethtool.
func (n *Net) Enslave(bond, slave *Device) error {
	what := fmt.Sprintf("ip link set %s master %s", slave.Name, bond.Name)
	switch {
	case bond.Bond == nil:
		return fmt.Errorf("%s: %w (%s is not a bond)", what, ErrNotABond, bond.Name)
	case slave.Master != nil:
		return fmt.Errorf("%s: %w (%s is a slave of %s)", what, ErrInUse, slave.Name, slave.Master.Name)
	case slave == bond:
		return fmt.Errorf("%s: %w", what, ErrSelf)
	case bond.isLowerOf(slave):
		return fmt.Errorf("%s: %w (%s is above %s already: the stack would loop)", what, ErrLoop, slave.Name, bond.Name)
	case slave.lowerLevel()+bond.upperLevel() > bonding.MaxNestDev:
		return fmt.Errorf("%s: %w (a stack of %d devices; at most %d: MAX_NEST_DEV)", what, ErrTooDeep,
			slave.lowerLevel()+bond.upperLevel(), bonding.MaxNestDev)
	}
	b := bond.Bond
	slave.Master = bond
	b.Slaves = append(b.Slaves, slave)
	b.SlaveTx = append(b.SlaveTx, 0)
	bond.Info.RateBps += slave.Info.RateBps
	return nil
}

// isLowerOf reports whether d is below up in a stack
// (__netdev_has_upper_dev(d, up), walking every upper).
func (d *Device) isLowerOf(up *Device) bool {
	for m := d.Master; m != nil; m = m.Master {
		if m == up {
			return true
		}
	}
	return false
}

// lowerLevel is dev->lower_level: 1, plus the deepest of its lower
// devices' levels.
func (d *Device) lowerLevel() int {
	l := 0
	if d.Bond != nil {
		for _, s := range d.Bond.Slaves {
			l = max(l, s.lowerLevel())
		}
	}
	return l + 1
}

// upperLevel is dev->upper_level: 1, plus its upper device's.
func (d *Device) upperLevel() int {
	if d.Master == nil {
		return 1
	}
	return d.Master.upperLevel() + 1
}

// bondSelectQueue is the bond's ndo_select_queue (bond_select_queue).
func (n *Net) bondSelectQueue(d *Device, s *skb.SKB) *TxQueue {
	qi := bonding.SelectQueue(s.RxQueue, len(d.Queues))
	s.Queue = uint16(qi)
	return d.Queues[qi]
}

// xmitRecursion is dev_xmit_recursion: this CPU's nesting is above the
// limit.
func (n *Net) xmitRecursion(c *sim.CPU) bool {
	return n.stack.recursion != nil && n.stack.recursion[c.ID] > XmitRecursionLimit
}

// recursionAlert is __dev_queue_xmit's recursion_alert: the skb is
// dropped (-ENETDOWN to the caller, tx_dropped on the device).
func (n *Net) recursionAlert(c *sim.CPU, d *Device, s *skb.SKB) qdisc.Code {
	n.stack.RecursionAlerts++
	d.link.coreTxDropped++ // dev_core_stats_tx_dropped_inc
	if d.Bond != nil {
		d.Bond.TxDropped++
	}
	n.kfreeSkb(c, s, DropRecursionLimit)
	return qdisc.XmitDrop
}

// bondXmitNoQueue is __dev_queue_xmit's noqueue branch on a bond, after
// validate_xmit_skb: lltx, so no HARD_TX_LOCK, and a bond's queues are
// never stopped; dev_hard_start_xmit inside dev_xmit_recursion_inc/dec.
// The slave's return code comes back to the caller, as
// bond_dev_queue_xmit returns dev_queue_xmit's.
func (n *Net) bondXmitNoQueue(c *sim.CPU, d *Device, txq *TxQueue, s *skb.SKB) qdisc.Code {
	var l skb.List
	l.Push(s)
	n.driverXmitHook(c, txq, &l)
	l.Pop()
	n.stack.recursion[c.ID]++
	rc := n.bondXmitOne(c, d, txq, s)
	n.stack.recursion[c.ID]--
	return rc
}

// bondHardStartXmit is dev_hard_start_xmit on a bond from a qdisc
// (sch_direct_xmit): each skb through xmit_one to bond_start_xmit, which
// always returns NETDEV_TX_OK (a slave's drop is the slave's), so
// nothing comes back to requeue.
func (n *Net) bondHardStartXmit(c *sim.CPU, d *Device, txq *TxQueue, list *skb.List) {
	n.driverXmitHook(c, txq, list)
	for s := list.Pop(); s != nil; s = list.Pop() {
		n.bondXmitOne(c, d, txq, s)
	}
}

// bondXmitOne is xmit_one on a bond: dev_queue_xmit_nit (a packet
// socket on the bond sees the skb), then bond_start_xmit.
func (n *Net) bondXmitOne(c *sim.CPU, d *Device, txq *TxQueue, s *skb.SKB) qdisc.Code {
	if n.Hooks.Tap != nil {
		one := &n.sd[c.ID].tapOne // reused after the call
		one[0] = s
		n.Hooks.Tap(c, txq, one[:])
	}
	return n.bondStartXmit(c, d, txq, s)
}

// bondStartXmit is bond_start_xmit -> __bond_start_xmit: the mode's
// slave (bond_xmit_xor_slave_get, bond_xmit_roundrobin_slave_get, the
// active slave), then bond_dev_queue_xmit: the slave's __dev_queue_xmit
// with the skb's original queue mapping. Without a slave,
// bond_tx_drop.
func (n *Net) bondStartXmit(c *sim.CPU, d *Device, txq *TxQueue, s *skb.SKB) qdisc.Code {
	b := d.Bond
	if len(b.Slaves) == 0 {
		b.TxDropped++
		d.link.coreTxDropped++ // bond_tx_drop: dev_core_stats_tx_dropped_inc
		n.kfreeSkb(c, s, skb.DropNotSpecified)
		return qdisc.XmitDrop
	}
	n.touchSkb(c, s) // the headers bond_xmit_hash reads
	id, work := b.SlaveID(s.Packet, c.ID, len(b.Slaves))
	switch work {
	case bonding.WorkHeaders:
		c.Spend(n.E.Costs.BondHash) // bond_flow_ip, skb_flow_get_ports, bond_ip_hash
	case bonding.WorkDissect:
		c.Spend(n.E.Costs.QdiscHash) // __skb_flow_dissect and bond_ip_hash
	}
	b.SlaveTx[id]++
	txq.TxPackets++
	txq.TxBytes += uint64(s.Len)
	start := c.Now()
	rc := n.devQueueXmit(c, b.Slaves[id], s)
	n.XmitHist.Add(int64(c.Now() - start)) // kprobe:__dev_queue_xmit sees the slave's call too
	return rc
}

// BondInfo is a bond as `ip -d link show` and /proc/net/bonding show
// it: mode and policy, and its slaves.
func (d *Device) BondInfo() string {
	if d.Bond == nil {
		return ""
	}
	var names []string
	for _, s := range d.Bond.Slaves {
		names = append(names, s.Name)
	}
	return d.Bond.Options() + " slaves " + strings.Join(names, ",")
}

// RecursionAlerts is how many skbs dev_xmit_recursion's limit dropped.
func (n *Net) RecursionAlerts() uint64 { return n.stack.RecursionAlerts }

// tcDevice is the device a tc command names with "dev NAME" when the
// host has it (a bond, its slaves), else d: the command's own check
// then refuses a name the host does not have.
func (n *Net) tcDevice(d *Device, c tc.Command) *Device {
	for i := 0; i+1 < len(c.Words); i++ {
		if c.Words[i] == "dev" {
			if x := n.DeviceByName(c.Words[i+1]); x != nil {
				return x
			}
			return d
		}
	}
	return d
}

// checkAllFilters is CheckFilters on every device a stack holds, d
// first.
func (n *Net) checkAllFilters(d *Device) error {
	if err := n.CheckFilters(d); err != nil {
		return err
	}
	for _, x := range n.Devs {
		if x != d && (x.Bond != nil || x.Master != nil) {
			if err := n.CheckFilters(x); err != nil {
				return fmt.Errorf("dev %s: %w", x.Name, err)
			}
		}
	}
	return nil
}

// hostDevices names the devices tc may name: "device is eth0", or with
// a stack, "devices are bond0, eth0, eth1".
func (n *Net) hostDevices(d *Device) string {
	if d.Bond == nil && d.Master == nil {
		return "device is " + d.Name
	}
	var names []string
	for _, x := range n.Devs {
		if x.Bond != nil || x.Master != nil {
			names = append(names, x.Name)
		}
	}
	return "devices are " + strings.Join(names, ", ")
}

// DriverName is the device's driver model ("bonding" for a bond).
func (d *Device) DriverName() string { return d.driverName }
