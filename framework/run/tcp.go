package run

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/framework/workload"
)

// tcpWorkload resolves a tcp_stream spec's knobs into the workload's
// spec (the path's rate and loss parsed, the ping probe added), with the
// errors naming the knob.
func (s *Spec) tcpWorkload() (workload.Spec, error) {
	w := s.Workload
	w.Probes = append([]workload.Probe(nil), w.Probes...)
	name := func(flag string) string { return KnobByFlag(flag).Name() }
	if _, err := tcp.NewCC(w.CC); err != nil {
		return w, fmt.Errorf("%s: %w", name("cc"), err)
	}
	if n := w.Flows + w.Down; n > tcp.MaxFlows {
		return w, fmt.Errorf("%s: %d connections (%d up, %d down) need %d source ports; ip_local_port_range (%d-%d) has %d",
			name("flows"), n, w.Flows, w.Down, n, tcp.PortsLo, tcp.PortsHi, tcp.MaxFlows)
	}
	for _, r := range []struct {
		flag, text string
		dst        *int64
	}{{"path-rate", s.PathRate, &w.Path.RateBps}, {"path-rate-down", s.PathRateDown, &w.Path.DownRateBps}} {
		t := strings.TrimSpace(r.text)
		if t == "" {
			continue
		}
		v, err := units.ParseRate(t)
		if err != nil {
			return w, fmt.Errorf("%s: %w", name(r.flag), err)
		}
		if err := CheckPathRate(float64(v), t); err != nil {
			return w, fmt.Errorf("%s: %w (leave it empty for no bottleneck on the path)", name(r.flag), err)
		}
		*r.dst = v
	}
	if t := strings.TrimSpace(s.PathLoss); t != "" {
		p, err := parseFraction(t)
		if err != nil {
			return w, fmt.Errorf("%s: %w", name("path-loss"), err)
		}
		w.Path.Loss = p
	}
	if len(w.Path.Qdisc) > 0 {
		if w.Path.RateBps == 0 || w.Path.DownRate() == 0 {
			return w, fmt.Errorf("%s: a qdisc on the path needs a bottleneck rate each way (%s)", name("path-qdisc"), name("path-rate"))
		}
		if err := path.CheckQdisc(w.Path.Qdisc, w.Path.RateBps, w.Path.Limit); err != nil {
			return w, fmt.Errorf("%s: %w", name("path-qdisc"), err)
		}
	}
	if s.Ping > 0 {
		w.Probes = append(w.Probes, workload.Probe{Kind: workload.ProbePing, Interval: s.Ping})
	}
	if w.Flows == 0 && w.Down == 0 && len(w.Probes) == 0 {
		return w, fmt.Errorf("%s: tcp_stream needs connections (--flows, --down) or a probe (--ping)", name("flows"))
	}
	if err := w.Validate(); err != nil {
		return w, err
	}
	return w, nil
}

// CheckPathRate is the range of --path-rate and --path-rate-down (a
// script's path rate and rate_down): bits/s, 0 refused (a path without
// a bottleneck has none given). given is the rate as the user wrote it,
// for the error.
func CheckPathRate(bits float64, given string) error {
	if !(bits >= units.MinRate && bits <= MaxLinkRate) {
		return fmt.Errorf("%s is out of range: %s..%s", given, formatRate(units.MinRate), formatRate(MaxLinkRate))
	}
	return nil
}

// parseFraction reads a loss probability: "0.5%" or "0.005", in [0, 1).
func parseFraction(t string) (float64, error) {
	scale := 1.0
	if v, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = v, 0.01
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage (0.1%%) or a fraction (0.001)", t)
	}
	f *= scale
	if !(f >= 0 && f < 1) {
		return 0, fmt.Errorf("%v is out of range: 0..100%% (excluded)", f)
	}
	return f, nil
}

// tcpSeries samples the flows at every interval boundary: what each
// receiver got in order, and each sender's cwnd.
type tcpSeries struct {
	tr    *workload.Traffic
	at    []sim.Time
	deliv [][]int64 // [sample][flow] segments delivered
	cwnd  [][]uint32
}

func newTCPSeries(wl *workload.Workload) *tcpSeries {
	if wl == nil || wl.Traffic == nil {
		return nil
	}
	ts := &tcpSeries{tr: wl.Traffic}
	ts.sample(0)
	return ts
}

func (ts *tcpSeries) sample(at sim.Time) {
	if ts == nil {
		return
	}
	d := make([]int64, len(ts.tr.Flows))
	w := make([]uint32, len(ts.tr.Flows))
	for i, f := range ts.tr.Flows {
		d[i] = f.Delivered()
		w[i] = f.Snd.Cwnd
	}
	ts.at = append(ts.at, at)
	ts.deliv = append(ts.deliv, d)
	ts.cwnd = append(ts.cwnd, w)
}

// index is the sample taken at t (the window's start), or -1.
func (ts *tcpSeries) index(t sim.Time) int {
	for i, a := range ts.at {
		if a == t {
			return i
		}
	}
	return -1
}

// percentiles are the nearest-rank p50, p90, p99 of rtts in ms.
func percentiles(rtts []sim.Time) report.Percentiles {
	p := report.Percentiles{Samples: len(rtts)}
	if len(rtts) == 0 {
		return p
	}
	s := append([]sim.Time(nil), rtts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(q float64) float64 {
		k := int(q*float64(len(s))+0.999999999) - 1 // ceil(q n) - 1
		k = min(max(k, 0), len(s)-1)
		return float64(s[k]) / float64(sim.Millisecond)
	}
	p.P50, p.P90, p.P99 = rank(0.50), rank(0.90), rank(0.99)
	k := min(len(s), report.CDFPoints)
	p.CDF = make([]float64, k)
	for j := range p.CDF {
		r := ((j+1)*len(s) + k - 1) / k // ceil((j+1) n / k), from 1
		p.CDF[j] = float64(s[r-1]) / float64(sim.Millisecond)
	}
	var sum float64
	for _, r := range s {
		sum += float64(r)
	}
	p.Mean = sum / float64(len(s)) / float64(sim.Millisecond)
	return p
}

// rttSeries is the mean RTT in ms of the samples sent within each of
// the report's intervals, nil where none was (nil without intervals).
// Samples are in the order the answers came, not always the order sent.
func rttSeries(samples []workload.Sample, ivs []report.Interval) []*float64 {
	if len(ivs) == 0 {
		return nil
	}
	sum := make([]sim.Time, len(ivs))
	n := make([]int, len(ivs))
	for _, s := range samples {
		i := sort.Search(len(ivs), func(i int) bool { return ivs[i].EndNs > int64(s.At) })
		if i < len(ivs) && int64(s.At) >= ivs[i].StartNs {
			sum[i] += s.RTT
			n[i]++
		}
	}
	out := make([]*float64, len(ivs))
	for i := range out {
		if n[i] > 0 {
			m := float64(sum[i]) / float64(n[i]) / float64(sim.Millisecond)
			out[i] = &m
		}
	}
	return out
}

// fillTCP writes the flows, goodput, fairness, path and latency
// sections of a tcp_stream run: goodput and RTTs over the window
// (warmup to the end); idle RTTs from probes sent before the flows
// start.
func fillTCP(rep *report.Report, ts *tcpSeries, spec Spec, windowStart, end sim.Time) {
	if ts == nil {
		return
	}
	tr := ts.tr
	if n := len(ts.at); n == 0 || ts.at[n-1] < end {
		ts.sample(end) // a run stopped between series boundaries; else the last boundary is the end
	}
	w0 := ts.index(windowStart)
	if w0 < 0 {
		w0 = 0
	}
	last := len(ts.at) - 1
	secs := float64(end-ts.at[w0]) / float64(sim.Second)
	ecn := tr.ECN
	if len(tr.Flows) > 0 {
		ecn = tr.Flows[0].Snd.ECN // dctcp turns it on whatever tcp_ecn says
	}
	t := &report.TCP{CC: tr.CC, ECN: ecn, StartNs: int64(tr.Start), Path: report.Path{RTTNs: int64(tr.Path.RTT),
		RateBps: tr.Path.RateBps, DownRateBps: tr.Path.DownRate(), Limit: tr.Path.Limit, Loss: tr.Path.Loss, Qdisc: strings.Join(tr.Path.Qdisc, " "),
		Up: linkStats(tr.Path.Up), Down: linkStats(tr.Path.Down)}}
	var up, down, sum, sumSq float64
	for i, f := range tr.Flows {
		segs := ts.deliv[last][i] - ts.deliv[w0][i]
		bps := 0.0
		if secs > 0 {
			bps = float64(segs*tcp.MSS*8) / secs
		}
		fr := report.Flow{ID: f.ID, Dir: f.Dir, DSCP: f.DSCP, GoodputBps: bps, DeliveredBytes: f.Delivered() * tcp.MSS,
			Retrans: f.Snd.RetransSegs, Lost: f.Snd.LostSegs, RTOs: f.Snd.RTOs, Recoveries: f.Snd.Recoveries, CWRs: f.Snd.CWRs,
			Cwnd: f.Snd.Cwnd, Ssthresh: f.Snd.Ssthresh, SrttMs: float64(f.Snd.RTTUs()) / 1000, CEMarked: f.Rcv.CEMarked}
		if fr.Ssthresh == tcp.InfiniteSsthresh {
			fr.Ssthresh = 0
		}
		for k := w0 + 1; k <= last; k++ {
			span := float64(ts.at[k]-ts.at[k-1]) / float64(sim.Second)
			v := 0.0
			if span > 0 {
				v = float64((ts.deliv[k][i]-ts.deliv[k-1][i])*tcp.MSS*8) / span
			}
			fr.SeriesBps = append(fr.SeriesBps, v)
			fr.CwndSeries = append(fr.CwndSeries, ts.cwnd[k][i])
		}
		if f.Dir == workload.Up {
			up += bps
		} else {
			down += bps
		}
		sum += bps
		sumSq += bps * bps
		t.Flows = append(t.Flows, fr)
	}
	if n := float64(len(tr.Flows)); n > 0 && sumSq > 0 {
		t.JainIndex = sum * sum / (n * sumSq) // Jain's fairness index over the flows' goodput
	}
	t.UpBps, t.DownBps = up, down
	g := up + down
	rep.GoodputBps = &g
	rep.TCP = t
	// the goodput of each series interval
	for k := range rep.Series {
		iv := &rep.Series[k]
		a, b := ts.index(sim.Time(iv.StartNs)), ts.index(sim.Time(iv.EndNs))
		if a < 0 || b < 0 || iv.EndNs <= iv.StartNs {
			continue
		}
		var segs int64
		for i := range tr.Flows {
			segs += ts.deliv[b][i] - ts.deliv[a][i]
		}
		iv.GoodputBps = float64(segs*tcp.MSS*8) / (float64(iv.EndNs-iv.StartNs) / float64(sim.Second))
	}
	for k, v := range tr.Counters() {
		rep.Counters[k] = v
	}
	if len(tr.Probe) == 0 {
		return
	}
	lat := &report.Latency{}
	var idle, loaded []sim.Time
	for _, p := range tr.Probe {
		var pi, pl []sim.Time
		for _, s := range p.Samples {
			switch {
			case s.At < tr.Start:
				pi = append(pi, s.RTT)
			case s.At >= windowStart && s.At < end:
				pl = append(pl, s.RTT)
			}
		}
		idle, loaded = append(idle, pi...), append(loaded, pl...)
		lat.Probes = append(lat.Probes, report.ProbeLatency{ID: p.ID, Kind: p.Kind, DSCP: p.DSCP, IntervalNs: int64(p.Interval),
			Idle: percentiles(pi), Loaded: percentiles(pl), Lost: p.Lost, Series: rttSeries(p.Samples, rep.Series)})
	}
	lat.Idle, lat.Loaded = percentiles(idle), percentiles(loaded)
	rep.Latency = lat
}

func linkStats(l *path.Link) report.LinkStats {
	s := l.Stats
	out := report.LinkStats{Sent: s.Sent, Delivered: s.Delivered, Dropped: s.Dropped, Lost: s.Lost, Marked: s.Marked,
		InFlight: s.InFlight(), Bytes: s.Bytes, MaxQueue: s.MaxQueue}
	if d := l.QdiscDrops(); len(d) > 0 {
		out.QdiscDrops = map[string]uint64{}
		for r, n := range d {
			out.QdiscDrops[string(r)] = n
		}
	}
	return out
}
