package script

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
