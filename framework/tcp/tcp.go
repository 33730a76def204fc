// Package tcp is the model's TCP: the sender's state machine (congestion
// control, RTT estimation, SACK scoreboard with RACK loss detection, PRR
// cwnd reduction, RTO, ECN, pacing rate, TSO autosizing) and the
// receiver's (delayed ACKs, SACK blocks, ECN echo), with no notion of
// CPUs or time passing: the caller (framework/workload) says when things
// happen and carries the packets. The laws are the kernel's
// (net/ipv4/tcp_input.c, tcp_output.c, tcp_cong.c, tcp_cubic.c,
// tcp_dctcp.c, tcp_recovery.c); each function names the one it mirrors.
//
// Sequence numbers count whole segments of MSS bytes: a bulk sender
// (netperf TCP_STREAM) always has a full segment to send, so every
// segment is MSS bytes and byte arithmetic is segment arithmetic times
// MSS. What is left out, and said where it matters: the handshake, FIN,
// Nagle (a bulk sender has full segments; autocorking is the sender
// host's, framework/workload's tcp_push), TSO deferral
// (tcp_tso_should_defer), undo of spurious recoveries (DSACK, F-RTO,
// Eifel), the RACK reordering timer and reordering adaptation (the
// model's paths do not reorder), SACK compression at the receiver,
// receive-buffer autotuning (a fixed window), AccECN. Tail loss probes
// are modelled (sendLossProbe), without the DSACK that can end their
// episode.
package tcp

import (
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// Sizes of a segment (IPv4, TCP timestamps on, Ethernet).
const (
	// MSS is the payload of a segment: 1500 - 20 (IPv4) - 20 (TCP) - 12
	// (the timestamps option), tp->mss_cache with timestamps.
	MSS = 1448
	// HeaderLen is what precedes the payload on the wire: Ethernet
	// (14), IPv4 (20), TCP with timestamps (32).
	HeaderLen = 14 + 20 + 32
	// FrameLen is skb->len of a full segment: 1514.
	FrameLen = MSS + HeaderLen
	// AckLen is skb->len of a pure ACK without SACK blocks: the
	// headers alone (Ack.Len adds the blocks).
	AckLen = HeaderLen
	// SACKBaseLen and SACKBlockLen are what SACK blocks add to a
	// header (tcp_established_options: TCPOLEN_SACK_BASE_ALIGNED, two
	// NOPs and the option's kind and length, and TCPOLEN_SACK_PERBLOCK
	// a block).
	SACKBaseLen  = 4
	SACKBlockLen = 8
)

// SACKOptLen is the room n SACK blocks take in a header: none for no
// block, else the option's aligned base and 8 bytes a block.
func SACKOptLen(n int) uint32 {
	if n == 0 {
		return 0
	}
	return SACKBaseLen + SACKBlockLen*uint32(n)
}

// Len is skb->len of the pure ACK that carries a: the headers, with
// room for its SACK blocks.
func (a *Ack) Len() uint32 { return AckLen + SACKOptLen(int(a.NSACK)) }

// WireSeq is sequence number seq (in segments) as a header carries it,
// in bytes modulo 2^32: both ends' initial sequence numbers are 0 and
// the SYN took it, so segment 0 starts at byte 1.
func WireSeq(seq int64) uint32 { return uint32(1 + seq*MSS) }

// Kernel defaults the model uses (include/net/tcp.h, tcp_ipv4.c
// tcp_sk_init, the sysctl documentation).
const (
	InitCwnd         = 10         // TCP_INIT_CWND
	InfiniteSsthresh = 0x7fffffff // TCP_INFINITE_SSTHRESH
	// RTOMin, RTOMax and TimeoutInit are TCP_RTO_MIN (HZ/5),
	// TCP_RTO_MAX (120 s) and TCP_TIMEOUT_INIT (1 s).
	RTOMin      = 200 * sim.Millisecond
	RTOMax      = 120 * sim.Second
	TimeoutInit = sim.Second
	// DelackMin is TCP_DELACK_MIN (HZ/25): the delayed-ACK timeout
	// while the receiver has no better estimate (icsk_ack.ato).
	DelackMin = 40 * sim.Millisecond
	// MaxQuickAcks is TCP_MAX_QUICKACKS: ACKs sent at once, one per
	// segment, at the start of a connection (tcp_incr_quickack).
	MaxQuickAcks = 16
	// GSOMaxSize is sk_gso_max_size: the device's gso_max_size
	// (GSO_LEGACY_MAX_SIZE, 65536) less MAX_TCP_HEADER + 1
	// (sk_setup_caps).
	GSOMaxSize = 65536 - (skb.MaxTCPHeader + 1)
	// MinTSOSegs is net.ipv4.tcp_min_tso_segs.
	MinTSOSegs = 2
	// TSORTTLog is net.ipv4.tcp_tso_rtt_log (2^9 us).
	TSORTTLog = 9
	// PacingShift is sk_pacing_shift's default (10: ~1 ms of data).
	PacingShift = 10
	// PacingSSRatio and PacingCARatio are net.ipv4.tcp_pacing_ss_ratio
	// and tcp_pacing_ca_ratio, in percent.
	PacingSSRatio = 200
	PacingCARatio = 120
	// LimitOutputBytes is net.ipv4.tcp_limit_output_bytes (4 MB since
	// 6.16; it was 1 MB).
	LimitOutputBytes = 4 << 20
	// Reordering is net.ipv4.tcp_reordering: the duplicate threshold.
	Reordering = 3
	// WmemDefault and WmemMax are net.ipv4.tcp_wmem[1] and [2]: the
	// initial send buffer and the most autotuning grows it to.
	WmemDefault = 16384
	WmemMax     = 4 << 20
	// RmemDefault is net.ipv4.tcp_rmem[1]: sk_rcvbuf as tcp_init_sock
	// sets it (131072 since 5.4). Only receive autotuning grows it
	// (tcp_rcv_space_adjust), on data received: an upload's socket
	// keeps it.
	RmemDefault = 131072
	// RcvWnd is the receiver's window in bytes: tcp_rmem[2] (6 MB) at
	// the default scaling_ratio of 50%, the most receive autotuning
	// (tcp_rcv_space_adjust) opens it to. The model's receiver keeps it
	// there from the start.
	RcvWnd = 3 << 20
	// PortsLo and PortsHi are net.ipv4.ip_local_port_range: the source
	// ports connections to one server port can use.
	PortsLo = 32768
	PortsHi = 60999
	// MaxFlows is how many connections one client can open to one
	// server port: one source port each.
	MaxFlows = PortsHi - PortsLo + 1
)

// RcvWndSegs is the receive window in segments.
const RcvWndSegs = RcvWnd / MSS

// PerMSS is tcp_sndbuf_expand's per_mss: the worst-case memory one
// segment costs (a kmalloced power-of-two head holding MSS, the TCP
// header room and skb_shared_info, plus the sk_buff).
func PerMSS() int {
	n := MSS + skb.MaxTCPHeader + skb.DataAlign(skb.SizeofSharedInfo)
	p := 1
	for p < n {
		p <<= 1
	}
	return p + skb.DataAlign(skb.SizeofSkBuff)
}

// Truesize is the truesize of a data skb carrying segs full segments:
// the head tcp_stream_alloc_skb allocates (MAX_TCP_HEADER, from
// skb_small_head_cache) plus the payload in page fragments
// (sk_wmem_queued_add of each copy).
func Truesize(segs int) uint32 {
	return skb.TruesizeAllocSkb(skb.MaxTCPHeader) + uint32(segs*MSS)
}

// AckTruesize is the truesize of a pure ACK (__tcp_send_ack:
// alloc_skb(MAX_TCP_HEADER)).
func AckTruesize() uint32 { return skb.TruesizeAllocSkb(skb.MaxTCPHeader) }

// Range is a run of segments [Start, End).
type Range struct{ Start, End int64 }

// Len is the number of segments in r.
func (r Range) Len() int64 { return r.End - r.Start }

// ECN codepoints (the IP header's two low bits of the TOS byte).
const (
	NotECT = 0
	ECT1   = 1
	ECT0   = 2
	CE     = 3
)

// Seg is one data segment as the network carries it.
type Seg struct {
	Flow    int32
	Seq     int64 // segment number
	ECN     uint8 // the IP codepoint: ECT(0) when the sender uses ECN, CE once marked
	CWR     bool  // the sender entered CWR and says so (RFC 3168)
	Retrans bool
	Sent    sim.Time // when the sender transmitted it (TSval, in effect)
}

// Ack is what an acknowledgement tells the sender.
type Ack struct {
	Flow int32
	// Seq acknowledges every segment before it (the cumulative ACK).
	Seq int64
	// SACK holds NSACK (up to MaxSACKBlocks) received ranges above
	// Seq, the most recently changed first (RFC 2018,
	// tcp_sack_new_ofo_skb): an array, so that an ACK is a plain value
	// the path and the backlog carry without a heap object behind it.
	SACK  [MaxSACKBlocks]Range
	NSACK uint8
	ECE   bool
	// TSecr is the TSval (send time) of the segment that advanced
	// rcv_nxt last (RFC 7323's ts_recent rule), for the RTT sample.
	TSecr sim.Time
	// TSval is the ACK's own timestamp: when its sender sent it.
	TSval sim.Time
}

// TSClock is a time as the timestamps option carries it: in
// milliseconds (tcp_time_stamp_ms; microseconds only on a route with
// the tcp_usec_ts feature), so two ACKs sent within the same
// millisecond carry the same TSval.
func TSClock(t sim.Time) uint32 { return uint32(t / sim.Millisecond) }

// Blocks are the ACK's SACK blocks.
func (a *Ack) Blocks() []Range { return a.SACK[:a.NSACK] }

// MaxSACKBlocks is the most SACK blocks an ACK with timestamps carries
// (TCP_NUM_SACKS is 4; the timestamps option leaves room for 3): the
// header's (skb.MaxSACKBlocks).
const MaxSACKBlocks = skb.MaxSACKBlocks
