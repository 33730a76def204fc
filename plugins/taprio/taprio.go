// Package taprio is the kernel's taprio qdisc (net/sched/sch_taprio.c),
// its software path: IEEE 802.1Q time-aware scheduling. The root of a
// multiqueue device, it writes the device's traffic classes (num_tc,
// map, queues: as mqprio's, so netdev_pick_tx picks within the packet's
// class) and holds one child per TX queue (class X:N+1 of queue N, a
// pfifo unless one is grafted). A gate control list of entries, each a
// gate mask held for an interval, repeats every cycle from base-time on
// the chosen clock; dequeue serves the highest open traffic class first,
// round robin over its queues, and sends a packet only if it fits in
// what is left of its gate's open time at the link's speed (the guard
// band) and of the entry's byte budget. The hrtimer that moves the list
// on (advance_sched) reschedules the root at every entry.
//
// Not modelled: txtime-assist (flags 0x1, which needs etf children and
// SO_TXTIME sockets) and full offload (flags 0x2, the NIC's own gates),
// frame preemption (fp P), a size table's overhead in the max-SDU, and
// the segmentation of a GSO skb over a class's max-SDU (dropped whole).
package taprio

import (
	"fmt"
	"math"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
)

func init() {
	qdisc.Register("taprio", "Time Aware Priority (802.1Qbv), software: a gate control list over traffic classes mapped to TX queues, one child per queue, guard bands and byte budgets (sch_taprio.c)",
		func() qdisc.Qdisc { return &Taprio{clockid: -1, flags: flagsInvalid} })
}

const (
	flagsInvalid    = math.MaxUint32 // TAPRIO_FLAGS_INVALID
	picosPerByteMin = 17             // TAPRIO_PICOS_PER_BYTE_MIN
	ethZlen         = 60             // ETH_ZLEN
	hardHeaderLen   = 14             // dev->hard_header_len on Ethernet
	ktimeMax        = math.MaxInt64
)

// entry is struct sched_entry.
type entry struct {
	index        int
	command      uint8
	gateMask     uint32
	interval     uint32
	gateDuration [tcQoptMaxQueue]uint64
	budget       [tcQoptMaxQueue]int32
	gateClose    [tcQoptMaxQueue]int64
	endTime      int64
}

// gateList is struct sched_gate_list.
type gateList struct {
	entries    []*entry
	maxOpen    [tcQoptMaxQueue]uint64
	maxFrmLen  [tcQoptMaxQueue]uint32
	maxSDU     [tcQoptMaxQueue]uint32
	cycleEnd   int64
	cycle, ext int64
	base       int64
}

// Taprio is struct taprio_sched; the children are the host's leaves.
type Taprio struct {
	handle       uint16
	ntxq         int // dev->num_tx_queues
	maxMTU       uint32
	flags        uint32
	clockid      int32
	tkOffset     int64 // the clock less the monotonic one (ktime_mono_to_any)
	picosPerByte int64
	tcmap        qdisc.TCMap // the device's, as this qdisc set it
	current      *entry      // current_entry: nil until the schedule starts
	oper, admin  *gateList
	timer        int64 // the advance timer's expiry on the qdisc's clock, 0 unarmed
	curTxq       [tcQoptMaxQueue]int
	maxSDU       [tcQoptMaxQueue]uint32 // the user's
	fp           [tcQoptMaxQueue]uint32

	leaves qdisc.LeafTable
	drops  uint64
	batch  qdisc.LeafBatch
}

// now is taprio_get_time: the monotonic clock moved to the schedule's.
func (q *Taprio) now(ctx qdisc.Ctx) int64 { return int64(ctx.Now()) + q.tkOffset }

// lengthToDuration is length_to_duration.
func (q *Taprio) lengthToDuration(n int) int64 { return int64(n) * q.picosPerByte / 1000 }

// durationToLength is duration_to_length.
func (q *Taprio) durationToLength(d uint64) uint32 { return uint32(d * 1000 / uint64(q.picosPerByte)) }

func (q *Taprio) class(txq int) qdisc.ClassID { return qdisc.MakeClassID(q.handle, uint16(txq+1)) }

// Init implements qdisc.Qdisc (taprio_init, then taprio_change): the
// root of a multiqueue device, a pfifo per TX queue (the host's leaves of
// classes X:1..X:N).
func (q *Taprio) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	if s.Parent != "root" {
		return qdisc.Info{}, taprioErr("Can only be attached as root qdisc")
	}
	if s.DevTxQ < 2 {
		return qdisc.Info{}, taprioErr("Multi-queue device is required")
	}
	q.handle, q.ntxq = uint16(s.Major()), s.DevTxQ
	q.maxMTU = uint32(s.DevMTU)
	for tc := range q.fp {
		q.fp[tc] = tcFPExpress
	}
	q.setPicosPerByte(s.RateBps)
	return q.change(ctx, args)
}

// Change implements qdisc.Changer (taprio_change on a running qdisc: a
// new admin schedule, operational at its start).
func (q *Taprio) Change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	return q.change(ctx, args)
}

// setPicosPerByte is taprio_set_picos_per_byte: the link speed in Mbit/s,
// 10 when unknown.
func (q *Taprio) setPicosPerByte(rateBps int64) {
	speed := rateBps / 1_000_000
	if speed <= 0 {
		speed = 10 // SPEED_10
	}
	q.picosPerByte = max(1_000_000*8/speed, picosPerByteMin)
}

// change is taprio_change.
func (q *Taprio) change(ctx qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	switch {
	case o.flags&^(flagTxtimeAssist|flagFullOffload) != 0:
		return qdisc.Info{}, kernelErr("Error: Attribute failed policy validation.")
	case o.flags&flagTxtimeAssist != 0 && o.flags&flagFullOffload != 0:
		return qdisc.Info{}, kernelErr("Error: TXTIME_ASSIST and FULL_OFFLOAD are mutually exclusive.")
	case q.flags != flagsInvalid && q.flags != o.flags:
		return qdisc.Info{}, taprioErr("Changing 'flags' of a running schedule is not supported")
	case o.flags != 0:
		return qdisc.Info{}, qdisc.Lacksf("taprio", "flags %#x (txtime-assist, full offload) is not modelled: the software schedule only", o.flags)
	case o.cycle < 0 || o.cycle > cycleTimeMax || o.ext < 0:
		return qdisc.Info{}, kernelErr("Error: integer out of range.")
	}
	q.flags = o.flags
	if o.mqprio != nil {
		if err := validateMQPrio(o.mqprio, q.ntxq); err != nil {
			return qdisc.Info{}, err
		}
	} else if q.tcmap.NumTC == 0 {
		return qdisc.Info{}, kernelErr("Error: 'mqprio' configuration is necessary.")
	}
	// taprio_parse_tc_entries
	if n := max(o.nMaxSDU, o.nFP); n > tcQoptMaxQueue {
		return qdisc.Info{}, taprioErr("TC entry index out of range")
	}
	maxSDU, fp := q.maxSDU, q.fp
	for tc := 0; tc < o.nMaxSDU; tc++ {
		if o.maxSDU[tc] > q.maxMTU {
			return qdisc.Info{}, taprioErr("TC max SDU exceeds device max MTU")
		}
		maxSDU[tc] = o.maxSDU[tc]
	}
	for tc := 0; tc < o.nFP; tc++ {
		fp[tc] = o.fp[tc]
	}
	for _, v := range fp {
		if v != tcFPExpress {
			return qdisc.Info{}, kernelErr("Error: Preemption only supported with full offload.")
		}
	}
	q.maxSDU, q.fp = maxSDU, fp
	if o.mqprio != nil && *o.mqprio == q.tcmap {
		o.mqprio = nil // taprio_mqprio_cmp: no change
	}
	if o.mqprio != nil && (q.oper != nil || q.admin != nil) {
		return qdisc.Info{}, kernelErr("Error: Changing the traffic mapping of a running schedule is not supported.")
	}
	var info qdisc.Info
	if o.mqprio != nil {
		q.tcmap = *o.mqprio
		for tc := 0; tc < q.tcmap.NumTC; tc++ {
			q.curTxq[tc] = int(q.tcmap.Offset[tc])
		}
		m := q.tcmap
		info.TCMap = &m
	}
	admin, err := q.parseSchedule(o)
	if err != nil {
		return info, err
	}
	if err := q.parseClockid(o); err != nil {
		return info, err
	}
	q.updateQueueMaxSDU(admin)
	if o.txDelay != 0 {
		return info, taprioErr("txtime-delay can only be set when txtime-assist mode is enabled")
	}
	start := q.startTime(ctx, admin)
	q.setupFirstEndTime(admin, start)
	q.startSched(ctx, start)
	q.admin = admin
	return info, nil
}

// parseSchedule is parse_taprio_schedule with fill_sched_entry's check.
func (q *Taprio) parseSchedule(o opts) (*gateList, error) {
	g := &gateList{base: o.base, cycle: o.cycle, ext: o.ext}
	minDuration := q.lengthToDuration(ethZlen)
	for i, e := range o.entries {
		if int64(e.interval) < minDuration {
			return nil, kernelErr("Error: Invalid interval for schedule entry.")
		}
		g.entries = append(g.entries, &entry{index: i, command: e.cmd, gateMask: e.gateMask, interval: e.interval})
	}
	if len(g.entries) == 0 {
		return nil, kernelErr("Error: There should be at least one entry in the schedule.")
	}
	if g.cycle == 0 {
		var cycle int64
		for _, e := range g.entries {
			cycle += int64(e.interval)
		}
		if cycle > math.MaxInt32 {
			return nil, kernelErr("Error: 'cycle_time' is too big.")
		}
		g.cycle = cycle
	}
	if g.cycle < int64(len(g.entries))*minDuration {
		return nil, kernelErr("Error: 'cycle_time' is too small.")
	}
	q.calculateGateDurations(g)
	return g, nil
}

// parseClockid is taprio_parse_clockid (software): mandatory, and fixed
// once set.
func (q *Taprio) parseClockid(o opts) error {
	switch {
	case o.clockid == -1:
		return kernelErr("Error: Specifying a 'clockid' is mandatory.")
	case q.clockid != -1 && q.clockid != o.clockid:
		return kernelErr("Error: Changing the 'clockid' of a running schedule is not supported.")
	}
	q.clockid = o.clockid
	off, _ := sim.ClockOffset(int(o.clockid)) // get_clockid knows no other
	q.tkOffset = int64(off)
	return nil
}

// calculateGateDurations is taprio_calculate_gate_durations: for each
// entry and class, how long its gate stays open from that entry on.
func (q *Taprio) calculateGateDurations(g *gateList) {
	n := len(g.entries)
	for i, e := range g.entries {
		open := e.gateMask
		for k := 0; k < n && open != 0; k++ {
			cur := g.entries[(i+k)%n]
			for tc := 0; tc < q.tcmap.NumTC; tc++ {
				if open&(1<<tc) == 0 {
					continue
				}
				if cur.gateMask&(1<<tc) != 0 {
					e.gateDuration[tc] += uint64(cur.interval)
				} else {
					open &^= 1 << tc
				}
			}
		}
		for tc := 0; tc < q.tcmap.NumTC; tc++ {
			if e.gateDuration[tc] != 0 && g.maxOpen[tc] < e.gateDuration[tc] {
				g.maxOpen[tc] = e.gateDuration[tc]
			}
		}
	}
}

// updateQueueMaxSDU is taprio_update_queue_max_sdu (no size table): the
// smaller of the user's max-SDU and what the longest open gate carries.
func (q *Taprio) updateQueueMaxSDU(g *gateList) {
	for tc := 0; tc < q.tcmap.NumTC; tc++ {
		user := q.maxSDU[tc]
		if user == 0 {
			user = math.MaxUint32
		}
		dynamic := uint32(math.MaxUint32)
		if int64(g.maxOpen[tc]) != g.cycle {
			frm := q.durationToLength(g.maxOpen[tc])
			dynamic = frm - hardHeaderLen
			if dynamic > q.maxMTU {
				dynamic = math.MaxUint32
			}
		}
		if m := min(user, dynamic); m != math.MaxUint32 {
			g.maxFrmLen[tc], g.maxSDU[tc] = m+hardHeaderLen, m
		} else {
			g.maxFrmLen[tc], g.maxSDU[tc] = math.MaxUint32, 0
		}
	}
}

// startTime is taprio_get_start_time: base-time if it is still ahead,
// else the next cycle's start counted from it.
func (q *Taprio) startTime(ctx qdisc.Ctx, g *gateList) int64 {
	now := q.now(ctx)
	if g.base > now {
		return g.base
	}
	n := (now - g.base) / g.cycle
	return g.base + (n+1)*g.cycle
}

// setupFirstEndTime is setup_first_end_time: the first entry's end,
// budgets and gate closes, and no current entry (every gate open) until
// the timer fires.
func (q *Taprio) setupFirstEndTime(g *gateList, start int64) {
	first := g.entries[0]
	g.cycleEnd = start + g.cycle
	first.endTime = start + int64(first.interval)
	q.setBudgets(g, first)
	for tc := 0; tc < q.tcmap.NumTC; tc++ {
		if int64(first.gateDuration[tc]) == g.cycle {
			first.gateClose[tc] = ktimeMax
		} else {
			first.gateClose[tc] = start + int64(first.gateDuration[tc])
		}
	}
	q.current = nil
}

// startSched is taprio_start_sched: the advance timer at the new
// schedule's start, if that is before its expiry.
func (q *Taprio) startSched(ctx qdisc.Ctx, start int64) {
	expires := q.timer
	if expires == 0 {
		expires = ktimeMax
	}
	q.armTimer(ctx, min(start, expires))
}

// armTimer is hrtimer_start on the schedule's clock.
func (q *Taprio) armTimer(ctx qdisc.Ctx, at int64) {
	q.timer = at
	ctx.ModTimer(sim.Time(at - q.tkOffset))
}

// setBudgets is taprio_set_budgets: the bytes each class may send in
// its gate's open time from entry e (INT_MAX for a gate never closed).
func (q *Taprio) setBudgets(g *gateList, e *entry) {
	for tc := 0; tc < q.tcmap.NumTC; tc++ {
		if int64(e.gateDuration[tc]) == g.cycle {
			e.budget[tc] = math.MaxInt32
		} else {
			e.budget[tc] = int32(e.gateDuration[tc] * 1000 / uint64(q.picosPerByte))
		}
	}
}

// updateBudgets is taprio_update_budgets: a packet sent takes from every
// class's budget; the sending class's budget after.
func (q *Taprio) updateBudgets(e *entry, n int32, consumed int) int32 {
	var out int32
	for tc := 0; tc < q.tcmap.NumTC; tc++ {
		if e.budget[tc] == math.MaxInt32 {
			if tc == consumed {
				out = math.MaxInt32
			}
			continue
		}
		e.budget[tc] -= n
		if tc == consumed {
			out = e.budget[tc]
		}
	}
	return out
}

// Timer implements qdisc.TimerQdisc: advance_sched, the hrtimer at the
// current entry's end. It moves the list on (to the admin schedule when
// that starts), sets the next entry's gate closes and budgets, re-arms
// itself at its end and reschedules the root (__netif_schedule).
func (q *Taprio) Timer(ctx qdisc.Ctx) {
	e, oper, admin := q.current, q.oper, q.admin
	if oper == nil {
		q.oper, q.admin = admin, nil // switch_schedules
		oper, admin = q.oper, nil
	}
	var next *entry
	var end int64
	if e == nil || e.endTime == oper.base {
		next = oper.entries[0]
		end = next.endTime
	} else {
		if q.shouldRestartCycle(oper, e) {
			next = oper.entries[0]
			oper.cycleEnd += oper.cycle
		} else {
			next = oper.entries[e.index+1]
		}
		end = min(e.endTime+int64(next.interval), oper.cycleEnd)
		for tc := 0; tc < q.tcmap.NumTC; tc++ {
			if int64(next.gateDuration[tc]) == oper.cycle {
				next.gateClose[tc] = ktimeMax
			} else {
				next.gateClose[tc] = e.endTime + int64(next.gateDuration[tc])
			}
		}
		if shouldChangeSchedules(admin, oper, end) {
			q.oper, q.admin = admin, nil
			oper = admin
			next = oper.entries[0]
			end = next.endTime
		}
		next.endTime = end
		q.setBudgets(oper, next)
	}
	q.current = next
	q.armTimer(ctx, end)
	ctx.Watchdog(ctx.Now()) // __netif_schedule(sch)
}

// shouldRestartCycle is should_restart_cycle.
func (q *Taprio) shouldRestartCycle(oper *gateList, e *entry) bool {
	return e.index == len(oper.entries)-1 || e.endTime == oper.cycleEnd
}

// shouldChangeSchedules is should_change_schedules: the admin schedule
// starts by the end of this entry, or within the cycle's extension.
func shouldChangeSchedules(admin, oper *gateList, end int64) bool {
	if admin == nil {
		return false
	}
	return admin.base <= end || admin.base <= end+oper.ext
}

// exceedsMaxSDU is taprio_skb_exceeds_queue_max_sdu: longer than its
// class's max frame length in the operational schedule (none before it
// starts).
func (q *Taprio) exceedsMaxSDU(p *skb.Packet) bool {
	tc := q.tcmap.PrioTC[p.Priority&qdisc.PrioMax]
	return q.oper != nil && p.Len > q.oper.maxFrmLen[tc]
}

// Enqueue implements qdisc.Qdisc (taprio_enqueue): each packet to the
// child of its TX queue, unless it exceeds its class's max-SDU.
func (q *Taprio) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	q.batch.Reset()
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		p := &batch[i]
		txq := int(p.Queue)
		if txq >= q.ntxq {
			txq = 0 // netdev_cap_txqueue
			p.Queue = 0
		}
		if q.exceedsMaxSDU(p) {
			q.drops++
			ctx.Drop(p.Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitDrop
			continue
		}
		q.batch.Add(p, q.class(txq), i)
	}
	q.drops += q.batch.Send(x, &q.leaves, rc)
}

// Dequeue implements qdisc.Qdisc (taprio_dequeue per packet, with
// taprio_dequeue_tc_priority: no driver here reports a broken mqprio).
func (q *Taprio) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.dequeue(ctx, x) })
}

func (q *Taprio) dequeue(ctx qdisc.Ctx, x qdisc.ClassCtx) (skb.Packet, bool) {
	e := q.current
	mask := allGatesOpen // no entry yet: every gate open (802.1Qbv AdminGateStates)
	if e != nil {
		mask = e.gateMask
	}
	if mask == 0 {
		return skb.Packet{}, false
	}
	for tc := q.tcmap.NumTC - 1; tc >= 0; tc-- {
		if mask&(1<<tc) == 0 {
			continue
		}
		first := q.curTxq[tc]
		for {
			p, ok := q.dequeueFromTxq(ctx, x, q.curTxq[tc], e, mask)
			// taprio_next_tc_txq
			q.curTxq[tc]++
			if q.curTxq[tc] == int(q.tcmap.Offset[tc])+int(q.tcmap.Count[tc]) {
				q.curTxq[tc] = int(q.tcmap.Offset[tc])
			}
			if q.curTxq[tc] >= q.ntxq {
				q.curTxq[tc] = first
			}
			if ok {
				return p, true
			}
			if q.curTxq[tc] == first {
				break
			}
		}
	}
	return skb.Packet{}, false
}

// dequeueFromTxq is taprio_dequeue_from_txq: the child's head packet if
// its class's gate is open, it ends before the gate closes (the guard
// band), and the entry's budget holds it.
func (q *Taprio) dequeueFromTxq(ctx qdisc.Ctx, x qdisc.ClassCtx, txq int, e *entry, mask uint32) (skb.Packet, bool) {
	id := q.class(txq)
	ctx.Work(qdisc.WorkFlowScan, 1)
	p, ok, dropped := q.leaves.PeekHead(x, id)
	q.drops += uint64(dropped)
	if !ok {
		return skb.Packet{}, false
	}
	tc := int(q.tcmap.PrioTC[p.Priority&qdisc.PrioMax])
	if mask&(1<<tc) == 0 {
		return skb.Packet{}, false
	}
	if mask != allGatesOpen {
		ctx.Work(qdisc.WorkTstamp, 1)
		guard := q.now(ctx) + q.lengthToDuration(int(p.Len))
		if guard >= e.gateClose[tc] {
			return skb.Packet{}, false
		}
		if q.updateBudgets(e, int32(p.Len), tc) < 0 {
			return skb.Packet{}, false
		}
	}
	p, ok, _, dropped = q.leaves.Dequeue(x, id)
	q.drops += uint64(dropped)
	if ok {
		ctx.Work(qdisc.WorkDequeue, 1)
	}
	return p, ok
}

// Reset implements qdisc.Resetter (taprio_reset: the timer cancelled,
// the host resets the children).
func (q *Taprio) Reset(ctx qdisc.Ctx) {
	ctx.DelTimer() // hrtimer_cancel leaves its expiry, which startSched reads
	q.leaves.Reset()
}

// Stats implements qdisc.Qdisc: the tree's qlen and backlog.
func (q *Taprio) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops}
}

// Dump implements qdisc.Qdisc: tc's taprio_print_opt of taprio_dump (the
// operational schedule and the tc entries once it runs, the admin one
// before and while it waits).
func (q *Taprio) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tc %d map", q.tcmap.NumTC)
	for _, c := range q.tcmap.PrioTC {
		fmt.Fprintf(&b, " %d", c)
	}
	b.WriteString("\nqueues")
	for tc := 0; tc < q.tcmap.NumTC; tc++ {
		fmt.Fprintf(&b, " offset %d count %d", q.tcmap.Offset[tc], q.tcmap.Count[tc])
	}
	fmt.Fprintf(&b, "\nclockid %s", units.ClockName(q.clockid))
	if q.oper != nil {
		writeSchedule(&b, q.oper)
	}
	if q.admin != nil {
		writeSchedule(&b, q.admin)
	}
	if q.oper != nil {
		b.WriteString("max-sdu")
		for _, v := range q.oper.maxSDU {
			fmt.Fprintf(&b, " %d", v)
		}
		b.WriteString("\nfp")
		for _, v := range q.fp {
			b.WriteString(map[uint32]string{tcFPExpress: " E", tcFPPreemptible: " P"}[v])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeSchedule is print_schedule.
func writeSchedule(b *strings.Builder, g *gateList) {
	fmt.Fprintf(b, "\tbase-time %d cycle-time %d cycle-time-extension %d\n", g.base, g.cycle, g.ext)
	for _, e := range g.entries {
		fmt.Fprintf(b, "\tindex %d cmd %c gatemask %#x interval %d\n", e.index, entryCmdLetters[e.command], e.gateMask, e.interval)
	}
}

// ChangeClass implements qdisc.Classful: taprio's class ops have no
// change.
func (q *Taprio) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return kernelErr("RTNETLINK answers: Operation not supported (taprio's classes are its TX queues)")
}

// DeleteClass implements qdisc.Classful: nor a delete.
func (q *Taprio) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return kernelErr("RTNETLINK answers: Operation not supported (taprio's classes are its TX queues)")
}

// Classes implements qdisc.Classful (taprio_walk, taprio_dump_class): a
// class per TX queue, parent root, its stats the child's.
func (q *Taprio) Classes() []qdisc.Class {
	out := make([]qdisc.Class, q.ntxq)
	for i := range out {
		out[i] = qdisc.Class{ID: q.class(i), Parent: qdisc.RootClass, Leaf: true, LeafStats: true}
	}
	return out
}

// QlenNotify implements qdisc.Classful.
func (q *Taprio) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
}
