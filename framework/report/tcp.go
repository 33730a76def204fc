package report

import (
	"bytes"
	"fmt"
)

// Latency is what a run's latency probes measured, as flent's ping_cdf
// plots it: RTTs in milliseconds before the TCP flows started (idle)
// and within the measurement window (loaded), over all probes and per
// probe.
type Latency struct {
	Idle   Percentiles    `json:"idle_rtt_ms"`
	Loaded Percentiles    `json:"loaded_rtt_ms"`
	Probes []ProbeLatency `json:"probes"`
}

// Percentiles summarise RTT samples (nearest rank), in ms, and give
// their distribution (CDF) for flent's ping_cdf.
type Percentiles struct {
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Mean    float64 `json:"mean"`
	Samples int     `json:"samples"`
	// CDF is the distribution, ascending: every sample when there are
	// at most CDFPoints, else CDFPoints of them, point j (from 0) the
	// sample of rank ceil((j+1) n / k) of the n, k = len(CDF): the
	// CDF's value at fraction (j+1)/k.
	CDF []float64 `json:"cdf_ms,omitempty"`
}

// CDFPoints caps Percentiles.CDF.
const CDFPoints = 200

// CDFFraction is the fraction of samples at or below CDF point j of k.
func CDFFraction(j, k int) float64 { return float64(j+1) / float64(k) }

// ProbeLatency is one probe's RTTs.
type ProbeLatency struct {
	ID         int         `json:"id"`
	Kind       string      `json:"kind"` // ping or udp_rr
	DSCP       uint8       `json:"dscp"`
	IntervalNs int64       `json:"interval_ns"`
	Idle       Percentiles `json:"idle_rtt_ms"`
	Loaded     Percentiles `json:"loaded_rtt_ms"`
	Lost       uint64      `json:"lost"` // udp_rr requests given up (no answer within 1 s)
	// Series is the RTT over time, as flent's ping series plot it: per
	// report interval (Report.Series), the mean RTT in ms of the
	// requests sent within it, nil where none was answered.
	Series []*float64 `json:"series_ms,omitempty"`
}

// TCP is a tcp_stream run's connections: goodput (unique payload bytes
// delivered in order to the receiving application) per flow and in
// all, Jain's fairness index over the flows' goodput, each flow's TCP
// state and counters, and the path.
type TCP struct {
	CC        string  `json:"cc"`
	ECN       bool    `json:"ecn"`
	StartNs   int64   `json:"start_ns"`
	UpBps     float64 `json:"goodput_up_bps"`
	DownBps   float64 `json:"goodput_down_bps"`
	JainIndex float64 `json:"jain_index"`
	Flows     []Flow  `json:"flows"`
	Path      Path    `json:"path"`
}

// Flow is one TCP connection.
type Flow struct {
	ID             int       `json:"id"`
	Dir            string    `json:"dir"` // up (the host sends) or down
	DSCP           uint8     `json:"dscp"`
	GoodputBps     float64   `json:"goodput_bps"`     // window
	DeliveredBytes int64     `json:"delivered_bytes"` // whole run
	Retrans        uint64    `json:"retrans_segs"`
	Lost           uint64    `json:"lost_segs"`
	RTOs           uint64    `json:"rtos"`
	Recoveries     uint64    `json:"recoveries"`
	CWRs           uint64    `json:"cwr"`
	CEMarked       uint64    `json:"ce_marked_segs"`
	Cwnd           uint32    `json:"cwnd"`     // at the end, segments
	Ssthresh       uint32    `json:"ssthresh"` // at the end, 0 while infinite
	SrttMs         float64   `json:"srtt_ms"`
	SeriesBps      []float64 `json:"series_bps"` // goodput per series interval in the window
	CwndSeries     []uint32  `json:"cwnd_series"`
}

// Path is the network beyond the host.
type Path struct {
	RTTNs   int64 `json:"rtt_ns"`
	RateBps int64 `json:"rate_bps"` // the up link's bottleneck; 0: none
	// DownRateBps is the down link's.
	DownRateBps int64     `json:"down_rate_bps"`
	Limit       int       `json:"limit"`
	Loss        float64   `json:"loss"`
	Qdisc       string    `json:"qdisc,omitempty"` // the bottleneck router's qdisc, tc words
	Up          LinkStats `json:"up"`
	Down        LinkStats `json:"down"`
}

// LinkStats are one direction's counters (whole run): sent = delivered +
// dropped + lost + in flight.
type LinkStats struct {
	Sent      uint64 `json:"sent"`
	Delivered uint64 `json:"delivered"`
	Dropped   uint64 `json:"dropped"` // tail drops at the bottleneck FIFO
	Lost      uint64 `json:"lost"`    // random loss
	Marked    uint64 `json:"marked"`  // CE-marked by the router's qdisc
	InFlight  uint64 `json:"in_flight"`
	// QdiscDrops are the router qdisc's drops by reason.
	QdiscDrops map[string]uint64 `json:"qdisc_drops,omitempty"`
	Bytes      uint64            `json:"bytes"`
	MaxQueue   int               `json:"max_queue"`
}

// writeTCP prints a tcp_stream run's goodput, latency, flows and path
// (flent's totals and ping_cdf, as numbers).
func writeTCP(b *bytes.Buffer, r *Report) {
	t := r.TCP
	if t == nil {
		return
	}
	fmt.Fprintf(b, "\nTCP (%s, ECN %s)\n", t.CC, onOff(t.ECN))
	fmt.Fprintf(b, "  goodput     %9.2f Mbit/s  (up %.2f, down %.2f), Jain's index %.3f\n", r.Goodput()/1e6, t.UpBps/1e6, t.DownBps/1e6, t.JainIndex)
	if l := r.Latency; l != nil {
		b.WriteString("  RTT ms            p50       p90       p99   samples\n")
		row := func(name string, p Percentiles) {
			fmt.Fprintf(b, "  %-12s %9.3f %9.3f %9.3f %9d\n", name, p.P50, p.P90, p.P99, p.Samples)
		}
		row("idle", l.Idle)
		row("loaded", l.Loaded)
		for _, p := range l.Probes {
			row(fmt.Sprintf("%s/%d", p.Kind, p.DSCP), p.Loaded)
		}
	}
	b.WriteString("  flow dir  dscp  goodput Mbit/s  cwnd  ssthresh  srtt ms  retrans  rtos  cwr\n")
	for _, f := range t.Flows {
		fmt.Fprintf(b, "  %4d %-4s %4d  %14.2f %5d %9d %8.2f %8d %5d %4d\n", f.ID, f.Dir, f.DSCP, f.GoodputBps/1e6, f.Cwnd, f.Ssthresh, f.SrttMs, f.Retrans, f.RTOs, f.CWRs)
	}
	p := t.Path
	fmt.Fprintf(b, "  path: rtt %s ms, rate up %s down %s Gbit/s, limit %d, loss %g", ms(p.RTTNs), gbps(float64(p.RateBps)), gbps(float64(p.DownRateBps)), p.Limit, p.Loss)
	if p.Qdisc != "" {
		fmt.Fprintf(b, ", router qdisc %s", p.Qdisc)
	}
	b.WriteString("\n")
	for _, l := range []struct {
		name string
		s    LinkStats
	}{{"up", p.Up}, {"down", p.Down}} {
		fmt.Fprintf(b, "  path %-4s sent %d delivered %d dropped %d lost %d marked %d in flight %d max queue %d\n",
			l.name, l.s.Sent, l.s.Delivered, l.s.Dropped, l.s.Lost, l.s.Marked, l.s.InFlight, l.s.MaxQueue)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Goodput is goodput_bps (0 for a run without TCP).
func (r *Report) Goodput() float64 {
	if r.GoodputBps == nil {
		return 0
	}
	return *r.GoodputBps
}
