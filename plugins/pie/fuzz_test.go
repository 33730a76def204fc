package pie

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"pie", "fq_pie"}, "limit 1 target 1us tupdate 1us alpha 32 beta 32 ecn bytemode dq_rate_estimator", "limit 4294967295 target 4294967295")
}
