package i40e

import (
	"testing"

	"github.com/txlab/txlab/drivers/internal/e2e"
)

// The report's ethtool -S lines carry i40e's own names.
func TestEthtoolNames(t *testing.T) { e2e.EthtoolLines(t, "i40e", "tx-%d.packets", "tx_packets") }

// A TSO packet counts as its segments in the queue's stats.
func TestStatsCountSegments(t *testing.T) { e2e.StatsCountSegments(t, &I40E{}) }
