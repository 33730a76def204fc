package qdisctest

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
)

// dupLeaf is a leaf FIFO that duplicates every packet but its own
// clones (Packet.Dup), as netem with duplicate 100% does.
type dupLeaf struct {
	f    qdisc.PFifo
	dups int
}

func (d *dupLeaf) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	return d.f.Init(ctx, s, []string{"limit", "100000"})
}
func (d *dupLeaf) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) {
	d.f.Enqueue(ctx, b, rc)
	for _, p := range b {
		if !p.IsDup() {
			ctx.Duplicate(p.Handle)
			d.dups++
		}
	}
}
func (d *dupLeaf) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return d.f.Dequeue(ctx, req, out)
}
func (d *dupLeaf) Reset(ctx qdisc.Ctx) { d.f.Reset(ctx) }
func (d *dupLeaf) Stats() qdisc.Stats  { return d.f.Stats() }
func (d *dupLeaf) Dump() string        { return "" }

var dupLeaves []*dupLeaf

func init() {
	qdisc.Register("qdisctest_dup", "test: duplicates every packet once", func() qdisc.Qdisc {
		d := &dupLeaf{}
		dupLeaves = append(dupLeaves, d)
		return d
	})
}

// twoBands is a classful qdisc with two leaf classes, 1:1 and 1:2,
// picked by skb->priority's low bit; band 1 first. It notes what its own
// Enqueue is handed.
type twoBands struct {
	leaves        qdisc.LeafTable
	drops         uint64
	clones, dupIn int // packets without a socket (clones), and ones marked Dup, handed to the root
}

var bandIDs = [2]qdisc.ClassID{qdisc.MakeClassID(1, 1), qdisc.MakeClassID(1, 2)}

func (q *twoBands) Init(qdisc.Ctx, qdisc.Setup, []string) (qdisc.Info, error) {
	return qdisc.Info{}, nil
}
func (q *twoBands) Enqueue(ctx qdisc.Ctx, batch []skb.Packet, rc []qdisc.Code) {
	x := ctx.(qdisc.ClassCtx)
	to := make([]qdisc.ClassID, len(batch))
	for i, p := range batch {
		to[i] = bandIDs[p.Priority&1]
		if p.Sock == -1 {
			q.clones++
		}
		if p.IsDup() {
			q.dupIn++
		}
	}
	res := make([]qdisc.LeafResult, len(batch))
	x.EnqueueLeaves(batch, to, res)
	for i, r := range res {
		rc[i] = r.Code
		q.drops += uint64(q.leaves.Update(to[i], r.Leaf, r.Arrived(), 0))
	}
}
func (q *twoBands) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	x := ctx.(qdisc.ClassCtx)
	return qdisc.BulkDequeue(req, out, func() (skb.Packet, bool) {
		for _, id := range bandIDs {
			if q.leaves.Get(id).Qlen == 0 {
				continue
			}
			p, ok, st := x.DequeueLeaf(id)
			n := 0
			if ok {
				n = 1
			}
			q.drops += uint64(q.leaves.Update(id, st, 0, n))
			if ok {
				return p, true
			}
		}
		return skb.Packet{}, false
	})
}
func (q *twoBands) Stats() qdisc.Stats {
	return qdisc.Stats{Qlen: q.leaves.Qlen, Backlog: q.leaves.Backlog, Drops: q.drops}
}
func (q *twoBands) Dump() string                                { return "" }
func (q *twoBands) Reset(qdisc.Ctx)                             { q.leaves = qdisc.LeafTable{} }
func (q *twoBands) Classful() bool                              { return true }
func (q *twoBands) DeleteClass(qdisc.Ctx, qdisc.ClassID) error  { return nil }
func (q *twoBands) ChangeClass(qdisc.Ctx, qdisc.ClassReq) error { return nil }
func (q *twoBands) Classes() []qdisc.Class {
	return []qdisc.Class{{ID: bandIDs[0], Parent: qdisc.MakeClassID(1, 0), Leaf: true},
		{ID: bandIDs[1], Parent: qdisc.MakeClassID(1, 0), Leaf: true}}
}
func (q *twoBands) QlenNotify(_ qdisc.Ctx, id qdisc.ClassID, st qdisc.LeafState) {
	q.drops += uint64(q.leaves.Update(id, st, 0, 0))
}

// A leaf's duplicate goes to the root, as netem_enqueue's
// rootq->enqueue does: the classful qdisc is handed every clone
// (unmarked: it did not ask), the leaf gets it back marked and does not
// duplicate it again, and the identity counts the clones.
func TestLeafDuplicatesGoToTheRoot(t *testing.T) {
	var roots []*twoBands
	f := func() qdisc.Qdisc { q := &twoBands{}; roots = append(roots, q); return q }
	dupLeaves = nil
	o := Options{Seed: 3, Pkts: 600, Leaves: []string{"parent 1:2 handle 2: qdisctest_dup"}}
	for _, r := range Run(f, o) {
		t.Errorf("%s: %v", r.Check, r.Err)
	}
	if len(roots) == 0 || len(dupLeaves) != len(roots) {
		t.Fatalf("%d roots, %d duplicating leaves", len(roots), len(dupLeaves))
	}
	total := 0
	for i, q := range roots {
		d := dupLeaves[i]
		total += d.dups
		if q.clones != d.dups || q.dupIn != 0 {
			t.Errorf("check %d: the leaf duplicated %d, the root was handed %d clones (%d marked Dup)", i, d.dups, q.clones, q.dupIn)
		}
	}
	if total < 300 {
		t.Errorf("%d duplicates in all checks: too few to test", total)
	}
	// A leaf line naming no leaf class is refused.
	res := Run(f, Options{Seed: 3, Leaves: []string{"parent 1:7 qdisctest_dup"}})
	if len(res) != 1 || res[0].Check != "init" {
		t.Fatalf("a leaf under no class: %v", res)
	}
}
