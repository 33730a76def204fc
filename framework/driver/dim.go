package driver

import (
	"fmt"

	"github.com/txlab/txlab/framework/sim"
)

// DIM is struct dim with lib/dim/net_dim.c's decision (dynamic interrupt
// moderation): every DIM_NEVENTS interrupts it compares bytes, packets
// and interrupts per millisecond with the previous measurement and steps
// through a driver's table of moderation profiles, keeping a direction
// while the stats get better and turning when they do not; on an edge or
// after a turn back it parks until the stats change by more than 10%.
// Drivers call Sample where theirs call net_dim (at napi_complete_done)
// and program the profile Index returns when Sample reports a change
// (the kernel does it from a work item: the driver's *_dim_work).
type DIM struct {
	// ProfileIx is dim->profile_ix, the index into the driver's table.
	ProfileIx int
	// Profiles is NET_DIM_PARAMS_NUM_PROFILES for the table in use.
	Profiles int

	state                 dimState
	tune                  dimTune
	stepsLeft, stepsRight int
	tired                 int
	start                 DIMSample
	prev                  dimStats
	// Changes counts profile changes (for the driver's stats).
	Changes uint64
}

// DIMSample is struct dim_sample: the driver's running counters.
type DIMSample struct {
	Time   sim.Time
	Pkts   uint32 // pkt_ctr
	Bytes  uint32 // byte_ctr
	Events uint16 // event_ctr: interrupts
}

type dimStats struct{ ppms, bpms, epms int64 }

type dimState uint8

const (
	dimStartMeasure      dimState = iota // DIM_START_MEASURE
	dimMeasureInProgress                 // DIM_MEASURE_IN_PROGRESS
)

type dimTune uint8

// enum dim_tune_state: a zeroed struct dim starts parked on top.
const (
	dimParkingOnTop dimTune = iota
	dimParkingTired
	dimGoingRight
	dimGoingLeft
)

// dimNEvents is DIM_NEVENTS: interrupts between two decisions.
const dimNEvents = 64

// NewDIM is a dim at profile ix of a table of n profiles, as a driver's
// init sets dim->profile_ix (idpf: IDPF_DIM_DEFAULT_PROFILE_IX).
func NewDIM(ix, n int) *DIM { return &DIM{ProfileIx: ix, Profiles: n} }

// Sample is net_dim(dim, sample). It reports whether the profile changed
// (dim->state = DIM_APPLY_NEW_PROFILE and the work scheduled); the model
// applies it at once, so the next call starts a new measurement as the
// work's dim->state = DIM_START_MEASURE does.
func (d *DIM) Sample(s DIMSample) bool {
	if d.state == dimMeasureInProgress {
		nevents := s.Events - d.start.Events // BIT_GAP(16, ...)
		if nevents < dimNEvents {
			return false
		}
		if curr, ok := dimCalcStats(d.start, s); ok && d.decide(curr) {
			d.state = dimStartMeasure
			d.Changes++
			return true
		}
	}
	d.start = s
	d.state = dimMeasureInProgress
	return false
}

// dimCalcStats is dim_calc_stats: rates per millisecond, rounded up;
// epms counts DIM_NEVENTS, not the events seen.
func dimCalcStats(start, end DIMSample) (dimStats, bool) {
	deltaUs := uint32((end.Time - start.Time) / sim.Microsecond)
	if deltaUs == 0 {
		return dimStats{}, false
	}
	npkts := uint64(end.Pkts - start.Pkts)
	nbytes := uint64(end.Bytes - start.Bytes)
	up := func(n uint64) int64 { return int64((n*1000 + uint64(deltaUs) - 1) / uint64(deltaUs)) }
	return dimStats{ppms: up(npkts), bpms: up(nbytes), epms: up(dimNEvents)}, true
}

// significant is IS_SIGNIFICANT_DIFF: more than 10% off ref.
func significant(val, ref int64) bool {
	if ref == 0 {
		return false
	}
	d := val - ref
	if d < 0 {
		d = -d
	}
	return 100*d/ref > 10
}

type dimCmp int

const (
	dimWorse dimCmp = iota - 1
	dimSame
	dimBetter
)

// compare is net_dim_stats_compare: more bytes, then more packets, then
// fewer interrupts per millisecond is better.
func compare(curr, prev dimStats) dimCmp {
	better := func(b bool) dimCmp {
		if b {
			return dimBetter
		}
		return dimWorse
	}
	if prev.bpms == 0 {
		if curr.bpms != 0 {
			return dimBetter
		}
		return dimSame
	}
	if significant(curr.bpms, prev.bpms) {
		return better(curr.bpms > prev.bpms)
	}
	if prev.ppms == 0 {
		if curr.ppms != 0 {
			return dimBetter
		}
		return dimSame
	}
	if significant(curr.ppms, prev.ppms) {
		return better(curr.ppms > prev.ppms)
	}
	if prev.epms == 0 {
		return dimSame
	}
	if significant(curr.epms, prev.epms) {
		return better(curr.epms < prev.epms)
	}
	return dimSame
}

const (
	dimStepped = iota
	dimTooTired
	dimOnEdge
)

// step is net_dim_step.
func (d *DIM) step() int {
	if d.tired == d.Profiles*2 {
		return dimTooTired
	}
	switch d.tune {
	case dimGoingRight:
		if d.ProfileIx == d.Profiles-1 {
			return dimOnEdge
		}
		d.ProfileIx++
		d.stepsRight++
	case dimGoingLeft:
		if d.ProfileIx == 0 {
			return dimOnEdge
		}
		d.ProfileIx--
		d.stepsLeft++
	}
	d.tired++
	return dimStepped
}

// onTop is dim_on_top.
func (d *DIM) onTop() bool {
	switch d.tune {
	case dimParkingOnTop, dimParkingTired:
		return true
	case dimGoingRight:
		return d.stepsLeft > 1 && d.stepsRight == 1
	default:
		return d.stepsRight > 1 && d.stepsLeft == 1
	}
}

// turn is dim_turn.
func (d *DIM) turn() {
	switch d.tune {
	case dimGoingRight:
		d.tune, d.stepsLeft = dimGoingLeft, 0
	case dimGoingLeft:
		d.tune, d.stepsRight = dimGoingRight, 0
	}
}

func (d *DIM) parkOnTop() { d.stepsRight, d.stepsLeft, d.tired, d.tune = 0, 0, 0, dimParkingOnTop }
func (d *DIM) parkTired() { d.stepsRight, d.stepsLeft, d.tune = 0, 0, dimParkingTired }

// exitParking is net_dim_exit_parking.
func (d *DIM) exitParking() {
	d.tune = dimGoingRight
	if d.ProfileIx != 0 {
		d.tune = dimGoingLeft
	}
	d.step()
}

// decide is net_dim_decision.
func (d *DIM) decide(curr dimStats) bool {
	prevTune, prevIx := d.tune, d.ProfileIx
	switch d.tune {
	case dimParkingOnTop:
		if compare(curr, d.prev) != dimSame {
			d.exitParking()
		}
	case dimParkingTired:
		d.tired--
		if d.tired == 0 {
			d.exitParking()
		}
	default:
		if compare(curr, d.prev) != dimBetter {
			d.turn()
		}
		if d.onTop() {
			d.parkOnTop()
			break
		}
		switch d.step() {
		case dimOnEdge:
			d.parkOnTop()
		case dimTooTired:
			d.parkTired()
		}
	}
	if prevTune != dimParkingOnTop || d.tune != dimParkingOnTop {
		d.prev = curr
	}
	return d.ProfileIx != prevIx
}

// Adaptive is ethtool -C's "adaptive-tx on|off" and "adaptive-rx
// on|off" for a driver whose TX and RX moderation are dynamic by
// default (ice, idpf, i40e, mlx5: tx/rx itr_mode, tx/rx_intr_mode,
// I40E_ITR_DYNAMIC, tx/rx_dim_enabled): Opt takes the words as
// ParseRingOpts's extra, Tx and Rx say whether each side moderates
// adaptively. A usecs word does not turn a side static: ethtool -C
// sends the device's current adaptive setting with it, so only
// "adaptive-tx off" does (Check says what the Intel drivers do with a
// usecs change while a side stays adaptive).
type Adaptive struct{ tx, rx adaptive }

type adaptive struct{ off bool }

func (a *adaptive) opt(name, word, val string) error {
	switch val {
	case "on", "off":
		a.off = val == "off"
		return nil
	}
	return fmt.Errorf("%s: %s %q: want on or off", name, word, val)
}

// Opt reads "adaptive-tx on|off" and "adaptive-rx on|off"; it takes no
// other key.
func (a *Adaptive) Opt(name, key, val string) (bool, error) {
	switch key {
	case "adaptive-tx":
		return true, a.tx.opt(name, key, val)
	case "adaptive-rx":
		return true, a.rx.opt(name, key, val)
	}
	return false, nil
}

// Tx is whether TX moderation is adaptive: unless "adaptive-tx off".
func (a Adaptive) Tx() bool { return !a.tx.off }

// Rx is whether RX moderation is adaptive: unless "adaptive-rx off".
func (a Adaptive) Rx() bool { return !a.rx.off }

// Coalesce is an Intel driver's set_coalesce checks of the usecs words
// (ice_set_q_coalesce, __i40e_set_coalesce, idpf_set_coalesce): side by
// side in the driver's order (RxFirst), a usecs other than the side's
// current setting (a fresh device's Dflt, which DIM's register writes
// leave alone) while it stays adaptive is -EINVAL with Msg(side), "tx"
// or "rx"; then one above Max is -EINVAL too, Macro naming the bound.
// Both come before the driver rounds the usecs.
type Coalesce struct {
	DfltTx, DfltRx sim.Time
	Max            sim.Time
	Macro          string
	RxFirst        bool
	Msg            func(side string) string
}

// Check runs c's checks on o with a's adaptive settings.
func (a Adaptive) Check(name string, o RingOpts, c Coalesce) error {
	type side struct {
		name     string
		set, off bool
		usecs    sim.Time
		dflt     sim.Time
	}
	sides := []side{{"tx", o.ITRSet, a.tx.off, o.ITR, c.DfltTx}, {"rx", o.RxITRSet, a.rx.off, o.RxITR, c.DfltRx}}
	if c.RxFirst {
		sides[0], sides[1] = sides[1], sides[0]
	}
	for _, s := range sides {
		if s.set && !s.off && s.usecs != s.dflt {
			return fmt.Errorf("%s: %s-usecs %d: %s (add adaptive-%s off)", name, s.name, s.usecs/sim.Microsecond, c.Msg(s.name), s.name)
		}
		if err := overMax(name, s.name+"-usecs", s.usecs, c.Max, c.Macro); err != nil {
			return err
		}
	}
	return nil
}

// Counters are a queue's moderation lines for the report: the vector's
// current ITR and the profile changes so far.
func (d *DIM) Counters(itr sim.Time) []Counter {
	return []Counter{{Name: "tx_itr_usecs", Value: uint64(itr / sim.Microsecond)}, {Name: "dim_changes", Value: d.Changes}}
}
