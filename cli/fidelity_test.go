package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, want := range []string{"unpinned: llist / busylock", "1.81x (16 -> 29 Mpps)", "perf lock after, unpinned", "on CPUs 0-3", "of 24 figures hold"} {
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
		{[]string{"fidelity"}, "want an experiment and a report"},
		{[]string{"fidelity", "e9", rep}, `unknown experiment "e9" (known: e1)`},
		{[]string{"fidelity", "e1", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"fidelity", "e1", script}, "not a txlab JSON report"},
		{[]string{"fidelity", "e1", one}, "E1 needs the variants 6.18 unpinned, 6.18 pinned, 6.19-rc1 pinned"},
	} {
		_, err := txlab(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
}
