package qdisc

// FlowList is new_flows or old_flows as sch_fq_codel.c and sch_fq_pie.c
// use them. Both only ever take a list's first flow, move it to a tail
// or unlink it, so a singly linked FIFO of indices into the qdisc's flow
// table is enough; each flow chains through the FlowLink it embeds.
type FlowList struct {
	head, tail int32
	n          int
}

// NewFlowList is an empty list (INIT_LIST_HEAD).
func NewFlowList() FlowList { return FlowList{head: -1, tail: -1} }

// Empty is list_empty.
func (l *FlowList) Empty() bool { return l.head < 0 }

// First is the first flow's index (list_first_entry), -1 when empty.
func (l *FlowList) First() int32 { return l.head }

// Len is how many flows are on the list (new_flows_len, old_flows_len).
func (l *FlowList) Len() int { return l.n }

// FlowLink is a flow's flowchain: the next flow on its list (-1 at the
// tail) and whether it is on one. The zero value is on none.
type FlowLink struct {
	next   int32
	linked bool
}

// Linked is !list_empty(&flow->flowchain).
func (k *FlowLink) Linked() bool { return k.linked }

func (k *FlowLink) flowLink() *FlowLink { return k }

// flowLinked is a pointer to a flow type that embeds FlowLink.
type flowLinked[F any] interface {
	*F
	flowLink() *FlowLink
}

// FlowPushTail is list_add_tail of flows[idx], on no list, onto l.
func FlowPushTail[F any, P flowLinked[F]](flows []F, l *FlowList, idx int32) {
	k := P(&flows[idx]).flowLink()
	k.next, k.linked = -1, true
	if l.tail < 0 {
		l.head = idx
	} else {
		P(&flows[l.tail]).flowLink().next = idx
	}
	l.tail = idx
	l.n++
}

// FlowPopHead is list_del_init of l's first flow; it returns its index.
func FlowPopHead[F any, P flowLinked[F]](flows []F, l *FlowList) int32 {
	idx := l.head
	k := P(&flows[idx]).flowLink()
	l.head = k.next
	if l.head < 0 {
		l.tail = -1
	}
	k.next, k.linked = -1, false
	l.n--
	return idx
}
