package driver

import (
	"fmt"

	"github.com/txlab/txlab/framework/sim"
)

// RxInfo is a NIC's receive side as its driver sets it up: what the host
// needs to model the RX rings, RSS and the RX interrupt (the frames, the
// rings' occupancy and the NAPI clean run in the host, framework/netdev,
// which calls no driver code per frame).
type RxInfo struct {
	// RingSize is the descriptors per RX ring (ethtool -g rx).
	RingSize int
	// MaxQueues is the most RX queues RSS may spread over (ethtool -l
	// max rx/combined).
	MaxQueues int
	// QueueVec is the MSI-X vector of each RX queue (queue pairs: rx
	// queue i shares vector i with tx queue i).
	QueueVec []int
	// ITR is the RX interrupt moderation (ethtool -C rx-usecs): the
	// vector's RX interval when it is static (ITRProfile empty), and
	// the local receive path's (local.go) always.
	ITR sim.Time
	// ITRProfile is the RX DIM's table (ice's rx_profile[], idpf's
	// rx_itr[]): with it the host runs lib/dim on each vector's RX
	// container (ice_net_dim, idpf_net_dim), sampled at
	// napi_complete_done, and the RX interval is the profile's ITR.
	// Empty: the static ITR (adaptive-rx off), or the driver's own.
	ITRProfile []sim.Time
	// OwnITR is a driver whose moderation is its own, not lib/dim's
	// (i40e's i40e_update_enable_itr): the driver is an RxModerator,
	// and at each napi_complete_done of a vector the host gives it what
	// the vector's RX rings cleaned and arms with the RX ITR it returns
	// (ITR is the first).
	OwnITR bool
	// DIMStart is the profile the RX DIM starts at and the vector's
	// first RX ITR (ICE_DIM_DEFAULT_PROFILE_IX, IDPF_DIM_DEFAULT_PROFILE_IX).
	DIMStart int
	// INTRL is the vector's interrupt rate limit, 0 for none: ice
	// writes 4 us when either container is dynamic
	// (ice_set_q_vector_intrl). The RX interval is never shorter.
	INTRL sim.Time
	// BufSize is the page fragment one RX buffer is, what
	// napi_build_skb is handed as frag_size (skb.TruesizeFrag).
	BufSize int
	// RefillBatch is how the clean loop gives buffers back to the
	// hardware: before reading each descriptor, when RefillBatch or
	// more wait (i40e's clean_threshold, half the ring; they wait
	// across polls), or, 0, all of them once at the end of the clean
	// (ice_clean_rx_irq's ice_alloc_rx_bufs).
	RefillBatch int
	// LUTSize is the RSS indirection table's entries; the table is
	// filled round robin over the queues (ethtool_rxfh_indir_default).
	LUTSize int
	// Stats names the ethtool -S keys: per-queue packet and byte
	// counters (a format with one %d) and the port's drop counter.
	QueuePackets, QueueBytes, PortDropped string
}

// Validate checks what a driver (a plugin's, too) returned.
func (r *RxInfo) Validate(numRxQ int) error {
	switch {
	case r.RingSize < 2:
		return fmt.Errorf("rx ring of %d descriptors", r.RingSize)
	case r.MaxQueues < 1:
		return fmt.Errorf("rx max queues %d", r.MaxQueues)
	case len(r.QueueVec) < numRxQ:
		return fmt.Errorf("rx queue vectors for %d of %d queues", len(r.QueueVec), numRxQ)
	case r.BufSize < 64 || r.RefillBatch < 0 || r.ITR < 0 || r.INTRL < 0:
		return fmt.Errorf("rx buffer %d B, refill batch %d, itr %v, intrl %v", r.BufSize, r.RefillBatch, r.ITR, r.INTRL)
	case len(r.ITRProfile) > 0 && r.OwnITR:
		return fmt.Errorf("rx moderation both lib/dim's (%d profiles) and the driver's own", len(r.ITRProfile))
	case len(r.ITRProfile) > 0 && (r.DIMStart < 0 || r.DIMStart >= len(r.ITRProfile)):
		return fmt.Errorf("rx dim starts at profile %d of %d", r.DIMStart, len(r.ITRProfile))
	case r.LUTSize < 1 || r.LUTSize&(r.LUTSize-1) != 0:
		return fmt.Errorf("rss table of %d entries (a power of two)", r.LUTSize)
	}
	for i, itr := range r.ITRProfile {
		if itr < 0 {
			return fmt.Errorf("rx dim profile %d: itr %v", i, itr)
		}
	}
	return nil
}

// StartITR is the vector's first RX interval: the DIM's start profile
// (ice_init_moderation, idpf_vport_intr_ena_irq_all) or the static ITR,
// no shorter than the rate limit.
func (r *RxInfo) StartITR() sim.Time {
	if len(r.ITRProfile) > 0 {
		return r.ProfileITR(r.DIMStart)
	}
	return max(r.ITR, r.INTRL)
}

// ProfileITR is the RX interval of profile ix (ice_rx_dim_work,
// idpf_rx_dim_work write its ITR), no shorter than the rate limit.
func (r *RxInfo) ProfileITR(ix int) sim.Time { return max(r.ITRProfile[ix], r.INTRL) }
