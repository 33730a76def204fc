package qfq

import "math/bits"

// The constants of sch_qfq.c.
const (
	qfqMaxSlots      = 32 // slots (buckets) of a group
	qfqMaxIndex      = 24 // the last group's index
	qfqMaxWShift     = 10
	qfqMaxWeight     = 1 << qfqMaxWShift
	qfqMaxWSum       = 64 * qfqMaxWeight
	fracBits         = 30 // fixed point of S, F and V
	oneFP            = 1 << fracBits
	qfqMTUShift      = 16
	qfqMinLmax       = 512
	qfqMaxLmax       = 1 << qfqMTUShift
	qfqMaxAggClasses = 8
)

// Group states, enum qfq_state: the bitmaps' indexes (eligible or
// ineligible, ready or blocked).
const (
	er = iota
	ir
	eb
	ib
	qfqMaxState
)

// updateReason is enum update_reason.
type updateReason int

const (
	enqueue updateReason = iota // the aggregate turns active
	requeue                     // it used its budget and is rescheduled
)

// aggregate is struct qfq_aggregate: classes of one weight and lmax,
// timestamped together and served by DRR among themselves.
type aggregate struct {
	S, F        uint64 // exact timestamps
	grp         *group
	classWeight uint32
	lmax        uint32 // the classes' DRR quantum
	invW        uint32 // ONE_FP / (sum of the classes' weights)
	budgetmax   uint32
	initBudget  uint32 // initial_budget
	budget      uint32
	numClasses  int
	active      []*class // the DRR queue, head first

	slot      int  // the group slot whose list holds it, -1: none
	inNonfull bool // on nonfull_aggs
}

// group is struct qfq_group: 32 slots of aggregates by rounded start
// time, slots[front] the first.
type group struct {
	S, F      uint64 // approximate timestamps
	slotShift uint32
	index     uint32
	front     uint32
	fullSlots uint64                    // non-empty slots, bit 0 the front
	slots     [qfqMaxSlots][]*aggregate // each an hlist, its head last
}

// qfqGt is qfq_gt: a > b with wraparound.
func qfqGt(a, b uint64) bool { return int64(a-b) > 0 }

// qfqRoundDown is qfq_round_down.
func qfqRoundDown(ts uint64, shift uint32) uint64 { return ts &^ (1<<shift - 1) }

// qfqFfs is qfq_ffs: the group of lowest index in bitmap.
func (q *QFQ) qfqFfs(bitmap uint64) *group { return &q.groups[bits.TrailingZeros64(bitmap)] }

// maskFrom is mask_from: bitmap from bit from up.
func maskFrom(bitmap uint64, from uint32) uint64 { return bitmap &^ (1<<from - 1) }

// qfqCalcIndex is qfq_calc_index: the group of an aggregate, about
// log2(maxlen / weight) scaled.
func qfqCalcIndex(invW, maxlen, minSlotShift uint32) int {
	slotSize := uint64(maxlen) * uint64(invW)
	sizeMap := slotSize >> minSlotShift
	if sizeMap == 0 {
		return 0
	}
	index := bits.Len64(sizeMap) // __fls + 1
	if slotSize-1<<(uint32(index)+minSlotShift-1) == 0 {
		index--
	}
	return max(index, 0)
}

// qfqInitAgg is qfq_init_agg.
func (q *QFQ) qfqInitAgg(agg *aggregate, lmax, weight uint32) {
	agg.slot = -1
	q.nonfullAdd(agg)
	agg.lmax, agg.classWeight = lmax, weight
}

// nonfullAdd and nonfullDel are hlist_add_head and hlist_del_init on
// nonfull_aggs.
func (q *QFQ) nonfullAdd(agg *aggregate) {
	q.nonfullAggs = append([]*aggregate{agg}, q.nonfullAggs...)
	agg.inNonfull = true
}

func (q *QFQ) nonfullDel(agg *aggregate) {
	if !agg.inNonfull {
		return
	}
	agg.inNonfull = false
	q.nonfullAggs = deleteAgg(q.nonfullAggs, agg)
}

func deleteAgg(s []*aggregate, agg *aggregate) []*aggregate {
	for i, a := range s {
		if a == agg {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// qfqFindAgg is qfq_find_agg: a non-full aggregate of lmax and weight.
func (q *QFQ) qfqFindAgg(lmax, weight uint32) *aggregate {
	for _, agg := range q.nonfullAggs {
		if agg.lmax == lmax && agg.classWeight == weight {
			return agg
		}
	}
	return nil
}

// qfqUpdateAgg is qfq_update_agg: the aggregate's budget and weight
// for its new number of classes; its group is chosen once, at its
// first class.
func (q *QFQ) qfqUpdateAgg(agg *aggregate, newNum int) {
	if newNum == q.maxAggClasses {
		q.nonfullDel(agg)
	}
	if agg.numClasses > newNum && newNum == q.maxAggClasses-1 {
		q.nonfullAdd(agg) // no more full
	}
	// budgetmax may drop below initial_budget: charge_actual_service
	// takes the smaller
	agg.budgetmax = uint32(newNum) * agg.lmax
	agg.invW = oneFP / (agg.classWeight * uint32(newNum))
	if agg.grp == nil {
		agg.grp = &q.groups[qfqCalcIndex(agg.invW, agg.budgetmax, q.minSlotShift)]
	}
	q.wsum += uint32(int32(agg.classWeight) * int32(newNum-agg.numClasses))
	q.iwsum = oneFP / q.wsum
	agg.numClasses = newNum
}

// qfqAddToAgg is qfq_add_to_agg: a class with packets joins the
// aggregate's DRR queue, and an aggregate it wakes is scheduled.
func (q *QFQ) qfqAddToAgg(agg *aggregate, cl *class) {
	cl.agg = agg
	q.qfqUpdateAgg(agg, agg.numClasses+1)
	if q.leaves.Get(cl.id).Qlen > 0 {
		agg.active = append(agg.active, cl)
		cl.active = true
		if agg.active[0] == cl && q.inServAgg != agg {
			q.qfqActivateAgg(agg, enqueue)
		}
	}
}

// qfqDestroyAgg is qfq_destroy_agg.
func (q *QFQ) qfqDestroyAgg(agg *aggregate) {
	q.nonfullDel(agg)
	q.wsum -= agg.classWeight
	if q.wsum != 0 {
		q.iwsum = oneFP / q.wsum
	}
	if q.inServAgg == agg {
		q.inServAgg = q.qfqChooseNextAgg()
	}
}

// qfqDeactivateClass is qfq_deactivate_class: off the DRR queue, and
// an aggregate left with none is descheduled.
func (q *QFQ) qfqDeactivateClass(cl *class) {
	agg := cl.agg
	listDel(cl)
	if len(agg.active) == 0 {
		q.qfqDeactivateAgg(agg)
	}
}

// listDel is list_del_init of the class from its aggregate's queue.
func listDel(cl *class) {
	if !cl.active {
		return
	}
	cl.active = false
	cl.agg.active = deleteClass(cl.agg.active, cl)
}

// listMoveTail is list_move_tail within the aggregate's queue.
func listMoveTail(cl *class) {
	a := deleteClass(cl.agg.active, cl)
	cl.agg.active = append(a, cl)
	cl.active = true
}

func deleteClass(s []*class, cl *class) []*class {
	for i, c := range s {
		if c == cl {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// qfqRmFromAgg is qfq_rm_from_agg: the last class destroys its
// aggregate.
func (q *QFQ) qfqRmFromAgg(cl *class) {
	agg := cl.agg
	cl.agg = nil
	if agg.numClasses == 1 {
		q.qfqDestroyAgg(agg)
		return
	}
	q.qfqUpdateAgg(agg, agg.numClasses-1)
}

// qfqDeactRmFromAgg is qfq_deact_rm_from_agg.
func (q *QFQ) qfqDeactRmFromAgg(cl *class) {
	if cl.active {
		q.qfqDeactivateClass(cl)
	}
	q.qfqRmFromAgg(cl)
}

// qfqChangeAgg is qfq_change_agg: the class moves to the aggregate of
// its new weight and lmax; false is its -EINVAL, an lmax past
// QFQ_MAX_LMAX.
func (q *QFQ) qfqChangeAgg(cl *class, weight, lmax uint32) bool {
	if lmax > qfqMaxLmax {
		return false
	}
	newAgg := q.qfqFindAgg(lmax, weight)
	if newAgg == nil {
		newAgg = &aggregate{}
		q.qfqInitAgg(newAgg, lmax, weight)
	}
	q.qfqDeactRmFromAgg(cl)
	q.qfqAddToAgg(newAgg, cl)
	return true
}

// chargeActualService is charge_actual_service: F from the service
// the aggregate received.
func chargeActualService(agg *aggregate) {
	received := min(agg.budgetmax, agg.initBudget-agg.budget)
	agg.F = agg.S + uint64(received)*uint64(agg.invW)
}

// qfqUpdateStart is qfq_update_start: a start time for an aggregate
// turning active, F if it is not stale, else V or, not to break EB's
// order, the finish time of the first ER group that would block it.
func (q *QFQ) qfqUpdateStart(agg *aggregate) {
	shift := agg.grp.slotShift
	roundedF := qfqRoundDown(agg.F, shift)
	limit := qfqRoundDown(q.V, shift) + 1<<shift
	if !qfqGt(agg.F, q.V) || qfqGt(roundedF, limit) {
		// stale
		if mask := maskFrom(q.bitmaps[er], agg.grp.index); mask != 0 {
			next := q.qfqFfs(mask)
			if qfqGt(roundedF, next.F) {
				if qfqGt(limit, next.F) {
					agg.S = next.F
				} else {
					agg.S = limit // keep the timestamps correct
				}
				return
			}
		}
		agg.S = q.V
	} else {
		agg.S = agg.F
	}
}

// qfqUpdateAggTs is qfq_update_agg_ts: F as if the aggregate used all
// its budget.
func (q *QFQ) qfqUpdateAggTs(agg *aggregate, reason updateReason) {
	if reason != requeue {
		q.qfqUpdateStart(agg)
	} else {
		agg.S = agg.F // charged for the service received
	}
	agg.F = agg.S + uint64(agg.budgetmax)*uint64(agg.invW)
}

// qfqCalcState is qfq_calc_state: ineligible if S > V, blocked if an
// eligible-ready group of higher index finishes first.
func (q *QFQ) qfqCalcState(grp *group) int {
	state := 0
	if qfqGt(grp.S, q.V) {
		state = ir
	}
	if mask := maskFrom(q.bitmaps[er], grp.index); mask != 0 {
		if next := q.qfqFfs(mask); qfqGt(grp.F, next.F) {
			state |= eb
		}
	}
	return state
}

// qfqMoveGroups is qfq_move_groups.
func (q *QFQ) qfqMoveGroups(mask uint64, src, dst int) {
	q.bitmaps[dst] |= q.bitmaps[src] & mask
	q.bitmaps[src] &^= mask
}

// qfqUnblockGroups is qfq_unblock_groups.
func (q *QFQ) qfqUnblockGroups(index uint32, oldF uint64) {
	if mask := maskFrom(q.bitmaps[er], index+1); mask != 0 {
		if next := q.qfqFfs(mask); !qfqGt(next.F, oldF) {
			return
		}
	}
	mask := uint64(1)<<index - 1
	q.qfqMoveGroups(mask, eb, er)
	q.qfqMoveGroups(mask, ib, ir)
}

// qfqMakeEligible is qfq_make_eligible: the groups whose slot V has
// passed turn eligible. fls takes an unsigned int: the kernel's xor is
// cut to 32 bits.
func (q *QFQ) qfqMakeEligible() {
	vslot := q.V >> q.minSlotShift
	oldVslot := q.oldV >> q.minSlotShift
	if vslot == oldVslot {
		return
	}
	var mask uint64
	if last := bits.Len32(uint32(vslot ^ oldVslot)); last > 31 {
		mask = ^uint64(0)
	} else {
		mask = 1<<last - 1
	}
	q.qfqMoveGroups(mask, ir, er)
	q.qfqMoveGroups(mask, ib, eb)
}

// qfqSlotInsert is qfq_slot_insert: at slot (S - group S) / slot size,
// at most QFQ_MAX_SLOTS-2, the aggregate's timestamps shifted back if
// it would be further.
func qfqSlotInsert(grp *group, agg *aggregate, roundedS uint64) {
	slot := (roundedS - grp.S) >> grp.slotShift
	if slot > qfqMaxSlots-2 {
		deltaS := roundedS - grp.S - uint64(qfqMaxSlots-2)<<grp.slotShift
		agg.S -= deltaS
		agg.F -= deltaS
		slot = qfqMaxSlots - 2
	}
	i := (grp.front + uint32(slot)) % qfqMaxSlots
	grp.slots[i] = append(grp.slots[i], agg)
	agg.slot = int(i)
	grp.fullSlots |= 1 << slot
}

// qfqSlotHead is qfq_slot_head: the front slot's head, or nil.
func qfqSlotHead(grp *group) *aggregate {
	s := grp.slots[grp.front]
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

// hlistDel takes agg off the slot list that holds it.
func hlistDel(grp *group, agg *aggregate) {
	if agg.slot >= 0 {
		grp.slots[agg.slot] = deleteAgg(grp.slots[agg.slot], agg)
		agg.slot = -1
	}
}

// qfqFrontSlotRemove is qfq_front_slot_remove.
func qfqFrontSlotRemove(grp *group) {
	hlistDel(grp, qfqSlotHead(grp))
	if len(grp.slots[grp.front]) == 0 {
		grp.fullSlots &^= 1
	}
}

// qfqSlotScan is qfq_slot_scan: the head of the first non-empty slot,
// which becomes the front.
func qfqSlotScan(grp *group) *aggregate {
	if grp.fullSlots == 0 {
		return nil
	}
	if i := uint32(bits.TrailingZeros64(grp.fullSlots)); i > 0 {
		grp.front = (grp.front + i) % qfqMaxSlots
		grp.fullSlots >>= i
	}
	return qfqSlotHead(grp)
}

// qfqSlotRotate is qfq_slot_rotate: the group's start moves back to
// roundedS, the slots with it.
func qfqSlotRotate(grp *group, roundedS uint64) {
	i := uint32((grp.S - roundedS) >> grp.slotShift)
	grp.fullSlots <<= i
	grp.front = (grp.front - i) % qfqMaxSlots
}

// qfqUpdateEligible is qfq_update_eligible: with no eligible-ready
// group V jumps to the first ineligible one's start.
func (q *QFQ) qfqUpdateEligible() {
	ineligible := q.bitmaps[ir] | q.bitmaps[ib]
	if ineligible == 0 {
		return
	}
	if q.bitmaps[er] == 0 {
		if grp := q.qfqFfs(ineligible); qfqGt(grp.S, q.V) {
			q.V = grp.S
		}
	}
	q.qfqMakeEligible()
}

// qfqChooseNextAgg is qfq_choose_next_agg: the head aggregate of the
// eligible-ready group of lowest index (the earliest finish), taken
// off its slot; the group's timestamps and state follow its new head.
func (q *QFQ) qfqChooseNextAgg() *aggregate {
	q.qfqUpdateEligible()
	q.oldV = q.V
	if q.bitmaps[er] == 0 {
		return nil
	}
	grp := q.qfqFfs(q.bitmaps[er])
	oldF := grp.F
	agg := qfqSlotHead(grp)
	qfqFrontSlotRemove(grp)
	if front := qfqSlotScan(grp); front == nil {
		q.bitmaps[er] &^= 1 << grp.index // the group is idle
	} else {
		roundedS := qfqRoundDown(front.S, grp.slotShift)
		if grp.S == roundedS {
			return agg
		}
		grp.S = roundedS
		grp.F = roundedS + 2<<grp.slotShift
		q.bitmaps[er] &^= 1 << grp.index
		q.bitmaps[q.qfqCalcState(grp)] |= 1 << grp.index
	}
	q.qfqUnblockGroups(grp.index, oldF)
	return agg
}

// qfqScheduleAgg is qfq_schedule_agg: into its group's slot by start
// time; a group whose start moves back is rotated and its state
// recomputed, and V jumps to the start of the first aggregate of an
// idle scheduler.
func (q *QFQ) qfqScheduleAgg(agg *aggregate) {
	grp := agg.grp
	roundedS := qfqRoundDown(agg.S, grp.slotShift)
	if grp.fullSlots != 0 {
		if !qfqGt(grp.S, agg.S) {
			qfqSlotInsert(grp, agg, roundedS)
			return
		}
		qfqSlotRotate(grp, roundedS) // make a slot for agg.S
		// the group was surely ineligible
		q.bitmaps[ir] &^= 1 << grp.index
		q.bitmaps[ib] &^= 1 << grp.index
	} else if q.bitmaps[er] == 0 && qfqGt(roundedS, q.V) && q.inServAgg == nil {
		q.V = roundedS
	}
	grp.S = roundedS
	grp.F = roundedS + 2<<grp.slotShift
	q.bitmaps[q.qfqCalcState(grp)] |= 1 << grp.index
	qfqSlotInsert(grp, agg, roundedS)
}

// qfqActivateAgg is qfq_activate_agg: a recharged budget, new
// timestamps, and service at once if none is in service (V its start:
// to be served it must be eligible), else a slot.
func (q *QFQ) qfqActivateAgg(agg *aggregate, reason updateReason) {
	agg.initBudget, agg.budget = agg.budgetmax, agg.budgetmax
	q.qfqUpdateAggTs(agg, reason)
	if q.inServAgg == nil {
		q.inServAgg = agg
		q.V, q.oldV = agg.S, agg.S
	} else if agg != q.inServAgg {
		q.qfqScheduleAgg(agg)
	}
}

// qfqSlotRemove is qfq_slot_remove.
func qfqSlotRemove(grp *group, agg *aggregate) {
	roundedS := qfqRoundDown(agg.S, grp.slotShift)
	offset := uint32((roundedS - grp.S) >> grp.slotShift)
	i := (grp.front + offset) % qfqMaxSlots
	hlistDel(grp, agg)
	if len(grp.slots[i]) == 0 {
		grp.fullSlots &^= 1 << offset
	}
}

// qfqDeactivateAgg is qfq_deactivate_agg: the aggregate in service
// hands service on; another leaves its slot, and a group left empty or
// with a new front has its state recomputed.
func (q *QFQ) qfqDeactivateAgg(agg *aggregate) {
	if agg == q.inServAgg {
		chargeActualService(agg)
		q.inServAgg = q.qfqChooseNextAgg()
		return
	}
	grp := agg.grp
	agg.F = agg.S
	qfqSlotRemove(grp, agg)
	bit := uint64(1) << grp.index
	if grp.fullSlots == 0 {
		q.bitmaps[ir] &^= bit
		q.bitmaps[eb] &^= bit
		q.bitmaps[ib] &^= bit
		// as the kernel writes it: with the group's own bit in ER the
		// second test never holds
		if q.bitmaps[er]&bit != 0 && q.bitmaps[er]&^(bit-1) == 0 {
			mask := q.bitmaps[er] & (bit - 1)
			if mask != 0 {
				mask = ^(uint64(1)<<(bits.Len64(mask)-1) - 1)
			} else {
				mask = ^uint64(0)
			}
			q.qfqMoveGroups(mask, eb, er)
			q.qfqMoveGroups(mask, ib, ir)
		}
		q.bitmaps[er] &^= bit
	} else if len(grp.slots[grp.front]) == 0 {
		agg = qfqSlotScan(grp)
		if roundedS := qfqRoundDown(agg.S, grp.slotShift); grp.S != roundedS {
			for s := range q.bitmaps {
				q.bitmaps[s] &^= bit
			}
			grp.S = roundedS
			grp.F = roundedS + 2<<grp.slotShift
			q.bitmaps[q.qfqCalcState(grp)] |= bit
		}
	}
}
