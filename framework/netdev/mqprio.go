package netdev

import (
	"errors"
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// mqprio (net/sched/sch_mqprio.c, sch_mqprio_lib.c) is mq with traffic
// classes: its options map skb->priority to a traffic class and each
// class to a range of TX queues, which it writes into the device
// (netdev_set_num_tc, netdev_set_tc_queue, netdev_set_prio_tc_map), so
// netdev_pick_tx's skb_tx_hash picks among the queues of the packet's
// class. Its children are mq's: one default qdisc per queue, grafted
// over as mq's are. Only the software mapping (hw 0) is modelled: with
// hw 1, tc's default, the driver's ndo_setup_tc owns the mapping (DCB or
// ice's ADQ channels), which no driver model has.

// Bounds of the traffic classes (include/uapi/linux/pkt_sched.h,
// netdevice.h).
const (
	tcMaxQueue = 16 // TC_MAX_QUEUE, TC_QOPT_MAX_QUEUE
	tcBitmask  = 15 // TC_BITMASK
	// TCHMinPriority is TC_H_MIN_PRIORITY: mqprio's traffic class k is
	// class MAJ:ffe0+k.
	TCHMinPriority = 0xffe0
)

// MQRoot says kind is a root whose children are one per TX queue, each
// grafted over as mq_graft grafts it: mq and mqprio.
func MQRoot(kind string) bool { return kind == "mq" || kind == "mqprio" }

// tcTxq is struct netdev_tc_txq.
type tcTxq struct{ count, offset uint16 }

// tcConfig is the device's traffic classes: struct net_device's num_tc,
// tc_to_txq and prio_tc_map.
type tcConfig struct {
	num    int
	toTxq  [tcMaxQueue]tcTxq
	prioTC [tcBitmask + 1]uint8
}

// setNumTC is netdev_set_num_tc: the XPS maps go (netif_reset_xps_queues_gt
// from 0: every queue's), tc_to_txq and prio_tc_map stay as they were.
func (d *Device) setNumTC(num int) {
	for i := range d.xps {
		d.xps[i] = -1
	}
	d.tc.num = num
}

// txqToTC is netdev_txq_to_tc: the class whose range holds queue txq
// (every entry of tc_to_txq is looked at, as the kernel does), -1 if
// none; 0 without classes.
func (d *Device) txqToTC(txq int) int {
	if d.tc.num == 0 {
		return 0
	}
	for i, r := range d.tc.toTxq {
		if uint16(txq)-r.offset < r.count {
			return i
		}
	}
	return -1
}

// tcRange is skb_tx_hash's queue range for a packet of priority prio:
// all queues without traffic classes, else its class's (all, as the
// kernel falls back, when the class has none).
func (d *Device) tcRange(prio uint32) (offset, count int) {
	nq := len(d.Queues)
	if d.tc.num == 0 {
		return 0, nq
	}
	r := d.tc.toTxq[d.tc.prioTC[prio&tcBitmask]]
	if r.count == 0 {
		return 0, nq // "invalid qcount", net_warn_ratelimited
	}
	return int(r.offset), int(r.count)
}

// mqprioOpt is struct tc_mqprio_qopt as tc's mqprio_parse_opt fills it,
// and whether it adds netlink attributes after it.
type mqprioOpt struct {
	numTC  uint8
	prioTC [tcBitmask + 1]uint8
	hw     uint8
	count  [tcMaxQueue]uint16
	offset [tcMaxQueue]uint16
	attrs  bool // TCA_MQPRIO_MODE, _SHAPER, _MIN/MAX_RATE64 or _TC_ENTRY
}

// parseMQPrio is tc's mqprio_parse_opt: num_tc (default 8), map (the
// default 0 1 2 3 4 5 6 7 0 1 1 1 3 3 3 3; the entries not given 0),
// queues count@offset..., hw (default 1), and with hw mode, shaper and
// its rates; fp.
func parseMQPrio(args []string) (mqprioOpt, error) {
	o := mqprioOpt{numTC: 8, prioTC: [16]uint8{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 1, 1, 3, 3, 3, 3}, hw: 1}
	u := func(w string, bits int) (uint64, bool) {
		v, err := units.GetUnsigned(w, 10)
		return uint64(v), err == nil && uint64(v) < 1<<bits
	}
	pairs, bwRate := 0, false
	for i := 0; i < len(args); i++ {
		w := args[i]
		// list reads the words after w while each is an element, as
		// tc's "NEXT_ARG; if it fails, PREV_ARG; break" loops do.
		list := func(max int, elem func(string) bool) int {
			k := 0
			for k < max && i+1 < len(args) && elem(args[i+1]) {
				i++
				k++
			}
			return k
		}
		// u8 is tc's NEXT_ARG and get_u8 for w's value.
		u8 := func(dst *uint8) error {
			if i+1 >= len(args) {
				return qdisc.Parsef("mqprio", "Command line is not complete after %q", w)
			}
			i++
			v, ok := u(args[i], 8)
			if !ok {
				return qdisc.Parsef("mqprio", "Illegal %q", w)
			}
			*dst = uint8(v)
			return nil
		}
		switch {
		case w == "num_tc":
			if err := u8(&o.numTC); err != nil {
				return o, err
			}
		case w == "map":
			k := 0
			list(tcMaxQueue, func(a string) bool {
				v, ok := u(a, 8)
				if ok {
					o.prioTC[k] = uint8(v)
					k++
				}
				return ok
			})
			for ; k < tcMaxQueue; k++ {
				o.prioTC[k] = 0
			}
		case w == "queues":
			k := 0
			pairs += list(tcMaxQueue, func(a string) bool {
				c, off, found := strings.Cut(a, "@")
				cv, ok1 := u(c, 16)
				ov, ok2 := u(off, 16)
				if !found || !ok1 || !ok2 {
					return false
				}
				o.count[k], o.offset[k] = uint16(cv), uint16(ov)
				k++
				return true
			})
		case w == "fp":
			list(tcMaxQueue, func(a string) bool { return a == "E" || a == "P" })
			o.attrs = true // TCA_MQPRIO_TC_ENTRY, even for none
		case w == "hw":
			if err := u8(&o.hw); err != nil {
				return o, err
			}
		case o.hw != 0 && (w == "mode" || w == "shaper"):
			if i+1 >= len(args) {
				return o, qdisc.Parsef("mqprio", "Command line is not complete after %q", w)
			}
			i++
			v := args[i]
			switch {
			case w == "mode" && tc.Matches(v, "dcb"):
			case w == "mode" && tc.Matches(v, "channel"):
				o.attrs = true
			case w == "shaper" && tc.Matches(v, "dcb"):
			case w == "shaper" && tc.Matches(v, "bw_rlimit"):
				if i+1 >= len(args) {
					return o, qdisc.Parsef("mqprio", "Incomplete shaper arguments")
				}
				o.attrs, bwRate = true, true
			default:
				return o, qdisc.Parsef("mqprio", "Illegal %s (%s)", w, v)
			}
		case bwRate && (w == "min_rate" || w == "max_rate"):
			k := list(tcMaxQueue, func(a string) bool { _, err := units.GetRate64(a); return err == nil })
			if k < int(o.numTC) && i+1 >= len(args) {
				return o, qdisc.Parsef("mqprio", "Incomplete arguments, %s values expected", w)
			}
		default:
			return o, qdisc.Parsef("mqprio", "Error: argument %q is wrong: unknown argument", w)
		}
	}
	if pairs > int(o.numTC) {
		return o, qdisc.Parsef("mqprio", "queues count/offset pair count %d can not be higher than given num_tc %d", pairs, o.numTC)
	}
	return o, nil
}

// mqprioInit is mqprio_init's checks (validate). A refusal runs
// mqprio_destroy all the same (qdisc_create's err_out5), whose
// netdev_set_num_tc(dev, 0) takes the device's traffic classes and XPS
// maps: a failed `tc qdisc add ... mqprio` changes the device, as in the
// kernel.
func (d *Device) mqprioInit(o mqprioOpt) error {
	err := o.validate(len(d.Queues))
	var oe *qdisc.OptionError
	if errors.As(err, &oe) && oe.Class == qdisc.ErrKernel {
		d.setNumTC(0)
	}
	return err
}

// CheckMQPrio is what tc and mqprio_init say to mqprio's words on a
// device of queues TX queues, with nothing changed (a script's check).
func CheckMQPrio(args []string, queues int) error {
	o, err := parseMQPrio(args)
	if err != nil {
		return err
	}
	return o.validate(queues)
}

// validate is mqprio_init's checks on a device of nq TX queues: a
// multiqueue device, then mqprio_parse_opt's (mqprio_validate_qopt, with
// hw 0 the queue ranges too, which must not overlap) and
// mqprio_parse_nlattr's; hw 1 is not modelled.
func (o mqprioOpt) validate(nq int) error {
	if nq < 2 { // !netif_is_multiqueue
		return kernelf("RTNETLINK answers: Operation not supported (mqprio needs a multiqueue device, this one has %d queue)", nq)
	}
	m := qdisc.TCMap{NumTC: int(o.numTC), PrioTC: o.prioTC, Count: o.count, Offset: o.offset}
	if msg := m.InvalidMap(); msg != "" {
		return kernelf("%s", msg)
	}
	if o.hw != 0 {
		// The queue counts are then the driver's to check or set.
		return qdisc.Lacksf("mqprio", "hw %d (the driver's offload through ndo_setup_tc: DCB, or ice's channels) is not modelled; write \"hw 0\" for the kernel's own mapping", o.hw)
	}
	if msg := m.InvalidQueues(nq); msg != "" {
		return kernelf("%s", msg)
	}
	if o.attrs {
		return kernelf("Error: mqprio TCA_OPTIONS can only contain netlink attributes in hardware mode.")
	}
	return nil
}

// mqprioApply is the end of mqprio_init with hw 0: the device's traffic
// classes, its XPS maps gone.
func (d *Device) mqprioApply(o mqprioOpt) {
	d.setNumTC(int(o.numTC))
	for i := 0; i < int(o.numTC); i++ {
		d.tc.toTxq[i] = tcTxq{count: o.count[i], offset: o.offset[i]}
	}
	d.tc.prioTC = o.prioTC
}

// MQPrioOptions is tc's mqprio_print_opt of 6.12's mqprio_dump (the
// device's mapping as mqprio_qopt_reconstruct reads it back, hw 0, and
// the sixteen TCA_MQPRIO_TC_ENTRY nests it always adds, so the mode,
// shaper and fp lines follow; print_nl ends the fp line, so tc leaves a
// blank line before the statistics).
func (d *Device) MQPrioOptions() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tc %d map ", d.tc.num)
	for _, c := range d.tc.prioTC {
		fmt.Fprintf(&b, "%d ", c)
	}
	b.WriteString("\n             queues:")
	for i := 0; i < d.tc.num; i++ {
		r := d.tc.toTxq[i]
		fmt.Fprintf(&b, "(%d:%d) ", r.offset, int(r.offset)+int(r.count)-1)
	}
	b.WriteString("\n             mode:dcb\n             shaper:dcb\n             fp:")
	for range tcMaxQueue {
		b.WriteString(" E")
	}
	b.WriteString("\n")
	return b.String()
}

// TxqToTC is netdev_txq_to_tc (txqToTC): mqprio_dump_class's parent
// for queue i's class is MAJ:ffe0 plus it, none when it is -1.
func (d *Device) TxqToTC(i int) int { return d.txqToTC(i) }

// NumTC is the device's num_tc: mqprio's traffic classes.
func (d *Device) NumTC() int { return d.tc.num }

// MQPrioQueues are the queues of traffic class k (mqprio_dump_class_stats
// sums their qdiscs).
func (d *Device) MQPrioQueues(k int) (offset, count int) {
	r := d.tc.toTxq[k]
	return int(r.offset), int(r.count)
}

// applyTCMap is what a root qdisc's Info.TCMap asks (taprio_change's
// netdev_set_num_tc, netdev_set_tc_queue, netdev_set_prio_tc_map),
// checked first against the device: a plugin's map is input.
func (d *Device) applyTCMap(kind string, m *qdisc.TCMap) error {
	if msg := m.Invalid(len(d.Queues)); msg != "" {
		return fmt.Errorf("qdisc %s set the device's traffic classes wrong: %s", kind, msg)
	}
	d.setNumTC(m.NumTC)
	d.tc.toTxq = [tcMaxQueue]tcTxq{}
	for i := 0; i < m.NumTC; i++ {
		d.tc.toTxq[i] = tcTxq{count: m.Count[i], offset: m.Offset[i]}
	}
	d.tc.prioTC = m.PrioTC
	return nil
}
