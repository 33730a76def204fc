package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A script whose timed hook loops for ever: --hook-timeout stops it,
// the run ends with one line naming the hook's bound, exit 1, and the
// partial report's accounting balances.
func TestHookLoopAccounting(t *testing.T) {
	script := writeScript(t, hookAt1ms("for {}"))
	out := filepath.Join(t.TempDir(), "r.json")
	stderr, code := exitOf(t, "run", "--hook-timeout", "50ms", "--format", "json", "-o", out, "--no-progress", script)
	if code != 1 || !strings.Contains(stderr, "stopped after 50ms of wall time (an endless loop?); raise the bound with --hook-timeout") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Offered    uint64 `json:"offered_packets"`
		Tx         uint64 `json:"tx_packets"`
		Dropped    uint64 `json:"dropped_packets"`
		InFlight   uint64 `json:"in_flight_packets"`
		Accounting bool   `json:"accounting_ok"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Accounting || rep.Offered == 0 || rep.Offered != rep.Tx+rep.Dropped+rep.InFlight || !strings.Contains(rep.Error, "--hook-timeout") {
		t.Fatalf("partial report: %+v", rep)
	}
}

// hookAt1ms is a small host's script whose hook src runs at 1 ms of a
// 3 ms run.
func hookAt1ms(src string) string {
	return `txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 2})
txlab.senders({kind: "udp_stream", count: 4, size: 120})
txlab.duration("3ms")
txlab.warmup("500us")
txlab.at("1ms", {hook: txlab.hook(` + strconv.Quote(src) + `)})
`
}
