package fidelity

import (
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// TestPerQueueBreakdown prints, per TX queue of E1 over the fidelity window
// (30-70 ms), the senders mapped to it, what they offered, the defer
// drains and their batch sizes, fq's drops, the packets dequeued, the
// time the qdisc ran (qdisc_run_begin to _end) and the time it waited
// between runs with a backlog; then each sender's CPU at its first
// packet, which fixes its queue (XPS, then sk_tx_queue_mapping).
// PQ_PROFILE=1 go test ./framework/fidelity -run PerQueueBreakdown -v;
// DRAIN_VARIANT and DRAIN_SET as for DrainBreakdown.
func TestPerQueueBreakdown(t *testing.T) {
	if os.Getenv("PQ_PROFILE") == "" {
		t.Skip("PQ_PROFILE=1")
	}
	variant := envOr("DRAIN_VARIANT", "6.19-rc1")
	type qs struct {
		senders                  map[skb.OwnerID]bool
		offered, drains, batched uint64
		drops, sentAll           uint64
		runStart, ran            sim.Time
		maxBatch                 int
		endAt, stall, idle       sim.Time
		endBacklog               bool
		sent, runs, stalls       uint64
	}
	var per []*qs
	get := func(i int) *qs {
		for len(per) <= i {
			per = append(per, &qs{senders: map[skb.OwnerID]bool{}})
		}
		return per[i]
	}
	var dev0 *netdev.Device
	firstCPU := map[skb.OwnerID]int{}
	var firstAt []sim.Time
	idx := map[*netdev.Qdisc]int{}
	qi := func(q *netdev.Qdisc) int {
		if i, ok := idx[q]; ok {
			return i
		}
		for i, tq := range dev0.Queues {
			if tq.Qdisc() == q {
				idx[q] = i
				return i
			}
		}
		return -1
	}
	from, dur := 30*sim.Millisecond, 70*sim.Millisecond
	win := dur - from
	runObserved(t, "e1", variant, dur, func(n *netdev.Net, d *netdev.Device) {
		dev0 = d
		n.Hooks.XmitStart = func(c *sim.CPU, s *skb.SKB) {
			if _, ok := firstCPU[s.Owner]; !ok {
				firstCPU[s.Owner] = c.ID
				firstAt = append(firstAt, c.Now())
			}
		}
		n.Hooks.DeferPush = func(c *sim.CPU, q *netdev.Qdisc, s *skb.SKB) {
			if c.Now() < from {
				return
			}
			p := get(int(s.Queue))
			p.offered++
			p.senders[s.Owner] = true
		}
		n.Hooks.EnqueueBatch = func(c *sim.CPU, q *netdev.Qdisc, b []*skb.SKB) {
			if c.Now() < from {
				return
			}
			p := get(qi(q))
			p.drains++
			p.batched += uint64(len(b))
			p.maxBatch = max(p.maxBatch, len(b))
		}
		n.Hooks.Drop = func(c *sim.CPU, s *skb.SKB, r skb.DropReason) {
			if c.Now() < from {
				return
			}
			get(int(s.Queue)).drops++
		}
		n.Hooks.RunBegin = func(c *sim.CPU, q *netdev.Qdisc) {
			p := get(qi(q))
			p.runStart = c.Now()
			if p.endAt >= from {
				if p.endBacklog {
					p.stall += c.Now() - p.endAt
					p.stalls++
				} else {
					p.idle += c.Now() - p.endAt
				}
			}
		}
		n.Hooks.RunEnd = func(c *sim.CPU, q *netdev.Qdisc) {
			p := get(qi(q))
			if p.runStart >= from {
				p.ran += c.Now() - p.runStart
				p.runs++
			}
			p.endAt, p.endBacklog = c.Now(), q.Qlen() > 0
		}
		n.Hooks.Dequeue = func(c *sim.CPU, q *netdev.Qdisc, b []*skb.SKB) {
			if c.Now() >= from {
				get(qi(q)).sent += uint64(len(b))
			}
		}
	})
	var tot qs
	active := 0
	hist := map[int]int{}
	for i, p := range per {
		sent := p.sent
		if p.offered == 0 {
			continue
		}
		active++
		hist[len(p.senders)]++
		t.Logf("q%2d senders %3d offered %7d drains %7d (%.1f a drain, max %d) drops %7d (%.0f%%) sent %7d (%.2f Mpps) running %.0f%% (%d runs), stalled with backlog %.0f%% (%d), idle empty %.0f%%", i, len(p.senders), p.offered,
			p.drains, float64(p.batched)/float64(max(p.drains, 1)), p.maxBatch, p.drops, 100*float64(p.drops)/float64(p.offered), sent, float64(sent)/float64(win)*1e3,
			100*float64(p.ran)/float64(win), p.runs, 100*float64(p.stall)/float64(win), p.stalls, 100*float64(p.idle)/float64(win))
		tot.offered += p.offered
		tot.drains += p.drains
		tot.batched += p.batched
		tot.drops += p.drops
		tot.sentAll += sent
	}
	byCPU := map[int]int{}
	for _, c := range firstCPU {
		byCPU[c]++
	}
	var cpus []int
	for c := range byCPU {
		cpus = append(cpus, c)
	}
	sort.Ints(cpus)
	t.Logf("%d senders' first CPUs (cpu:count): %v", len(firstCPU), func() (o []string) {
		for _, c := range cpus {
			o = append(o, fmt.Sprintf("%d:%d", c, byCPU[c]))
		}
		return
	}())
	if len(firstAt) > 0 {
		t.Logf("first packets from %v to %v", firstAt[0], firstAt[len(firstAt)-1])
	}
	var ks []int
	for k := range hist {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	t.Logf("%d active queues; senders-a-queue histogram %v; total offered %d drains %d (%.1f a drain) drops %d sent %d (%.2f Mpps)", active, hist, tot.offered, tot.drains,
		float64(tot.batched)/float64(max(tot.drains, 1)), tot.drops, tot.sentAll, float64(tot.sentAll)/float64(win)*1e3)
}
