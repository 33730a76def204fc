package skb

import (
	"testing"
	"unsafe"

	"github.com/txlab/txlab/framework/sim"
)

// Every packet in flight holds an SKB, and its qdisc a copy of the
// Packet: the 256 bytes per packet in flight leave them this
// much (run.TestInflightMemory measures the whole).
func TestSizes(t *testing.T) {
	skbSize, pktSize := unsafe.Sizeof(SKB{}), unsafe.Sizeof(Packet{})
	t.Logf("sizeof SKB %d, Packet %d", skbSize, pktSize)
	if skbSize > 160 || pktSize > 72 {
		t.Errorf("sizeof SKB %d, Packet %d: want at most 160 and 72", skbSize, pktSize)
	}
}

// Freed slots are reused last freed first, each with its next
// generation, and a stale handle resolves to nothing.
func TestPoolReuse(t *testing.T) {
	handle := func(gen, idx uint32) Handle { return Handle(uint64(gen)<<32 | uint64(idx)) }
	var p Pool
	a, b := p.Get(), p.Get()
	if a.Handle != handle(1, 0) || b.Handle != handle(1, 1) {
		t.Fatalf("handles %#x %#x, want generation 1 of slots 0 and 1", a.Handle, b.Handle)
	}
	ha, hb := a.Handle, b.Handle
	p.Put(a)
	p.Put(b)
	if p.Lookup(ha) != nil || p.Live() != 0 {
		t.Fatalf("a freed handle resolves, or %d live", p.Live())
	}
	if c := p.Get(); c != b || c.Handle != handle(2, 1) || p.Lookup(hb) != nil || p.Lookup(c.Handle) != c {
		t.Fatalf("got handle %#x, want slot 1's generation 2", c.Handle)
	}
	if d := p.Get(); d != a || d.Handle != handle(2, 0) {
		t.Fatalf("got handle %#x, want slot 0's generation 2", d.Handle)
	}
	for range slabSize {
		p.Get()
	}
	if len(p.slabs) != 2 || p.Live() != slabSize+2 {
		t.Fatalf("%d slabs, %d live", len(p.slabs), p.Live())
	}
}

func TestPoolReasons(t *testing.T) {
	var p Pool
	a, b := p.Get(), p.Get()
	if p.Reason(a) != DropNone {
		t.Fatalf("a fresh skb's reason is %q", p.Reason(a))
	}
	p.SetReason(a, DropQdiscDrop)
	p.SetReason(b, "SOMETHING_NEW")
	if p.Reason(a) != DropQdiscDrop || p.Reason(b) != "SOMETHING_NEW" {
		t.Fatalf("reasons %q %q", p.Reason(a), p.Reason(b))
	}
	p.SetReason(b, DropQdiscDrop)
	if p.Reason(b) != DropQdiscDrop || len(p.reasons) != 3 {
		t.Fatalf("reason %q, %d known", p.Reason(b), len(p.reasons))
	}
}

type countingOwner struct{ released int }

func (o *countingOwner) Release(*sim.CPU, *SKB) { o.released++ }

// An skb names its owner by ID; a freed one, and one never charged,
// has none.
func TestPoolOwners(t *testing.T) {
	var p Pool
	o1, o2 := &countingOwner{}, &countingOwner{}
	id1, id2 := p.AddOwner(o1), p.AddOwner(o2)
	if id1 == 0 || id2 == 0 || id1 == id2 {
		t.Fatalf("owner IDs %d %d", id1, id2)
	}
	a, b := p.Get(), p.Get()
	a.Owner = id2
	if p.Owner(a) != o2 || p.Owner(b) != nil {
		t.Fatalf("owners %v %v, want o2 and nil", p.Owner(a), p.Owner(b))
	}
	p.Put(a)
	if a.Owner != 0 || p.Owner(a) != nil {
		t.Fatalf("a freed skb keeps owner %d", a.Owner)
	}
}

// A list op on a freed skb is a model bug (the host kept walking a list
// whose skbs it had handed to a driver): it panics at once rather than
// corrupt whatever list the skb's next user puts it on.
func TestListRefusesFreedSkbs(t *testing.T) {
	for _, op := range []string{"push", "pop"} {
		t.Run(op, func(t *testing.T) {
			var p Pool
			var l List
			a := p.Get()
			l.Push(a)
			p.Put(a) // given away and freed while still linked
			defer func() {
				if recover() == nil {
					t.Errorf("%s of a freed skb did not panic", op)
				}
			}()
			if op == "push" {
				l.Push(a)
			} else {
				l.Pop()
			}
		})
	}
}

// SetLimit: over is told once, by the Get that makes one more than limit
// live (frees in between count), and that Get still returns its skb.
func TestPoolLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit int
		ops   string // g: Get, p: Put the newest
		want  []int  // live counts over was told
	}{
		{"at the limit", 3, "ggg", nil},
		{"past it once", 3, "gggggg", []int{4}},
		{"frees count", 3, "gggpgpgg", []int{4}},
		{"zero", 0, "gg", []int{1}},
		{"none", -1, "gggg", nil},
	} {
		var p Pool
		var told []int
		if tt.limit >= 0 {
			p.SetLimit(tt.limit, func(live int) { told = append(told, live) })
		}
		var held []*SKB
		for _, op := range tt.ops {
			if op == 'g' {
				s := p.Get()
				if s == nil || !s.live() {
					t.Fatalf("%s: Get returned no live skb", tt.name)
				}
				held = append(held, s)
				continue
			}
			p.Put(held[len(held)-1])
			held = held[:len(held)-1]
		}
		if len(told) != len(tt.want) || len(told) > 0 && told[0] != tt.want[0] {
			t.Errorf("%s: over told %v, want %v", tt.name, told, tt.want)
		}
	}
}
