package netdev

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/sim"
)

// DrainPhase is one step of a qdisc owner's work on the TX path, as the
// kernel's code splits it (__dev_xmit_skb's defer_list drain, __qdisc_run,
// sch_direct_xmit, net_tx_action).
type DrainPhase uint8

// The phases DrainProfile splits the owner's time into.
const (
	PhEnqLock      DrainPhase = iota // spin_lock(root_lock) of the CPU that found defer_list empty (wait included)
	PhReverse                        // llist_del_all + llist_reverse_order
	PhEnqueue                        // dev_qdisc_enqueue of the batch (the skbs' lines, the qdisc's)
	PhRunBegin                       // qdisc_run_begin
	PhDequeue                        // dequeue_skb: gso_skb, skb_bad_txq, q->dequeue and the bulk
	PhUnlock                         // spin_unlock(root_lock) before the driver
	PhValidate                       // validate_xmit_skb_list
	PhHardLock                       // HARD_TX_LOCK (wait included)
	PhDriver                         // dev_hard_start_xmit: ndo_start_xmit, doorbells, BQL
	PhHardUnlock                     // HARD_TX_UNLOCK
	PhRelock                         // spin_lock(root_lock) back in sch_direct_xmit (wait included)
	PhRequeue                        // dev_requeue_skb and its __netif_schedule
	PhQuota                          // __netif_schedule when the quota is used up
	PhRunEnd                         // qdisc_run_end
	PhDrainUnlock                    // the drainer's spin_unlock(root_lock) and its frees after
	PhTxActionLock                   // net_tx_action's spin_lock(root_lock) (wait included)
	NumDrainPhases
)

// String names the phase as the kernel's function.
func (p DrainPhase) String() string {
	return [...]string{"root lock (defer drainer)", "llist del_all+reverse", "enqueue", "qdisc_run_begin",
		"dequeue_skb", "root unlock", "validate", "HARD_TX_LOCK", "dev_hard_start_xmit", "HARD_TX_UNLOCK",
		"root relock (sch_direct_xmit)", "dev_requeue_skb", "quota __netif_schedule", "qdisc_run_end",
		"drainer unlock + frees", "root lock (net_tx_action)"}[p]
}

// DrainProfile is where the owners of the qdiscs spend their time, by
// phase (a lab measurement: Net.Prof, nil unless a test or the lab asks).
// Pkts are the packets the drivers took on the way (dev_hard_start_xmit);
// Restarts the qdisc_restart calls that found skbs, Requeued the skbs
// dev_requeue_skb put back.
type DrainProfile struct {
	Ns                       [NumDrainPhases]int64
	Calls                    [NumDrainPhases]uint64
	Pkts, Restarts, Requeued uint64
	// Bulks are try_bulk_dequeue_skb calls; BulkAvail and BulkQlen sum
	// the BQL bytes available and the qdisc's qlen each found.
	Bulks, BulkStopped, BulkPkts uint64
	BulkAvail, BulkQlen          int64
	// SkbLineNs is the time the phases spent pulling skb lines another
	// CPU wrote (touchSkb), part of their Ns; Cur is the phase running.
	SkbLineNs [NumDrainPhases]int64
	Cur       DrainPhase
}

// setCur notes the phase that is running, for SkbLineNs.
func (n *Net) setCur(p DrainPhase) {
	if n.Prof != nil {
		n.Prof.Cur = p
	}
}

// prof adds the time since t to phase p, when profiling.
func (n *Net) prof(c *sim.CPU, p DrainPhase, t sim.Time) {
	if pr := n.Prof; pr != nil {
		pr.Ns[p] += int64(c.Now() - t)
		pr.Calls[p]++
	}
}

// Total is the profiled time in ns.
func (p *DrainProfile) Total() int64 {
	var t int64
	for _, ns := range p.Ns {
		t += ns
	}
	return t
}

// String is the breakdown per transmitted packet, one phase a line.
func (p *DrainProfile) String() string {
	var b strings.Builder
	pk := float64(max(p.Pkts, 1))
	fmt.Fprintf(&b, "%d packets, %d restarts (%.1f packets each), %d requeued; %.0f ns a packet:\n",
		p.Pkts, p.Restarts, pk/float64(max(p.Restarts, 1)), p.Requeued, float64(p.Total())/pk)
	if p.Bulks > 0 {
		fmt.Fprintf(&b, "  bulk dequeues: %d (%d with no BQL room), %.1f packets, BQL avail %.0f bytes and qlen %.1f on average\n",
			p.Bulks, p.BulkStopped, float64(p.BulkPkts)/float64(p.Bulks), float64(p.BulkAvail)/float64(p.Bulks), float64(p.BulkQlen)/float64(p.Bulks))
	}
	for i, ns := range p.Ns {
		if p.Calls[i] == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %-30s %7.1f ns/pkt  %6.0f ns/call  %.2f calls/pkt", DrainPhase(i), float64(ns)/pk,
			float64(ns)/float64(p.Calls[i]), float64(p.Calls[i])/pk)
		if l := p.SkbLineNs[i]; l > 0 {
			fmt.Fprintf(&b, "  (skb lines %.1f ns/pkt)", float64(l)/pk)
		}
		b.WriteString("\n")
	}
	return b.String()
}
