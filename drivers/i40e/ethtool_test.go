package i40e

import (
	"testing"

	"github.com/txlab/txlab/drivers/internal/e2e"
)

// The report's ethtool -S lines carry i40e's own names.
func TestEthtoolNames(t *testing.T) { e2e.EthtoolLines(t, "i40e", "tx-%d.packets", "tx_packets") }
