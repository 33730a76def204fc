package netdev

import "github.com/txlab/txlab/framework/sim"

// tasklet is a tasklet_struct of the host's (ifb's per-queue one):
// sched is TASKLET_STATE_SCHED (on a CPU's list), running
// TASKLET_STATE_RUN. A tasklet sits on one CPU's list at a time and
// never runs on two CPUs at once.
type tasklet struct {
	fn             func(c *sim.CPU)
	sched, running bool
}

// taskletVec is one CPU's tasklet_vec, with the array its last run
// handed back, reused.
type taskletVec struct {
	list, spare []*tasklet
}

// taskletSchedule is tasklet_schedule on c: a tasklet already scheduled
// stays where it is; otherwise it joins c's list and TASKLET_SOFTIRQ is
// raised there.
func (n *Net) taskletSchedule(c *sim.CPU, t *tasklet) {
	if t.sched {
		return
	}
	t.sched = true
	n.taskletList(c).list = append(n.taskletList(c).list, t)
	c.RaiseSoftirq(sim.TaskletSoftirq)
}

// taskletList is c's tasklet_vec, made with the first tasklet.
func (n *Net) taskletList(c *sim.CPU) *taskletVec {
	if n.tasklets == nil {
		n.tasklets = make([]taskletVec, len(n.E.CPUs))
	}
	return &n.tasklets[c.ID]
}

// taskletAction is TASKLET_SOFTIRQ's handler: tasklet_action_common on
// the host's tasklets, in the order they were scheduled (one that runs
// on another CPU goes back on the list, its softirq raised again:
// tasklet_trylock failed), then the workload's (TCP's TSQ tasklet and
// timers, SetTaskletFunc), which keeps a list of its own.
func (n *Net) taskletAction(c *sim.CPU) {
	if n.tasklets != nil {
		v := &n.tasklets[c.ID]
		run := v.list // the whole list, once: what is scheduled meanwhile raised the softirq again
		v.list, v.spare = v.spare[:0], nil
		for _, t := range run {
			if t.running {
				c.Spend(n.E.Costs.AtomicOp) // the failed tasklet_trylock
				v.list = append(v.list, t)
				c.RaiseSoftirq(sim.TaskletSoftirq)
				continue
			}
			t.sched, t.running = false, true
			t.fn(c)
			t.running = false
		}
		clear(run)
		v.spare = run[:0]
	}
	if n.taskletFunc != nil {
		n.taskletFunc(c)
	}
}

// SetTaskletFunc makes fn part of TASKLET_SOFTIRQ's handler on every
// CPU, after the host's own tasklets: a workload's tasklets.
func (n *Net) SetTaskletFunc(fn func(c *sim.CPU)) { n.taskletFunc = fn }
