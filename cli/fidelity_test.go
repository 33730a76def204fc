package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/fidelity"
)

// txlab fidelity e1 reads a run of E1's variants and prints each seed
// figure beside the run's; bad input is one line.
func TestFidelityCommand(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "e1small.tengo")
	src := `txlab := import("txlab")
txlab.host({sockets: 1, cores: 8, smt: 1})
txlab.device({driver: "ice", queues: 4})
txlab.qdisc({kind: "mq", child: "fq"})
txlab.senders({kind: "udp_stream", count: 8, size: 120})
txlab.lock_cpus("0-3")
txlab.duration("2ms")
txlab.warmup("1ms")
pinned := {placement: "spread"}
txlab.variants([
	{name: "b", profile: "6.18"}, {name: "l", profile: "6.19-rc1"},
	{name: "bp", profile: "6.18", senders: pinned}, {name: "lp", profile: "6.19-rc1", senders: pinned}
])
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "e1.json")
	if out, err := txlab(t, "run", script, "--format", "json", "-o", rep, "--no-progress"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := txlab(t, "fidelity", "e1", rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"unpinned: llist / busylock", "1.81x (16 -> 29 Mpps)", "perf lock after, unpinned", "on CPUs 0-3", "of 29 figures hold"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	one := filepath.Join(dir, "one.json")
	if _, err := txlab(t, append(quick, "--format", "json", "-o", one)...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fidelity", "e9", rep}, `fidelity: unknown experiment "e9" (known: E1, E2, E2n, E2b, E3, E4, E5)`},
		{[]string{"fidelity", "e3", rep}, "E3 needs the variants fast_path=off and fast_path=on"},
		{[]string{"fidelity", "--quick", "e1", rep}, "a saved report is read as it is"},
		{[]string{"fidelity", "e1"}, "want no arguments (run the experiments) or an experiment and a report"},
		{[]string{"fidelity", "--only", "E1,E9"}, `fidelity: --only: unknown experiment "E9" (known: E1, E2, E2n, E2b, E3, E4, E5)`},
		{[]string{"fidelity", "--only", "E1,,E3"}, "an empty name in the list"},
		{[]string{"fidelity", "--format", "yaml", "--only", "E4"}, `--format "yaml": want text or json`},
		{[]string{"fidelity", "e1", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"fidelity", "e1", script}, "not a txlab JSON report"},
		{[]string{"fidelity", "e1", one}, "one.json: E1 needs the variants 6.18 unpinned, 6.18 pinned, 6.19-rc1 pinned"},
		{[]string{"fidelity", "e2", one}, "one.json: a report of a run from flags, with none of E2's variants (scripts/e2.tengo runs them)"},
		// Blank is not all: -j 0 stops the full-size run that would
		// start if it were.
		{[]string{"fidelity", "--only", "", "-j", "0"}, `fidelity: --only: "" names no experiment (known: E1, E2, E2n, E2b, E3, E4, E5)`},
		{[]string{"fidelity", "--only", " ", "-j", "0"}, `fidelity: --only: " " names no experiment`},
		// Flags after the experiment and report are flags, as for run.
		{[]string{"fidelity", "e1", rep, "--quick"}, "a saved report is read as it is"},
		{[]string{"fidelity", "e1", rep, "--nosuch"}, "fidelity: flag provided but not defined: -nosuch"},
		{[]string{"fidelity", "e1", rep, "extra"}, "an experiment and a report (txlab fidelity e1 REPORT.json), got 3 arguments"},
	} {
		_, err := txlab(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
}

// TestFidelityFlagsAfterArgs: `txlab fidelity e1 REPORT -o FILE` writes
// FILE (urfave stops at the first argument; it used to say "want no
// arguments").
func TestFidelityFlagsAfterArgs(t *testing.T) {
	dir := t.TempDir()
	rep, out := filepath.Join(dir, "e4.json"), filepath.Join(dir, "out.json")
	if o, err := txlab(t, "run", "e4", "--quick", "--format", "json", "-o", rep, "--no-progress"); err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	if o, err := txlab(t, "fidelity", "e4", rep, "-o", out, "--format", "json"); err != nil || o != "" {
		t.Fatalf("%v\n%s", err, o)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Contains(b, []byte(`"id": "E4"`)) {
		t.Errorf("-o after the arguments: %v, %q", err, trunc(b))
	}
}

// TestFidelityReportOfItsScript: every experiment refuses a report of
// another script, in one line naming the file and that script (E2, E4
// and E5 used to judge hello.tengo's runs: "0 of 5 figures hold"); a
// copy of an experiment's script under another name is judged, and
// refused by the others for having none of their variants.
func TestFidelityReportOfItsScript(t *testing.T) {
	dir := t.TempDir()
	hello := filepath.Join(dir, "hello.json")
	if out, err := txlab(t, "run", "../scripts/hello.tengo", "--quick", "--format", "json", "-o", hello, "--no-progress"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	src, err := os.ReadFile("../scripts/e4.tengo")
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine.tengo")
	os.WriteFile(mine, src, 0o644)
	mineRep := filepath.Join(dir, "mine.json")
	if out, err := txlab(t, "run", mine, "--quick", "--format", "json", "-o", mineRep, "--no-progress"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := txlab(t, "fidelity", "e4", mineRep); err != nil || !strings.Contains(out, "figures hold") {
		t.Errorf("e4 on a copy of e4.tengo: %v\n%s", err, out)
	}
	for _, exp := range fidelity.Experiments() {
		for _, tc := range []struct{ rep, want string }{
			{hello, hello + ": a report of ../scripts/hello.tengo, not of scripts/" + exp.Script + ".tengo (" + exp.ID + "'s script)"},
			{mineRep, mineRep + ": a report of " + mine + ", with none of " + exp.ID + "'s variants"},
		} {
			if tc.rep == mineRep && (exp.ID == "E4" || exp.Variants == nil) {
				continue // E4's own; E1 and E3 name the variants they miss
			}
			out, err := txlab(t, "fidelity", exp.ID, tc.rep)
			if err == nil || !strings.Contains(err.Error(), "fidelity: "+tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %s: %v, want one line with %q\n%s", exp.ID, tc.rep, err, tc.want, out)
			}
		}
	}
}

// txlab fidelity runs the experiments it is asked for: E3's script for
// three seeds (its gain against their spread), E5's twelve variants
// (cake_mq clearing tins against the fix); the same rows come out as
// JSON.
func TestFidelityRunsExperiments(t *testing.T) {
	out, err := txlab(t, "fidelity", "--quick", "--only", "e5,E3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"E3  __netif_schedule fast path", "(scripts/fastpath.tengo, 6 runs,", "tx pps, fast path on / off",
		"1.137x (52.19 -> 59.36 Mpps)", "3 seeds:", "__netif_schedule from TX completions, off, seed 1", "net_tx_action root-lock wait, off",
		"fast_path=off: __netif_schedule callers: ", "fast_path=on: root lock held by: ", "E5  cake_mq", "(scripts/e5.tengo, 36 runs,",
		"E5.1 loaded RTT, clearing vs fix (be-nup)", "why: cake_clear_tin on each rate adjustment", "plain cake vs cake_mq with the fix", "all: "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "E3  ") > strings.Index(out, "E5  ") {
		t.Errorf("experiments out of order:\n%s", out)
	}
	js, err := txlab(t, "fidelity", "--quick", "--only", "E3,E5", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Experiments []struct {
			ID   string
			Runs int
			Rows []struct {
				Experiment, Figure, Seed, Model, Kind string
				Ratio                                 float64
				Holds                                 bool
			}
		}
		Held, Judged int
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Experiments) != 2 || res.Experiments[0].ID != "E3" || res.Experiments[0].Runs != 6 || res.Experiments[1].ID != "E5" || res.Experiments[1].Runs != 36 {
		t.Fatalf("experiments %+v", res.Experiments)
	}
	gain := res.Experiments[0].Rows[0]
	if gain.Experiment != "E3" || gain.Figure != "tx pps, fast path on / off" || gain.Kind != "figure" || gain.Ratio <= 0 {
		t.Errorf("first E3 row %+v", gain)
	}
	if e5 := res.Experiments[1].Rows[0]; res.Judged < 5+8 || res.Held > res.Judged || e5.Kind != "figure" || e5.Experiment != "E5" ||
		!strings.HasPrefix(e5.Figure, "loaded RTT, clearing vs fix") {
		t.Errorf("held %d of %d, E5 %+v", res.Held, res.Judged, res.Experiments[1].Rows)
	}
	// The text and the JSON came from two runs of the same scripts and
	// seeds: the same figures.
	if !strings.Contains(out, gain.Model) {
		t.Errorf("the JSON's gain %q is not the text's:\n%s", gain.Model, out)
	}
}

// txlab fidelity -j N gives the same rows for any N; --set is a what-if
// applied to every run and named in each experiment's header and JSON;
// bad input is one line before anything runs.
func TestFidelityJobsAndWhatIf(t *testing.T) {
	rows := func(args ...string) (string, []string) {
		t.Helper()
		out, err := txlab(t, append([]string{"fidelity", "--only", "E4", "--format", "json"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var res struct {
			Experiments []struct {
				Set  []string
				Rows []struct{ Model string }
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Experiments) != 1 {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		var models []string
		for _, r := range res.Experiments[0].Rows {
			models = append(models, r.Model)
		}
		// wall_s is the one field that may differ between runs.
		return strings.Join(res.Experiments[0].Set, " "), models
	}
	_, one := rows("-j", "1")
	_, three := rows("-j", "3")
	if strings.Join(one, "\n") != strings.Join(three, "\n") {
		t.Errorf("-j 1 and -j 3 disagree:\n%q\n%q", one, three)
	}
	set, whatIf := rows("--set", "cost.line_socket=80")
	if set != "cost.line_socket=80" || whatIf[0] == one[0] {
		t.Errorf("what-if: set %q, E4.1 %q (shipped %q)", set, whatIf[0], one[0])
	}
	out, err := txlab(t, "fidelity", "--only", "E4", "--set", "cost.line_socket=80")
	if err != nil || !strings.Contains(out, "; what-if --set cost.line_socket=80)") {
		t.Errorf("%v: no what-if in the header:\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fidelity", "--only", "E4", "--set", "nosuch=1"}, `fidelity: E4: variant numa-before: unknown toggle "nosuch"`},
		{[]string{"fidelity", "--only", "E4", "-j", "0"}, "fidelity: -j 0 is out of range"},
		{[]string{"fidelity", "--set", "cost.line_socket=80", "e4", "r.json"}, "a saved report is read as it is"},
	} {
		_, err := txlab(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
}
