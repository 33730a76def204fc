package main

import (
	"encoding/json"
	"regexp"
	"testing"
)

var wallLine = regexp.MustCompile(`(?m)^\s*"sim_wall_ns": \d+,?\n`)

// withoutWall drops the one non-deterministic key's lines, leaving the
// rest of a JSON report byte for byte.
func withoutWall(s string) string { return wallLine.ReplaceAllString(s, "") }

// `txlab run -j N` gives the same bytes for any N, in process and with
// the qdiscs and drivers out of process (--isolate), and the scripts'
// log lines come out in variant order; --isolate gives the bytes of
// the run in process. Run with -race: concurrent runs share no mutable
// state (registries, tengo's bounds, plugin processes).
func TestRunJobsByteIdentical(t *testing.T) {
	for _, script := range []string{"e2", "phases"} {
		var inProcess string
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
			if !iso {
				inProcess = withoutWall(out1)
			} else if withoutWall(out1) != inProcess {
				t.Errorf("%s: --isolate gave other bytes than in process", script)
			}
		}
	}
}

// E5's twelve cake_mq and cake runs side by side give the bytes they
// give one by one: each run's cake_mq children share their own root's
// rate, never another run's (the groups are named per process).
func TestE5JobsByteIdentical(t *testing.T) {
	args := []string{"run", "../scripts/e5.tengo", "--quick", "--no-progress", "--format", "json"}
	out1, _, err := txlabSplit(t, append(args, "-j", "1")...)
	if err != nil {
		t.Fatal(err)
	}
	out4, _, err := txlabSplit(t, append(args, "-j", "4")...)
	if err != nil {
		t.Fatal(err)
	}
	if withoutWall(out1) != withoutWall(out4) {
		t.Error("e5: -j 4 gave other bytes than -j 1")
	}
}

// sameBytesIsolated runs txlab with args in process and with --isolate,
// checks the two reports are the same bytes (wall times aside), and
// returns the in-process one.
func sameBytesIsolated(t *testing.T, what string, args []string) string {
	t.Helper()
	in, _, err := txlabSplit(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := txlabSplit(t, append(args, "--isolate")...)
	if err != nil {
		t.Fatal(err)
	}
	if withoutWall(in) != withoutWall(out) {
		t.Errorf("%s: --isolate gave other bytes than in process", what)
	}
	return in
}

// TCP through qdiscs out of process gives the same bytes: cake's
// split-gso (the host segments for it) and CE marks coming back across
// the boundary, with retransmissions and probes.
func TestTCPIsolateByteIdentical(t *testing.T) {
	args := []string{"run", "../scripts/tcp_nup.tengo", "--quick", "--no-progress", "--format", "json",
		"--param", "qdisc=cake bandwidth 50Mbit", "--param", "ecn=true", "--param", "flows=3"}
	in := sameBytesIsolated(t, "tcp_nup through cake", args)
	var rep struct{ Counters map[string]uint64 }
	if err := json.Unmarshal([]byte(in), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Counters["gso_segments"] == 0 || rep.Counters["tcp_ce_marked_segs"] == 0 {
		t.Errorf("counters %v: want split GSO skbs and CE marks", rep.Counters)
	}
}

// Loss probes over a lossy path (10% each way) through cake: the
// probes' skbs, new data or a retransmission, give the same bytes in
// and out of process.
func TestTCPLossProbesIsolateByteIdentical(t *testing.T) {
	args := []string{"run", "../scripts/tcp_nup.tengo", "--quick", "--no-progress", "--format", "json",
		"--param", "qdisc=cake bandwidth 50Mbit", "--param", "flows=3", "--path-loss", "10%"}
	in := sameBytesIsolated(t, "tcp_nup over a lossy path", args)
	var rep struct {
		Counters     map[string]uint64
		AccountingOK bool `json:"accounting_ok"`
	}
	if err := json.Unmarshal([]byte(in), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Counters["tcp_loss_probes"] == 0 || !rep.AccountingOK {
		t.Errorf("counters %v, accounting ok %v: want loss probes, balanced", rep.Counters, rep.AccountingOK)
	}
}

// tcp_stream through htb with flow groups, u32 and flower filters and a
// cake leaf that splits GSO skbs and CE-marks them: the same bytes in
// and out of process (the packets' TCP flags, the leaves' segment
// counts and the CE marks cross the boundary).
func TestTCPClassfulIsolateByteIdentical(t *testing.T) {
	args := []string{"run", "--no-progress", "--format", "json", "--profile", "6.18",
		"--sockets", "1", "--cores", "4", "--smt", "1", "--queues", "1", "--rate", "10Gbit", "--qdisc", "pfifo",
		"--workload", "tcp_stream", "--flows", "4", "--tcp-ecn", "on", "--groups", "dport=5001 dport=5002",
		"--ping", "50ms", "--start", "200ms", "--duration", "2s", "--warmup", "1s", "--tc-file", "testdata/tcp_htb.tc"}
	in := sameBytesIsolated(t, "tcp_stream through htb and a cake leaf", args)
	var rep struct {
		Counters map[string]uint64
		Classes  []struct {
			ClassID     string `json:"classid"`
			SentPackets uint64 `json:"sent_packets"`
		}
	}
	if err := json.Unmarshal([]byte(in), &rep); err != nil {
		t.Fatal(err)
	}
	sent := map[string]uint64{}
	for _, c := range rep.Classes {
		sent[c.ClassID] = c.SentPackets
	}
	if rep.Counters["gso_segments"] == 0 || rep.Counters["tcp_ce_marked_segs"] == 0 || sent["1:10"] == 0 || sent["1:20"] == 0 || sent["1:30"] == 0 {
		t.Errorf("counters %v, classes %v: want split GSO skbs, CE marks and every class used", rep.Counters, sent)
	}
}
