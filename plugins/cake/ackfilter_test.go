package cake

import (
	"slices"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// seg is one packet of an ACK filter case: its TCP header and port.
type seg struct {
	h    skb.TCPHeader
	port uint16 // source port (1 unless another connection)
	udp  bool   // not TCP: no header
}

// ackSeg is a pure ACK of ack_seq ack with timestamps (tsval, tsecr
// 10) and SACK blocks given as start, end pairs.
func ackSeg(ack uint32, sack ...uint32) seg {
	h := skb.TCPHeader{Seq: 1, AckSeq: ack, Flags: skb.TCPHdrACK, TS: true, TSval: 10, TSecr: 10}
	for i := 0; i+1 < len(sack); i += 2 {
		h.SACK[h.NSACK] = skb.SACKBlock{Start: sack[i], End: sack[i+1]}
		h.NSACK++
	}
	return seg{h: h, port: 1}
}

func (s seg) flags(f uint8) seg      { s.h.Flags |= f; return s }
func (s seg) tsval(v uint32) seg     { s.h.TSval = v; return s }
func (s seg) data(n uint32) seg      { s.h.DataLen = n; return s }
func (s seg) from(port uint16) seg   { s.port = port; return s }
func (s seg) option() seg            { s.h.Other = true; return s }
func (s seg) noTimestamps() seg      { s.h.TS, s.h.TSval, s.h.TSecr = false, 0, 0; return s }
func udpSeg() seg                    { return seg{udp: true, port: 1} }
func (s seg) withAck(ack uint32) seg { s.h.AckSeq = ack; return s }
func (s seg) tsecr(v uint32) seg     { s.h.TSecr = v; return s }
func (s seg) dsack(lo, hi uint32) seg {
	s.h.SACK[s.h.NSACK] = skb.SACKBlock{Start: lo, End: hi}
	s.h.NSACK++
	return s
}

// The filter follows cake_ack_filter case by case: which queued ACK it
// takes out (by place in the sequence enqueued), and in which mode.
func TestAckFilter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       string
		segs       []seg
		filtered   []int // places of the segments taken out, in order
		remaining  []int // what dequeues, in order
		conserving bool  // also checked in the other mode with the same result
	}{
		{"conservative waits for a second redundant ACK", "ack-filter",
			[]seg{ackSeg(100), ackSeg(200), ackSeg(300), ackSeg(400)}, []int{0, 1}, []int{2, 3}, false},
		{"aggressive takes a single one before the tail", "ack-filter-aggressive",
			[]seg{ackSeg(100), ackSeg(200), ackSeg(300)}, []int{0, 1}, []int{2}, false},
		{"duplicate ACKs stay (fast retransmit needs them)", "ack-filter-aggressive",
			[]seg{ackSeg(100), ackSeg(100), ackSeg(100)}, nil, []int{0, 1, 2}, true},
		{"an older ACK with a higher cumulative ACK stays", "ack-filter-aggressive",
			[]seg{ackSeg(300), ackSeg(200)}, nil, []int{0, 1}, true},
		{"segments with data are never taken", "ack-filter",
			[]seg{ackSeg(100).data(1448), ackSeg(200).data(1448), ackSeg(300)}, nil, []int{0, 1, 2}, true},
		{"the same cumulative ACK with more SACKed", "ack-filter-aggressive",
			[]seg{ackSeg(100, 200, 300), ackSeg(100, 200, 300, 400, 500)}, []int{0}, []int{1}, false},
		{"an older SACK block the new ACK lacks", "ack-filter-aggressive",
			[]seg{ackSeg(100, 200, 300), ackSeg(100, 400, 500)}, nil, []int{0, 1}, true},
		{"SACK blocks only in the older one", "ack-filter-aggressive",
			[]seg{ackSeg(100, 200, 300), ackSeg(150)}, nil, []int{0, 1}, true},
		{"SACK blocks only in the newer one", "ack-filter-aggressive",
			[]seg{ackSeg(100), ackSeg(100, 200, 300)}, []int{0}, []int{1}, false},
		{"the same SACK, a larger cumulative ACK", "ack-filter-aggressive",
			[]seg{ackSeg(100, 200, 300), ackSeg(150, 200, 300)}, []int{0}, []int{1}, false},
		{"a DSACK is never taken", "ack-filter-aggressive",
			[]seg{ackSeg(500).dsack(100, 200), ackSeg(600, 100, 200)}, nil, []int{0, 1}, true},
		{"an older ACK with a newer TSval stays", "ack-filter-aggressive",
			[]seg{ackSeg(100).tsval(11), ackSeg(200)}, nil, []int{0, 1}, true},
		{"an older ACK with a newer TSecr stays", "ack-filter-aggressive",
			[]seg{ackSeg(100).tsecr(11), ackSeg(200)}, nil, []int{0, 1}, true},
		{"a trigger without timestamps keeps those with them", "ack-filter-aggressive",
			[]seg{ackSeg(100), ackSeg(200).noTimestamps()}, nil, []int{0, 1}, true},
		{"an option that changes state keeps the ACK", "ack-filter-aggressive",
			[]seg{ackSeg(100).option(), ackSeg(200)}, nil, []int{0, 1}, true},
		{"PSH, FIN or RST keep it", "ack-filter-aggressive",
			[]seg{ackSeg(100).flags(skb.TCPHdrPSH), ackSeg(200).flags(skb.TCPHdrFIN), ackSeg(300).flags(skb.TCPHdrRST), ackSeg(400)},
			nil, []int{0, 1, 2, 3}, true},
		{"a SYN never triggers", "ack-filter-aggressive",
			[]seg{ackSeg(100), ackSeg(200).flags(skb.TCPHdrSYN)}, nil, []int{0, 1}, true},
		{"aggressive keeps ECN news: ECE then none", "ack-filter-aggressive",
			[]seg{ackSeg(100).flags(skb.TCPHdrECE), ackSeg(200)}, nil, []int{0, 1}, true},
		// At the fourth ACK the third differs from the first in ECE:
		// the eligible one becomes the second, and the third makes two.
		{"a change of ECN flags restarts the count", "ack-filter",
			[]seg{ackSeg(100).flags(skb.TCPHdrECE), ackSeg(200), ackSeg(300), ackSeg(400)}, []int{1}, []int{0, 2, 3}, false},
		{"only the same connection", "ack-filter-aggressive",
			[]seg{ackSeg(100).from(2), ackSeg(200), ackSeg(300).from(2)}, nil, []int{0, 1, 2}, true},
		{"not TCP", "ack-filter-aggressive",
			[]seg{udpSeg(), udpSeg(), ackSeg(300)}, nil, []int{0, 1, 2}, true},
		{"a wrapped sequence space", "ack-filter-aggressive",
			[]seg{ackSeg(0xffffff00), ackSeg(0x100)}, []int{0}, []int{1}, false},
		{"an older ACK past a wrapped one stays", "ack-filter-aggressive",
			[]seg{ackSeg(0x100), ackSeg(0xffffff00)}, nil, []int{0, 1}, true},
		{"a data segment triggers too", "ack-filter-aggressive",
			[]seg{ackSeg(100), ackSeg(200).data(1448)}, []int{0}, []int{1}, false},
		{"the filter walks past its own flow's other packets", "ack-filter",
			[]seg{ackSeg(100), udpSeg(), ackSeg(200), ackSeg(300).withAck(300)}, []int{0}, []int{1, 2, 3}, false},
	} {
		modes := []string{tc.mode}
		if tc.conserving {
			modes = []string{"ack-filter", "ack-filter-aggressive"}
		}
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				filtered, remaining := runAckFilter(t, mode, tc.segs)
				if !slices.Equal(filtered, tc.filtered) || !slices.Equal(remaining, tc.remaining) {
					t.Errorf("filtered %v, dequeued %v; want %v and %v", filtered, remaining, tc.filtered, tc.remaining)
				}
			})
		}
	}
}

// runAckFilter enqueues segs into one cake flow (flowblind: one queue)
// and returns the places the filter took out, in order, and those that
// dequeue. It checks the counters against what it sees.
func runAckFilter(t *testing.T, mode string, segs []seg) (filtered, remaining []int) {
	t.Helper()
	q := newCake(t, "besteffort", "flowblind", mode)
	if q.info().Flags&qdisc.ReadsTCPHeaders == 0 {
		t.Fatalf("%s does not ask for TCP headers", mode)
	}
	ctx := qdisctest.NewCtx(1)
	ctx.Reasons = q.info().DropReasons
	var sent, bytes uint32
	for i, s := range segs {
		p := skb.Packet{Handle: skb.Handle(i + 1), Len: 66 + s.h.DataLen, TrueSize: 768, GSOSegs: 1, Hash: 7,
			Keys: skb.FlowKeys{Src: 1, Dst: 2, SrcPort: s.port, DstPort: 80, Proto: 6}}
		ctx.TCP = []skb.TCPHeader{s.h}
		if s.udp {
			p.Keys.Proto = 17
			ctx.TCP = nil
		}
		sent++
		bytes += p.Len
		rc := make([]qdisc.Code, 1)
		q.Enqueue(ctx, []skb.Packet{p}, rc)
		if rc[0] != qdisc.XmitSuccess {
			t.Fatalf("packet %d: %v", i, rc[0])
		}
		for h, r := range ctx.Dropped {
			if r != dropAckFilter {
				t.Fatalf("packet %d dropped for %s", h-1, r)
			}
			filtered = append(filtered, int(h-1))
			delete(ctx.Dropped, h)
		}
	}
	b := q.tins[0]
	if int(b.ackDrops) != len(filtered) || q.drops != uint64(len(filtered)) || q.qlen != len(segs)-len(filtered) ||
		b.packets != sent || b.bytes != uint64(bytes) {
		t.Errorf("ack_drops %d drops %d qlen %d packets %d bytes %d; filtered %v of %d (%d B)",
			b.ackDrops, q.drops, q.qlen, b.packets, b.bytes, filtered, sent, bytes)
	}
	for q.qlen > 0 {
		for _, p := range q.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, nil) {
			remaining = append(remaining, int(p.Handle-1))
		}
	}
	if q.backlog != 0 || q.bufferUsed != 0 || b.tinBacklog != 0 || len(q.acks) != 0 {
		t.Errorf("emptied: backlog %d memory %d tin backlog %d, %d headers kept", q.backlog, q.bufferUsed, b.tinBacklog, len(q.acks))
	}
	return filtered, remaining
}

// Without an ACK filter cake asks for no headers and takes nothing out.
func TestNoAckFilter(t *testing.T) {
	q := newCake(t, "besteffort", "flowblind")
	if q.info().Flags&qdisc.ReadsTCPHeaders != 0 {
		t.Fatal("no-ack-filter asks for TCP headers")
	}
	ctx := qdisctest.NewCtx(1)
	for i := range 4 {
		ctx.TCP = []skb.TCPHeader{ackSeg(uint32(100 * (i + 1))).h}
		p := skb.Packet{Handle: skb.Handle(i + 1), Len: 66, TrueSize: 768, GSOSegs: 1, Keys: skb.FlowKeys{Src: 1, Dst: 2, SrcPort: 1, DstPort: 80, Proto: 6}}
		q.Enqueue(ctx, []skb.Packet{p}, make([]qdisc.Code, 1))
	}
	if q.qlen != 4 || len(ctx.Dropped) != 0 {
		t.Fatalf("qlen %d, %d dropped", q.qlen, len(ctx.Dropped))
	}
}
