package tc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/units"
)

// Ethernet protocol numbers a filter's "protocol" names (ETH_P_*,
// include/uapi/linux/if_ether.h).
const (
	ProtoAll  uint16 = 0x0003 // ETH_P_ALL
	ProtoIP   uint16 = 0x0800 // ETH_P_IP
	ProtoARP  uint16 = 0x0806
	ProtoIPv6 uint16 = 0x86DD
	ProtoVLAN uint16 = 0x8100 // ETH_P_8021Q
	ProtoQinQ uint16 = 0x88A8 // ETH_P_8021AD
)

// protoNames is ll_proto_a2n's table, as far as txlab's packets go.
var protoNames = []struct {
	id   uint16
	name string
}{{ProtoAll, "all"}, {ProtoIP, "ip"}, {ProtoARP, "arp"}, {ProtoIPv6, "ipv6"}, {ProtoVLAN, "802.1Q"}, {ProtoQinQ, "802.1ad"}}

// ParseProto is ll_proto_a2n: a name or a number (get_be16, base 0).
func ParseProto(s string) (uint16, bool) {
	for _, p := range protoNames {
		if strings.EqualFold(s, p.name) {
			return p.id, true
		}
	}
	if strings.EqualFold(s, "8021q") {
		return ProtoVLAN, true
	}
	v, err := units.GetUnsigned(s, 0)
	if err != nil || v > 0xFFFF {
		return 0, false
	}
	return uint16(v), true
}

// ProtoName is ll_proto_n2a: the name, or the number in hex.
func ProtoName(id uint16) string {
	for _, p := range protoNames {
		if p.id == id {
			return p.name
		}
	}
	return fmt.Sprintf("0x%x", id)
}

// Filter is one `tc filter add|change|replace|del` command line, the
// words after the verb: "dev eth0 parent 1: protocol ip prio 1 u32 match
// ip dport 5001 0xffff flowid 1:10".
type Filter struct {
	Dev      string
	Parent   Handle // Unspec when not given (the root qdisc), Root for "root"
	Pref     uint16 // 0: the kernel picks one
	Protocol uint16 // 0 when not given (add and replace then use ETH_P_ALL)
	ProtoSet bool
	Handle   string // the kind reads it ("" when not given)
	Chain    uint32
	Kind     string
	Options  []string
}

// ParseFilter reads words as tc_filter_modify does: dev, root, parent,
// handle, pref (or prio, priority, preference), protocol and chain in
// any order, then the kind and its options; "egress" and "ingress" are
// clsact's blocks. Shared blocks and estimators are refused by name;
// only chain 0 is modelled.
func ParseFilter(words []string) (Filter, error) {
	var f Filter
	r := &wordReader{words: words}
	for ; r.i < len(words); r.i++ {
		if ok, err := r.devParent(&f.Dev, &f.Parent, `"root" is duplicate parent ID`, "Invalid parent ID"); ok {
			if err != nil {
				return f, err
			}
			continue
		}
		w := words[r.i]
		switch {
		case matches(w, "block"):
			return f, notModelled(w, "shared filter blocks are not modelled")
		case w == "egress":
			// clsact's egress block (sch_handle_egress)
			if f.Parent != Unspec {
				return f, qdisc.Syntaxf(`"egress" is duplicate parent ID`)
			}
			f.Parent = Egress
		case w == "ingress":
			// clsact's ingress block (sch_handle_ingress)
			if f.Parent != Unspec {
				return f, qdisc.Syntaxf(`"ingress" is duplicate parent ID`)
			}
			f.Parent = IngressBlock
		case w == "handle":
			v, err := r.next()
			if err != nil {
				return f, err
			}
			if f.Handle != "" {
				return f, dupArg("handle", v)
			}
			f.Handle = v
		case matches(w, "preference") || matches(w, "priority"):
			v, err := r.next()
			if err != nil {
				return f, err
			}
			if f.Pref != 0 {
				return f, dupArg("priority", v)
			}
			n, perr := units.GetUnsigned(v, 0)
			if perr != nil || n > 0xFFFF {
				return f, invArg("invalid priority value", v)
			}
			f.Pref = uint16(n)
		case matches(w, "protocol"):
			v, err := r.next()
			if err != nil {
				return f, err
			}
			if f.ProtoSet {
				return f, dupArg("protocol", v)
			}
			p, ok := ParseProto(v)
			if !ok {
				return f, invArg("invalid protocol", v)
			}
			f.Protocol, f.ProtoSet = p, true
		case matches(w, "chain"):
			v, err := r.next()
			if err != nil {
				return f, err
			}
			n, perr := units.GetUnsigned(v, 0)
			if perr != nil {
				return f, invArg("invalid chain index value", v)
			}
			if n != 0 {
				return f, notModelled(w+" "+v, "only chain 0 is modelled (no goto_chain actions)")
			}
			f.Chain = n
		case matches(w, "estimator"):
			return f, notModelled(w, "rate estimators (TCA_RATE) are not modelled")
		case matches(w, "help"):
			return f, qdisc.Syntaxf("%q is not supported: tc prints its usage", w)
		default:
			f.Kind = w
			f.Options = r.rest()
			return f, nil
		}
	}
	if f.Handle != "" && f.Kind == "" {
		return f, qdisc.Syntaxf(`Must specify filter type when using "handle"`)
	}
	return f, nil
}

// Words prints the command back in tc's order: dev, parent, protocol,
// pref, handle, kind and options.
func (f Filter) Words() []string {
	var out []string
	if f.Dev != "" {
		out = append(out, "dev", f.Dev)
	}
	out = appendParent(out, f.Parent)
	if f.ProtoSet {
		out = append(out, "protocol", ProtoName(f.Protocol))
	}
	if f.Pref != 0 {
		out = append(out, "pref", strconv.Itoa(int(f.Pref)))
	}
	if f.Handle != "" {
		out = append(out, "handle", f.Handle)
	}
	if f.Kind != "" {
		out = append(out, f.Kind)
	}
	return append(out, f.Options...)
}
