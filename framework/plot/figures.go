package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Options say what to draw.
type Options struct {
	// Script names the run in titles; empty: the report's script key,
	// else its profiles.
	Script string
	// Kinds are the figure kinds to draw (Kinds()); empty: every one the
	// report has data for.
	Kinds []string
}

// kind is one figure kind: its name (the file name's start) and what it
// draws from the runs (nothing when they lack its series).
type kind struct {
	name string
	help string
	draw func(d *drawing) []*Figure
}

var kinds = []kind{
	{"overview", "tx pps, qdisc backlog and (when present) cake's BLUE p and CoDel's dropping flows, stacked", overview},
	{"throughput-pps", "transmitted packets per second over time", func(d *drawing) []*Figure { return one(d.fig("throughput-pps", "tx throughput", d.ppsPanel())) }},
	{"throughput-bps", "transmitted bits per second over time", throughputBps},
	{"backlog", "packets in the qdiscs over time", func(d *drawing) []*Figure { return one(d.fig("backlog", "qdisc backlog", d.backlogPanel())) }},
	{"drops", "drops over time: by reason per run, and all reasons across variants", drops},
	{"xmit-latency", "the __dev_queue_xmit time histogram (log2 buckets, as bpftrace's hist)", xmitLatency},
	{"cpu", "CPU sys, soft and idle over time per run, and sys across variants", cpu},
	{"cpu-profile", "where the CPUs' time went over the window, by activity (the report's cpu_profile): ns a packet sent, work and lock spin, a bar a run", cpuProfile},
	{"blue-p", "cake's largest BLUE drop probability over time", func(d *drawing) []*Figure { return one(d.fig("blue-p", "cake BLUE drop probability", d.bluePanel())) }},
	{"codel-dropping", "flows in CoDel's dropping state over time (fq_codel, cake)", func(d *drawing) []*Figure {
		return one(d.fig("codel-dropping", "CoDel drop state", d.codelPanel()))
	}},
	{"goodput", "TCP goodput over time, all flows", goodput},
	{"goodput-flows", "TCP goodput per flow over time", goodputFlows},
	{"rtt-cdf", "RTT CDF of the latency probes, idle and loaded", rttCDF},
}

// Kinds lists the figure kinds: name and what it shows.
func Kinds() [][2]string {
	out := make([][2]string, len(kinds))
	for i, k := range kinds {
		out[i] = [2]string{k.name, k.help}
	}
	return out
}

// CheckKinds refuses a kind that does not exist.
func CheckKinds(names []string) error {
	for _, n := range names {
		if !slices.ContainsFunc(kinds, func(k kind) bool { return k.name == n }) {
			var all []string
			for _, k := range kinds {
				all = append(all, k.name)
			}
			return fmt.Errorf("no plot kind %q (kinds: %s)", n, strings.Join(all, ", "))
		}
	}
	return nil
}

// Figures draws the runs' figures, in Kinds() order: each kind the runs
// have data for (a kind asked for by name and without data is left out
// too; Figures says which in skipped).
func Figures(runs []Run, opt Options) (figs []*Figure, skipped []string, err error) {
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("no run to plot")
	}
	if err := CheckKinds(opt.Kinds); err != nil {
		return nil, nil, err
	}
	d := &drawing{runs: runs, script: opt.Script}
	d.timeUnit()
	for _, k := range kinds {
		if len(opt.Kinds) > 0 && !slices.Contains(opt.Kinds, k.name) {
			continue
		}
		got := k.draw(d)
		if len(got) == 0 {
			skipped = append(skipped, k.name)
		}
		figs = append(figs, got...)
	}
	return figs, skipped, nil
}

// drawing is the state shared by the kinds: the runs, what names them,
// and the time axis's unit.
type drawing struct {
	runs   []Run
	script string
	tdiv   float64 // ns per time unit
	tunit  string
}

// timeUnit picks ms for runs shorter than 2 s, else s.
func (d *drawing) timeUnit() {
	var longest int64
	for _, r := range d.runs {
		for _, iv := range r.Series {
			longest = max(longest, iv.EndNs)
		}
	}
	d.tdiv, d.tunit = 1e9, "s"
	if longest < 2e9 {
		d.tdiv, d.tunit = 1e6, "ms"
	}
}

func (d *drawing) timeLabel() string { return "simulated time (" + d.tunit + ")" }

// source names what was run: the script, else the profile.
func (d *drawing) source() string {
	if d.script != "" {
		return d.script
	}
	if s := d.runs[0].Script; s != "" {
		return s
	}
	var profiles []string
	for _, r := range d.runs {
		if !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
	}
	if len(profiles) == 1 {
		return "profile " + profiles[0]
	}
	return "profiles " + strings.Join(profiles, ", ")
}

// label is a run's name in legends and titles.
func label(r Run, i int) string {
	if r.Name != "" {
		return r.Name
	}
	if len(r.Setup.Qdisc) > 0 {
		return r.Setup.Qdisc
	}
	return fmt.Sprintf("run %d", i+1)
}

// fig makes a figure of the runs together: its title names the source
// and the variant (one run) or how many.
func (d *drawing) fig(name, title string, panels ...*panel) *Figure {
	var ps []*panel
	for _, p := range panels {
		if p != nil {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	sub := d.source()
	if len(d.runs) == 1 {
		sub += " · " + label(d.runs[0], 0)
	} else {
		sub += fmt.Sprintf(" · %d variants", len(d.runs))
	}
	return newFigure(name, title+"\n"+sub, ps)
}

// figOf makes a figure of run i alone; with several runs its name and
// title carry the variant.
func (d *drawing) figOf(i int, name, title string, p *panel) *Figure {
	if p == nil {
		return nil
	}
	sub := d.source() + " · " + label(d.runs[i], i)
	if len(d.runs) > 1 {
		name = fmt.Sprintf("%s-%d-%s", name, i+1, slug(label(d.runs[i], i)))
	}
	return newFigure(name, title+"\n"+sub, []*panel{p})
}

func one(f *Figure) []*Figure {
	if f == nil {
		return nil
	}
	return []*Figure{f}
}

// slug makes a variant's name a file name part.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_'
		if ok {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// timeLine is one run's series value over time (at each interval's
// end); ok false leaves the interval out.
func (d *drawing) timeLine(r Run, v func(Interval) (float64, bool)) plotter.XYs {
	var xy plotter.XYs
	for _, iv := range r.Series {
		if y, ok := v(iv); ok {
			xy = append(xy, plotter.XY{X: float64(iv.EndNs) / d.tdiv, Y: y})
		}
	}
	return xy
}

// acrossRuns is a panel with one line per run that has the value.
func (d *drawing) acrossRuns(title, ylabel string, v func(Interval) (float64, bool)) *panel {
	p := newPanel(title, d.timeLabel(), ylabel)
	for i, r := range d.runs {
		if xy := d.timeLine(r, v); len(xy) > 0 {
			p.line(label(r, i), i, xy)
		}
	}
	return p.orNil()
}

func always(f func(Interval) float64) func(Interval) (float64, bool) {
	return func(iv Interval) (float64, bool) { return f(iv), true }
}

func (d *drawing) ppsPanel() *panel {
	div, unit := scale(d.maxOf(func(iv Interval) float64 { return iv.TxPps }), "pps")
	return d.acrossRuns("tx packets per second", "tx ("+unit+")", always(func(iv Interval) float64 { return iv.TxPps / div }))
}

func (d *drawing) backlogPanel() *panel {
	return d.acrossRuns("qdisc backlog", "backlog (packets, all qdiscs)", always(func(iv Interval) float64 { return float64(iv.Backlog) }))
}

// bluePanel draws cake's BLUE p for the runs with a cake qdisc (or a
// BLUE p in the series); nil when none has.
func (d *drawing) bluePanel() *panel {
	p := newPanel("cake: largest BLUE drop probability (blue_p_max)", d.timeLabel(), "p_drop")
	for i, r := range d.runs {
		if !r.has(func(iv Interval) bool { return iv.BlueP != nil }) && !r.hasQdisc("cake", "cake_mq") {
			continue
		}
		p.line(label(r, i), i, d.timeLine(r, always(func(iv Interval) float64 { return deref(iv.BlueP) })))
	}
	p.yRange(0, 1)
	return p.orNil()
}

// codelPanel draws the flows in CoDel's dropping state for the runs
// with fq_codel or cake (or the key in the series).
func (d *drawing) codelPanel() *panel {
	p := newPanel("flows in CoDel's dropping state (codel_dropping)", d.timeLabel(), "flows")
	for i, r := range d.runs {
		if !r.has(func(iv Interval) bool { return iv.CoDelDropping != nil }) && !r.hasQdisc("fq_codel", "cake", "cake_mq") {
			continue
		}
		p.line(label(r, i), i, d.timeLine(r, always(func(iv Interval) float64 { return float64(derefInt(iv.CoDelDropping)) })))
	}
	p.yFrom(0)
	return p.orNil()
}

func overview(d *drawing) []*Figure {
	return one(d.fig("overview", "throughput, backlog and the qdisc's state", d.ppsPanel(), d.backlogPanel(), d.bluePanel(), d.codelPanel()))
}

func throughputBps(d *drawing) []*Figure {
	div, unit := scale(d.maxOf(func(iv Interval) float64 { return deref(iv.TxBps) }), "bit/s")
	return one(d.fig("throughput-bps", "tx throughput", d.acrossRuns("tx bits per second (frames x 8)", "tx ("+unit+")", func(iv Interval) (float64, bool) {
		if iv.TxBps == nil {
			return 0, false
		}
		return *iv.TxBps / div, true
	})))
}

// perSecond is an interval's count as a rate.
func perSecond(n uint64, iv Interval) float64 {
	if iv.EndNs <= iv.StartNs {
		return 0
	}
	return float64(n) * 1e9 / float64(iv.EndNs-iv.StartNs)
}

// drops draws each run's drops by reason (one figure per run that
// dropped), and with several runs all reasons together, one line each.
func drops(d *drawing) []*Figure {
	var out []*Figure
	total := func(iv Interval) uint64 {
		var n uint64
		for _, v := range iv.DropsBy {
			n += v
		}
		return n
	}
	if len(d.runs) > 1 {
		div, unit := scale(d.maxOf(func(iv Interval) float64 { return perSecond(total(iv), iv) }), "pps")
		p := newPanel("drops, all reasons", d.timeLabel(), "drops ("+unit+")")
		for i, r := range d.runs {
			if r.has(func(iv Interval) bool { return total(iv) > 0 }) {
				p.line(label(r, i), i, d.timeLine(r, always(func(iv Interval) float64 { return perSecond(total(iv), iv) / div })))
			}
		}
		if f := d.fig("drops", "drops over time", p.orNil()); f != nil {
			out = append(out, f)
		}
	}
	for i, r := range d.runs {
		reasons := map[string]bool{}
		var peak float64
		for _, iv := range r.Series {
			for k, v := range iv.DropsBy {
				if v > 0 {
					reasons[k] = true
					peak = max(peak, perSecond(v, iv))
				}
			}
		}
		div, unit := scale(peak, "pps")
		if len(reasons) == 0 {
			continue
		}
		keys := make([]string, 0, len(reasons))
		for k := range reasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		p := newPanel("drops by reason", d.timeLabel(), "drops ("+unit+")")
		for j, k := range keys {
			p.line(k, j, d.timeLine(r, always(func(iv Interval) float64 { return perSecond(iv.DropsBy[k], iv) / div })))
		}
		if f := d.figOf(i, "drops", "drops by reason", p.orNil()); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// cpu draws each run's sys, soft and idle, and with several runs their
// sys together.
func cpu(d *drawing) []*Figure {
	var out []*Figure
	if len(d.runs) > 1 {
		p := d.acrossRuns("CPU sys (system + irq + softirq), all CPUs", "sy (%)", always(func(iv Interval) float64 { return iv.SysPct }))
		if p != nil {
			p.yRange(0, 100)
		}
		if f := d.fig("cpu-sys", "CPU sys over time (vmstat sy)", p); f != nil {
			out = append(out, f)
		}
	}
	for i, r := range d.runs {
		if len(r.Series) == 0 {
			continue
		}
		p := newPanel("CPU time, all CPUs (vmstat sy and id, mpstat %soft)", d.timeLabel(), "% of CPU time")
		p.line("sys", 0, d.timeLine(r, always(func(iv Interval) float64 { return iv.SysPct })))
		p.line("soft", 1, d.timeLine(r, always(func(iv Interval) float64 { return iv.SoftPct })))
		p.line("idle", 2, d.timeLine(r, always(func(iv Interval) float64 { return iv.IdlePct })))
		p.yRange(0, 100)
		out = append(out, d.figOf(i, "cpu", "CPU sys, soft and idle over time", p))
	}
	return out
}

// profileActs is how many activities the cpu-profile figure shows.
const profileActs = 10

// cpuProfile draws where each run's CPU time went over the window, by
// activity: ns a packet sent, the work as a bar in the run's colour and
// the lock spin stacked on it, lighter; the activities with the most
// time in any run, most first from the top.
func cpuProfile(d *drawing) []*Figure {
	type cost struct{ work, spin float64 }
	per := make([]map[string]cost, len(d.runs))
	most := map[string]float64{}
	for i, r := range d.runs {
		if len(r.CPUProfile) == 0 || r.Window.TxPackets == 0 {
			continue
		}
		pkts := float64(r.Window.TxPackets)
		per[i] = map[string]cost{}
		for _, a := range r.CPUProfile {
			c := cost{float64(a.WorkNs) / pkts, float64(a.SpinNs) / pkts}
			per[i][a.Activity] = c
			most[a.Activity] = max(most[a.Activity], c.work+c.spin)
		}
	}
	if len(most) == 0 {
		return nil
	}
	acts := make([]string, 0, len(most))
	for a := range most {
		acts = append(acts, a)
	}
	sort.Slice(acts, func(i, j int) bool {
		if most[acts[i]] != most[acts[j]] {
			return most[acts[i]] > most[acts[j]]
		}
		return acts[i] < acts[j]
	})
	if len(acts) > profileActs {
		acts = acts[:profileActs]
	}
	slices.Reverse(acts) // the nominal axis counts from the bottom
	var with []int
	for i := range d.runs {
		if per[i] != nil {
			with = append(with, i)
		}
	}
	p := newPanel("CPU time by activity (window, all CPUs)", "ns a packet sent", "")
	// A bar a run in each row, a bar's gap between rows, and the axes'.
	width := vg.Points(7)
	p.height = vg.Length(len(acts)*(len(with)+1))*width + 3*vg.Centimeter
	var spinThumb gplot.Thumbnailer
	for k, i := range with {
		work, spin := make(plotter.Values, len(acts)), make(plotter.Values, len(acts))
		for j, a := range acts {
			work[j], spin[j] = per[i][a].work, per[i][a].spin
		}
		bw, err := plotter.NewBarChart(work, width)
		if err != nil { // NaN or infinite values: the report never has them
			return nil
		}
		bs, err := plotter.NewBarChart(spin, width)
		if err != nil {
			return nil
		}
		c := palette[k%len(palette)]
		bw.Horizontal, bs.Horizontal = true, true
		bw.Color, bs.Color = c, color.NRGBA{c.R, c.G, c.B, 0x60}
		bw.LineStyle.Width, bs.LineStyle.Width = 0, 0
		bw.Offset = width * vg.Length(float64(len(with)-1)/2-float64(k))
		bs.Offset = bw.Offset
		bs.StackOn(bw)
		p.p.Add(bw, bs)
		p.entries = append(p.entries, entry{label(d.runs[i], i), bw})
		if spinThumb == nil {
			spinThumb = bs
		}
	}
	p.entries = append(p.entries, entry{"lock spin (lighter)", spinThumb})
	p.p.NominalY(acts...)
	p.p.X.Min = 0
	return one(d.fig("cpu-profile", "where the CPU time went", p))
}

// xmitLatency draws each run's __dev_queue_xmit histogram as the share
// of calls per log2 bucket, one step line per run.
func xmitLatency(d *drawing) []*Figure {
	p := newPanel("__dev_queue_xmit time (window)", "ns, log2 buckets", "share of calls (%)")
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range d.runs {
		h := r.XmitNs
		if h == nil || h.Count == 0 || len(h.Buckets) == 0 {
			continue
		}
		// The buckets the report lists, and the empty ones between them
		// (bpftrace prints those too), as a step line.
		var xy plotter.XYs
		for j, b := range h.Buckets {
			x := log2x(b.Lo, b.Hi)
			if j > 0 {
				for gap := log2x(h.Buckets[j-1].Hi, 2*h.Buckets[j-1].Hi); gap < x; gap++ {
					xy = append(xy, plotter.XY{X: gap, Y: 0})
				}
			}
			xy = append(xy, plotter.XY{X: x, Y: 100 * float64(b.Count) / float64(h.Count)})
			lo = min(lo, x)
		}
		last := h.Buckets[len(h.Buckets)-1]
		end := log2x(last.Hi, 2*last.Hi)
		xy = append(xy, plotter.XY{X: end, Y: xy[len(xy)-1].Y}, plotter.XY{X: end, Y: 0})
		hi = max(hi, end)
		p.stepLine(label(r, i), i, xy, len(d.runs) == 1) // one run: filled, as bars
	}
	if p.empty() {
		return nil
	}
	p.p.X.Min, p.p.X.Max = lo, hi
	p.p.X.Tick.Marker = gplot.TickerFunc(log2Ticks)
	p.yFrom(0)
	return one(d.fig("xmit-latency", "__dev_queue_xmit latency histogram", p))
}

// log2x is a bucket's left edge on the log2 axis; bpftrace's [0, 1)
// bucket sits one step left of [1, 2).
func log2x(lo, hi int64) float64 {
	if lo <= 0 {
		return math.Log2(float64(max(hi, 1))) - 1
	}
	return math.Log2(float64(lo))
}

// log2Ticks labels powers of two as bpftrace's hist does (512, 1K, 2M),
// every other one when there are many.
func log2Ticks(lo, hi float64) []gplot.Tick {
	first, last := int(math.Ceil(lo)), int(math.Floor(hi))
	step := 1
	if last-first > 12 {
		step = 2
	}
	var ts []gplot.Tick
	for e := first; e <= last; e++ {
		t := gplot.Tick{Value: float64(e)}
		if (e-first)%step == 0 && e >= 0 {
			t.Label = pow2Label(e)
		}
		ts = append(ts, t)
	}
	return ts
}

// pow2Label is 2^e as bpftrace prints a bucket bound.
func pow2Label(e int) string {
	switch {
	case e >= 40:
		return fmt.Sprintf("%dT", 1<<(e-40))
	case e >= 30:
		return fmt.Sprintf("%dG", 1<<(e-30))
	case e >= 20:
		return fmt.Sprintf("%dM", 1<<(e-20))
	case e >= 10:
		return fmt.Sprintf("%dK", 1<<(e-10))
	}
	return fmt.Sprintf("%d", 1<<e)
}

// goodput draws the series' goodput_bps (tcp_stream), one line per run.
func goodput(d *drawing) []*Figure {
	div, unit := scale(d.maxOf(func(iv Interval) float64 { return deref(iv.GoodputBps) }), "bit/s")
	p := d.acrossRuns("TCP goodput, all flows", "goodput ("+unit+")", func(iv Interval) (float64, bool) {
		if iv.GoodputBps == nil {
			return 0, false
		}
		return *iv.GoodputBps / div, true
	})
	return one(d.fig("goodput", "TCP goodput over time", p))
}

// goodputFlows draws each run's flows' goodput per series interval of
// the window (tcp.flows[].series_bps).
func goodputFlows(d *drawing) []*Figure {
	var out []*Figure
	for i, r := range d.runs {
		if r.TCP == nil || len(r.TCP.Flows) == 0 {
			continue
		}
		win := r.windowSeries()
		var peak float64
		for _, f := range r.TCP.Flows {
			for _, v := range f.SeriesBps {
				peak = max(peak, v)
			}
		}
		div, unit := scale(peak, "bit/s")
		p := newPanel("goodput per flow", d.timeLabel(), "goodput ("+unit+")")
		for j, f := range r.TCP.Flows {
			var xy plotter.XYs
			for k, v := range f.SeriesBps {
				if k < len(win) {
					xy = append(xy, plotter.XY{X: float64(win[k].EndNs) / d.tdiv, Y: v / div})
				}
			}
			if len(xy) > 0 {
				p.line(fmt.Sprintf("flow %d %s dscp %d", f.ID, f.Dir, f.DSCP), j, xy)
			}
		}
		if f := d.figOf(i, "goodput-flows", "TCP goodput per flow over time", p.orNil()); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// windowSeries are the series intervals within the window.
func (r Run) windowSeries() []Interval {
	var out []Interval
	for _, iv := range r.Series {
		if iv.StartNs >= r.WarmupNs {
			out = append(out, iv)
		}
	}
	return out
}

// rttCDF draws the latency probes' RTT distribution, as flent's
// ping_cdf does: the empirical CDF from the report's cdf_ms (a report
// without it: its p50, p90, p99 as points). One run: idle, loaded and
// each probe loaded; several: each run's idle and loaded.
func rttCDF(d *drawing) []*Figure {
	p := newPanel("RTT CDF", "RTT (ms)", "fraction of samples")
	n, points := 0, false
	add := func(name string, pc Percentiles, i int, dashed bool) {
		if pc.Samples == 0 {
			return
		}
		xy, step := cdfXY(pc)
		if step {
			p.cdfLine(name, i, dashed, xy)
		} else {
			p.linePoints(name, i, dashed, xy)
			points = true
		}
		n++
	}
	for i, r := range d.runs {
		l := r.Latency
		if l == nil {
			continue
		}
		name := label(r, i)
		if len(d.runs) == 1 {
			name = ""
		}
		add(strings.TrimSpace(name+" idle"), l.Idle, 2*i, true)
		add(strings.TrimSpace(name+" loaded"), l.Loaded, 2*i, false)
		if len(d.runs) == 1 && len(l.Probes) > 1 {
			for j, pr := range l.Probes {
				add(fmt.Sprintf("%s %d dscp %d loaded", pr.Kind, pr.ID, pr.DSCP), pr.Loaded, j+1, false)
			}
		}
	}
	if n == 0 {
		return nil
	}
	if points {
		p.p.Title.Text = "RTT CDF (points: the report's p50, p90, p99)"
	}
	p.yRange(0, 1)
	p.p.X.Min = 0
	return one(d.fig("rtt-cdf", "RTT under load (latency probes)", p))
}

// cdfXY is the CDF of pc to draw: from cdf_ms, the empirical CDF's
// corners (0 below the smallest sample, then point j's fraction from
// its value on; step true); without it, the three percentiles.
func cdfXY(pc Percentiles) (plotter.XYs, bool) {
	k := len(pc.CDF)
	if k == 0 {
		return plotter.XYs{{X: pc.P50, Y: 0.5}, {X: pc.P90, Y: 0.9}, {X: pc.P99, Y: 0.99}}, false
	}
	xy := make(plotter.XYs, 0, k+1)
	xy = append(xy, plotter.XY{X: pc.CDF[0], Y: 0})
	for j, v := range pc.CDF {
		xy = append(xy, plotter.XY{X: v, Y: float64(j+1) / float64(k)})
	}
	return xy, true
}

func (r Run) has(f func(Interval) bool) bool { return slices.ContainsFunc(r.Series, f) }

// hasQdisc reports whether a qdisc of one of kinds is on the device or
// on any of a stacked host's devices.
func (r Run) hasQdisc(kinds ...string) bool {
	is := func(q Qdisc) bool { return slices.Contains(kinds, q.Kind) }
	if slices.ContainsFunc(r.Qdisc, is) {
		return true
	}
	return slices.ContainsFunc(r.Devices, func(d Device) bool { return slices.ContainsFunc(d.Qdisc, is) })
}

func (d *drawing) maxOf(f func(Interval) float64) float64 {
	var m float64
	for _, r := range d.runs {
		for _, iv := range r.Series {
			m = max(m, f(iv))
		}
	}
	return m
}

// scale picks a unit prefix for values up to peak.
func scale(peak float64, unit string) (float64, string) {
	switch {
	case peak >= 1e9:
		return 1e9, "G" + unit
	case peak >= 1e6:
		return 1e6, "M" + unit
	case peak >= 1e3:
		return 1e3, "k" + unit
	}
	return 1, unit
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func derefInt(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
