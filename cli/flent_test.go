package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

// The data file read by the real flent (Debian's flent package; CI
// installs it): `flent -i FILE -p totals -o out.png` succeeds and draws
// a PNG, once per variant and with both files in one plot, and flent's
// summary of "UDP upload" is the mean of the report's intervals.
func TestFlentReadByFlent(t *testing.T) {
	if _, err := exec.LookPath("flent"); err != nil {
		t.Skip("flent is not installed (apt-get install flent)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "run.flent.gz")
	jsonOut := filepath.Join(dir, "r.json")
	out, err := txlab(t, append(quick, "--compare", "profile=6.18,6.19-rc1", "--flent", file, "--format", "json", "-o", jsonOut)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	files := []string{filepath.Join(dir, "run-6.18.flent.gz"), filepath.Join(dir, "run-6.19-rc1.flent.gz")}
	for _, f := range files {
		if !strings.Contains(out, "txlab: flent: "+f+": test udp_flood") {
			t.Errorf("no line for %s in:\n%s", f, out)
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Variants []report.Report }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	reps := list.Variants
	flentRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("flent", args...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "MPLCONFIGDIR="+dir) // matplotlib's cache
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flent %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return string(o)
	}
	pngOK := func(p string) {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s: %d bytes, not a PNG plot", p, len(b))
		}
	}
	mean := regexp.MustCompile(`UDP upload\s*:\s*([0-9.]+)\s`)
	for i, f := range files {
		png := filepath.Join(dir, strconv.Itoa(i)+".png")
		flentRun("-i", f, "-p", "totals", "-o", png)
		pngOK(png)
		m := mean.FindStringSubmatch(flentRun("-i", f, "-f", "summary"))
		if m == nil {
			t.Fatalf("no UDP upload in flent's summary of %s", f)
		}
		got, _ := strconv.ParseFloat(m[1], 64)
		r := reps[i]
		sum := 0.0
		for _, iv := range r.Series {
			sum += float64(iv.TxBytes) * 8 / (float64(iv.EndNs-iv.StartNs) / 1e9) / 1e6
		}
		if want := sum / float64(len(r.Series)); want == 0 || got < want-0.01 || got > want+0.01 {
			t.Errorf("%s: flent's mean UDP upload %v Mbit/s, the report's %v", f, got, want)
		}
	}
	both := filepath.Join(dir, "both.png")
	flentRun("-i", files[0], "-i", files[1], "-p", "totals", "-o", both)
	pngOK(both)
}

// --flent's bad input: a name flent would not read, a directory that is
// not there (before anything runs), a file that exists is replaced only
// by a complete one.
func TestFlentErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--flent", filepath.Join(dir, "x.json")}, "--flent " + filepath.Join(dir, "x.json") + ": the name must end in .flent.gz (flent reads the data file by its suffix)"},
		{[]string{"--flent", filepath.Join(dir, "none", "x.flent.gz")}, "--flent: " + filepath.Join(dir, "none", "x.flent.gz") + ": cannot create a file in " + filepath.Join(dir, "none") + ": no such file or directory"},
		{[]string{"--flent", filepath.Join(dir, "x.flent.gz"), writeScript(t, `txlab := import("txlab")
txlab.variants([{name: "x y", profile: "6.18"}, {name: "x_y", profile: "6.18"}])
`)}, `--flent: variants "x y" and "x_y" would both write ` + filepath.Join(dir, "x-x_y.flent.gz")},
	} {
		out, err := txlab(t, append(quick, c.args...)...)
		if err == nil || errorLine(err) != c.want {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
		if strings.Contains(out, "pps") {
			t.Errorf("%v: ran before refusing:\n%s", c.args, out)
		}
	}
}

// A tcp_nup run as flent's tcp_nup: flent plots its totals, and its
// summary of "TCP upload sum" is the mean over the window of the
// report's flows' goodput.
func TestFlentTCPNup(t *testing.T) {
	if _, err := exec.LookPath("flent"); err != nil {
		t.Skip("flent is not installed (apt-get install flent)")
	}
	dir := t.TempDir()
	file, jsonOut := filepath.Join(dir, "nup.flent.gz"), filepath.Join(dir, "r.json")
	if out, err := txlab(t, "run", "tcp_nup", "--quick", "--no-progress", "--flent", file, "--format", "json", "-o", jsonOut); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil || r.TCP == nil {
		t.Fatalf("report: %v", err)
	}
	png := filepath.Join(dir, "nup.png")
	cmd := exec.Command("flent", "-i", file, "-p", "totals", "-o", png)
	cmd.Env = append(os.Environ(), "HOME="+dir, "MPLCONFIGDIR="+dir)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flent: %v\n%s", err, o)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Fatalf("%s: %v", png, err)
	}
	cmd = exec.Command("flent", "-i", file, "-f", "summary")
	cmd.Env = append(os.Environ(), "HOME="+dir, "MPLCONFIGDIR="+dir)
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flent summary: %v\n%s", err, o)
	}
	m := regexp.MustCompile(`TCP upload sum\s*:\s*([0-9.]+)\s`).FindSubmatch(o)
	if m == nil {
		t.Fatalf("no TCP upload sum in:\n%s", o)
	}
	got, _ := strconv.ParseFloat(string(m[1]), 64)
	// A flow's series is laid on the report's last intervals (it can
	// hold one value more than there are intervals: that first one is
	// left out).
	n := min(len(r.Series), len(r.TCP.Flows[0].SeriesBps))
	sum := 0.0
	for _, f := range r.TCP.Flows {
		for _, v := range f.SeriesBps[len(f.SeriesBps)-n:] {
			sum += v / 1e6
		}
	}
	if want := sum / float64(n); want == 0 || got < want-0.01 || got > want+0.01 {
		t.Errorf("flent's mean TCP upload sum %v Mbit/s, the report's %v", got, want)
	}
	// "Ping (ms) ICMP": flent's mean is the ping probe's series_ms's.
	m = regexp.MustCompile(`Ping \(ms\) ICMP\s*:\s*([0-9.]+)\s`).FindSubmatch(o)
	if m == nil || r.Latency == nil {
		t.Fatalf("no Ping (ms) ICMP in:\n%s", o)
	}
	got, _ = strconv.ParseFloat(string(m[1]), 64)
	sum, n = 0, 0
	for _, p := range r.Latency.Probes {
		if p.Kind == "ping" {
			for _, v := range p.Series {
				if v != nil {
					sum += *v
					n++
				}
			}
			break
		}
	}
	if want := sum / float64(n); n == 0 || got < want-0.01 || got > want+0.01 {
		t.Errorf("flent's mean Ping (ms) ICMP %v ms, the report's %v", got, want)
	}
}

// A run of scripts/rrul.tengo as flent's rrul: flent draws its totals
// and ping plots, and its summary's "TCP totals" is the mean over the
// window of every flow's goodput, its ICMP and UDP pings the probes'.
func TestFlentRRUL(t *testing.T) {
	if _, err := exec.LookPath("flent"); err != nil {
		t.Skip("flent is not installed (apt-get install flent)")
	}
	dir := t.TempDir()
	file, jsonOut := filepath.Join(dir, "rrul.flent.gz"), filepath.Join(dir, "r.json")
	out, err := txlab(t, "run", "rrul", "--quick", "--no-progress", "--flent", file, "--format", "json", "-o", jsonOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "test rrul") {
		t.Errorf("output names no rrul test:\n%s", out)
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil || r.TCP == nil || r.Latency == nil {
		t.Fatalf("report: %v", err)
	}
	flent := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("flent", args...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "MPLCONFIGDIR="+dir)
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flent %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return o
	}
	for _, plot := range []string{"totals", "ping", "all_scaled"} {
		png := filepath.Join(dir, plot+".png")
		flent("-i", file, "-p", plot, "-o", png)
		if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
			t.Fatalf("%s: %v", png, err)
		}
	}
	o := flent("-i", file, "-f", "summary")
	mean := func(name string) float64 {
		m := regexp.MustCompile(regexp.QuoteMeta(name) + `\s*:\s*([0-9.]+)\s`).FindSubmatch(o)
		if m == nil {
			t.Fatalf("no %s in:\n%s", name, o)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	near := func(name string, got, want float64) {
		if want == 0 || got < want-0.01 || got > want+0.01 {
			t.Errorf("flent's mean %s %v, the report's %v", name, got, want)
		}
	}
	n := min(len(r.Series), len(r.TCP.Flows[0].SeriesBps))
	sum := 0.0
	for _, f := range r.TCP.Flows {
		for _, v := range f.SeriesBps[len(f.SeriesBps)-n:] {
			sum += v / 1e6
		}
	}
	near("TCP totals", mean("TCP totals"), sum/float64(n))
	for _, c := range []struct {
		name, kind string
		dscp       uint8
	}{{"Ping (ms) ICMP", "ping", 0}, {"Ping (ms) UDP BE", "udp_rr", 0}, {"Ping (ms) UDP BK", "udp_rr", 8}, {"Ping (ms) UDP EF", "udp_rr", 46}} {
		s, k := 0.0, 0
		for _, p := range r.Latency.Probes {
			if p.Kind == c.kind && p.DSCP == c.dscp {
				for _, v := range p.Series {
					if v != nil {
						s += *v
						k++
					}
				}
				break
			}
		}
		if k == 0 {
			t.Fatalf("no %s probe marked %d in the report", c.kind, c.dscp)
		}
		near(c.name, mean(c.name), s/float64(k))
	}
}
