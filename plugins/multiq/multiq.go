// Package multiq is the kernel's multiq qdisc (net/sched/sch_multiq.c):
// a classful root with one band per TX queue of a multiqueue device,
// each a class whose leaf qdisc (pfifo by default) the host holds. A
// packet goes to the band of its queue_mapping (the queue the stack
// picked, or the one an skbedit queue_mapping in multiq's filters set:
// Documentation/networking/multiqueue.rst's recipe), and dequeue goes
// round the bands, skipping a band whose TX queue is stopped, so a full
// queue does not hold the others back (head-of-line blocking).
package multiq

import (
	"fmt"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("multiq", "one band per TX queue, round robin skipping stopped queues (sch_multiq.c)",
		func() qdisc.Qdisc { return &Multiq{} })
}

// Multiq is struct multiq_sched_data; the bands' qdiscs are the host's.
type Multiq struct {
	handle   uint16
	bands    int // real_num_tx_queues
	maxBands int // num_tx_queues
	curband  int
	leaves   qdisc.LeafTable
	drops    uint64
	batch    qdisc.LeafBatch
}

// Init implements qdisc.Qdisc (multiq_init -> multiq_tune): a band per
// TX queue, each given a pfifo by the host. tc's q_multiq takes no
// option but "help".
func (m *Multiq) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	if err := parse(args); err != nil {
		return qdisc.Info{}, err
	}
	if s.Parent != "root" {
		return qdisc.Info{}, qdisc.Lacksf("multiq", "multiq under a class is not modelled: it bands by the device's TX queues, as the root (tc qdisc add dev eth0 root handle 1: multiq)")
	}
	if s.DevTxQ < 2 {
		// multiq_tune: !netif_is_multiqueue(dev)
		return qdisc.Info{}, qdisc.Refusef("multiq", "RTNETLINK answers: Operation not supported (the device has one TX queue; multiq needs a multiqueue device)")
	}
	m.handle = uint16(s.Major())
	m.bands, m.maxBands = s.DevTxQ, s.DevTxQ
	return qdisc.Info{}, nil
}

// parse is multiq_parse_opt: no option; "help" is its usage.
func parse(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if args[0] == "help" {
		return qdisc.Parsef("multiq", "Usage: ... multiq [help]")
	}
	return qdisc.Parsef("multiq", "What is %q?", args[0])
}

// Change implements qdisc.Changer (multiq_tune again: the bands follow
// real_num_tx_queues, which the model never changes).
func (m *Multiq) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	return qdisc.Info{}, parse(args)
}

func (m *Multiq) class(band int) qdisc.ClassID { return qdisc.MakeClassID(m.handle, uint16(band+1)) }

// classify is multiq_classify: the filters run for their verdict only
// (a shot packet is dropped; skbedit's queue_mapping edits the packet),
// then the band is the packet's queue_mapping, band 0 past the bands.
func (m *Multiq) classify(x qdisc.ClassCtx, p *skb.Packet) int {
	if r := x.Classify(p, qdisc.MakeClassID(m.handle, 0)); r.Verdict == qdisc.VerdictShot {
		return -1
	}
	if int(p.Queue) >= m.bands {
		return 0
	}
	return int(p.Queue)
}

// Enqueue implements qdisc.Qdisc (multiq_enqueue).
func (m *Multiq) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	m.batch.Reset()
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		b := m.classify(x, &batch[i])
		if b < 0 {
			// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS, counted as a drop
			m.drops++
			ctx.Drop(batch[i].Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
			continue
		}
		m.batch.Add(&batch[i], m.class(b), i)
	}
	m.drops += m.batch.Send(x, &m.leaves, rc)
}

// stopped is netif_xmit_stopped of band b's TX queue.
func stopped(ctx qdisc.Ctx, b int) bool {
	t, ok := ctx.(qdisc.TxqCtx)
	return ok && t.TxqStopped(b)
}

// Dequeue implements qdisc.Qdisc (multiq_dequeue per packet): from the
// band after the last served, the first whose TX queue is not stopped
// and whose leaf gives a packet (qdisc_dequeue_peeked).
func (m *Multiq) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		for range m.bands {
			m.curband++
			if m.curband >= m.bands {
				m.curband = 0
			}
			ctx.Work(qdisc.WorkFlowScan, 1)
			if stopped(ctx, m.curband) {
				continue
			}
			c := m.class(m.curband)
			if m.leaves.Get(c).Qlen == 0 {
				continue
			}
			p, ok, _, dropped := m.leaves.Dequeue(x, c)
			m.drops += uint64(dropped)
			if ok {
				ctx.Work(qdisc.WorkDequeue, 1)
				return p, true
			}
		}
		return skb.Packet{}, false
	})
}

// Peek implements qdisc.Peeker (multiq_peek): the same walk from
// curband without moving it.
func (m *Multiq) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	x := ctx.(qdisc.ClassCtx)
	cur := m.curband
	for range m.bands {
		cur++
		if cur >= m.bands {
			cur = 0
		}
		if stopped(ctx, cur) {
			continue
		}
		p, ok, dropped := m.leaves.PeekHead(x, m.class(cur))
		m.drops += uint64(dropped)
		if ok {
			return p, true
		}
	}
	return skb.Packet{}, false
}

// Reset implements qdisc.Resetter (multiq_reset: the leaves reset, the
// round back at band 0).
func (m *Multiq) Reset(qdisc.Ctx) {
	m.leaves.Reset()
	m.curband = 0
}

// Stats implements qdisc.Qdisc: the tree's qlen and backlog.
func (m *Multiq) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: m.leaves.Qlen, Backlog: m.leaves.Backlog, Drops: m.drops}
}

// Dump implements qdisc.Qdisc (multiq_print_opt: "bands N/MAX").
func (m *Multiq) Dump() string { return fmt.Sprintf("bands %d/%d", m.bands, m.maxBands) }

// ChangeClass implements qdisc.Classful: multiq's classes take no
// options (its class ops have no change).
func (m *Multiq) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("multiq", `Error: Qdisc "multiq" is classless.`)
}

// DeleteClass implements qdisc.Classful: no delete in multiq's class
// ops.
func (m *Multiq) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("multiq", "RTNETLINK answers: Operation not supported (multiq's bands are the device's TX queues)")
}

// Classes implements qdisc.Classful (multiq_walk, multiq_dump_class):
// one class per band, its stats the leaf's (multiq_dump_class_stats).
func (m *Multiq) Classes() []qdisc.Class { return qdisc.BandClasses(m.handle, m.bands) }

// QlenNotify implements qdisc.Classful.
func (m *Multiq) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	m.drops += uint64(m.leaves.Update(id, st, 0, 0))
}
