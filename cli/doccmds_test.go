package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docCommand is a txlab command line shown in a fenced block of the
// README or docs/*.md.
type docCommand struct {
	file string
	line int
	text string   // as written, without its comment
	args []string // txlab's arguments
}

// docCommands extracts every `go run ./cli ...` and `txlab ...` line
// (after `cd - &&`) from the fenced blocks of files, and the `go build`
// lines beside them.
func docCommands(t *testing.T, files []string) (cmds []docCommand, builds []docCommand) {
	t.Helper()
	fence := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		for _, m := range fence.FindAllStringSubmatchIndex(doc, -1) {
			start := strings.Count(doc[:m[2]], "\n") + 1
			lines := strings.Split(doc[m[2]:m[3]], "\n")
			for i := 0; i < len(lines); i++ {
				n := i
				line := strings.TrimSpace(stripComment(lines[i]))
				// A line ending in a backslash goes on.
				for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
					i++
					line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(stripComment(lines[i]))
				}
				line = strings.TrimPrefix(line, "cd - && ")
				c := docCommand{file: f, line: start + n, text: line}
				if !strings.HasPrefix(line, "go run ./cli") && !strings.HasPrefix(line, "go build ") && !strings.HasPrefix(line, "txlab ") {
					continue // output, or another tool's command
				}
				words, err := shellWords(line)
				if err != nil {
					t.Fatalf("%s:%d: %v", f, c.line, err)
				}
				// Where the output goes (> FILE, | tool) is the shell's.
				for j, w := range words {
					if w == ">" || w == "|" || w == "2>" {
						words = words[:j]
						break
					}
				}
				switch {
				case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cli":
					c.args = words[3:]
				case len(words) >= 2 && words[0] == "txlab" && words[1] != ":=":
					c.args = words[1:]
				case len(words) >= 2 && words[0] == "go" && words[1] == "build":
					c.args = words
					builds = append(builds, c)
					continue
				default:
					continue
				}
				cmds = append(cmds, c)
			}
		}
	}
	return cmds, builds
}

// stripComment drops a shell comment: a # after a blank, outside quotes.
func stripComment(s string) string {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// shellWords splits a line as sh would for these commands: blanks
// separate, quotes group, ~/ is $HOME.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '~' && !in && i+1 < len(s) && s[i+1] == '/':
			cur.WriteString(os.Getenv("HOME"))
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote in %q", s)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// docSkips are the shown commands the test does not run, each with why.
var docSkips = []struct{ match, why string }{
	{"otlp-grpc", "needs an OTLP collector (Jaeger): cli/jaeger_test.go runs the traces against a real one (TXLAB_JAEGER)"},
	{"txlab-qdisc-shaper", "the out-of-tree module's build: TestOutOfTreePlugin builds it and runs these commands"},
	{"[--plugin-dir D]", "a synopsis with placeholders, not a command"},
	{"go run ./cli fidelity --quick ", "CI runs it on its own (.ci/run, timed: under a minute)"},
	{"PATH-OR-NAME", "a synopsis with placeholders, not a command"},
	{"--plugin-dir D ", "a synopsis with placeholders, not a command"},
	{"--plot docs/img/", "TestREADMEPicture draws it into a scratch file: run here, it wrote the committed picture through the docs symlink, and the staleness check then compared the picture with itself"},
}

// docPrereqs are files a shown command reads that the text says how to
// make: made just before it.
var docPrereqs = map[string][]string{
	"e1.json": {"run", "e1", "--quick", "--no-progress", "--format", "json", "-o", "e1.json"},
}

// Every command the README and docs/*.md show runs: a script scaled down
// (--quick), a run or sweep from flags over 2 ms of simulated time,
// fidelity at --quick; files land in a scratch directory that has the
// repository's scripts and examples.
func TestDocCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every command the docs show (about a minute)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	home := t.TempDir()
	t.Setenv("HOME", home)
	cmds, builds := docCommands(t, files)
	if len(cmds) < 40 {
		t.Fatalf("found %d commands in the docs", len(cmds))
	}
	dir := t.TempDir()
	for _, d := range []string{"scripts", "examples", "docs"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	// Files the docs show as a block headed "# NAME.tc" are there.
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile("(?s)```[a-z]*\n# ([a-z0-9_-]+\\.tc)\n(.*?)```").FindAllSubmatch(b, -1) {
			if err := os.WriteFile(string(m[1]), m[2], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The plugin the shown commands name, built as the docs show (once,
	// when a command needs it).
	built := false
	headdrop := func(t *testing.T) {
		t.Helper()
		if built {
			return
		}
		goCmd, err := exec.LookPath("go")
		if err != nil {
			t.Skip("no go command to build examples/headdrop")
		}
		for _, b := range builds {
			if !slices.Contains(b.args, "./examples/headdrop") {
				continue
			}
			bin := filepath.Join(dir, "plugins.d", "txlab-qdisc-headdrop")
			cmd := exec.Command(goCmd, "build", "-o", bin, "./examples/headdrop")
			cmd.Dir = root
			if o, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s:%d: %s: %v\n%s", b.file, b.line, b.text, err, o)
			}
			if err := os.Link(bin, filepath.Join(dir, "txlab-qdisc-headdrop")); err != nil {
				t.Fatal(err)
			}
			built = true
			return
		}
		t.Fatal("no go build of examples/headdrop shown")
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		name := fmt.Sprintf("%s:%d", filepath.Base(c.file), c.line)
		skip := ""
		for _, s := range docSkips {
			if strings.Contains(c.text+" ", s.match) {
				skip = s.why
			}
		}
		args := scaleDown(c.args)
		key := strings.Join(args, "\x00")
		if skip == "" && seen[key] {
			skip = "shown twice: run once"
		}
		seen[key] = true
		t.Run(name, func(t *testing.T) {
			if skip != "" {
				t.Skipf("%s: %s", c.text, skip)
			}
			for _, a := range args {
				if strings.HasSuffix(a, "txlab-qdisc-headdrop") {
					headdrop(t)
				}
				if pre, ok := docPrereqs[a]; ok {
					if out, err := txlab(t, pre...); err != nil {
						t.Fatalf("making %s: %v\n%s", a, err, out)
					}
				}
			}
			out, err := txlab(t, args...)
			if err != nil {
				t.Errorf("%s (as txlab %s): %v\n%s", c.text, strings.Join(args, " "), err, tail(out, 20))
			}
		})
	}
}

// scaleDown makes a shown command quick: scripts --quick (a script's
// duration parameter its quick length, 36 ms), runs and sweeps from
// flags 2 ms of simulated time, fidelity --quick, no progress bar. Help
// and listing commands are left as they are.
func scaleDown(args []string) []string {
	if len(args) == 0 {
		return args
	}
	out := append([]string(nil), args...)
	for i, a := range out {
		if strings.HasPrefix(a, "duration=") && i > 0 && out[i-1] == "--param" {
			out[i] = "duration=36ms"
		}
	}
	has := func(f string) bool { return slices.Contains(out, f) }
	script := false
	for i, a := range out[1:] {
		if !strings.HasPrefix(a, "-") && (i == 0 || !strings.HasPrefix(out[i], "-") || isBoolFlag(out[i])) {
			script = true
		}
	}
	switch out[0] {
	case "run", "sweep":
		if script {
			if !has("--quick") {
				out = append(out, "--quick")
			}
		} else {
			if !has("--duration") {
				out = append(out, "--duration", "2ms")
			}
			if !has("--warmup") {
				out = append(out, "--warmup", "1ms")
			}
		}
		out = append(out, "--no-progress")
	case "fidelity":
		if !script && !has("--quick") {
			out = append(out, "--quick")
		}
	}
	return out
}

// isBoolFlag reports whether a shown flag takes no value.
func isBoolFlag(f string) bool {
	switch strings.TrimLeft(f, "-") {
	case "quick", "isolate", "tc-show", "no-progress":
		return true
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The extraction itself: comments, quotes, ~, cd - &&, synopses.
func TestDocCommandsExtract(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", "/h")
	f := filepath.Join(dir, "x.md")
	os.WriteFile(f, []byte("text\n```sh\ngo run ./cli run --qdisc \"cake besteffort\"  # a # comment\ncd - && go run ./cli list\ntxlab := import(\"txlab\")\ntxlab plugin list --plugin-dir ~/.txlab/plugins\ngo build -o p ./examples/headdrop\ngo run ./cli run --queues 2 \\\n  --senders 4   # more\ngo run ./cli completion bash > /tmp/x | tee y\n```\n"), 0o644)
	cmds, builds := docCommands(t, []string{f})
	got := []string{}
	for _, c := range cmds {
		got = append(got, fmt.Sprintf("%d:%q", c.line, c.args))
	}
	want := []string{`3:["run" "--qdisc" "cake besteffort"]`, `4:["list"]`, `6:["plugin" "list" "--plugin-dir" "/h/.txlab/plugins"]`,
		`8:["run" "--queues" "2" "--senders" "4"]`, `10:["completion" "bash"]`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("commands %v, want %v", got, want)
	}
	if len(builds) != 1 || builds[0].line != 7 {
		t.Errorf("builds %v", builds)
	}
	for _, c := range []struct{ in, want []string }{
		{[]string{"run", "scripts/e1.tengo"}, []string{"run", "scripts/e1.tengo", "--quick", "--no-progress"}},
		{[]string{"run", "--isolate", "scripts/e2.tengo"}, []string{"run", "--isolate", "scripts/e2.tengo", "--quick", "--no-progress"}},
		{[]string{"run", "--profile", "6.18"}, []string{"run", "--profile", "6.18", "--duration", "2ms", "--warmup", "1ms", "--no-progress"}},
		{[]string{"fidelity", "e1", "e1.json"}, []string{"fidelity", "e1", "e1.json"}},
		{[]string{"fidelity", "--only", "E1"}, []string{"fidelity", "--only", "E1", "--quick"}},
		{[]string{"list"}, []string{"list"}},
		{[]string{"run", "e2", "--param", "duration=3s"}, []string{"run", "e2", "--param", "duration=36ms", "--quick", "--no-progress"}},
	} {
		if got := scaleDown(c.in); !slices.Equal(got, c.want) {
			t.Errorf("scaleDown(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
