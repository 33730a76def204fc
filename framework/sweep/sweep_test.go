package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	_ "github.com/txlab/txlab/framework/internal/builtintest" // the built-in qdiscs and drivers
	"github.com/txlab/txlab/framework/run"
)

// small are flags for a host that runs in milliseconds.
var small = map[string]string{"sockets": "1", "cores": "8", "smt": "1", "queues": "4", "duration": "2ms", "warmup": "500us"}

func TestParseAxis(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want Axis
		err  string
	}{
		{"senders=16,64,240", Axis{"senders", []string{"16", "64", "240"}}, ""},
		{" profile = 6.18 , net-next ", Axis{"profile", []string{"6.18", "net-next"}}, ""},
		{"qdisc=mq fq_codel,pfifo limit 100", Axis{"qdisc", []string{"mq fq_codel", "pfifo limit 100"}}, ""},
		{"senders", Axis{}, `want key=v1,v2`},
		{"=1,2", Axis{}, `want key=v1,v2`},
		{"senders=", Axis{}, "no values"},
		{"senders=1,,2", Axis{}, "an empty value"},
		{"senders=1,2,1", Axis{}, `value "1" given twice`},
	} {
		got, err := ParseAxis(tc.arg)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAxis(%q) = %v, want an error with %q", tc.arg, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseAxis(%q) = %+v, %v; want %+v", tc.arg, got, err, tc.want)
		}
	}
}

func TestPointsCartesian(t *testing.T) {
	grid := []Axis{{"a", []string{"1", "2"}}, {"b", []string{"x", "y", "z"}}}
	var got []string
	for i, p := range Points(grid) {
		if p.Index != i {
			t.Fatalf("point %d has index %d", i, p.Index)
		}
		got = append(got, label(grid, p))
	}
	want := []string{"a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("points %q, want %q", got, want)
	}
}

func TestCheckGrid(t *testing.T) {
	for _, tc := range []struct {
		grid []Axis
		err  string
	}{
		{nil, "no --grid given"},
		{[]Axis{{"a", []string{"1"}}, {"a", []string{"2"}}}, "--grid a given twice"},
		{[]Axis{{"a", nil}}, "no values"},
		{[]Axis{{"a", make([]string, 1000)}, {"b", make([]string, 1000)}}, "more than 100000 points"},
		{[]Axis{{"a", []string{"1"}}}, ""},
	} {
		err := CheckGrid(tc.grid)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckGrid(%v) = %v, want %q", tc.grid, err, tc.err)
		}
	}
}

func TestArraySpec(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{[]int{0, 1, 2, 3}, "0-3"}, {[]int{2}, "2"}, {[]int{1, 3, 4, 5, 9}, "1,3-5,9"}, {[]int{0, 2}, "0,2"}} {
		if got := ArraySpec(tc.in); got != tc.want {
			t.Errorf("ArraySpec(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStat(t *testing.T) {
	s := statOf([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if s.Mean != 5 || s.Min != 2 || s.Max != 9 || math.Abs(s.Stddev-2.138089935299395) > 1e-12 {
		t.Errorf("stat %+v: want mean 5, sample stddev 2.138, min 2, max 9", *s)
	}
	if one := statOf([]float64{3}); one.Stddev != 0 || one.Mean != 3 {
		t.Errorf("one seed: %+v", *one)
	}
	if statOf(nil) != nil {
		t.Error("no samples gave a stat")
	}
}

func TestSI(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {999, "999"}, {1234, "1.234K"}, {630000, "630.0K"}, {1137600, "1.138M"}, {12.5, "12.50"}, {2.5e10, "25.00G"}} {
		if got := si(tc.v); got != tc.want {
			t.Errorf("si(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestNewBadInput(t *testing.T) {
	script := Inputs{Script: "t.tengo", Source: `txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.senders({kind: "udp_stream", count: txlab.param("nsend", 4), size: 120})
`}
	for _, tc := range []struct {
		name  string
		in    Inputs
		grid  []Axis
		seeds int
		err   string
	}{
		{"unknown key", Inputs{}, []Axis{{"sendres", []string{"1"}}}, 1, "--grid sendres: no such key (knobs: profile, sockets,"},
		{"unknown key lists params", script, []Axis{{"flow", []string{"1"}}}, 1, "script params: nsend"},
		{"param without script", Inputs{}, []Axis{{"flows2", []string{"1"}}}, 1, "script params: none (no script given)"},
		{"seeds 0", Inputs{}, []Axis{{"senders", []string{"1"}}}, 0, "--seeds 0 is out of range: 1..10000"},
		{"empty grid", Inputs{}, nil, 1, "no --grid given"},
		{"bad knob value", Inputs{}, []Axis{{"senders", []string{"8", "lots"}}}, 1, `--grid senders=lots: "lots" is not a whole number`},
		{"knob out of range", Inputs{}, []Axis{{"queues", []string{"0"}}}, 1, "--grid queues=0: 0 is out of range: 1..4096"},
		{"bad toggle value", Inputs{}, []Axis{{"bql", []string{"maybe"}}}, 1, "--grid bql=maybe:"},
		{"bad cost", Inputs{}, []Axis{{"cost.spin_acquire", []string{"-1"}}}, 1, "--grid cost.spin_acquire=-1:"},
		{"flag and grid", Inputs{Knobs: map[string]string{"senders": "8"}}, []Axis{{"senders", []string{"1"}}}, 1, "--senders and --grid senders both given"},
		{"set and grid", Inputs{Set: []string{"bql=off"}}, []Axis{{"bql", []string{"on"}}}, 1, "--set bql=off and --grid bql both given"},
		{"param and grid", Inputs{Script: script.Script, Source: script.Source, Params: map[string]string{"nsend": "2"}},
			[]Axis{{"nsend", []string{"1"}}}, 1, "--param nsend and --grid nsend both given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("test", tc.in, tc.grid, tc.seeds)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("New: %v; want %q", err, tc.err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
		})
	}
}

func manifest(t *testing.T, grid []Axis, seeds int) *Manifest {
	t.Helper()
	m, err := New("test", Inputs{Knobs: small}, grid, seeds)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runAll(t *testing.T, m *Manifest, dir string, jobs int) *Report {
	t.Helper()
	specs, err := m.Check()
	if err != nil {
		t.Fatal(err)
	}
	var todo []int
	for _, p := range m.Points {
		todo = append(todo, p.Index)
	}
	res, err := m.RunPoints(todo, specs, RunOptions{Dir: dir, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	return m.Merge(res)
}

func jsonOf(t *testing.T, r *Report) []byte {
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The merged report is the same bytes for any -j, and from the points'
// files as from memory (run with -race).
func TestRunPointsJobsIdentical(t *testing.T) {
	grid := []Axis{{"senders", []string{"2", "8"}}, {"profile", []string{"6.18", "net-next"}}, {"qdisc", []string{"mq pfifo", "mq fq_codel"}}}
	m := manifest(t, grid, 2)
	one := jsonOf(t, runAll(t, m, "", 1))
	four := jsonOf(t, runAll(t, m, "", 4))
	if !bytes.Equal(one, four) {
		t.Fatal("-j 4 gave another merged report than -j 1")
	}
	dir := t.TempDir()
	if err := Create(dir, m); err != nil {
		t.Fatal(err)
	}
	runAll(t, m, dir, 3)
	have, missing, err := m.Results(dir)
	if err != nil || len(missing) > 0 {
		t.Fatalf("results: %v, missing %v", err, missing)
	}
	fromDir := m.Merge(have)
	for i := range fromDir.Rows {
		if len(fromDir.Rows[i].Reports) != 2 {
			t.Fatalf("row %d lists reports %v, want one per seed", i, fromDir.Rows[i].Reports)
		}
		for _, r := range fromDir.Rows[i].Reports {
			if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
				t.Fatal(err)
			}
		}
		fromDir.Rows[i].Reports = nil
	}
	if !bytes.Equal(jsonOf(t, fromDir), one) {
		t.Fatal("the points' files merge to another report than memory does")
	}
	var r Report
	if err := json.Unmarshal(one, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 8 || r.Rows[5].Values["senders"] != "8" || r.Rows[5].Values["qdisc"] != "mq fq_codel" ||
		r.Rows[5].Values["profile"] != "6.18" || !reflect.DeepEqual(r.Rows[5].Seeds, []uint64{1, 2}) || r.Rows[5].OK != 2 {
		t.Fatalf("row 5: %+v", r.Rows[5])
	}
	for _, row := range r.Rows {
		if row.TxPps == nil || row.TxPps.Mean <= 0 || row.TxPps.Min > row.TxPps.Mean || row.TxPps.Max < row.TxPps.Mean {
			t.Fatalf("row %d: tx_pps %+v", row.Point, row.TxPps)
		}
	}
	// More senders send more.
	if r.Rows[0].TxPps.Mean >= r.Rows[4].TxPps.Mean {
		t.Errorf("2 senders %v pps, 8 senders %v", r.Rows[0].TxPps.Mean, r.Rows[4].TxPps.Mean)
	}
}

// A script's variants are rows of their own, and a --param axis reaches
// the script.
func TestScriptVariantsAndParams(t *testing.T) {
	in := Inputs{Script: "v.tengo", Source: `txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 2})
txlab.senders({kind: "udp_stream", count: txlab.param("n", 2), size: 120})
txlab.duration("2ms")
txlab.warmup("500us")
txlab.variants([{name: "a", profile: "6.18"}, {name: "b", profile: "net-next"}])
`}
	m, err := New("test", in, []Axis{{"n", []string{"1", "4"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := runAll(t, m, "", 2)
	var got []string
	for _, row := range r.Rows {
		got = append(got, row.Values["n"]+"/"+row.Variant)
	}
	if want := []string{"1/a", "1/b", "4/a", "4/b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if r.Rows[0].TxPps.Mean >= r.Rows[2].TxPps.Mean {
		t.Errorf("n=1 sends %v pps, n=4 %v: the param did not reach the script", r.Rows[0].TxPps.Mean, r.Rows[2].TxPps.Mean)
	}
}

func TestCheckDir(t *testing.T) {
	m := manifest(t, []Axis{{"senders", []string{"2", "4"}}}, 1)
	other := manifest(t, []Axis{{"senders", []string{"2", "8"}}}, 1)
	base := t.TempDir()
	fresh := filepath.Join(base, "new")
	if resume, err := CheckDir(fresh, m); err != nil || resume {
		t.Fatalf("a new dir: %v %v", resume, err)
	}
	if err := Create(fresh, m); err != nil {
		t.Fatal(err)
	}
	if resume, err := CheckDir(fresh, m); err != nil || !resume {
		t.Fatalf("the same sweep: %v %v", resume, err)
	}
	before, _ := os.ReadFile(filepath.Join(fresh, ManifestFile))
	if _, err := CheckDir(fresh, other); err == nil || !strings.Contains(err.Error(), "holds another sweep") {
		t.Fatalf("another sweep: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(fresh, ManifestFile)); !bytes.Equal(before, after) {
		t.Fatal("the other sweep's manifest changed")
	}
	busy := filepath.Join(base, "busy")
	os.MkdirAll(busy, 0o755)
	os.WriteFile(filepath.Join(busy, "x"), nil, 0o644)
	if _, err := CheckDir(busy, m); err == nil || !strings.Contains(err.Error(), "not empty and holds no sweep") {
		t.Fatalf("a busy dir: %v", err)
	}
	file := filepath.Join(base, "x")
	os.WriteFile(file, nil, 0o644)
	if _, err := CheckDir(file, m); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a file: %v", err)
	}
	// Open reads back the same sweep.
	o, err := Open(fresh)
	if err != nil || !bytes.Equal(o.bytes(), m.bytes()) {
		t.Fatalf("Open: %v", err)
	}
}

// Task runs one point into the directory, idempotently; Failures names
// the points without a result with their stderr's last line.
func TestTaskAndFailures(t *testing.T) {
	m := manifest(t, []Axis{{"senders", []string{"2", "4", "6"}}}, 1)
	dir := t.TempDir()
	if err := Create(dir, m); err != nil {
		t.Fatal(err)
	}
	if err := Task(dir, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(PointFile(dir, 1))
	if err := Task(dir, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(PointFile(dir, 1)); !bytes.Equal(first, again) {
		t.Fatal("a second task changed a done point")
	}
	if err := Task(dir, 3, 1, nil); err == nil || !strings.Contains(err.Error(), "no point 3 (the sweep has 0..2)") {
		t.Fatalf("task 3: %v", err)
	}
	os.WriteFile(filepath.Join(dir, LogsDir, "0.err"), []byte("starting\ntxlab: something broke\n"), 0o644)
	_, missing, err := m.Results(dir)
	if err != nil || !reflect.DeepEqual(missing, []int{0, 2}) {
		t.Fatalf("missing %v, %v", missing, err)
	}
	f := m.Failures(dir, missing)
	if len(f) != 2 || f[0] != "point 0 (senders=2) has no result: logs/0.err: txlab: something broke" ||
		!strings.Contains(f[1], "point 2 (senders=6) has no result: no logs/2.err") {
		t.Fatalf("failures %q", f)
	}
	if _, err := ReadPoint(dir, 2); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadPoint of a missing point: %v", err)
	}
}

// A stop before the runs start runs nothing and says so.
func TestRunPointsStop(t *testing.T) {
	m := manifest(t, []Axis{{"senders", []string{"2", "4"}}}, 1)
	specs, err := m.Check()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	res, err := m.RunPoints([]int{0, 1}, specs, RunOptions{Jobs: 2, Stop: stop})
	if !errors.Is(err, run.ErrInterrupted) || len(res) != 0 {
		t.Fatalf("%d results, %v", len(res), err)
	}
}

// --tc-file batches reach every point after the script's own tc, and a
// batch a point's host refuses fails the check, naming its line. An htb
// capping the link gives the same rate whatever the senders.
func TestTCFiles(t *testing.T) {
	tree := run.TCBatch{Name: "cap.tc", Text: "qdisc add dev eth0 root handle 1: htb default 10\n" +
		"class add dev eth0 parent 1: classid 1:10 htb rate 100mbit\n"}
	in := Inputs{Knobs: map[string]string{"sockets": "1", "cores": "4", "smt": "1", "queues": "1", "duration": "6ms", "warmup": "2ms", "size": "1000",
		"qdisc": "pfifo"},
		TC: []run.TCBatch{tree}}
	m, err := New("test", in, []Axis{{"senders", []string{"1", "4"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := m.Specs(m.Points[1])
	if err != nil || len(specs) != 1 || !reflect.DeepEqual(specs[0].TC, in.TC) {
		t.Fatalf("specs %+v, %v", specs, err)
	}
	r := runAll(t, m, "", 2)
	if len(r.Rows) != 2 {
		t.Fatalf("%d rows", len(r.Rows))
	}
	for _, row := range r.Rows {
		t.Logf("senders=%s: %.1f Mbit/s", row.Values["senders"], row.TxBps.Mean/1e6)
		if bps := row.TxBps.Mean; bps < 90e6 || bps > 110e6 {
			t.Errorf("senders=%s: %.1f Mbit/s through a 100mbit htb", row.Values["senders"], bps/1e6)
		}
	}
	in.TC = []run.TCBatch{{Name: "bad.tc", Text: "qdisc add dev eth0 root handle 1: htb\nclass add dev eth0 parent 1: classid 1:10 htb ceil 1gbit\n"}}
	if m, err = New("test", in, []Axis{{"senders", []string{"1", "4"}}}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Check(); err == nil || !strings.Contains(err.Error(), "bad.tc:2:") {
		t.Fatalf("a refused tc line: %v", err)
	}
}
