package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
)

// needs lists the qdisc kinds each shipped script uses that are plugins
// still being written; a script's CI checks skip only while one of them
// is not registered. Every shipped script must be listed.
var needs = map[string][]string{
	"hello":     nil,
	"headline":  {"fq", "cake"},
	"fastpath":  nil,
	"phases":    nil,
	"e1":        {"fq"},
	"e2":        {"cake", "fq_codel", "sfq"},
	"e2b":       {"cake"},
	"e2n":       {"cake"},
	"htb":       {"htb", "prio", "fq_codel", "ets", "hfsc"},
	"l4s":       {"dualpi2"},
	"tsn":       {"taprio", "etf", "cbs"},
	"police":    {"tbf", "htb"},
	"ifb":       {"htb", "fq_codel", "cake", "tbf"},
	"shaper":    {"tbf", "fq_codel", "cake"},
	"wan":       {"netem", "tbf", "fq_codel"},
	"e4":        {"htb", "fq"},
	"tcp_nup":   {"fq_codel"},
	"tcp_ndown": {"fq_codel"},
	"rrul":      {"fq_codel"},
	"e5":        {"cake"},
}

// flent holds the TCP scripts, whose --quick runs simulate seconds (a
// 20 ms RTT needs that for TCP to get going; e5 a quarter of one): the
// flent-like ones run one variant each (flent's tests compare nothing),
// shaper and wan compare three.
var flent = map[string]bool{"tcp_nup": true, "tcp_ndown": true, "rrul": true, "e5": true, "shaper": true, "wan": true}

func skipUnlessRegistered(t *testing.T, name string) {
	t.Helper()
	kinds := map[string]bool{}
	for _, k := range qdisc.Kinds() {
		kinds[k] = true
	}
	var missing []string
	for _, k := range needs[name] {
		if !kinds[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Skipf("scripts/%s.tengo needs qdisc %s, not registered yet (plugins/%s being written)", name,
			strings.Join(missing, ", "), strings.Join(missing, ", plugins/"))
	}
}

// txlabSplit is txlab with stderr (txlab.log, hook logs) kept apart.
func txlabSplit(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.Run(append([]string{"txlab"}, args...))
	return out.String(), errOut.String(), err
}

func TestShippedScriptsListed(t *testing.T) {
	out, err := txlab(t, "scripts")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../scripts/*.tengo")
	if len(files) < 6 {
		t.Fatalf("only %d scripts in scripts/", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".tengo")
		if _, ok := needs[name]; !ok {
			t.Errorf("scripts/%s.tengo is not in the needs table of cli/script_test.go", name)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+" ") {
				line = l
			}
		}
		if len(strings.Fields(line)) < 4 {
			t.Errorf("txlab scripts: no description for %s in\n%s", name, out)
		}
	}
}

// TestShippedScriptsCheck is `txlab check` on every shipped script.
func TestShippedScriptsCheck(t *testing.T) {
	for name := range needs {
		t.Run(name, func(t *testing.T) {
			skipUnlessRegistered(t, name)
			out, err := txlab(t, "check", "../scripts/"+name+".tengo")
			if err != nil {
				t.Fatalf("txlab check: %v\n%s", err, out)
			}
			if !strings.Contains(out, ": ok (") {
				t.Errorf("check output %q", out)
			}
		})
	}
}

// TestShippedScriptsQuick runs every shipped script scaled down.
func TestShippedScriptsQuick(t *testing.T) {
	for name := range needs {
		t.Run(name, func(t *testing.T) {
			skipUnlessRegistered(t, name)
			out, stderr, err := txlabSplit(t, "run", "../scripts/"+name+".tengo", "--quick", "--no-progress", "--format", "json")
			if err != nil {
				t.Fatalf("txlab run --quick: %v\n%s", err, out)
			}
			if name == "phases" && !strings.Contains(stderr, "scripts/phases.tengo: [500us] run 1: tx ") {
				t.Errorf("phases: the hook's log is missing from stderr:\n%s", stderr)
			}
			var reps []map[string]any
			var list struct{ Variants []map[string]any }
			if json.Unmarshal([]byte(out), &list) == nil && len(list.Variants) > 0 {
				reps = list.Variants
			} else {
				var one map[string]any
				if err := json.Unmarshal([]byte(out), &one); err != nil {
					t.Fatalf("not JSON: %v", err)
				}
				reps = []map[string]any{one}
			}
			if len(reps) < 2 && !flent[name] {
				t.Errorf("%d variants, want a comparison", len(reps))
			}
			for _, r := range reps {
				if r["tx_packets"].(float64) == 0 {
					t.Errorf("variant %v: nothing transmitted", r["name"])
				}
				// --quick scales the script down (its speed is the
				// benchmarks' business, not a test's). A root qdisc over
				// many TX queues needs a 30 ms warmup for BQL to learn its
				// limits (E2, E2b), so a quick run may take 40 ms.
				if d, _ := r["duration_ns"].(float64); d <= 0 || d > 40e6 && !(flent[name] && d <= 3e9) {
					t.Errorf("variant %v: --quick simulated %v ns, want at most 40 ms", r["name"], d)
				}
			}
		})
	}
}

func TestRunByShippedName(t *testing.T) {
	out, err := txlab(t, "check", "hello")
	if err != nil || !strings.Contains(out, "scripts/hello.tengo: ok (2 variants: 6.18, 6.19-rc1)") {
		t.Errorf("check hello: %v %q", err, out)
	}
	_, err = txlab(t, "check", "nosuch")
	if err == nil || !strings.Contains(err.Error(), `no script "nosuch"`) || !strings.Contains(err.Error(), "hello") {
		t.Errorf("error %v", err)
	}
}

func writeScript(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.tengo")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func stripWall(t *testing.T, s string) []byte {
	t.Helper()
	return stripKeys(t, s, "sim_wall_ns")
}

// stripRun is stripWall for a script's run compared with flags': the
// script's report also names it (script).
func stripRun(t *testing.T, s string) []byte {
	t.Helper()
	return stripKeys(t, s, "sim_wall_ns", "script")
}

func stripKeys(t *testing.T, s string, keys ...string) []byte {
	t.Helper()
	var m any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range keys {
				delete(x, k)
			}
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(m)
	b, _ := json.MarshalIndent(m, "", "  ")
	return b
}

// TestScriptEqualsFlags: a script and the equivalent flags give
// byte-identical JSON (wall time aside), one run and with variants.
func TestScriptEqualsFlags(t *testing.T) {
	src := `txlab := import("txlab")
txlab.host({sockets: 1, cores: 8, smt: 1})
txlab.device({driver: "ice", queues: 4, rate: "25Gbit"})
txlab.qdisc({kind: "mq", child: {kind: "pfifo", limit: 500}})
txlab.senders({kind: "udp_stream", count: 8, size: 200})
txlab.profile("6.18")
txlab.set({bulk_quota: false})
txlab.cost("doorbell", 200)
txlab.duration("3ms")
txlab.warmup("1ms")
txlab.seed(5)
`
	flags := []string{"run", "--sockets", "1", "--cores", "8", "--smt", "1", "--queues", "4", "--rate", "25Gbit",
		"--qdisc", "mq pfifo limit 500", "--senders", "8", "--size", "200", "--profile", "6.18",
		"--set", "bulk_quota=off", "--set", "cost.doorbell=200", "--duration", "3ms", "--warmup", "1ms", "--seed", "5",
		"--no-progress", "--format", "json"}
	path := writeScript(t, src)
	a, err := txlab(t, "run", path, "--no-progress", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := txlab(t, flags...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripRun(t, a), stripRun(t, b)) {
		t.Errorf("script and flags differ:\n%s\n---\n%s", a, b)
	}

	// Variants: txlab.compare == --compare.
	path2 := writeScript(t, src+"txlab.compare(\"profile\", [\"6.18\", \"net-next\"])\n")
	a, err = txlab(t, "run", path2, "--no-progress", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	b, err = txlab(t, append(flags, "--compare", "profile=6.18,net-next")...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripRun(t, a), stripRun(t, b)) {
		t.Error("script variants and --compare differ")
	}

	// udp_rate through the script and the flags.
	path3 := writeScript(t, strings.Replace(src, `txlab.senders({kind: "udp_stream", count: 8, size: 200})`, `txlab.senders({kind: "udp_rate", count: 4, size: 200, flows: 8, rate: "2M"})`, 1))
	a, err = txlab(t, "run", path3, "--no-progress", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	b, err = txlab(t, append(flags, "--workload", "udp_rate", "--senders", "4", "--flows", "8", "--offered-rate", "2M")...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripRun(t, a), stripRun(t, b)) {
		t.Error("udp_rate: script and flags differ")
	}

	// forward through the script and the flags.
	path4 := writeScript(t, strings.Replace(src, `txlab.senders({kind: "udp_stream", count: 8, size: 200})`, `txlab.senders({kind: "forward", flows: 8, rate: "20M", size: 22, arrival: "poisson"})`, 1)+
		"txlab.device({driver: \"ice\", queues: 4, rate: \"25Gbit\", rx_queues: 2, rx_port: \"other\"})\n")
	a, err = txlab(t, "run", path4, "--no-progress", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	b, err = txlab(t, append(withoutFlag(flags, "--senders"), "--workload", "forward", "--flows", "8", "--offered-rate", "20M", "--size", "22",
		"--arrival", "poisson", "--rx-queues", "2", "--rx-port", "other")...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripRun(t, a), stripRun(t, b)) {
		t.Error("forward: script and flags differ")
	}
	if !strings.Contains(a, `"RX_MISSED"`) || !strings.Contains(a, `"rx_port": "other"`) {
		t.Error("forward at 20M into 2 RX queues: no RX drops or not from the other port")
	}
}

// TestFlagsOverrideScript: flags set explicitly (before or after the
// script) win; flags left at their defaults do not touch the script.
func TestFlagsOverrideScript(t *testing.T) {
	src := `txlab := import("txlab")
txlab.host({sockets: 1, cores: 8, smt: 1})
txlab.device({driver: "ice", queues: 4})
txlab.senders({kind: "udp_stream", count: 8})
txlab.duration("2ms")
txlab.warmup("500us")
txlab.seed(3)
txlab.set("bql", false)
`
	path := writeScript(t, src)
	out, err := txlab(t, "run", "--seed", "9", path, "--senders", "4", "--set", "fast_path=on", "--no-progress", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Seed   uint64
		Setup  struct{ Senders, Queues, CPUs int }
		Config map[string]string
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Seed != 9 || r.Setup.Senders != 4 || r.Setup.Queues != 4 || r.Setup.CPUs != 8 || r.Config["bql"] != "off" || r.Config["fast_path"] != "on" {
		t.Errorf("got seed %d senders %d queues %d cpus %d bql %s fast_path %s", r.Seed, r.Setup.Senders, r.Setup.Queues,
			r.Setup.CPUs, r.Config["bql"], r.Config["fast_path"])
	}
}

func TestScriptCLIErrors(t *testing.T) {
	for _, tt := range []struct {
		src  string
		args []string
		want string
	}{
		{"x := (\n", nil, "s.tengo:1:8: syntax error: expected operand"},
		{"txlab := import(\"txlab\")\ntxlab.qdisc(\"fifo\")\n", nil, "s.tengo:2:1: txlab.qdisc: unknown qdisc \"fifo\""},
		{"os := import(\"os\")\n", nil, "s.tengo:1:7: import \"os\" refused"},
		{"for {}\n", []string{"--script-timeout", "100ms"}, "s.tengo:1:1: stopped after 100ms of wall time"},
		{"a := []\nfor { a = append(a, 1) }\n", []string{"--max-allocs", "500"}, "s.tengo:2:11: allocation limit exceeded (500 objects)"},
		{"txlab := import(\"txlab\")\n", []string{"--param", "x=1"}, "unknown parameter \"x\""},
		{"txlab := import(\"txlab\")\ntxlab.device({driver: \"veth\", queues: 1, opts: \"tx 5\"})\n", nil, "veth: unknown option \"tx\""},
		{"txlab := import(\"txlab\")\ntxlab.duration(\"1ms\")\ntxlab.warmup(0)\ntxlab.at(\"2ms\", {log: \"x\"})\n", nil,
			"s.tengo:4:1: at 2ms {log: x}: its time 2ms is not before the end of the run (duration 1ms): it would never run"},
		{"txlab := import(\"txlab\")\nfor i := 0; i < 1025; i++ { txlab.variant(\"v\" + string(i), {seed: i + 1}) }\n", nil,
			"s.tengo:2:29: txlab.variant: variant v1024 would be variant 1025, at most 1024"},
		{"txlab := import(\"txlab\")\ntxlab.senders([{count: 5000}, {kind: \"udp_rate\", count: 5000}])\n", nil,
			"s.tengo:2:1: txlab.senders: 10000 sender threads in 2 groups, at most 8192 in all"},
	} {
		path := writeScript(t, tt.src)
		for _, cmd := range []string{"check", "run"} {
			args := append([]string{cmd, path}, tt.args...)
			if cmd == "run" {
				args = append(args, "--duration", "1ms", "--warmup", "0", "--no-progress")
			}
			_, err := txlab(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s %q: error %v, want %q", cmd, tt.src, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error is not one line: %q", cmd, err)
			}
		}
	}
}

// An endless file (a device) is refused before it is read; a regular
// one is read up to the script bound (script.ReadFile), not to the end.
func TestCheckEndlessFile(t *testing.T) {
	_, err := txlab(t, "check", "/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: a device, not a script file") {
		t.Errorf("check /dev/zero: %v", err)
	}
}

// The README's first command says what to look at: the llist moves more
// than the busylock through mq fq (the seed: 41 -> 57 Mpps, 1.39x), and
// a root cake collapses under it (630 -> 10 Kpps; in the script's 6 ms a
// fall of 4x and more, the rest coming over seconds as BLUE's p climbs).
// The script must show both, and tell the reader so on stderr.
func TestHeadline(t *testing.T) {
	skipUnlessRegistered(t, "headline")
	out, stderr, err := txlabSplit(t, "run", "headline", "--quick", "--no-progress", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "look at tx Mpps") {
		t.Errorf("no line saying what to look at:\n%s", stderr)
	}
	var list struct {
		Variants []struct {
			Name  string
			TxPps float64 `json:"tx_pps"`
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	pps := map[string]float64{}
	for _, v := range list.Variants {
		pps[v.Name] = v.TxPps
	}
	if a, b := pps["mq fq 6.18"], pps["mq fq 6.19-rc1"]; !(b > 1.2*a) {
		t.Errorf("mq fq: busylock %.0f pps, llist %.0f: the llist should move clearly more", a, b)
	}
	if a, b := pps["cake 6.18"], pps["cake 6.19-rc1"]; !(a > 100e3 && b < a/4) {
		t.Errorf("cake: busylock %.0f pps, llist %.0f: cake should collapse under the llist", a, b)
	}
}

// A --param value keeps its commas (a CPU list), where urfave's slice
// flags would split it, and each --param is one name=value.
func TestParamKeepsCommas(t *testing.T) {
	path := writeScript(t, "txlab := import(\"txlab\")\np := txlab.param(\"placement\", \"unpinned\")\nif p != \"unpinned:0-3,8-11\" { txlab.qdisc(\"got \" + p) }\n")
	if _, err := txlab(t, "check", path, "--param", "placement=unpinned:0-3,8-11"); err != nil {
		t.Errorf("check with a comma in --param: %v", err)
	}
	if _, err := txlab(t, "check", path, "--param", "placement=unpinned:0-3,8-11", "--param", "bogus"); err == nil || !strings.Contains(err.Error(), `--param "bogus": want name=value`) {
		t.Errorf("a --param without =: %v", err)
	}
}
