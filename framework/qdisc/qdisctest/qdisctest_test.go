package qdisctest_test

import (
	"errors"
	"maps"
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
		// One failure, under the progress check; the checks that ran
		// into the stall too say it stopped them, not that they failed.
		got := map[string]string{}
		for _, r := range res {
			switch {
			case !r.Blocked && strings.Contains(r.Err.Error(), "no watchdog is armed"):
				got[r.Check] = "failed"
			case r.Blocked && strings.Contains(r.Err.Error(), `"dequeue progresses or arms the watchdog"`):
				got[r.Check] = "blocked"
			default:
				t.Errorf("%s (blocked %v): %v", r.Check, r.Blocked, r.Err)
			}
		}
		want := map[string]string{"dequeue progresses or arms the watchdog": "failed", "accounting identity": "blocked", "peek equals next dequeue": "blocked"}
		if !maps.Equal(got, want) {
			t.Errorf("results %v, want %v", got, want)
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
		var b *qdisctest.Broken
		if e, ok := recover().(error); !ok || !errors.As(e, &b) || !strings.Contains(b.Msg, `"MADE_UP"`) {
			t.Fatalf("recovered %v", e)
		}
	}()
	ctx.Drop(1, "MADE_UP")
}

// leaky is pfifo whose stats hide one packet.
type leaky struct{ qdisc.PFifo }

func (l *leaky) Stats() qdisc.Stats {
	s := l.PFifo.Stats()
	if s.Qlen > 0 {
		s.Qlen--
	}
	return s
}

// Each failure is named by the check it belongs to: stats that disagree
// with the contents fail the backlog check only, wherever they show;
// bad options fail before any check runs.
func TestFailuresNameTheirCheck(t *testing.T) {
	res := qdisctest.Run(func() qdisc.Qdisc { return &leaky{} }, qdisctest.Options{Seed: 1, Pkts: 300})
	var failed, blocked []string
	for _, r := range res {
		if r.Blocked {
			blocked = append(blocked, r.Check)
		} else {
			failed = append(failed, r.Check)
		}
	}
	if len(failed) != 1 || failed[0] != "qlen and backlog agree with contents" {
		t.Errorf("failed %q, blocked %q", failed, blocked)
	}
	for _, o := range []qdisctest.Options{{Pkts: -5}, {Pkts: qdisctest.MaxPkts + 1}, {Limit: -1}, {Limit: qdisctest.MaxLimit + 1}} {
		res := qdisctest.Run(func() qdisc.Qdisc { return &qdisc.PFifo{} }, o)
		if len(res) != 1 || res[0].Check != "options" {
			t.Errorf("options %+v: %v", o, res)
		}
	}
	if s := (qdisctest.Options{}).Skipped(); s["limit respected"] == "" {
		t.Errorf("no limit to check, yet the limit check is not skipped: %v", s)
	}
}

// doubler is a FIFO that duplicates every packet it is handed but its
// own clones (marked Packet.Dup when they come back), or with forged set
// asks for a packet it does not hold.
type doubler struct {
	f      qdisc.PFifo
	forged bool
}

func (d *doubler) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	return d.f.Init(ctx, s, []string{"limit", "100000"})
}
func (d *doubler) Enqueue(ctx qdisc.Ctx, b []skb.Packet, rc []qdisc.Code) {
	d.f.Enqueue(ctx, b, rc)
	for i := range b {
		if b[i].IsDup() {
			continue
		}
		h := b[i].Handle
		if d.forged {
			h ^= 1 << 40
		}
		ctx.Duplicate(h)
	}
}
func (d *doubler) Dequeue(ctx qdisc.Ctx, req qdisc.DequeueReq, out []skb.Packet) []skb.Packet {
	return d.f.Dequeue(ctx, req, out)
}
func (d *doubler) Reset(ctx qdisc.Ctx) { d.f.Reset(ctx) }
func (d *doubler) Stats() qdisc.Stats  { return d.f.Stats() }
func (d *doubler) Dump() string        { return "" }

// The suite hands a duplicating qdisc its clones back, marked as the
// host marks them (else the doubler would double its clones without
// end), and counts them in the identity; a duplicate of a packet the
// qdisc does not hold fails.
func TestSuiteDuplicates(t *testing.T) {
	for _, r := range qdisctest.Run(func() qdisc.Qdisc { return &doubler{} }, qdisctest.Options{Seed: 1, Pkts: 500}) {
		t.Errorf("a qdisc duplicating what it holds failed %s: %v", r.Check, r.Err)
	}
	res := qdisctest.Run(func() qdisc.Qdisc { return &doubler{forged: true} }, qdisctest.Options{Seed: 1, Pkts: 500})
	if len(res) == 0 || !strings.Contains(res[0].Err.Error(), "duplicated packet") {
		t.Fatalf("a forged duplicate passed: %v", res)
	}
}
