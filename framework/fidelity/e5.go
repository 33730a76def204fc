package fidelity

import (
	"fmt"
	"math"
	"slices"
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

// e5Variants are the names of scripts/e5.tengo's variants.
func e5Variants() []string {
	var out []string
	for _, k := range []string{E5NetNext, E5Fix, E5Cake} {
		for _, m := range e5Modes {
			for _, t := range e5Tests {
				out = append(out, E5Variant(k, m.short, t))
			}
		}
	}
	return out
}

// The seed's claim (DESIGN.md's E5): no figures, a direction.
const (
	e5SeedRTT     = "higher with the clearing (hurts latency under load)"
	e5SeedGoodput = "lower with the clearing (hurts throughput)"
)

// cakeFlowsPerTin is CAKE_QUEUES: the flows cake_clear_tin walks per tin.
const cakeFlowsPerTin = 1024

// e5ShapedBps is scripts/e5.tengo's cake_mq bandwidth (2Gbit): the
// uploads' goodput fills it, less the headers, when the shaper is what
// limits them.
const e5ShapedBps = 2e9

// E5 judges the seed's E5 (cake_mq on veth, 8 queues, 2 Gbit: clearing
// unused tins on every rate adjustment hurts latency under load and
// throughput) from scripts/e5.tengo's variants: for each mode and test,
// net-next (mq-clear-tins) against the fix, the loaded RTT (p50 and
// p99 both higher) and the upload goodput, what crosses cake_mq (lower
// by more than 1%); then, not judged, the idle RTT and plain cake beside
// cake_mq with the fix. Run for several seeds (txlab fidelity runs 1-3),
// a difference holds only in the claimed direction in every seed and
// with its mean above twice its standard error (the seeds' standard
// deviation over the square root of their number): a single seed's 1%
// is within run-to-run noise (seeds 1, 2 and 3 of the shipped script
// gave 6, 2 and 4 of the 8 rows by the one-seed rule). The seed claims a
// direction, so this is the usual test of a mean against noise; E3's
// gain, which its issue asks to be "well above run-to-run noise", must
// clear twice the seeds' standard deviation instead.
// The text gives the lowest seed's figures and each seed's difference.
func E5(reps []*report.Report) []Row {
	var rows []Row
	seeds := reportSeeds(reps)
	n := 0
	for _, m := range e5Modes {
		for _, t := range e5Tests {
			cell := m.short + "-" + t
			nnName, fxName := E5Variant(E5NetNext, m.short, t), E5Variant(E5Fix, m.short, t)
			n++
			rttID, gpID := fmt.Sprintf("E5.%d", n), fmt.Sprintf("E5.%d", n+4)
			var nn, fx *report.Report // the lowest seed's
			var d50, d99, gr []float64
			for _, seed := range seeds {
				a, b := findVariantSeed(reps, fxName, seed), findVariantSeed(reps, nnName, seed)
				if b == nil || a == nil || b.Latency == nil || a.Latency == nil || b.GoodputBps == nil || a.GoodputBps == nil {
					continue
				}
				if nn == nil {
					nn, fx = b, a
				}
				d50 = append(d50, safeDiv(b.Latency.Loaded.P50, a.Latency.Loaded.P50)-1)
				d99 = append(d99, safeDiv(b.Latency.Loaded.P99, a.Latency.Loaded.P99)-1)
				gr = append(gr, safeDiv(upBps(b), upBps(a)))
			}
			if nn == nil {
				rows = append(rows, missing(rttID, "loaded RTT, clearing vs fix ("+cell+")", e5SeedRTT, nnName, fxName))
				continue
			}
			why := e5Why(nn, fx, m.mode, m.tins)
			a, b := fx.Latency.Loaded, nn.Latency.Loaded
			m50, sd50 := meanSD(d50)
			m99, sd99 := meanSD(d99)
			rtt := Row{ID: rttID, Name: "loaded RTT, clearing vs fix (" + cell + ")", Seed: e5SeedRTT,
				Model:     fmt.Sprintf("p50 %s -> %s, p99 %s -> %s ms (p99 %.2fx)", ms(a.P50), ms(b.P50), ms(a.P99), ms(b.P99), safeDiv(b.P99, a.P99)),
				Tolerance: "p50 and p99 higher", Holds: m50 > 0 && m99 > 0, Why: why}
			// The uploads are what crosses cake_mq (the downloads come
			// back over the path; only their ACKs go through it).
			g0, g1 := upBps(fx), upBps(nn)
			gmodel := fmt.Sprintf("up %s -> %s Mbit/s (%.3fx)", mbit(g0), mbit(g1), safeDiv(g1, g0))
			if fx.TCP != nil && nn.TCP != nil && fx.TCP.DownBps > 0 {
				gmodel += fmt.Sprintf("; all %s -> %s", mbit(*fx.GoodputBps), mbit(*nn.GoodputBps))
			}
			mg, sdg := meanSD(gr)
			gp := Row{ID: gpID, Name: "upload goodput, clearing vs fix (" + cell + ")", Seed: e5SeedGoodput, Model: gmodel,
				Ratio: mg, Tolerance: "lower by over 1%", Holds: mg < 0.99, Why: why}
			if k := float64(len(gr)); k > 1 {
				// Beyond noise: the claimed direction in every seed, and
				// the mean over twice its standard error.
				twoSE := 2 / math.Sqrt(k) // twice the standard error, in standard deviations
				rtt.Model += fmt.Sprintf("; %d seeds: p50 %s, p99 %s", len(d50), signedPcts(d50), signedPcts(d99))
				rtt.Tolerance = "p50 and p99 higher in every seed, the mean by over 2 standard errors"
				rtt.Holds = slices.Min(d50) > 0 && slices.Min(d99) > 0 && m50 > twoSE*sd50 && m99 > twoSE*sd99
				gp.Model += fmt.Sprintf("; %d seeds: %s", len(gr), signedPcts(minusOne(gr)))
				gp.Tolerance = "lower by over 1% in every seed, the mean by over 2 standard errors"
				gp.Holds = slices.Max(gr) < 0.99 && 1-mg > twoSE*sdg
			}
			switch {
			case gp.Holds:
			case g0 >= 0.95*e5ShapedBps:
				gp.Why += "; the shaper still fills its 2 Gbit: the CPUs have room for the walks, so the cost is CPU, not goodput"
			case g1 > g0:
				// Measured once with a debug print (README, E5): 3.60
				// against 3.98 active queues seen by the upload children.
				gp.Why += "; the uploads share the 2 Gbit by cake_mq's rate / active queues: the walk slows the child carrying the downloads' ACKs, which then looks idle to the upload children more often, so they shape faster"
			}
			rows = append(rows, rtt, gp)
			rows = append(rows, Row{Name: "idle RTT p50, clearing vs fix (" + cell + ")", Seed: "-", Kind: Check,
				Model: fmt.Sprintf("%s -> %s ms (the sync runs on the ping's dequeue too)", ms(fx.Latency.Idle.P50), ms(nn.Latency.Idle.P50))})
			if ck := findVariantSeed(reps, E5Variant(E5Cake, m.short, t), fx.Seed); ck != nil && ck.GoodputBps != nil && ck.Latency != nil {
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

// reportSeeds are the seeds the reports ran with, in order.
func reportSeeds(reps []*report.Report) []uint64 {
	var seeds []uint64
	for _, r := range reps {
		if r != nil && !slices.Contains(seeds, r.Seed) {
			seeds = append(seeds, r.Seed)
		}
	}
	slices.Sort(seeds)
	return seeds
}

// findVariantSeed is the report of the variant name run with seed.
func findVariantSeed(reps []*report.Report, name string, seed uint64) *report.Report {
	for _, r := range reps {
		if r != nil && r.Name == name && r.Seed == seed {
			return r
		}
	}
	return nil
}

// signedPcts prints fractions as signed percentages ("+1.2% -0.3%").
func signedPcts(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%+.1f%%", 100*x)
	}
	return strings.Join(out, " ")
}

func minusOne(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x - 1
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
	l := lockNamed(r, siteTxAction)
	return safeDiv(float64(l.HoldNs), float64(l.Acquired))
}

func ms(v float64) string { return fmt.Sprintf("%.3f", v) }

func mbit(bps float64) string { return fmt.Sprintf("%.0f", bps/1e6) }
