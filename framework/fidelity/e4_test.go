package fidelity

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/report"
)

// e4Report is a variant with its rate, bond0's restarts and skbs, HTB's
// backlog and the busylock's wait.
func e4Report(name string, pps float64, restarts, pkts uint64, backlog int, busyNs int64) *report.Report {
	return &report.Report{Name: name, TxPps: pps,
		Locks: []report.Lock{{Name: "__dev_xmit_skb (busylock)", AvgWaitNs: busyNs, Acquired: pkts, HoldNs: int64(pkts) * 800}},
		Devices: []report.DeviceSection{{Name: "bond0", Kind: "bonding", QdiscRestarts: restarts, RestartPackets: pkts,
			Qdisc: []report.Qdisc{{Kind: "htb", BacklogPackets: backlog}}}, {Name: "eth0", Kind: "i40e", Master: "bond0"}}}
}

func TestE4Rows(t *testing.T) {
	cases := []struct {
		name  string
		reps  []*report.Report
		holds map[string]bool
		has   []string
	}{
		{"the seed's own figures", []*report.Report{
			e4Report(E4NumaBefore, 610000, 1000, 1000, 1000, 20000), e4Report(E4NumaAfter, 1110000, 200, 1800, 1000, 9000),
			e4Report(E4NonumaBefore, 1380000, 1000, 1000, 1000, 8000), e4Report(E4NonumaAfter, 1930000, 150, 1350, 1000, 5000)},
			map[string]bool{"E4.1": true, "E4.2": true, "E4.3": true, "E4.4": true, "E4.5": true},
			[]string{"1.82x (0.61 -> 1.11 Mpps)", "round trips per packet 1.00 -> 0.11 (bulk 1.00 -> 9.00 skbs)", "+82% with, +40% without",
				"an enqueue's turn (busylock held) 0.80 us vs 1.64 us a packet sent -> 0.80 us vs 0.90 us a packet sent",
				"across sockets it stays so after the change (9.00 skbs a restart)", "(processor default: 110 ns a line within the socket, 300 across)"}},
		{"no gain where the seed has one, and more without NUMA", []*report.Report{
			e4Report(E4NumaBefore, 400000, 1000, 1000, 0, 50000), e4Report(E4NumaAfter, 410000, 990, 1000, 0, 50000),
			e4Report(E4NonumaBefore, 660000, 1000, 1000, 1000, 25000), e4Report(E4NonumaAfter, 760000, 500, 1000, 1, 25000)},
			map[string]bool{"E4.1": false, "E4.2": false, "E4.3": false, "E4.4": true, "E4.5": true},
			[]string{"1.02x (0.40 -> 0.41 Mpps)", "htb backlog 0 -> 0", "busylock wait avg 50.00 us",
				"HTB drains after the change and its dequeuer gets 1.01 skbs a restart"}},
		{"a bulk before the change", []*report.Report{
			e4Report(E4NumaBefore, 610000, 500, 1000, 1000, 1), e4Report(E4NumaAfter, 1110000, 500, 1000, 1000, 1),
			e4Report(E4NonumaBefore, 1380000, 1000, 1000, 1000, 1), e4Report(E4NonumaAfter, 1930000, 1000, 1000, 1000, 1)},
			map[string]bool{"E4.5": false}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := E4(tc.reps)
			var text strings.Builder
			for _, r := range rows {
				text.WriteString(r.Model + " " + r.Why + "\n")
				if r.Experiment != "E4" {
					t.Errorf("%s: experiment %q", r.ID, r.Experiment)
				}
				if want, ok := tc.holds[r.ID]; ok && r.Holds != want {
					t.Errorf("%s holds %v, want %v: %+v", r.ID, r.Holds, want, r)
				}
			}
			for _, want := range tc.has {
				if !strings.Contains(text.String(), want) {
					t.Errorf("no %q in\n%s", want, text.String())
				}
			}
		})
	}
}

// A variant not run gives its rows as not run, naming what is missing.
func TestE4Missing(t *testing.T) {
	rows := E4([]*report.Report{e4Report(E4NumaBefore, 1, 1, 1, 0, 0)})
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Model != "not run" || r.Holds || !strings.Contains(r.Why, "needs the variants") {
			t.Errorf("%+v", r)
		}
	}
}
