package run

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

func small() Spec {
	s := Default()
	s.Sockets, s.Cores, s.Threads = 1, 8, 1
	s.Queues = 4
	s.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 8, PacketSize: 120}
	s.Duration, s.Warmup = 4*sim.Millisecond, sim.Millisecond
	return s
}

func jsonOf(t *testing.T, s Spec) []byte {
	t.Helper()
	rep, err := Run(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.SimWallNs = 0
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDeterminism(t *testing.T) {
	a, b := jsonOf(t, small()), jsonOf(t, small())
	if !bytes.Equal(a, b) {
		t.Fatal("same spec and seed gave different reports")
	}
	s := small()
	s.Seed = 2
	if bytes.Equal(a, jsonOf(t, s)) {
		t.Fatal("a different seed gave the same report")
	}
}
