package idpf_test

import (
	"testing"

	_ "github.com/txlab/txlab/drivers/idpf" // registers "idpf"
	"github.com/txlab/txlab/drivers/internal/e2e"
	"github.com/txlab/txlab/framework/report"
)

// End to end through the host: the idpf model under mq pfifo and under
// a single root qdisc, accounting checked by run, per-queue counters add
// up to the device totals, the completion queue never over half full.
func TestEndToEnd(t *testing.T) {
	e2e.RingDriver(t, "idpf", 200_000_000_000, func(t *testing.T, q report.Queue) {
		if p, ok := e2e.Ethtool(q, "complq_max_pending"); !ok || p > 256/2+2 {
			t.Errorf("q%d: complq_max_pending %d (present %v), complq 256", q.Txq, p, ok)
		}
	})
}
