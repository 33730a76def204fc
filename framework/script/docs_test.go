package script

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlab/txlab/framework/run"
)

// TestDocExamples runs every ```tengo block of docs/scripting.md: each
// must evaluate, pass the check, and run with the accounting intact.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scripting.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```tengo\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 6 {
		t.Fatalf("found %d tengo examples in docs/scripting.md", len(blocks))
	}
	for i, b := range blocks {
		src := b[1]
		line := 1 + strings.Count(string(doc[:strings.Index(string(doc), string(src))]), "\n")
		t.Run("line"+itoa(line), func(t *testing.T) {
			pl, err := eval(t, string(src), Options{})
			if err != nil {
				t.Fatalf("example %d (docs/scripting.md:%d): %v", i+1, line, err)
			}
			if err := pl.Check(); err != nil {
				t.Fatalf("example %d: check: %v", i+1, err)
			}
			for _, s := range pl.Specs {
				rep, err := run.Run(s, nil)
				if err != nil {
					t.Fatalf("example %d: %s: %v", i+1, s.Name, err)
				}
				if rep.TxPackets == 0 {
					t.Errorf("example %d: %s: nothing transmitted", i+1, s.Name)
				}
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// docs/scripting.md names only functions the module has, and every one
// of them.
func TestDocNamesModule(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scripting.md")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, n := range ModuleNames() {
		have[n] = true
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`txlab\.([a-z_]+)\(`).FindAllSubmatch(doc, -1) {
		named[string(m[1])] = true
		if !have[string(m[1])] {
			t.Errorf("docs/scripting.md names txlab.%s, which the module does not have", m[1])
		}
	}
	for n := range have {
		if !named[n] {
			t.Errorf("docs/scripting.md does not document txlab.%s", n)
		}
	}
}

// The error lines docs/scripting.md shows are what the scripts give,
// word for word (the "known:" lists are the registries').
func TestDocErrors(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scripting.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Errors\n.*?```\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no error block under ## Errors")
	}
	// The source giving each shown line. The wall-clock and allocation
	// lines run with small bounds, the shown bound put back in after.
	type src struct {
		text     string
		opts     Options
		from, to string // the bound as given, as shown
		anyPlace bool   // where the VM stops depends on the clock
	}
	sources := map[string]src{
		"syntax error":     {text: "txlab := import(\"txlab\")\nx := (\n"},
		"unknown qdisc":    {text: "txlab := import(\"txlab\")\ntxlab.qdisc(\"fifo\")\n"},
		"unknown option":   {text: "txlab := import(\"txlab\")\ntxlab.device({queus: 4})\n"},
		"out of range":     {text: "txlab := import(\"txlab\")\ntxlab.device({queues: 5000})\n"},
		"integer divide":   {text: "x := 0\ny := 1\nz := y / x\n"},
		"negative Repeat":  {text: "text := import(\"text\")\nx := text.repeat(\"a\", -1)\n"},
		"allocation limit": {text: "x := 1\na := []\nb := 2\nfor { a = append(a, 1) }\n", opts: Options{MaxAllocs: 5000}, from: "(5000 objects)", to: "(5000000 objects)"},
		"stopped after 5s": {text: "x := 1\ny := 2\nfor {\n\tx = x + 1\n}\n", opts: Options{Timeout: 50 * time.Millisecond}, from: "after 50ms", to: "after 5s", anyPlace: true},
	}
	lines := strings.Split(strings.TrimSpace(string(m[1])), "\n")
	for _, want := range lines {
		key := ""
		for k := range sources {
			if strings.Contains(want, k) {
				key = k
			}
		}
		if key == "" {
			t.Errorf("no source for the shown error %q", want)
			continue
		}
		c := sources[key]
		_, err := eval(t, c.text, c.opts)
		if err == nil {
			t.Errorf("%q: no error", want)
			continue
		}
		got := strings.Replace(err.Error(), "t.tengo:", "scripts/x.tengo:", 1)
		if c.from != "" {
			got = strings.Replace(got, c.from, c.to, 1)
		}
		if c.anyPlace {
			place := regexp.MustCompile(`^scripts/x\.tengo:\d+:\d+: `)
			got, want = place.ReplaceAllString(got, ""), place.ReplaceAllString(want, "")
		}
		if got != want {
			t.Errorf("docs/scripting.md shows\n\t%s\nthe script gives\n\t%s", want, got)
		}
	}
}
