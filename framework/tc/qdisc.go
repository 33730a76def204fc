package tc

import (
	"strconv"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
)

// Qdisc is one `tc qdisc add|replace|change` command line, the words
// after the verb: "dev eth0 handle 1: root fq_codel limit 100".
type Qdisc struct {
	Dev     string // "" when not given
	Handle  Handle // Unspec when not given (the kernel then assigns one)
	Parent  Handle // Unspec when neither root nor parent was given
	Kind    string // "" when no kind word came
	Options []string
	// Stab is the size table the words give ("stab ..."), nil without.
	Stab *SizeSpec
}

// Selects reports whether the command names a qdisc by dev, handle or
// parent (what a `tc qdisc change` uses to find its target).
func (q Qdisc) Selects() bool { return q.Dev != "" || q.Handle != Unspec || q.Parent != Unspec }

// ParseQdisc reads words as tc_qdisc_modify does: dev, handle, root and
// parent in any order, then the kind, and every word after the kind is
// the kind's options. Words tc knows but txlab does not model
// (estimator, ingress_block, egress_block) are refused
// by name; "stab" reads a size table (parseStab). Errors are tc's own messages, without its "Error: ":
// tc's refusals of its command line are qdisc.ErrSyntax (tc exits 255),
// the words txlab does not model qdisc.ErrLacks.
func ParseQdisc(words []string) (Qdisc, error) {
	var q Qdisc
	r := &wordReader{words: words}
	for ; r.i < len(words); r.i++ {
		if ok, err := r.devParent(&q.Dev, &q.Parent, `"root" is duplicate parent ID`, "invalid parent ID"); ok {
			if err != nil {
				return q, err
			}
			continue
		}
		w := words[r.i]
		switch {
		case w == "handle":
			if q.Handle != Unspec {
				return q, dupArg("handle", w) // tc checks before reading the value
			}
			v, err := r.next()
			if err != nil {
				return q, err
			}
			h, ok := ParseQdiscHandle(v)
			if !ok {
				return q, invArg("invalid qdisc ID", v)
			}
			q.Handle = h
		case w == "clsact":
			// tc_qdisc_modify: the parent TC_H_CLSACT, the handle
			// ffff:, the kind clsact; its util takes no options
			if q.Parent != Unspec {
				return q, qdisc.Syntaxf(`"clsact" is a duplicate parent ID`)
			}
			q.Parent, q.Handle, q.Kind = Clsact, 0xFFFF0000, "clsact"
			if rest := r.rest(); len(rest) > 0 {
				return q, qdisc.Parsef("clsact", "What is %q?", rest[0])
			}
			return q, nil
		case w == "ingress":
			// the ingress qdisc: parent TC_H_INGRESS, handle ffff:
			if q.Parent != Unspec {
				return q, qdisc.Syntaxf(`"ingress" is a duplicate parent ID`)
			}
			q.Parent, q.Handle, q.Kind = Ingress, 0xFFFF0000, "ingress"
			rest := r.rest()
			for len(rest) >= 2 && rest[0] == "handle" {
				rest = rest[2:] // ingress_parse_opt skips a handle: tc sends ffff: whatever it says
			}
			if len(rest) > 0 {
				return q, qdisc.Parsef("ingress", "What is %q?", rest[0])
			}
			return q, nil
		case matches(w, "estimator"):
			return q, notModelled(w, "rate estimators (TCA_RATE) are not modelled")
		case matches(w, "stab"):
			if q.Stab != nil {
				return q, dupArg("stab", w)
			}
			st, err := r.parseStab()
			if err != nil {
				return q, err
			}
			q.Stab = st
		case matches(w, "ingress_block") || matches(w, "egress_block"):
			return q, notModelled(w, "shared filter blocks are not modelled")
		case matches(w, "help"):
			return q, qdisc.Syntaxf("%q is not supported: tc prints its usage; see README.md, \"Qdiscs in tc words\"", w) // usage(): tc exits 255
		default:
			q.Kind = w
			q.Options = r.rest()
			return q, nil
		}
	}
	return q, nil
}

// Words prints the command back in tc's order: dev, handle, parent, kind
// and options; an unset part is left out.
func (q Qdisc) Words() []string {
	var out []string
	if q.Dev != "" {
		out = append(out, "dev", q.Dev)
	}
	if q.Handle != Unspec {
		out = append(out, "handle", q.Handle.QdiscString())
	}
	out = appendParent(out, q.Parent)
	if q.Stab != nil {
		out = append(out, q.Stab.Words()...)
	}
	if q.Kind != "" {
		out = append(out, q.Kind)
	}
	return append(out, q.Options...)
}

// appendParent prints a parent back as devParent reads it: "root",
// "parent X", or nothing when unset. Qdisc, class and filter commands
// print it alike.
func appendParent(out []string, parent Handle) []string {
	switch parent {
	case Unspec:
		return out
	case Root:
		return append(out, "root")
	}
	return append(out, "parent", parent.String())
}

// IsKeyword reports whether w is one of tc_qdisc_modify's own words
// rather than a kind.
func IsKeyword(w string) bool {
	switch w {
	case "dev", "handle", "root", "parent", "ingress", "clsact":
		return true
	}
	for _, k := range []string{"estimator", "stab", "ingress_block", "egress_block", "help"} {
		if matches(w, k) {
			return true
		}
	}
	return false
}

// matches is iproute2's matches(): w is a non-empty prefix of keyword.
func matches(w, keyword string) bool { return w != "" && strings.HasPrefix(keyword, w) }

// Matches is iproute2's matches(): w is a non-empty prefix of keyword,
// as tc accepts its keywords abbreviated.
func Matches(w, keyword string) bool { return matches(w, keyword) }

func dupArg(key, arg string) error {
	return qdisc.Syntaxf("duplicate %q: %q is the second value", key, arg)
}

func invArg(msg, arg string) error {
	return qdisc.Syntaxf("argument %q is wrong: %s", arg, msg)
}

// notModelled is a word tc and the kernel accept that txlab lacks.
func notModelled(w, why string) error {
	return &qdisc.OptionError{Class: qdisc.ErrLacks, Msg: strconv.Quote(w) + " is not supported: " + why}
}

// wordReader walks a command's words as tc's NEXT_ARG does.
type wordReader struct {
	words []string
	i     int
}

// next is the value after the current word, or tc's refusal when the
// line ends there.
func (r *wordReader) next() (string, error) {
	if r.i+1 >= len(r.words) {
		return "", qdisc.Syntaxf("%q needs a value: Command line is not complete", r.words[r.i])
	}
	r.i++
	return r.words[r.i], nil
}

// rest is the words after the current one: the kind's options.
func (r *wordReader) rest() []string { return r.words[r.i+1:] }

// devParent reads "dev", "root" and "parent", which tc_qdisc_modify,
// tc_class_modify and tc_filter_modify each parse alike but for their
// messages (rootDup, badParent); ok is false for any other word.
func (r *wordReader) devParent(dev *string, parent *Handle, rootDup, badParent string) (ok bool, err error) {
	switch r.words[r.i] {
	case "dev":
		v, err := r.next()
		if err != nil {
			return true, err
		}
		if *dev != "" {
			return true, dupArg("dev", v)
		}
		*dev = v
	case "root":
		if *parent != Unspec {
			return true, qdisc.Syntaxf("%s", rootDup)
		}
		*parent = Root
	case "parent":
		v, err := r.next()
		if err != nil {
			return true, err
		}
		if *parent != Unspec {
			return true, dupArg("parent", v)
		}
		h, ok := ParseClassID(v)
		if !ok {
			return true, invArg(badParent, v)
		}
		*parent = h
	default:
		return false, nil
	}
	return true, nil
}
