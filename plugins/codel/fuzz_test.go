package codel

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"codel"}, "limit 1 target 1us interval 1us ecn ce_threshold 1us", "limit 4294967295 target 4294967295 interval 4294967295",
		"limit 0 noecn ce_threshold 4294967295", "target 1ms interval 2ms")
}
