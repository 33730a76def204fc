package sim

import "math/bits"

// CacheLine models the coherence cost of one 64-byte line: a CPU that
// touches a line another CPU wrote pays a transfer priced by topology
// distance. Writes and atomics take the line exclusively and serialise:
// while a transfer is in flight, the next exclusive access waits for it.
// The data itself lives in ordinary Go fields; the line only prices access.
type CacheLine struct {
	owner int32 // last writer + 1 (0: nobody, the line is in memory)
	// readers are the CPUs holding a shared copy since the last write, a
	// bit a CPU; nil until the first read (most lines are only written:
	// a slab's, a lock's), so that a line costs 32 bytes of heap.
	readers *[]uint64
	busy    Time // the exclusive transfers queued so far complete at this time
	asked   Time // when the last of them was asked for
}

// inFlight is how long an access at t waits for the exclusive transfers
// queued on the line. One asked for after t came from a CPU whose clock
// ran ahead between its sync points (a free walking a to_free list): in
// time, the access at t came first and does not queue behind it.
func (l *CacheLine) inFlight(t Time) Time {
	if l.busy > t && l.asked <= t {
		return l.busy - t
	}
	return 0
}

func (l *CacheLine) hasReader(id int) bool {
	if l.readers == nil {
		return false
	}
	r, w := *l.readers, id>>6
	return w < len(r) && r[w]&(1<<(id&63)) != 0
}

func (l *CacheLine) addReader(id int) {
	if l.readers == nil {
		l.readers = new([]uint64)
	}
	w := id >> 6
	for len(*l.readers) <= w {
		*l.readers = append(*l.readers, 0)
	}
	(*l.readers)[w] |= 1 << (id & 63)
}

// dist is the distance from the line's current holder to CPU c.
func (l *CacheLine) dist(c *CPU) int {
	if l.owner == 0 {
		return DistMemory
	}
	return c.e.Distance(int(l.owner-1), c.ID)
}

// storeBuffered makes c the line's holder for a store c does not wait
// for (a spin_unlock's release: the store sits in c's store buffer
// while its read-for-ownership completes). It costs c nothing; the next
// reader pays the transfer from c.
func (l *CacheLine) storeBuffered(c *CPU) {
	l.owner = int32(c.ID + 1)
	if l.readers != nil {
		clear(*l.readers)
	}
}

// transfer moves the line exclusively to c starting no earlier than t and
// returns how long c waits for it (queueing behind an in-flight transfer
// included).
func (l *CacheLine) transfer(c *CPU, t Time) int64 { return l.transferN(c, t, 1) }

// transferN is transfer of k lines that move one after another: c waits
// once for what is in flight, then k transfers, and the next writer
// queues behind all k. Lines c holds already are one hit; lines c
// wrote last that other CPUs have read since cost the invalidation of
// their copies, as far as the farthest of them, once for all k.
func (l *CacheLine) transferN(c *CPU, t Time, k int64) int64 {
	start := t + l.inFlight(t)
	cost := Time(c.e.Costs.Line(l.dist(c)))
	switch {
	case l.owner-1 != int32(c.ID):
		cost = max(cost, Time(l.farthestReader(c)))
		if k > 1 && cost > Time(c.e.Costs.LineHit) {
			cost *= Time(k)
		}
	case l.othersRead(c.ID):
		// c has the data: the stores wait for the readers' copies to be
		// invalidated, the lines' requests in flight together.
		cost = Time(l.farthestReader(c))
	default:
		cost = Time(c.e.Costs.LineHit)
	}
	if end := start + cost; end > l.busy {
		l.busy, l.asked = end, t
	}
	l.owner = int32(c.ID + 1)
	if l.readers != nil {
		clear(*l.readers)
	}
	return int64(start + cost - t)
}

// farthestReader is the transfer cost from the farthest CPU other than
// c holding a shared copy (0 with none): a store's read-for-ownership
// waits for every copy's invalidation.
func (l *CacheLine) farthestReader(c *CPU) int64 {
	if l.readers == nil {
		return 0
	}
	var most int64
	for i, w := range *l.readers {
		for w != 0 {
			id := i<<6 | bits.TrailingZeros64(w)
			w &= w - 1
			if id != c.ID {
				most = max(most, c.e.Costs.Line(c.e.Distance(id, c.ID)))
			}
		}
	}
	return most
}

func (l *CacheLine) othersRead(id int) bool {
	if l.readers == nil {
		return false
	}
	for i, w := range *l.readers {
		if i == id>>6 {
			w &^= 1 << (id & 63)
		}
		if w != 0 {
			return true
		}
	}
	return false
}

// Read is a load: free if c owns or shares the line, else a transfer.
func (l *CacheLine) Read(c *CPU) {
	c.Sync()
	l.ReadNoSync(c)
}

// ReadNoSync prices a load without a sync point, for lines only this
// CPU's context can change at this moment (e.g. under a held lock).
func (l *CacheLine) ReadNoSync(c *CPU) { c.Stall(l.load(c)) }

// load is what a load of the line costs c now; c holds a copy after it.
func (l *CacheLine) load(c *CPU) int64 {
	if l.owner-1 == int32(c.ID) || l.hasReader(c.ID) {
		return c.e.Costs.LineHit
	}
	wait := c.e.Costs.Line(l.dist(c)) + int64(l.inFlight(c.now))
	l.addReader(c.ID)
	return wait
}

// Write is a store: the line moves to c exclusively.
func (l *CacheLine) Write(c *CPU) {
	c.Sync()
	l.WriteNoSync(c)
}

// WriteNoSync prices a store without a sync point (see ReadNoSync).
func (l *CacheLine) WriteNoSync(c *CPU) {
	c.Stall(l.transfer(c, c.now))
}

// Atomic is a locked read-modify-write (cmpxchg, xchg, inc_return).
func (l *CacheLine) Atomic(c *CPU) {
	c.Sync()
	l.AtomicNoSync(c)
}

// Owner is the CPU id that last wrote the line, or -1.
func (l *CacheLine) Owner() int { return int(l.owner) - 1 }

// WriteMany prices a store to n lines that always move together (a
// structure's private data): n transfers from the current holder.
func (l *CacheLine) WriteMany(c *CPU, n int64) { l.writeLines(c, n, 1) }

// WriteGroup prices stores to n lines of one structure written in one
// pass (a qdisc's flow: struct fq_flow's two lines): lines_overlapped of
// them move at once, their transfers overlapping, so the group costs
// ceil(n / lines_overlapped) transfers from the current holder.
func (l *CacheLine) WriteGroup(c *CPU, n int64) {
	l.writeLines(c, n, max(c.e.Costs.LinesOverlapped, 1))
}

// writeLines charges n lines' move, per at a time.
func (l *CacheLine) writeLines(c *CPU, n, per int64) {
	c.Stall(l.linesWait(c, n, per))
}

// linesWait moves n lines to c, per at a time, and returns c's wait.
func (l *CacheLine) linesWait(c *CPU, n, per int64) int64 {
	if n <= 0 {
		return 0
	}
	return l.transferN(c, c.now, (n+per-1)/per)
}

// WriteOverlapped prices stores to lines of different structures issued
// back to back (list_del's prev->next and next->prev): their
// read-for-ownership requests are in flight together, so c waits for
// the slowest, not their sum. Nil lines are skipped.
func WriteOverlapped(c *CPU, lines ...*CacheLine) {
	var wait int64
	for _, l := range lines {
		if l != nil {
			wait = max(wait, l.transfer(c, c.now))
		}
	}
	c.Stall(wait)
}

// WriteWithGroup prices stores to line l and to a group of n lines g
// (lines_overlapped at a time, as WriteGroup) of the same allocation
// issued in one pass (struct Qdisc's write group and its private data):
// none of their addresses waits on another miss, so c waits for the
// slower of the two, not their sum.
func WriteWithGroup(c *CPU, l *CacheLine, g *CacheLine, n int64) {
	wait := l.transfer(c, c.now)
	c.Stall(max(wait, g.linesWait(c, n, max(c.e.Costs.LinesOverlapped, 1))))
}

// ReadWithWrite prices a load of r and a store to w issued in one pass
// (htb_enqueue's reads of its private data and the store to q.qlen):
// their requests are in flight together, so c waits for the slower.
func ReadWithWrite(c *CPU, r, w *CacheLine) {
	c.Stall(max(r.load(c), w.transfer(c, c.now)))
}

// AtomicNoSync is a locked RMW right after another access by the same CPU
// at the same instant (a cmpxchg retry): no sync point.
func (l *CacheLine) AtomicNoSync(c *CPU) {
	c.Stall(l.transfer(c, c.now))
	c.Spend(c.e.Costs.AtomicOp)
}
