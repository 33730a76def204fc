package tbf

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc/qdiscfuzz"
)

// Any words: a clear error, or a qdisc that takes packets, dumps, gives
// them back and resets to empty, without a panic.
func FuzzOptions(f *testing.F) {
	qdiscfuzz.FuzzOptions(f, []string{"tbf"}, "rate 1mbit burst 10kb latency 50ms peakrate 2mbit mtu 1514 mpu 64 overhead 20 linklayer atm", "rate 8bit burst 1 limit 1", "rate 100gbit burst 1/8 limit 0")
}
