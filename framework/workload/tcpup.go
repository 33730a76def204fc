package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// cbRetrans is TCPCB_RETRANS in a TCP skb's control block (Cb.Flags).
const cbRetrans = 1 << 0

// hostSock is an upload's socket on the host (struct tcp_sock with its
// struct sock around it): the socket lock and its backlog, the send
// buffer (sk_wmem_queued against sk_sndbuf), sk_wmem_alloc held by the
// skbs until TX completion (TSQ), the TSQ flags, the retransmission
// timer, and the netperf task writing into it.
type hostSock struct {
	netdev.TxqMapping // sk_tx_queue_mapping: netdev_pick_tx caches its queue

	f  *TCPFlow
	tr *Traffic
	tp *tcp.Sock

	task  *sim.Task
	slock sim.SpinLock // sk_lock.slock
	// tsRecent is tp->rx_opt.ts_recent: the far end's last TSval, on
	// the option's clock, which the data segments echo.
	tsRecent uint32
	owned    bool      // sock_owned_by_user
	backlog  []tcp.Ack // sk_backlog: ACKs that came while owned
	// backlogLen is sk_backlog.len: the truesize sk_add_backlog queued
	// since __release_sock last ended (it zeroes it only when done, so
	// ACKs queued while it processes count on top).
	backlogLen int64
	// rxTruesize is skb->truesize of the ACKs the host receives (0:
	// tcp.AckTruesize, the peer's own skb).
	rxTruesize uint32
	spare      []tcp.Ack     // a processed backlog's array, for the next
	wq         sim.WaitQueue // sk_sleep
	nospace    bool          // SOCK_NOSPACE: the writer waits for room

	sndbuf     int   // sk_sndbuf (autotuned by tcp_sndbuf_expand)
	writeBytes int64 // bytes the application wrote (write_seq in bytes)
	tailLen    int64 // skb->len of tcp_write_queue_tail (0: the write queue is empty)
	// wqSkbs holds where each skb tcp_sendmsg_locked allocated and
	// still in the write queue begins (bytes of the stream), oldest
	// first: the oldest may have had its front sent (tso_fragment
	// leaves the rest in an skb of its own, tcp_grow_skb takes from
	// its front).
	wqSkbs []int64

	wmemAlloc int64 // sk_wmem_alloc: truesize of skbs not yet freed
	wmemLine  sim.CacheLine

	throttled, queued, tsqDeferred bool // TSQF_THROTTLED, TSQF_QUEUED, TCP_TSQ_DEFERRED
	rto                            sim.HrTimer
	rtoDeferred                    bool // TCP_WRITE_TIMER_DEFERRED
	rtoFn                          func(c *sim.CPU)

	owner skb.OwnerID // hs in the host's skb pool
	// clones maps the first segment of each rtx-queue skb whose clone
	// (the fclone tcp_transmit_skb sent) is in the host, in a qdisc or
	// the driver, to the clone's handle: skb_fclone_busy. It goes at
	// the clone's free (TX completion or drop) or its GSO segmentation
	// (Charge: skb_gso_segment's caller consumes it). Looked up by key
	// only, never walked.
	clones    map[int64]skb.Handle
	fqChecked bool
	cpu       *sim.CPU // the CPU running this socket's code now (tcp.Output)

	Sleeps, Wakeups, TSQThrottled uint64
	Autocorked                    uint64 // LINUX_MIB_TCPAUTOCORKING: pushes held that set TSQ_THROTTLED
	BacklogCoalesced              uint64 // LINUX_MIB_TCPBACKLOGCOALESCE: ACKs merged into the backlog's tail
	BacklogDropped                uint64 // LINUX_MIB_TCPBACKLOGDROP: ACKs the full backlog dropped
	SpuriousRtxHostQueues         uint64 // LINUX_MIB_TCPSPURIOUS_RTX_HOSTQUEUES: retransmissions refused, the original in the host
}

func (tr *Traffic) startUp(f *TCPFlow, at sim.Time, cpus []int) (*sim.Task, error) {
	cc, err := tcp.NewCC(tr.CC)
	if err != nil {
		return nil, err
	}
	hs := &hostSock{f: f, tr: tr}
	hs.slock.Name = fmt.Sprintf("tcp/%d sk_lock.slock", f.ID)
	hs.owner = tr.net.Pool.AddOwner(hs)
	hs.tp = tcp.NewSock(cc, tr.ECN, at)
	hs.sndbuf = hs.tp.SndbufExpand(tcp.WmemDefault) // tcp_init_buffer_space
	hs.rxTruesize = tr.net.LocalRxTruesize(tr.dev, reverse(f.keys))
	f.Snd, f.Rcv, f.up = hs.tp, tcp.NewReceiver(cc.NeedsECN()), hs
	hs.task = tr.e.NewTask(fmt.Sprintf("netperf/%d", f.ID), cpus, func(t *sim.Task) {
		// The process exists from the start and sleeps until its
		// connection starts (a task placed before the run with a later
		// start would hold its CPU until then).
		if at > t.CPU().Now() {
			tr.e.At(at, func() { tr.e.WakeUp(t, nil) })
			t.Block()
		}
		hs.tp.SetNow(t.CPU().Now())
		hs.run(t)
	})
	hs.task.Start(at % (10 * sim.Microsecond))
	return hs.task, nil
}

// wmemQueued is sk_wmem_queued: the truesize of the skbs in the write
// and retransmit queues. Each skb's head, tcp_stream_alloc_skb's
// SKB_TRUESIZE(skb_end_offset) of an alloc_skb_fclone(MAX_TCP_HEADER),
// is charged when it is made (tcp_skb_entail, and tso_fragment or
// tcp_fragment for the pieces they split off) and uncharged when it is
// freed (tcp_wmem_free_skb: acked, or emptied by tcp_grow_skb); the
// payload's page fragments are charged as tcp_sendmsg_locked copies
// them and uncharged as they are acked (tcp_trim_head of a partly
// acked skb, the whole skb's truesize once it is all acked).
func (hs *hostSock) wmemQueued() int64 {
	unacked := hs.writeBytes - hs.tp.SndUna*tcp.MSS
	heads := int64(hs.tp.RtxSkbs() + hs.writeQueueSkbs())
	return unacked + heads*int64(skb.TruesizeAllocSkb(skb.MaxTCPHeader))
}

// newSkb is tcp_stream_alloc_skb and tcp_skb_entail: an empty skb at
// the write queue's tail.
func (hs *hostSock) newSkb() {
	hs.wqSkbs = append(hs.wqSkbs, hs.writeBytes)
	hs.tailLen = 0
}

// writeQueueSkbs is the number of skbs in the write queue: those
// tcp_sendmsg_locked allocated that still hold unsent bytes (a sent
// head moved to the rtx queue, tcp_event_new_data_sent; one tcp_grow_skb
// emptied was freed).
func (hs *hostSock) writeQueueSkbs() int {
	sent := hs.tp.SndNxt * tcp.MSS
	n := 0
	for n < len(hs.wqSkbs) {
		end := hs.writeBytes
		if n+1 < len(hs.wqSkbs) {
			end = hs.wqSkbs[n+1]
		}
		if end > sent {
			break
		}
		n++
	}
	if n > 0 {
		hs.wqSkbs = append(hs.wqSkbs[:0], hs.wqSkbs[n:]...)
	}
	return len(hs.wqSkbs)
}

// sizeGoal is tcp_xmit_size_goal: the most a write-queue skb is filled
// to, sk_gso_max_size (the receive window's half is larger) in whole
// segments.
const sizeGoal = tcp.GSOMaxSize / tcp.MSS * tcp.MSS

// writeQueueTail is tcp_write_queue_tail's length: the sends since it
// was filled took data from the write queue's head (tcp_write_xmit,
// tcp_grow_skb), so it holds at most the unsent bytes.
func (hs *hostSock) writeQueueTail() int64 {
	hs.tailLen = min(hs.tailLen, hs.writeBytes-hs.tp.SndNxt*tcp.MSS)
	return hs.tailLen
}

// tailTruesize is the truesize of a write-queue skb of n bytes:
// tcp_stream_alloc_skb's head and the page fragments copied into it.
func tailTruesize(n int64) int64 { return int64(skb.TruesizeAllocSkb(skb.MaxTCPHeader)) + n }

// shouldAutocork is tcp_should_autocork (tcp_autocorking on, its
// default): the tail skb is short of size_goal, something awaits an ACK
// and the host still holds skbs of the socket (sk_wmem_alloc over the
// tail's truesize), whose TX completion will push the tail.
func (hs *hostSock) shouldAutocork(tail int64) bool {
	return tail < sizeGoal && hs.tp.PacketsOut() > 0 && wmemAllocRef(hs.wmemAlloc) > tailTruesize(tail)
}

// memoryFree is sk_stream_memory_free: sk_wmem_queued under sk_sndbuf
// (tcp_stream_memory_free's notsent_lowat is UINT_MAX by default).
func (hs *hostSock) memoryFree() bool { return hs.wmemQueued() < int64(hs.sndbuf) }

// run is netperf's TCP_STREAM loop: send(SendSize) for ever, each a
// tcp_sendmsg_locked that appends to the write queue's tail skb up to
// size_goal, checks for room in the send buffer only when it needs a new
// skb (sk_stream_memory_free, else sk_stream_wait_memory), copies, and
// pushes (tcp_push).
func (hs *hostSock) run(t *sim.Task) {
	costs := hs.tr.costs
	for {
		t.PreemptPoint()
		c := t.CPU()
		c.Sync()
		c.Spend(costs.TCPSendmsg)
		hs.lockSock(c)
		var copied int64
		for copied < SendSize {
			copy := int64(0)
			if tail := hs.writeQueueTail(); tail > 0 {
				copy = sizeGoal - tail
			}
			if copy <= 0 {
				// new_segment: the tail is full (or there is none).
				if !hs.memoryFree() {
					// wait_for_space: SOCK_NOSPACE, what was
					// copied pushed, sk_stream_wait_memory
					// sleeping with the socket released.
					hs.nospace = true
					if copied > 0 {
						hs.push(c)
					}
					if hs.memoryFree() {
						continue // the push's tcp_check_space grew the buffer
					}
					hs.Sleeps++
					hs.releaseSock(t)
					hs.wq.Add(t)
					if !hs.memoryFree() {
						t.Block()
					}
					hs.wq.Remove(t)
					c = t.CPU()
					c.Sync()
					hs.lockSock(c)
					continue
				}
				hs.newSkb()
				copy = sizeGoal
			}
			copy = min(copy, SendSize-copied)
			c.Spend(copy * costs.TCPCopyPerKB / 1024)
			hs.writeBytes += copy
			hs.tailLen += copy
			hs.tp.WriteSeq = hs.writeBytes / tcp.MSS
			copied += copy
			if copied < SendSize && hs.tailLen >= sizeGoal && hs.writeBytes-hs.tp.SndNxt*tcp.MSS == hs.tailLen {
				// A full skb at the send head goes at once,
				// alone (tcp_push_one).
				hs.pushOne(c)
			}
		}
		hs.push(c) // tcp_push -> __tcp_push_pending_frames -> tcp_write_xmit
		hs.releaseSock(t)
	}
}

// push is tcp_push of the write queue: tcp_write_xmit of what cwnd,
// the receive window and TSQ let go (no retransmissions: those are the
// ACK's, the TSQ handler's and the timer's).
func (hs *hostSock) push(c *sim.CPU) {
	tail := hs.writeQueueTail()
	if tail == 0 {
		return
	}
	if hs.shouldAutocork(tail) {
		// Autocorking: TSQ_THROTTLED set, so the TX completion of
		// what the host holds runs the TSQ handler, which sends the
		// tail then, grown by the writes meanwhile. tcp_push sets
		// the bit, and counts LINUX_MIB_TCPAUTOCORKING, only when it
		// is clear: a push held while an earlier one (or
		// tcp_small_queue_check) left it set, and no tcp_wfree has
		// cleared it since, counts nothing. (tcp_push reads
		// sk_wmem_alloc again for a completion that came between;
		// here none can: shouldAutocork's reading stands.)
		if !hs.throttled {
			hs.throttled = true
			hs.Autocorked++
		}
		return
	}
	hs.cpu = c
	hs.tp.SetNow(c.Now())
	hs.tp.WriteXmit(hs)
	hs.armRTO(c)
}

// pushOne is tcp_push_one: tcp_write_xmit of the skb at the send head
// alone (push_one), without tcp_push's autocorking.
func (hs *hostSock) pushOne(c *sim.CPU) {
	hs.cpu = c
	hs.tp.SetNow(c.Now())
	hs.tp.PushOne(hs)
	hs.armRTO(c)
}

// lockSock is lock_sock: the socket is owned by the task; softirqs that
// find it owned queue on the backlog.
func (hs *hostSock) lockSock(c *sim.CPU) {
	c.LocalBhDisable()
	hs.slock.Lock(c, hs.tr.site.lockSock)
	hs.owned = true
	hs.slock.Unlock(c)
	c.LocalBhEnable()
}

// releaseSock is release_sock: the backlog is processed (each ACK as
// tcp_v4_do_rcv would have), then tcp_release_cb's deferred work (a TSQ
// handler, the write timer), then the socket is free.
func (hs *hostSock) releaseSock(t *sim.Task) {
	c := t.CPU()
	c.LocalBhDisable()
	hs.slock.Lock(c, hs.tr.site.release)
	for len(hs.backlog) > 0 {
		// Two arrays take turns: the one being processed, and the one
		// ACKs that come meanwhile go to.
		list := hs.backlog
		hs.backlog, hs.spare = hs.spare[:0], nil
		// __release_sock drops the lock with spin_unlock_bh: softirqs
		// pending or raised meanwhile run during the processing, and
		// find the socket still owned (their ACKs join the backlog).
		hs.slock.Unlock(c)
		c.LocalBhEnable()
		for _, a := range list {
			c.Spend(hs.tr.costs.TCPRcv)
			hs.ackLocked(c, a)
		}
		clear(list)
		hs.spare = list[:0] // reused by the next backlog
		c.LocalBhDisable()
		hs.slock.Lock(c, hs.tr.site.release)
	}
	hs.backlogLen = 0 // __release_sock's end: not before, against a wild producer
	if hs.tsqDeferred {
		hs.tsqDeferred = false
		hs.tsqWrite(c)
	}
	if hs.rtoDeferred {
		hs.rtoDeferred = false
		hs.rtoExpired(c)
	}
	hs.owned = false
	hs.slock.Unlock(c)
	c.LocalBhEnable()
}

// xmit is tcp_xmit_retransmit_queue then tcp_write_xmit on c.
func (hs *hostSock) xmit(c *sim.CPU) {
	hs.cpu = c
	hs.tp.SetNow(c.Now())
	hs.tp.XmitRetransmitQueue(hs)
	hs.tp.WriteXmit(hs)
	hs.armRTO(c)
}

// SmallQueueCheck implements tcp.Output: tcp_small_queue_check against
// sk_wmem_alloc. With at most one skb awaiting an ACK it never
// throttles (tcp_rtx_queue_empty_or_single_skb, f921a4a5bffa, 6.6).
// Not gated: 4.7 and 4.8 predate any exemption (75eefc6c59fd, 4.10),
// but no experiment runs TCP on them.
func (hs *hostSock) SmallQueueCheck(tp *tcp.Sock, segs int, factor uint) bool {
	limit := int64(tp.SmallQueueLimit(tcp.Truesize(segs), factor))
	if wmemAllocRef(hs.wmemAlloc) <= limit || tp.RtxQueueEmptyOrSingleSkb() {
		return false
	}
	hs.throttled = true
	hs.TSQThrottled++
	return wmemAllocRef(hs.wmemAlloc) > limit // a completion may have come meanwhile
}

// wmemAllocRef is refcount_read(&sk->sk_wmem_alloc) for skbs of wmem
// bytes of truesize held: sk_alloc sets the refcount to 1, which
// sk_free drops, so TSQ and tcp_wfree compare the truesize plus one.
func wmemAllocRef(wmem int64) int64 { return wmem + 1 }

// tcpOooOkay is __tcp_transmit_skb's skb->ooo_okay (726e9e8b94b9,
// before the skb is charged): it may take another TX queue than the
// flow's earlier packets when nothing of the socket is in a host queue
// (sk_wmem_alloc under SKB_TRUESIZE(1), which even a pure ACK's 960
// bytes are not) or nothing sent awaits an ACK (the retransmit queue is
// empty).
func tcpOooOkay(wmemAlloc int64, packetsOut uint32) bool {
	return wmemAlloc < int64(skb.SkbTruesize(1)) || packetsOut == 0
}

// Transmit implements tcp.Output: __tcp_transmit_skb -> ip_queue_xmit ->
// __dev_queue_xmit of one (GSO) skb charged to the socket
// (skb_set_owner_w: sk_wmem_alloc += truesize, tcp_wfree at free). A
// qdisc drop is local congestion: tcp_enter_cwr, and the skb counts as
// not sent (NET_XMIT_DROP); NET_XMIT_CN enters CWR too but the skb went.
func (hs *hostSock) Transmit(tp *tcp.Sock, seq int64, segs int, tstamp sim.Time, cwr, retrans bool) bool {
	c := hs.cpu
	tr := hs.tr
	f := hs.f
	c.Spend(tr.costs.TCPXmit)
	s := tr.net.AllocSkb(c)
	s.Len = uint32(segs * tcp.FrameLen)
	s.TrueSize = tcp.Truesize(segs)
	s.GSOSegs = uint16(segs)
	s.Keys, s.Hash, s.DSCP = f.keys, f.hash, f.DSCP
	s.Priority, s.Mark = f.Priority, f.Mark
	if tp.ECN {
		s.ECN = tcp.ECT0
	}
	if tstamp != 0 {
		s.Tstamp = sim.Ktime(tstamp) // skb->tstamp is CLOCK_MONOTONIC, as the qdiscs' clock
	}
	if tp.PacingRate != math.MaxUint64 {
		s.PacingRate = tp.PacingRate
	}
	s.Sock = int32(f.ID)
	s.Owner = hs.owner
	// An upload's data: the host receives no data on it, so it acks
	// the far end's SYN alone.
	s.Cb = skb.CB{Seq: seq, TSecr: hs.tsRecent}
	s.TCPFlags = skb.TCPHdrACK
	if retrans {
		s.Cb.Flags = cbRetrans
	}
	if cwr {
		s.TCPFlags |= skb.TCPHdrCWR
	}
	s.OooOkay = tcpOooOkay(hs.wmemAlloc, tp.PacketsOut())
	hs.wmemLine.Atomic(c)
	hs.wmemAlloc += int64(s.TrueSize)
	if hs.clones == nil {
		hs.clones = map[int64]skb.Handle{}
	}
	hs.clones[seq] = s.Handle // the rtx-queue skb from seq has its clone out
	rc := tr.net.DevQueueXmit(c, tr.dev, s)
	tp.SetNow(c.Now())
	if !hs.fqChecked {
		// fq_classify sets SK_PACING_FQ on a socket it sees (fq with
		// pacing on): from then on TCP stamps EDT departure times and
		// fq paces.
		txq := hs.TxQueue()
		if len(tr.dev.Queues) == 1 {
			txq = 0 // netdev_core_pick_tx on one queue caches nothing
		}
		if txq >= 0 {
			hs.fqChecked = true
			if q := tr.dev.Queues[txq].Qdisc(); q != nil && q.Flags&qdisc.PacesSockets != 0 {
				tp.PacingFQ = true
			}
		}
	}
	switch rc {
	case qdisc.XmitDrop:
		tp.EnterCWR()
		return false
	case qdisc.XmitCN:
		tp.EnterCWR()
	}
	if !retrans {
		// tcp_event_new_data_sent ends in tcp_check_space: packets_out
		// now counts this skb.
		hs.checkSpace(c, tp.InFlight()+uint32(segs))
	}
	return true
}

// Charge is tcp_gso_segment's refcount_add(delta, &sk->sk_wmem_alloc):
// the segments of a GSO skb weigh more than it did (skb.Charger).
// The GSO skb, the clone of an rtx-queue skb, is consumed once it is
// segmented: skb_fclone_busy no longer finds it.
func (hs *hostSock) Charge(c *sim.CPU, s *skb.SKB, bytes int64) {
	hs.wmemLine.AtomicNoSync(c)
	hs.wmemAlloc += bytes
	hs.forgetClone(s)
}

// forgetClone is the end of clone s in the host (its kfree_skbmem drops
// the fclone reference).
func (hs *hostSock) forgetClone(s *skb.SKB) {
	if h, ok := hs.clones[s.Cb.Seq]; ok && h == s.Handle {
		delete(hs.clones, s.Cb.Seq)
	}
}

// StillInHostQueue implements tcp.HostQueue: skb_still_in_host_queue
// for the rtx-queue skb from seq. Its clone is in the host while it is
// neither freed nor segmented; then TSQ_THROTTLED is set, so that the
// TX completion of what the host holds (tcp_wfree) runs the TSQ handler
// and retransmits, and LINUX_MIB_TCPSPURIOUS_RTX_HOSTQUEUES counts it
// (skb_fclone_busy is tested again after setting the bit: no
// completion can come between here).
func (hs *hostSock) StillInHostQueue(tp *tcp.Sock, seq int64) bool {
	h, ok := hs.clones[seq]
	if !ok {
		return false
	}
	if hs.tr.net.Pool.Lookup(h) == nil {
		sim.Panicf("tcp/%d: the clone of the rtx skb from segment %d was freed unseen", hs.f.ID, seq)
	}
	hs.throttled = true
	hs.SpuriousRtxHostQueues++
	return true
}

// FClones implements netdev.FCloneOwner: an upload's skbs are the
// clones __tcp_transmit_skb sends of tcp_stream_alloc_skb's fclones.
func (hs *hostSock) FClones() bool { return true }

// TCPHeader implements skb.HeaderOwner: a data segment's header, its
// TSecr the ts_recent it was sent with.
func (hs *hostSock) TCPHeader(s *skb.SKB) (skb.TCPHeader, bool) {
	return tcpHeader(s, s.Cb.TSecr, nil), true
}

// Release is the skb's free: tcp_wfree, the destructor, unless
// skb_orphan_partial ran it already (then sock_efree), and a clone of
// an rtx-queue skb ends here either way (skb_set_owner_sk_safe keeps
// skb->sk, so skb_fclone_busy finds the clone until its free).
func (hs *hostSock) Release(c *sim.CPU, s *skb.SKB) {
	hs.forgetClone(s)
	if !s.Orphaned() {
		hs.Orphan(c, s)
	}
}

// Orphan implements skb.Orphaner: tcp_wfree, the destructor, at the
// skb's free or earlier when skb_orphan_partial runs it (netem delaying
// the packet): sk_wmem_alloc drops by the truesize; a socket TSQ
// throttled is queued for the TSQ tasklet on this CPU (unless this runs
// in ksoftirqd with more still in flight: the queues drain first).
func (hs *hostSock) Orphan(c *sim.CPU, s *skb.SKB) {
	hs.wmemLine.AtomicNoSync(c)
	hs.wmemAlloc -= int64(s.TrueSize)
	// tcp_wfree keeps one reference of the skb's until it is done (its
	// sk_free): refcount_sub_and_test(skb->truesize - 1).
	if wmemAllocRef(hs.wmemAlloc)+1 >= int64(skb.SkbTruesize(1)) && strings.HasPrefix(c.Current().Name, "ksoftirqd/") {
		return
	}
	if !hs.throttled || hs.queued {
		return
	}
	hs.throttled, hs.queued = false, true
	hs.tr.queueTasklet(c, tasklet{kind: tkTSQ, up: hs})
}

// tsqHandler is tcp_tasklet_func -> tcp_tsq_handler for this socket.
func (hs *hostSock) tsqHandler(c *sim.CPU) {
	hs.queued = false
	hs.slock.Lock(c, hs.tr.site.bhLockSock)
	if hs.owned {
		hs.tsqDeferred = true
	} else {
		hs.tsqWrite(c)
	}
	hs.slock.Unlock(c)
}

// tsqWrite is tcp_tsq_write: retransmissions if cwnd allows, then new
// data.
func (hs *hostSock) tsqWrite(c *sim.CPU) {
	hs.cpu = c
	tp := hs.tp
	tp.SetNow(c.Now())
	if tp.LostOut > tp.RetransOut && tp.Cwnd > tp.InFlight() {
		tp.XmitRetransmitQueue(hs)
	}
	tp.WriteXmit(hs)
	hs.armRTO(c)
}

// Transmitted implements netdev.TxOwner: the skb left the host; its
// segments go up the path to the receiver.
func (hs *hostSock) Transmitted(c *sim.CPU, s *skb.SKB) {
	f := hs.f
	tr := hs.tr
	f.txCPU = c.ID
	n := max(int(s.GSOSegs), 1)
	for i := 0; i < n; i++ {
		seg := tcp.Seg{Flow: int32(f.ID), Seq: s.Cb.Seq + int64(i), ECN: s.ECN, Retrans: s.Cb.Flags&cbRetrans != 0, Sent: s.Born}
		if i == 0 && s.TCPFlags&skb.TCPHdrCWR != 0 {
			seg.CWR = true
		}
		tr.Path.Up.Send(c.Now(), path.Pkt{Len: tcp.FrameLen, Keys: f.keys, Hash: f.hash, DSCP: f.DSCP, ECN: seg.ECN,
			To: f.far(), Seg: seg})
	}
}

// farRcv is the far end receiving a segment of an upload: its ACK goes
// down the path at once, or after the delayed-ACK timeout.
func (f *TCPFlow) farRcv(seg tcp.Seg) {
	now, pre := f.Rcv.OnSeg(seg)
	if pre != nil {
		f.farSendAck(*pre)
	}
	if now {
		f.farSendAck(f.Rcv.Ack())
		return
	}
	if !f.delackArmed {
		f.delackArmed = true
		f.delackGen++
		// The timeouts fire in the order they were armed (each
		// DelackMin from now): each event takes its generation from
		// the head of delackGens.
		f.delackGens.Push(f.delackGen)
		if f.delackFn == nil {
			f.delackFn = f.farDelack
		}
		f.tr.e.At(f.tr.e.Now()+tcp.DelackMin, f.delackFn)
	}
}

// farDelack is the far end's delayed-ACK timeout of the oldest arming:
// the ACK goes if nothing was sent (or re-armed) since.
func (f *TCPFlow) farDelack() {
	gen := f.delackGens.Pop()
	if f.delackGen == gen && f.Rcv.Pending() {
		f.farSendAck(f.Rcv.Ack())
	}
}

// farSendAck sends an upload's ACK down the path to the host.
func (f *TCPFlow) farSendAck(a tcp.Ack) {
	f.delackArmed = false
	f.delackGen++
	a.Flow = int32(f.ID)
	tr := f.tr
	a.TSval = tr.e.Now()
	tr.Path.Down.Send(tr.e.Now(), path.Pkt{Len: a.Len(), Keys: reverse(f.keys), Hash: f.hash, DSCP: f.DSCP,
		To: f.host(), Ack: a})
}

// rcvAck is tcp_v4_rcv for an ACK in softirq on c: processed at once, or
// queued on the backlog while the task owns the socket.
func (hs *hostSock) rcvAck(c *sim.CPU, a tcp.Ack) {
	hs.slock.Lock(c, hs.tr.site.bhLockSock)
	if hs.owned {
		// tcp_add_backlog frees in softirq an ACK it merges into the
		// tail (kfree_skb_partial) or drops (tcp_v4_rcv's
		// discard_and_relse: sk_skb_reason_drop, its news lost); a
		// queued one is freed where __release_sock processes it.
		n := len(hs.backlog)
		hs.addBacklog(a)
		if len(hs.backlog) == n {
			c.Spend(hs.tr.costs.KfreeSkb)
		}
		hs.slock.Unlock(c)
		return
	}
	c.Spend(hs.tr.costs.TCPRcv)
	hs.ackLocked(c, a)
	hs.slock.Unlock(c)
}

// addBacklog is tcp_add_backlog for an ACK that found the socket owned:
// coalesced into the backlog's tail when it can be (coalesceAck,
// LINUX_MIB_TCPBACKLOGCOALESCE), so that __release_sock processes one
// ACK for both, whatever the backlog's length; else queued after it by
// sk_add_backlog, which adds its truesize to sk_backlog.len, unless
// sk_backlog.len (with sk_rmem_alloc, nothing on an upload) is over the
// limit: then the ACK is dropped (SKB_DROP_REASON_SOCKET_BACKLOG,
// LINUX_MIB_TCPBACKLOGDROP) and addBacklog reports true. The ACK is
// no skb of the host's pool (the local receive path carries packets by
// value), so the drop is the counter's, as the softnet backlog's drops
// of them are (Net.LocalDropped), and its free rcvAck's price. A merge adds nothing to
// sk_backlog.len: skb_try_coalesce of an ACK, its payload empty once
// the header is pulled, fits the tail's tailroom (delta 0). The tail is
// that of the backlog not yet taken: __release_sock detaches the list
// it processes. Coalescing came with 4f693b55c3d2 (5.0); not gated, as
// no experiment runs TCP on an older kernel.
func (hs *hostSock) addBacklog(a tcp.Ack) bool {
	if n := len(hs.backlog); n > 0 && coalesceAck(&hs.backlog[n-1], a) {
		hs.BacklogCoalesced++
		return false
	}
	if hs.backlogLen > backlogLimit(hs.sndbuf) { // sk_rcvqueues_full
		hs.BacklogDropped++
		return true
	}
	hs.backlog = append(hs.backlog, a)
	hs.backlogLen += int64(hs.rxAckTruesize())
	return false
}

// backlogLimit is tcp_add_backlog's limit on sk_backlog.len: sk_rcvbuf
// twice, half of sk_sndbuf and 64 KB of headroom, at most UINT_MAX.
func backlogLimit(sndbuf int) int64 {
	return min(2*int64(tcp.RmemDefault)+int64(uint32(sndbuf)>>1)+64<<10, math.MaxUint32)
}

// rxAckTruesize is skb->truesize of an ACK the host receives: its RX
// buffer's (Net.LocalRxTruesize), or on a device without a wire the
// peer's skb itself (veth_xmit hands it over), a pure ACK as
// __tcp_send_ack allocates it.
func (hs *hostSock) rxAckTruesize() uint32 {
	if hs.rxTruesize != 0 {
		return hs.rxTruesize
	}
	return tcp.AckTruesize()
}

// coalesceAck is tcp_add_backlog's test and merge of a pure ACK a into
// the backlog's tail. The kernel wants the tail's end_seq at a's seq
// (an upload's far end sends no data: every ACK it sends has the same
// sequence number), the same ip_dsfield (one flow's ACKs have its DSCP
// and are not ECT), neither with SYN, RST or URG and both with ACK (a
// pure ACK), the same ECE and CWR, and the same data offset and option
// bytes: the timestamps (TSval and TSecr, at the option's millisecond
// clock) and the SACK blocks alike. skb_try_coalesce then always
// succeeds (an ACK has no payload to place). The tail takes a's
// ack_seq and window unless a's is older (the model's window is
// fixed), and ORs in a's flags (the same ones here).
func coalesceAck(tail *tcp.Ack, a tcp.Ack) bool {
	if tail.ECE != a.ECE ||
		tcp.TSClock(tail.TSval) != tcp.TSClock(a.TSval) || tcp.TSClock(tail.TSecr) != tcp.TSClock(a.TSecr) ||
		!slices.Equal(tail.Blocks(), a.Blocks()) {
		return false
	}
	tail.Seq = max(tail.Seq, a.Seq)
	return true
}

// ackLocked is tcp_rcv_established for an ACK with the socket locked:
// tcp_ack (the acked skbs freed from the retransmit queue), the send
// buffer grown and the writer woken (tcp_check_space), then
// tcp_data_snd_check.
func (hs *hostSock) ackLocked(c *sim.CPU, a tcp.Ack) {
	tp := hs.tp
	tp.SetNow(c.Now())
	// tcp_replace_ts_recent: the far end sends no data, so every ACK's
	// sequence is at rcv_wup and its (newer) TSval is kept.
	hs.tsRecent = tcp.TSClock(sim.Ktime(a.TSval))
	res := tp.OnAck(a)
	if res.NewlyAcked > 0 {
		// tcp_clean_rtx_queue's __kfree_skb of each original acked:
		// the whole kfree_skb (the head and the fclone pair), as its
		// clone's TX completion gave up only its references
		// (netdev's kfreeFClone).
		per := max(tp.TSOSegs(), 1)
		c.Spend(hs.tr.costs.KfreeSkb * int64((res.NewlyAcked+per-1)/per))
	}
	// tcp_rcv_established: __kfree_skb of the ACK itself once tcp_ack
	// is done, on the CPU that processes it (the RX CPU's softirq, or
	// the task's in __release_sock for a backlogged one).
	c.Spend(hs.tr.costs.KfreeSkb)
	// tcp_data_snd_check: tcp_push_pending_frames, then
	// tcp_check_space, so the buffer grows only if cwnd is still not
	// filled after the push.
	hs.xmit(c)
	hs.checkSpace(c, tp.InFlight())
}

// checkSpace is tcp_check_space with inFlight segments in flight: only
// a writer that found the buffer full (SOCK_NOSPACE) gets tcp_new_space,
// so the buffer does not grow for a writer that never filled it.
func (hs *hostSock) checkSpace(c *sim.CPU, inFlight uint32) {
	if !hs.nospace {
		return
	}
	// tcp_new_space: tcp_should_expand_sndbuf refuses once cwnd is
	// filled.
	if inFlight < hs.tp.Cwnd {
		hs.sndbuf = hs.tp.SndbufExpand(hs.sndbuf)
	}
	hs.writeSpace(c)
}

// writeSpace is sk_stream_write_space: SOCK_NOSPACE cleared and the
// writer woken once __sk_stream_is_writeable: sk_stream_wspace at least
// sk_stream_min_wspace (a third of the buffer free) and sk_wmem_queued
// under sk_sndbuf (tcp_stream_memory_free's notsent_lowat is UINT_MAX
// by default: no limit).
func (hs *hostSock) writeSpace(c *sim.CPU) {
	q := hs.wmemQueued()
	if q >= int64(hs.sndbuf) || int64(hs.sndbuf)-q < q>>1 {
		return
	}
	hs.nospace = false
	hs.Wakeups += uint64(hs.wq.WakeUp(c, true))
}

// armRTO arms the write timer (icsk_retransmit_timer: the RTO or the
// loss probe) on c for the socket's deadline, moving it whenever the
// deadline moves, earlier or later, as sk_reset_timer's mod_timer does:
// a timer pushed back does not fire at its old expiry. A timer the
// socket cleared (nothing out: inet_csk_clear_xmit_timer sets
// icsk_pending to 0 and leaves the timer) still fires, and finds
// nothing to do.
func (hs *hostSock) armRTO(c *sim.CPU) {
	at := hs.tp.RTOAt()
	if at == 0 {
		return
	}
	if exp, ok := hs.rto.Queued(); ok && exp == at {
		return
	}
	if hs.rtoFn == nil {
		hs.rtoFn = func(c *sim.CPU) { hs.tr.queueTasklet(c, tasklet{kind: tkRTO, up: hs}) }
	}
	hs.rto.Start(c, at, hs.rtoFn)
}

// rtoTimer is tcp_write_timer: deferred to release_sock while owned.
func (hs *hostSock) rtoTimer(c *sim.CPU) {
	hs.slock.Lock(c, hs.tr.site.bhLockSock)
	if hs.owned {
		hs.rtoDeferred = true
	} else {
		hs.rtoExpired(c)
	}
	hs.slock.Unlock(c)
}

// rtoExpired is tcp_write_timer_handler: the RTO or the loss probe,
// if it is due.
func (hs *hostSock) rtoExpired(c *sim.CPU) {
	hs.cpu = c
	hs.tp.OnWriteTimer(c.Now(), hs)
	hs.armRTO(c)
}
