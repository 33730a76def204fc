// Package tc is tc's own grammar and names for qdiscs: handles and class
// IDs as the kernel holds them (include/uapi/linux/pkt_sched.h), parsed
// and printed the way iproute2 does (tc/tc_util.c), and the words of a
// `tc qdisc add|replace|change` command line (tc/tc_qdisc.c).
package tc

import (
	"fmt"
	"strconv"
)

// Handle is a qdisc handle or a class ID, a u32 of major<<16 | minor.
type Handle uint32

// Special handles (pkt_sched.h).
const (
	Unspec  Handle = 0          // TC_H_UNSPEC: none given
	Root    Handle = 0xFFFFFFFF // TC_H_ROOT
	Ingress Handle = 0xFFFFFFF1 // TC_H_INGRESS
	Clsact  Handle = Ingress    // TC_H_CLSACT: the clsact qdisc's parent; its handle is ffff:
	// Egress is TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS): the filter
	// parent tc's "egress" names (ffff:fff3).
	Egress Handle = 0xFFFFFFF3
	// IngressBlock is TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS): the
	// filter parent tc's "ingress" names (ffff:fff2).
	IngressBlock Handle = 0xFFFFFFF2
)

// MakeHandle is TC_H_MAKE(maj << 16, min).
func MakeHandle(maj, min uint16) Handle { return Handle(uint32(maj)<<16 | uint32(min)) }

// Major is TC_H_MAJ(h) >> 16.
func (h Handle) Major() uint16 { return uint16(h >> 16) }

// Minor is TC_H_MIN(h).
func (h Handle) Minor() uint16 { return uint16(h) }

// QdiscString prints a qdisc's handle as print_qdisc does: the major in
// hex and a colon ("8001:", "0:"); a qdisc handle has no minor.
func (h Handle) QdiscString() string { return strconv.FormatUint(uint64(h.Major()), 16) + ":" }

// String prints a class ID as print_tc_classid does: "root", "none",
// ":1", "1:" or "1:a".
func (h Handle) String() string {
	switch {
	case h == Root:
		return "root"
	case h == Unspec:
		return "none"
	case h.Major() == 0:
		return fmt.Sprintf(":%x", h.Minor())
	case h.Minor() == 0:
		return fmt.Sprintf("%x:", h.Major())
	}
	return fmt.Sprintf("%x:%x", h.Major(), h.Minor())
}

// ParseQdiscHandle is get_qdisc_handle: "none", or a hex major below
// 0x10000 followed by nothing or by a colon (anything after the colon is
// ignored, as tc ignores it: "1:5" is 1:).
func ParseQdiscHandle(s string) (Handle, bool) {
	if s == "none" {
		return Unspec, true
	}
	maj, rest, ok := strtoul16(s)
	if !ok || maj >= 1<<16 {
		return 0, false
	}
	if rest != "" && rest[0] != ':' {
		return 0, false
	}
	return Handle(maj << 16), true
}

// ParseClassID is get_tc_classid: "root", "none", "maj:min", "maj:",
// ":min", or a bare hex number taken as the whole u32 (so "ffffffff" is
// root, as in tc).
func ParseClassID(s string) (Handle, bool) {
	switch s {
	case "root":
		return Root, true
	case "none":
		return Unspec, true
	}
	maj, rest, ok := strtoul16(s)
	if !ok {
		maj, rest = 0, s
		if rest == "" || rest[0] != ':' {
			return 0, false
		}
	}
	if rest == "" {
		return Handle(uint32(maj)), true // tc stores the unsigned long in a __u32
	}
	if rest[0] != ':' || maj >= 1<<16 {
		return 0, false
	}
	min, rest, _ := strtoul16(rest[1:])
	if rest != "" || min >= 1<<16 {
		return 0, false
	}
	return Handle(maj<<16 | min), true
}

// strtoul16 is glibc's strtoul(s, &end, 16) on a 64-bit unsigned long:
// leading blanks, a sign, an optional 0x, hex digits; an overflow
// saturates, a minus negates modulo 2^64. ok is false when no digit was
// read (end == s).
func strtoul16(s string) (v uint64, rest string, ok bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		if i+2 < len(s) && hexDigit(s[i+2]) >= 0 {
			i += 2
		} else {
			// "0x" without a digit after it: the 0 is the number and
			// the x is where parsing stopped.
			return 0, s[i+1:], true
		}
	}
	start, over := i, false
	for ; i < len(s) && hexDigit(s[i]) >= 0; i++ {
		if v > (^uint64(0))>>4 {
			over = true
		}
		v = v<<4 | uint64(hexDigit(s[i]))
	}
	if i == start {
		return 0, s, false
	}
	switch {
	case over:
		v = ^uint64(0)
	case neg:
		v = -v
	}
	return v, s[i:], true
}

func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// HashBucket is the qdisc_hash bucket of a qdisc handle: hash_min(key,
// 4) on a u32 key is hash_32(key, 4) (include/linux/hash.h), the golden
// ratio multiply. `tc qdisc show` lists a device's non-root qdiscs
// bucket by bucket (tc_dump_qdisc_root's hash_for_each), newest first
// within a bucket (hash_add is hlist_add_head).
func HashBucket(h Handle) int { return int((uint32(h) * 0x61C88647) >> (32 - 4)) }
