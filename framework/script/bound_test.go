package script

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Programs with different --max-allocs compiled and run at the same time
// (variants in parallel, a sweep's points) each see their own bound on
// one string: tengo's bound is process-wide, and holdBound keeps it
// right for whoever runs (run with -race).
func TestValueBoundPerProgram(t *testing.T) {
	src := []byte("text := import(\"text\")\nx := text.repeat(\"ab\", 600)\n") // 1200 bytes
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			limit := int64(1000 + 100*(i%2)*10) // 1000 (refused) or 2000 (fits)
			p, err := Load("t.tengo", src, Options{MaxAllocs: limit})
			if err != nil {
				t.Error(err)
				return
			}
			for range 20 {
				_, err := p.Eval()
				want := fmt.Sprintf("one string or bytes value may hold %d bytes", limit)
				switch {
				case limit < 1200 && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("bound %d: error %v, want %q", limit, err, want)
					return
				case limit >= 1200 && err != nil:
					t.Errorf("bound %d: %v", limit, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
