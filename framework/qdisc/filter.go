package qdisc

import "github.com/txlab/txlab/framework/skb"

// FilterCtx is the filter side of a qdisc's context: the filters
// attached to the qdisc (its tcf_block) and tcf_classify over them. The
// context the host gives every qdisc implements it, in process and out
// of process alike: classification runs where the qdisc runs, on a copy
// of the filters the host keeps in step (as for a Classful's ClassCtx,
// which offers the same Classify). A classless qdisc that declares
// HasBlock reaches its filters through it (assert it:
// ctx.(qdisc.FilterCtx)); FilterFlow does the usual steps.
type FilterCtx interface {
	Ctx
	// Filtered reports whether filters are attached at at: the
	// block's chain 0 has a tcf_proto (q->filter_list is not NULL),
	// even one that matches nothing.
	Filtered(at ClassID) bool
	// Classify is tcf_classify over the filters attached at at, as
	// ClassCtx.Classify.
	Classify(p *skb.Packet, at ClassID) FilterResult
}

// Filters is ctx's filter side when filters are attached at at (the
// qdisc's X:0): ok is false when none are, or ctx has no filters at all
// (a test's context), and the qdisc goes on as if it had no block.
func Filters(ctx Ctx, at ClassID) (FilterCtx, bool) {
	fc, ok := ctx.(FilterCtx)
	if !ok || !fc.Filtered(at) {
		return nil, false
	}
	return fc, true
}

// FilterFlow is the filter step of fq_codel_classify, sfq_classify and
// fq_pie_classify, after their skb->priority check: with no filter
// attached to the qdisc (major:0) filtered is false and the qdisc
// hashes. Otherwise the filters decide: flow is TC_H_MIN(res.classid)
// less one when that minor is in 1..n, else -1, the packet to drop: an
// action's TC_ACT_SHOT, no filter matching (tcf_classify's -1), or a
// minor of 0 or above n. The qdisc drops it with __qdisc_drop
// (skb.DropQdiscDrop), counts it in its drops (qdisc_qstats_drop, for
// __NET_XMIT_BYPASS) and returns NET_XMIT_SUCCESS | __NET_XMIT_BYPASS,
// which dev_qdisc_enqueue masks to XmitSuccess. The model's actions
// give no TC_ACT_STOLEN, QUEUED or TRAP (__NET_XMIT_STOLEN, not counted).
func FilterFlow(ctx Ctx, p *skb.Packet, major, n uint32) (flow int, filtered bool) {
	at := MakeClassID(uint16(major), 0)
	fc, ok := Filters(ctx, at)
	if !ok {
		return 0, false
	}
	r := fc.Classify(p, at)
	if r.Verdict == VerdictClass {
		if m := uint32(r.Class.Minor()); m > 0 && m <= n {
			return int(m - 1), true
		}
	}
	return -1, true
}

// SegCtx is the context of a qdisc with SplitGSO that says which of an
// Enqueue call's packets are the segments of one GSO skb.
type SegCtx interface {
	// GSOSegs is, for each packet of the current Enqueue call's batch,
	// its place (1, 2, ...) among the segments the host made of one GSO
	// skb, 0 for an skb it did not split; nil when it split none. The
	// qdisc must not keep or change it.
	GSOSegs() []uint16
}

// SegPlaces is ctx's GSOSegs, nil for a context that does not say.
func SegPlaces(ctx Ctx) []uint16 {
	if sc, ok := ctx.(SegCtx); ok {
		return sc.GSOSegs()
	}
	return nil
}

// GSOSkbLen is how many packets from the batch's i-th on are one skb
// for the qdisc: the segments the host made of a GSO skb for a qdisc
// with SplitGSO (cake_enqueue classifies the skb once, then segments it
// with skb_gso_segment and adds every segment to the one flow), else 1.
// A context that does not say (a test's) makes every packet its own skb.
func GSOSkbLen(ctx Ctx, i int) int {
	segs := SegPlaces(ctx)
	if i >= len(segs) || segs[i] != 1 {
		return 1
	}
	n := 1
	for i+n < len(segs) && segs[i+n] == uint16(n+1) {
		n++
	}
	return n
}

// TCPCtx is the context of a qdisc that declared ReadsTCPHeaders: the
// TCP header of each packet of the current Enqueue call, as the
// qdisc's skb_header_pointer would read it from the skb (cake's ACK
// filter, cake_get_tcphdr). The host reads it from the socket that
// built the packet, so it is there in process and out alike.
type TCPCtx interface {
	// TCPHeaders is, for each packet of the current Enqueue call's
	// batch, its TCP header; a packet that has none (not TCP, or built
	// by no model socket) has the zero header, with no flags. nil when
	// no packet of the batch has one. The qdisc must not keep the
	// slice or change it; it may copy headers.
	TCPHeaders() []skb.TCPHeader
}

// TCPHeaders is ctx's TCPHeaders, nil for a context that does not say.
func TCPHeaders(ctx Ctx) []skb.TCPHeader {
	if tc, ok := ctx.(TCPCtx); ok {
		return tc.TCPHeaders()
	}
	return nil
}

// TCPHeaderOf is the TCP header of the current Enqueue call's i-th
// packet: ok is false for a packet without one, and in a context that
// gives none (a qdisc without ReadsTCPHeaders, a path's router, a
// test's context without headers).
func TCPHeaderOf(ctx Ctx, i int) (skb.TCPHeader, bool) {
	hs := TCPHeaders(ctx)
	if i >= len(hs) || hs[i].Flags == 0 {
		return skb.TCPHeader{}, false
	}
	return hs[i], true
}
