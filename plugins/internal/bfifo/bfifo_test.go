package bfifo

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
)

// The noop qdisc drops everything until it gets a limit; a bfifo tail
// drops past its byte limit, and keeps what it holds when the limit is
// lowered (fifo_set_limit is a limit only).
func TestBfifo(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	f := Noop()
	if f.Enqueue(ctx, skb.Packet{Handle: 1, Len: 100}) || ctx.Dropped[1] != skb.DropQdiscDrop {
		t.Fatal("noop kept a packet")
	}
	f.SetLimit(0)
	if f.Enqueue(ctx, skb.Packet{Handle: 2, Len: 100}) {
		t.Fatal("limit 0 replaced noop")
	}
	f.SetLimit(250)
	for h := skb.Handle(3); h <= 5; h++ {
		f.Enqueue(ctx, skb.Packet{Handle: h, Len: 100})
	}
	if f.Len() != 2 || f.Backlog() != 200 || f.Drops() != 3 || ctx.Dropped[5] != skb.DropQdiscDrop {
		t.Fatalf("len %d backlog %d drops %d", f.Len(), f.Backlog(), f.Drops())
	}
	f.SetLimit(50)
	if p, ok := f.Peek(); !ok || p.Handle != 3 || f.Len() != 2 {
		t.Fatal("a lowered limit dropped what the fifo held")
	}
	if p, _ := f.Dequeue(); p.Handle != 3 || f.Backlog() != 100 {
		t.Fatal("dequeue")
	}
	f.Purge(ctx, skb.DropQueuePurge)
	if f.Len() != 0 || f.Backlog() != 0 || ctx.Dropped[4] != skb.DropQueuePurge {
		t.Fatal("purge")
	}
}
