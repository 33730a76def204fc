package netem

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"netem"}, "limit 10 delay 1ms 1ms 50% distribution pareto loss gemodel 10% 20% 30% 40% duplicate 50% 50% reorder 50% gap 2 corrupt 10% rate 1kbit -100 7 -3 slot 1ms 2ms packets 1 bytes 1 seed 1 ecn", "delay 1ns 2147483647ns slot distribution normal 1ns 1ns", "rate 1bit 2147483647 4294967295 -2147483648")
}
