package cls

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
	"github.com/txlab/txlab/framework/units"
)

// header is the bytes a classifier reads of a txlab packet: its Ethernet
// header (network offsets -14..-1), IPv4 header (0..19, ihl 5) and its
// transport header from 20: UDP's (8 bytes), TCP's (20 of its 32: the
// ports, data offset 8 and the flags, Packet.TCPFlags, at 33; the
// sequence and acknowledgement numbers read as zero, the window as
// 65535, as the packet capture writes it) or ICMP's echo request (type
// 8, the id from the source port); payload bytes read as zero. The flow
// keys' 32-bit source and destination are IPv4 addresses.
type header struct {
	b   [netOff + 40]byte
	len int // bytes from the network header to the end of the packet
}

// netOff is where the network header starts in b.
const netOff = 14

func (h *header) fill(p *skb.Packet) {
	b := &h.b
	*b = [netOff + 40]byte{}
	binary.BigEndian.PutUint16(b[12:], tc.ProtoIP) // h_proto
	ip := b[netOff:]
	ip[0] = 0x45                // version 4, ihl 5
	ip[1] = p.DSCP<<2 | p.ECN&3 // tos (dsfield)
	l3 := int(p.Len) - netOff   // tot_len
	binary.BigEndian.PutUint16(ip[2:], uint16(max(l3, 0)))
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF: a UDP socket's default IP_PMTUDISC_WANT
	ip[8] = 64                                 // ttl
	ip[9] = p.Keys.Proto
	binary.BigEndian.PutUint32(ip[12:], p.Keys.Src)
	binary.BigEndian.PutUint32(ip[16:], p.Keys.Dst)
	switch p.Keys.Proto {
	case 1: // ICMP echo request: type, code, checksum, id, sequence
		ip[20] = 8
		binary.BigEndian.PutUint16(ip[24:], p.Keys.SrcPort)
	case 6:
		binary.BigEndian.PutUint16(ip[20:], p.Keys.SrcPort)
		binary.BigEndian.PutUint16(ip[22:], p.Keys.DstPort)
		ip[32] = 8 << 4 // doff: 32 bytes, with the timestamps option
		ip[33] = p.TCPFlags
		binary.BigEndian.PutUint16(ip[34:], 65535)
	default:
		binary.BigEndian.PutUint16(ip[20:], p.Keys.SrcPort)
		binary.BigEndian.PutUint16(ip[22:], p.Keys.DstPort)
		binary.BigEndian.PutUint16(ip[24:], uint16(max(l3-20, 0))) // UDP length
	}
	h.len = l3
}

// word32 is skb_header_pointer(skb, off, 4) read big-endian: ok is false
// past the packet.
func (h *header) word32(off int) (uint32, bool) {
	if off < -netOff || off+4 > h.len {
		return 0, false
	}
	var w [4]byte
	for i := range w {
		if o := netOff + off + i; o < len(h.b) {
			w[i] = h.b[o]
		}
	}
	return binary.BigEndian.Uint32(w[:]), true
}

// u32Key is struct tc_u32_key: a value and mask at an offset from the
// network header, both as the big-endian word reads; offmask -1 is tc's
// "nexthdr+" (the offset is also relative to off2, the next header as a
// linking node's "offset" found it).
type u32Key struct {
	val, mask uint32
	off       int32
	offmask   int32
}

// u32Sel is struct tc_u32_sel as far as txlab models it.
type u32Sel struct {
	keys     []u32Key
	terminal bool // TC_U32_TERMINAL: a classid or an action
	// matchWords are the "match" clauses' words and parmWords the rest
	// of the filter's words (without "order", which the handle holds):
	// a replace keeps the first of the old node and takes the second.
	matchWords, parmWords []string
}

// match is u32_classify's key loop for one node.
func (s *u32Sel) match(h *header) (hit, abort bool) {
	// off2 is 0 in the root table: only a node that links to another
	// table with "offset" sets it, and txlab has one table, so a
	// nexthdr+ key reads at its offset from the network header, as the
	// kernel's does in the root table.
	const off2 = 0
	for _, k := range s.keys {
		w, ok := h.word32(int(k.off + off2&k.offmask))
		if !ok {
			return false, true
		}
		if (w^k.val)&k.mask != 0 {
			return false, false
		}
	}
	return true, false
}

// packKey is pack_key: keys at the same offset and offmask merge; an
// offset must be a multiple of 4.
func (s *u32Sel) packKey(val, mask uint32, off, offmask int) error {
	val &= mask
	for i := range s.keys {
		k := &s.keys[i]
		if int(k.off) == off && int(k.offmask) == offmask {
			if (val^k.val)&(mask&k.mask) != 0 {
				return fmt.Errorf("it contradicts an earlier match at %d", off)
			}
			k.val |= val
			k.mask |= mask
			return nil
		}
	}
	if len(s.keys) >= 128 {
		return fmt.Errorf("more than 128 keys")
	}
	if off%4 != 0 {
		return fmt.Errorf("offset %d is not a multiple of 4", off)
	}
	s.keys = append(s.keys, u32Key{val: val, mask: mask, off: int32(off), offmask: int32(offmask)})
	return nil
}

// packKey16 is pack_key16: a 16-bit field at off, in its word.
func (s *u32Sel) packKey16(val, mask uint32, off, offmask int) error {
	if val > 0xFFFF || mask > 0xFFFF {
		return fmt.Errorf("value or mask is more than 16 bits")
	}
	if off&3 == 0 {
		val, mask = val<<16, mask<<16
	}
	return s.packKey(val, mask, off&^3, offmask)
}

// packKey8 is pack_key8.
func (s *u32Sel) packKey8(val, mask uint32, off, offmask int) error {
	if val > 0xFF || mask > 0xFF {
		return fmt.Errorf("value or mask is more than 8 bits")
	}
	shift := uint(24 - 8*(off&3))
	return s.packKey(val<<shift, mask<<shift, off&^3, offmask)
}

// genNewKid is gen_new_kid for the root table: the lowest free node id
// from 0x800, else the lowest from 1, else 0xfff (idr_alloc_u32 from
// htid|0x800, then from htid+1, up to htid|0xfff).
func (tp *proto) genNewKid() uint32 {
	used := map[uint32]bool{}
	for _, e := range tp.elems {
		used[e.Handle&0xFFF] = true
	}
	for _, from := range []uint32{0x800, 1} {
		for n := from; n <= 0xFFF; n++ {
			if !used[n] {
				return tp.u32ht | n
			}
		}
	}
	return tp.u32ht | 0xFFF
}

// u32HandleString is sprint_u32_handle: "800:", "800::800", "800:1:800".
func u32HandleString(h uint32) string {
	if h == 0 {
		return "none"
	}
	var b strings.Builder
	htid, hash, node := h>>20, (h>>12)&0xFF, h&0xFFF
	if htid != 0 {
		fmt.Fprintf(&b, "%x:", htid)
	}
	if node|hash != 0 {
		if hash != 0 {
			fmt.Fprintf(&b, "%x", hash)
		}
		if node != 0 {
			fmt.Fprintf(&b, ":%x", node)
		}
	}
	return b.String()
}

// parseU32Handle is get_u32_handle: "htid:hash:node", each part hex and
// optional; without a colon only a whole "0x..." u32 is a handle.
func parseU32Handle(s string) (uint32, error) {
	if !strings.Contains(s, ":") {
		if !strings.HasPrefix(s, "0x") {
			return 0, fmt.Errorf("%q", s)
		}
		v, err := units.GetUnsigned(s, 16)
		return v, err
	}
	var vals [3]uint64
	lim := [3]uint64{0x1000, 0x100, 0x1000}
	rest := s
	for i := range vals {
		v, tail, ok := hexPrefix(rest)
		// strtoul read no digit: only an empty part (or, before the
		// node, a colon) may stand there.
		if !ok && rest != "" && (i == 2 || rest[0] != ':') {
			return 0, fmt.Errorf("%q", s)
		}
		if v >= lim[i] {
			return 0, fmt.Errorf("%q", s)
		}
		vals[i] = v
		if i == 2 || tail == "" {
			break // the node's trailing characters are not checked
		}
		rest = tail[1:] // get_u32_handle skips one character, the colon
	}
	return uint32(vals[0]<<20 | vals[1]<<12 | vals[2]), nil
}

// hexPrefix is strtoul(s, &end, 16) for what a handle holds: an
// optional 0x and hex digits. ok is false when no digit was read.
func hexPrefix(s string) (v uint64, rest string, ok bool) {
	t := s
	if len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X") && strings.ContainsAny(t[2:3], "0123456789abcdefABCDEF") {
		t = t[2:]
	}
	i := 0
	for i < len(t) && strings.ContainsAny(t[i:i+1], "0123456789abcdefABCDEF") {
		if v < 1<<32 {
			d, _ := strconv.ParseUint(t[i:i+1], 16, 8)
			v = v<<4 | d
		}
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	return v, t[i:], true
}

// parseU32 is u32_parse_opt for what txlab models: "match" selectors,
// classid/flowid, action, order, skip_hw. Hash tables (ht, link,
// divisor, sample, hashkey) and offsets are refused by name.
func parseU32(f *Filter, verb tc.Verb, cmd tc.Filter, tp *proto, s *Set) error {
	const kind = "u32"
	var h uint32
	if cmd.Handle != "" {
		var err error
		if h, err = parseU32Handle(cmd.Handle); err != nil {
			return qdisc.Parsef(kind, "Illegal filter ID %q", cmd.Handle)
		}
	}
	if len(cmd.Options) == 0 {
		if err := u32GetTable(h, verb, tp, f.Parent, s); err != nil {
			return err
		}
		if cmd.Handle != "" {
			return errKernel("Error: cls_u32: Filter handle requires options.")
		}
		return nil // u32_parse_opt sends no TCA_OPTIONS: f.u32 stays nil
	}
	sel := &u32Sel{}
	var order uint32
	dropped := 0 // option words taken out of f.Words
	selOK := false
	words := cmd.Options
	for len(words) > 0 {
		w, before := words[0], words
		switch {
		case tc.Matches(w, "match"):
			rest, err := parseSelector(words[1:], sel)
			if err != nil {
				return qdisc.Parsef(kind, "Illegal \"match\": %v", err)
			}
			sel.matchWords = append(sel.matchWords, words[:len(words)-len(rest)]...)
			words, selOK = rest, true
			continue
		case tc.Matches(w, "classid") || w == "flowid":
			rest, err := classidArg(kind, f, words)
			if err != nil {
				return err
			}
			sel.terminal = true
			words = rest
		case tc.Matches(w, "action"):
			acts, rest, err := parseActions(kind, words[1:], s)
			if err != nil {
				return err
			}
			f.Actions = append(f.Actions, acts...)
			sel.terminal = true
			words = rest
		case tc.Matches(w, "order"):
			if len(words) < 2 {
				return qdisc.Parsef(kind, "%q needs a value", w)
			}
			n, err := units.GetUnsigned(words[1], 0) // get_u32: any u32, 0 leaves the handle alone
			if err != nil {
				return qdisc.Parsef(kind, "Illegal \"order\" %q", words[1])
			}
			order = n
			// Specs gives the handle, which holds the node: an order
			// there would contradict it when order has bits above the
			// node's 12 (u32_change keeps only TC_U32_NODE of it).
			at := len(cmd.Options) - len(words)
			f.Words = slices.Delete(slices.Clone(f.Words), at-dropped, at-dropped+2)
			dropped += 2
			words = words[2:]
			continue
		case tc.Matches(w, "offset") || tc.Matches(w, "hashkey") || tc.Matches(w, "divisor") || w == "link" || w == "ht" || w == "sample":
			return qdisc.Lacksf(kind, "%s: u32 hash tables and offsets are not modelled (one table, keys at fixed offsets)", w)
		case tc.Matches(w, "police"):
			rest, err := parseOldPolice(kind, words[1:], f, s)
			if err != nil {
				return err
			}
			sel.terminal = true // u32_parse_opt's terminal_ok
			words = rest
		case w == "indev":
			return qdisc.Lacksf(kind, "%s is not modelled", w)
		default:
			ok, err := parseSkip(kind, w, f)
			if err != nil {
				return err
			}
			if !ok {
				return qdisc.Parsef(kind, "What is %q?", w)
			}
			words = words[1:]
		}
		sel.parmWords = append(sel.parmWords, before[:len(before)-len(words)]...)
	}
	if order != 0 {
		if h&0xFFF != 0 && order != h&0xFFF {
			return qdisc.Parsef(kind, `"order" contradicts "handle"`)
		}
		h |= order // u32_parse_opt: t->tcm_handle |= order
	}
	if err := u32GetTable(h, verb, tp, f.Parent, s); err != nil {
		return err
	}
	if h != 0 {
		if h>>20 != 0 && h&0xFFF00000 != tp.u32ht {
			return errKernel("Error: cls_u32: Handle specified hash table address mismatch (%s is not this pref's %s).", u32HandleString(h), u32HandleString(tp.u32ht))
		}
		// u32_change ignores the handle's bucket, and a node of 0
		// asks for a new one (gen_new_kid).
		if h&0xFFF != 0 {
			f.Handle = tp.u32ht | h&0xFFF
		}
	}
	if !selOK && (verb == tc.VerbAdd || !slices.ContainsFunc(tp.elems, func(e *Filter) bool { return e.Handle == f.Handle })) {
		// No "match": tc sends no TCA_U32_SEL, which u32_change refuses
		// for a new node (an existing one keeps its own selector).
		return errKernel("Error: cls_u32: Selector not specified.")
	}
	f.u32 = sel
	f.takeOldPolice()
	return nil
}

// u32GetTable is tc_new_tfilter's tp->ops->get for a handle whose key
// (bucket and node) is 0: u32_get returns the hash table of that id, one
// of the qdisc's tc_u_common, as the filter. An add (NLM_F_EXCL) then
// finds it exists; a replace or change hands it to u32_change, which
// refuses a node whose key is 0.
func u32GetTable(h uint32, verb tc.Verb, own *proto, parent qdisc.ClassID, s *Set) error {
	if h == 0 || h&0xFFFFF != 0 {
		return nil
	}
	// own may be new, made with its table before it joins the block
	for _, tp := range append(s.u32Protos(parent.Major()), own) {
		if tp.u32ht != h {
			continue
		}
		if verb == tc.VerbAdd {
			return errKernel("Error: Filter already exists.")
		}
		return errKernel("Error: cls_u32: Key node id cannot be zero.")
	}
	return nil
}

// parseSelector is parse_selector for u32/u16/u8 at an offset and the ip
// selectors (src, dst, tos/dsfield, protocol, sport, dport, icmp_type,
// icmp_code, ihl, nofrag, firstfrag, df, mf), and icmp's type and code.
func parseSelector(words []string, sel *u32Sel) ([]string, error) {
	if len(words) == 0 {
		return nil, fmt.Errorf("a selector is needed (ip, u32, u16, u8)")
	}
	w := words[0]
	switch {
	case tc.Matches(w, "u32"): // tc tries u32 first: "u" is u32
		return parseValueMask(words[1:], sel, 32, 0, 0)
	case tc.Matches(w, "u16"):
		return parseValueMask(words[1:], sel, 16, 0, 0)
	case tc.Matches(w, "u8"):
		return parseValueMask(words[1:], sel, 8, 0, 0)
	case tc.Matches(w, "ip"):
		return parseIP(words[1:], sel)
	case tc.Matches(w, "ip6"):
		return nil, fmt.Errorf("selector %q is not modelled (ip, udp, tcp, icmp, u32, u16, u8 are)", w)
	case tc.Matches(w, "udp") || tc.Matches(w, "tcp"):
		return parsePorts(words[1:], sel)
	case tc.Matches(w, "icmp"):
		return parseICMP(words[1:], sel)
	case tc.Matches(w, "mark") || tc.Matches(w, "ether"):
		return nil, fmt.Errorf("selector %q is not modelled (ip, udp, tcp, icmp, u32, u16, u8 are)", w)
	}
	return nil, fmt.Errorf("unknown selector %q", w)
}

// parsePorts is parse_udp and parse_tcp: "src" and "dst" are the
// 16-bit words at nexthdr+0 and nexthdr+2. In the root table nexthdr is
// the network header (u32_classify's off2 starts at 0): without a link
// through "offset" they read the IP header's first and second words, as
// the kernel's do.
func parsePorts(words []string, sel *u32Sel) ([]string, error) {
	if len(words) < 2 {
		return nil, fmt.Errorf("a field and its value are needed (src, dst)")
	}
	switch words[0] {
	case "src":
		return parseValueMask(words[1:], sel, 16, 0, -1)
	case "dst":
		return parseValueMask(words[1:], sel, 16, 2, -1)
	}
	return nil, fmt.Errorf("%q is not a field (src, dst)", words[0])
}

// parseICMP is parse_icmp: "type" and "code" are the first two bytes
// of the next header (nexthdr+0 and nexthdr+1).
func parseICMP(words []string, sel *u32Sel) ([]string, error) {
	if len(words) < 2 {
		return nil, fmt.Errorf("icmp: a field and its value are needed")
	}
	switch words[0] {
	case "type":
		return parseValueMask(words[1:], sel, 8, 0, -1)
	case "code":
		return parseValueMask(words[1:], sel, 8, 1, -1)
	}
	return nil, fmt.Errorf("icmp %q is not a field (type, code)", words[0])
}

// parseValueMask is parse_u32/u16/u8: a value (base 0), a mask (hex),
// then an optional "at OFFSET" (parse_at: "nexthdr+N" or "nexthdr+ N"
// sets offmask; an offset alone keeps the selector's).
func parseValueMask(words []string, sel *u32Sel, bits, off, offmask int) ([]string, error) {
	if len(words) < 2 {
		return nil, fmt.Errorf("a value and a mask are needed")
	}
	val, err := units.GetUnsigned(words[0], 0)
	if err != nil {
		return nil, fmt.Errorf("value %q: %v", words[0], err)
	}
	mask, err := units.GetUnsigned(words[1], 16)
	if err != nil {
		return nil, fmt.Errorf("mask %q: %v", words[1], err)
	}
	words = words[2:]
	if len(words) > 0 && words[0] == "at" {
		if len(words) < 2 {
			return nil, fmt.Errorf(`"at" needs an offset`)
		}
		p := words[1]
		words = words[2:]
		switch {
		case len(p) > len("nexthdr+") && strings.HasPrefix(p, "nexthdr+"):
			offmask, p = -1, p[len("nexthdr+"):]
		case tc.Matches(p, "nexthdr+"):
			if len(words) == 0 {
				return nil, fmt.Errorf(`"at %s" needs an offset`, p)
			}
			offmask, p = -1, words[0]
			words = words[1:]
		}
		o, err := units.GetInteger(p, 0)
		if err != nil {
			return nil, fmt.Errorf("offset %q: %v", p, err)
		}
		off = int(o)
	}
	switch bits {
	case 32:
		err = sel.packKey(val, mask, off, offmask)
	case 16:
		err = sel.packKey16(val, mask, off, offmask)
	default:
		err = sel.packKey8(val, mask, off, offmask)
	}
	return words, err
}

// parseIP is parse_ip.
func parseIP(words []string, sel *u32Sel) ([]string, error) {
	if len(words) < 2 {
		return nil, fmt.Errorf("ip: a field and its value are needed")
	}
	switch w := words[0]; w {
	case "src", "dst":
		off := 12
		if w == "dst" {
			off = 16
		}
		pfx, err := parsePrefix(words[1])
		if err != nil {
			return nil, fmt.Errorf("ip %s %q: %v", w, words[1], err)
		}
		mask := uint32(0)
		if pfx.Bits() > 0 {
			mask = 0xFFFFFFFF << (32 - pfx.Bits())
		}
		a := pfx.Addr().As4()
		return words[2:], sel.packKey(binary.BigEndian.Uint32(a[:]), mask, off, 0)
	case "tos", "dsfield", "precedence":
		return parseValueMask(words[1:], sel, 8, 1, 0)
	case "ihl":
		return parseValueMask(words[1:], sel, 8, 0, 0)
	case "protocol":
		return parseValueMask(words[1:], sel, 8, 9, 0)
	case "sport":
		return parseValueMask(words[1:], sel, 16, 20, 0)
	case "dport":
		return parseValueMask(words[1:], sel, 16, 22, 0)
	case "icmp_type":
		return parseValueMask(words[1:], sel, 8, 20, 0)
	case "icmp_code":
		return parseValueMask(words[1:], sel, 8, 21, 0)
	case "nofrag":
		return words[1:], sel.packKey16(0, 0x3FFF, 6, 0)
	case "firstfrag":
		return words[1:], sel.packKey16(0x2000, 0x3FFF, 6, 0)
	case "df":
		return words[1:], sel.packKey16(0x4000, 0x4000, 6, 0)
	case "mf":
		return words[1:], sel.packKey16(0x2000, 0x2000, 6, 0)
	default:
		if tc.Matches(w, "dsfield") || tc.Matches(w, "precedence") {
			return parseValueMask(words[1:], sel, 8, 1, 0)
		}
		return nil, fmt.Errorf("ip %q is not a field (src, dst, tos, dsfield, protocol, sport, dport, icmp_type, icmp_code, ihl, nofrag, firstfrag, df, mf)", w)
	}
}

// parsePrefix is get_prefix_1 for IPv4: "A.B.C.D[/LEN]", "any", "all",
// "default".
func parsePrefix(s string) (netip.Prefix, error) {
	switch s {
	case "any", "all", "default":
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return netip.Prefix{}, fmt.Errorf("not an IPv4 prefix")
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, fmt.Errorf("not an IPv4 address")
	}
	return netip.PrefixFrom(a, 32), nil
}

// print is u32_print_opt for a node.
func (s *u32Sel) print(b *strings.Builder, f *Filter) {
	fmt.Fprintf(b, "fh %s order %d key ht %x bkt 0 ", u32HandleString(f.Handle), f.Handle&0xFFF, f.Handle>>20)
	if f.ClassID != 0 {
		if !s.terminal {
			b.WriteString("*")
		}
		fmt.Fprintf(b, "flowid %s ", f.ClassID)
	} else if s.terminal {
		b.WriteString("terminal flowid ")
	}
	if f.Flags&flagSkipHW != 0 {
		b.WriteString("skip_hw ")
	}
	if f.Flags&flagNotInHW != 0 {
		b.WriteString("not_in_hw ")
	}
	for _, k := range s.keys {
		// print_raw: "at nexthdr+N" for a nexthdr+ key
		at := ""
		if k.offmask != 0 {
			at = "nexthdr+"
		}
		fmt.Fprintf(b, "\n  match %08x/%08x at %s%d", k.val, k.mask, at, k.off)
	}
}
