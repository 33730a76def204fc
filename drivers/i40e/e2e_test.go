package i40e_test

import (
	"testing"

	_ "github.com/txlab/txlab/drivers/i40e" // registers "i40e"
	"github.com/txlab/txlab/drivers/internal/e2e"
	"github.com/txlab/txlab/framework/report"
)

// End to end through the host: the i40e model under mq pfifo and under
// a single root qdisc, accounting checked by run, per-queue counters add
// up to the device totals, the ring within bounds.
func TestEndToEnd(t *testing.T) {
	e2e.RingDriver(t, "i40e", 25_000_000_000, func(t *testing.T, q report.Queue) {
		if used, _ := e2e.Ethtool(q, "ring_used"); used < 0 || used > 255 {
			t.Errorf("q%d: ring_used %d of 256", q.Txq, used)
		}
	})
}
