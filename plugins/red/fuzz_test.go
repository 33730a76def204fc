package red

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"red"}, "limit 1000 avpkt 1 min 1 max 2 burst 1 probability 1 bandwidth 1bit ecn nodrop harddrop adaptive", "limit 4294967295 avpkt 4294967295", "limit 100 avpkt 1000 probability 0.00000001")
}
