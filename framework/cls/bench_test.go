package cls

import (
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/tc"
)

// BenchmarkFlowerClassify is fl_classify with 256 filters on one mask
// (one per destination port) and a packet matching the last one: a
// hashtable lookup per mask, whatever the number of filters.
func BenchmarkFlowerClassify(b *testing.B) {
	s := NewSet()
	for i := 0; i < 256; i++ {
		words := fmt.Sprintf("protocol ip pref 1 flower ip_proto udp dst_port %d classid 1:%x", 4746+i, i+1)
		cmd, err := tc.ParseFilter(strings.Fields(words))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Add(tc.VerbAdd, cmd, root); err != nil {
			b.Fatal(err)
		}
	}
	p := pkt()
	ctx := qdisc.CheckCtx()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := s.Classify(ctx, &p, root); r.Class != 0x10100 {
			b.Fatalf("class %v", r.Class)
		}
	}
}
