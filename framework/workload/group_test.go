package workload

import (
	"strings"
	"testing"
)

// Groups as the CLI writes them, read and written back; ecn names the
// IP header's ECN bits a UDP socket sets (IP_TOS & 3), by RFC 3168's
// names or their numbers.
func TestGroupWords(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "dport=5001,prio=1:10 dport=5002", want: "priority=1:10,dport=5001 dport=5002"},
		{in: "ecn=ect1,dport=5001 ecn=2 ecn=ce -", want: "ecn=ect1,dport=5001 ecn=ect0 ecn=ce -"},
		{in: "ecn=not-ect", want: "-"}, // the default: a group that changes nothing
		{in: "ecn=l4s", err: `ecn "l4s": want not-ect, ect1, ect0 or ce`},
		{in: "tos=3", err: `unknown key "tos" (dscp, ecn, priority, mark, dport, txtime)`},
	} {
		gs, err := ParseGroups(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case FormatGroups(gs) != tt.want:
			t.Errorf("%q: written back %q, want %q", tt.in, FormatGroups(gs), tt.want)
		}
	}
	// A udp_stream sender's packets carry its group's ECN bits; a TCP
	// connection's are its own.
	s := Spec{Kind: UDPStream, Senders: 2, PacketSize: 100}
	s.Groups, _ = ParseGroups("ecn=ect1 -")
	if f0, f1 := makeFlow(0, 1, &s), makeFlow(1, 1, &s); f0.ECN != 1 || f1.ECN != 0 {
		t.Errorf("flows' ECN %d and %d, want 1 and 0", f0.ECN, f1.ECN)
	}
	s.Kind, s.Flows, s.CC = TCPStream, 2, "cubic"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "ecn is a UDP sender's") {
		t.Errorf("tcp_stream with an ecn group: %v", err)
	}
}
