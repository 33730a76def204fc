package run

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// taprio, the 802.1Qbv gate control list, on a 1 Gbit/s device of four
// queues: its mapping is the device's (priority 0 to class 0 on queues
// 0-1, priority 1 to class 1 on queues 2-3, which netdev_pick_tx keeps
// each packet within), and with class 0's gate open 300 us and class
// 1's 700 us of each 1 ms cycle, four senders that keep both classes
// backlogged get about that split of the link, class 0 a little less:
// at each of its gate's closes, the frame that would end past it waits
// (the guard band).
func TestTaprioGates(t *testing.T) {
	s := htbHost("prio=0 prio=1", 4, `
qdisc replace dev eth0 root handle 100: taprio num_tc 2 map 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 queues 2@0 2@2 base-time 0 sched-entry S 01 300000 sched-entry S 02 700000 clockid CLOCK_TAI
`)
	s.Queues, s.RateBps, s.Profile = 4, 1_000_000_000, "6.18"
	s.Duration, s.Warmup = 30*sim.Millisecond, 10*sim.Millisecond
	rep := mustRun(t, s)
	var byQueue [4]uint64
	for _, q := range rep.Queues {
		byQueue[q.Txq] = q.TxBytes
	}
	c := classes(rep)
	tc0, tc1 := float64(byQueue[0]+byQueue[1]), float64(byQueue[2]+byQueue[3])
	share := tc0 / (tc0 + tc1)
	rate := (tc0 + tc1) * 8 / (float64(s.Duration) / 1e9)
	if !rep.AccountingOK || share < 0.26 || share > 0.30 || rate < 0.95e9 {
		t.Errorf("accounting %v %s; class 0 %.3f of %.3f Gbit/s (queues %v)", rep.AccountingOK, rep.AccountingError, share, rate/1e9, byQueue)
	}
	// each queue's class is its TX queue's (100:1 is queue 0)
	if c["100:1"].SentBytes == 0 || c["100:3"].SentBytes == 0 || c["100:1"].SentBytes+c["100:2"].SentBytes > byQueue[0]+byQueue[1]+3028 {
		t.Errorf("classes %+v, queues %v", c, byQueue)
	}
}
