package tc

import (
	"github.com/txlab/txlab/framework/qdisc"
)

// Class is one `tc class add|change|replace|del` command line, the words
// after the verb: "dev eth0 parent 1: classid 1:10 htb rate 750mbit".
type Class struct {
	Dev     string
	ClassID Handle // Unspec when not given
	Parent  Handle // Unspec when neither root nor parent was given
	Kind    string // "" when no kind word came
	Options []string
}

// ParseClass reads words as tc_class_modify does: dev, classid, root and
// parent in any order, then the kind, whose options are every word after
// it. Errors are tc's own (qdisc.ErrSyntax).
func ParseClass(words []string) (Class, error) {
	var c Class
	r := &wordReader{words: words}
	for ; r.i < len(words); r.i++ {
		if ok, err := r.devParent(&c.Dev, &c.Parent, `"root" is duplicate parent ID.`, "invalid parent ID"); ok {
			if err != nil {
				return c, err
			}
			continue
		}
		w := words[r.i]
		switch {
		case w == "classid":
			v, err := r.next()
			if err != nil {
				return c, err
			}
			if c.ClassID != Unspec {
				return c, dupArg("classid", v)
			}
			h, ok := ParseClassID(v)
			if !ok {
				return c, invArg("invalid class ID", v)
			}
			c.ClassID = h
		case w == "handle":
			return c, qdisc.Syntaxf(`try "classid" instead of "handle"`)
		case matches(w, "estimator"):
			return c, notModelled(w, "rate estimators (TCA_RATE) are not modelled")
		case matches(w, "help"):
			return c, qdisc.Syntaxf("%q is not supported: tc prints its usage", w)
		default:
			c.Kind = w
			c.Options = r.rest()
			return c, nil
		}
	}
	return c, nil
}

// Words prints the command back in tc's order.
func (c Class) Words() []string {
	var out []string
	if c.Dev != "" {
		out = append(out, "dev", c.Dev)
	}
	out = appendParent(out, c.Parent)
	if c.ClassID != Unspec {
		out = append(out, "classid", c.ClassID.String())
	}
	if c.Kind != "" {
		out = append(out, c.Kind)
	}
	return append(out, c.Options...)
}
