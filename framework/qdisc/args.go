package qdisc

import (
	"fmt"
	"strconv"
	"strings"
)

// Args walks tc-style option words ("limit 100 ecn"), for Init methods.
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

// Value returns the value word after keyword key.
func (a *Args) Value(key string) (string, error) {
	if a.i >= len(a.words) {
		return "", fmt.Errorf("%s: option %q needs a value", a.kind, key)
	}
	w := a.words[a.i]
	a.i++
	return w, nil
}

// Int parses the value of key as a whole number in [min, max].
func (a *Args) Int(key string, min, max int64) (int64, error) {
	v, err := a.Value(key)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(strings.TrimSuffix(v, "p"), 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("%s: %s %q is not a whole number", a.kind, key, v)
	}
	if n < min || n > max {
		return 0, fmt.Errorf("%s: %s %d is out of range [%d, %d]", a.kind, key, n, min, max)
	}
	return n, nil
}

// Unknown is the error for an option the qdisc does not have.
func (a *Args) Unknown(key string, known ...string) error {
	return fmt.Errorf("%s: unknown option %q (known: %s)", a.kind, key, strings.Join(known, ", "))
}
