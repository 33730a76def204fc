package driver

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Desc is one TX descriptor slot: the packet it carries (on its last
// descriptor) and when the hardware finishes with it.
type Desc struct {
	H      skb.Handle
	Bytes  uint32
	Last   bool     // end of packet: the slot that holds the skb
	DoneAt sim.Time // wire completion (valid once posted to hardware)
	// Segs is the frames a TSO packet becomes on the wire (0 or 1: one).
	Segs uint16
}

// Frames is the frames the packet becomes on the wire: Segs, at least 1.
func (d *Desc) Frames() int { return max(int(d.Segs), 1) }

// Ring is a TX descriptor ring with the kernel's next_to_use /
// next_to_clean indices and the tail the hardware was last told about.
type Ring struct {
	Desc []Desc
	NTU  int // next_to_use: first free slot
	NTC  int // next_to_clean: oldest uncleaned slot
	Tail int // slots before Tail have been handed to hardware
}

// NewRing makes a ring of n descriptors.
func NewRing(n int) *Ring { return &Ring{Desc: make([]Desc, n)} }

// Unused is ICE_DESC_UNUSED / I40E_DESC_UNUSED: free slots, keeping one
// empty so that NTU == NTC means empty.
func (r *Ring) Unused() int {
	n := len(r.Desc)
	if r.NTC > r.NTU {
		return r.NTC - r.NTU - 1
	}
	return n + r.NTC - r.NTU - 1
}

// Used is the number of slots holding descriptors not yet cleaned.
func (r *Ring) Used() int { return len(r.Desc) - 1 - r.Unused() }

// Put fills count descriptors for one packet; the last one holds it.
func (r *Ring) Put(h skb.Handle, bytes uint32, count int) { r.PutTSO(h, bytes, 1, count) }

// MaxDataPerTxd is ICE_MAX_DATA_PER_TXD_ALIGNED and
// I40E_MAX_DATA_PER_TXD_ALIGNED: the bytes one data descriptor carries
// (16K less 1, rounded down to the 4K read request size).
const MaxDataPerTxd = 12 * 1024

// TxDataDescs is ice_xmit_desc_count / i40e_xmit_descriptor_count for
// p: a linear skb takes one descriptor; a GSO (TSO) skb its head and its
// payload's frags, each split at MaxDataPerTxd (the frags of TCP's
// 32 KB page fragments come out as the payload's length over
// MaxDataPerTxd, rounded up; the frame headers, counted in p.Len, are
// a few per cent of it).
func TxDataDescs(p skb.Packet) int {
	if p.GSOSegs <= 1 {
		return 1
	}
	return 1 + (int(p.Len)+MaxDataPerTxd-1)/MaxDataPerTxd
}

// TxSlots is the ring slots p takes: its data descriptors and, for a
// TSO skb, the context descriptor ice_tso and i40e_tso write first.
func TxSlots(p skb.Packet) int {
	if p.GSOSegs > 1 {
		return TxDataDescs(p) + 1
	}
	return TxDataDescs(p)
}

// PutTSO is Put for a packet the hardware segments (TSO) into segs
// frames: bytes is its length with every frame's headers
// (qdisc_pkt_len, the BQL byte count).
func (r *Ring) PutTSO(h skb.Handle, bytes uint32, segs uint16, count int) {
	for i := 0; i < count; i++ {
		d := &r.Desc[r.NTU]
		*d = Desc{Last: i == count-1}
		if d.Last {
			d.H, d.Bytes, d.Segs = h, bytes, segs
		}
		r.NTU++
		if r.NTU == len(r.Desc) {
			r.NTU = 0
		}
	}
}

// Wire serialises frames at line rate; the queues of one port share it.
type Wire struct {
	RateBps   int64
	busyUntil sim.Time
	// rem carries what a frame's time has beyond a whole nanosecond
	// (bit-nanoseconds, under RateBps) into the next back-to-back frame:
	// 186 bytes take 14.88 ns at 100 Gbit, and rounding each frame down
	// to 14 ns made the wire 6% fast.
	rem    int64
	Frames uint64
}

// WireBytes is what a frame of l2len bytes (no FCS) occupies on
// Ethernet: padded to 60, plus FCS (4), preamble (8) and gap (12).
func WireBytes(l2len uint32) int64 {
	return int64(max(l2len, 60)) + 4 + 8 + 12
}

// WireBytesTSO is what a TSO packet of l2len bytes (every frame's
// headers included) occupies on the wire as segs full-size frames:
// each adds FCS, preamble and gap (no padding: a segment is never
// short).
func WireBytesTSO(l2len uint32, segs uint16) int64 {
	if segs <= 1 {
		return WireBytes(l2len)
	}
	return int64(l2len) + int64(segs)*(4+8+12)
}

// Send schedules a frame handed to the MAC at t; it returns when its last
// bit leaves.
func (w *Wire) Send(t sim.Time, l2len uint32) sim.Time { return w.SendTSO(t, l2len, 1) }

// SendTSO is Send for a TSO packet leaving as segs frames.
func (w *Wire) SendTSO(t sim.Time, l2len uint32, segs uint16) sim.Time {
	start := max(t, w.busyUntil)
	if start > w.busyUntil {
		w.rem = 0 // an idle wire: the frame starts on its own clock
	}
	bitNs := WireBytesTSO(l2len, segs)*8*int64(sim.Second) + w.rem
	done := start + sim.Time(bitNs/w.RateBps)
	w.rem = bitNs % w.RateBps
	w.busyUntil = done
	w.Frames += uint64(max(segs, 1))
	return done
}

// Post hands the slots between Tail and NTU to the hardware at time t
// (a doorbell): each packet gets its wire completion time. It returns the
// first completion time, or -1 if nothing new was posted.
func (r *Ring) Post(w *Wire, t sim.Time, dmaLatency sim.Time) sim.Time {
	first := sim.Time(-1)
	for r.Tail != r.NTU {
		d := &r.Desc[r.Tail]
		if d.Last {
			if w != nil {
				d.DoneAt = w.SendTSO(t+dmaLatency, d.Bytes, d.Segs)
			} else {
				d.DoneAt = t
			}
			if first < 0 {
				first = d.DoneAt
			}
		}
		r.Tail++
		if r.Tail == len(r.Desc) {
			r.Tail = 0
		}
	}
	return first
}

// NextDone is the completion time of the oldest posted, uncleaned packet,
// or -1 if there is none.
func (r *Ring) NextDone() sim.Time {
	for i := r.NTC; i != r.Tail; i = (i + 1) % len(r.Desc) {
		if r.Desc[i].Last {
			return r.Desc[i].DoneAt
		}
	}
	return -1
}

// Clean walks completed packets from NTC, at most budget packets,
// calling done for each; it returns the packets cleaned, their frames
// (a TSO packet's segments: what the Intel drivers' cleans add to their
// stats from tx_buf->gso_segs) and bytes. A packet
// is complete when its DoneAt has passed by now(), read afresh for each
// packet as the kernel's clean reads each descriptor's DD bit: a
// completion written while the clean runs is taken in it.
func (r *Ring) Clean(now func() sim.Time, budget int, done func(d *Desc)) (pkts, frames, bytes int) {
	for pkts < budget && r.NTC != r.Tail {
		// find the end of the packet at NTC
		end := r.NTC
		for !r.Desc[end].Last {
			end = (end + 1) % len(r.Desc)
			if end == r.Tail {
				return
			}
		}
		if r.Desc[end].DoneAt > now() {
			return
		}
		done(&r.Desc[end])
		pkts++
		frames += r.Desc[end].Frames()
		bytes += int(r.Desc[end].Bytes)
		r.Desc[end] = Desc{}
		r.NTC = (end + 1) % len(r.Desc)
	}
	return
}

// Vector is interrupt moderation for one MSI-X vector: at most one
// interrupt per ITR interval, none while NAPI polls.
type Vector struct {
	ITR sim.Time
	// SWITR is the rate limit of the software interrupt a driver
	// triggers when a run of NAPI polls that went over budget completes
	// (ice_set_wb_on_itr, then ice_enable_interrupt's SWINT_TRIG at
	// ICE_ITR_20K; idpf the same): 0 for none. Only on a vector whose
	// whole poll the driver runs (no RX rings: the host runs those).
	SWITR  sim.Time
	last   sim.Time
	armed  bool
	inPoll bool
	wb     bool // wb_on_itr: a poll of this run went over budget
	Irqs   uint64
	Polls  uint64
}

// Notify tells the vector a completion lands at doneAt; it raises the
// interrupt no earlier than ITR after the previous one.
func (v *Vector) Notify(ctx Ctx, id int, doneAt sim.Time) {
	if v.armed || v.inPoll || doneAt < 0 {
		return
	}
	at := max(doneAt, v.last+v.ITR, ctx.Now())
	v.armed = true
	v.last = at
	v.Irqs++
	ctx.RaiseIRQ(id, at)
}

// BeginPoll marks the vector's NAPI as running (interrupt consumed).
func (v *Vector) BeginPoll() {
	v.armed = false
	v.inPoll = true
	v.Polls++
}

// EndPoll ends a poll; when complete, the interrupt is re-enabled and,
// if work is outstanding, fires for the next completion.
func (v *Vector) EndPoll(ctx Ctx, id int, complete bool, next sim.Time) {
	if !complete {
		v.wb = v.SWITR > 0 // ice_set_wb_on_itr
		return
	}
	v.inPoll = false
	if v.wb {
		// ice_enable_interrupt leaving wb_on_itr: a software interrupt,
		// rate-limited from the last one, whatever is pending; its poll
		// takes what completed meanwhile and arms as usual.
		v.wb = false
		at := max(ctx.Now(), v.last+v.SWITR)
		v.armed, v.last = true, at
		v.Irqs++
		ctx.RaiseIRQ(id, at)
		return
	}
	v.Notify(ctx, id, next)
}

// PollDone ends a driver's NAPI poll of vector id, as the drivers' polls
// end: when the poll completed (napi_complete_done) and the queue runs a
// TX DIM (nil: none), its sample of the vector's interrupts
// (total_events, a CQ's event_ctr) and the queue's cleaned packets and
// bytes, and a new profile's interval from the driver's table (itr) for
// the next interrupt, as the drivers' *_tx_dim_work write it; then
// EndPoll. It returns what the poll returns: the whole budget while
// work is left.
func (v *Vector) PollDone(ctx Ctx, id, budget int, complete bool, next sim.Time, dim *DIM, st *QueueStats, itr func(ix int) sim.Time) (int, bool) {
	if complete && dim != nil {
		if dim.Sample(DIMSample{Time: ctx.Now(), Pkts: uint32(st.Packets), Bytes: uint32(st.Bytes), Events: uint16(v.Irqs)}) {
			v.ITR = itr(dim.ProfileIx)
		}
	}
	v.EndPoll(ctx, id, complete, next)
	if !complete {
		return budget, false
	}
	return 0, true
}
