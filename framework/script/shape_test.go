package script

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Sources that would make tengo's parser, its compiler or walkAST
// recurse past Go's stack (a fatal error, not a panic), or compile in
// quadratic time, are refused before tengo sees them. The shapes are the
// bad-input sweep's (1 MiB of `+1`, of `[`, of `(`, a hook built at run
// time), at sizes just over the bounds: without the check they load
// (the full sizes would kill the test binary).
func TestShapeRefused(t *testing.T) {
	rep := strings.Repeat
	hook := func(src string) string {
		return "txlab := import(\"txlab\")\ntext := import(\"text\")\ntxlab.at(\"1ms\", {hook: txlab.hook(" + src + ")})\n"
	}
	long := "expression too long: more than 4000 tokens in one statement (split it into several)"
	deep := "brackets nest more than 256 deep"
	for _, tt := range []struct {
		name, src, at, want string
	}{
		{"binary chain", "x := 1" + rep("+1", 2000), "t.tengo:1:4004:", long},
		{"chain over lines", "x := 1 +\n" + rep("1 +\n", 2000) + "1\n", "t.tengo:2000:1:", long},
		{"chain in parens", "x := (1" + rep("+1", 2000) + ")", "t.tengo:1:4004:", long},
		{"chain through brackets", "x := 1" + rep("+1", 1000) + " + [" + rep("1+", 1000) + "1]", "t.tengo:1:4006:", long},
		{"unary chain", "x := " + rep("- ", 4000) + "1", "t.tengo:1:8002:", long},
		{"selector chain", "a := {}\nx := a" + rep(".b", 2000), "t.tengo:2:4004:", long},
		{"call chain", "f := func() { return f }\nx := f" + rep("()", 2000), "t.tengo:2:4004:", long},
		{"ternary chain", "x := " + rep("true ? 1 : ", 1000) + "1", "t.tengo:1:", long},
		{"else-if chain", "x := 1\nif x == 0 {\n}" + rep(" else if x == 1 {\n}", 1000), "t.tengo:", long},
		{"nested [", "x := " + rep("[", 257) + "1" + rep("]", 257), "t.tengo:1:262:", deep},
		{"nested (", "x := " + rep("(", 300) + "1" + rep(")", 300), "t.tengo:1:262:", deep},
		{"nested {", "x := " + rep("{a: ", 300) + "1" + rep("}", 300), "t.tengo:1:1030:", deep},
		{"nested func", "x := " + rep("func() { return ", 300) + "1" + rep("}", 300), "t.tengo:1:", deep},
		{"hook chain", hook(`"x := 1" + text.repeat("+1", 2000)`), "t.tengo: in hook, at its line 1 col 4004:", long},
		{"hook nesting", hook("`\nx := 1\ny := " + rep("(", 300) + "1" + rep(")", 300) + "`"), "t.tengo:5:262: in hook:", deep},
		{"hook over 1 MiB", hook(`"x := 0\n" + text.repeat("x = 1\n", 200000)`), "t.tengo: in hook:", "source is 1200007 bytes, more than the 1048576 allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			p, err := Load("t.tengo", []byte(tt.src), Options{})
			if err == nil {
				_, err = p.Eval()
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.at) || !strings.HasSuffix(err.Error(), " "+tt.want) {
				t.Errorf("error %v, want %q ... %q", err, tt.at, tt.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// Long but ordinary sources load: many statements, big literals, depth
// and chains up to the bounds, and brackets or operators in strings,
// chars and comments do not count.
func TestShapeAllowed(t *testing.T) {
	rep := strings.Repeat
	var keys strings.Builder
	for i := range 900 { // a literal's elements all go on the VM's stack (2048 slots)
		fmt.Fprintf(&keys, "k%d: %d,", i, i)
	}
	for _, tt := range []struct{ name, src string }{
		{"5000 statements", "x := 0\n" + rep("x = x + 1\n", 5000)},
		{"5000 statements in a function", "f := func() {\nx := 0\n" + rep("x = x + (1 * 2) - [1][0]\n", 5000) + "}\nf()\n"},
		{"900 map entries on one line", "m := {" + strings.TrimSuffix(keys.String(), ",") + "}\n"},
		{"2000 array elements over lines", "a := [\n" + rep("1 + 2 + 3,\n", 1999) + "4]\n"},
		{"chain just under the bound", "x := 1" + rep("+1", 1998)},
		{"nesting at the bound", "x := " + rep("[", 256) + "1" + rep("]", 256)},
		{"brackets in strings", `s := "` + rep("[(", 300) + rep("+1", 3000) + `\"((("` + "\nr := `" + rep("{", 300) + rep("-1", 3000) + "`\n"},
		{"brackets in chars", "c := [" + rep("'(', '[', '\\'', ", 300) + "'{']\n"},
		{"brackets in comments", "// " + rep("(", 300) + rep("+1", 3000) + "\nx := 1 /* " + rep("[", 300) + rep("*1", 3000) + " */ + 1\n"},
		{"comment markers in strings", "u := \"/*\"\nv := " + rep("(", 200) + "1" + rep(")", 200) + "\nw := \"*/\" + \"//\"\n"},
		{"hook with brackets in a string", "txlab := import(\"txlab\")\ntext := import(\"text\")\nh := txlab.hook(\"x := \\\"\" + text.repeat(\"[\", 1000) + \"\\\"\")\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Load("t.tengo", []byte(tt.src), Options{})
			if err == nil {
				_, err = p.Eval()
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
}
