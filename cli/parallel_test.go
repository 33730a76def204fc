package main

import (
	"regexp"
	"testing"
)

var wallLine = regexp.MustCompile(`(?m)^\s*"sim_wall_ns": \d+,?\n`)

// withoutWall drops the one non-deterministic key's lines, leaving the
// rest of a JSON report byte for byte.
func withoutWall(s string) string { return wallLine.ReplaceAllString(s, "") }

// `txlab run -j N` gives the same bytes for any N, in process and with
// the qdiscs and drivers out of process (--isolate), and the scripts'
// log lines come out in variant order. Run with -race: concurrent runs
// share no mutable state (registries, tengo's bounds, plugin processes).
func TestRunJobsByteIdentical(t *testing.T) {
	for _, script := range []string{"e2", "phases"} {
		for _, iso := range []bool{false, true} {
			args := []string{"run", "../scripts/" + script + ".tengo", "--quick", "--no-progress", "--format", "json"}
			if iso {
				args = append(args, "--isolate")
			}
			out1, log1, err := txlabSplit(t, append(args, "-j", "1")...)
			if err != nil {
				t.Fatalf("%s -j 1: %v", script, err)
			}
			out4, log4, err := txlabSplit(t, append(args, "-j", "4")...)
			if err != nil {
				t.Fatalf("%s -j 4: %v", script, err)
			}
			if withoutWall(out1) != withoutWall(out4) {
				t.Errorf("%s (isolate %v): -j 4 gave other bytes than -j 1", script, iso)
			}
			if log1 != log4 {
				t.Errorf("%s (isolate %v): stderr differs:\n-j 1:\n%s\n-j 4:\n%s", script, iso, log1, log4)
			}
		}
	}
}
