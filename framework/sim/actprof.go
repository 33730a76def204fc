package sim

import (
	"fmt"
	"sort"
	"strings"
)

// Act is an activity label for ActProfile: what a CPU's time is spent on
// (a lab measurement, like perf's per-symbol profile over all CPUs).
type Act uint8

// The activities the engine itself labels; others register with
// Engine.ActName.
const (
	ActOther     Act = iota // unlabelled work
	ActHardirq              // hard interrupt handlers and the tick
	ActSched                // __schedule: context switches
	ActWake                 // try_to_wake_up on the waker
	ActSoftirq0             // softirq vector 0; vector nr is ActSoftirq0+nr
	numFixedActs = ActSoftirq0 + numSoftirqs
)

// ActProfile sums every CPU's busy time by activity: Work is time spent
// executing, Spin time spinning on a lock while the activity was current.
type ActProfile struct {
	Names      []string
	Work, Spin []int64
}

// softirqNames are the vectors as /proc/softirqs names them
// (include/linux/interrupt.h's order).
var softirqNames = [numSoftirqs]string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

// EnableActProfile starts an activity profile, or returns the one
// already started (a run keeps one; a lab test asks for it too).
func (e *Engine) EnableActProfile() *ActProfile {
	if e.actProf != nil {
		return e.actProf
	}
	p := &ActProfile{}
	for a := Act(0); a < numFixedActs; a++ {
		name := [...]string{"other", "hardirq", "context switch", "try_to_wake_up"}
		if int(a) < len(name) {
			p.add(name[a])
		} else {
			p.add("softirq " + softirqNames[a-ActSoftirq0])
		}
	}
	for _, n := range e.actNames {
		p.add(n)
	}
	e.actProf = p
	return p
}

// ActProfileOf is the engine's activity profile, nil if none was
// started.
func (e *Engine) ActProfileOf() *ActProfile { return e.actProf }

func (p *ActProfile) add(name string) {
	p.Names = append(p.Names, name)
	p.Work = append(p.Work, 0)
	p.Spin = append(p.Spin, 0)
}

// ActName registers a label and returns it (the same name, the same Act).
func (e *Engine) ActName(name string) Act {
	for i, n := range e.actNames {
		if n == name {
			return numFixedActs + Act(i)
		}
	}
	e.actNames = append(e.actNames, name)
	if e.actProf != nil {
		e.actProf.add(name)
	}
	return numFixedActs + Act(len(e.actNames)-1)
}

// SetAct makes a the CPU's current activity and returns the previous one
// (restore it when the activity ends).
func (c *CPU) SetAct(a Act) Act {
	prev := c.act
	c.act = a
	return prev
}

// Reset zeroes the sums (the start of a measurement window).
func (p *ActProfile) Reset() {
	clear(p.Work)
	clear(p.Spin)
}

// ActTotal is one activity's sums.
type ActTotal struct {
	Name       string
	Work, Spin int64
}

// Totals are the activities with time spent, most first (work plus
// spin; ties by name, so the order is the same on every run).
func (p *ActProfile) Totals() []ActTotal {
	var out []ActTotal
	for i, n := range p.Names {
		if p.Work[i]+p.Spin[i] > 0 {
			out = append(out, ActTotal{Name: n, Work: p.Work[i], Spin: p.Spin[i]})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		ta, tb := out[a].Work+out[a].Spin, out[b].Work+out[b].Spin
		if ta != tb {
			return ta > tb
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// Format prints each activity's work and spin time per packet, most first.
func (p *ActProfile) Format(pkts uint64) string {
	n := float64(max(pkts, 1))
	var tw, ts int64
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %10s %10s\n", "activity (ns per packet sent)", "work", "spin")
	for _, a := range p.Totals() {
		tw += a.Work
		ts += a.Spin
		fmt.Fprintf(&b, "%-34s %10.1f %10.1f\n", a.Name, float64(a.Work)/n, float64(a.Spin)/n)
	}
	fmt.Fprintf(&b, "%-34s %10.1f %10.1f\n", "total", float64(tw)/n, float64(ts)/n)
	return b.String()
}
