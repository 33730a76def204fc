package fidelity

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

func TestSelect(t *testing.T) {
	tests := []struct {
		only string
		want string
		err  string
	}{
		{"", "", `"" names no experiment (known: E1, E2, E2n, E2b, E3, E4, E5)`}, // not all: an unset variable
		{" ", "", `" " names no experiment`},
		{"e3", "E3", ""},
		{"E3, e1,E3", "E1 E3", ""}, // table order, once each
		{"e2B", "E2b", ""},
		{"E9", "", `unknown experiment "E9" (known: E1, E2, E2n, E2b, E3, E4, E5)`},
		{"E1,", "", "an empty name in the list"},
	}
	for _, tc := range tests {
		sel, err := Select(tc.only)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.only, err, tc.err)
			}
			continue
		}
		var ids []string
		for _, e := range sel {
			ids = append(ids, e.ID)
		}
		if err != nil || strings.Join(ids, " ") != tc.want {
			t.Errorf("%q: %v %v, want %s", tc.only, ids, err, tc.want)
		}
	}
}

// CheckReports refuses a report of another shipped script by the name
// txlab run stamped on it, and one with none of the experiment's named
// variants; a copy of the script under another name passes by its
// variants, and E1 and E3 leave a report without theirs to their rows.
func TestCheckReports(t *testing.T) {
	exp := map[string]Experiment{}
	for _, e := range Experiments() {
		exp[e.ID] = e
	}
	rep := func(script string, names ...string) []*report.Report {
		var out []*report.Report
		for _, n := range names {
			out = append(out, &report.Report{Script: script, Name: n, Profile: "6.18"})
		}
		return out
	}
	for _, tc := range []struct {
		id   string
		reps []*report.Report
		err  string
	}{
		{"E2", rep("scripts/e2.tengo", E2Cake618, E2CakeLlist), ""},
		{"E2", rep("/home/me/e2.tengo", E2Cake618), ""},
		{"E2", rep("mine.tengo", E2Cake618), ""},
		{"E2", rep("", E2Cake618), ""},
		{"E2", append(rep("", "x"), nil), "a report of a run from flags, with none of E2's variants (scripts/e2.tengo runs them)"},
		{"E2", rep("scripts/hello.tengo", "6.18", "6.19-rc1"), "a report of scripts/hello.tengo, not of scripts/e2.tengo (E2's script)"},
		{"E2", rep("scripts/e2b.tengo", E2bPre), "a report of scripts/e2b.tengo, not of scripts/e2.tengo (E2's script)"},
		{"E2b", rep("mine.tengo", E2Cake618), "a report of mine.tengo, with none of E2b's variants (scripts/e2b.tengo runs them)"},
		{"E2n", rep("mine.tengo", "x"), "none of E2n's variants"},
		{"E4", rep("mine.tengo", E4NumaAfter), ""},
		{"E5", rep("mine.tengo", E5Variant(E5Cake, "ds3", "rrul")), ""},
		{"E5", rep("mine.tengo", "cake-ds3"), "none of E5's variants"},
		{"E1", rep("scripts/hello.tengo", "6.18"), "a report of scripts/hello.tengo, not of scripts/e1.tengo (E1's script)"},
		{"E1", rep("", "x"), ""},
		{"E3", rep("../scripts/e1.tengo", "6.18"), "a report of ../scripts/e1.tengo, not of scripts/fastpath.tengo (E3's script)"},
		{"E3", rep("fastpath.tengo", "x"), ""},
	} {
		err := exp[tc.id].CheckReports(tc.reps)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %+v: %v, want %q", tc.id, tc.reps[0], err, tc.err)
		}
	}
}

// Drops go to their place by reason; the defer bound's come off
// QDISC_DROP by the defer_drops counter.
func TestDropPlaces(t *testing.T) {
	r := &report.Report{OfferedPackets: 1000, DroppedPackets: 180,
		Drops:    map[string]uint64{"RX_MISSED": 50, "QDISC_DROP": 40, "QDISC_OVERLIMIT": 30, "CAKE_FLOOD": 20, "QDISC_CONGESTED": 10, "TX_DEVICE": 30},
		Counters: map[string]uint64{"defer_drops": 25}}
	got := dropPlaces(r)
	want := "RX 50 (RX_MISSED 50); defer bound 25 (QDISC_DROP 25); enqueue 45 (QDISC_DROP 15, QDISC_OVERLIMIT 30); " +
		"dequeue 30 (CAKE_FLOOD 20, QDISC_CONGESTED 10); elsewhere 30 (TX_DEVICE 30) of 1000 offered"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The root locks are the root's, or one per mq child; the holders'
// shares are of the window times the locks.
func TestRootLock(t *testing.T) {
	r := &report.Report{WindowNs: 1000,
		Qdisc: []report.Qdisc{{Handle: "8001:", Parent: "root", Kind: "mq"}, {Handle: "0:", Parent: "8001:1", Kind: "fq"},
			{Handle: "0:", Parent: "8001:2", Kind: "fq"}},
		Locks: []report.Lock{{Name: "__dev_xmit_skb (root_lock)", Acquired: 10, HoldNs: 1000, AvgWaitNs: 500},
			{Name: "sch_direct_xmit (HARD_TX_LOCK)", Acquired: 10, HoldNs: 2000}}}
	if n := rootLocks(r); n != 2 {
		t.Errorf("%d root locks, want 2", n)
	}
	want := "__dev_xmit_skb 50% of the time, 0.10 us a hold, waits 0.50 us (2 root locks)"
	if got := rootLock(r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r.LockCPUs = "0-7"
	if got := rootLock(r); strings.Contains(got, "of the time") || !strings.HasSuffix(got, "(on CPUs 0-7)") {
		t.Errorf("recorded on some CPUs: %s", got)
	}
}

// The llist's batches: drains a second, their mean, and the buckets the
// median, the 99th percentile and the largest drain fall in; nothing
// for a run without a defer list.
func TestDeferBatches(t *testing.T) {
	tests := []struct {
		name string
		h    *report.Hist
		want string
	}{
		{"busylock", nil, ""},
		{"one-skb drains", &report.Hist{Count: 100, MeanNs: 1, Buckets: log2Buckets(1, 100)},
			"100000/s, 1.0 skbs each; median in 1, p99 in 1, the largest in 1"},
		{"a tail", &report.Hist{Count: 1000, MeanNs: 9.5, Buckets: log2Buckets(1, 600, 300, 80, 10, 0, 0, 0, 0, 0, 10)},
			"1000000/s, 9.5 skbs each; median in 1, p99 in 8-15, the largest in 512-1023"},
		{"the median past the first bucket", &report.Hist{Count: 10, MeanNs: 3, Buckets: log2Buckets(2, 4, 6)},
			"10000/s, 3.0 skbs each; median in 4-7, p99 in 4-7, the largest in 4-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &report.Report{WindowNs: 1_000_000, DeferBatch: tt.h}
			if got := deferBatches(r); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A pending experiment prints as not modelled and is not judged; JSON
// carries every row with its kind.
func TestResultsPrinting(t *testing.T) {
	// Every seed experiment runs now: a made-up pending one.
	ep := Experiment{ID: "EP", Title: "pending", Pending: "needs what the model does not have"}
	rows, err := ep.Evaluate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Kind != Pending || rows[0].Judged() {
		t.Fatalf("EP rows %+v", rows)
	}
	res := []Result{{ID: "EP", Title: ep.Title, Rows: rows},
		{ID: "EX", Title: "test", Script: "x", Runs: 2, Rows: []Row{{Name: "a", Seed: "1", Model: "2", Ratio: 2, Tolerance: "±20%"},
			{Name: "b: root lock held by", Seed: "-", Model: "all of it", Kind: Check}}}}
	var b bytes.Buffer
	if err := WriteResults(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not yet modelled", "(scripts/x.tengo, 2 runs, 0.0 s)", " 2.00  no (±20%)", "mechanism:\n  b: root lock held by: all of it",
		"EX: 0 of 1 figures hold", "all: 0 of 1 figures hold"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteResultsJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Experiments []Result
		Judged      int
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Experiments) != 2 || back.Experiments[0].Rows[0].Kind != Pending || back.Judged != 1 {
		t.Errorf("JSON %s", b.String())
	}
}

// A why or a mechanism line is folded at spaces to textWidth columns,
// the lines after the first indented, no word lost or split.
func TestWriteWrapped(t *testing.T) {
	long := strings.Repeat("x", textWidth+5)
	words := strings.Fields(strings.Repeat("root lock held 98% enqueue side, ", 20))
	for _, tc := range []struct {
		name, first string
		indent      int
		text        string
		lines       int
	}{
		{"short", "  why: ", 7, "BQL limit 306 packets", 1},
		{"folded", "  why: ", 7, strings.Join(words, " "), 6},
		{"a word longer than a line stands alone", "  why: ", 7, "a " + long + " b", 3},
		{"mechanism", "  cake/6.18: ", 6, strings.Join(words, " "), 6},
		{"empty", "  why: ", 7, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeWrapped(&b, tc.first, tc.indent, tc.text)
			out := b.String()
			if !strings.HasSuffix(out, "\n") || !strings.HasPrefix(out, tc.first) {
				t.Fatalf("%q: want %q first and a newline last", out, tc.first)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != tc.lines {
				t.Errorf("%d lines, want %d:\n%s", len(lines), tc.lines, out)
			}
			var got []string
			for i, l := range lines {
				if len(l) > textWidth && len(strings.Fields(l)) > 1 {
					t.Errorf("line %d is %d wide: %q", i, len(l), l)
				}
				if i > 0 && (!strings.HasPrefix(l, strings.Repeat(" ", tc.indent)) || l[tc.indent] == ' ') {
					t.Errorf("line %d not indented by %d: %q", i, tc.indent, l)
				}
				if i == 0 {
					l = strings.TrimPrefix(l, tc.first)
				}
				got = append(got, strings.Fields(l)...)
			}
			if strings.Join(got, " ") != strings.Join(strings.Fields(tc.text), " ") {
				t.Errorf("words changed:\n%q\n%q", got, strings.Fields(tc.text))
			}
		})
	}
}
