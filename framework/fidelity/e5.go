package fidelity

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/report"
)

// E5's kernels, modes and tests: scripts/e5.tengo names its variants
// <kernel>-<mode>-<test>.
const (
	E5NetNext = "net-next" // cake_mq, cake_clear_tin on every rate adjustment (mq-clear-tins)
	E5Fix     = "fix"      // cake_mq, rates only
	E5Cake    = "cake"     // one root cake, no rate sync
)

// e5Modes are the cake modes and the tins each uses (the rest, of
// cake's 8, are the ones cake_clear_tin walks on every adjustment).
var e5Modes = []struct {
	short, mode string
	tins        int
}{{"be", "besteffort", 1}, {"ds3", "diffserv3", 3}}

// e5Tests are flent's tests as the script runs them.
var e5Tests = []string{"nup", "rrul"}

// E5Variant is the name of a variant of scripts/e5.tengo.
func E5Variant(kernel, mode, test string) string { return kernel + "-" + mode + "-" + test }

// The seed's claim (DESIGN.md's E5): no figures, a direction.
const (
	e5SeedRTT     = "higher with the clearing (hurts latency under load)"
	e5SeedGoodput = "lower with the clearing (hurts throughput)"
)

// cakeFlowsPerTin is CAKE_QUEUES: the flows cake_clear_tin walks per tin.
const cakeFlowsPerTin = 1024

// E5 judges the seed's E5 (cake_mq on veth, 8 queues, 2 Gbit: clearing
// unused tins on every rate adjustment hurts latency under load and
// throughput) from scripts/e5.tengo's variants: for each mode and test,
// net-next (mq-clear-tins) against the fix, the loaded RTT (p50 and
// p99 both higher) and the upload goodput, what crosses cake_mq (lower
// by more than 1%); then, not
// judged, the idle RTT and plain cake beside cake_mq with the fix.
func E5(reps []*report.Report) []Row {
	var rows []Row
	n := 0
	for _, m := range e5Modes {
		for _, t := range e5Tests {
			cell := m.short + "-" + t
			nn, fx := FindVariant(reps, E5Variant(E5NetNext, m.short, t)), FindVariant(reps, E5Variant(E5Fix, m.short, t))
			n++
			rttID, gpID := fmt.Sprintf("E5.%d", n), fmt.Sprintf("E5.%d", n+4)
			if nn == nil || fx == nil || nn.Latency == nil || fx.Latency == nil || nn.GoodputBps == nil || fx.GoodputBps == nil {
				rows = append(rows, missing(rttID, "loaded RTT, clearing vs fix ("+cell+")", e5SeedRTT, E5Variant(E5NetNext, m.short, t), E5Variant(E5Fix, m.short, t)))
				continue
			}
			why := e5Why(nn, fx, m.mode, m.tins)
			a, b := fx.Latency.Loaded, nn.Latency.Loaded
			rows = append(rows, Row{ID: rttID, Name: "loaded RTT, clearing vs fix (" + cell + ")", Seed: e5SeedRTT,
				Model:     fmt.Sprintf("p50 %s -> %s, p99 %s -> %s ms (p99 %.2fx)", ms(a.P50), ms(b.P50), ms(a.P99), ms(b.P99), safeDiv(b.P99, a.P99)),
				Tolerance: "p50 and p99 higher", Holds: b.P50 > a.P50 && b.P99 > a.P99, Why: why})
			// The uploads are what crosses cake_mq (the downloads come
			// back over the path; only their ACKs go through it).
			g0, g1 := upBps(fx), upBps(nn)
			model := fmt.Sprintf("up %s -> %s Mbit/s (%.3fx)", mbit(g0), mbit(g1), safeDiv(g1, g0))
			if fx.TCP != nil && nn.TCP != nil && fx.TCP.DownBps > 0 {
				model += fmt.Sprintf("; all %s -> %s", mbit(*fx.GoodputBps), mbit(*nn.GoodputBps))
			}
			gwhy := why
			if !(g1 < 0.99*g0) {
				gwhy += "; the shaper still fills its 2 Gbit: the CPUs have room for the walks, so the cost is CPU, not goodput"
			}
			rows = append(rows, Row{ID: gpID, Name: "upload goodput, clearing vs fix (" + cell + ")", Seed: e5SeedGoodput, Model: model,
				Ratio: safeDiv(g1, g0), Tolerance: "lower by over 1%", Holds: g1 < 0.99*g0, Why: gwhy})
			rows = append(rows, Row{Name: "idle RTT p50, clearing vs fix (" + cell + ")", Seed: "-", Kind: Check,
				Model: fmt.Sprintf("%s -> %s ms (the sync runs on the ping's dequeue too)", ms(fx.Latency.Idle.P50), ms(nn.Latency.Idle.P50))})
			if ck := FindVariant(reps, E5Variant(E5Cake, m.short, t)); ck != nil && ck.GoodputBps != nil && ck.Latency != nil {
				rows = append(rows, Row{Name: "plain cake vs cake_mq with the fix (" + cell + ")", Seed: "-", Kind: Check,
					Model: fmt.Sprintf("upload goodput %s vs %s Mbit/s, loaded RTT p99 %s vs %s ms, CPU %.1f%% vs %.1f%%",
						mbit(upBps(ck)), mbit(g0), ms(ck.Latency.Loaded.P99), ms(a.P99), ck.CPUBusyPct, fx.CPUBusyPct)})
			}
		}
	}
	// The goodput rows after the RTT rows, in ID order.
	var rtt, gp, rest []Row
	for _, r := range rows {
		switch {
		case strings.HasPrefix(r.Name, "loaded RTT"):
			rtt = append(rtt, r)
		case strings.HasPrefix(r.Name, "upload goodput"):
			gp = append(gp, r)
		default:
			rest = append(rest, r)
		}
	}
	out := append(append(rtt, gp...), rest...)
	for i := range out {
		out[i].Experiment = "E5"
	}
	return out
}

// upBps is a run's upload goodput (all of it without a TCP section).
func upBps(r *report.Report) float64 {
	if r.TCP != nil {
		return r.TCP.UpBps
	}
	return *r.GoodputBps
}

// e5Why is the mechanism behind a cell: cake_clear_tin on each rate
// adjustment, the flows it walks, and what it cost the host's CPUs.
func e5Why(nn, fx *report.Report, mode string, tins int) string {
	unused := 8 - tins
	return fmt.Sprintf("cake_clear_tin on each rate adjustment: every 200 us each dequeuing cake_mq child walks its %d unused tins (%s) x %d flows under its root lock; net_tx_action's root-lock hold %s -> %s, CPU busy %.1f%% -> %.1f%%",
		unused, mode, cakeFlowsPerTin, usec(txActionHold(fx)), usec(txActionHold(nn)), fx.CPUBusyPct, nn.CPUBusyPct)
}

// txActionHold is net_tx_action's root-lock hold per acquisition, ns
// (the dequeue path, where cake_mq's sync runs).
func txActionHold(r *report.Report) float64 {
	for _, l := range r.Locks {
		if l.Name == "net_tx_action (root_lock)" {
			return safeDiv(float64(l.HoldNs), float64(l.Acquired))
		}
	}
	return 0
}

func ms(v float64) string { return fmt.Sprintf("%.3f", v) }

func mbit(bps float64) string { return fmt.Sprintf("%.0f", bps/1e6) }
