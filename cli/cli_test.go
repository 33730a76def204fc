package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/report"
)

// txlab runs the txlab command with args and returns stdout and the error.
func txlab(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	app.ErrWriter = &out
	err := app.Run(append([]string{"txlab"}, args...))
	return out.String(), err
}

var quick = []string{"run", "--sockets", "1", "--cores", "8", "--smt", "1", "--queues", "4", "--senders", "8",
	"--duration", "3ms", "--warmup", "1ms", "--no-progress"}

// withoutFlag is args less the flag name and its value: the forward and
// tcp_stream workloads refuse --senders, which quick gives.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == name {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// quickFor is quick for a command line that ends in extra: without
// --senders when extra picks a workload that has no sender count.
func quickFor(extra []string) []string {
	for i, a := range extra {
		if a == "--workload" && i+1 < len(extra) && (extra[i+1] == "forward" || extra[i+1] == "tcp_stream") {
			return withoutFlag(quick, "--senders")
		}
	}
	return quick
}

func TestRunJSONDeterministic(t *testing.T) {
	a, err := txlab(t, append(quick, "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := txlab(t, append(quick, "--format", "json")...)
	strip := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, s)
		}
		delete(m, "sim_wall_ns")
		return m
	}
	ma, mb := strip(a), strip(b)
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	if !bytes.Equal(ja, jb) {
		t.Fatal("same flags and seed gave different JSON")
	}
	for _, k := range []string{"offered_packets", "tx_packets", "in_flight_packets", "drops", "tx_pps", "tx_bps",
		"cpu_ns_per_packet", "cpu_busy_pct", "duration_ns", "profile", "seed", "locks", "queues", "qdisc", "sim_wall_ns", "events"} {
		var raw map[string]any
		_ = json.Unmarshal([]byte(a), &raw)
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	c, _ := txlab(t, append(quick, "--format", "json", "--seed", "9")...)
	mc := strip(c)
	jc, _ := json.Marshal(mc)
	if bytes.Equal(ja, jc) {
		t.Error("a different seed gave the same JSON")
	}
}

func TestRunTextAndOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	if _, err := txlab(t, append(quick, "-o", path)...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"accounting: offered", "contended   total wait", "@__dev_queue_xmit_ns:", "qdisc mq 8001: dev eth0 root \n", "tx-0.packets"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
}

func TestCompare(t *testing.T) {
	out, err := txlab(t, append(quick, "--compare", "profile=6.18,6.19-rc1")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "6.18") || !strings.Contains(out, "6.19-rc1") || !strings.Contains(out, "B/A") {
		t.Errorf("compare output:\n%s", out)
	}
	out, err = txlab(t, append(quick, "--compare", "fast_path=off,on", "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Variants []map[string]any }
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Variants) != 2 {
		t.Fatalf("variants JSON: %v, %d", err, len(v.Variants))
	}
}

// Several --compare keys run their cartesian product, in order, each
// variant with its values set; a script's variants are multiplied too.
func TestCompareProduct(t *testing.T) {
	variants := func(args ...string) []map[string]any {
		t.Helper()
		out, err := txlab(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Variants []map[string]any }
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		return v.Variants
	}
	vs := variants(append(quick, "--duration", "2ms", "--compare", "profile=6.18,net-next", "--compare", "bql=on,off", "--format", "json")...)
	want := []struct{ name, profile, bql string }{{"6.18 bql=on", "6.18", "on"}, {"6.18 bql=off", "6.18", "off"}, {"net-next bql=on", "net-next", "on"}, {"net-next bql=off", "net-next", "off"}}
	if len(vs) != len(want) {
		t.Fatalf("%d variants, want %d", len(vs), len(want))
	}
	for i, w := range want {
		cfg := vs[i]["config"].(map[string]any)
		if vs[i]["name"] != w.name || vs[i]["profile"] != w.profile || cfg["bql"] != w.bql {
			t.Errorf("variant %d: name %v profile %v bql %v, want %+v", i, vs[i]["name"], vs[i]["profile"], cfg["bql"], w)
		}
	}
	script := writeScript(t, "txlab := import(\"txlab\")\ntxlab.host({sockets: 1, cores: 4, smt: 1})\ntxlab.device({queues: 2})\ntxlab.senders({count: 4})\ntxlab.compare(\"profile\", [\"6.18\", \"6.19-rc1\"])\n")
	vs = variants("run", script, "--duration", "2ms", "--warmup", "1ms", "--no-progress", "--compare", "fast_path=off,on", "--format", "json")
	var names []string
	for _, v := range vs {
		names = append(names, v["name"].(string))
	}
	if got := strings.Join(names, "|"); got != "6.18 fast_path=off|6.18 fast_path=on|6.19-rc1 fast_path=off|6.19-rc1 fast_path=on" {
		t.Errorf("script x --compare: %s", got)
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--qdisc", "fifo"}, `unknown qdisc "fifo"`},
		{[]string{"--qdisc", "pfifo limt 5"}, `unknown parameter "limt"`},
		{[]string{"--rate", "-10G"}, "negative"},
		{[]string{"--profile", "4.19"}, `unknown profile "4.19"`},
		{[]string{"--set", "cost.line_remote=-1"}, "must be >= 0"},
		{[]string{"--set", "nope=1"}, `unknown toggle "nope"`},
		{[]string{"--format", "yaml"}, "text or json"},
		{[]string{"--driver", "e1000e"}, `unknown driver "e1000e"`},
		{[]string{"--compare", "profile"}, "key=v1,v2"},
		{[]string{"--cpus", "7", "--smt", "2"}, "--cpus was removed: give --sockets, --cores and --smt"},
	}
	for _, c := range cases {
		_, err := txlab(t, append(append([]string(nil), quick...), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error is not one line: %q", c.args, err)
		}
	}
}

func TestVersionAndList(t *testing.T) {
	out, err := txlab(t, "version")
	if err != nil || !strings.HasPrefix(out, "txlab ") {
		t.Errorf("version: %q %v", out, err)
	}
	out, err = txlab(t, "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6.19-rc1", "fast_path", "cost.line_remote", "pfifo_fast", "ice", "veth"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q", want)
		}
	}
}

// What txlab list and run --help give as a knob's default is what a run
// without the flag uses: the report's setup echoes the defaults, and
// each driver alone runs at the line rate its help names.
func TestListedDefaultsUsed(t *testing.T) {
	list, err := txlab(t, "list")
	if err != nil {
		t.Fatal(err)
	}
	help, err := txlab(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	listed := func(flag string) string {
		m := regexp.MustCompile(`(?m)^  --` + flag + `\s+\S+\s+(\S+(?: \S+)?)  `).FindStringSubmatch(list)
		if m == nil {
			t.Fatalf("txlab list has no --%s line", flag)
		}
		if !strings.Contains(help, "(default: "+m[1]+")") {
			t.Errorf("run --help does not give --%s's default %s", flag, m[1])
		}
		return m[1]
	}
	small := []string{"run", "--sockets", "1", "--cores", "4", "--smt", "1", "--queues", "2", "--senders", "4", "--duration", "2ms", "--warmup", "1ms", "--no-progress", "--format", "json"}
	for _, drv := range []struct{ name, rate string }{{"", "100G"}, {"i40e", "25G"}, {"idpf", "200G"}} {
		args := small
		if drv.name != "" {
			args = append(append([]string(nil), small...), "--driver", drv.name)
		}
		out, err := txlab(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if drv.name == "" {
			for flag, got := range map[string]string{"profile": r.Profile, "driver": r.Setup.Driver, "workload": r.Setup.Workload,
				"size": strconv.Itoa(r.Setup.PacketSize), "xps": "irq"} {
				if want := listed(flag); want != got {
					t.Errorf("--%s: listed default %s, a run uses %s", flag, want, got)
				}
			}
			if q := listed("qdisc"); q != r.Setup.Qdisc {
				t.Errorf("--qdisc: listed %s, a run uses %s", q, r.Setup.Qdisc)
			}
			if listed("rate") != "0" {
				t.Errorf("--rate: the listed default is not the driver's line rate (0)")
			}
			drv.name = r.Setup.Driver
		}
		line := regexp.MustCompile(`(?m)^  ` + drv.name + `\s+(.*)$`).FindStringSubmatch(list[strings.Index(list, "DRIVERS"):])
		if line == nil || !strings.Contains(line[1], drv.rate) {
			t.Errorf("txlab list's %s line does not name %s: %v", drv.name, drv.rate, line)
		}
		if want := map[string]int64{"100G": 100e9, "25G": 25e9, "200G": 200e9}[drv.rate]; r.Setup.RateBps != want {
			t.Errorf("--driver %s alone runs at %d bit/s, want its line rate %s", drv.name, r.Setup.RateBps, drv.rate)
		}
	}
	// The default warmup above a short duration says how to fix it.
	if _, err := txlab(t, "run", "--duration", "2ms", "--no-progress"); err == nil || err.Error() != "warmup 5ms must be shorter than duration 2ms (set --warmup, or warmup in the script, below it)" {
		t.Errorf("--duration 2ms alone: %v", err)
	}
}

// A backquoted word in a flag's usage is urfave/cli's placeholder for
// the flag's value in --help ("--pcap FILE"): one word, and only on a
// flag that takes a value. Prose in backquotes there printed help such
// as "--no-wait txlab sweep collect DIR".
func TestFlagPlaceholders(t *testing.T) {
	var walk func(path string, cmds []*cli.Command, flags []cli.Flag)
	check := func(path string, flags []cli.Flag) {
		for _, f := range flags {
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			u := df.GetUsage()
			i := strings.IndexByte(u, '`')
			if i < 0 {
				continue
			}
			j := strings.IndexByte(u[i+1:], '`')
			name := f.Names()[0]
			switch {
			case j < 0:
				t.Errorf("%s --%s: an unclosed backquote in its usage", path, name)
			case !df.TakesValue():
				t.Errorf("%s --%s takes no value but its usage has the placeholder %q", path, name, u[i+1:i+1+j])
			case strings.ContainsAny(u[i+1:i+1+j], " \t"):
				t.Errorf("%s --%s: placeholder %q is not one word", path, name, u[i+1:i+1+j])
			}
		}
	}
	walk = func(path string, cmds []*cli.Command, flags []cli.Flag) {
		check(path, flags)
		for _, c := range cmds {
			walk(path+" "+c.Name, c.Subcommands, c.Flags)
		}
	}
	app := newApp()
	walk(app.Name, app.Commands, app.Flags)
}
