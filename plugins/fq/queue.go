package fq

import (
	"math/bits"
	"slices"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// fqPkt is a held packet plus its fq_skb_cb (time_to_send, band).
type fqPkt struct {
	p    skb.Packet
	tts  sim.Time // fq_skb_cb->time_to_send
	band uint8    // fq_skb_cb->band
}

// pktRing is a flow's linear list (flow->head .. flow->tail) of packets
// whose time_to_send never decreases, kept as a ring so that steady
// state allocates nothing.
type pktRing = qdisc.Ring[fqPkt]

// fqFlow is struct fq_flow.
type fqFlow struct {
	list  pktRing // packets in time order (flow->head/tail)
	troot []fqPkt // out-of-order packets sorted by time_to_send (flow->t_root)

	key        uint64 // flow->sk: socket id << 1, or the odd orphan pseudo key (internalKey for q->internal)
	socketHash uint32 // flow->socket_hash (sk_hash)
	qlen       int
	credit     int
	band       int
	next       *fqFlow // link in a new_flows/old_flows list

	// The kernel folds "detached" into the low bit of f->age, which
	// shares storage with f->tail: a flow is detached from the moment it
	// leaves the round robin empty until a packet is queued to it.
	detached bool
	age      sim.Time // when it was detached, for gc and refill_delay

	throttled      bool // in q->delayed (kernel: f->next == &throttled)
	hidx           int  // index in the delayed heap
	hseq           uint64
	timeNextPacket sim.Time // f->time_next_packet, 0 = never paced
}

// flowQueueAdd is flow_queue_add: append if time_to_send is not before
// the tail's, else insert into the time-ordered t_root (equal times keep
// arrival order, as the rb-tree insert goes right on >=). It returns the
// tree nodes it visited.
func (f *fqFlow) flowQueueAdd(p fqPkt) int {
	f.detached = false // kernel: writing f->tail overwrites f->age
	if f.list.Len() == 0 || p.tts >= f.list.Back().tts {
		f.list.PushTail(p)
		return 0
	}
	i, _ := slices.BinarySearchFunc(f.troot, p.tts, func(e fqPkt, t sim.Time) int {
		if e.tts <= t {
			return -1
		}
		return 1
	})
	f.troot = slices.Insert(f.troot, i, p)
	return bits.Len(uint(len(f.troot)))
}

// fqPeek is fq_peek: the earlier of t_root's first and the list head;
// on a tie the list head wins. fromTree says which one it was.
func (f *fqFlow) fqPeek() (p *fqPkt, fromTree bool) {
	if len(f.troot) == 0 {
		if f.list.Len() == 0 {
			return nil, false
		}
		return f.list.Front(), false
	}
	if f.list.Len() == 0 || f.troot[0].tts < f.list.Front().tts {
		return &f.troot[0], true
	}
	return f.list.Front(), false
}

// fqEraseHead is fq_erase_head: remove what fqPeek returned.
func (f *fqFlow) fqEraseHead(fromTree bool) fqPkt {
	if !fromTree {
		return f.list.PopHead()
	}
	p := f.troot[0]
	f.troot[0] = fqPkt{}
	f.troot = f.troot[1:]
	if len(f.troot) == 0 {
		f.troot = nil
	}
	return p
}

// fqFlowHead is struct fq_flow_head: a singly linked FIFO of flows.
type fqFlowHead struct {
	first, last *fqFlow
}

// fqPerbandFlows is struct fq_perband_flows.
type fqPerbandFlows struct {
	newFlows, oldFlows fqFlowHead
	credit             int
	quantum            int // the band's weight
}

// fqPbandHeadSelect is fq_pband_head_select: new flows first, nothing
// while the band is out of credit.
func (b *fqPerbandFlows) fqPbandHeadSelect() *fqFlowHead {
	if b.credit <= 0 {
		return nil
	}
	if b.newFlows.first != nil {
		return &b.newFlows
	}
	if b.oldFlows.first != nil {
		return &b.oldFlows
	}
	return nil
}

// delayedHeap is q->delayed: throttled flows ordered by time_next_packet,
// ties in insertion order (the kernel's rb-tree insert goes right on >=,
// so rb_first is the earliest-inserted of equal times).
type delayedHeap []*fqFlow

func (h delayedHeap) less(i, j int) bool {
	if h[i].timeNextPacket != h[j].timeNextPacket {
		return h[i].timeNextPacket < h[j].timeNextPacket
	}
	return h[i].hseq < h[j].hseq
}

func (h delayedHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}

func (h delayedHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h delayedHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *delayedHeap) push(f *fqFlow) {
	f.hidx = len(*h)
	*h = append(*h, f)
	h.up(f.hidx)
}

func (h *delayedHeap) remove(f *fqFlow) {
	old := *h
	i, last := f.hidx, len(old)-1
	if i != last {
		old.swap(i, last)
	}
	old[last] = nil
	*h = old[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	f.hidx = -1
}
