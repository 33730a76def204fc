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
	for i := 0; i < len(words); i++ {
		w := words[i]
		next := func() (string, error) {
			if i+1 >= len(words) {
				return "", qdisc.Syntaxf("%q needs a value: Command line is not complete", w)
			}
			i++
			return words[i], nil
		}
		switch {
		case w == "dev":
			v, err := next()
			if err != nil {
				return c, err
			}
			if c.Dev != "" {
				return c, dupArg("dev", v)
			}
			c.Dev = v
		case w == "classid":
			v, err := next()
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
		case w == "root":
			if c.Parent != Unspec {
				return c, qdisc.Syntaxf(`"root" is duplicate parent ID.`)
			}
			c.Parent = Root
		case w == "parent":
			v, err := next()
			if err != nil {
				return c, err
			}
			if c.Parent != Unspec {
				return c, dupArg("parent", v)
			}
			h, ok := ParseClassID(v)
			if !ok {
				return c, invArg("invalid parent ID", v)
			}
			c.Parent = h
		case matches(w, "estimator"):
			return c, notModelled(w, "rate estimators (TCA_RATE) are not modelled")
		case matches(w, "help"):
			return c, qdisc.Syntaxf("%q is not supported: tc prints its usage", w)
		default:
			c.Kind = w
			c.Options = words[i+1:]
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
	switch c.Parent {
	case Unspec:
	case Root:
		out = append(out, "root")
	default:
		out = append(out, "parent", c.Parent.String())
	}
	if c.ClassID != Unspec {
		out = append(out, "classid", c.ClassID.String())
	}
	if c.Kind != "" {
		out = append(out, c.Kind)
	}
	return append(out, c.Options...)
}
