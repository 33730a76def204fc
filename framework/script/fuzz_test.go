package script

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzLoad feeds arbitrary sources to the loader and evaluator: they may
// fail, but only with a one-line *Error, never a panic or a hang.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		small,
		small + "txlab.compare(\"profile\", [\"6.18\", \"6.19-rc1\"])\n",
		"txlab := import(\"txlab\")\ntxlab.qdisc({kind: \"mq\", child: {kind: \"pfifo\", limit: 3}})\n",
		"txlab := import(\"txlab\")\ntxlab.every(\"1ms\", txlab.hook(`act = {rate: live.rate * 2}`))\n",
		"x := 1 +", "for {}", "os := import(\"os\")", "a := []\nfor { a = append(a, 1) }",
		"txlab := import(\"txlab\")\ntxlab.at(-1, {phase: \"p\"})\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		opts := Options{MaxAllocs: 20000, Timeout: 200 * time.Millisecond, HookMaxAllocs: 1000, HookTimeout: 20 * time.Millisecond}
		p, err := Load("f.tengo", []byte(src), opts)
		if err == nil {
			_, err = p.Eval()
		}
		if err == nil {
			return
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("error is %T, not *script.Error: %v", err, err)
		}
		if !strings.HasPrefix(err.Error(), "f.tengo") {
			t.Fatalf("error does not name the file: %q", err)
		}
	})
}
