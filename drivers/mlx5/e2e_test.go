package mlx5_test

import (
	"testing"

	"github.com/txlab/txlab/drivers/internal/e2e"
	_ "github.com/txlab/txlab/drivers/mlx5" // registers "mlx5"
	"github.com/txlab/txlab/framework/report"
)

// End to end through the host: the mlx5 model under mq pfifo, under a
// single root qdisc and on a slow wire without BQL; accounting checked
// by run, per-queue counters add up to the device's, the SQ within its
// WQEBBs.
func TestEndToEnd(t *testing.T) {
	e2e.RingDriver(t, "mlx5", 100_000_000_000, func(t *testing.T, q report.Queue) {
		if used, _ := e2e.Ethtool(q, "ring_used_max"); used < 0 || used > 256 {
			t.Errorf("q%d: %d WQEBBs used of 256", q.Txq, used)
		}
	})
}

// The report's ethtool -S lines carry mlx5e's own names, its packet
// counters counting at transmit.
func TestEthtoolNames(t *testing.T) { e2e.EthtoolLinesAtXmit(t, "mlx5", "tx%d_packets", "tx_packets") }
