package ets

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"ets"}, "bands 4 strict 1 quanta 3000 2000 priomap 3 2 1 0", "quanta 1 4294967295", "strict 16 priomap 15")
}
