package run

import (
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// etf under traffic: UDP senders whose sockets set SO_TXTIME on
// CLOCK_TAI (--groups txtime=500us: each packet to go 500 us after its
// send) have etf hold each packet until 100 us before its time, so the
// qdisc holds about 400 us of the senders' packets and none is late; a
// sender without SO_TXTIME has every packet refused (is_packet_valid),
// and fq, whose clock is CLOCK_MONOTONIC, takes a TAI txtime for one
// far beyond its horizon and drops it (FQ_HORIZON_LIMIT), as the
// kernel's fq does.
func TestETFTxtime(t *testing.T) {
	// held is the qdisc's backlog averaged over the window's intervals:
	// the senders sleep on their send buffers and wake in bursts, so the
	// backlog at one instant swings between a fifth and all of it.
	run := func(groups, tcText, root string) (sent, held uint64, drops map[string]uint64) {
		s := htbHost(groups, 2, tcText)
		s.Qdisc, s.Profile = root, "6.18" // etf's sch->limit is 0: 6.19-rc1's defer bound would drop (as for tbf)
		s.Duration, s.Warmup = 10*sim.Millisecond, 2*sim.Millisecond
		rep := mustRun(t, s)
		if !rep.AccountingOK {
			t.Fatalf("%s %q: accounting %s", root, groups, rep.AccountingError)
		}
		var sum int64
		for _, iv := range rep.Series {
			sum += iv.Backlog
		}
		if len(rep.Series) > 0 {
			held = uint64(sum / int64(len(rep.Series)))
		}
		return rep.TxPackets, held, rep.Drops
	}
	etf := "qdisc replace dev eth0 root handle 1: etf clockid CLOCK_TAI delta 100000\n"
	sent, held, drops := run("txtime=500us", etf, "pfifo")
	// 10 Gbit/s, 1514-byte frames: 400 us is ~330 frames, fewer when
	// the senders' buffers (233 skbs each) bound them
	if sent == 0 || held < 80 || drops["NOT_SPECIFIED"] != 0 || drops["QDISC_DROP"] != 0 {
		t.Errorf("txtime 500us: sent %d, held %d on average, drops %v", sent, held, drops)
	}
	if sent, _, drops := run("-", etf, "pfifo"); sent != 0 || drops["QDISC_DROP"] == 0 {
		t.Errorf("no SO_TXTIME: sent %d, drops %v; want every packet refused", sent, drops)
	}
	if _, _, drops := run("txtime=500us", "", "fq"); drops["FQ_HORIZON_LIMIT"] == 0 {
		t.Errorf("TAI txtimes through fq: drops %v, want FQ_HORIZON_LIMIT", drops)
	}
}
