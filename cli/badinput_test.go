package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/run"
)

// TestBadFlags: each bad command line ends with a one-line error naming
// what is wrong, a non-zero exit code, and no file written: neither the
// report (-o) nor the trace (--trace-out) appear, and an existing report
// is left as it was.
func TestBadFlags(t *testing.T) {
	hello := "../scripts/hello.tengo"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--queues", "-1", "--warmup", "1ms", "--duration", "2ms"}, "--queues: -1 is out of range: 1..4096"},
		{[]string{"--queues", "5000"}, "--queues: 5000 is out of range: 1..4096"},
		{[]string{"--sockets", "4294967296", "--cores", "4294967296"}, "--sockets: 4294967296 is out of range: 1..64"},
		{[]string{"--sockets", "64", "--cores", "4096", "--smt", "8"}, "64 sockets x 4096 cores x 8 threads is 2097152 CPUs, more than the 8192 supported"},
		{[]string{"--senders", "9000"}, "--senders: 9000 is out of range: 1..8192"},
		{[]string{"--senders", "9", "--placement", "spread"}, "9 senders but only 8 CPUs"},
		{[]string{"--placement", "0-3,8"}, "--placement (senders.placement): workload: bad CPU list \"0-3,8\": CPU 8 does not exist (this host has CPUs 0-7)"},
		{[]string{"--placement", "pinned"}, "--placement (senders.placement): workload: bad CPU list \"pinned\""},
		{[]string{"--placement", "unpinned:0-8"}, "--placement (senders.placement): workload: bad CPU list \"0-8\": CPU 8 does not exist (this host has CPUs 0-7)"},
		{[]string{"--placement", "unpinned:"}, "--placement (senders.placement): workload: bad CPU list \"\": \"\" is not a CPU number"},
		{[]string{"--lock-cpus", "0-8"}, "--lock-cpus (lock_cpus): workload: bad CPU list \"0-8\": CPU 8 does not exist"},
		{[]string{"--xps", "numa"}, "--xps (device.xps): unknown XPS map \"numa\" (known: irq, cores, none)"},
		{[]string{"--launch", "-5us"}, "--launch: "},
		{[]string{"--launch", "1ms"}, "--launch (senders.launch): the last of"},
		{[]string{"--set", "sndbuf=0"}, "toggle sndbuf: 0 is out of range: 4608..2147483647"},
		{[]string{"--set", "sndbuf=-1"}, "toggle sndbuf: -1 is out of range: 4608..2147483647"},
		{[]string{"--flows", "2000000", "--workload", "udp_rate"}, "--flows: 2000000 is out of range: 1..1048576"},
		{[]string{"--size", "70000"}, "--size: 70000 is out of range: 1..65507"},
		{[]string{"--interval", "1ns"}, "interval 1ns gives 3000000 samples over duration 3ms, at most 10000: use an interval of 300ns or more"},
		{[]string{"--workload", "udp_rate", "--offered-rate", "1e30"}, "--offered-rate: 1e+30 is out of range: 1..10G"},
		{[]string{"--workload", "udp_rate", "--offered-rate", "200M", "--size", "64"}, "offered rate 200M packets/s is more than the 100Gbit link carries: at most 96.153846M packets/s of 64-byte payloads"},
		{[]string{"--rate", "2Tbit"}, "--rate: 2Tbit is out of range"},
		{[]string{"--rate", "7bit"}, "--rate: 7bit is below 8bit, the smallest rate (1 byte/s)"},
		{[]string{"--rate", "0.1bit"}, "--rate: 0.1bit is below 8bit, the smallest rate (1 byte/s)"},
		{[]string{"--rate", "0.5Bps"}, "--rate: 0.5Bps is below 8bit, the smallest rate (1 byte/s)"},
		{[]string{"--workload", "forward", "--driver", "i40e", "--queues", "4", "--rx-queues", "65"}, "--rx-queues (device.rx_queues): 65 RX queues is more than i40e spreads RSS over: at most 64"},
		{[]string{"--workload", "forward", "--rx-queues", "5000"}, "--rx-queues: 5000 is out of range: 0 (as many as --queues) or 1..4096"},
		{[]string{"--workload", "forward", "--offered-rate", "150M", "--size", "22"}, "offered rate 150M packets/s is more than the 100Gbit link carries: at most 142.045454M packets/s of 22-byte payloads"},
		{[]string{"--offered-rate", "5M"}, "--offered-rate (senders.rate) does nothing for the udp_stream workload: it is for udp_rate and forward"},
		{[]string{"--rx-queues", "4"}, "--rx-queues (device.rx_queues) does nothing for the udp_stream workload: it is for forward"},
		{[]string{"--workload", "forward", "--placement", "0-3"}, "--placement (senders.placement) does nothing for the forward workload"},
		{[]string{"--workload", "forward", "--launch", "1us"}, "--launch (senders.launch) does nothing for the forward workload: it is for udp_stream"},
		{[]string{"--workload", "forward", "--driver", "veth", "--qdisc", "noqueue"}, "--workload (senders.kind): driver veth has no NIC receive side"},
		{[]string{"--workload", "forward", "--rx-port", "back"}, `--rx-port (device.rx_port): "back" is not same or other`},
		{[]string{"--workload", "forward", "--arrival", "bursty"}, `workload: unknown arrival "bursty" (known: constant, poisson)`},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--rtt", "0"}, "--rtt: 0 is out of range: 1ns..1h"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--rtt", "-5ms"}, "--rtt: -5ms is out of range: 1ns..1h"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "0"}, "--path-rate (path.rate): 0 is out of range: 8bit..1600Gbit (leave it empty for no bottleneck on the path)"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "1bit"}, "--path-rate (path.rate): 1bit is below 8bit, the smallest rate (1 byte/s)"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "1Gbit", "--path-rate-down", "0.1bit"}, "--path-rate-down (path.rate_down): 0.1bit is below 8bit, the smallest rate (1 byte/s)"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "2tbit"}, "--path-rate (path.rate): 2tbit is out of range: 8bit..1600Gbit"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "fast"}, "--path-rate (path.rate): "},
		{[]string{"--workload", "tcp_stream", "--flows", "30000"}, "--flows (senders.flows): 30000 connections (30000 up, 0 down) need 30000 source ports; ip_local_port_range (32768-60999) has 28232"},
		{[]string{"--workload", "tcp_stream", "--flows", "20000", "--down", "9000"}, "--flows (senders.flows): 29000 connections (20000 up, 9000 down) need 29000 source ports"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--cc", "bbr"}, `--cc (senders.cc): unknown congestion control "bbr" (known: cubic, dctcp, reno)`},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--tcp-ecn", "maybe"}, `--tcp-ecn: "maybe" is not on or off`},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-loss", "100%"}, "--path-loss (path.loss): 1 is out of range: 0..100% (excluded)"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-qdisc", "fq_codel"}, "--path-qdisc (path.qdisc): a qdisc on the path needs a bottleneck rate each way (--path-rate (path.rate))"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "1Gbit", "--path-qdisc", "fq_codel target"}, "--path-qdisc (path.qdisc): path qdisc fq_codel: "},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-limit", "0"}, "--path-limit: 0 is out of range: 1..10000000"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--path-rate", "1Gbit", "--path-qdisc", "htb"}, "--path-qdisc (path.qdisc): path qdisc: htb is classful; the path's router runs a classless qdisc"},
		{[]string{"--workload", "tcp_stream", "--flows", "4", "--placement", "0-9"}, "--placement (senders.placement): workload: bad CPU list \"0-9\": CPU 9 does not exist"},
		{[]string{"--duration", "2ms", "--warmup", "5ms"}, "warmup 5ms must be shorter than duration 2ms (set --warmup"},
		{[]string{"--duration", "2h"}, "--duration: 2h is out of range: 1ns..1h"},
		{[]string{"--queues", "many"}, `--queues: "many" is not a whole number`},
		{[]string{"--set", "cost.doorbell=1000000001"}, "cost doorbell: 1000000001 is out of range: must be >= 0 and <= 1000000000"},
		{[]string{"--set", "cost.line_remote=-1"}, "must be >= 0"},
		{[]string{"--set", "dev_tx_weight=0"}, "toggle dev_tx_weight: 0 is out of range: 1..2147483647"},
		{[]string{"--set", "retpoline=off"}, "toggle retpoline was merged into sock_wfree"},
		{[]string{"--set", "indirect_call_wrapper=on"}, "indirect_call_wrapper=on is sock_wfree=direct"},
		{[]string{"--cpus", "8"}, "--cpus was removed: give --sockets, --cores and --smt"},
		{[]string{"--ring", "512"}, `--ring was removed: give the ring size in ethtool's word, --driver-opts "tx N"`},
		{[]string{"--set", "nope=1"}, `unknown toggle "nope"`},
		{[]string{"--qdisc", "fifo"}, `unknown qdisc "fifo"`},
		{[]string{"--driver", "e1000e"}, `unknown driver "e1000e"`},
		{[]string{"--profile", "4.19"}, `unknown profile "4.19"`},
		{[]string{"--compare", "profile=6.18,4.19"}, `variant 4.19: unknown profile "4.19"`},
		{[]string{"--format", "yaml"}, "text or json"},
		{[]string{"--trace-sample", "2"}, "sample rate 2 must be in [0, 1]"},
		{[]string{"--trace-window", "10ms"}, "want LENGTH@START"},
		{[]string{"--max-allocs", "0", hello}, "--max-allocs 0 is out of range: 1..1000000000"},
		{[]string{"--plugin-timeout", "0s"}, "--plugin-timeout 0s is out of range"},
		{[]string{"--plugin-log", "bogus"}, `--plugin-log "bogus": want trace, debug, info, warn, error or off`},
		{[]string{hello, "--plugin-log", "bogus"}, `--plugin-log "bogus": want trace, debug, info, warn, error or off`},
		{[]string{"--bond", "mode balance-xor xmit_hash_policy layer3+4 slaves eth0,eth0"}, "--bond (device.bond): ip link set eth0 master bond0: Error: Device is in use and cannot be enslaved. (eth0 is a slave of bond0)"},
		{[]string{hello, "--param", "x=1"}, `unknown parameter "x"`},
		{[]string{"--compare", "bql=on,off", "--compare", "bql=on"}, "--compare bql: the key is given twice (give its values in one --compare bql=v1,v2)"},
		{[]string{"--compare", "seed=" + numbers(1, 41), "--compare", "dev_tx_weight=" + numbers(1, 31)}, "--compare dev_tx_weight: 1271 variants, at most 1024 (txlab sweep runs grids)"},
		{[]string{"/dev/zero"}, "/dev/zero: a device, not a script file"},
		{[]string{hello, "extra.tengo"}, "want at most one SCRIPT.tengo"},
		{[]string{"--tc-file", "testdata/none.tc"}, "--tc-file: open testdata/none.tc: no such file or directory"},
		{[]string{"--tc-file", "testdata/norate.tc"}, `testdata/norate.tc:2: class add dev eth0 parent 1: classid 1:10 htb ceil 1gbit: htb: "rate" is required.`},
		{[]string{"--groups", "dport=0"}, `--groups: workload group "dport=0": dport "0": want 1..65535`},
		{[]string{"--groups", "tos=3"}, `unknown key "tos" (dscp, ecn, priority, mark, dport, txtime)`},
		{[]string{"--mark", "-1"}, `--mark: "-1" is not a whole number >= 0`},
		{[]string{"--param", "x=1"}, "--param: it is a script's flag, and no SCRIPT.tengo was given"},
		{[]string{"--quick"}, "--quick: it is a script's flag, and no SCRIPT.tengo was given"},
		{[]string{"--max-allocs", "5"}, "--max-allocs: it is a script's flag, and no SCRIPT.tengo was given"},
		{[]string{"--compare", "bql=on,on"}, `--compare bql: the value "on" is given twice`},
		{[]string{"--set", "bql=on", "--set", "bql=off"}, "--set bql: given twice (on and off)"},
		{[]string{hello, "--param", "x=1", "--param", "x=2"}, `--param x: given twice ("1" and "2")`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			report, traceOut, existing := filepath.Join(dir, "r.json"), filepath.Join(dir, "t.json"), filepath.Join(dir, "old.json")
			args := append(append([]string(nil), quickFor(tc.args)...), tc.args...)
			_, err := txlab(t, append(args, "-o", report, "--trace-out", traceOut)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if code := exitCode(err); code == 0 {
				t.Errorf("exit code 0")
			}
			os.WriteFile(existing, []byte("old"), 0o644)
			txlab(t, append(args, "-o", existing)...)
			if b, _ := os.ReadFile(existing); string(b) != "old" {
				t.Errorf("the existing report was overwritten with %q", trunc(b))
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("files written: %v", names)
			}
		})
	}
}

// numbers is "from,from+1,...,from+n-1".
func numbers(from, n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(from + i)
	}
	return strings.Join(s, ",")
}

// TestBadCommandWords: a command that does not exist, or arguments to
// one that takes none, are one "txlab: " line and exit 1 (urfave/cli's
// "No help topic" exited 3, txlab's code for what the model lacks), from
// the real command.
func TestBadCommandWords(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuchcmd"}, `txlab: no command "nosuchcmd" (txlab help lists them)`},
		{[]string{"nosuchcmd", "--queues", "4"}, `txlab: no command "nosuchcmd" (txlab help lists them)`},
		{[]string{"help", "nosuchcmd"}, `txlab: help: no command "nosuchcmd" (txlab help lists them)`},
		{[]string{"help", "plugin", "nosuch"}, `txlab: help: no command "plugin nosuch" (txlab help plugin lists them)`},
		{[]string{"plugin", "nosuch"}, `txlab: no command "plugin nosuch" (txlab plugin --help lists them)`},
		{[]string{"version", "extra"}, `txlab: version takes no arguments (got "extra")`},
		{[]string{"list", "extra"}, `txlab: list takes no arguments (got "extra")`},
		{[]string{"scripts", "extra", "more"}, `txlab: scripts takes no arguments (got "extra more")`},
	} {
		stderr, code := exitOf(t, tc.args...)
		if code != 1 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// What exists still works: help for the app, a command, a subcommand.
	for _, args := range [][]string{{"help"}, {"help", "run"}, {"help", "plugin", "test"}, {"plugin"}, {"version"}} {
		out, err := txlab(t, args...)
		if err != nil || !strings.Contains(out, "txlab") {
			t.Errorf("%q: %v\n%s", args, err, out)
		}
	}
}

// TestPluginFilesBadInput: plugin add of a file that is not a plugin,
// and a plugin directory whose manifest is one 100 MB line, are one
// line naming the file, exit 1; add makes no directory.
func TestPluginFilesBadInput(t *testing.T) {
	tmp := t.TempDir()
	text := filepath.Join(tmp, "txlab-qdisc-text")
	if err := os.WriteFile(text, []byte("some text\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pd := filepath.Join(tmp, "pd")
	if err := os.Mkdir(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := filepath.Join(pd, "txlab-plugins.sum")
	f, err := os.Create(sum)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	f.Close()
	long := "txlab: " + sum + ":1: line longer than 4096 bytes"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "add", text, "--dir", filepath.Join(tmp, "nodir", "x")},
			"txlab: plugin add: " + text + ` is not a program: it starts with "some", not an ELF, Mach-O or PE header or "#!"`},
		{append(append([]string(nil), quick...), "--plugin-dir", pd), long},
		{[]string{"plugin", "list", "--plugin-dir", pd}, long},
		{[]string{"plugin", "test", "test_fifo", "--plugin-dir", pd}, "txlab: plugin test: " + sum + ":1: line longer than 4096 bytes"},
	} {
		stderr, code := exitOf(t, tc.args...)
		if code != 1 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "nodir")); err == nil {
		t.Error("plugin add made --dir for a file that is not a plugin")
	}
}

// More senders than CPUs under the kind's default placement blames the
// count (the default, 240), not a --placement the user never gave; a
// --placement given is what is blamed.
func TestPlacementBlame(t *testing.T) {
	host := []string{"run", "--workload", "udp_rate", "--sockets", "1", "--cores", "2", "--duration", "1ms", "--warmup", "0", "--no-progress"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--senders (senders.count): 240 senders but only 4 CPUs, and udp_rate's default placement (spread) pins one sender per CPU: give at most 4, or --placement unpinned to let them share CPUs"},
		{[]string{"--placement", "spread"}, "--placement (senders.placement): workload: 240 senders but only 4 CPUs"},
	} {
		_, err := txlab(t, append(append([]string(nil), host...), tc.args...)...)
		if err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// TestBadFlagsExitCode: the real command exits non-zero and prints one
// line (a process, so main's exit path is the one tested).
func TestBadFlagsExitCode(t *testing.T) {
	stderr, code := exitOf(t, "run", "--queues", "-1", "--warmup", "1ms", "--duration", "2ms")
	if code != 1 || strings.TrimSpace(stderr) != "txlab: --queues: -1 is out of range: 1..4096" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestQdiscErrorExitCodes: a qdisc option error exits with tc's code
// for its class (tc_qdisc_modify: the kind's parser 1, the kernel 2, tc's
// own command line 255; txlab's 3 for what the model lacks), from a flag,
// in a script and in a plugin process, and the line names the class.
func TestQdiscErrorExitCodes(t *testing.T) {
	dir := t.TempDir()
	script := func(qdisc, change string) string {
		p := filepath.Join(dir, fmt.Sprintf("s%d.tengo", len(qdisc)+31*len(change)))
		src := "txlab := import(\"txlab\")\ntxlab.host({sockets: 1, cores: 4, smt: 1})\ntxlab.qdisc(\"" + qdisc + "\")\n" +
			"txlab.senders({count: 2})\ntxlab.duration(\"2ms\")\ntxlab.warmup(\"500us\")\n"
		if change != "" {
			src += "txlab.at(\"1ms\", {qdisc: \"" + change + "\"})\n"
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		code int
		tag  string
	}{
		{[]string{"--qdisc", "pfifo limt 5"}, 1, "[tc parse error]"},
		{[]string{"--qdisc", "fq_codel flows 70000"}, 2, "[kernel refusal]"},
		{[]string{"--qdisc", "fq_codel flows 70000", "--isolate"}, 2, "[kernel refusal]"},
		{[]string{"--qdisc", "handle x: root pfifo"}, 255, "[tc command-line error]"},
		{[]string{"--qdisc", "pfifo_fast bands 3", "--isolate"}, 255, "[tc command-line error]"},
		{[]string{"--qdisc", "netem delay 10ms 1ms distribution experimental"}, 3, "[not modelled]"},
		{[]string{"--qdisc", "codel flows 16"}, 1, "[tc parse error]"},
		{[]string{"--qdisc", "mq bfifo limit foo-bar", "--isolate"}, 1, "[tc parse error]"},
		{[]string{script("fq_codel flows 70000", "")}, 2, "[kernel refusal]"},
		{[]string{script("mq sfq", "limit 5")}, 2, "[kernel refusal]"},
		{[]string{script("mq pfifo", "limit x")}, 1, "[tc parse error]"},
		{[]string{"--queues", "0"}, 1, ""}, // an error of no class: no tag
	} {
		args := append([]string{"run", "--no-progress", "--duration", "2ms", "--warmup", "500us", "--sockets", "1", "--cores", "4", "--smt", "1", "--senders", "2"}, tc.args...)
		stderr, code := exitOf(t, args...)
		line := strings.TrimSpace(stderr)
		tagged := tc.tag != "" && strings.HasSuffix(line, " "+tc.tag) || tc.tag == "" && !strings.HasSuffix(line, "]")
		if code != tc.code || !tagged || strings.Contains(line, "\n") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.tag)
		}
	}
}

// TestPositionalArgs: flags written after the positional argument set
// the flag under every name (an alias included), once.
func TestPositionalArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		out  string
		n    int
		set  []string
		q    bool
	}{
		{[]string{"x.tengo", "-o", "F"}, []string{"x.tengo"}, "F", 0, nil, false},
		{[]string{"x.tengo", "--output", "F"}, []string{"x.tengo"}, "F", 0, nil, false},
		{[]string{"x.tengo", "-o=F", "--num", "3"}, []string{"x.tengo"}, "F", 3, nil, false},
		{[]string{"x.tengo", "-s", "a=1", "--set", "b=2", "-q"}, []string{"x.tengo"}, "", 0, []string{"a=1", "b=2"}, true},
		{[]string{"-o", "G", "x.tengo", "--", "-n"}, []string{"x.tengo", "-n"}, "G", 0, nil, false},
	} {
		var got struct {
			pos      []string
			out, o   string
			n, num   int
			set      []string
			q, quick bool
		}
		app := &cli.App{Name: "t", Commands: []*cli.Command{{
			Name: "run",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
				&cli.IntFlag{Name: "n", Aliases: []string{"num"}},
				&cli.StringSliceFlag{Name: "set", Aliases: []string{"s"}},
				&cli.BoolFlag{Name: "quick", Aliases: []string{"q"}},
			},
			Action: func(c *cli.Context) error {
				var err error
				got.pos, err = positionalArgs(c)
				got.out, got.o, got.n, got.num = c.String("output"), c.String("o"), c.Int("n"), c.Int("num")
				got.set, got.q, got.quick = c.StringSlice("set"), c.Bool("q"), c.Bool("quick")
				if !c.IsSet("output") && got.out != "" {
					return errors.New("output has a value but is not set")
				}
				return err
			},
		}}}
		if err := app.Run(append([]string{"t", "run"}, tc.args...)); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !slices.Equal(got.pos, tc.pos) || got.out != tc.out || got.o != tc.out || got.n != tc.n || got.num != tc.n ||
			!slices.Equal(got.set, tc.set) || got.q != tc.q || got.quick != tc.q {
			t.Errorf("%v: got %+v", tc.args, got)
		}
	}
}

// TestFlagsAfterScript: `txlab run SCRIPT -o FILE` writes FILE (it used
// to set only the alias and print to stdout).
func TestFlagsAfterScript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	out, err := txlab(t, "run", "../scripts/hello.tengo", "--quick", "--format", "json", "-o", path, "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	if out != "" {
		t.Errorf("the report went to stdout too: %d bytes", len(out))
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte(`"variants"`)) {
		t.Errorf("-o after the script: %v, %q", err, trunc(b))
	}
}

// TestDefaultsAgree: txlab list, txlab run --help, the README and a run
// all show the defaults run.Default() has, from the one knob table.
func TestDefaultsAgree(t *testing.T) {
	d := run.Default()
	list, err := txlab(t, "list")
	if err != nil {
		t.Fatal(err)
	}
	help, err := txlab(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range run.Knobs() {
		def := k.Get(&d)
		if def == "" {
			def = `""`
		}
		if !regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(k.Flag) + ` +` + regexp.QuoteMeta(k.Script) + ` +` + regexp.QuoteMeta(def) + ` `).MatchString(list) {
			t.Errorf("txlab list does not show --%s with default %s", k.Flag, def)
		}
		line := regexp.MustCompile(`(?m)^   --` + regexp.QuoteMeta(k.Flag) + ` value .*$`).FindString(help)
		if line == "" || !strings.Contains(line, knobUsage(k)) || (k.Get(&d) != "" && !strings.HasSuffix(line, "(default: "+k.Get(&d)+")")) {
			t.Errorf("run --help shows --%s as %q", k.Flag, line)
		}
	}
	if !strings.Contains(list, "default from the default profile "+d.Profile) {
		t.Errorf("txlab list does not take toggle defaults from %s", d.Profile)
	}
	if !bytes.Contains(readme, []byte(knobTable())) {
		if *update {
			updateREADME(t, readme)
		} else {
			t.Errorf("the README's table of run flags is not run.Knobs'; go test ./cli -run TestDefaultsAgree -update rewrites it")
		}
	}
	// The run: only the time shortened.
	out, err := txlab(t, "run", "--duration", "1ms", "--warmup", "0", "--format", "json", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"profile": "` + d.Profile + `"`, `"seed": ` + strconv.FormatUint(d.Seed, 10),
		fmt.Sprintf(`"sockets": %d`, d.Sockets), fmt.Sprintf(`"cores_per_socket": %d`, d.Cores), fmt.Sprintf(`"threads_per_core": %d`, d.Threads),
		`"driver": "` + d.Driver + `"`, fmt.Sprintf(`"queues": %d`, d.Queues), fmt.Sprintf(`"rate_bps": %d`, ice.DefaultRate), // RateBps 0: the driver's line rate
		`"qdisc": "` + d.Qdisc + `"`, `"workload": "` + d.Workload.Kind + `"`, fmt.Sprintf(`"senders": %d`, d.Workload.Senders),
		fmt.Sprintf(`"packet_size": %d`, d.Workload.PacketSize), `"placement": "` + d.Workload.PlacementWord() + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("a run with the defaults reports no %s", want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the README's table of run flags from run.Knobs")

const (
	tableStart = "<!-- run flags: generated from run.Knobs (go test ./cli -run TestDefaultsAgree -update) -->\n"
	tableEnd   = "<!-- end of run flags -->\n"
)

// knobTable is the README's table of run flags.
func knobTable() string {
	d := run.Default()
	var b strings.Builder
	b.WriteString(tableStart)
	b.WriteString("| flag | script | default | range | what |\n|---|---|---|---|---|\n")
	for _, k := range run.Knobs() {
		def := k.Get(&d)
		if def == "" {
			def = "\"\""
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | `%s` | %s | %s |\n", k.Flag, k.Script, def, k.Range(), strings.ReplaceAll(k.Help, "|", "\\|"))
	}
	b.WriteString(tableEnd)
	return b.String()
}

func updateREADME(t *testing.T, readme []byte) {
	s := string(readme)
	i, j := strings.Index(s, tableStart), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatal("README.md has no run flags table markers")
	}
	s = s[:i] + knobTable() + s[j+len(tableEnd):]
	if err := os.WriteFile("../README.md", []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportReplacedOnlyWhenComplete: a good run replaces an existing
// report, leaving no temporary file behind; a failed one leaves it.
func TestReportReplacedOnlyWhenComplete(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	os.WriteFile(path, []byte("old"), 0o600)
	if _, err := txlab(t, append(quick, "-o", path)...); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if !bytes.Contains(b, []byte("accounting: offered")) || st.Mode().Perm() != 0o644 {
		t.Errorf("the report was not replaced by a complete one (mode %v): %q", st.Mode(), trunc(b))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want the report alone", len(ents))
	}
}

// TestWriteErrors: a report or trace that cannot be written ends the
// run with a non-zero exit.
func TestWriteErrors(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "/dev/full"}, "/dev/full: write /dev/full: no space left on device"},
		{[]string{"--trace-out", "/dev/full"}, "spans not written: failed to encode span 0: /dev/full: write /dev/full: no space left on device"},
		{[]string{"-o", "/nonexistent/dir/r.json"}, "/nonexistent/dir/r.json"},
	} {
		_, err := txlab(t, append(append(append([]string(nil), quick...), "--duration", "2ms"), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || exitCode(err) == 0 {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
	app := newApp()
	app.Writer, app.ErrWriter = failWriter{}, &bytes.Buffer{}
	err := app.Run(append([]string{"txlab"}, append(append([]string(nil), quick...), "--duration", "2ms")...))
	if err == nil || !strings.Contains(err.Error(), "writing the report: stdout closed") {
		t.Errorf("stdout write error: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

// TestOutputsCollide: two outputs naming one file, or -o naming the
// script, are refused before the run, and the file keeps its bytes.
func TestOutputsCollide(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.tengo")
	src, err := os.ReadFile("../scripts/hello.tengo")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(script, src, 0o644)
	out := filepath.Join(dir, "out.json")
	os.Symlink(script, filepath.Join(dir, "to-script"))
	os.Mkdir(filepath.Join(dir, "realdir"), 0o755)
	os.Symlink(filepath.Join(dir, "realdir"), filepath.Join(dir, "linkdir"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{script, "--quick", "-o", script}, "-o names " + script + ", which is the script: the output would replace it"},
		{[]string{"-o", out, "--pcap", out}, "-o and --pcap both name " + out},
		{[]string{"-o", out, "--trace-out", filepath.Join(dir, ".", "out.json")}, "-o and --trace-out both name"},
		{[]string{"-o", out, "--metrics-out", out}, "-o and --metrics-out both name"},
		{[]string{"--workload", "tcp_stream", "--flows", "2", "--trace-out", out + ".flent.gz", "--flent", out + ".flent.gz"}, "--trace-out and --flent both name"},
		{[]string{script, "--quick", "-o", filepath.Join(dir, "to-script")}, "which is the script: the output would replace it"},
		{[]string{"-o", filepath.Join(dir, "linkdir", "new.json"), "--trace-out", filepath.Join(dir, "realdir", "new.json")}, "-o and --trace-out both name"},
		{[]string{"--plugin-dir", filepath.Join(dir, "realdir"), "-o", filepath.Join(dir, "linkdir", "r.json")}, "in --plugin-dir " + filepath.Join(dir, "realdir") + ": the output would replace a file txlab reads"},
	} {
		os.WriteFile(out, []byte("old"), 0o644)
		args := append([]string(nil), quickFor(tc.args)...)
		if tc.args[0] == script {
			args = []string{"run", "--no-progress"}
		}
		_, err := txlab(t, append(args, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
		if b, _ := os.ReadFile(out); string(b) != "old" {
			t.Errorf("%v: out.json now holds %q", tc.args, trunc(b))
		}
		if b, _ := os.ReadFile(script); !bytes.Equal(b, src) {
			t.Fatalf("%v: the script was overwritten", tc.args)
		}
	}
}

// TestCommandsOutputsCollide: sweep, fidelity and plot refuse an -o
// that is their input, and a sweep whose plot is refused leaves -o as
// it was.
func TestCommandsOutputsCollide(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	if _, err := txlab(t, append(append([]string(nil), quick...), "--duration", "2ms", "--format", "json", "-o", rep)...); err != nil {
		t.Fatal(err)
	}
	repBytes, _ := os.ReadFile(rep)
	svg := filepath.Join(dir, "r.svg")
	os.WriteFile(svg, repBytes, 0o644)
	script := filepath.Join(dir, "s.tengo")
	src, _ := os.ReadFile("../scripts/hello.tengo")
	os.WriteFile(script, src, 0o644)
	out := filepath.Join(dir, "out.json")
	os.WriteFile(out, []byte("old"), 0o644)
	sweepArgs := append([]string{"sweep"}, quick[1:]...)
	for _, tc := range []struct {
		args []string
		want string
		file string
	}{
		{[]string{"fidelity", "e1", rep, "-o", rep}, "-o names " + rep + ", which is the report", rep},
		{[]string{"plot", svg, "-o", svg, "--plot-kinds", "overview", "--force"}, "-o names " + svg + ", which is the report", svg},
		{[]string{"sweep", script, "--quick", "--no-progress", "--grid", "size=64,120", "-o", script}, "-o names " + script + ", which is the script", script},
		{append(append([]string(nil), sweepArgs...), "--grid", "size=64,120", "-o", out, "--plot", filepath.Join(dir, "p.svg")), "figures for one file", out},
	} {
		before, _ := os.ReadFile(tc.file)
		_, err := txlab(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if after, _ := os.ReadFile(tc.file); !bytes.Equal(before, after) {
			t.Errorf("%v: %s changed", tc.args, tc.file)
		}
	}
}

// TestOutputThroughLinks: -o through a symbolic link replaces the file
// it names and keeps the link; names under /proc (a shell's redirection
// behind /proc/self/fd/1) are written in place; -o in a missing
// directory is refused before the run, naming -o.
func TestOutputThroughLinks(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "t.json"), filepath.Join(dir, "l.json")
	os.WriteFile(target, []byte("old"), 0o644)
	os.Symlink(target, link)
	if _, err := txlab(t, append(append([]string(nil), quick...), "-o", link)...); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st, err)
	}
	if b, _ := os.ReadFile(target); !bytes.Contains(b, []byte("accounting: offered")) {
		t.Errorf("the link's target holds %q", trunc(b))
	}
	f, err := os.Create(filepath.Join(dir, "fd.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	proc := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if _, err := os.Stat(proc); err != nil {
		t.Skip("no /proc")
	}
	if _, err := txlab(t, append(append([]string(nil), quick...), "-o", proc)...); err != nil {
		t.Fatalf("-o %s: %v", proc, err)
	}
	if b, _ := os.ReadFile(f.Name()); !bytes.Contains(b, []byte("accounting: offered")) {
		t.Errorf("-o %s wrote %q to the file behind it", proc, trunc(b))
	}
	out, err := txlab(t, append(append([]string(nil), quick...), "-o", filepath.Join(dir, "none", "r.json"))...)
	if err == nil || !strings.HasPrefix(err.Error(), "-o: ") || strings.Contains(out, "pps") {
		t.Errorf("-o in a missing directory: %v, after the run: %v", err, strings.Contains(out, "pps"))
	}
}

// TestOutputErrorsReplaceNothing: an output that fails after the run
// (a plot the report cannot fill, an unwritable --metrics-out, --pcap or
// --trace-out) fails the command, and -o keeps what it held: every file
// of the command is replaced together or not at all.
func TestOutputErrorsReplaceNothing(t *testing.T) {
	full := "/dev/full"
	if _, err := os.Stat(full); err != nil {
		full = ""
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--plot", "PLOT.svg"}, "figures for one file: give a directory, or one kind (--plot-kinds)"},
		{[]string{"--plot", "DIR", "--plot-kinds", "goodput"}, "plot: the report has no data for goodput"},
		{[]string{"--metrics-out", "DIR/none/m.json"}, "metrics: "},
		{[]string{"--pcap", "c.pcap", "--pcap-dev", "ifb9"}, `--pcap-dev: no device "ifb9" on this host (it has eth0)`},
		{[]string{"--metrics-out", full}, "metrics: /dev/full: write /dev/full: no space left on device"},
		{[]string{"--pcap", full}, "--pcap: /dev/full: write /dev/full: no space left on device"},
		{[]string{"--trace-out", full}, "spans not written"},
	} {
		if slices.Contains(tc.args, "") {
			continue
		}
		dir := t.TempDir()
		out := filepath.Join(dir, "out.json")
		os.WriteFile(out, []byte("old"), 0o644)
		args := append([]string(nil), quick...)
		for _, a := range tc.args {
			args = append(args, strings.NewReplacer("DIR", dir, "PLOT", filepath.Join(dir, "p"), "c.pcap", filepath.Join(dir, "c.pcap")).Replace(a))
		}
		_, err := txlab(t, append(args, "-o", out)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || exitCode(err) == 0 {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
		if b, _ := os.ReadFile(out); string(b) != "old" {
			t.Errorf("%v: out.json now holds %q", tc.args, trunc(b))
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%v: files in the directory: %v, want out.json alone", tc.args, names)
		}
	}
}

// TestFailedRunWritesNewFilesOnly: a run that fails in a hook keeps its
// partial report, trace and capture under names that held nothing, and
// leaves existing files as they were, saying which.
func TestFailedRunWritesNewFilesOnly(t *testing.T) {
	script := writeScript(t, hookAt1ms("act = 5"))
	dir := t.TempDir()
	names := []string{"r.json", "c.pcap", "t.json"}
	run := func() error {
		_, err := txlab(t, "run", "--no-progress", "--format", "json", "-o", filepath.Join(dir, names[0]),
			"--pcap", filepath.Join(dir, names[1]), "--trace-out", filepath.Join(dir, names[2]), script)
		return err
	}
	if err := run(); err == nil || !strings.Contains(err.Error(), "an action is a map") || strings.Contains(err.Error(), "left as") {
		t.Fatalf("first run: %v", err)
	}
	for _, n := range names {
		if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: a failed run's new file is missing: %v", n, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, names[0])); !bytes.Contains(b, []byte(`"accounting_ok": true`)) {
		t.Errorf("the partial report does not balance: %s", trunc(b))
	}
	for _, n := range names {
		os.WriteFile(filepath.Join(dir, n), []byte("old"), 0o644)
	}
	err := run()
	if err == nil || !strings.Contains(err.Error(), "left as they were: a failed or stopped run writes new files only") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("second run: %v", err)
	}
	for _, n := range names {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != "old" {
			t.Errorf("%s now holds %q", n, trunc(b))
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// TestReportFilesRefused: fidelity and plot read a report only from a
// regular file of at most maxReportFile bytes, and refuse anything else
// in one line before reading it (fidelity read /dev/zero to 10 GB; both
// waited forever on a FIFO), touching neither -o. Each runs as a process
// under a deadline, so a read that hangs fails rather than stalls.
func TestReportFilesRefused(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: only the size is there to refuse.
	if err := f.Truncate(maxReportFile + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	type file struct{ path, want string }
	// /dev/null, not /dev/zero: without the Stat it ends at once.
	files := []file{
		{"/dev/null", "/dev/null: a device, not a report"},
		{dir, dir + ": a directory, not a report"},
		{big, fmt.Sprintf("big.json: %d bytes, more than %d: not a report", maxReportFile+1, maxReportFile)},
	}
	if _, err := exec.LookPath("mkfifo"); err == nil {
		fifo := filepath.Join(dir, "fifo")
		if out, err := exec.Command("mkfifo", fifo).CombinedOutput(); err != nil {
			t.Fatalf("mkfifo: %v %s", err, out)
		}
		files = append(files, file{fifo, fifo + ": a named pipe, not a report"})
	}
	out := filepath.Join(dir, "out.json")
	os.WriteFile(out, []byte("mine"), 0o644)
	plots := filepath.Join(dir, "plots")
	for _, f := range files {
		for _, args := range [][]string{
			{"fidelity", "-o", out, "e1", f.path},
			{"plot", f.path, "-o", plots},
		} {
			stderr, code := exitWithin(t, 30*time.Second, args...)
			line := strings.TrimSpace(stderr)
			if code != 1 || !strings.HasPrefix(line, "txlab: ") || !strings.Contains(line, f.want) || strings.Contains(line, "\n") {
				t.Errorf("%v: exit %d, stderr %q; want one line with %q", args, code, trunc([]byte(stderr)), f.want)
			}
		}
	}
	if b, _ := os.ReadFile(out); string(b) != "mine" {
		t.Errorf("a refused fidelity replaced -o: %q", trunc(b))
	}
	if _, err := os.Stat(plots); err == nil {
		t.Error("a refused plot made its directory")
	}
}

// exitWithin is exitOf with a deadline: a process still running then
// is killed, and its exit code is -1.
func exitWithin(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	self, _ := os.Executable()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stderr.String() + fmt.Sprintf("(killed after %v)", limit), -1
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stderr.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return stderr.String(), 0
}

// TestInterruptFlushesTrace sends SIGINT to a real txlab in the middle
// of a run: the trace it has so far is written whole (its root span
// says interrupted), the report is not written, the exit code is 130.
func TestInterruptFlushesTrace(t *testing.T) {
	dir := t.TempDir()
	traceOut, report := filepath.Join(dir, "t.json"), filepath.Join(dir, "r.json")
	self, _ := os.Executable()
	args := append(append([]string(nil), quick...), "--duration", "10s", "--trace-out", traceOut, "-o", report)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "TXLAB_TEST_MAIN=1", "TXLAB_TEST_ARGS="+strings.Join(args, "\x1f"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The trace's temporary file appears once the configuration is
	// valid and the run starts.
	deadline := time.Now().Add(20 * time.Second)
	for {
		tmps, _ := filepath.Glob(filepath.Join(dir, ".t.json.*.tmp"))
		if len(tmps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130; stderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(traceOut)
	if err != nil {
		t.Fatalf("no trace after the interrupt: %v", err)
	}
	if !bytes.Contains(b, []byte(`"Name":"txlab run"`)) || !bytes.Contains(b, []byte(`"Description":"interrupted"`)) ||
		!bytes.Contains(b, []byte(`"Name":"packet"`)) {
		t.Errorf("the trace lacks the root span, its interruption or the packets (%d bytes)", len(b))
	}
	if _, err := os.Stat(report); err == nil {
		t.Error("an interrupted run wrote a report")
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	if !strings.Contains(stderr.String(), "txlab: interrupted") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// TestBuiltinsListed: internal/builtins (what txlab registers, and the
// framework tests through builtintest) imports every package that
// registers a qdisc or driver, and nothing else imports one outside tests.
func TestBuiltinsListed(t *testing.T) {
	var want []string
	for _, pattern := range []string{"../plugins/*/*.go", "../drivers/*/*.go"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte("qdisc.Register(")) || bytes.Contains(b, []byte("driver.Register(")) {
				pkg := "github.com/txlab/txlab/" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(f, "../")))
				if !slices.Contains(want, pkg) {
					want = append(want, pkg)
				}
			}
		}
	}
	slices.Sort(want)
	if len(want) < 8 {
		t.Fatalf("found only %v", want)
	}
	const file = "../internal/builtins/builtins.go"
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, im := range f.Imports {
		got = append(got, strings.Trim(im.Path.Value, `"`))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s imports %v, want %v", file, got, want)
	}
}

// TestREADMELayout: the README's layout table names every package
// directory of the tree, and nothing that is not one.
func TestREADMELayout(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "## Layout")
	j := strings.Index(s[i+1:], "\n## ")
	if i < 0 || j < 0 {
		t.Fatal("README.md has no Layout section")
	}
	section := s[i : i+1+j]
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_/]+)`").FindAllStringSubmatch(section, -1) {
		if st, err := os.Stat("../" + m[1]); err == nil && st.IsDir() {
			named[m[1]] = true
		}
	}
	var dirs []string
	filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 {
			dirs = append(dirs, strings.TrimPrefix(path, "../"))
		}
		return nil
	})
	for _, d := range dirs {
		if !named[d] {
			t.Errorf("the README's layout does not name %s", d)
		}
	}
	for d := range named {
		if !slices.Contains(dirs, d) && d != "docs" {
			t.Errorf("the README's layout names %s, which has no Go files", d)
		}
	}
}
