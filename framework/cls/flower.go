package cls

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// flowerKeys are the flower keys txlab models: IP protocol, IPv4
// addresses with masks, L4 ports (with masks) and the tos byte.
type flowerKeys struct {
	ethType          uint16 // from the filter's protocol (0: all)
	ipProto          uint8
	ipProtoSet       bool
	src, dst         netip.Prefix
	srcSet, dstSet   bool
	srcPort, dstPort uint16
	srcMask, dstMask uint16
	tos, tosMask     uint8
	tosSet           bool
}

// flMask is the key of struct fl_flow_mask for the modelled keys: the
// bits each key compares (a zero mask compares nothing, so "src_ip
// 0.0.0.0/0" and no src_ip are one mask). Filters with equal masks share
// one fl_flow_mask and its hashtable.
type flMask struct {
	ethType          uint16
	ipProto          uint8
	src, dst         uint32
	srcPort, dstPort uint16
	tos              uint8
}

// flKey is struct fl_flow_key for the modelled keys: a filter's key
// masked (fl_set_masked_key), or a packet's dissected key masked as
// fl_classify masks it before the lookup.
type flKey flMask

// mask is the fl_flow_mask fl_set_key fills for the filter's keys.
func (k *flowerKeys) mask() flMask {
	var m flMask
	if k.ethType != 0 {
		m.ethType = 0xFFFF // TCA_FLOWER_KEY_ETH_TYPE: n_proto, mask ~0
	}
	if k.ipProtoSet {
		m.ipProto = 0xFF
	}
	if k.srcSet {
		m.src = prefixMask(k.src.Bits())
	}
	if k.dstSet {
		m.dst = prefixMask(k.dst.Bits())
	}
	m.srcPort, m.dstPort = k.srcMask, k.dstMask
	if k.tosSet {
		m.tos = k.tosMask
	}
	return m
}

func prefixMask(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return 0xFFFFFFFF << (32 - bits)
}

// prefixAddr is a prefix's address as a u32 (0 for no prefix).
func prefixAddr(p netip.Prefix) uint32 {
	if !p.IsValid() {
		return 0
	}
	a := p.Addr().As4()
	return binary.BigEndian.Uint32(a[:])
}

// masked is fl_set_masked_key: the key under mask m.
func (k *flowerKeys) masked(m flMask) flKey {
	return flKey{
		ethType: k.ethType & m.ethType,
		ipProto: k.ipProto & m.ipProto,
		src:     prefixAddr(k.src) & m.src,
		dst:     prefixAddr(k.dst) & m.dst,
		srcPort: k.srcPort & m.srcPort,
		dstPort: k.dstPort & m.dstPort,
		tos:     k.tos & m.tos,
	}
}

// packetKey is fl_classify's skb_key for p under mask m: what the flow
// dissector reads of an IPv4 packet, masked (fl_mask_lookup compares it
// to the filters' masked keys).
func packetKey(p *skb.Packet, m flMask) flKey {
	return flKey{
		ethType: tc.ProtoIP & m.ethType,
		ipProto: p.Keys.Proto & m.ipProto,
		src:     p.Keys.Src & m.src,
		dst:     p.Keys.Dst & m.dst,
		srcPort: p.Keys.SrcPort & m.srcPort,
		dstPort: p.Keys.DstPort & m.dstPort,
		tos:     (p.DSCP<<2 | p.ECN&3) & m.tos,
	}
}

// flMaskRef is one entry of cls_fl_head's masks list: a mask and the
// number of filters using it (fl_flow_mask's refcnt), with its
// hashtable (fl_flow_mask's ht: masked key -> filter), built when a
// packet first needs it after a change.
type flMaskRef struct {
	m    flMask
	refs int
	ht   map[flKey]*Filter
}

// flFreeHandle is fl_change's handle for a filter given none:
// idr_alloc_u32 from 1, the lowest handle no filter of the pref holds.
func (tp *proto) flFreeHandle() uint32 {
	h := uint32(1)
	for _, e := range tp.elems { // in handle order
		if e.Handle == h {
			h++
		} else if e.Handle > h {
			break
		}
	}
	return h
}

// flStale drops every mask's hashtable: the filters changed.
func (tp *proto) flStale() {
	for _, r := range tp.flMasks {
		r.ht = nil
	}
}

// flTable is mask r's hashtable. Within a mask keys are unique but for
// a replace onto another filter's key (its in_ht path inserts without
// the check): rhashtable puts the newer at the head of the bucket, so
// the newer is the one found.
func (tp *proto) flTable(r *flMaskRef) map[flKey]*Filter {
	if r.ht != nil {
		return r.ht
	}
	r.ht = map[flKey]*Filter{}
	for _, e := range tp.elems {
		if e.flower.mask() != r.m {
			continue
		}
		k := e.flower.masked(r.m)
		if old := r.ht[k]; old == nil || e.added > old.added {
			r.ht[k] = e
		}
	}
	return r.ht
}

// flCheckAssignMask is fl_check_assign_mask: a filter takes the
// existing mask equal to its own, else a new one goes at the tail of
// the masks list (list_add_tail_rcu), which is the order fl_classify
// tries them in.
func (tp *proto) flCheckAssignMask(m flMask) {
	tp.flStale()
	for _, r := range tp.flMasks {
		if r.m == m {
			r.refs++
			return
		}
	}
	tp.flMasks = append(tp.flMasks, &flMaskRef{m: m, refs: 1})
}

// flMaskPut is fl_mask_put: a mask goes from the list with its last
// filter.
func (tp *proto) flMaskPut(m flMask) {
	tp.flStale()
	for i, r := range tp.flMasks {
		if r.m == m {
			if r.refs--; r.refs == 0 {
				tp.flMasks = append(tp.flMasks[:i], tp.flMasks[i+1:]...)
			}
			return
		}
	}
}

// flLookupDup is __fl_lookup on the new filter's mask: another filter
// with the same mask and masked key, which fl_ht_insert_unique's
// rhashtable_lookup_insert_fast refuses with -EEXIST.
func (tp *proto) flLookupDup(f *Filter) *Filter {
	m := f.flower.mask()
	key := f.flower.masked(m)
	for _, e := range tp.elems {
		if e.Handle != f.Handle && e.flower.mask() == m && e.flower.masked(m) == key {
			return e
		}
	}
	return nil
}

// flClassify is fl_classify: each mask in the list's order, the
// packet's key masked and looked up in that mask's hashtable; the first
// filter found is the answer, whatever its actions say. It reports one
// WorkHash per mask looked up.
func (tp *proto) flClassify(ctx qdisc.Ctx, p *skb.Packet) *Filter {
	for _, r := range tp.flMasks {
		ctx.Work(qdisc.WorkHash, 1)
		if f := tp.flTable(r)[packetKey(p, r.m)]; f != nil {
			return f
		}
	}
	return nil
}

// ipProtos is flower_parse_ip_proto's names.
var ipProtos = map[string]uint8{"tcp": 6, "udp": 17, "sctp": 132, "icmp": 1}

// parseFlower is flower_parse_opt for the modelled keys.
func parseFlower(f *Filter, cmd tc.Filter, tp *proto, s *Set) error {
	const kind = "flower"
	if cmd.Handle != "" {
		h, err := units.GetUnsigned(cmd.Handle, 0)
		if err != nil || h == 0 {
			return qdisc.Parsef(kind, "Illegal \"handle\" %q", cmd.Handle)
		}
		f.Handle = h
	}
	k := &flowerKeys{}
	if tp.protocol != tc.ProtoAll {
		k.ethType = tp.protocol
	}
	needIP := func(w string) error {
		if k.ethType != tc.ProtoIP {
			return qdisc.Parsef(kind, "Illegal \"eth_type\" for %s: write \"protocol ip\" (txlab's packets are IPv4)", w)
		}
		return nil
	}
	words := cmd.Options
	for len(words) > 0 {
		w := words[0]
		val := func() (string, error) {
			if len(words) < 2 {
				return "", qdisc.Parsef(kind, "%q needs a value", w)
			}
			return words[1], nil
		}
		switch {
		case tc.Matches(w, "classid") || tc.Matches(w, "flowid"):
			rest, err := classidArg(kind, f, words)
			if err != nil {
				return err
			}
			words = rest
		case tc.Matches(w, "action"):
			acts, rest, err := parseActions(kind, words[1:], s)
			if err != nil {
				return err
			}
			f.Actions = append(f.Actions, acts...)
			words = rest
			continue
		case w == "ip_proto":
			v, err := val()
			if err != nil {
				return err
			}
			if err := needIP(w); err != nil {
				return err
			}
			n, ok := ipProtos[v]
			if !ok {
				u, perr := units.GetUnsigned(v, 16)
				if perr != nil || u > 0xFF {
					return qdisc.Parsef(kind, "Illegal \"ip_proto\" %q", v)
				}
				n = uint8(u)
			}
			k.ipProto, k.ipProtoSet = n, true
			words = words[2:]
		case w == "src_ip" || w == "dst_ip":
			v, err := val()
			if err != nil {
				return err
			}
			if err := needIP(w); err != nil {
				return err
			}
			pfx, perr := parseFlowerAddr(v)
			if perr != nil {
				return qdisc.Parsef(kind, "Illegal %q %q: %v", w, v, perr)
			}
			if w == "src_ip" {
				k.src, k.srcSet = pfx, true
			} else {
				k.dst, k.dstSet = pfx, true
			}
			words = words[2:]
		case w == "src_port" || w == "dst_port":
			v, err := val()
			if err != nil {
				return err
			}
			if !k.ipProtoSet || (k.ipProto != 6 && k.ipProto != 17 && k.ipProto != 132) {
				return qdisc.Parsef(kind, "Illegal %q: ports need ip_proto tcp, udp or sctp first", w)
			}
			port, mask, perr := parsePortMask(v)
			if perr != nil {
				return qdisc.Parsef(kind, "Illegal %q %q: %v", w, v, perr)
			}
			if w == "src_port" {
				k.srcPort, k.srcMask = port, mask
			} else {
				k.dstPort, k.dstMask = port, mask
			}
			words = words[2:]
		case w == "ip_tos":
			v, err := val()
			if err != nil {
				return err
			}
			if err := needIP(w); err != nil {
				return err
			}
			t, m, perr := parseU8Mask(v)
			if perr != nil {
				return qdisc.Parsef(kind, "Illegal \"ip_tos\" %q: %v", v, perr)
			}
			k.tos, k.tosMask, k.tosSet = t, m, true
			words = words[2:]
		case w == "skip_hw" || w == "skip_sw":
			if _, err := parseSkip(kind, w, f); err != nil {
				return err
			}
			words = words[1:]
		case w == "indev" || w == "verbose" || strings.Contains(w, "_mac") || strings.HasPrefix(w, "vlan") ||
			strings.HasPrefix(w, "enc_") || strings.HasPrefix(w, "ct_") || w == "ip_ttl" || w == "ip_flags" || w == "tcp_flags":
			return qdisc.Lacksf(kind, "key %q is not modelled (ip_proto, src_ip, dst_ip, src_port, dst_port, ip_tos are)", w)
		default:
			return qdisc.Parsef(kind, "What is %q?", w)
		}
	}
	f.flower = k
	return nil
}

// parseFlowerAddr is flower_parse_ip_addr for IPv4: an address with an
// optional prefix length or mask.
func parseFlowerAddr(s string) (netip.Prefix, error) {
	a, m, slash := strings.Cut(s, "/")
	addr, err := netip.ParseAddr(a)
	if err != nil || !addr.Is4() {
		return netip.Prefix{}, fmt.Errorf("not an IPv4 address")
	}
	if !slash {
		return netip.PrefixFrom(addr, 32), nil
	}
	if n, err := strconv.Atoi(m); err == nil {
		if n < 0 || n > 32 {
			return netip.Prefix{}, fmt.Errorf("prefix length %d", n)
		}
		return netip.PrefixFrom(addr, n).Masked(), nil
	}
	mask, err := netip.ParseAddr(m)
	if err != nil || !mask.Is4() {
		return netip.Prefix{}, fmt.Errorf("bad mask %q", m)
	}
	mb := mask.As4()
	v := binary.BigEndian.Uint32(mb[:])
	bits := 0
	for v&0x80000000 != 0 {
		bits++
		v <<= 1
	}
	if v != 0 {
		return netip.Prefix{}, fmt.Errorf("mask %s is not contiguous (not modelled)", m)
	}
	return netip.PrefixFrom(addr, bits).Masked(), nil
}

// parsePortMask reads "N" or "N/MASK" (flower_parse_port).
func parsePortMask(s string) (uint16, uint16, error) {
	v, m, slash := strings.Cut(s, "/")
	if strings.Contains(v, "-") {
		return 0, 0, fmt.Errorf("port ranges are not modelled")
	}
	p, err := units.GetUnsigned(v, 10)
	if err != nil || p > 0xFFFF {
		return 0, 0, fmt.Errorf("not a port")
	}
	mask := uint32(0xFFFF)
	if slash {
		if mask, err = units.GetUnsigned(m, 0); err != nil || mask > 0xFFFF {
			return 0, 0, fmt.Errorf("bad mask")
		}
	}
	return uint16(p), uint16(mask), nil
}

// parseU8Mask reads "V" or "V/M" as flower_parse_ip_tos_ttl: the value
// in base 10, else base 16 ("20" is 20, "0x20" and "b8" are hex); the
// mask in base 16.
func parseU8Mask(s string) (uint8, uint8, error) {
	v, m, slash := strings.Cut(s, "/")
	val, err := units.GetUnsigned(v, 10)
	if err != nil || val > 0xFF {
		val, err = units.GetUnsigned(v, 16)
	}
	if err != nil || val > 0xFF {
		return 0, 0, fmt.Errorf("not a byte")
	}
	mask := uint32(0xFF)
	if slash {
		if mask, err = units.GetUnsigned(m, 16); err != nil || mask > 0xFF {
			return 0, 0, fmt.Errorf("bad mask")
		}
	}
	return uint8(val), uint8(mask), nil
}

// print is flower_print_opt for the modelled keys.
func (k *flowerKeys) print(b *strings.Builder, f *Filter) {
	fmt.Fprintf(b, "handle 0x%x ", f.Handle)
	if f.ClassID != 0 {
		fmt.Fprintf(b, "classid %s ", f.ClassID)
	}
	switch k.ethType {
	case 0:
	case tc.ProtoIP:
		b.WriteString("\n  eth_type ipv4")
	default:
		fmt.Fprintf(b, "\n  eth_type %04x", k.ethType)
	}
	if k.ipProtoSet {
		name := fmt.Sprintf("0x%02x", k.ipProto)
		switch k.ipProto {
		case 6:
			name = "tcp"
		case 17:
			name = "udp"
		case 132:
			name = "sctp"
		case 1:
			name = "icmp"
		}
		fmt.Fprintf(b, "\n  ip_proto %s", name)
	}
	if k.tosSet {
		fmt.Fprintf(b, "\n  ip_tos %d", k.tos)
		if k.tosMask != 0xFF {
			fmt.Fprintf(b, "/0x%x", k.tosMask)
		}
	}
	printAddr := func(name string, p netip.Prefix) {
		fmt.Fprintf(b, "\n  %s %s", name, p.Addr())
		if p.Bits() < 32 {
			fmt.Fprintf(b, "/%d", p.Bits())
		}
	}
	if k.dstSet {
		printAddr("dst_ip", k.dst)
	}
	if k.srcSet {
		printAddr("src_ip", k.src)
	}
	printPort := func(name string, port, mask uint16) {
		fmt.Fprintf(b, "\n  %s %d", name, port)
		if mask != 0xFFFF {
			fmt.Fprintf(b, "/0x%x", mask)
		}
	}
	if k.dstMask != 0 {
		printPort("dst_port", k.dstPort, k.dstMask)
	}
	if k.srcMask != 0 {
		printPort("src_port", k.srcPort, k.srcMask)
	}
	printFlagsNL(b, f.Flags)
}
