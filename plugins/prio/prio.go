// Package prio is the kernel's prio qdisc (net/sched/sch_prio.c): a
// classful strict-priority scheduler over 2 to 16 bands, each a class
// whose leaf qdisc (pfifo by default, any qdisc grafted with `tc qdisc
// add ... parent X:N`) the host holds. A packet goes to the band its
// skb->priority names (major = the qdisc's handle), else the band its
// filters give, else priomap[skb->priority & TC_PRIO_MAX]; dequeue serves
// band 0 first.
package prio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

func init() {
	qdisc.Register("prio", "strict priority over 2-16 bands, each a class with its own leaf qdisc (sch_prio.c)",
		func() qdisc.Qdisc { return &Prio{} })
}

// Bounds of struct tc_prio_qopt (include/uapi/linux/pkt_sched.h).
const (
	MaxBands = 16            // TCQ_PRIO_BANDS
	MinBands = 2             // TCQ_MIN_PRIO_BANDS
	PrioMax  = qdisc.PrioMax // TC_PRIO_MAX
)

// defaultPriomap is tc's (and pfifo_fast's) priomap.
var defaultPriomap = [PrioMax + 1]uint8{1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}

// qopt is struct tc_prio_qopt as tc sends it.
type qopt struct {
	bands   int
	priomap [PrioMax + 1]uint8
}

// Prio is struct prio_sched_data; the bands' qdiscs are the host's.
type Prio struct {
	handle    uint16
	bands     int
	prio2band [PrioMax + 1]uint8
	leaves    qdisc.LeafTable
	drops     uint64

	batch qdisc.LeafBatch
}

// parse is prio_parse_opt: "bands N", "priomap P0 P1 ..." (up to 16
// bands, each below bands), "multiqueue" (tc sends TCA_PRIO_MQ after
// struct tc_prio_qopt, and 6.12's prio_tune reads only the struct:
// accepted, it changes nothing, and prio_dump never shows it).
func parse(args []string) (qopt, error) {
	o := qopt{bands: 3, priomap: defaultPriomap}
	pmap, idx := false, 0
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "bands":
			if i+1 >= len(args) {
				return o, qdisc.Parsef("prio", `"bands" needs a value`)
			}
			i++
			n, err := strconv.ParseInt(args[i], 10, 32)
			if err != nil {
				return o, qdisc.Parsef("prio", "Illegal \"bands\" %q", args[i])
			}
			o.bands = int(n)
		case w == "priomap":
			if pmap {
				return o, qdisc.Parsef("prio", "Error: duplicate priomap")
			}
			pmap = true
		case w == "multiqueue":
		default:
			if !pmap {
				return o, qdisc.Parsef("prio", "What is %q?", w)
			}
			band, err := strconv.ParseUint(w, 10, 32)
			if err != nil {
				return o, qdisc.Parsef("prio", "Illegal \"priomap\" element %q", w)
			}
			if int(band) >= o.bands {
				return o, qdisc.Parsef("prio", "\"priomap\" element %d is out of bands (%d)", band, o.bands)
			}
			if idx > PrioMax {
				return o, qdisc.Parsef("prio", "\"priomap\" index > TC_PRIO_MAX=%d", PrioMax)
			}
			o.priomap[idx] = uint8(band)
			idx++
		}
	}
	return o, nil
}

// validate is prio_tune's checks.
func (o qopt) validate() error {
	if o.bands > MaxBands || o.bands < MinBands {
		return qdisc.Refusef("prio", "RTNETLINK answers: Invalid argument (bands %d: prio has %d to %d)", o.bands, MinBands, MaxBands)
	}
	for i, b := range o.priomap {
		if int(b) >= o.bands {
			return qdisc.Refusef("prio", "RTNETLINK answers: Invalid argument (priomap[%d] is band %d of %d bands)", i, b, o.bands)
		}
	}
	return nil
}

// Init implements qdisc.Qdisc (prio_init -> prio_tune): the bands'
// classes appear, and the host gives each a pfifo.
func (p *Prio) Init(_ qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if err := o.validate(); err != nil {
		return qdisc.Info{}, err
	}
	p.handle = uint16(s.Major())
	p.bands, p.prio2band = o.bands, o.priomap
	return qdisc.Info{}, nil
}

// Change implements qdisc.Changer (prio_tune): bands may grow (new
// classes get a pfifo) or shrink (the dropped bands' packets are flushed:
// counted here as dropped, purged by the host).
func (p *Prio) Change(_ qdisc.Ctx, args []string) (qdisc.Info, error) {
	o, err := parse(args)
	if err != nil {
		return qdisc.Info{}, err
	}
	if err := o.validate(); err != nil {
		return qdisc.Info{}, err
	}
	for b := o.bands; b < p.bands; b++ {
		p.drops += uint64(p.leaves.Remove(p.class(b)).Qlen) // qdisc_tree_flush_backlog
	}
	p.bands, p.prio2band = o.bands, o.priomap
	return qdisc.Info{}, nil
}

func (p *Prio) class(band int) qdisc.ClassID { return qdisc.MakeClassID(p.handle, uint16(band+1)) }

// classify is prio_classify: the band for p, or -1 to drop it.
func (p *Prio) classify(x qdisc.ClassCtx, pk *skb.Packet) int {
	return qdisc.PrioBand(x, pk, p.handle, p.bands, &p.prio2band)
}

// Enqueue implements qdisc.Qdisc (prio_enqueue): classify each packet,
// then one host call puts them in their bands' leaves.
func (p *Prio) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	p.batch.Reset()
	for i := range batch {
		ctx.Work(qdisc.WorkEnqueue, 1)
		b := p.classify(x, &batch[i])
		if b < 0 {
			// NET_XMIT_SUCCESS | __NET_XMIT_BYPASS: counted as a drop,
			// but dev_qdisc_enqueue masks the bypass bit, so the sender
			// sees NET_XMIT_SUCCESS (a parent still counts the drop).
			p.drops++
			ctx.Drop(batch[i].Handle, skb.DropQdiscDrop)
			rc[i] = qdisc.XmitSuccess | qdisc.XmitBypass
			continue
		}
		p.batch.Add(&batch[i], p.class(b), i)
	}
	p.drops += p.batch.Send(x, &p.leaves, rc)
}

// Dequeue implements qdisc.Qdisc (prio_dequeue per packet: the first
// band whose leaf gives one).
func (p *Prio) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		pk, ok, dropped := p.leaves.DequeueFirst(ctx, x, p.bands, p.class)
		p.drops += uint64(dropped)
		return pk, ok
	})
}

// Peek implements qdisc.Peeker (prio_peek).
func (p *Prio) Peek(ctx qdisc.Ctx) (skb.Packet, bool) {
	x := ctx.(qdisc.ClassCtx)
	for b := 0; b < p.bands; b++ {
		pk, ok, dropped := p.leaves.PeekHead(x, p.class(b))
		p.drops += uint64(dropped)
		if ok {
			return pk, true
		}
	}
	return skb.Packet{}, false
}

// Reset implements qdisc.Resetter (prio_reset: the host resets the
// bands' leaves).
func (p *Prio) Reset(qdisc.Ctx) { p.leaves.Reset() }

// Stats implements qdisc.Qdisc: the tree's qlen and backlog.
func (p *Prio) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: p.leaves.Qlen, Backlog: p.leaves.Backlog, Drops: p.drops}
}

// Dump implements qdisc.Qdisc (prio_print_opt).
func (p *Prio) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bands %d priomap", p.bands)
	for _, v := range p.prio2band {
		fmt.Fprintf(&b, " %d", v)
	}
	return b.String()
}

// ChangeClass implements qdisc.Classful: tc has no class options for
// prio (its q_prio.c has no parse_copt).
func (p *Prio) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error {
	return qdisc.Parsef("prio", `Error: Qdisc "prio" is classless.`)
}

// DeleteClass implements qdisc.Classful: prio's class ops have no
// delete.
func (p *Prio) DeleteClass(qdisc.Ctx, qdisc.ClassID) error {
	return qdisc.Refusef("prio", "RTNETLINK answers: Operation not supported (prio's bands go with \"bands\")")
}

// Classes implements qdisc.Classful (prio_walk, prio_dump_class): one
// class per band, parent the qdisc, its stats the leaf's.
func (p *Prio) Classes() []qdisc.Class { return qdisc.BandClasses(p.handle, p.bands) }

// QlenNotify implements qdisc.Classful.
func (p *Prio) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	p.drops += uint64(p.leaves.Update(id, st, 0, 0))
}
