package ice

import (
	"testing"

	"github.com/txlab/txlab/drivers/internal/e2e"
)

// The report's ethtool -S lines carry ice's own names.
func TestEthtoolNames(t *testing.T) { e2e.EthtoolLines(t, "ice", "tx_queue_%d_packets", "tx_unicast") }

// A TSO packet counts as its segments in the queue's stats.
func TestStatsCountSegments(t *testing.T) { e2e.StatsCountSegments(t, &ICE{}) }
