// Package fidelity sets the seeds' figures beside the model's: each
// experiment's rows name a figure, what the seed measured, what the
// model gives, their ratio, and whether the model is within the
// tolerance the issues set for it; mechanism checks say what the model
// did to get there (who holds the root lock, where drops happen, who
// calls __netif_schedule). Nothing here runs the model; it reads
// reports (the txlab fidelity command runs the scripts).
package fidelity

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/scripts"
)

// Kind says how a row is judged.
type Kind string

// The kinds of rows.
const (
	// Figure is a seed's figure against the model's, judged by its
	// tolerance.
	Figure Kind = "figure"
	// Check is mechanism evidence; judged only when it has a tolerance.
	Check Kind = "check"
	// Pending is an experiment (or part of one) the model does not run yet.
	Pending Kind = "pending"
)

// Row is one figure: the seed's, the model's, their ratio, and whether
// the model's is within the tolerance (Tolerance says which).
type Row struct {
	Experiment string  `json:"experiment"`
	ID         string  `json:"id,omitempty"` // the claim's number where the experiment numbers them ("E2.1")
	Name       string  `json:"figure"`
	Seed       string  `json:"seed"`
	Model      string  `json:"model"`
	Ratio      float64 `json:"ratio,omitempty"` // model / seed of the row's main number (of the ratios, for a ratio); 0: none
	Tolerance  string  `json:"tolerance,omitempty"`
	Holds      bool    `json:"holds"`
	Kind       Kind    `json:"kind"` // "" is Figure
	// Why is the model's mechanism behind the figure, or why the row
	// could not be judged.
	Why string `json:"why,omitempty"`
}

// label is the row's name, after its ID where it has one.
func (r Row) label() string {
	if r.ID == "" {
		return r.Name
	}
	return r.ID + " " + r.Name
}

// Judged reports whether the row has a verdict: a figure, or a check
// with a tolerance.
func (r Row) Judged() bool {
	switch r.kind() {
	case Figure:
		return true
	case Check:
		return r.Tolerance != ""
	}
	return false
}

func (r Row) kind() Kind {
	if r.Kind == "" {
		return Figure
	}
	return r.Kind
}

// verdict is the holds column: yes or no with the tolerance, "-" for an
// unjudged check, or why a pending row has none.
func (r Row) verdict() string {
	switch {
	case r.kind() == Pending:
		return "not yet modelled"
	case !r.Judged():
		return "-"
	}
	v := "no"
	if r.Holds {
		v = "yes"
	}
	if r.Tolerance == "" {
		return v
	}
	return v + " (" + r.Tolerance + ")"
}

func (r Row) ratioText() string {
	if r.Ratio == 0 || math.IsNaN(r.Ratio) || math.IsInf(r.Ratio, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.Ratio)
}

// Held counts the judged rows and the ones that hold.
func Held(rows []Row) (held, judged int) {
	for _, r := range rows {
		if r.Judged() {
			judged++
			if r.Holds {
				held++
			}
		}
	}
	return held, judged
}

// WriteRows prints rows as a table: figure, seed, model, ratio, verdict;
// then the mechanism checks that have no seed figure, one a line; then
// how many of the judged rows hold.
func WriteRows(w io.Writer, rows []Row) error {
	var b strings.Builder
	writeRows(&b, rows)
	held, judged := Held(rows)
	fmt.Fprintf(&b, "%d of %d figures hold\n", held, judged)
	_, err := io.WriteString(w, b.String())
	return err
}

// mechanismOnly is a check with nothing of the seed's to set beside it.
func (r Row) mechanismOnly() bool { return r.kind() == Check && r.Seed == "-" && r.Tolerance == "" }

func writeRows(b *strings.Builder, rows []Row) {
	var table, mech []Row
	for _, r := range rows {
		if r.mechanismOnly() {
			mech = append(mech, r)
		} else {
			table = append(table, r)
		}
	}
	if len(table) > 0 {
		writeTable(b, table)
	}
	if len(mech) > 0 {
		b.WriteString("mechanism:\n")
		for _, r := range mech {
			writeWrapped(b, "  "+r.Name+": ", 6, r.Model)
		}
	}
}

func writeTable(b *strings.Builder, rows []Row) {
	nw, sw, mw, rw := len("figure"), len("seed"), len("model"), len("ratio")
	for _, r := range rows {
		nw, sw, mw, rw = max(nw, len(r.label())), max(sw, len(r.Seed)), max(mw, len(r.Model)), max(rw, len(r.ratioText()))
	}
	fmt.Fprintf(b, "%-*s  %-*s  %-*s  %*s  %s\n", nw, "figure", sw, "seed", mw, "model", rw, "ratio", "holds (tolerance)")
	for _, r := range rows {
		fmt.Fprintf(b, "%-*s  %-*s  %-*s  %*s  %s\n", nw, r.label(), sw, r.Seed, mw, r.Model, rw, r.ratioText(), r.verdict())
		if r.Why != "" {
			writeWrapped(b, "  why: ", len("  why: "), r.Why)
		}
	}
}

// textWidth is where the text output wraps a why or mechanism line: the
// table's own rows are as wide as their cells, but a why runs to a
// thousand characters, which a terminal would fold at column 0.
const textWidth = 120

// writeWrapped writes first and then text, folded at spaces to lines of
// at most textWidth (a word longer than that stands alone), every line
// after the first indented by indent.
func writeWrapped(b *strings.Builder, first string, indent int, text string) {
	b.WriteString(first)
	col := len(first)
	lineStart := true
	for _, word := range strings.Fields(text) {
		if !lineStart && col+1+len(word) > textWidth {
			b.WriteString("\n")
			b.WriteString(strings.Repeat(" ", indent))
			col, lineStart = indent, true
		}
		if !lineStart {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
		lineStart = false
	}
	b.WriteString("\n")
}

// Result is one experiment's rows as the fidelity command prints them.
type Result struct {
	ID     string  `json:"id"`
	Title  string  `json:"title"`
	Script string  `json:"script,omitempty"` // the shipped script it ran
	Runs   int     `json:"runs"`             // simulations run
	WallS  float64 `json:"wall_s"`           // wall time of its runs, added up (with -j they overlap)
	// Set is a what-if's overrides (txlab fidelity --set), applied to
	// every run: the rows are then not the shipped model's.
	Set  []string `json:"set,omitempty"`
	Rows []Row    `json:"rows"`
}

// WriteResults prints each experiment as a section with its table, then
// the total.
func WriteResults(w io.Writer, results []Result) error {
	var b strings.Builder
	var all []Row
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s  %s", r.ID, r.Title)
		if r.Script != "" {
			fmt.Fprintf(&b, "  (scripts/%s.tengo, %d runs, %.1f s", r.Script, r.Runs, r.WallS)
			if len(r.Set) > 0 {
				fmt.Fprintf(&b, "; what-if --set %s", strings.Join(r.Set, " --set "))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		writeRows(&b, r.Rows)
		if held, judged := Held(r.Rows); judged > 0 {
			fmt.Fprintf(&b, "%s: %d of %d figures hold\n", r.ID, held, judged)
		}
		all = append(all, r.Rows...)
	}
	held, judged := Held(all)
	fmt.Fprintf(&b, "\nall: %d of %d figures hold\n", held, judged)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteResultsJSON writes the results as {"experiments": [...], "held",
// "judged"}.
func WriteResultsJSON(w io.Writer, results []Result) error {
	var all []Row
	for i := range results {
		if results[i].Rows == nil {
			results[i].Rows = []Row{}
		}
		all = append(all, results[i].Rows...)
	}
	if results == nil {
		results = []Result{}
	}
	held, judged := Held(all)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Experiments []Result `json:"experiments"`
		Held        int      `json:"held"`
		Judged      int      `json:"judged"`
	}{results, held, judged})
}

// Experiment is one of the seeds' experiments: the shipped script that
// runs it and what turns the script's reports into rows.
type Experiment struct {
	ID    string
	Title string
	// Script is the shipped script (scripts/NAME.tengo); empty when the
	// model does not run the experiment yet.
	Script string
	// Seeds is how many times the script runs, with seeds 1..Seeds, so
	// a gain can be set against run-to-run noise; 0 runs it once with
	// the script's own seed.
	Seeds int
	// Variants are the names of the script's variants that Rows reads,
	// for an experiment that finds its reports by name (E1 and E3 find
	// theirs by profile and toggle, and say which are missing).
	Variants []string
	// Rows turns the script's reports (every variant of every seed) into
	// the experiment's figures; nil when there are none yet.
	Rows func([]*report.Report) ([]Row, error)
	// Pending says what is not modelled yet, printed as a row.
	Pending string
}

// Experiments are the seeds' experiments in order (DESIGN.md's table).
func Experiments() []Experiment {
	return []Experiment{
		{ID: "E1", Title: "llist adoption: 480 CPUs, 100G, 30 queues, mq fq, 240 x UDP_STREAM 120 B (busylock vs llist, unpinned and pinned)",
			Script: "e1", Seeds: 3, Rows: func(reps []*report.Report) ([]Row, error) {
				runs, err := FindE1(reps)
				if err != nil {
					return nil, err
				}
				return E1(runs), nil
			}},
		{ID: "E2", Title: "root cake on ice, 8 queues, 16 flows of 64 B forwarded at 5 Mpps (cake's collapse)",
			Script: "e2", Variants: []string{E2Cake618, E2CakeLlist, E2CakeNoBlue, E2Burst8, E2Burst256, E2FqCodel618, E2FqCodelRc1, E2Sfq618, E2SfqRc1},
			Rows: rowsOf("E2", E2)},
		{ID: "E2n", Title: "E2 fed by netperf: 16 vs 1 UDP_STREAM -m 64 on the generator, forwarded through root cake on ice, 8 queues; 16 local on idpf, 32 queues",
			Script: "e2n", Variants: []string{E2n16Old, E2n16Rc1, E2n1Old, E2n1Rc1, E2nIdpfOld, E2nIdpfRc1, E2nLocal16Old, E2nLocal16Rc1, E2nLocal1Old, E2nLocal1Rc1},
			Rows: rowsOf("E2n", E2n)},
		{ID: "E2b", Title: "root cake on i40e, 4 queues, 21 Mpps of 64 B forwarded (Jonas's DUT)",
			Script: "e2b", Variants: []string{E2bPre, E2bLlist, E2bDeqDrop, E2bBound, E2bNoBlue}, Rows: rowsOf("E2b", E2b)},
		{ID: "E3", Title: "__netif_schedule fast path: idpf 200G, 32 queues, mq fq, 240 x UDP_STREAM 120 B, off vs on",
			Script: "fastpath", Seeds: 3, Rows: func(reps []*report.Report) ([]Row, error) {
				runs, err := FindE3(reps)
				if err != nil {
					return nil, err
				}
				return E3(runs), nil
			}},
		{ID: "E4", Title: "bulk dequeue for all qdiscs (4d202a0d1): HTB on a bonding device, 24 UDP_STREAM 120 B, 4.7 vs 4.8, senders over both sockets or one",
			Script: "e4", Variants: []string{E4NumaBefore, E4NumaAfter, E4NonumaBefore, E4NonumaAfter}, Rows: rowsOf("E4", E4)},
		{ID: "E5", Title: "cake_mq on veth, 8 queues, 2 Gbit, 32 TCP upstreams and rrul, rate adjust with and without clearing tins",
			Script: "e5", Seeds: 3, Variants: e5Variants(), Rows: rowsOf("E5", E5)},
	}
}

// rowsOf adapts an experiment's row function (E2, E2b) to Experiment.Rows.
func rowsOf(id string, rows func([]*report.Report) []Row) func([]*report.Report) ([]Row, error) {
	return func(reps []*report.Report) ([]Row, error) {
		out := rows(reps)
		for i := range out {
			out[i].Experiment = id
		}
		return out, nil
	}
}

// Select picks experiments by id from a comma-separated list (any case).
// A blank list is refused rather than taken as all: an --only "" that
// came from an unset variable would otherwise start the full-size run.
func Select(only string) ([]Experiment, error) {
	all := Experiments()
	var ids []string
	for _, e := range all {
		ids = append(ids, e.ID)
	}
	if strings.TrimSpace(only) == "" {
		return nil, fmt.Errorf("%q names no experiment (known: %s)", only, strings.Join(ids, ", "))
	}
	var out []Experiment
	seen := map[string]bool{}
	for _, w := range strings.Split(only, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			return nil, fmt.Errorf("%q: an empty name in the list (known: %s)", only, strings.Join(ids, ", "))
		}
		found := false
		for _, e := range all {
			if strings.EqualFold(e.ID, w) {
				found = true
				if !seen[e.ID] {
					seen[e.ID] = true
					out = append(out, e)
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown experiment %q (known: %s)", w, strings.Join(ids, ", "))
		}
	}
	// In the table's order, whatever the list's.
	order := map[string]int{}
	for i, e := range all {
		order[e.ID] = i
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && order[out[j].ID] < order[out[j-1].ID]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// Find is the experiment with this id (any case).
func Find(id string) (Experiment, error) {
	sel, err := Select(id)
	if err != nil {
		return Experiment{}, err
	}
	if len(sel) != 1 {
		return Experiment{}, fmt.Errorf("want one experiment, got %q", id)
	}
	return sel[0], nil
}

// CheckReports refuses a saved report that is not of the experiment's
// script, before anything is judged: judged anyway, its rows would all
// be missing variants, read as a model that failed its figures. A
// report that txlab run stamped with another shipped script is refused
// by that name; one from another script or from flags, by having none
// of the experiment's variants (E1 and E3 say which they miss). A copy
// of the script under another name passes, by its variants.
func (e Experiment) CheckReports(reps []*report.Report) error {
	want := "scripts/" + e.Script + ".tengo"
	from := "a run from flags" // txlab run stamps no script on those
	for _, r := range reps {
		if r == nil || r.Script == "" {
			continue
		}
		from = r.Script
		name := strings.TrimSuffix(filepath.Base(r.Script), ".tengo")
		if name == e.Script {
			continue
		}
		if _, err := fs.Stat(scripts.FS, name+".tengo"); err == nil {
			return fmt.Errorf("a report of %s, not of %s (%s's script)", r.Script, want, e.ID)
		}
	}
	if len(e.Variants) == 0 {
		return nil
	}
	for _, r := range reps {
		if r != nil && slices.Contains(e.Variants, r.Name) {
			return nil
		}
	}
	return fmt.Errorf("a report of %s, with none of %s's variants (%s runs them)", from, e.ID, want)
}

// Evaluate is an experiment's rows from its reports: its figures (or a
// pending row), then the mechanism checks.
func (e Experiment) Evaluate(reps []*report.Report) ([]Row, error) {
	var rows []Row
	if e.Pending != "" {
		rows = append(rows, Row{Experiment: e.ID, Name: "seed figures", Seed: "-", Model: e.Pending, Kind: Pending})
	}
	if e.Rows != nil {
		fig, err := e.Rows(reps)
		if err != nil {
			return nil, err
		}
		rows = append(rows, fig...)
	}
	for _, r := range Mechanism(firstSeed(reps)) {
		r.Experiment = e.ID
		rows = append(rows, r)
	}
	for i := range rows {
		rows[i].Kind = rows[i].kind()
	}
	return rows, nil
}

// firstSeed keeps the reports of the lowest seed: mechanism checks are
// shown for one run of each variant.
func firstSeed(reps []*report.Report) []*report.Report {
	var lo uint64
	first := true
	for _, r := range reps {
		if r != nil && (first || r.Seed < lo) {
			lo, first = r.Seed, false
		}
	}
	var out []*report.Report
	for _, r := range reps {
		if r != nil && r.Seed == lo {
			out = append(out, r)
		}
	}
	return out
}

func usec(ns float64) string { return fmt.Sprintf("%.2f us", ns/1000) }

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func within(m, s, tol float64) bool { return m >= s*(1-tol) && m <= s*(1+tol) }

// factor is how many times apart two positive values are (inf if one
// is zero).
func factor(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.Inf(1)
	}
	return math.Max(a/b, b/a)
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func pct(part, whole float64) string {
	return fmt.Sprintf("%.0f%%", 100*safeDiv(part, whole))
}

// Lock call sites, as the model names them (framework/netdev).
const (
	siteEnqueue  = "__dev_xmit_skb (root_lock)"
	siteDirect   = "sch_direct_xmit (root_lock)"
	siteTxAction = "net_tx_action (root_lock)"
	rxMissed     = "RX_MISSED"
)

// FindVariant returns the report of the variant named name, or nil.
func FindVariant(reps []*report.Report, name string) *report.Report {
	for _, r := range reps {
		if r != nil && r.Name == name {
			return r
		}
	}
	return nil
}

// missing is the row for a claim whose variants were not all run.
func missing(id, name, seed string, variants ...string) Row {
	return Row{ID: id, Name: name, Seed: seed, Model: "not run",
		Why: "needs the variants " + strings.Join(variants, ", ")}
}

// measured is the series after the warmup.
func measured(r *report.Report) []report.Interval {
	var out []report.Interval
	for _, iv := range r.Series {
		if iv.StartNs >= r.WarmupNs && iv.EndNs > iv.StartNs {
			out = append(out, iv)
		}
	}
	return out
}

// head is the rate of the first measured interval.
func head(r *report.Report) float64 {
	if s := measured(r); len(s) > 0 {
		return s[0].TxPps
	}
	return r.TxPps
}

// tail is the rate over the last quarter of the measured series (at
// least its last interval): where a decline has got to.
func tail(r *report.Report) float64 {
	s := measured(r)
	if len(s) == 0 {
		return r.TxPps
	}
	s = s[len(s)-max(1, len(s)/4):]
	var pkts uint64
	var ns int64
	for _, iv := range s {
		pkts += iv.TxPackets
		ns += iv.EndNs - iv.StartNs
	}
	return float64(pkts) * 1e9 / float64(ns)
}

// lockNamed is r's lock table row of a call site (zero if it has none).
// Sites are unique in a report; of several, the last counts, as
// lockRows' table by name keeps it.
func lockNamed(r *report.Report, site string) report.Lock {
	var found report.Lock
	for _, l := range r.Locks {
		if l.Name == site {
			found = l
		}
	}
	return found
}

// lockHold is the share of the window the root lock was held after being
// taken at the enqueue side, and at the dequeue side (sch_direct_xmit's
// re-take and net_tx_action), with the dequeue side's mean wait.
func lockHold(r *report.Report) (enq, deq float64, deqWaitNs int64) {
	if r.WindowNs <= 0 {
		return 0, 0, 0
	}
	var waits, contended int64
	for _, l := range r.Locks {
		switch l.Name {
		case siteEnqueue:
			enq += float64(l.HoldNs) / float64(r.WindowNs) // a hold begun before the window may push it past 1
		case siteDirect, siteTxAction:
			deq += float64(l.HoldNs) / float64(r.WindowNs)
			waits += l.TotalWaitNs
			contended += int64(l.Contended)
		}
	}
	if contended > 0 {
		deqWaitNs = waits / contended
	}
	return enq, deq, deqWaitNs
}

// kneeWhy is the enqueue side's price of one packet under the root lock
// (its hold time over the packets past the RX rings) times the arrival:
// the share of the lock the drainers take. Near 1 the dequeuer gets no
// turns whatever the qdisc's AQM does (root-lock saturation); well below
// it, the dequeuer's turns and the AQM decide.
func kneeWhy(r *report.Report) string {
	enq, _, _ := lockHold(r)
	a := arrival(r)
	if a <= 0 || enq <= 0 {
		return ""
	}
	return fmt.Sprintf("the enqueue side holds the root lock %s a packet arriving x %s = %.2f", nsText(int64(enq/a*1e9)), rate(a), enq)
}

// turnsWhy says how the dequeuer shares the root lock with an llist's
// drainers: how often sch_direct_xmit took it back per drain (a drain is
// __dev_xmit_skb's take), and what it sent a turn. A dequeuer that gets
// one bulk per drain sends at most 9 skbs a drain cycle through a root
// qdisc over many queues (try_bulk_dequeue_skb_slow).
func turnsWhy(r *report.Report) string {
	var drains, turns uint64
	var held int64
	for _, l := range r.Locks {
		switch l.Name {
		case siteEnqueue:
			drains, held = l.Acquired, l.HoldNs
		case siteDirect:
			turns = l.Acquired
		}
	}
	if drains == 0 || turns == 0 || r.WindowNs <= 0 {
		return ""
	}
	return fmt.Sprintf("a drain every %s (held %s), the dequeuer took the root lock %.2f times a drain, sending %.1f skbs a turn",
		nsText(r.WindowNs/int64(drains)), nsText(held/int64(drains)), float64(turns)/float64(drains), float64(r.Window.TxPackets)/float64(turns))
}

// arrival is the rate at which packets reached __dev_queue_xmit in the
// window: offered minus what the NIC dropped at the RX rings.
func arrival(r *report.Report) float64 {
	if r.WindowNs <= 0 {
		return 0
	}
	n := r.Window.OfferedPackets - min(r.Window.OfferedPackets, r.Window.Drops[rxMissed])
	return float64(n) * 1e9 / float64(r.WindowNs)
}

// stackDrops are the window's drops other than at the RX rings.
func stackDrops(r *report.Report) uint64 {
	return sumDrops(r.Window.Drops, func(reason string) bool { return reason != rxMissed })
}

// sumDrops adds up the drops of the reasons keep accepts (nil: every
// reason).
func sumDrops(drops map[string]uint64, keep func(reason string) bool) uint64 {
	var n uint64
	for reason, d := range drops {
		if keep == nil || keep(reason) {
			n += d
		}
	}
	return n
}

// dropCount is a drop reason and how many it dropped.
type dropCount struct {
	reason string
	n      uint64
}

// windowDrops is the window's drops by reason, largest first (ties by
// name), without the reasons skip names.
func windowDrops(r *report.Report, skip ...string) []dropCount {
	var all []dropCount
	for k, n := range r.Window.Drops {
		if n > 0 && !slices.Contains(skip, k) {
			all = append(all, dropCount{k, n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].reason < all[j].reason
	})
	return all
}

// dropRates is the window's drops by reason, per second, largest first.
func dropRates(r *report.Report) string {
	if r.WindowNs <= 0 {
		return ""
	}
	var parts []string
	for _, x := range windowDrops(r) {
		parts = append(parts, fmt.Sprintf("%s %s", x.reason, rate(float64(x.n)*1e9/float64(r.WindowNs))))
	}
	if len(parts) == 0 {
		return "no drops"
	}
	return strings.Join(parts, ", ")
}

// blueTrace is BLUE's p over the measured series at a few points, and
// the time it first reached 0.99.
func blueTrace(r *report.Report) string {
	s := measured(r)
	if len(s) == 0 {
		return ""
	}
	var pts []string
	step := max(1, len(s)/4)
	for i := 0; i < len(s); i += step {
		pts = append(pts, fmt.Sprintf("%.2f@%s", s[i].BlueP, secs(s[i].EndNs)))
	}
	last := s[len(s)-1]
	if i := len(s) - 1; i%step != 0 {
		pts = append(pts, fmt.Sprintf("%.2f@%s", last.BlueP, secs(last.EndNs)))
	}
	out := "BLUE p " + strings.Join(pts, " ")
	for _, iv := range s {
		if iv.BlueP >= 0.99 {
			return out + fmt.Sprintf(" (0.99 by %s)", secs(iv.EndNs))
		}
	}
	if r.DurationNs < blueClimbNs {
		out += " (cobalt_queue_full raises a flow's p by 1/256 at most once a target, 5 ms: p reaches 1 after 1.28 s, longer than this run)"
	}
	return out
}

// blueClimbNs is the least time BLUE takes to drive p from 0 to 1 at
// cake's default target: 256 steps of p_inc (1/256), one per 5 ms.
const blueClimbNs = 256 * 5_000_000

// rate prints packets per second as the seeds do: Mpps or Kpps.
func rate(pps float64) string {
	if pps >= 1e6 {
		return fmt.Sprintf("%.3g Mpps", pps/1e6)
	}
	if pps >= 1e3 {
		return fmt.Sprintf("%.3g Kpps", pps/1e3)
	}
	return fmt.Sprintf("%.3g pps", pps)
}

func secs(ns int64) string { return fmt.Sprintf("%.2gs", float64(ns)/1e9) }

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// fold is how many times a exceeds b, for a collapse: a rate that fell to
// nothing is an infinite fold (ratio's 0 would judge it no collapse).
func fold(a, b float64) float64 {
	if b == 0 && a > 0 {
		return math.Inf(1)
	}
	return ratio(a, b)
}

// foldText prints a fold: "63x", or "infinitely" for an infinite one.
func foldText(x float64, prec int) string {
	if math.IsInf(x, 1) {
		return "infinitely"
	}
	return fmt.Sprintf("%.*fx", prec, x)
}
