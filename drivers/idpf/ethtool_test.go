package idpf

import (
	"testing"

	"github.com/txlab/txlab/drivers/internal/e2e"
)

// The report's ethtool -S lines carry idpf's own names.
func TestEthtoolNames(t *testing.T) { e2e.EthtoolLines(t, "idpf", "tx_q-%d_pkts", "tx-unicast_pkts") }

// A TSO packet counts as its segments in the queue's stats.
func TestStatsCountSegments(t *testing.T) { e2e.StatsCountSegments(t, &IDPF{}) }
