package tc

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
)

// Object is what a command works on.
type Object string

// The objects a batch line names (do_cmd).
const (
	ObjQdisc  Object = "qdisc"
	ObjClass  Object = "class"
	ObjFilter Object = "filter"
)

// Verb is a command's action (do_qdisc, do_class, do_filter).
type Verb string

// Verbs, as tc spells them in full.
const (
	VerbAdd     Verb = "add"
	VerbChange  Verb = "change"
	VerbReplace Verb = "replace"
	VerbDelete  Verb = "delete"
)

// Command is one line of a `tc -batch` file.
type Command struct {
	Line   int // the line it starts on (1-based), as tc's "Command failed FILE:LINE" counts
	Object Object
	Verb   Verb
	Words  []string // the words after the verb
}

// String is the command as tc words ("class add dev eth0 ...").
func (c Command) String() string {
	return strings.Join(append([]string{string(c.Object), string(c.Verb)}, c.Words...), " ")
}

// ParseBatch reads text as `tc -batch` reads its file (getcmdline and
// makeargs in lib/utils.c): a '#' starts a comment to the end of its
// line, a backslash before the newline joins the next line, words are
// split on blanks, and a word may be quoted with ' or ". Blank lines are
// skipped. A leading "tc" word is allowed (a script's lines pasted as
// they are). The objects are qdisc, class and filter (prefixes as tc
// matches them: "q", "cl", "f"); the verbs add, change, replace and
// delete (and their prefixes). An error names the line.
func ParseBatch(text string) ([]Command, error) {
	var out []Command
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := uncomment(lines[i])
		for strings.HasSuffix(line, "\\") {
			line = line[:len(line)-1]
			if i+1 >= len(lines) {
				return out, fmt.Errorf("line %d: Missing continuation line", start)
			}
			i++
			line += uncomment(lines[i])
		}
		words, err := makeArgs(line)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", start, err)
		}
		if len(words) > 0 && words[0] == "tc" {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		cmd, err := parseCommand(words)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", start, err)
		}
		cmd.Line = start
		out = append(out, cmd)
	}
	return out, nil
}

// uncomment is getcmdline's strchr(line, '#') cut, and drops a '\r'.
func uncomment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "\r")
}

// makeArgs splits a line as makeargs does: blanks separate words, and a
// word that starts with a quote runs to the same quote.
func makeArgs(line string) ([]string, error) {
	var out []string
	for i := 0; i < len(line); {
		for i < len(line) && strings.IndexByte(" \t\r\n", line[i]) >= 0 {
			i++
		}
		if i >= len(line) {
			break
		}
		if q := line[i]; q == '\'' || q == '"' {
			end := strings.IndexByte(line[i+1:], q)
			if end < 0 {
				return nil, qdisc.Syntaxf("Unterminated quoted string")
			}
			out = append(out, line[i+1:i+1+end])
			i += end + 2
			continue
		}
		j := i
		for j < len(line) && strings.IndexByte(" \t\r\n", line[j]) < 0 {
			j++
		}
		out = append(out, line[i:j])
		i = j
	}
	return out, nil
}

// parseCommand is do_cmd and the object's verb dispatch.
func parseCommand(words []string) (Command, error) {
	var c Command
	switch obj := words[0]; {
	case matches(obj, "qdisc"):
		c.Object = ObjQdisc
	case matches(obj, "class"):
		c.Object = ObjClass
	case matches(obj, "filter"):
		c.Object = ObjFilter
	case matches(obj, "chain") || matches(obj, "actions") || matches(obj, "monitor") || matches(obj, "exec"):
		return c, notModelled(obj, "txlab reads qdisc, class and filter commands")
	default:
		return c, qdisc.Syntaxf("Object %q is unknown, try \"tc help\".", obj)
	}
	if len(words) < 2 {
		return c, qdisc.Syntaxf("%s: a verb is needed (add, change, replace, delete)", c.Object)
	}
	switch v := words[1]; {
	case matches(v, "add"):
		c.Verb = VerbAdd
	case matches(v, "change"):
		c.Verb = VerbChange
	case matches(v, "replace"):
		c.Verb = VerbReplace
	case matches(v, "delete"):
		c.Verb = VerbDelete
	case matches(v, "show") || matches(v, "list") || matches(v, "lst") || matches(v, "get"):
		return c, notModelled(v, "a run shows its qdiscs, classes and filters after it (txlab run --tc-show)")
	case c.Object == ObjQdisc && matches(v, "link"):
		return c, notModelled(v, "qdisc link is not modelled")
	default:
		return c, qdisc.Syntaxf("Command %q is unknown, try \"tc %s help\".", v, c.Object)
	}
	c.Words = words[2:]
	return c, nil
}
