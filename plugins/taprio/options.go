package taprio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
)

// Schedule entry commands (TC_TAPRIO_CMD_*).
const (
	cmdSetGates       = 0
	cmdSetAndHold     = 1
	cmdSetAndRelease  = 2
	tcFPExpress       = 1 // TC_FP_EXPRESS
	tcFPPreemptible   = 2 // TC_FP_PREEMPTIBLE
	flagTxtimeAssist  = 1 << 0
	flagFullOffload   = 1 << 1
	tcQoptMaxQueue    = 16 // TC_QOPT_MAX_QUEUE
	allGatesOpen      = ^uint32(0)
	cycleTimeMax      = 1<<31 - 1 // taprio_cycle_time_range's INT_MAX
	entryCmdLetters   = "SHR"
	explainSchedEntry = "Usage: ... taprio ... sched-entry <cmd> <gate mask> <interval>"
)

// entrySpec is one sched-entry as tc sends it.
type entrySpec struct {
	cmd      uint8
	gateMask uint32
	interval uint32
}

// opts is what tc's taprio_parse_opt sends: the attributes present.
type opts struct {
	mqprio   *qdisc.TCMap // TCA_TAPRIO_ATTR_PRIOMAP, when num_tc > 0
	clockid  int32        // -1: none
	flags    uint32
	flagsSet bool
	txDelay  uint32
	base     int64
	cycle    int64
	ext      int64
	entries  []entrySpec
	maxSDU   [tcQoptMaxQueue]uint32
	nMaxSDU  int
	fp       [tcQoptMaxQueue]uint32
	nFP      int
	tcSet    bool // TCA_TAPRIO_ATTR_TC_ENTRY nests (max-sdu or fp given)
}

// parse is tc's taprio_parse_opt.
func parse(args []string) (opts, error) {
	o := opts{clockid: -1}
	var m qdisc.TCMap
	errf := func(format string, a ...any) (opts, error) { return o, qdisc.Parsef("taprio", format, a...) }
	for i := 0; i < len(args); i++ {
		w := args[i]
		next := func() (string, bool) {
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i], true
		}
		// a list: words while they parse (NEXT_ARG_OK, then PREV_ARG on
		// the first that does not), at most 16, from index 0 each time
		list := func(fn func(idx int, s string) bool) int {
			idx := 0
			for idx < tcQoptMaxQueue && i+1 < len(args) && fn(idx, args[i+1]) {
				i++
				idx++
			}
			return idx
		}
		incomplete := func() (opts, error) {
			return errf(`%q: Command line is not complete. Try option "help"`, w)
		}
		switch w {
		case "num_tc":
			v, ok := next()
			if !ok {
				return incomplete()
			}
			n, err := strconv.ParseUint(v, 10, 8)
			if err != nil {
				return errf(`Illegal "num_tc"`)
			}
			m.NumTC = int(n)
		case "map":
			m.PrioTC = [tcQoptMaxQueue]uint8{}
			list(func(idx int, s string) bool {
				n, err := strconv.ParseUint(s, 10, 8)
				m.PrioTC[idx] = uint8(n)
				return err == nil
			})
		case "queues":
			list(func(idx int, s string) bool {
				c, off, ok := strings.Cut(s, "@")
				cn, err1 := strconv.ParseUint(c, 10, 16)
				on, err2 := strconv.ParseUint(off, 10, 16)
				if !ok || err1 != nil || err2 != nil {
					return false
				}
				m.Count[idx], m.Offset[idx] = uint16(cn), uint16(on)
				return true
			})
		case "fp":
			o.nFP += list(func(idx int, s string) bool {
				v, ok := map[string]uint32{"E": tcFPExpress, "P": tcFPPreemptible}[s]
				if ok {
					o.fp[idx] = v
				}
				return ok
			})
			o.tcSet = true
		case "max-sdu":
			o.nMaxSDU += list(func(idx int, s string) bool {
				n, err := strconv.ParseUint(s, 10, 32)
				if err == nil {
					o.maxSDU[idx] = uint32(n)
				}
				return err == nil
			})
			o.tcSet = true
		case "sched-entry":
			c, ok1 := next()
			mask, ok2 := next()
			iv, ok3 := next()
			cmd := strings.Index(entryCmdLetters, c)
			if !ok1 || len(c) != 1 || cmd < 0 {
				return errf("%s", explainSchedEntry)
			}
			gm, err := strconv.ParseUint(mask, 16, 32)
			if !ok2 || err != nil {
				return errf("%s", explainSchedEntry)
			}
			in, err := strconv.ParseUint(iv, 0, 32)
			if !ok3 || err != nil {
				return errf("%s", explainSchedEntry)
			}
			o.entries = append(o.entries, entrySpec{cmd: uint8(cmd), gateMask: uint32(gm), interval: uint32(in)})
		case "base-time", "cycle-time", "cycle-time-extension":
			v, ok := next()
			if !ok {
				return incomplete()
			}
			dst := map[string]*int64{"base-time": &o.base, "cycle-time": &o.cycle, "cycle-time-extension": &o.ext}[w]
			if w != "base-time" && *dst != 0 {
				return errf(`duplicate %q specification`, w)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				// get_s64 fails: PREV_ARG and break, and tc sends what it
				// has; the word is then not an option of its
				return errf("Unknown argument %q", v)
			}
			*dst = n
		case "clockid":
			v, ok := next()
			if !ok {
				return incomplete()
			}
			var err error
			if o.clockid, err = qdisc.ParseClockid("taprio", o.clockid, v); err != nil {
				return o, err
			}
		case "flags", "txtime-delay":
			v, ok := next()
			if !ok {
				return incomplete()
			}
			dst := &o.flags
			if w == "txtime-delay" {
				dst = &o.txDelay
			}
			if *dst != 0 {
				return errf(`duplicate %q specification`, w)
			}
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil {
				return errf("Illegal %q %q", w, v)
			}
			*dst = uint32(n)
			o.flagsSet = o.flagsSet || w == "flags" && n != 0
		case "help":
			return errf("help: Usage: ... taprio clockid CLOCKID [num_tc NUMBER] [map P0 P1 ...] [queues COUNT@OFFSET ...] [ [sched-entry index cmd gate-mask interval] ... ] [base-time time] [txtime-delay delay] [fp FP0 FP1 FP2 ...]")
		default:
			return errf("Unknown argument %q", w)
		}
	}
	if m.NumTC > 0 {
		o.mqprio = &m
	}
	return o, nil
}

// validateMQPrio is taprio_parse_mqprio_opt with mqprio_validate_qopt
// (validate_queue_counts, no overlap: not txtime-assist).
func validateMQPrio(m *qdisc.TCMap, devTxq int) error {
	if m.NumTC > devTxq {
		return taprioErr("Number of traffic classes is greater than number of HW queues")
	}
	if msg := m.Invalid(devTxq); msg != "" {
		return kernelErr("%s", msg)
	}
	return nil
}

// taprioErr is an extack message of sch_taprio's NL_SET_ERR_MSG_MOD
// (tc prints "Error: sch_taprio: ...").
func taprioErr(format string, a ...any) error {
	return kernelErr("Error: sch_taprio: "+format+".", a...)
}

// kernelErr is a refusal by the kernel, as tc prints it.
func kernelErr(format string, a ...any) error {
	return qdisc.Refusef("taprio", "%s", fmt.Sprintf(format, a...))
}
