package skb

import "fmt"

// Pool allocates SKBs from slabs and recycles them; steady state makes no
// Go allocations. It also resolves handles, detecting stale ones.
//
// A slot's Handle always holds its index and its last generation, live
// or not (the host restores it when it copies a Packet over an skb), so
// that the skb holds neither again. A freed skb keeps its fields, Next
// nil, and a list op on it panics (List.Push, List.Pop): code that
// walks a list after giving its skbs away is caught at the first freed
// one, before the slot's next user links it elsewhere. The free slots
// are a stack of indices: 4 bytes a free slot.
type Pool struct {
	slabs [][]SKB
	free  []uint32
	live  int
	total uint64
	// reasons are the drop reasons the skbs' reason fields index; 0 is
	// DropNone.
	reasons []DropReason
	// owners are the owners SKB.Owner names, OwnerID i at i-1.
	owners []Owner
	// over, if set, is told once when live first passes limit
	// (SetLimit).
	limit int
	over  func(live int)
}

// SetLimit has over called, once, from the Get that first makes more
// than limit skbs live: a run stops there rather than hold a queue that
// grows without end (Get still returns the skb, so the accounting
// holds). A nil over removes the limit.
func (p *Pool) SetLimit(limit int, over func(live int)) {
	p.limit, p.over = limit, over
}

// slabSize is small enough that the last slab's unused slots are a few
// percent of a deep backlog's skbs.
const slabSize = 1024

// Get returns a zeroed live SKB with a fresh handle.
func (p *Pool) Get() *SKB {
	if len(p.free) == 0 {
		base := uint32(len(p.slabs) * slabSize)
		slab := make([]SKB, slabSize)
		p.slabs = append(p.slabs, slab)
		// The stack grows only as far as free slots ever go, not to
		// every slot: a deep backlog's skbs, all live, leave it short.
		for i := slabSize - 1; i >= 0; i-- {
			slab[i].Handle = Handle(base + uint32(i))
			p.free = append(p.free, base+uint32(i))
		}
	}
	idx := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	s := &p.slabs[idx/slabSize][idx%slabSize]
	gen := uint32(uint64(s.Handle)>>32) + 1
	*s = SKB{flags: flagLive}
	s.Handle = Handle(uint64(gen)<<32 | uint64(idx))
	p.live++
	p.total++
	if p.live > p.limit && p.over != nil {
		over := p.over
		p.over = nil
		over(p.live)
	}
	return s
}

// Put returns s to the pool. Putting a dead skb is a model bug.
func (p *Pool) Put(s *SKB) {
	if !s.live() {
		panic(fmt.Sprintf("skb: double free of handle %#x", uint64(s.Handle)))
	}
	if p.Lookup(s.Handle) != s {
		panic(fmt.Sprintf("skb: freeing an skb whose handle %#x is not its slot's", uint64(s.Handle)))
	}
	s.flags &^= flagLive
	s.Next = nil
	s.Owner = 0
	p.free = append(p.free, uint32(s.Handle))
	p.live--
}

// Lookup resolves a handle to its live SKB, or nil if the handle is stale,
// forged or freed.
func (p *Pool) Lookup(h Handle) *SKB {
	idx := uint32(h)
	if int(idx/slabSize) >= len(p.slabs) {
		return nil
	}
	s := &p.slabs[idx/slabSize][idx%slabSize]
	if !s.live() || s.Handle != h {
		return nil
	}
	return s
}

// SetReason records why s is dropped (skb_drop_reason). The skb keeps a
// byte, an index into the pool's reasons: the few a run uses.
func (p *Pool) SetReason(s *SKB, r DropReason) {
	if len(p.reasons) == 0 {
		p.reasons = append(p.reasons, DropNone)
	}
	for i, x := range p.reasons {
		if x == r {
			s.reason = uint8(i)
			return
		}
	}
	if len(p.reasons) > 0xff {
		panic(fmt.Sprintf("skb: drop reason %s is one more than the 256 a pool tells apart", r))
	}
	s.reason = uint8(len(p.reasons))
	p.reasons = append(p.reasons, r)
}

// Reason is why s is dropped, as last set by SetReason (DropNone if not).
func (p *Pool) Reason(s *SKB) DropReason {
	if s.reason == 0 {
		return DropNone
	}
	return p.reasons[s.reason]
}

// AddOwner registers o, once, and returns the ID its skbs carry in
// SKB.Owner. Owners are the run's sockets, few and made at its start or
// a connection's: the table is never trimmed.
func (p *Pool) AddOwner(o Owner) OwnerID {
	if o == nil {
		panic("skb: a nil owner")
	}
	p.owners = append(p.owners, o)
	return OwnerID(len(p.owners))
}

// Owner is the socket s belongs to (charged, or orphaned with its
// socket kept), nil if none.
func (p *Pool) Owner(s *SKB) Owner {
	id := s.Owner
	if id == 0 {
		return nil
	}
	if id < 0 {
		id = -id
	}
	return p.owners[id-1]
}

// Orphan marks s orphaned (SKB.Orphaned) and returns its owner's
// Orphaner to run the destructor now, or nil, leaving s as it was, when
// s has no owner, was orphaned already, or its owner keeps no charge
// that skb_orphan_partial returns.
func (p *Pool) Orphan(s *SKB) Orphaner {
	if s.Owner <= 0 {
		return nil
	}
	o, ok := p.owners[s.Owner-1].(Orphaner)
	if !ok {
		return nil
	}
	s.Owner = -s.Owner
	return o
}

// Live is the number of SKBs allocated and not yet freed.
func (p *Pool) Live() int { return p.live }

// Allocated is the number of Get calls so far.
func (p *Pool) Allocated() uint64 { return p.total }

// Each calls fn for every live SKB.
func (p *Pool) Each(fn func(*SKB)) {
	for _, slab := range p.slabs {
		for i := range slab {
			if slab[i].live() {
				fn(&slab[i])
			}
		}
	}
}
