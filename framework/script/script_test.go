package script

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/d5/tengo/v2"

	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
)

// small is a host that simulates in milliseconds of wall time.
const small = `txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 2, rate: "100Gbit"})
txlab.qdisc("mq pfifo"); txlab.senders({count: 4})
txlab.duration("2ms")
txlab.warmup("500us")
`

func eval(t *testing.T, src string, opts Options) (*Plan, error) {
	t.Helper()
	p, err := Load("t.tengo", []byte(src), opts)
	if err != nil {
		return nil, err
	}
	return p.Eval()
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		opts Options
		want string // the whole error starts with this
		has  string // and contains this
	}{
		{"syntax error", "x := 1 +\n", Options{}, "t.tengo:1:10: syntax error:", "expected operand"},
		{"syntax error later", "txlab := import(\"txlab\")\n\nif {\n", Options{}, "t.tengo:3:4: syntax error:", ""},
		{"undefined name", "y := x + 1\n", Options{}, "t.tengo:1:6: unresolved reference 'x'", ""},
		{"runtime error", "f := 1\nf()\n", Options{}, "t.tengo:2:1: not callable: int", ""},
		{"runtime error in function", "g := func(a) { return a.b.c() }\ng({})\n", Options{}, "t.tengo:1:", "not callable"},
		{"unknown qdisc", "txlab := import(\"txlab\")\ntxlab.qdisc(\"fifo\")\n", Options{}, "t.tengo:2:1: txlab.qdisc: unknown qdisc \"fifo\" (known: ", "pfifo"},
		{"unknown mq child", "txlab := import(\"txlab\")\ntxlab.qdisc({kind: \"mq\", child: \"fifo\"})\n", Options{}, "t.tengo:2:1: txlab.qdisc: unknown qdisc \"fifo\"", ""},
		{"bad option value", "txlab := import(\"txlab\")\ntxlab.qdisc({kind: \"pfifo\", limit: \"lots\"})\n", Options{}, "t.tengo:2:1: txlab.qdisc: pfifo: Illegal value for \"limit\": \"lots\"", "is not a size"},
		{"unknown qdisc option", "txlab := import(\"txlab\")\ntxlab.qdisc(\"pfifo bogus 3\")\n", Options{}, "t.tengo:2:1: txlab.qdisc: pfifo:", "bogus"},
		{"bad handle", "txlab := import(\"txlab\")\ntxlab.qdisc(\"handle x: root pfifo\")\n", Options{}, "t.tengo:2:1: txlab.qdisc: argument \"x:\" is wrong: invalid qdisc ID", ""},
		{"not the root", "txlab := import(\"txlab\")\ntxlab.qdisc({kind: \"pfifo\", parent: \"1:1\"})\n", Options{}, "t.tengo:2:1: txlab.qdisc: parent 1:1: failed to find specified qdisc", ""},
		{"estimator", "txlab := import(\"txlab\")\ntxlab.qdisc(\"root estimator 1s 8s pfifo\")\n", Options{}, "t.tengo:2:1: txlab.qdisc: \"estimator\" is not supported: rate estimators (TCA_RATE) are not modelled", ""},
		{"handle on an mq child", "txlab := import(\"txlab\")\ntxlab.qdisc(\"mq handle 1: pfifo\")\n", Options{}, "t.tengo:2:1: txlab.qdisc: mq handle: mq's children are the kernel's default qdiscs", ""},
		{"other device", "txlab := import(\"txlab\")\ntxlab.qdisc(\"dev eth1 root pfifo\")\n", Options{}, "t.tengo:2:1: txlab.qdisc: cannot find device \"eth1\"", ""},
		{"change with bad parent", small + "txlab.at(\"1ms\", {qdisc: \"parent 1:x pfifo limit 5\"})\n", Options{}, "t.tengo:7:1: txlab.at: qdisc change \"parent 1:x pfifo limit 5\": argument \"1:x\" is wrong: invalid parent ID", ""},
		{"change with queue and parent", small + "txlab.at(\"1ms\", {qdisc: \"parent 8001:1 pfifo limit 5\", queue: 1})\n", Options{}, "t.tengo:7:1: txlab.at: qdisc change \"parent 8001:1 pfifo limit 5\": give queue or the qdisc's handle/parent, not both", ""},
		{"change map with parent but no kind", small + "txlab.at(\"1ms\", {qdisc: {parent: \"8001:1\", limit: 5}})\n", Options{}, "t.tengo:7:1: txlab.at: qdisc change: after handle or parent tc wants the kind too", ""},
		{"unknown driver", "txlab := import(\"txlab\")\ntxlab.device({driver: \"e1000\"})\n", Options{}, "t.tengo:2:1: txlab.device: unknown driver \"e1000\" (known: ", "ice"},
		{"bad bond mode", "txlab := import(\"txlab\")\ntxlab.device({bond: \"mode fast slaves 2\"})\n", Options{}, "t.tengo:2:1: txlab.device: device bond: Error: argument \"fast\" is wrong: invalid mode", ""},
		{"bond without slaves", "txlab := import(\"txlab\")\ntxlab.device({bond: \"mode balance-rr\"})\n", Options{}, "t.tengo:2:1: txlab.device: device bond: bond bond0 has no slaves", ""},
		{"unknown device option", "txlab := import(\"txlab\")\ntxlab.device({queus: 4})\n", Options{}, "t.tengo:2:1: txlab.device: device: unknown option \"queus\" (known: bond, driver, ifb, irq_cpus, opts, queues, rate, rx_port, rx_queues, xps)", ""},
		{"bad cpu", "txlab := import(\"txlab\")\ntxlab.host({cpu: \"haswell\"})\n", Options{}, "t.tengo:2:1: txlab.host: host cpu: unknown cpu \"haswell\" (known: default, haswell-ep, skylake-sp)", ""},
		{"bad xps", "txlab := import(\"txlab\")\ntxlab.device({xps: \"numa\"})\n", Options{}, "t.tengo:2:1: txlab.device: device xps: unknown XPS map \"numa\" (known: irq, cores, none)", ""},
		{"bad irq_cpus", "txlab := import(\"txlab\")\ntxlab.device({irq_cpus: \"0-3,x\"})\n", Options{}, "t.tengo:2:1: txlab.device: device irq_cpus: workload: bad CPU list \"0-3,x\"", ""},
		{"bad unpinned set", "txlab := import(\"txlab\")\ntxlab.senders({placement: \"unpinned:0-3,x\"})\n", Options{}, "t.tengo:2:1: txlab.senders: workload: bad CPU list \"0-3,x\"", ""},
		{"bad launch", "txlab := import(\"txlab\")\ntxlab.senders({launch: \"2s\"})\n", Options{}, "t.tengo:2:1: txlab.senders: senders launch: 2s is out of range", ""},
		{"bad rx port", "txlab := import(\"txlab\")\ntxlab.device({rx_port: \"back\"})\n", Options{}, "t.tengo:2:1: txlab.device: device rx_port \"back\" is not same or other", ""},
		{"bad arrival", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"forward\", arrival: \"bursty\"})\n", Options{}, "t.tengo:2:1: txlab.senders: senders arrival \"bursty\" is not constant or poisson", ""},
		{"rx queues range", "txlab := import(\"txlab\")\ntxlab.device({rx_queues: 5000})\n", Options{}, "t.tengo:2:1: txlab.device: device rx_queues", ""},
		{"unknown sender kind", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"tcp_bulk\"})\n", Options{}, "t.tengo:2:1: txlab.senders: unknown sender kind \"tcp_bulk\" (known: forward, tcp_stream, udp_rate, udp_stream)", ""},
		{"zero rtt", "txlab := import(\"txlab\")\ntxlab.path({rtt: \"0ms\"})\n", Options{}, "t.tengo:2:1: txlab.path: path rtt: 0 is out of range: 1ns..1h", ""},
		{"zero path rate", "txlab := import(\"txlab\")\ntxlab.path({rate: \"0bit\"})\n", Options{}, "t.tengo:2:1: txlab.path: path rate: 0bit is out of range: 8bit..1600Gbit (leave it out for no bottleneck on the path)", ""},
		{"sub-byte path rate", "txlab := import(\"txlab\")\ntxlab.path({rate: \"1bit\"})\n", Options{}, "t.tengo:2:1: txlab.path: path rate: 1bit is below 8bit, the smallest rate (1 byte/s)", ""},
		{"sub-byte path rate number", "txlab := import(\"txlab\")\ntxlab.path({rate_down: 7})\n", Options{}, "t.tengo:2:1: txlab.path: path rate_down: 7bit is out of range: 8bit..1600Gbit", ""},
		{"path rate past int64", "txlab := import(\"txlab\")\ntxlab.path({rate: 1e40})\n", Options{}, "t.tengo:2:1: txlab.path: path rate: 1e+40bit is out of range: 8bit..1600Gbit", ""},
		{"unknown cc", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"tcp_stream\", cc: \"bbr\"})\n", Options{}, "t.tengo:2:1: txlab.senders: senders cc: unknown congestion control \"bbr\" (known: cubic, dctcp, reno)", ""},
		{"more flows than ports", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"tcp_stream\", flows: 30000})\n", Options{}, "t.tengo: --flows (senders.flows): 30000 connections (30000 up, 0 down) need 30000 source ports", ""},
		{"unknown probe", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"tcp_stream\", probes: [{kind: \"traceroute\"}]})\n", Options{}, "t.tengo:2:1: txlab.senders: senders probes: workload: probe 1: unknown kind \"traceroute\"", ""},
		{"unknown toggle", "txlab := import(\"txlab\")\ntxlab.set(\"fastpath\", true)\n", Options{}, "t.tengo:2:1: txlab.set: unknown toggle \"fastpath\"", "fast_path"},
		{"bad toggle value", "txlab := import(\"txlab\")\ntxlab.set({xmit: \"spinlock\"})\n", Options{}, "t.tengo:2:1: txlab.set: toggle xmit:", "busylock"},
		{"unknown cost", "txlab := import(\"txlab\")\ntxlab.cost(\"nope\", 3)\n", Options{}, "t.tengo:2:1: txlab.cost: unknown cost \"nope\"", ""},
		{"unknown profile", "txlab := import(\"txlab\")\ntxlab.profile(\"5.15\")\n", Options{}, "t.tengo:2:1: txlab.profile: unknown profile \"5.15\" (known: 4.7, 4.8, 6.18, 6.19-rc1, net-next)", ""},
		{"bad time", "txlab := import(\"txlab\")\ntxlab.duration(\"10 parsecs\")\n", Options{}, "t.tengo:2:1: txlab.duration: duration: \"10 parsecs\" is not a time", ""},
		{"wrong type", "txlab := import(\"txlab\")\ntxlab.host({cores: \"many\"})\n", Options{}, "t.tengo:2:1: txlab.host: host cores: want a whole number", ""},
		{"out of range", "txlab := import(\"txlab\")\ntxlab.senders({size: 70000})\n", Options{}, "t.tengo:2:1: txlab.senders: senders size: 70000 is out of range", ""},
		{"bad action", "txlab := import(\"txlab\")\ntxlab.at(\"1ms\", {speed: 3})\n", Options{}, "t.tengo:2:1: txlab.at: action: unknown option \"speed\"", "rate"},
		{"rate on udp_stream", "txlab := import(\"txlab\")\ntxlab.at(\"1ms\", {rate: \"2M\"})\n", Options{}, "t.tengo:2:1: txlab.at: rate changes need udp_rate senders", ""},
		{"sender out of range", small + "txlab.senders({count: 2})\ntxlab.at(\"1ms\", {stop: 5})\n", Options{}, "t.tengo:8:1: txlab.at: sender 5 out of range (senders 0-1)", ""},
		{"no such group", small + "txlab.senders([{count: 2}, {count: 3}])\ntxlab.at(\"1ms\", {stop: \"all\", group: 3})\n", Options{}, "t.tengo:8:1: txlab.at: senders group 3 does not exist (groups 1-2)", ""},
		{"sender out of a group's range", small + "txlab.senders([{count: 2}, {count: 3}])\ntxlab.at(\"1ms\", {stop: 2, group: 1})\n", Options{}, "t.tengo:8:1: txlab.at: senders group 1: sender 2 out of range (senders 0-1)", ""},
		{"rate on a udp_stream group", small + "txlab.senders([{count: 2}, {kind: \"udp_rate\", count: 3, rate: \"1M\"}])\ntxlab.at(\"1ms\", {rate: \"2M\", group: 1})\n", Options{}, "t.tengo:8:1: txlab.at: senders group 1: rate changes need udp_rate senders (these are udp_stream)", ""},
		{"group alone", small + "txlab.at(\"1ms\", {group: 1, log: \"x\"})\n", Options{}, "t.tengo:7:1: txlab.at: group goes with stop, start or rate", ""},
		{"bad group", small + "txlab.at(\"1ms\", {stop: \"all\", group: 0})\n", Options{}, "t.tengo:7:1: txlab.at: group: want a sender group's number (1 the first) or \"all\"", ""},
		{"duplicate variant", "txlab := import(\"txlab\")\ntxlab.compare(\"profile\", [\"6.18\", \"6.18\"])\n", Options{}, "t.tengo:2:1: txlab.compare: variant \"6.18\" declared twice", ""},
		{"bad variant", "txlab := import(\"txlab\")\ntxlab.variant(\"x\", {qdisc: \"fifo\"})\n", Options{}, "t.tengo:2:1: txlab.variant: variant x: unknown qdisc", ""},
		{"wrong arg count", "txlab := import(\"txlab\")\ntxlab.qdisc()\n", Options{}, "t.tengo:2:1: txlab.qdisc: want 1 arguments, got 0", ""},
		{"import os refused", "os := import(\"os\")\nos.remove(\"x\")\n", Options{}, "t.tengo:1:7: import \"os\" refused", "no file, process, network or clock access"},
		{"import times refused", "t := import(\"times\")\n", Options{}, "t.tengo:1:6: import \"times\" refused", "available: base64, enum, fmt, hex, json, math, text, txlab"},
		{"file import refused", "m := import(\"./other\")\n", Options{}, "t.tengo:1:6: import \"./other\" refused", ""},
		{"fmt has no println", "fmt := import(\"fmt\")\nfmt.println(\"x\")\n", Options{}, "t.tengo:2:", ""},
		{"endless loop", "for {}\n", Options{Timeout: 100 * time.Millisecond}, "t.tengo:1:1: stopped after 100ms of wall time", "--script-timeout"},
		{"endless loop in a function", "f := func() { for { x := 1 } }\nf()\n", Options{Timeout: 100 * time.Millisecond}, "t.tengo:1:", "stopped after 100ms of wall time"},
		{"divide by zero", "a := 1\nb := 0\nc := a / b\n", Options{}, "t.tengo:3:6: runtime error: integer divide by zero", ""},
		{"stdlib panic", "text := import(\"text\")\nx := text.repeat(\"ab\", -1)\n", Options{}, "t.tengo:2:6: text.repeat: strings: negative Repeat count", ""},
		{"map contains itself", "txlab := import(\"txlab\")\na := {}\na.x = a\ntxlab.qdisc(a)\n", Options{}, "t.tengo:4:1: txlab.qdisc: argument 1: key \"x\": the map contains itself", ""},
		{"array contains itself", "txlab := import(\"txlab\")\na := [1]\na[0] = {b: a}\ntxlab.log(a)\n", Options{}, "t.tengo:4:1: txlab.log: argument 1: element 0: key \"b\": the array contains itself", ""},
		{"too deep", "txlab := import(\"txlab\")\na := {}\nfor i := 0; i < 100; i++ { a = {x: a} }\ntxlab.log(a)\n", Options{}, "t.tengo:4:1: txlab.log: argument 1: ", "maps and arrays nested more than 64 deep"},
		{"json of a map that contains itself", "json := import(\"json\")\na := {}\na.x = a\nb := json.encode(a)\n", Options{}, "t.tengo:4:6: json.encode: argument 1: the map contains itself", ""},
		{"sprintf of a map that contains itself", "fmt := import(\"fmt\")\na := {}\na.x = [a]\nb := fmt.sprintf(\"%v\", a)\n", Options{}, "t.tengo:4:6: fmt.sprintf: argument 2: the map contains itself", ""},
		{"string() of a map that contains itself", "a := {}\na.x = a\nb := string(a)\n", Options{}, "t.tengo:3:6: the map contains itself", ""},
		{"repeat over the string bound", "text := import(\"text\")\nx := text.repeat(\"ab\", 600)\n", Options{MaxAllocs: 1000}, "t.tengo:2:6: exceeding string size limit: one string or bytes value may hold 1000 bytes (--max-allocs", ""},
		{"allocation bomb", "a := []\nfor { a = append(a, [1, 2, 3]) }\n", Options{MaxAllocs: 10000}, "t.tengo:2:11: allocation limit exceeded (10000 objects)", "--max-allocs"},
		{"string bomb", "s := \"x\"\nfor { s += s }\n", Options{MaxAllocs: 1000, Timeout: 2 * time.Second}, "t.tengo:2:", ""},
		{"hook syntax error", "txlab := import(\"txlab\")\nh := txlab.hook(`\nx := 1\ny := +\n`)\n", Options{}, "t.tengo:4:", "in hook: syntax error"},
		{"hook imports txlab", "txlab := import(\"txlab\")\nh := txlab.hook(`t := import(\"txlab\")`)\n", Options{}, "t.tengo:2:", "import \"txlab\" refused"},
		{"unknown param", small + "x := txlab.param(\"senders\", 8)\n", Options{Params: map[string]string{"sender": "3"}}, "t.tengo: unknown parameter \"sender\" (the script reads: senders)", ""},
		{"bad param value", small + "x := txlab.param(\"senders\", 8)\n", Options{Params: map[string]string{"senders": "many"}}, "t.tengo:7:6: txlab.param: parameter senders: \"many\" is not a whole number", ""},
		{"removed host cpus", "txlab := import(\"txlab\")\ntxlab.host({cpus: 8})\n", Options{}, "t.tengo:2:1: txlab.host: host cpus was removed: give sockets, cores and smt", ""},
		{"removed device ring", "txlab := import(\"txlab\")\ntxlab.device({ring: 512})\n", Options{}, "t.tengo:2:1: txlab.device: device ring was removed: give the ring size in opts, ethtool's word: opts: \"tx 512\"", ""},
		{"removed toggle", "txlab := import(\"txlab\")\ntxlab.set(\"retpoline\", false)\n", Options{}, "t.tengo:2:1: txlab.set: toggle retpoline was merged into sock_wfree", "sock_wfree=indirect"},
		{"queues above the max", "txlab := import(\"txlab\")\ntxlab.device({queues: 5000})\n", Options{}, "t.tengo:2:1: txlab.device: device queues: 5000 is out of range [1, 4096]", ""},
		{"offered rate above the max", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"udp_rate\", rate: 1e30})\n", Options{}, "t.tengo:2:1: txlab.senders: senders rate: 1e+30 is out of range: 1..10G", ""},
		{"link rate above the max", "txlab := import(\"txlab\")\ntxlab.device({rate: \"2Tbit\"})\n", Options{}, "t.tengo:2:1: txlab.device: device rate: 2Tbit is out of range: 0 (the driver's line rate, txlab list: DRIVERS) or 8bit..1600Gbit", ""},
		{"link rate past int64", "txlab := import(\"txlab\")\ntxlab.device({driver: \"ice\", queues: 2, rate: 1e40})\n", Options{}, "t.tengo:2:1: txlab.device: device rate: 1e+40bit is out of range: 0 (the driver's line rate, txlab list: DRIVERS) or 8bit..1600Gbit", ""},
		{"link rate 2^63", "txlab := import(\"txlab\")\ntxlab.device({rate: 9223372036854775808.0})\n", Options{}, "t.tengo:2:1: txlab.device: device rate: 9.223372036854776e+18bit is out of range", ""},
		{"sub-byte link rate", "txlab := import(\"txlab\")\ntxlab.device({rate: \"7bit\"})\n", Options{}, "t.tengo:2:1: txlab.device: device rate: 7bit is below 8bit, the smallest rate (1 byte/s)", ""},
		{"sub-byte link rate number", "txlab := import(\"txlab\")\ntxlab.device({rate: 0.5})\n", Options{}, "t.tengo:2:1: txlab.device: device rate: 0.5bit is out of range: 0 (the driver's line rate, txlab list: DRIVERS) or 8bit..1600Gbit", ""},
		{"cost above the max", "txlab := import(\"txlab\")\ntxlab.cost(\"doorbell\", 2000000000)\n", Options{}, "t.tengo:2:1: txlab.cost: cost doorbell: 2000000000 is out of range: must be >= 0 and <= 1000000000", ""},
		{"toggle above the max", "txlab := import(\"txlab\")\ntxlab.set(\"dev_tx_weight\", 3000000000)\n", Options{}, "t.tengo:2:1: txlab.set: toggle dev_tx_weight: 3000000000 is out of range: 1..2147483647", ""},
		{"too many samples", small + "txlab.interval(\"1ns\")\n", Options{}, "t.tengo: interval 1ns gives 2000000 samples over duration 2ms, at most 10000: use an interval of 200ns or more", ""},
		{"too many action runs", small + "txlab.every(\"1ns\", {phase: \"x\"})\n", Options{}, "t.tengo:7:1: ", "every 1ns runs 1999999 times in 2ms, at most 1000000: use an interval of 2ns or more"},
		// Each action within the bound, all of them together not.
		{"too many action runs in all", small + "txlab.every(\"1us\", {log: \"a\"})\ntxlab.every(\"3ns\", {log: \"b\"})\ntxlab.every(\"3ns\", {log: \"c\"}, {from: \"1us\"})\n", Options{}, "t.tengo:8:1: 3 timed actions would run 1334999 times over the run's 2ms, at most 1000000 in all: line 8 every 3ns {log: b} (666666), line 9 every 3ns {log: c} (666334), line 7 every 1us {log: a} (1999); use longer intervals or fewer actions", ""},
		{"too many hook runs", small + "h := txlab.hook(`act = {log: \"x\"}`)\ntxlab.every(\"1ms\", h)\ntxlab.every(\"10ns\", h)\n", Options{}, "t.tengo:9:1: 2 hooks would run 200000 times over the run's 2ms, at most 100000 in all", "every 10ns hook runs 199999 times"},
		// An action past the end: placed at its line even when the
		// duration is set after it, or by a variant.
		{"at past the end", small + "txlab.at(\"2ms\", {log: \"x\"})\n", Options{}, "t.tengo:7:1: at 2ms {log: x}: its time 2ms is not before the end of the run (duration 2ms): it would never run", ""},
		{"at past a later duration", small + "txlab.at(\"1500us\", {log: \"x\"})\ntxlab.duration(\"1ms\")\n", Options{}, "t.tengo:7:1: at 1500us {log: x}: its time 1500us is not before the end of the run (duration 1ms)", ""},
		{"every from past the end", small + "txlab.every(\"1us\", {log: \"x\"}, {from: \"5ms\"})\n", Options{}, "t.tengo:7:1: every 1us {log: x}: its first run at 5ms is not before the end of the run (duration 2ms)", ""},
		{"at past a variant's duration", small + "txlab.at(\"1500us\", {log: \"x\"})\ntxlab.variant(\"short\", {duration: \"1ms\", warmup: 0})\n", Options{}, "t.tengo:7:1: variant short: at 1500us {log: x}: its time 1500us is not before the end of the run (duration 1ms)", ""},
		// Variants: --compare's bound.
		{"too many variants", small + "for i := 0; i < 1025; i++ { txlab.variant(\"v\" + string(i), {seed: i + 1}) }\n", Options{}, "t.tengo:7:", "txlab.variant: variant v1024 would be variant 1025, at most 1024 (--compare's bound too; txlab sweep runs grids)"},
		{"too many compared values", small + "v := []\nfor i := 0; i < 1100; i++ { v = append(v, 4608 + i) }\ntxlab.compare(\"sndbuf\", v)\n", Options{}, "t.tengo:9:1: txlab.compare: variant sndbuf=5632 would be variant 1025, at most 1024", ""},
		// Sender threads of every group together.
		{"groups over the senders bound", small + "txlab.senders([{kind: \"udp_stream\", count: 8192}, {kind: \"udp_stream\", count: 8192}, {kind: \"udp_rate\", count: 8192}])\n", Options{}, "t.tengo:7:1: txlab.senders: 24576 sender threads in 3 groups, at most 8192 in all (--senders (senders.count): its range is for every group together)", ""},
		{"group added over the senders bound", small + "txlab.senders({count: 8000})\ntxlab.senders({kind: \"udp_rate\", count: 200})\n", Options{}, "t.tengo:8:1: txlab.senders: 8200 sender threads in 2 groups, at most 8192 in all", ""},
		{"variant over the senders bound", small + "txlab.senders([{count: 8000}, {kind: \"udp_rate\", count: 100}])\ntxlab.variant(\"more\", {senders: {count: 8100}})\n", Options{}, "t.tengo:8:1: txlab.variant: variant more: 8200 sender threads in 2 groups, at most 8192 in all", ""},
		// The variant's count is what the groups added after it pass.
		{"groups added after a variant", small + "txlab.variant(\"more\", {senders: {count: 8100}})\ntxlab.senders({kind: \"udp_rate\", count: 100})\n", Options{}, "t.tengo:7:1: variant more: 8200 sender threads in 2 groups, at most 8192 in all", ""},
		// ecn on UDP senders says what is wrong with the value.
		{"ecn word on a udp group", small + "txlab.senders({kind: \"udp_rate\", rate: \"1M\", ecn: \"maybe\"})\n", Options{}, "t.tengo:7:1: txlab.senders: senders: ecn \"maybe\" is not an ECN codepoint: UDP senders take not-ect, ect1, ect0 or ce, per flow group (groups: [{ecn: \"ect0\"}])", "ecn: true or false is tcp_stream's"},
		{"ecn codepoint on a udp group", "txlab := import(\"txlab\")\ntxlab.senders([{kind: \"udp_rate\"}, {kind: \"udp_stream\", ecn: \"ect1\"}])\n", Options{}, "t.tengo:2:1: txlab.senders: senders[1]: ecn \"ect1\": UDP senders take a codepoint per flow group, groups: [{ecn: \"ect1\"}]", ""},
		{"ecn bool on a udp group", "txlab := import(\"txlab\")\ntxlab.senders([{kind: \"tcp_stream\", flows: 1}, {count: 8, ecn: true}])\n", Options{}, "t.tengo:2:1: txlab.senders: senders[1]: ecn: true is tcp_stream's (net.ipv4.tcp_ecn); UDP senders set a codepoint", ""},
		{"ecn word on the only senders", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"udp_rate\", ecn: \"maybe\"})\n", Options{}, "t.tengo:2:1: txlab.senders: senders ecn \"maybe\" is not an ECN codepoint: UDP senders take not-ect, ect1, ect0 or ce", ""},
		{"ecn word on tcp", "txlab := import(\"txlab\")\ntxlab.senders({kind: \"tcp_stream\", ecn: \"maybe\"})\n", Options{}, "t.tengo:2:1: txlab.senders: senders ecn: want true or false, got string", ""},
		// The default placement's count vs the CPUs names the count.
		{"more senders than cpus", "txlab := import(\"txlab\")\ntxlab.host({sockets: 1, cores: 2, smt: 1})\ntxlab.senders({kind: \"udp_rate\", count: 8})\n", Options{}, "t.tengo: --senders (senders.count): 8 senders but only 2 CPUs, and udp_rate's default placement (spread) pins one sender per CPU: give at most 2, or --placement unpinned to let them share CPUs", ""},
		{"invalid spec", "txlab := import(\"txlab\")\ntxlab.duration(\"2ms\")\ntxlab.warmup(\"3ms\")\n", Options{}, "t.tengo: warmup 3ms must be shorter than duration 2ms (set --warmup, or warmup in the script, below it)", ""},
		{"empty sender groups", "txlab := import(\"txlab\")\ntxlab.senders([])\n", Options{}, "t.tengo:2:1: txlab.senders: senders: an empty array; give one map per sender group", ""},
		{"two tcp groups", "txlab := import(\"txlab\")\ntxlab.senders([{kind: \"tcp_stream\", flows: 1}, {kind: \"tcp_stream\", flows: 2}])\n", Options{}, "t.tengo:2:1: txlab.senders: senders: 2 tcp_stream groups; one holds every TCP connection and probe of a run", ""},
		{"tcp key in a udp group", "txlab := import(\"txlab\")\ntxlab.senders([{kind: \"tcp_stream\", flows: 1}, {count: 8, ping: \"1s\"}])\n", Options{}, "t.tengo:2:1: txlab.senders: senders[1]: \"ping\" is tcp_stream's; a UDP group beside the first has none", ""},
		{"bad key in a group", "txlab := import(\"txlab\")\ntxlab.senders([{kind: \"tcp_stream\", flows: 1}, {kind: \"udp_rate\", rate: -1}])\n", Options{}, "t.tengo:2:1: txlab.senders: senders[1]: senders rate: ", ""},
		{"forward with a group", small + "txlab.senders([{kind: \"forward\", flows: 4, rate: \"1M\"}, {count: 8}])\n", Options{}, "t.tengo: senders group 2 (udp_stream): forward's traffic comes from the wire", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eval(t, tt.src, tt.opts)
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("error is %T, not *script.Error: %v", err, err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.HasPrefix(msg, tt.want) {
				t.Errorf("error\n  %s\nwant prefix\n  %s", msg, tt.want)
			}
			if !strings.Contains(msg, tt.has) {
				t.Errorf("error\n  %s\nwant it to contain %q", msg, tt.has)
			}
		})
	}
}

func TestQdiscWords(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"mq   fq", "mq fq"},
		{map[string]any{"kind": "fq_codel", "target": "5ms", "ecn": true}, "fq_codel ecn target 5ms"},
		{map[string]any{"kind": "fq_codel", "ecn": false, "limit": int64(1024), "interval": "100ms"}, "fq_codel noecn interval 100ms limit 1024"},
		{map[string]any{"kind": "mq", "child": map[string]any{"kind": "fq", "quantum": int64(3028)}}, "mq fq quantum 3028"},
		{map[string]any{"kind": "mq", "child": "pfifo limit 10"}, "mq pfifo limit 10"},
		{map[string]any{"kind": "mq"}, "mq"},
		{map[string]any{"kind": "cake", "rate": "2.5Gbit", "overhead": -4.5}, "cake overhead -4.5 rate 2.5Gbit"},
		{[]any{"pfifo", "limit", int64(5)}, "pfifo limit 5"},
		{"handle 1: root fq_codel", "handle 1: root fq_codel"},
		{map[string]any{"kind": "fq_codel", "handle": "1:", "limit": int64(5)}, "handle 1: fq_codel limit 5"},
		{map[string]any{"kind": "mq", "handle": "2:", "parent": "root", "child": "pfifo"}, "handle 2: parent root mq pfifo"},
	}
	for _, tt := range tests {
		w, err := qdiscWords("qdisc", tt.in)
		if err != nil {
			t.Errorf("%v: %v", tt.in, err)
			continue
		}
		if got := strings.Join(w, " "); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, bad := range []any{"", map[string]any{"target": "5ms"}, map[string]any{"kind": "mq", "limit": int64(3)},
		map[string]any{"kind": "fq", "weights": []any{int64(1)}}, int64(3), []any{}} {
		if _, err := qdiscWords("qdisc", bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestSpecFromScript(t *testing.T) {
	src := `txlab := import("txlab")
txlab.host({sockets: 2, cores: 4, smt: 2})
txlab.device({driver: "veth", queues: 1, rate: "25Gbit", opts: "napi on"})
txlab.qdisc({kind: "pfifo", limit: 100})
txlab.senders({kind: "udp_rate", count: 3, flows: 7, rate: "630K", size: 64, dscp: 10, priority: 2, placement: "0-2"})
txlab.profile("net-next")
txlab.set("fast_path", false)
txlab.set({dev_tx_weight: 32, xmit: "llist"})
txlab.cost({doorbell: 200})
txlab.duration("7ms")
txlab.warmup("1500us")
txlab.interval(500000)
txlab.seed(42)
txlab.name("one")
`
	pl, err := eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Specs) != 1 {
		t.Fatalf("%d specs", len(pl.Specs))
	}
	s := pl.Specs[0]
	want := BaseSpec()
	want.Name, want.Profile = "one", "net-next"
	want.Sockets, want.Cores, want.Threads = 2, 4, 2
	want.Driver, want.Queues, want.RateBps, want.DriverArgs = "veth", 1, 25_000_000_000, []string{"napi", "on"}
	want.Qdisc = "pfifo limit 100"
	want.Workload.Kind, want.Workload.Senders, want.Workload.Flows, want.Workload.Rate = "udp_rate", 3, 7, 630000
	want.Workload.PacketSize, want.Workload.DSCP, want.Workload.Priority, want.Workload.Placement = 64, 10, 2, "0-2"
	want.Set = []string{"fast_path=off", "dev_tx_weight=32", "xmit=llist", "cost.doorbell=200"}
	want.Duration, want.Warmup, want.Interval, want.Seed = 7*sim.Millisecond, 1500*sim.Microsecond, 500*sim.Microsecond, 42
	// The senders keys some workloads do not use, in the map's sorted
	// order (count, flows, placement, rate, size).
	for _, f := range []string{"senders", "flows", "placement", "offered-rate", "size"} {
		want.Give(f, "script")
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("spec\n%+v\nwant\n%+v", s, want)
	}
	if err := pl.Check(); err != nil {
		t.Errorf("check: %v", err)
	}
}

func TestVariants(t *testing.T) {
	src := small + `txlab.senders({count: 4})
txlab.profile("6.18")
txlab.variant("base", {})
txlab.variants([{profile: "6.19-rc1"}, {name: "fp", profile: "net-next", set: {fast_path: false}, qdisc: "mq pfifo limit 50"}])
txlab.compare("bql", [true, false])
txlab.compare("cost.doorbell", [100])
`
	pl, err := eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range pl.Specs {
		got = append(got, s.Name+"|"+s.Profile+"|"+strings.Join(s.Set, ",")+"|"+s.Qdisc)
	}
	want := []string{"base|6.18||mq pfifo", "6.19-rc1|6.19-rc1||mq pfifo", "fp|net-next|fast_path=off|mq pfifo limit 50",
		"bql=on|6.18|bql=on|mq pfifo", "bql=off|6.18|bql=off|mq pfifo", "cost.doorbell=100|6.18|cost.doorbell=100|mq pfifo"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("variants\n%q\nwant\n%q", got, want)
	}
	if err := pl.Check(); err != nil {
		t.Error(err)
	}
}

func TestQuickAndParams(t *testing.T) {
	src := small + `txlab.senders({count: txlab.param("senders", 2)})
txlab.duration(txlab.quick() ? "1ms" : "9ms")
txlab.name(txlab.param("label", "x") + (txlab.param("flag", false) ? "!" : ""))
`
	pl, err := eval(t, src, Options{Quick: true, Params: map[string]string{"senders": "3", "label": "hi", "flag": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	s := pl.Specs[0]
	if s.Workload.Senders != 3 || s.Duration != sim.Millisecond || s.Name != "hi!" {
		t.Errorf("got senders %d duration %d name %q", s.Workload.Senders, s.Duration, s.Name)
	}
	pl, err = eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := pl.Specs[0]; s.Workload.Senders != 2 || s.Duration != 9*sim.Millisecond || s.Name != "x" {
		t.Errorf("defaults: got senders %d duration %d name %q", s.Workload.Senders, s.Duration, s.Name)
	}
}

// txlab.senders([...]): the tcp_stream map is the first group wherever
// it stands, the UDP maps run beside it (each from the defaults); a map
// given later (a variant) changes the first group only.
func TestSenderGroups(t *testing.T) {
	src := small + `txlab.path({rtt: "1ms"})
txlab.senders([{kind: "udp_stream", count: 240, size: 64}, {kind: "tcp_stream", flows: 8, ping: "10ms"}, {kind: "udp_rate", count: 2, rate: "100K", flows: 4}])
`
	pl, err := eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := pl.Specs[0]
	if w := s.Workload; w.Kind != "tcp_stream" || w.Flows != 8 || s.Ping != 10*sim.Millisecond {
		t.Errorf("first group %+v, ping %v", w, s.Ping)
	}
	if len(s.Also) != 2 || s.Also[0].Kind != "udp_stream" || s.Also[0].Senders != 240 || s.Also[0].PacketSize != 64 ||
		s.Also[1].Kind != "udp_rate" || s.Also[1].Rate != 100000 || s.Also[1].Flows != 4 || s.Also[1].PacketSize != 120 {
		t.Errorf("groups beside it: %+v", s.Also)
	}
	pl, err = eval(t, src+`txlab.variant("more", {senders: {flows: 16}})`+"\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := pl.Specs[0]; m.Workload.Flows != 16 || len(m.Also) != 2 {
		t.Errorf("variant: first group %d flows, %d groups beside", m.Workload.Flows, len(m.Also))
	}
}

// TestCompileOnceRunMany evaluates one Program repeatedly: each Eval
// starts from the base, nothing leaks from the previous one.
func TestCompileOnceRunMany(t *testing.T) {
	p, err := Load("t.tengo", []byte(small+"txlab.set(\"bql\", false)\ntxlab.at(\"1ms\", {phase: \"x\"})\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		pl, err := p.Eval()
		if err != nil {
			t.Fatal(err)
		}
		if s := pl.Specs[0]; len(s.Set) != 1 || len(s.Actions) != 1 {
			t.Fatalf("eval %d: set %v, %d actions", i, s.Set, len(s.Actions))
		}
	}
}

func runJSON(t *testing.T, s run.Spec) []byte {
	t.Helper()
	rep, err := run.Run(s, nil)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	rep.StripWall()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestActionsAndHooks(t *testing.T) {
	src := `txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 2, rate: "100Gbit"})
txlab.qdisc("mq pfifo")
txlab.senders({kind: "udp_rate", count: 2, flows: 4, rate: "200K", size: 64})
txlab.duration("4ms")
txlab.warmup(0)
txlab.interval("1ms")
txlab.at(0, {phase: "slow"})
txlab.at("1ms", {phase: "fast", rate: "800K"})
txlab.at("2ms", {phase: "off", stop: "all"})
txlab.every("1ms", txlab.hook(` + "`" + `
state.n = is_undefined(state.n) ? 1 : state.n + 1
if live.now_ns == 3000000 {
	if live.running != 0 || live.rate != 800000.0 { act = {log: "bad"} }
	act = {phase: "hooked", start: [0, 1], rate: 400000}
}
` + "`" + `), {from: "1ms", until: "3500us"})
`
	var log bytes.Buffer
	pl, err := eval(t, src, Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := run.Run(pl.Specs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Counters
	near := func(name string, got uint64, want float64) {
		if float64(got) < 0.9*want || float64(got) > 1.1*want {
			t.Errorf("%s = %d, want about %.0f", name, got, want)
		}
	}
	near("phase.slow.offered_packets", c["phase.slow.offered_packets"], 200)
	near("phase.fast.offered_packets", c["phase.fast.offered_packets"], 800)
	if n := c["phase.off.offered_packets"]; n > 2 {
		t.Errorf("senders stopped at 2ms still offered %d packets", n)
	}
	near("phase.hooked.offered_packets", c["phase.hooked.offered_packets"], 400)
	if c["phase.hooked.start_ns"] != 3_000_000 || c["phase.hooked.end_ns"] != 4_000_000 {
		t.Errorf("hooked phase %d..%d", c["phase.hooked.start_ns"], c["phase.hooked.end_ns"])
	}
	if strings.Contains(log.String(), "bad") {
		t.Errorf("hook saw wrong live stats: %s", log.String())
	}
	// Same script, same seed: byte-identical JSON, twice.
	a, b := runJSON(t, pl.Specs[0]), runJSON(t, pl.Specs[0])
	if !bytes.Equal(a, b) {
		t.Error("the same script gave different JSON")
	}
}

func TestHookRuntimeErrorPointsIntoTheScript(t *testing.T) {
	src := small + "txlab.senders({count: 2})\ntxlab.every(\"1ms\", txlab.hook(`\nx := live.tx_pps\ny := x()\n`))\n"
	pl, err := eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Run(pl.Specs[0], nil)
	if err == nil {
		t.Fatal("no error")
	}
	// The hook's text starts right after the backquote on line 8; its
	// line 3 is the script's line 10.
	if !strings.Contains(err.Error(), "t.tengo:10:6: in hook: not callable: float") || !strings.Contains(err.Error(), "at 1ms") {
		t.Errorf("error %q", err)
	}
}

func TestHookBounds(t *testing.T) {
	for _, tt := range []struct {
		body string
		opts Options
		want string
	}{
		{"for {}", Options{HookTimeout: 50 * time.Millisecond}, "at 1ms {hook}: t.tengo:8:36: in hook: stopped after 50ms of wall time (an endless loop?); raise the bound with --hook-timeout"},
		// Where in the loop the bound stops it varies; the line does not.
		{"x := 0\nfor { x = 1 }", Options{HookTimeout: 50 * time.Millisecond}, "at 1ms {hook}: t.tengo:9:* in hook: stopped after 50ms of wall time"},
		{"x := 1 / (live.runs - live.runs)", Options{}, "at 1ms {hook}: t.tengo:8:41: in hook: runtime error: integer divide by zero"},
		{"a := []\nfor { a = append(a, [1]) }", Options{HookMaxAllocs: 1000}, "allocation limit exceeded (1000 objects); raise the bound with --hook-max-allocs"},
		{"state = 3", Options{}, "state must stay a map"},
		{"act = {hook: 1}", Options{}, "act: action: unknown option \"hook\""},
		{"act = {stop: 9}", Options{}, "sender 9 out of range"},
	} {
		src := small + "txlab.senders({count: 2})\ntxlab.at(\"1ms\", {hook: txlab.hook(`" + tt.body + "`)})\n"
		pl, err := eval(t, src, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run.Run(pl.Specs[0], nil)
		re := regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(tt.want), `\*`, `[0-9]+:`))
		if err == nil || !re.MatchString(err.Error()) {
			t.Errorf("%q: error %v, want %q", tt.body, err, tt.want)
		}
	}
}

func TestSandboxModules(t *testing.T) {
	src := small + `math := import("math")
text := import("text")
json := import("json")
fmt := import("fmt")
enum := import("enum")
base64 := import("base64")
hex := import("hex")
n := int(math.floor(2.7)) + len(text.split("a b", " ")) + len(json.encode([1])) + len(base64.encode(bytes("x"))) + len(hex.encode(bytes("x")))
txlab.senders({size: n})
txlab.name(fmt.sprintf("%d-%v", n, enum.all([1], func(k, v) { return v > 0 })))
`
	pl, err := eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := pl.Specs[0]; s.Workload.PacketSize != 13 || s.Name != "13-true" {
		t.Errorf("size %d name %q", s.Workload.PacketSize, s.Name)
	}
}

func TestDescribe(t *testing.T) {
	for src, want := range map[string]string{
		"// E1: the big host\n// more\nx := 1": "E1: the big host",
		"\n\n  //   spaced  \n":                "spaced",
		"x := 1 // not a description":          "",
		"":                                     "",
	} {
		if got := Describe([]byte(src)); got != want {
			t.Errorf("Describe(%q) = %q, want %q", src, got, want)
		}
	}
	pl, err := eval(t, "// first line\ntxlab := import(\"txlab\")\ntxlab.describe(\"other\\nlines\")\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Description != "other" {
		t.Errorf("description %q", pl.Description)
	}
}

// BenchmarkHookRun is one run of a small hook with live stats injected
// (the docs promise tens of microseconds).
func BenchmarkHookRun(b *testing.B) {
	p, err := Load("b.tengo", []byte("x := 1"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	h, err := p.newHook("state.n = is_undefined(state.n) ? 1 : state.n + 1\nif live.tx_pps > 1000.0 { act = {log: \"x\"} }")
	if err != nil {
		b.Fatal(err)
	}
	st := &hookState{state: &tengo.Map{Value: map[string]tengo.Object{}}}
	cur := run.LiveStats{Now: 1000, TxPackets: 5, Drops: map[string]uint64{}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		globals := newGlobals(h.nglobals, len(hookGlobals))
		globals[0], globals[1], globals[2] = liveObject(cur, st.prev, 0), st.state, tengo.UndefinedValue
		if err := runVM("b.tengo", h.bytecode, globals, p.opts.valueBound(), DefaultHookMaxAllocs, DefaultHookTimeout, "", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMapOrderIsFixed: a map is walked in key order wherever a script
// walks it (Go's map order changes from run to run), so the same script
// gives the same plan.
func TestMapOrderIsFixed(t *testing.T) {
	src := `txlab := import("txlab")
enum := import("enum")
json := import("json")
fmt := import("fmt")
m := {}
for c in ["j", "i", "h", "g", "f", "e", "d", "c", "b", "a"] { m[c] = c }
s := ""
for k, v in m { s += k }
f := func() { r := ""; for k, _ in immutable(m) { r += k }; return r }
e := ""
enum.each(m, func(k, v) { e += v })
txlab.name(s + "|" + f() + "|" + e + "|" + string(json.encode(m)) + "|" + fmt.sprintf("%v", {b: 1, a: [{d: 2, c: 3}]}) + "|" + string({y: 1, x: 2}) + "|" + format("%v", {q: 1, p: 2}))
`
	want := `abcdefghij|abcdefghij|abcdefghij|{"a":"a","b":"b","c":"c","d":"d","e":"e","f":"f","g":"g","h":"h","i":"i","j":"j"}|{a: [{c: 3, d: 2}], b: 1}|{x: 2, y: 1}|{p: 2, q: 1}`
	p, err := Load("t.tengo", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		pl, err := p.Eval()
		if err != nil {
			t.Fatal(err)
		}
		if got := pl.Specs[0].Name; got != want {
			t.Fatalf("eval %d: name\n  %s\nwant\n  %s", i, got, want)
		}
	}
}

// A hook's loops are rewritten too: it walks its state in key order.
func TestHookMapOrderIsFixed(t *testing.T) {
	src := small + "txlab.senders({count: 2})\ntxlab.at(\"1ms\", {hook: txlab.hook(`" +
		`m := {z: 1, y: 2, x: 3, w: 4, v: 5, u: 6}
s := ""
for k, _ in m { s += k }
act = {phase: s}
` + "`)})\n"
	pl, err := eval(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		rep, err := run.Run(pl.Specs[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := rep.Counters["phase.uvwxyz.start_ns"]; !ok {
			t.Fatalf("run %d: no phase uvwxyz in %v", i, rep.Counters)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ok := dir + "/ok.tengo"
	big := dir + "/big.tengo"
	if err := os.WriteFile(ok, []byte("x := 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte("//\n"), MaxSourceBytes/3+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if src, err := ReadFile(ok); err != nil || string(src) != "x := 1\n" {
		t.Errorf("ReadFile(ok) = %q, %v", src, err)
	}
	for _, tt := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: script is larger than the 1048576 bytes allowed"},
		{big, big + ": script is larger than the 1048576 bytes allowed"},
		{dir, "is a directory"},
		{dir + "/none.tengo", "no such file"},
	} {
		_, err := ReadFile(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Count(err.Error(), tt.path) != 1 {
			t.Errorf("ReadFile(%s) = %v, want %q (naming the file once)", tt.path, err, tt.want)
		}
	}
	if _, err := ReadFile(dir + "/none.tengo"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v is not fs.ErrNotExist", err)
	}
}

// One function decides what can be changed: `txlab check` tries a
// script's qdisc changes on the dry-built host with the same call the
// run makes, so the two refuse the same changes with the same words.
func TestCheckAgreesWithRun(t *testing.T) {
	cases := []struct {
		qdisc, change, want string // want: "" if both accept
	}{
		{"mq pfifo", `{qdisc: "limit 5"}`, ""},
		{"mq fq_codel", `{qdisc: "limit 100 target 2ms"}`, ""},
		{"mq fq_codel", `{qdisc: "flows 64"}`, "flows can only be set when the qdisc is created"},
		{"mq sfq", `{qdisc: "limit 64"}`, "Change operation not supported by specified qdisc"},
		{"mq pfifo_fast", `{qdisc: "limit 5"}`, "does not support option parsing"},
		{"fq", `{qdisc: "buckets 4096 limit 500"}`, ""},
		{"fq", `{qdisc: "buckets 1"}`, "buckets 2^0"},
		{"mq cake", `{qdisc: {bandwidth: "10mbit", diffserv4: true}}`, ""},
		{"cake_mq bandwidth 1gbit", `{qdisc: {bandwidth: "10mbit"}}`, ""},
		{"cake_mq", `{qdisc: {bandwidth: "10mbit"}, queue: 1}`, "can't reconfigure cake_mq sub-qdiscs"},
		{"mq pfifo", `{qdisc: "limit 5"}` + ")\ntxlab.at(\"1ms\", {qdisc: \"limit x\"}", `Illegal value for "limit"`},
	}
	for _, c := range cases {
		src := strings.Replace(small, `txlab.qdisc("mq pfifo")`, `txlab.qdisc("`+c.qdisc+`")`, 1) +
			"txlab.senders({count: 2})\ntxlab.at(\"500us\", " + c.change + ")\n"
		pl, err := eval(t, src, Options{})
		if err != nil {
			t.Fatalf("%s %s: %v", c.qdisc, c.change, err)
		}
		checkErr := pl.Check()
		_, runErr := run.Run(pl.Specs[0], nil)
		for what, err := range map[string]error{"check": checkErr, "run": runErr} {
			if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%s %s: %s: %v, want %q", c.qdisc, c.change, what, err, c.want)
			}
		}
	}
}

// A key a plan's workloads do not use is refused by Check, once the
// variants are in: not while a later call or a variant may still make
// it used, nor when a group beside the first uses it.
func TestCheckRefusesUnusedKeys(t *testing.T) {
	head := "txlab := import(\"txlab\")\ntxlab.host({sockets: 1, cores: 8, smt: 1})\ntxlab.device({queues: 4})\ntxlab.duration(\"3ms\")\ntxlab.warmup(\"1ms\")\n"
	for _, c := range []struct{ src, want string }{
		{`txlab.senders({kind: "udp_stream", count: 4, rate: "5M"})`,
			"t.tengo: the script's senders.rate (--offered-rate) does nothing for the udp_stream workload: it is for udp_rate and forward"},
		{`txlab.senders({kind: "forward", flows: 4, placement: "0-3"})`, "the script's senders.placement (--placement) does nothing for the forward workload"},
		{`txlab.device({rx_queues: 2})`, "the script's device.rx_queues (--rx-queues) does nothing for the udp_stream workload: it is for forward"},
		{`txlab.path({rtt: "5ms"})`, "the script's path.rtt (--rtt) does nothing for the udp_stream workload: it is for tcp_stream"},
		// Used after all: by a later call, a variant, or a group beside.
		{"txlab.senders({rate: \"2M\", flows: 8})\ntxlab.senders({kind: \"udp_rate\", count: 4})", ""},
		{"txlab.senders({kind: \"udp_stream\", count: 4, rate: \"2M\"})\ntxlab.variants([{name: \"a\"}, {name: \"b\", senders: {kind: \"udp_rate\"}}])", ""},
		{"txlab.senders({kind: \"udp_stream\", count: 4})\ntxlab.senders({kind: \"tcp_stream\", flows: 2})", ""},
	} {
		pl, err := eval(t, head+c.src+"\n", Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		err = pl.Check()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check: %v, want %q", c.src, err, c.want)
		}
	}
}

// A later txlab.senders naming another kind adds a group as the array
// form does (a tcp_stream group first, UDP groups beside it); without a
// kind, or with the first group's, it changes the first group's keys;
// forward runs alone.
func TestSendersSecondGroup(t *testing.T) {
	both := func(src string) *Plan {
		t.Helper()
		pl, err := eval(t, "txlab := import(\"txlab\")\n"+src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	a := both("txlab.senders({kind: \"udp_stream\", count: 240})\ntxlab.senders({kind: \"tcp_stream\", flows: 8})\n")
	b := both("txlab.senders([{kind: \"udp_stream\", count: 240}, {kind: \"tcp_stream\", flows: 8}])\n")
	if !reflect.DeepEqual(a.Specs[0].Workload, b.Specs[0].Workload) || !reflect.DeepEqual(a.Specs[0].Also, b.Specs[0].Also) || len(a.Specs[0].Also) != 1 {
		t.Errorf("two calls %+v %+v, the array %+v %+v", a.Specs[0].Workload, a.Specs[0].Also, b.Specs[0].Workload, b.Specs[0].Also)
	}
	c := both("txlab.senders({kind: \"udp_rate\", count: 4})\ntxlab.senders({count: 8})\ntxlab.senders({kind: \"udp_rate\", size: 64})\ntxlab.senders({kind: \"udp_stream\", count: 2})\n")
	if w := c.Specs[0].Workload; w.Kind != "udp_rate" || w.Senders != 8 || w.PacketSize != 64 || len(c.Specs[0].Also) != 1 || c.Specs[0].Also[0].Senders != 2 {
		t.Errorf("changed then added: %+v, also %+v", w, c.Specs[0].Also)
	}
	if _, err := eval(t, "txlab := import(\"txlab\")\ntxlab.senders({kind: \"forward\"})\ntxlab.senders({kind: \"udp_stream\"})\n", Options{}); err == nil ||
		err.Error() != "t.tengo:3:1: txlab.senders: a group of udp_stream senders beside forward ones: forward runs alone" {
		t.Errorf("beside forward: %v", err)
	}
}
