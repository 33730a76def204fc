package htb

import (
	"fmt"
	"math"
	"strings"

	"github.com/txlab/txlab/framework/psched"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

// copt is struct tc_htb_opt with TCA_HTB_RATE64/CEIL64, as tc's
// htb_parse_class_opt builds it (its arithmetic and option words are
// framework/psched's, the shapers').
type copt struct {
	rate, ceil          uint64 // bytes/s
	bufTicks, cbufTicks uint32
	quantum             uint32
	prio                uint32
	mpu, overhead       uint16
	linklayer           uint8
}

// parseClass is htb_parse_class_opt. devSpeed is the link's bits/s (for
// a rate in percent).
func parseClass(args []string, devSpeed int64) (copt, error) {
	o := copt{linklayer: psched.LinkEthernet}
	mtu := uint32(1600)
	var buffer uint64 // get_size64_and_cell: a 64-bit burst
	var cbuffer uint32
	a := qdisc.NewArgs("htb", args)
	rate := func(k string, dst *uint64) error {
		v, err := a.Value(k)
		if err != nil {
			return err
		}
		if *dst != 0 {
			return qdisc.Parsef("htb", "Double %q spec", k)
		}
		var r uint64
		var perr error
		if strings.Contains(v, "%") {
			r, perr = psched.PercentRate64(v, devSpeed)
		} else {
			r, perr = units.GetRate64(v)
		}
		if perr != nil {
			return qdisc.Parsef("htb", "Illegal %q %q: %v", k, v, perr)
		}
		*dst = r
		return nil
	}
	// size is get_size64_and_cell (bits 64) or get_size_and_cell (32):
	// the cell is read and ignored.
	size := func(k string, bits int) (uint64, error) {
		v, err := a.Value(k)
		if err != nil {
			return 0, err
		}
		n, _, perr := psched.SizeAndCell(v)
		if perr == nil && bits == 32 && n > math.MaxUint32 {
			perr = fmt.Errorf("%q is out of range: a 32-bit size is at most 4294967295 bytes (4Gb)", v)
		}
		if perr != nil {
			return 0, qdisc.Parsef("htb", "Illegal %q %q: %v", k, v, perr)
		}
		return n, nil
	}
	u32 := func(k string, dst *uint32) error {
		v, err := a.Value(k)
		if err != nil {
			return err
		}
		n, perr := units.GetUnsigned(v, 10)
		if perr != nil {
			return qdisc.Parsef("htb", "Illegal %q %q", k, v)
		}
		*dst = n
		return nil
	}
	u16 := func(k string, dst *uint16) error {
		var n uint32
		if err := u32(k, &n); err != nil {
			return err
		}
		if n > math.MaxUint16 {
			return qdisc.Parsef("htb", "Illegal %q %d", k, n)
		}
		*dst = uint16(n)
		return nil
	}
	for k := a.Next(); k != ""; k = a.Next() {
		var err error
		switch {
		case psched.Matches(k, "prio"):
			err = u32(k, &o.prio)
		case psched.Matches(k, "mtu"):
			err = u32(k, &mtu)
		case psched.Matches(k, "mpu"):
			err = u16(k, &o.mpu)
		case psched.Matches(k, "overhead"):
			err = u16(k, &o.overhead)
		case psched.Matches(k, "linklayer"):
			v, verr := a.Value(k)
			if verr != nil {
				err = verr
			} else if o.linklayer, err = psched.Linklayer(v); err != nil {
				err = qdisc.Parsef("htb", "Illegal \"linklayer\" %q", v)
			}
		case psched.Matches(k, "quantum"):
			err = u32(k, &o.quantum)
		case psched.Matches(k, "burst"), k == "buffer", k == "maxburst":
			buffer, err = size(k, 64)
		case psched.Matches(k, "cburst"), k == "cbuffer", k == "cmaxburst":
			var n uint64
			n, err = size(k, 32)
			cbuffer = uint32(n)
		case k == "ceil":
			err = rate(k, &o.ceil)
		case k == "rate":
			err = rate(k, &o.rate)
		default:
			err = qdisc.Parsef("htb", "What is %q?", k)
		}
		if err != nil {
			return o, err
		}
	}
	if o.rate == 0 {
		return o, qdisc.Parsef("htb", `"rate" is required.`)
	}
	if o.ceil == 0 {
		o.ceil = o.rate // if ceil params are missing, use the same as rate
	}
	// The minimal burst: a tick's worth at the rate plus the mtu.
	if buffer == 0 {
		buffer = o.rate/psched.Hz + uint64(mtu)
	}
	if cbuffer == 0 {
		cbuffer = uint32(o.ceil/psched.Hz) + mtu
	}
	o.bufTicks = psched.CalcXmittime(o.rate, buffer)
	if o.bufTicks == math.MaxUint32 {
		return o, qdisc.Parsef("htb", "burst out of range")
	}
	// (a cburst out of range is not checked: it saturates)
	o.cbufTicks = psched.CalcXmittime(o.ceil, uint64(cbuffer))
	return o, nil
}

// ChangeClass implements qdisc.Classful (htb_change_class).
func (q *HTB) ChangeClass(ctx qdisc.Ctx, req qdisc.ClassReq) error {
	o, err := parseClass(req.Args, q.devSpeed)
	if err != nil {
		return err
	}
	if o.ceil < o.rate {
		return qdisc.Lacksf("htb", "class %s: ceil %s is below rate %s: tc and the kernel accept it (the class is capped at ceil and never reaches its rate); txlab refuses it as a mistake",
			req.ID, units.SprintRate(o.ceil), units.SprintRate(o.rate))
	}
	cl := q.find(req.ID)
	if cl == nil {
		if err := q.newClass(ctx, req, &o); err != nil {
			return err
		}
		cl = q.classes[req.ID]
	}
	cl.rate = psched.Precompute(0, o.rate, o.overhead, o.mpu, o.linklayer)
	cl.ceil = psched.Precompute(0, o.ceil, o.overhead, o.mpu, o.linklayer)
	var warn error
	if cl.level == 0 {
		quantum := min(cl.rate.RateBytesPs/uint64(q.r2q), math.MaxInt32)
		cl.quantum = int32(quantum)
		switch {
		case o.quantum == 0 && cl.quantum < 1000:
			warn = qdisc.Warnf("sch_htb", "quantum of class %X is small. Consider r2q change.", uint32(cl.id))
			cl.quantum = 1000
		case o.quantum == 0 && cl.quantum > 200000:
			warn = qdisc.Warnf("sch_htb", "quantum of class %X is big. Consider r2q change.", uint32(cl.id))
			cl.quantum = 200000
		}
		if o.quantum != 0 {
			cl.quantum = int32(o.quantum) // cl->quantum = hopt->quantum
		}
		cl.prio = int(min(o.prio, NumPrio-1))
	}
	cl.buffer, cl.cbuffer = int64(psched.TicksToNs(uint64(o.bufTicks))), int64(psched.TicksToNs(uint64(o.cbufTicks)))
	cl.bufTicks, cl.cbufTicks, cl.quantumSet = o.bufTicks, o.cbufTicks, o.quantum != 0
	q.clhash.Grow()
	return warn
}

// newClass is the new-class half of htb_change_class.
func (q *HTB) newClass(ctx qdisc.Ctx, req qdisc.ClassReq, o *copt) error {
	if req.ID == 0 || req.ID.Major() != q.handle {
		return qdisc.Refusef("htb", "RTNETLINK answers: Invalid argument (classid %s is not of qdisc %x:)", req.ID, q.handle)
	}
	var parent *class
	if req.Parent != qdisc.RootClass {
		parent = q.find(req.Parent)
		if parent == nil && req.Parent.Minor() != 0 {
			return qdisc.Lacksf("htb", "class %s: parent class %s does not exist: the kernel makes %s a root class instead; txlab refuses it (add the parent first, or write \"parent %x:\")",
				req.ID, req.Parent, req.ID, q.handle)
		}
	}
	// check maximal depth
	if parent != nil && parent.parent != nil && parent.parent.level < 2 {
		return qdisc.Refusef("htb", "Error: sch_htb: tree is too deep (class %s under %s).", req.ID, parent.id)
	}
	cl := &class{id: req.ID}
	if parent != nil && parent.level == 0 {
		// turn parent into an inner node: its leaf's packets are purged
		// (the host destroys the leaf after this call)
		q.drops += uint64(q.leaves.Remove(parent.id).Qlen)
		q.htbDeactivate(parent)
		// remove from the event list because of the level change
		if parent.cmode != canSend {
			q.hlevel[0].waitPQ.erase(parent)
			parent.cmode = canSend
		}
		if parent.parent != nil {
			parent.level = parent.parent.level - 1
		} else {
			parent.level = MaxDepth - 1
		}
		parent.clearUnion()
	}
	cl.clearUnion()
	cl.parent = parent
	// set class to be in HTB_CAN_SEND state
	cl.tokens, cl.ctokens = int64(psched.TicksToNs(uint64(o.bufTicks))), int64(psched.TicksToNs(uint64(o.cbufTicks)))
	cl.mbuffer = 60 * int64(1e9) // 1min
	cl.tc = int64(ctx.Now())
	cl.cmode = canSend
	q.clhash.Insert(cl.id, cl)
	q.classes[cl.id] = cl
	if parent != nil {
		parent.children++
	}
	return nil
}

// DeleteClass implements qdisc.Classful (htb_delete).
func (q *HTB) DeleteClass(ctx qdisc.Ctx, id qdisc.ClassID) error {
	cl := q.find(id)
	if cl == nil {
		return qdisc.Refusef("htb", "RTNETLINK answers: No such file or directory (class %s)", id)
	}
	if cl.children > 0 {
		return qdisc.Refusef("htb", "Error: HTB class in use (%s has %d children).", id, cl.children)
	}
	lastChild := cl.level == 0 && cl.parent != nil && cl.parent.children == 1
	if cl.level == 0 {
		q.drops += uint64(q.leaves.Remove(id).Qlen) // qdisc_purge_queue
	}
	q.clhash.Remove(cl.id)
	delete(q.classes, id)
	if cl.parent != nil {
		cl.parent.children--
	}
	q.htbDeactivate(cl)
	if cl.cmode != canSend {
		q.hlevel[cl.level].waitPQ.erase(cl)
	}
	if lastChild {
		// htb_parent_to_leaf: the parent gets a leaf (pfifo) again
		p := cl.parent
		if p.cmode != canSend {
			q.hlevel[p.level].waitPQ.erase(p)
		}
		p.level = 0
		p.clearUnion()
		p.tokens, p.ctokens = p.buffer, p.cbuffer
		p.tc = int64(ctx.Now())
		p.cmode = canSend
	}
	return nil
}

// Classes implements qdisc.Classful: htb_walk's order with
// htb_dump_class and htb_dump_class_stats.
func (q *HTB) Classes() []qdisc.Class {
	var out []qdisc.Class
	for _, cl := range q.clhash.Walk() {
		parent := qdisc.RootClass
		if cl.parent != nil {
			parent = cl.parent.id
		}
		out = append(out, qdisc.Class{ID: cl.id, Parent: parent, Leaf: cl.level == 0, Filters: true,
			Options: q.dumpClass(cl), SentPackets: cl.packets, SentBytes: cl.bytes, Drops: cl.drops, Overlimits: cl.overlimits,
			XStats: []qdisc.XStat{qdisc.XUint("lended", cl.lends), qdisc.XUint("borrowed", cl.borrows), qdisc.XUint("giants", cl.giants),
				qdisc.XInt("tokens", clamp32(psched.SignedNsToTicks(cl.tokens))), qdisc.XInt("ctokens", clamp32(psched.SignedNsToTicks(cl.ctokens)))}})
	}
	return out
}

func clamp32(v int64) int64 { return max(min(v, math.MaxInt32), math.MinInt32) }

// dumpClass is htb_print_opt of a class with -d.
func (q *HTB) dumpClass(cl *class) string {
	var b strings.Builder
	if cl.level == 0 {
		fmt.Fprintf(&b, "prio %d quantum %d ", cl.prio, cl.quantum)
	}
	fmt.Fprintf(&b, "rate %s ", units.SprintRate(cl.rate.RateBytesPs))
	if cl.rate.Overhead != 0 {
		fmt.Fprintf(&b, "overhead %d ", cl.rate.Overhead)
	}
	fmt.Fprintf(&b, "ceil %s ", units.SprintRate(cl.ceil.RateBytesPs))
	fmt.Fprintf(&b, "linklayer %s ", psched.LinkName(cl.rate.Linklayer))
	fmt.Fprintf(&b, "burst %s/1 mpu %s ", units.SprintSize(psched.CalcXmitsize(cl.rate.RateBytesPs, cl.bufTicks)), units.SprintSize(uint64(cl.rate.Mpu)))
	fmt.Fprintf(&b, "cburst %s/1 mpu %s ", units.SprintSize(psched.CalcXmitsize(cl.ceil.RateBytesPs, cl.cbufTicks)), units.SprintSize(uint64(cl.ceil.Mpu)))
	fmt.Fprintf(&b, "level %d ", cl.level)
	return b.String()
}
