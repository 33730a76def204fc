package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunPlot: run --plot draws the run's figures, and txlab plot draws
// the same ones from its JSON report; a second run writes the same bytes
// over them without --plot-force.
func TestRunPlot(t *testing.T) {
	dir := t.TempDir()
	plots := filepath.Join(dir, "plots")
	rep := filepath.Join(dir, "r.json")
	args := append(append([]string(nil), quick...), "--qdisc", "fq_codel", "--format", "json", "-o", rep, "--plot", plots)
	out, err := txlab(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "plot: wrote 8 figures to "+plots) {
		t.Errorf("output %q", out)
	}
	first := map[string][]byte{}
	for _, n := range []string{"overview", "throughput-pps", "throughput-bps", "backlog", "xmit-latency", "cpu", "cpu-profile", "codel-dropping"} {
		b, err := os.ReadFile(filepath.Join(plots, n+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		first[n] = b
	}
	if out, err := txlab(t, args...); err != nil {
		t.Fatalf("the same run again: %v\n%s", err, out)
	}
	// From the JSON: the same figures (a run from flags has no script).
	again := filepath.Join(dir, "again")
	if out, err := txlab(t, "plot", rep, "-o", again); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for n, b := range first {
		if got, _ := os.ReadFile(filepath.Join(again, n+".svg")); !bytes.Equal(got, b) {
			t.Errorf("%s: txlab plot of the report differs from run --plot", n)
		}
	}
	// A script's run: the report names it, so its plots from the JSON
	// are the same bytes, titled with it.
	srep, sdir, sagain := filepath.Join(dir, "h.json"), filepath.Join(dir, "h"), filepath.Join(dir, "h2")
	if out, err := txlab(t, "run", "scripts/hello.tengo", "--quick", "--no-progress", "--format", "json", "-o", srep, "--plot", sdir, "--plot-kinds", "throughput-pps"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := txlab(t, "plot", srep, "-o", sagain, "--plot-kinds", "throughput-pps"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a, _ := os.ReadFile(filepath.Join(sdir, "throughput-pps.svg"))
	b, _ := os.ReadFile(filepath.Join(sagain, "throughput-pps.svg"))
	if len(a) == 0 || !bytes.Equal(a, b) || !bytes.Contains(a, []byte("scripts/hello.tengo")) {
		t.Errorf("a script's plot: %d and %d bytes, equal %v, names the script %v", len(a), len(b), bytes.Equal(a, b), bytes.Contains(a, []byte("scripts/hello.tengo")))
	}
	one := filepath.Join(dir, "o.png")
	if out, err := txlab(t, "plot", rep, "-o", one, "--plot-kinds", "overview"); err != nil || !strings.Contains(out, "plot: wrote "+one) {
		t.Errorf("one PNG: %v %q", err, out)
	}
}

// TestPlotBadInput: each is a one-line error naming what, and nothing
// is overwritten.
func TestPlotBadInput(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	if out, err := txlab(t, append(append([]string(nil), quick...), "--format", "json", "-o", rep)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	notReport := filepath.Join(dir, "n.json")
	os.WriteFile(notReport, []byte(`{"hello": 1}`), 0o644)
	mine := filepath.Join(dir, "mine")
	os.Mkdir(mine, 0o755)
	kept := filepath.Join(mine, "backlog.svg")
	os.WriteFile(kept, []byte("mine"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plot", notReport, "-o", filepath.Join(dir, "p")}, notReport + `: not a txlab report: no "profile" key`},
		{[]string{"plot", filepath.Join(dir, "none.json"), "-o", filepath.Join(dir, "p")}, "none.json: no such file"},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "no", "p")}, "its parent " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p"), "--plot-format", "pdf"}, `--plot-format "pdf": want svg or png`},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p.png"), "--plot-format", "svg", "--plot-kinds", "cpu"}, "is a .png file"},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p.svg")}, "figures for one file"},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p.bmp")}, "p.bmp: a .bmp file: figures are written as .svg or .png, or into a directory"},
		{append(append([]string(nil), quick...), "--plot", filepath.Join(dir, "x.PDF")), "x.PDF: a .pdf file"},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p"), "--plot-kinds", "pps"}, `no plot kind among pps (a run's: overview,`},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p"), "--plot-kinds", "sweep-pps"}, `r.json is a run's report: no plot kind "sweep-pps"`},
		{[]string{"plot", rep, "-o", filepath.Join(dir, "p"), "--plot-kinds", "rtt-cdf"}, "the report has no data for rtt-cdf"},
		{[]string{"plot", rep, "-o", mine}, kept + " exists and differs"},
		{[]string{"plot", rep}, "give -o DIR"},
		{[]string{"plot", "-o", filepath.Join(dir, "p")}, "want one REPORT.json"},
		{append(append([]string(nil), quick...), "--plot-kinds", "cpu"), "--plot-kinds: give --plot DIR too"},
		{append(append([]string(nil), quick...), "--plot", filepath.Join(dir, "no", "p")), "does not exist"},
	}
	for _, c := range cases {
		out, err := txlab(t, c.args...)
		if err == nil || !strings.Contains(errorLine(err), c.want) || strings.Contains(errorLine(err), "\n") {
			t.Errorf("%v: %v, want one line with %q\n%s", c.args, err, c.want, out)
		}
	}
	if b, _ := os.ReadFile(kept); string(b) != "mine" {
		t.Error("a plot replaced a file that differs without --force")
	}
	if _, err := os.Stat(filepath.Join(dir, "p")); err == nil {
		t.Error("a refused plot made its directory")
	}
	if out, err := txlab(t, "plot", rep, "-o", mine, "--force"); err != nil {
		t.Errorf("--force: %v\n%s", err, out)
	}
}

// readmePicture is the README's command that draws its picture.
const readmePicture = "go run ./cli run scripts/e2.tengo --quick --plot docs/img/e2-collapse.svg --plot-kinds overview --plot-force"

// TestREADMEPicture: the README shows docs/img/e2-collapse.svg and the
// command that drew it, and that command draws those bytes today (when
// the model moves, run the command again and commit the picture).
func TestREADMEPicture(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("\n"+readmePicture+"\n")) || !bytes.Contains(readme, []byte("](docs/img/e2-collapse.svg)")) {
		t.Fatalf("the README does not show docs/img/e2-collapse.svg and the command %q", readmePicture)
	}
	committed, err := os.ReadFile("../docs/img/e2-collapse.svg")
	if err != nil {
		t.Fatal(err)
	}
	if len(committed) > 200<<10 {
		t.Errorf("docs/img/e2-collapse.svg is %d bytes, keep it under 200 KB", len(committed))
	}
	args := strings.Fields(strings.TrimPrefix(readmePicture, "go run ./cli "))
	out := filepath.Join(t.TempDir(), "e2-collapse.svg")
	for i, a := range args {
		if a == "docs/img/e2-collapse.svg" {
			args[i] = out
		}
	}
	if msg, err := txlab(t, append(args, "--no-progress")...); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	drawn, _ := os.ReadFile(out)
	if !bytes.Equal(drawn, committed) {
		t.Errorf("docs/img/e2-collapse.svg is not what the README's command draws now: run `%s` from the top directory and commit the picture", readmePicture)
	}
}

// TestPlotStdin: - reads the report from stdin.
func TestPlotStdin(t *testing.T) {
	dir := t.TempDir()
	rep, err := txlab(t, append(append([]string(nil), quick...), "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in, want string
		ok       bool
	}{{rep, "plot: wrote 7 figures", true}, {rep[:100], "stdin: not a txlab report: invalid JSON", false}} {
		app := newApp()
		var out bytes.Buffer
		app.Reader, app.Writer, app.ErrWriter = strings.NewReader(c.in), &out, &out
		err := app.Run([]string{"txlab", "plot", "-", "-o", filepath.Join(dir, "p")})
		msg := out.String()
		if err != nil {
			msg += errorLine(err)
		}
		if (err == nil) != c.ok || !strings.Contains(msg, c.want) {
			t.Errorf("stdin: %v %q, want %q", err, out.String(), c.want)
		}
	}
}
