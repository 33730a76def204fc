package htb

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// scripted is a ClassCtx with leaves the test scripts: each a FIFO that
// takes every packet, and that, if its dropRest is set, drops what is
// left behind the packet its dequeue returns (as a CoDel leaf that
// empties itself by its drops and still returns a packet; the kernel's
// leaf then calls qdisc_tree_reduce_backlog, whose htb_qlen_notify runs
// before the leaf's dequeue returns). Packets classify by
// skb->priority (no filters).
type scripted struct {
	*qdisctest.Ctx
	q        map[qdisc.ClassID][]skb.Packet
	dropRest map[qdisc.ClassID]bool
}

func newScripted() *scripted {
	return &scripted{Ctx: qdisctest.NewCtx(1), q: map[qdisc.ClassID][]skb.Packet{}, dropRest: map[qdisc.ClassID]bool{}}
}

func (s *scripted) state(id qdisc.ClassID) qdisc.LeafState {
	st := qdisc.LeafState{Qlen: len(s.q[id])}
	for _, p := range s.q[id] {
		st.Backlog += int64(p.Len)
	}
	return st
}

func (s *scripted) EnqueueLeaves(batch []skb.Packet, to []qdisc.ClassID, res []qdisc.LeafResult) {
	for i, p := range batch {
		s.q[to[i]] = append(s.q[to[i]], p)
		res[i] = qdisc.LeafResult{Code: qdisc.XmitSuccess, Leaf: s.state(to[i]), Segs: 1}
	}
}

func (s *scripted) DequeueLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	l := s.q[id]
	if len(l) == 0 {
		return skb.Packet{}, false, s.state(id)
	}
	p := l[0]
	s.q[id] = l[1:]
	if s.dropRest[id] {
		for _, d := range s.q[id] {
			s.Ctx.DequeueDrop(d.Handle, skb.DropQdiscDrop)
		}
		s.q[id] = nil
	}
	return p, true, s.state(id)
}

func (s *scripted) PeekLeaf(id qdisc.ClassID) (skb.Packet, bool, qdisc.LeafState) {
	if l := s.q[id]; len(l) > 0 {
		return l[0], true, s.state(id)
	}
	return skb.Packet{}, false, s.state(id)
}

// build makes an htb of handle 1: with the classes given as
// "classid parent args..." lines (parent "root" or a classid).
func build(t *testing.T, s *scripted, qargs string, lines ...string) *HTB {
	t.Helper()
	q := &HTB{}
	if _, err := q.Init(s, setup("1:"), strings.Fields(qargs)); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		parent := qdisc.RootClass
		if f[1] != "root" {
			parent = parseID(f[1])
		}
		err := q.ChangeClass(s, qdisc.ClassReq{ID: parseID(f[0]), Parent: parent, Create: true, Args: f[2:]})
		if _, warn := err.(*qdisc.Warning); err != nil && !warn {
			t.Fatalf("%s: %v", l, err)
		}
	}
	return q
}

func parseID(s string) qdisc.ClassID {
	var maj, min uint16
	majS, minS, _ := strings.Cut(s, ":")
	for _, c := range majS {
		maj = maj<<4 | hexDigit(c)
	}
	for _, c := range minS {
		min = min<<4 | hexDigit(c)
	}
	return qdisc.MakeClassID(maj, min)
}

func hexDigit(c rune) uint16 {
	switch {
	case c >= '0' && c <= '9':
		return uint16(c - '0')
	case c >= 'a' && c <= 'f':
		return uint16(c-'a') + 10
	}
	return 0
}

// send enqueues one packet of size n to class id (by skb->priority).
func send(q *HTB, s *scripted, h skb.Handle, id string, n uint32) {
	rc := make([]qdisc.Code, 1)
	q.Enqueue(s, []skb.Packet{{Handle: h, Len: n, Priority: uint32(parseID(id)), GSOSegs: 1}}, rc)
}

// order dequeues n packets one at a time and gives the classes they came
// from (by the packets' skb->priority).
func order(q *HTB, s *scripted, n int) string {
	var got []string
	for range n {
		out := q.Dequeue(s, qdisc.DequeueReq{Max: 1, Bytes: 1 << 40}, nil)
		if len(out) == 0 {
			got = append(got, "-")
			continue
		}
		got = append(got, qdisc.ClassID(out[0].Priority).String())
	}
	return strings.Join(got, " ")
}

// htb_dequeue_tree: a leaf that empties itself by drops in the dequeue
// that returns a packet has been deactivated (htb_qlen_notify, from the
// leaf's qdisc_tree_reduce_backlog) before htb_dequeue_tree's DRR step,
// so at level 0 the row's pointer moves twice (htb_remove_class_from_row
// past the class, then htb_next_rb_node for its spent deficit): the
// next class in the row loses its turn.
func TestDequeueDropsDeactivateBeforeDRR(t *testing.T) {
	tests := []struct {
		name     string
		dropRest bool
		want     string
	}{
		// 1:1's dequeue drops its second packet: 1:2 is skipped.
		{"leaf empties by its drops", true, "1:1 1:3 1:2 1:3 1:2 -"},
		// Without the drops the row is served in turn.
		{"no drops", false, "1:1 1:2 1:3 1:1 1:2 1:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted()
			q := build(t, s, "",
				"1:1 root rate 10gbit quantum 1000",
				"1:2 root rate 10gbit quantum 1000",
				"1:3 root rate 10gbit quantum 1000")
			s.dropRest[0x10001] = tt.dropRest
			h := skb.Handle(1)
			for range 2 {
				for _, id := range []string{"1:1", "1:2", "1:3"} {
					send(q, s, h, id, 1500)
					h++
				}
			}
			if got := order(q, s, 6); got != tt.want {
				t.Errorf("served %q, want %q", got, tt.want)
			}
			if st := q.Stats(); st.Qlen != 0 {
				t.Errorf("%+v left", st)
			}
		})
	}
}

// htb_reset zeroes the inner classes' feeds (memset of cl->inner) and
// leaves the qdisc in use: after it, a tree whose classes borrow serves
// as a new one does. A middle class active at two prios is in its
// parent's feeds of both.
func TestResetKeepsFeedsUsable(t *testing.T) {
	for _, reset := range []bool{false, true} {
		s := newScripted()
		q := build(t, s, "",
			"1:1 root rate 10gbit burst 1mb cburst 1mb",
			"1:2 1:1 rate 1mbit ceil 10gbit cburst 1mb",
			"1:10 1:2 rate 1mbit ceil 10gbit cburst 1mb prio 0",
			"1:20 1:2 rate 1mbit ceil 10gbit cburst 1mb prio 1")
		if reset {
			q.Reset(s)
		}
		h := skb.Handle(1)
		for range 4 {
			for _, id := range []string{"1:10", "1:20"} {
				send(q, s, h, id, 1500)
				h++
			}
		}
		var got string
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("reset %v: %v", reset, r)
				}
			}()
			got = order(q, s, 9)
		}()
		// Each leaf sends its burst at level 0, then borrows from 1:1
		// through 1:2 (level 7's row, prio 0 first).
		if want := "1:10 1:10 1:20 1:20 1:10 1:10 1:20 1:20 -"; got != want {
			t.Errorf("reset %v: served %q, want %q", reset, got, want)
		}
	}
}

// A leaf's deficits share a union with an inner class's feeds: a leaf
// that becomes inner (its first child) and a leaf again (the child
// deleted: htb_parent_to_leaf) starts its DRR turns from deficit 0, as
// the memsets of cl->inner leave it; a leaf that stayed one keeps its
// deficit.
func TestParentToLeafZeroesDeficit(t *testing.T) {
	tests := []struct {
		name  string
		child bool
		want  string
	}{
		{"leaf, inner, leaf again", true, "1:1 1:2 1:1 1:2"},
		// 400 of 1:1's quantum left from its first packet: it sends
		// two 300-byte packets in one turn.
		{"leaf all along", false, "1:1 1:1 1:2 1:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted()
			q := build(t, s, "",
				"1:1 root rate 10gbit quantum 1000",
				"1:2 root rate 10gbit quantum 1000")
			send(q, s, 1, "1:1", 600)
			if got := order(q, s, 1); got != "1:1" {
				t.Fatalf("first packet from %s", got)
			}
			if tt.child {
				if err := q.ChangeClass(s, qdisc.ClassReq{ID: 0x10010, Parent: 0x10001, Create: true, Args: []string{"rate", "1mbit"}}); err != nil {
					t.Fatal(err)
				}
				if err := q.DeleteClass(s, 0x10010); err != nil {
					t.Fatal(err)
				}
			}
			h := skb.Handle(2)
			for range 2 {
				for _, id := range []string{"1:1", "1:2"} {
					send(q, s, h, id, 300)
					h++
				}
			}
			if got := order(q, s, 4); got != tt.want {
				t.Errorf("served %q, want %q", got, tt.want)
			}
		})
	}
}

// bstats_update counts a GSO skb's segments as packets: the leaf
// class's sent packets (htb_dequeue_tree) and its ancestors'
// (htb_charge_class).
func TestClassStatsCountGSOSegments(t *testing.T) {
	tests := []struct {
		name      string
		leaf      string
		segs      uint16
		wantPkts  uint64
		wantBytes uint64
	}{
		{"GSO skb of 10 segments", "rate 10gbit", 10, 10, 15000},
		{"one segment", "rate 10gbit", 1, 1, 15000},
		{"GSOSegs unset", "rate 10gbit", 0, 1, 15000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted()
			q := build(t, s, "",
				"1:1 root rate 10gbit burst 1mb cburst 1mb",
				"1:10 1:1 "+tt.leaf)
			rc := make([]qdisc.Code, 1)
			q.Enqueue(s, []skb.Packet{{Handle: 1, Len: 15000, Priority: 0x10010, GSOSegs: tt.segs}}, rc)
			if got := order(q, s, 1); got != "1:10" {
				t.Fatalf("dequeued %q", got)
			}
			for _, c := range q.Classes() {
				if c.SentPackets != tt.wantPkts || c.SentBytes != tt.wantBytes {
					t.Errorf("class %s: Sent %d bytes %d pkt, want %d bytes %d pkt", c.ID, c.SentBytes, c.SentPackets, tt.wantBytes, tt.wantPkts)
				}
			}
		})
	}
}

// htb_change_class stores tc's u32 quantum in an int: 2^31 and above is
// negative, as `tc -d class show` prints it ((int)hopt->quantum), and
// such a class's deficit never recovers (deficit += quantum): it
// yields its turn after every packet.
func TestQuantumIsAnInt(t *testing.T) {
	tests := []struct {
		quantum string
		dump    string
		want    string
	}{
		{"100000", "quantum 100000 ", "1:1 1:2 1:1 1:1 1:2 1:2"},
		{"2147483647", "quantum 2147483647 ", "1:1 1:2 1:1 1:1 1:2 1:2"},
		{"4294967295", "quantum -1 ", "1:1 1:2 1:1 1:2 1:2 1:1"},
		// -1500 + -2^31 wraps to 2147482148 (the kernel's ints wrap,
		// -fno-strict-overflow): a turn of all its packets after the first.
		{"2147483648", "quantum -2147483648 ", "1:1 1:2 1:1 1:1 1:2 1:2"},
	}
	for _, tt := range tests {
		s := newScripted()
		q := build(t, s, "",
			"1:1 root rate 10gbit burst 1mb cburst 1mb quantum "+tt.quantum,
			"1:2 root rate 10gbit burst 1mb cburst 1mb quantum 100000")
		if o := q.Classes()[0].Options; !strings.Contains(o, tt.dump) {
			t.Errorf("quantum %s: dump %q, want %q", tt.quantum, o, tt.dump)
		}
		h := skb.Handle(1)
		for range 3 {
			for _, id := range []string{"1:1", "1:2"} {
				send(q, s, h, id, 1500)
				h++
			}
		}
		if got := order(q, s, 6); got != tt.want {
			t.Errorf("quantum %s: served %q, want %q", tt.quantum, got, tt.want)
		}
	}
}

// answering is a scripted ctx whose leaves answer code after their first
// packet: NET_XMIT_DROP and NET_XMIT_SUCCESS | __NET_XMIT_BYPASS (netem's
// loss) leave the packet out, NET_XMIT_CN takes it and drops the oldest.
type answering struct {
	*scripted
	code qdisc.Code
}

func (s *answering) EnqueueLeaves(batch []skb.Packet, to []qdisc.ClassID, res []qdisc.LeafResult) {
	for i, p := range batch {
		id, code := to[i], s.code
		switch {
		case len(s.q[id]) == 0 || code == qdisc.XmitSuccess:
			code = qdisc.XmitSuccess
			s.q[id] = append(s.q[id], p)
		case code == qdisc.XmitCN:
			s.Ctx.Drop(s.q[id][0].Handle, skb.DropQdiscDrop)
			s.q[id] = append(s.q[id][1:], p)
		default:
			s.Ctx.Drop(p.Handle, skb.DropQdiscDrop)
		}
		res[i] = qdisc.LeafResult{Code: code, Leaf: s.state(id), Segs: 1}
	}
}

// htb_enqueue: a leaf's answer other than NET_XMIT_SUCCESS counts in the
// qdisc's drops and the class's (net_xmit_drop_count: 1 but for
// __NET_XMIT_STOLEN), and goes back unmasked (ret).
func TestLeafAnswerCountsClassDrop(t *testing.T) {
	for _, tt := range []struct {
		code  qdisc.Code
		drops uint64
	}{
		{qdisc.XmitSuccess, 0},
		{qdisc.XmitSuccess | qdisc.XmitBypass, 2},
		{qdisc.XmitCN, 2},
		{qdisc.XmitDrop, 2},
	} {
		t.Run(tt.code.String(), func(t *testing.T) {
			s := &answering{newScripted(), tt.code}
			q := build(t, s.scripted, "", "1:10 root rate 100mbit")
			rc := make([]qdisc.Code, 3)
			q.Enqueue(s, []skb.Packet{{Handle: 1, Len: 100, Priority: 0x10010}, {Handle: 2, Len: 100, Priority: 0x10010},
				{Handle: 3, Len: 100, Priority: 0x10010}}, rc)
			if rc[0] != qdisc.XmitSuccess || rc[2] != tt.code {
				t.Errorf("answered %v, want the leaf's %v", rc, tt.code)
			}
			var cl qdisc.Class
			for _, c := range q.Classes() {
				if c.ID == 0x10010 {
					cl = c
				}
			}
			if cl.Drops != tt.drops || q.Stats().Drops != tt.drops {
				t.Errorf("class drops %d, qdisc drops %d, want %d", cl.Drops, q.Stats().Drops, tt.drops)
			}
		})
	}
}
