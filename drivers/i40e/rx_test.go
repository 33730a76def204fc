package i40e

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
)

// The receive side the host models (drivertest.CheckRxInfo) with i40e's
// RX defaults. The RX moderation is i40e's own (i40e_update_itr, not
// lib/dim's): RxInfo says OwnITR, with no DIM profile and no rate limit,
// and starts at the configured RX ITR; the clean refills at half the
// ring (clean_threshold).
func TestRxInfo(t *testing.T) {
	drivertest.CheckRxInfo(t, func() driver.Driver { return &I40E{} }, drivertest.RxInfoWant{
		Ring: 512, ITR: 50 * sim.Microsecond, MaxQueues: 64, BufSize: 2048, LUTSize: 512,
		QueuePackets: "rx-%d.packets", RefillHalf: true, OwnITR: true,
	})
}
