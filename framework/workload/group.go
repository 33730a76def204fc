package workload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// Group is what one group of flows sets on its packets, for tc filters
// and classes to tell the groups apart: the DSCP, skb->priority (SO_PRIORITY:
// a classid such as 1:10 selects an htb or prio class directly),
// skb->mark (SO_MARK, what fw matches), the UDP destination port and,
// for UDP senders, the ECN field (the low bits of IP_TOS: ECT(1) is
// L4S's identifier). A zero field leaves the workload's own value.
// Txtime (udp_stream only) is SO_TXTIME on CLOCK_TAI: each send stamps
// its packet with the TAI clock's time plus Txtime (SCM_TXTIME), as a
// TSN talker does for etf.
type Group struct {
	DSCP     uint8
	ECN      uint8
	Priority uint32
	Mark     uint32
	DstPort  uint16
	Txtime   sim.Time
}

// apply sets what the group names over a flow's values; a zero key keeps
// the workload's value.
func (g Group) apply(dscp, ecn *uint8, prio, mark *uint32, dport *uint16, txtime *sim.Time) {
	if g.DSCP != 0 {
		*dscp = g.DSCP
	}
	if g.ECN != 0 {
		*ecn = g.ECN
	}
	if g.Priority != 0 {
		*prio = g.Priority
	}
	if g.Mark != 0 {
		*mark = g.Mark
	}
	if g.DstPort != 0 {
		*dport = g.DstPort
	}
	if g.Txtime != 0 && txtime != nil {
		*txtime = g.Txtime
	}
}

// MaxTxtime bounds a group's txtime offset.
const MaxTxtime = sim.Second

// ParseGroups reads groups as the CLI's --groups writes them: groups
// separated by spaces or ';', each a comma-separated list of key=value
// with the keys dscp, ecn, priority (or prio: a classid "1:10" or a
// number), mark, dport and txtime: "dport=5001,prio=1:10 dport=5002,mark=2"; "-" is a
// group that keeps the workload's values.
func ParseGroups(text string) ([]Group, error) {
	var out []Group
	for _, g := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ';' || r == '\t' }) {
		var grp Group
		if g == "-" { // a group that keeps the workload's values
			out = append(out, grp)
			continue
		}
		for _, kv := range strings.Split(g, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				return nil, fmt.Errorf("workload group %q: %q is not key=value (keys: dscp, ecn, priority, mark, dport, txtime)", g, kv)
			}
			if err := grp.Set(k, v); err != nil {
				return nil, fmt.Errorf("workload group %q: %w", g, err)
			}
		}
		out = append(out, grp)
	}
	return out, nil
}

// Set sets one field from its text.
func (g *Group) Set(key, v string) error {
	switch key {
	case "dscp":
		n, err := strconv.ParseUint(v, 0, 8)
		if err != nil || n > 63 {
			return fmt.Errorf("dscp %q: want 0..63", v)
		}
		g.DSCP = uint8(n)
	case "ecn":
		n, ok := ecnWords[v]
		if !ok {
			return fmt.Errorf("ecn %q: want not-ect, ect1, ect0 or ce (or 0..3: the IP header's ECN bits)", v)
		}
		g.ECN = n
	case "priority", "prio":
		if h, ok := tc.ParseClassID(v); ok && strings.Contains(v, ":") {
			g.Priority = uint32(h)
			return nil
		}
		n, err := units.GetUnsigned(v, 0)
		if err != nil {
			return fmt.Errorf("priority %q: want a classid (1:10) or a number", v)
		}
		g.Priority = n
	case "mark":
		n, err := units.GetUnsigned(v, 0)
		if err != nil {
			return fmt.Errorf("mark %q: want a number (0x prefix for hex)", v)
		}
		g.Mark = n
	case "dport":
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("dport %q: want 1..65535", v)
		}
		g.DstPort = uint16(n)
	case "txtime":
		ns, err := units.GetTime64(v)
		if err != nil || ns <= 0 || sim.Time(ns) > MaxTxtime {
			return fmt.Errorf("txtime %q: want a time in (0, %v] (each packet's SO_TXTIME: now on CLOCK_TAI plus it)", v, MaxTxtime)
		}
		g.Txtime = sim.Time(ns)
	default:
		return fmt.Errorf("unknown key %q (dscp, ecn, priority, mark, dport, txtime)", key)
	}
	return nil
}

// ecnWords are the ECN field's names (RFC 3168's codepoints, ECT(1)
// RFC 9331's L4S identifier) and numbers.
var ecnWords = map[string]uint8{"not-ect": 0, "ect1": 1, "ect0": 2, "ce": 3, "0": 0, "1": 1, "2": 2, "3": 3}

// FormatGroups writes groups back in ParseGroups' words.
func FormatGroups(gs []Group) string {
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		var kv []string
		if g.DSCP != 0 {
			kv = append(kv, fmt.Sprintf("dscp=%d", g.DSCP))
		}
		if g.ECN != 0 {
			kv = append(kv, "ecn="+[4]string{"not-ect", "ect1", "ect0", "ce"}[g.ECN&3])
		}
		if g.Priority != 0 {
			if g.Priority>>16 != 0 {
				kv = append(kv, "priority="+tc.Handle(g.Priority).String())
			} else {
				kv = append(kv, fmt.Sprintf("priority=%d", g.Priority))
			}
		}
		if g.Mark != 0 {
			kv = append(kv, fmt.Sprintf("mark=%d", g.Mark))
		}
		if g.DstPort != 0 {
			kv = append(kv, fmt.Sprintf("dport=%d", g.DstPort))
		}
		if g.Txtime != 0 {
			kv = append(kv, "txtime="+units.SprintTime64(int64(g.Txtime)))
		}
		if len(kv) == 0 {
			kv = append(kv, "-") // a group that changes nothing
		}
		parts = append(parts, strings.Join(kv, ","))
	}
	return strings.Join(parts, " ")
}
