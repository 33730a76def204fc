package workload

import (
	"slices"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tcp"
)

// testUpSock is an upload's socket on CPU 0 of a one-CPU engine with
// segs segments written and sent (in skbs of tcp_cwnd_test's half of
// cwnd), nothing handed to a device.
func testUpSock(t *testing.T, segs int64) (*hostSock, *sim.CPU) {
	t.Helper()
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1}, sim.DefaultCosts(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tr := &Traffic{e: e, costs: e.Costs, tasklets: make([][]tasklet, 1), spareTl: make([][]tasklet, 1)}
	tr.site.lockSock = e.LockSite("lock_sock")
	tr.site.bhLockSock = e.LockSite("bh_lock_sock")
	tr.site.release = e.LockSite("release_sock")
	tp := tcp.NewSock(tcp.Reno{}, false, 0)
	tp.WriteSeq = segs
	for tp.SndNxt < tp.WriteSeq && tp.WriteXmit(sender{}) > 0 {
	}
	hs := &hostSock{tr: tr, tp: tp, writeBytes: segs * tcp.MSS}
	hs.sndbuf = tp.SndbufExpand(tcp.WmemDefault)
	return hs, e.CPUs[0]
}

// tcp_data_snd_check calls tcp_new_space (and so tcp_sndbuf_expand)
// only through tcp_check_space, which does nothing unless the writer
// found the buffer full (SOCK_NOSPACE): an ACK that opens cwnd does not
// grow the buffer of a writer that never waited.
func TestSndbufGrowsOnlyForAWaitingWriter(t *testing.T) {
	for _, nospace := range []bool{false, true} {
		hs, c := testUpSock(t, 10)
		before := hs.sndbuf
		hs.nospace = nospace
		hs.ackLocked(c, tcp.Ack{Seq: 10}) // cwnd 10 -> 20, nothing in flight
		want := before
		if nospace {
			want = 2 * 20 * tcp.PerMSS()
		}
		if hs.sndbuf != want {
			t.Errorf("SOCK_NOSPACE %v: sndbuf %d -> %d, want %d", nospace, before, hs.sndbuf, want)
		}
		if nospace && hs.nospace {
			t.Errorf("SOCK_NOSPACE still set with the buffer empty")
		}
	}
}

// tcp_should_expand_sndbuf refuses once cwnd is filled, and
// tcp_check_space runs after the push (tcp_data_snd_check) and after
// each skb sent (tcp_event_new_data_sent): the packets in flight it
// sees include what the push just sent.
func TestSndbufNotGrownWithCwndFilled(t *testing.T) {
	hs, c := testUpSock(t, 10)
	hs.tp.OnAck(tcp.Ack{Seq: 10}) // cwnd 20
	hs.nospace = true
	before := hs.sndbuf
	hs.checkSpace(c, hs.tp.Cwnd)
	if hs.sndbuf != before {
		t.Errorf("cwnd filled: sndbuf %d -> %d, want it kept", before, hs.sndbuf)
	}
	hs.nospace = true // sk_stream_write_space cleared it: the writer waits again
	hs.checkSpace(c, hs.tp.Cwnd-1)
	if want := 2 * 20 * tcp.PerMSS(); hs.sndbuf != want {
		t.Errorf("cwnd not filled: sndbuf %d, want %d", hs.sndbuf, want)
	}
}

// __release_sock processes the backlog with bottom halves enabled
// (spin_unlock_bh): a softirq pending when release_sock took the lock
// runs then, while the socket is still owned by the task, not after
// release_sock gave it up.
func TestReleaseSockBacklogWithBHEnabled(t *testing.T) {
	hs, c := testUpSock(t, 10)
	e := hs.tr.e
	var ran, owned bool
	c.SetSoftirqHandler(sim.TaskletSoftirq, func(*sim.CPU) { ran, owned = true, hs.owned })
	var irq sim.HrTimer
	e.NewTask("netperf", []int{0}, func(tk *sim.Task) {
		c := tk.CPU()
		hs.lockSock(c)
		hs.backlog = append(hs.backlog, tcp.Ack{Seq: 10})
		// An interrupt raises a softirq while release_sock holds
		// sk_lock.slock with bottom halves off.
		irq.Start(c, c.Now()+sim.Microsecond, func(c *sim.CPU) { c.RaiseSoftirq(sim.TaskletSoftirq) })
		c.Spend(int64(2 * sim.Microsecond))
		hs.releaseSock(tk)
	}).Start(0)
	if err := e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !ran || !owned {
		t.Errorf("softirq ran %v, socket owned then %v; want it run inside __release_sock, owned", ran, owned)
	}
	if hs.tp.SndUna != 10 || hs.owned {
		t.Errorf("backlog not processed: snd_una %d, owned %v", hs.tp.SndUna, hs.owned)
	}
}

// tcp_sendmsg_locked checks sk_stream_memory_free only when it needs a
// new skb: a write appends to the write queue's tail skb up to
// size_goal even with sk_wmem_queued over sk_sndbuf, and only then
// waits (sk_stream_wait_memory).
func TestSendmsgFillsTheTailBeforeWaiting(t *testing.T) {
	hs, _ := testUpSock(t, 10) // cwnd 10 filled: nothing more goes
	e := hs.tr.e
	hs.newSkb() // a tail skb of 1000 bytes not sent
	hs.writeBytes += 1000
	hs.tailLen = 1000
	hs.tp.WriteSeq = hs.writeBytes / tcp.MSS
	hs.sndbuf = int(hs.wmemQueued()) // full
	e.NewTask("netperf", []int{0}, hs.run).Start(0)
	if err := e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := hs.writeBytes - 10*tcp.MSS; got != sizeGoal {
		t.Errorf("unsent %d bytes, want the tail filled to size_goal %d", got, sizeGoal)
	}
	if hs.Sleeps != 1 || !hs.nospace {
		t.Errorf("sleeps %d, SOCK_NOSPACE %v; want 1 and set", hs.Sleeps, hs.nospace)
	}
}

// tcp_push autocorks a write of less than size_goal while something
// awaits an ACK and the host holds more of the socket than the tail's
// truesize: no tcp_write_xmit, TSQ_THROTTLED set for the completion to
// push; with the host drained, or a full tail, it pushes.
func TestAutocork(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail int64
		held int64 // sk_wmem_alloc's truesize sum
		want bool  // corked
	}{
		{"host holds more than the tail", 16384, tailTruesize(16384), true},
		{"host holds one byte less than the tail", 16384, tailTruesize(16384) - 1, false},
		{"host drained", 16384, 0, false},
		{"tail at size_goal", sizeGoal, 2 * tailTruesize(sizeGoal), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, c := testUpSock(t, 5) // cwnd 10: room for 5 more
			hs.writeBytes += tc.tail
			hs.tailLen = tc.tail
			hs.tp.WriteSeq = hs.writeBytes / tcp.MSS
			hs.wmemAlloc = tc.held
			nxt := hs.tp.SndNxt
			if !tc.want {
				hs.tp.Cwnd = uint32(hs.tp.InFlight()) // a push finds cwnd full: no device needed
			}
			hs.push(c)
			if corked := hs.Autocorked == 1; corked != tc.want || (corked && (!hs.throttled || hs.tp.SndNxt != nxt)) {
				t.Errorf("corked %v (TSQ_THROTTLED %v, snd_nxt %d -> %d), want %v", corked, hs.throttled, nxt, hs.tp.SndNxt, tc.want)
			}
		})
	}
}

// tcp_push sets TSQ_THROTTLED, and counts LINUX_MIB_TCPAUTOCORKING
// (nstat's TcpExtTCPAutoCorking), only when the bit is clear: pushes
// held while it stays set, by an earlier held push or by
// tcp_small_queue_check, count nothing. Only tcp_wfree clears it (and
// queues the socket for the TSQ tasklet, TSQF_QUEUED); the next push
// held after that counts again.
func TestAutocorkCountsWhenItSetsTSQThrottled(t *testing.T) {
	hs, c := testUpSock(t, 5) // cwnd 10: room for 5 more
	// hold: the host holds skbs of the socket, more than any tail.
	hold := func() { hs.wmemAlloc = 2 * tailTruesize(sizeGoal) }
	write := func() {
		hs.writeBytes += SendSize
		hs.tailLen += SendSize
		hs.tp.WriteSeq = hs.writeBytes / tcp.MSS
	}
	nxt := hs.tp.SndNxt
	step := func(what string, throttled bool, count uint64) {
		t.Helper()
		if hs.throttled != throttled || hs.Autocorked != count || hs.tp.SndNxt != nxt {
			t.Errorf("%s: TSQ_THROTTLED %v, autocorked %d, snd_nxt %d -> %d; want %v, %d, nothing sent",
				what, hs.throttled, hs.Autocorked, nxt, hs.tp.SndNxt, throttled, count)
		}
	}
	hold()
	write()
	hs.push(c)
	step("first push held", true, 1)
	write()
	hs.push(c)
	step("second push held, the bit still set", true, 1)
	// tcp_wfree of the last skb the host held: the bit cleared, the
	// socket queued for the tasklet.
	hs.wmemAlloc = 960
	hs.Release(c, &skb.SKB{Packet: skb.Packet{TrueSize: 960}})
	if !hs.queued || len(hs.tr.tasklets[c.ID]) != 1 {
		t.Fatalf("tcp_wfree: TSQF_QUEUED %v, %d tasklets; want the socket queued", hs.queued, len(hs.tr.tasklets[c.ID]))
	}
	step("tcp_wfree", false, 1)
	hold() // more skbs sent since
	write()
	hs.push(c)
	step("a push held after tcp_wfree", true, 2)
	// tcp_wfree with the socket already queued (TSQF_QUEUED) leaves
	// the bit set: the next push held counts nothing.
	hs.wmemAlloc = 960
	hs.Release(c, &skb.SKB{Packet: skb.Packet{TrueSize: 960}})
	hold()
	hs.tailLen = 0 // a new tail skb
	write()
	hs.push(c)
	step("tcp_wfree with TSQF_QUEUED set, a push held", true, 2)
	// The bit left set by tcp_small_queue_check (TSQ stopped
	// tcp_write_xmit), no tcp_wfree since: a push held counts nothing.
	hs.throttled, hs.queued = true, false
	hs.tailLen = 0
	write()
	hs.push(c)
	step("bit set by tcp_small_queue_check, a push held", true, 2)
}

// sk_wmem_queued counts each skb's head, tcp_stream_alloc_skb's 960
// bytes (SKB_TRUESIZE of an alloc_skb_fclone(MAX_TCP_HEADER)), with its
// payload: the skbs tcp_sendmsg_locked fills to size_goal, and each
// piece tso_fragment cuts off them at tcp_tso_segs. So the send buffer
// tcp_init_buffer_space gives (2 x 10 x per_mss, 87040 bytes) holds two
// size_goal skbs of payload (130320 bytes) when they go in 45-segment
// skbs, but one (65160) when TSO autosizing sends 2-segment skbs: 23
// heads to an skb's 45 segments. Acks free the heads of the skbs they
// cover wholly and trim the payload of one partly acked (tcp_trim_head).
func TestWmemQueuedCountsSkbHeads(t *testing.T) {
	head := int64(skb.TruesizeAllocSkb(skb.MaxTCPHeader))
	for _, tc := range []struct {
		name    string
		pacing  uint64 // sk_pacing_rate: tcp_tso_segs from ~1 ms of it
		payload int64  // bytes written when the buffer is full
		heads   int64
	}{
		{"2-segment skbs", 1, sizeGoal, 23},
		{"45-segment skbs", 100e9 / 8, 2 * sizeGoal, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, _ := testUpSock(t, 0)
			tp := hs.tp
			tp.Cwnd, tp.PacingRate = 1000, tc.pacing
			if hs.sndbuf != 87040 || hs.wmemQueued() != 0 {
				t.Errorf("sk_sndbuf %d, sk_wmem_queued %d; want 87040 and 0", hs.sndbuf, hs.wmemQueued())
			}
			// netperf writing: a new skb while sk_stream_memory_free,
			// filled to size_goal and sent.
			for hs.memoryFree() {
				hs.newSkb()
				hs.writeBytes += sizeGoal
				hs.tailLen = sizeGoal
				tp.WriteSeq = hs.writeBytes / tcp.MSS
				for tp.WriteXmit(sender{}) > 0 {
				}
			}
			if hs.writeBytes != tc.payload || hs.wmemQueued() != tc.payload+tc.heads*head {
				t.Errorf("the buffer full at %d bytes written, sk_wmem_queued %d; want %d and %d (%d heads)",
					hs.writeBytes, hs.wmemQueued(), tc.payload, tc.payload+tc.heads*head, tc.heads)
			}
			// An ACK of 3 segments frees the first skb of 2 (or trims
			// the first of 45): its head and payload.
			tp.OnAck(tcp.Ack{Seq: 3})
			freed := int64(3 * tcp.MSS)
			if tc.heads > 2 {
				freed += head
			}
			if got := hs.wmemQueued(); got != tc.payload+tc.heads*head-freed {
				t.Errorf("after acking 3 segments: sk_wmem_queued %d, want %d", got, tc.payload+tc.heads*head-freed)
			}
			tp.OnAck(tcp.Ack{Seq: tp.SndNxt})
			if got := hs.wmemQueued(); got != 0 {
				t.Errorf("all acked: sk_wmem_queued %d, want 0", got)
			}
		})
	}
}

// tcp_add_backlog coalesces an ACK that finds the socket owned into the
// backlog's tail when their headers agree (the same ECE and CWR, the
// same options: TSval and TSecr at the millisecond clock, the SACK
// blocks), keeping the latest ack_seq, and counts it
// (LINUX_MIB_TCPBACKLOGCOALESCE); __release_sock then processes one ACK
// for them. An ACK coming while __release_sock processes the backlog
// goes to the new one, not into the list taken.
func TestBacklogCoalesce(t *testing.T) {
	hs, _ := testUpSock(t, 10) // two skbs of 5 out
	ms := sim.Millisecond
	ack := func(seq int64, tsval, tsecr sim.Time, ece bool, sack ...int64) tcp.Ack {
		a := tcp.Ack{Seq: seq, TSval: tsval, TSecr: tsecr, ECE: ece}
		for i := 0; i+1 < len(sack); i += 2 {
			a.SACK[a.NSACK] = tcp.Range{Start: sack[i], End: sack[i+1]}
			a.NSACK++
		}
		return a
	}
	hs.owned = true
	for _, st := range []struct {
		name string
		a    tcp.Ack
		want []int64 // the backlog's ack_seqs after
	}{
		{"the first: queued", ack(1, 10*ms, ms, false), []int64{1}},
		{"the same millisecond: coalesced, its ack_seq kept", ack(2, 10*ms+900*sim.Microsecond, ms+500*sim.Microsecond, false), []int64{2}},
		{"another TSval: queued", ack(3, 11*ms, ms, false), []int64{2, 3}},
		{"another TSecr: queued", ack(4, 11*ms, 2*ms, false), []int64{2, 3, 4}},
		{"ECE: queued", ack(5, 11*ms, 2*ms, true), []int64{2, 3, 4, 5}},
		{"ECE again: coalesced", ack(6, 11*ms, 2*ms, true), []int64{2, 3, 4, 6}},
		{"a SACK block: queued", ack(6, 11*ms, 2*ms, true, 7, 8), []int64{2, 3, 4, 6, 6}},
		{"the same block: coalesced", ack(6, 11*ms, 2*ms, true, 7, 8), []int64{2, 3, 4, 6, 6}},
		{"another block: queued", ack(6, 11*ms, 2*ms, true, 7, 9), []int64{2, 3, 4, 6, 6, 6}},
	} {
		hs.addBacklog(st.a) // rcvAck's, the socket owned
		var got []int64
		for _, a := range hs.backlog {
			got = append(got, a.Seq)
		}
		if !slices.Equal(got, st.want) {
			t.Errorf("%s: backlog ack_seqs %v, want %v", st.name, got, st.want)
		}
	}
	if hs.BacklogCoalesced != 3 {
		t.Errorf("%d ACKs coalesced, want 3", hs.BacklogCoalesced)
	}
	// __release_sock: an ACK arriving while it processes the list it
	// took starts the next backlog.
	e := hs.tr.e
	var processed int
	e.NewTask("netperf", []int{0}, func(tk *sim.Task) {
		c := tk.CPU()
		var irq sim.HrTimer
		irq.Start(c, c.Now()+sim.Microsecond, func(c *sim.CPU) {
			if len(hs.backlog) != 0 {
				t.Errorf("the backlog holds %d ACKs while __release_sock processes it, want it detached", len(hs.backlog))
			}
			hs.rcvAck(c, ack(10, 11*ms, 2*ms, true, 7, 9)) // would coalesce with the processed tail
			processed = len(hs.backlog)
		})
		hs.releaseSock(tk)
	}).Start(0)
	if err := e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if processed != 1 || hs.BacklogCoalesced != 3 || hs.tp.SndUna != 10 || hs.owned {
		t.Errorf("the ACK during __release_sock: backlog %d, %d coalesced, snd_una %d, owned %v; want 1 queued, 3, 10, released",
			processed, hs.BacklogCoalesced, hs.tp.SndUna, hs.owned)
	}
}

// tcp_add_backlog (tcp_ipv4.c) tries to coalesce into the backlog's
// tail first, even above the limit; an ACK it cannot merge is queued by
// sk_add_backlog only while sk_backlog.len (the truesize queued since
// __release_sock last ended) is at most sk_rcvbuf twice, half of
// sk_sndbuf and 64 KB, and dropped beyond (LINUX_MIB_TCPBACKLOGDROP).
// __release_sock zeroes sk_backlog.len only once it is done.
func TestAddBacklogLimit(t *testing.T) {
	hs, _ := testUpSock(t, 10)
	hs.owned = true
	limit := 2*tcp.RmemDefault + hs.sndbuf/2 + 64<<10
	ts := hs.rxAckTruesize()
	fits := limit/int(ts) + 1 // queued while the length is at most the limit
	ack := func(i int) tcp.Ack { return tcp.Ack{Seq: 1, TSval: sim.Time(i) * sim.Millisecond} }
	for i := 0; i < fits; i++ {
		if hs.addBacklog(ack(i)) {
			t.Fatalf("ACK %d dropped with sk_backlog.len %d, limit %d", i, hs.backlogLen, limit)
		}
	}
	if hs.backlogLen <= int64(limit) {
		t.Fatalf("sk_backlog.len %d after %d ACKs of truesize %d, want over %d", hs.backlogLen, fits, ts, limit)
	}
	for _, st := range []struct {
		name     string
		a        tcp.Ack
		drop     bool
		coalesce uint64
	}{
		{"another TSval over the limit: dropped", ack(fits), true, 0},
		{"the tail's TSval: coalesced, over the limit too", ack(fits - 1), false, 1},
	} {
		dropped, coalesced := hs.BacklogDropped, hs.BacklogCoalesced
		if got := hs.addBacklog(st.a); got != st.drop || hs.BacklogDropped-dropped != b2u(st.drop) || hs.BacklogCoalesced-coalesced != st.coalesce {
			t.Errorf("%s: dropped %v (counted %d), coalesced %d; want %v, %d", st.name, got, hs.BacklogDropped-dropped,
				hs.BacklogCoalesced-coalesced, st.drop, st.coalesce)
		}
	}
	if len(hs.backlog) != fits {
		t.Errorf("backlog holds %d ACKs, want %d", len(hs.backlog), fits)
	}
	e := hs.tr.e
	e.NewTask("netperf", []int{0}, func(tk *sim.Task) { hs.releaseSock(tk) }).Start(0)
	if err := e.Run(sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if hs.backlogLen != 0 || len(hs.backlog) != 0 {
		t.Errorf("after release_sock: sk_backlog.len %d, %d queued; want 0, 0", hs.backlogLen, len(hs.backlog))
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// skb_still_in_host_queue (tcp_output.c) finds an rtx-queue skb busy
// while the fclone clone tcp_transmit_skb sent of it is in the host
// (skb_fclone_busy): until the clone is freed (TX completion, a drop:
// tcp_wfree) or consumed by GSO segmentation (skb_gso_segment's caller,
// tcp_gso_segment's charge). A busy skb sets TSQ_THROTTLED and counts
// LINUX_MIB_TCPSPURIOUS_RTX_HOSTQUEUES.
func TestStillInHostQueue(t *testing.T) {
	hs, c := testUpSock(t, 10) // skbs from segments 0 and 5
	hs.tr.net = &netdev.Net{}
	hs.f = &TCPFlow{}
	clone := func(seq int64) *skb.SKB {
		s := hs.tr.net.Pool.Get()
		s.Cb.Seq = seq
		if hs.clones == nil {
			hs.clones = map[int64]skb.Handle{}
		}
		hs.clones[seq] = s.Handle // Transmit's
		return s
	}
	a, b := clone(0), clone(5)
	for _, st := range []struct {
		name  string
		step  func()
		seq   int64
		busy  bool
		count uint64
	}{
		{"the first skb's clone queued", func() {}, 0, true, 1},
		{"the second's too", func() {}, 5, true, 2},
		{"the first's clone segmented (GSO)", func() { hs.Charge(c, a, 0) }, 0, false, 2},
		{"the second's clone freed", func() { hs.Release(c, b); hs.tr.net.Pool.Put(b) }, 5, false, 2},
		{"a new clone of the first", func() { clone(0) }, 0, true, 3},
	} {
		hs.throttled = false
		st.step()
		if got := hs.StillInHostQueue(hs.tp, st.seq); got != st.busy || hs.throttled != st.busy || hs.SpuriousRtxHostQueues != st.count {
			t.Errorf("%s: busy %v, TSQ_THROTTLED %v, counted %d; want %v, %v, %d", st.name, got, hs.throttled,
				hs.SpuriousRtxHostQueues, st.busy, st.busy, st.count)
		}
	}
}

// The ACKs an upload's host receives are skbs the stack frees where it
// processes them: tcp_rcv_established's __kfree_skb after tcp_ack, in
// softirq on the RX CPU, or in __release_sock on the task's CPU for one
// the owned socket backlogged; tcp_add_backlog's kfree_skb_partial in
// softirq for one merged into the backlog's tail, and tcp_v4_rcv's
// sk_skb_reason_drop in softirq for one dropped at the backlog's limit.
// Measured as what each path spends more with kfree_skb than without.
// The model freed no ACK.
func TestAckSkbFreedWhereProcessed(t *testing.T) {
	dup := tcp.Ack{Seq: 0, TSval: sim.Millisecond} // acks nothing new: no data to send, no skb of ours freed
	spent := func(kfree int64, owned bool, backlog []tcp.Ack, full, release bool) (softirq, task int64) {
		hs, c := testUpSock(t, 10)
		hs.tr.costs.KfreeSkb = kfree
		hs.owned = owned
		hs.backlog = append(hs.backlog, backlog...)
		if full {
			hs.backlogLen = backlogLimit(hs.sndbuf) + 1
		}
		c.Start(0, func(c *sim.CPU) {
			t0 := c.Now()
			hs.rcvAck(c, dup)
			softirq = int64(c.Now() - t0)
		})
		if release {
			hs.tr.e.NewTask("netperf", []int{0}, func(tk *sim.Task) {
				t0 := tk.CPU().Now()
				hs.releaseSock(tk)
				task = int64(tk.CPU().Now() - t0)
			}).Start(sim.Microsecond)
		}
		if err := hs.tr.e.Run(sim.Millisecond); err != nil {
			t.Fatal(err)
		}
		return softirq, task
	}
	kfree := sim.DefaultCosts().KfreeSkb
	for _, tc := range []struct {
		name              string
		owned             bool
		backlog           []tcp.Ack
		full, release     bool
		softirq, released int64 // what kfree_skb adds to each
	}{
		{"processed in softirq", false, nil, false, false, kfree, 0},
		{"merged into the backlog's tail", true, []tcp.Ack{dup}, false, false, kfree, 0},
		{"dropped at the backlog's limit", true, []tcp.Ack{{Seq: 0, TSval: 5 * sim.Millisecond}}, true, false, kfree, 0},
		{"backlogged, processed by release_sock", true, []tcp.Ack{{Seq: 0, TSval: 5 * sim.Millisecond}}, false, true, 0, 2 * kfree},
	} {
		s1, r1 := spent(kfree, tc.owned, tc.backlog, tc.full, tc.release)
		s0, r0 := spent(0, tc.owned, tc.backlog, tc.full, tc.release)
		if s1-s0 != tc.softirq || r1-r0 != tc.released {
			t.Errorf("%s: kfree_skb adds %d ns in softirq and %d in release_sock, want %d and %d", tc.name, s1-s0, r1-r0, tc.softirq, tc.released)
		}
	}
}

// tcp_send_loss_probe tests skb_still_in_host_queue on the last rtx
// skb before it retransmits: a clone still in a qdisc or the driver
// puts the probe off (TSQ_THROTTLED set, TCPSpuriousRtxHostQueues
// counted, no probe counted) and tcp_rearm_rto turns the timer into the
// RTO, due icsk_rto after the head left.
func TestLossProbeStillInHostQueue(t *testing.T) {
	hs, c := testUpSock(t, 10) // skbs from segments 0 and 5, sent at 0
	hs.tr.net = &netdev.Net{}
	hs.f = &TCPFlow{}
	s := hs.tr.net.Pool.Get()
	s.Cb.Seq = 5
	hs.clones = map[int64]skb.Handle{5: s.Handle}
	// No RTT sample: the PTO is TCP_TIMEOUT_INIT, as the RTO.
	if at := hs.tp.RTOAt(); at != tcp.TimeoutInit {
		t.Fatalf("write timer at %v, want the probe at %v", at, tcp.TimeoutInit)
	}
	c.Start(tcp.TimeoutInit, func(c *sim.CPU) { hs.rtoExpired(c) })
	if err := hs.tr.e.Run(tcp.TimeoutInit + 100*sim.Microsecond); err != nil {
		t.Fatal(err)
	}
	if hs.SpuriousRtxHostQueues != 1 || !hs.throttled || hs.tp.LossProbes != 0 || hs.tp.RetransSegs != 0 {
		t.Errorf("host-queue refusals %d, TSQ_THROTTLED %v, probes %d, retransmitted %d; want 1, true, 0, 0",
			hs.SpuriousRtxHostQueues, hs.throttled, hs.tp.LossProbes, hs.tp.RetransSegs)
	}
	// The head's RTO (1 s after 0) is overdue: a jiffy from now.
	if at := hs.tp.RTOAt(); at != tcp.TimeoutInit+sim.Millisecond {
		t.Errorf("RTO at %v, want %v", at, tcp.TimeoutInit+sim.Millisecond)
	}
}

// The write timer moves with its deadline (sk_reset_timer ->
// mod_timer): pushed back, it does not fire at its old expiry (and
// interrupt a CPU for nothing); brought forward, it fires then.
func TestWriteTimerFollowsItsDeadline(t *testing.T) {
	hs, c := testUpSock(t, 10) // sent at 0: the PTO at TCP_TIMEOUT_INIT
	hs.armRTO(c)
	if exp, _ := hs.rto.Queued(); exp != tcp.TimeoutInit {
		t.Fatalf("timer at %v, want %v", exp, tcp.TimeoutInit)
	}
	// An ACK at 10 ms: srtt 10 ms, the PTO 2 x 10 + 2 ms later.
	hs.tp.SetNow(10 * sim.Millisecond)
	hs.tp.OnAck(tcp.Ack{Seq: 5})
	hs.armRTO(c)
	if exp, _ := hs.rto.Queued(); exp != 32*sim.Millisecond {
		t.Errorf("timer at %v after the ACK, want 32ms", exp)
	}
	// More data at 20 ms: the PTO goes back to 20 + 22 ms.
	hs.tp.SetNow(20 * sim.Millisecond)
	hs.tp.WriteSeq = 12
	hs.tp.WriteXmit(sender{})
	hs.armRTO(c)
	if exp, _ := hs.rto.Queued(); exp != 42*sim.Millisecond {
		t.Errorf("timer at %v after more data, want 42ms", exp)
	}
}
