package qdisc

import (
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/units"
)

// Args walks tc-style option words ("limit 100 ecn") the way a tc
// parse_qopt does: a keyword, then its value read with tc's own number
// readers. Every error is a parse error (ErrParse) naming the qdisc kind
// and the keyword.
type Args struct {
	kind  string
	words []string
	i     int
}

// NewArgs starts walking words for a qdisc of kind (used in messages).
func NewArgs(kind string, words []string) *Args { return &Args{kind: kind, words: words} }

// Next returns the next keyword, or "" at the end.
func (a *Args) Next() string {
	if a.i >= len(a.words) {
		return ""
	}
	w := a.words[a.i]
	a.i++
	return w
}

// More reports whether words are left.
func (a *Args) More() bool { return a.i < len(a.words) }

// Value returns the value word after keyword key (tc's NEXT_ARG).
func (a *Args) Value(key string) (string, error) {
	if a.i >= len(a.words) {
		return "", Parsef(a.kind, "option %q needs a value", key)
	}
	w := a.words[a.i]
	a.i++
	return w, nil
}

// Int parses the value of key as a whole decimal number in [min, max].
func (a *Args) Int(key string, min, max int64) (int64, error) {
	v, err := a.Value(key)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, Parsef(a.kind, "%s %q is not a whole number", key, v)
	}
	if n < min || n > max {
		return 0, Parsef(a.kind, "%s %d is out of range [%d, %d]", key, n, min, max)
	}
	return n, nil
}

// Unsigned is tc's get_unsigned(val, arg, 0): a 32-bit unsigned number,
// decimal, 0x hex or 0 octal ("limit", "flows", "quantum" of most
// qdiscs).
func (a *Args) Unsigned(key string) (uint32, error) {
	return read(a, key, func(v string) (uint32, error) { return units.GetUnsigned(v, 0) })
}

// Size is tc's get_size: bytes ("1514", "64kb", "32Mb").
func (a *Args) Size(key string) (uint32, error) { return read(a, key, units.GetSize) }

// Time is tc's get_time: microseconds ("5ms", "100us", "1s").
func (a *Args) Time(key string) (uint32, error) { return read(a, key, units.GetTime) }

// Time64 is tc's get_time64: nanoseconds ("10us", "500ns").
func (a *Args) Time64(key string) (int64, error) { return read(a, key, units.GetTime64) }

// Rate is tc's get_rate: bytes/s in 32 bits ("100mbit", "1gbit").
func (a *Args) Rate(key string) (uint32, error) { return read(a, key, units.GetRate) }

// Rate64 is tc's get_rate64: bytes/s ("100mbit", "40gbit", "10GBps").
func (a *Args) Rate64(key string) (uint64, error) { return read(a, key, units.GetRate64) }

func read[T any](a *Args, key string, get func(string) (T, error)) (T, error) {
	v, err := a.Value(key)
	if err != nil {
		var zero T
		return zero, err
	}
	n, err := get(v)
	if err != nil {
		return n, Parsef(a.kind, "illegal %q: %v", key, err)
	}
	return n, nil
}

// Unknown is the error for an option the qdisc does not have (tc's
// `What is "..."?`).
func (a *Args) Unknown(key string, known ...string) error {
	if len(known) == 0 {
		return Parsef(a.kind, "unknown option %q (it takes none)", key)
	}
	return Parsef(a.kind, "unknown option %q (known: %s)", key, strings.Join(known, ", "))
}

// Attr is one option as tc sends it to the kernel: a netlink attribute
// (TCA_*) that is present or not, so a ctl struct says what a change
// leaves alone.
type Attr[T any] struct {
	V   T
	Set bool
}

// Put sets the attribute.
func (a *Attr[T]) Put(v T) { a.V, a.Set = v, true }

// Apply sets *dst to the attribute's value if it was sent: a change
// applies the attributes given and leaves the rest.
func (a Attr[T]) Apply(dst *T) {
	if a.Set {
		*dst = a.V
	}
}

// ParseClockid is a "clockid" value as taprio's and etf's tc parsers
// read it: a second one is a duplicate, a name get_clockid does not
// know is explain_clockid's complaint. cur is the clock read so far
// (-1, CLOCKID_INVALID, for none).
func ParseClockid(kind string, cur int32, v string) (int32, error) {
	if cur != -1 {
		return cur, Parsef(kind, `duplicate "clockid" specification`)
	}
	id, ok := units.GetClockid(v)
	if !ok {
		return cur, Parsef(kind, `illegal value for "clockid": %q. It must be a valid SYS-V id (i.e. CLOCK_TAI)`, v)
	}
	return id, nil
}
