// Package ets is the kernel's Enhanced Transmission Selection qdisc
// (net/sched/sch_ets.c, 802.1Qaz): prio and drr in one. 1 to 16 bands,
// each a class whose leaf (a pfifo by default, any qdisc grafted with
// `tc qdisc add ... parent X:N`) the host holds; the first `strict`
// bands are served in strict priority, band 0 first, and the rest share
// what the strict bands leave by deficit round robin, each with its
// quantum. A packet goes to the band its skb->priority names (major =
// the qdisc's handle), else the band its filters give, else
// priomap[skb->priority & TC_PRIO_MAX]; by default everything goes to
// the last band. Bands come and go only with the qdisc's options.
package ets

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/plugins/internal/deficit"
)

func init() {
	qdisc.Register("ets", "Enhanced Transmission Selection (802.1Qaz): 1-16 bands, strict ones first, the rest sharing by DRR quanta, each a class with its own leaf qdisc (sch_ets.c)",
		func() qdisc.Qdisc { return &ETS{} })
}

// Bounds of the kernel's and tc's (include/uapi/linux/pkt_sched.h,
// sch_ets.c).
const (
	MaxBands   = 16            // TCQ_ETS_MAX_BANDS
	PrioMax    = qdisc.PrioMax // TC_PRIO_MAX
	minQuantum = 256           // ets_quantum_parse's clamp
	maxQuantum = 1 << 20       // ets_quantum_parse's clamp
)

// qopt is what tc sends (TCA_ETS_NBANDS, TCA_ETS_NSTRICT, the
// TCA_ETS_QUANTA and TCA_ETS_PRIOMAP lists as long as tc's words made
// them).
type qopt struct {
	nbands, nstrict int
	quanta          []uint32
	priomap         []uint8
}

// ETS is struct ets_sched; the bands' qdiscs are the host's.
type ETS struct {
	handle          uint16
	mtu             uint32
	nbands, nstrict int
	prio2band       [PrioMax + 1]uint8
	classes         [MaxBands]deficit.Class
	round           deficit.Round // the active bandwidth-sharing bands
	leaves          qdisc.LeafTable
	drops           uint64
}

// parse is tc's ets_parse_opt: "bands N", "strict N", "quanta Q1 Q2
// ...", "priomap P0 P1 ...", with its messages.
func parse(args []string) (qopt, error) {
	var o qopt
	quantaMode, priomapMode := false, false
	a := qdisc.NewArgs("ets", args)
	for w := a.Next(); w != ""; w = a.Next() {
		switch {
		case w == "bands" || w == "strict":
			// tc's duplicate checks test the value so far: "bands 0"
			// counts as none.
			n := &o.nbands
			if w == "strict" {
				n = &o.nstrict
			}
			if *n != 0 {
				return o, qdisc.Parsef("ets", "Duplicate %q", w)
			}
			v, err := a.Value(w)
			if err != nil {
				return o, err
			}
			u, err := units.GetUnsigned(v, 10)
			if err != nil {
				return o, qdisc.Parsef("ets", "Illegal %q", w)
			}
			if u > MaxBands {
				return o, qdisc.Parsef("ets", "The number of %q must be <= %d", w, MaxBands)
			}
			*n = int(u)
			quantaMode, priomapMode = false, false
		case w == "quanta" || w == "priomap":
			if (w == "quanta" && len(o.quanta) > 0) || (w == "priomap" && len(o.priomap) > 0) {
				return o, qdisc.Parsef("ets", "Duplicate %q", w)
			}
			v, err := a.Value(w)
			if err != nil {
				return o, err
			}
			quantaMode, priomapMode = w == "quanta", w == "priomap"
			if err := o.add(quantaMode, v); err != nil {
				return o, err
			}
		case quantaMode || priomapMode:
			if err := o.add(quantaMode, w); err != nil {
				return o, err
			}
		default:
			return o, qdisc.Parsef("ets", "What is %q?", w)
		}
	}
	if o.nbands == 0 {
		o.nbands = len(o.quanta) + o.nstrict
	}
	if o.nbands == 0 {
		return o, qdisc.Parsef("ets", `One of "bands", "quanta" or "strict" needs to be specified`)
	}
	if o.nstrict+len(o.quanta) > o.nbands {
		return o, qdisc.Parsef("ets", "Not enough total bands to cover all the strict bands and quanta")
	}
	for _, b := range o.priomap {
		if int(b) >= o.nbands {
			return o, qdisc.Parsef("ets", `"priomap" element is out of bounds`)
		}
	}
	return o, nil
}

// add is one element of the quanta (tc's parse_quantum) or the priomap
// (any unsigned number: tc checks it against the bands after the loop,
// the kernel takes it as a u8).
func (o *qopt) add(quantum bool, w string) error {
	n, err := units.GetUnsigned(w, 10)
	switch {
	case quantum && err != nil:
		return qdisc.Parsef("ets", `Illegal "quanta" element %q`, w)
	case quantum && n == 0:
		return qdisc.Parsef("ets", `"quanta" must be > 0`)
	case quantum:
		o.quanta = append(o.quanta, n)
	case err != nil:
		return qdisc.Parsef("ets", `Illegal "priomap" element %q`, w)
	case len(o.priomap) > PrioMax:
		return qdisc.Parsef("ets", `"priomap" index cannot be higher than %d`, PrioMax)
	default:
		o.priomap = append(o.priomap, uint8(n))
	}
	return nil
}

// clampQuantum is ets_quantum_parse.
func clampQuantum(q uint32) uint32 { return min(max(q, minQuantum), maxQuantum) }

// Init implements qdisc.Qdisc (ets_qdisc_init -> ets_qdisc_change): the
// bands' classes appear, and the host gives each a pfifo.
func (q *ETS) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	q.handle, q.mtu = uint16(s.Major()), uint32(s.MTU)
	for b := range q.classes {
		q.classes[b].ID = qdisc.MakeClassID(q.handle, uint16(b+1))
	}
	return q.Change(ctx, args)
}

// Change implements qdisc.Changer (ets_qdisc_change): bands may grow
// (new classes get a pfifo) or shrink (the bands dropped are purged,
// their packets counted as ets's drops by qdisc_tree_reduce_backlog);
// a band that turns from strict to sharing joins the round if it holds
// packets, one that turns strict leaves it.
func (q *ETS) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	// The kernel's own checks: tc's are stricter, so none can fail
	// from tc's words ("Invalid number of bands", "Invalid number of
	// strict bands", "Invalid band number in ETS priomap", "ETS quanta
	// has more values than bands").
	var prio2band [PrioMax + 1]uint8
	for i := range prio2band {
		prio2band[i] = uint8(o.nbands - 1) // unless overridden, the last band
	}
	copy(prio2band[:], o.priomap)
	var quanta [MaxBands]uint32
	for i, v := range o.quanta {
		quanta[o.nstrict+i] = clampQuantum(v)
	}
	for i := o.nstrict; i < o.nbands; i++ {
		if quanta[i] == 0 {
			quanta[i] = clampQuantum(q.mtu) // psched_mtu
		}
	}

	oldbands := q.nbands
	for i := o.nbands; i < oldbands; i++ {
		q.round.Deactivate(&q.classes[i])
		q.drops += uint64(q.leaves.Remove(q.classes[i].ID).Qlen) // qdisc_purge_queue
	}
	q.nbands = o.nbands
	for i := o.nstrict; i < q.nstrict; i++ {
		if q.leaves.Get(q.classes[i].ID).Qlen > 0 {
			q.classes[i].Quantum = quanta[i]
			q.round.Activate(&q.classes[i]) // deficit = quanta[i]
		}
	}
	for i := q.nstrict; i < o.nstrict; i++ {
		q.round.Deactivate(&q.classes[i])
	}
	q.nstrict = o.nstrict
	q.prio2band = prio2band
	for i := 0; i < q.nbands; i++ {
		q.classes[i].Quantum = quanta[i]
	}
	for i := q.nbands; i < oldbands; i++ {
		q.classes[i].Quantum, q.classes[i].Deficit = 0, 0
	}
	return qdisc.Info{}, nil
}

func (q *ETS) strict(cl *deficit.Class) bool { return q.band(cl) < q.nstrict }

func (q *ETS) band(cl *deficit.Class) int { return int(cl.ID.Minor()) - 1 }

// etsClassify is ets_classify: nil drops the packet.
func (q *ETS) etsClassify(x qdisc.ClassCtx, p *skb.Packet) *deficit.Class {
	b := qdisc.PrioBand(x, p, q.handle, q.nbands, &q.prio2band)
	if b < 0 {
		return nil
	}
	return &q.classes[b]
}

// Enqueue implements qdisc.Qdisc (ets_qdisc_enqueue for each packet):
// the sharing bands join the round, the strict ones do not.
func (q *ETS) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	q.drops += q.round.Enqueue(ctx, batch, rc, &q.leaves, q.etsClassify, func(cl *deficit.Class) bool { return !q.strict(cl) })
}

// etsDequeue is ets_qdisc_dequeue: the strict bands in order, then the
// round over the sharing ones.
func (q *ETS) etsDequeue(ctx qdisc.Ctx, x qdisc.ClassCtx) (skb.Packet, bool) {
	p, ok, dropped := q.leaves.DequeueFirst(ctx, x, q.nstrict, func(b int) qdisc.ClassID { return q.classes[b].ID })
	q.drops += uint64(dropped)
	if ok {
		return p, true
	}
	p, ok, drops := q.round.Dequeue(ctx, x, &q.leaves)
	q.drops += drops
	return p, ok
}

// Dequeue implements qdisc.Qdisc. ets has no peek of its own
// (qdisc_peek_dequeued): the host's.
func (q *ETS) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) { return q.etsDequeue(ctx, x) })
}

// Reset implements qdisc.Resetter (ets_qdisc_reset: the host resets the
// bands' leaves).
func (q *ETS) Reset(qdisc.Ctx) {
	q.round.Reset()
	q.leaves.Reset()
}

// Stats implements qdisc.Qdisc: the tree's qlen and backlog.
func (q *ETS) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops}
}

// Dump implements qdisc.Qdisc (tc's ets_print_opt of ets_qdisc_dump:
// "bands 4 strict 1 quanta 3000 2000 1514 priomap 3 3 ... ", the
// quanta only for the sharing bands, every list closed by a space).
func (q *ETS) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bands %d ", q.nbands)
	if q.nstrict > 0 {
		fmt.Fprintf(&b, "strict %d ", q.nstrict)
	}
	if q.nbands > q.nstrict {
		b.WriteString("quanta")
		for i := q.nstrict; i < q.nbands; i++ {
			fmt.Fprintf(&b, " %d", q.classes[i].Quantum)
		}
		b.WriteString(" ")
	}
	b.WriteString("priomap")
	for _, v := range q.prio2band {
		fmt.Fprintf(&b, " %d", v)
	}
	b.WriteString(" ")
	return b.String()
}

// ChangeClass implements qdisc.Classful (ets_class_change): a band's
// "quantum Q" (tc's ets_parse_copt); a strict band has none, and classes
// neither appear nor go this way.
func (q *ETS) ChangeClass(_ qdisc.Ctx, req qdisc.ClassReq) error {
	var quantum uint32
	a := qdisc.NewArgs("ets", req.Args)
	for k := a.Next(); k != ""; k = a.Next() {
		if k != "quantum" {
			return qdisc.Parsef("ets", "What is %q?", k)
		}
		if quantum != 0 {
			return qdisc.Parsef("ets", `Duplicate "quantum"`)
		}
		v, err := a.Value(k)
		if err != nil {
			return err
		}
		var o qopt
		if err := o.add(true, v); err != nil {
			return err
		}
		quantum = o.quanta[0]
	}
	b := int(req.ID.Minor()) - 1 // ets_class_find
	if req.ID.Major() != q.handle || b < 0 || b >= q.nbands {
		return qdisc.Refusef("ets", "Error: Fine-grained class addition and removal is not supported.")
	}
	if quantum == 0 {
		return nil // nothing to configure
	}
	cl := &q.classes[b]
	if q.strict(cl) {
		return qdisc.Refusef("ets", "Error: Strict bands do not have a configurable quantum.")
	}
	cl.Quantum = clampQuantum(quantum)
	return nil
}

// DeleteClass implements qdisc.Classful: ets's class ops have no delete.
func (q *ETS) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("ets", "RTNETLINK answers: Operation not supported (ets's bands go with \"bands\")")
}

// Classes implements qdisc.Classful (ets_qdisc_walk, ets_class_dump,
// ets_class_dump_stats): one class per band, parent root, a sharing
// band's quantum, the leaf's counters.
func (q *ETS) Classes() []qdisc.Class {
	out := make([]qdisc.Class, q.nbands)
	for b := range out {
		cl := &q.classes[b]
		out[b] = qdisc.Class{ID: cl.ID, Parent: qdisc.RootClass, Leaf: true, LeafStats: true}
		if !q.strict(cl) {
			out[b].Options = fmt.Sprintf("quantum %d ", cl.Quantum)
		}
	}
	return out
}

// QlenNotify implements qdisc.Classful (ets_class_qlen_notify): a
// sharing band whose leaf emptied leaves the round.
func (q *ETS) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
	if b := int(id.Minor()) - 1; id.Major() == q.handle && b >= 0 && b < q.nbands && st.Qlen == 0 {
		q.round.Deactivate(&q.classes[b])
	}
}
