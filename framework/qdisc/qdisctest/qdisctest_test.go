package qdisctest_test

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

// pacer is a FIFO that lets one packet leave every gap: a shaper. With
// arm false it forgets its watchdog, the bug the suite must catch. It has
// no Peek of its own (the host's qdisc_peek_dequeued stands in).
type pacer struct {
	f    qdisc.PFifo
	arm  bool
	next sim.Time
}

func (p *pacer) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	return p.f.Init(ctx, s, args)
}
func (p *pacer) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) { p.f.Enqueue(ctx, b, rc) }
func (p *pacer) Reset(ctx qdisc.Ctx)                                    { p.f.Reset(ctx) }
func (p *pacer) Stats() qdisc.Stats                                     { return p.f.Stats() }
func (p *pacer) Dump() string                                           { return p.f.Dump() }

const gap = 10 * sim.Microsecond

func (p *pacer) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	if p.Stats().Qlen == 0 {
		return out
	}
	if now := ctx.Now(); now < p.next {
		if p.arm {
			ctx.Watchdog(p.next)
		}
		return out
	}
	p.next = ctx.Now() + gap
	return p.f.Dequeue(ctx, qdisc.DequeueReq{Max: 1}, out)
}

func TestSuiteCatchesAMissingWatchdog(t *testing.T) {
	for _, arm := range []bool{true, false} {
		res := qdisctest.Run(func() qdisc.Qdisc { return &pacer{arm: arm} }, qdisctest.Options{Seed: 1, Pkts: 300})
		if arm {
			for _, r := range res {
				t.Errorf("a shaper that arms its watchdog failed %s: %v", r.Check, r.Err)
			}
			continue
		}
		failed := map[string]bool{}
		for _, r := range res {
			failed[r.Check] = true
			if !strings.Contains(r.Err.Error(), "no watchdog is armed") {
				t.Errorf("%s: %v, want the missing watchdog named", r.Check, r.Err)
			}
		}
		for _, c := range []string{"accounting identity", "dequeue progresses or arms the watchdog", "peek equals next dequeue"} {
			if !failed[c] {
				t.Errorf("a shaper without a watchdog passed %q", c)
			}
		}
	}
}

// The suite moves time only to the watchdog the qdisc armed, and drops
// with a reason neither the kernel's nor declared are refused.
func TestCtx(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	p := &pacer{arm: true}
	if err := ctx.Idle(p, 1); err == nil {
		t.Fatal("Idle with nothing armed passed")
	}
	ctx.Watchdog(50)
	ctx.Watchdog(30) // re-armed: the latest wins
	if err := ctx.Idle(p, 1); err != nil || ctx.T != 30 || ctx.WDogArmed {
		t.Fatalf("Idle: %v, T %d, armed %v", err, ctx.T, ctx.WDogArmed)
	}
	ctx.Watchdog(90)
	ctx.CancelWatchdog()
	if err := ctx.Idle(p, 1); err == nil {
		t.Fatal("a cancelled watchdog still woke the qdisc")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"MADE_UP"`) {
			t.Fatalf("recovered %v", r)
		}
	}()
	ctx.Drop(1, "MADE_UP")
}
