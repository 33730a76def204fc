package skb

import "fmt"

// Pool allocates SKBs from slabs and recycles them; steady state makes no
// Go allocations. It also resolves handles, detecting stale ones.
type Pool struct {
	slabs [][]SKB
	free  []uint32
	live  int
	total uint64
}

const slabSize = 4096

// Get returns a zeroed live SKB with a fresh handle.
func (p *Pool) Get() *SKB {
	if len(p.free) == 0 {
		base := uint32(len(p.slabs) * slabSize)
		slab := make([]SKB, slabSize)
		p.slabs = append(p.slabs, slab)
		for i := slabSize - 1; i >= 0; i-- {
			slab[i].idx = base + uint32(i)
			p.free = append(p.free, base+uint32(i))
		}
	}
	idx := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	s := &p.slabs[idx/slabSize][idx%slabSize]
	gen := s.gen + 1
	*s = SKB{idx: idx, gen: gen, live: true}
	s.Handle = Handle(uint64(gen)<<32 | uint64(idx))
	p.live++
	p.total++
	return s
}

// Put returns s to the pool. Putting a dead skb is a model bug.
func (p *Pool) Put(s *SKB) {
	if !s.live {
		panic(fmt.Sprintf("skb: double free of handle %#x", uint64(s.Handle)))
	}
	s.live = false
	s.Next = nil
	s.Owner = nil
	p.free = append(p.free, s.idx)
	p.live--
}

// Lookup resolves a handle to its live SKB, or nil if the handle is stale,
// forged or freed.
func (p *Pool) Lookup(h Handle) *SKB {
	idx := uint32(h)
	gen := uint32(uint64(h) >> 32)
	if int(idx/slabSize) >= len(p.slabs) {
		return nil
	}
	s := &p.slabs[idx/slabSize][idx%slabSize]
	if !s.live || s.gen != gen {
		return nil
	}
	return s
}

// Live is the number of SKBs allocated and not yet freed.
func (p *Pool) Live() int { return p.live }

// Allocated is the number of Get calls so far.
func (p *Pool) Allocated() uint64 { return p.total }

// Each calls fn for every live SKB.
func (p *Pool) Each(fn func(*SKB)) {
	for _, slab := range p.slabs {
		for i := range slab {
			if slab[i].live {
				fn(&slab[i])
			}
		}
	}
}
