package mlx5

import (
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func newSQ(t *testing.T, args ...string) (*MLX5, *drivertest.Ctx) {
	t.Helper()
	d := &MLX5{}
	if _, err := d.Init(driver.Setup{NumTxQ: 1, NumCPUs: 2, Costs: sim.DefaultCosts()}, args); err != nil {
		t.Fatal(err)
	}
	return d, drivertest.New(t, 1, true)
}

// A bulk of small linear skbs goes into MPWQE sessions of 58 packets
// (15 WQEBBs: two header segments and one data segment a packet), the
// last one cut short by the doorbell, and asks for one CQE, on the rung
// WQE; once the wire has sent them, one CQE completes all of them, and
// BQL hears of every packet in that one clean.
func TestMPWQEOneCQEPerDoorbell(t *testing.T) {
	d, f := newSQ(t)
	rest, rc := f.Xmit(d, 0, f.Packets(0, 100, 162))
	if len(rest) != 0 || rc != driver.TxOK {
		t.Fatalf("rest %d rc %#x", len(rest), rc)
	}
	q := d.sqs[0]
	// 58 packets: 60 DS = 15 WQEBBs; 42: 44 DS = 11 WQEBBs.
	if q.used != 26 || q.wN != 2 || q.mpwqeBlks != 2 || q.mpwqePkts != 100 {
		t.Fatalf("used %d WQEBBs in %d WQEs (%d sessions, %d packets), want 26 in 2 (2, 100)", q.used, q.wN, q.mpwqeBlks, q.mpwqePkts)
	}
	if q.stats.Doorbells != 1 || q.cqes.Len() != 1 || q.cqes.Peek() != 1 {
		t.Fatalf("doorbells %d, CQEs asked %d (on WQE %d), want 1 on WQE 1", q.stats.Doorbells, q.cqes.Len(), q.cqes.Peek())
	}
	if len(f.Irqs) != 1 {
		t.Fatalf("interrupts %v, want one for the CQE", f.Irqs)
	}
	f.Clock = f.Irqs[0].At
	f.ServiceIRQs(d, nil)
	if f.Consumed[0] != 100 || f.ComplBytes[0] != 100*162 || q.cqesPolled != 1 || q.used != 0 {
		t.Fatalf("consumed %d (%d bytes to BQL) with %d CQEs, %d WQEBBs left; want 100 (16200) with 1, 0",
			f.Consumed[0], f.ComplBytes[0], q.cqesPolled, q.used)
	}
}

// Without MPWQE (the private flag off) every skb is a WQE of its own, a
// WQEBB for a linear one, and the bulk still rings once.
func TestNoMPWQE(t *testing.T) {
	d, f := newSQ(t, "skb_tx_mpwqe", "off")
	f.Xmit(d, 0, f.Packets(0, 100, 162))
	q := d.sqs[0]
	if q.used != 100 || q.wN != 100 || q.mpwqeBlks != 0 || q.stats.Doorbells != 1 || q.cqes.Len() != 1 {
		t.Fatalf("used %d in %d WQEs, %d sessions, %d doorbells, %d CQEs; want 100, 100, 0, 1, 1", q.used, q.wN, q.mpwqeBlks, q.stats.Doorbells, q.cqes.Len())
	}
}

// The queue stops once less than the stop room is free (31 WQEBBs
// without MPWQE: the largest WQE across a wrap), checked where a WQE is
// completed; the bulk stops there and the doorbell rings. The clean
// that frees room wakes the queue.
func TestStopRoomAndWake(t *testing.T) {
	d, f := newSQ(t, "tx", "64", "skb_tx_mpwqe", "off")
	rest, _ := f.Xmit(d, 0, f.Packets(0, 40, 162))
	q := d.sqs[0]
	// The 34th WQE leaves 30 of 64 free and stops the queue.
	if len(rest) != 6 || !f.QueueStopped(0) || q.stats.Stopped != 1 || q.stats.Doorbells != 1 {
		t.Fatalf("rest %d stopped %v (%d) doorbells %d; want 6 left, stopped once, rung", len(rest), f.QueueStopped(0), q.stats.Stopped, q.stats.Doorbells)
	}
	f.Clock = f.Irqs[0].At
	f.ServiceIRQs(d, nil)
	if f.QueueStopped(0) || f.Wakes[0] != 1 || q.stats.Restart != 1 {
		t.Fatalf("stopped %v after the clean, wakes %d", f.QueueStopped(0), f.Wakes[0])
	}
}

// One poll takes at most 128 CQEs (MLX5E_TX_CQ_POLL_BUDGET) and then
// reports itself busy, so NAPI polls again; a CQE can complete many
// packets, so one poll can hand BQL far more than 128 packets.
func TestPollBudgetIsCQEs(t *testing.T) {
	d, f := newSQ(t, "tx", "8192")
	for i := 0; i < 130; i++ {
		f.Xmit(d, 0, f.Packets(0, 8, 162)) // a doorbell, a CQE, every 8
	}
	q := d.sqs[0]
	if q.cqes.Len() != 130 {
		t.Fatalf("%d CQEs asked, want 130", q.cqes.Len())
	}
	f.Clock += sim.Millisecond
	work, done := d.Poll(f, 0, 64)
	if done || work != 64 || q.cqesPolled != 128 || f.Consumed[0] != 128*8 || f.ComplBytes[0] != 128*8*162 {
		t.Fatalf("work %d done %v after %d CQEs, %d packets; want busy after 128, 1024", work, done, q.cqesPolled, f.Consumed[0])
	}
	if _, done := d.Poll(f, 0, 64); !done || f.Consumed[0] != 130*8 {
		t.Fatalf("second poll done %v, consumed %d", done, f.Consumed[0])
	}
}

// A TSO skb takes a WQE of its own: the header segments, four of
// inlined headers and a data segment for each 32 KB fragment of its
// payload, none for its head (headlen = skb_headlen - ihs = 0): two
// fragments make 8 segments, two WQEBBs, where a head segment would
// make it three. (Len is skb->len: segments x MSS plus the headers.)
func TestTSOWQEs(t *testing.T) {
	for _, tc := range []struct {
		segs uint16
		len  uint32
		tcp  bool
		want int
	}{
		{1, 162, false, 1}, {45, 45*1448 + 66, true, 2}, {60, 60*1448 + 66, true, 3}, {2, 2*1448 + 66, true, 2}, {45, 65535 * 8, true, 6},
		{44, 44*1448 + 66, true, 2}, // 63,778 bytes, two fragments: 8 segments, 3 WQEBBs with a head segment
	} {
		p := newPkt(tc.segs, tc.len)
		if tc.tcp {
			p.Keys.Proto = 6
		}
		got := wqebbsFor(p)
		if got != tc.want {
			t.Errorf("%d segs %d bytes: %d WQEBBs, want %d", tc.segs, tc.len, got, tc.want)
		}
	}
}

// ethtool -G tx rounds up to a power of two within the SQ's bounds;
// the moderation starts at DIM's default EQE profile (8 us) or, with
// adaptive-tx off, at 16 us or the tx-usecs given (a tx-usecs alone is
// stored and DIM stays on, as mlx5e_ethtool_set_coalesce does); the
// receive side is refused.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		ring    int
		itr     sim.Time
		dim     bool
		wantErr string
	}{
		{nil, 1024, 8 * sim.Microsecond, true, ""},
		{[]string{"tx", "1000"}, 1024, 8 * sim.Microsecond, true, ""},
		{[]string{"tx", "4096", "adaptive-tx", "off"}, 4096, 16 * sim.Microsecond, false, ""},
		{[]string{"tx-usecs", "32"}, 1024, 8 * sim.Microsecond, true, ""},
		{[]string{"tx-usecs", "32", "adaptive-tx", "off"}, 1024, 32 * sim.Microsecond, false, ""},
		{[]string{"tx-usecs", "32", "adaptive-tx", "on"}, 1024, 8 * sim.Microsecond, true, ""},
		{[]string{"tx", "32"}, 0, 0, false, "must be in [64, 8192]"},
		{[]string{"tx", "9000"}, 0, 0, false, "must be in [64, 8192]"},
		// mlx5e_validate_params: the stop room must be under the SQ size.
		{[]string{"tx", "32", "skb_tx_mpwqe", "off"}, 0, 0, false, "must be in [64, 8192]"},
		{[]string{"tx", "64"}, 64, 8 * sim.Microsecond, true, ""},
		{[]string{"skb_tx_mpwqe", "maybe"}, 0, 0, false, "want on or off"},
		{[]string{"tx-usecs", "4096"}, 0, 0, false, "mlx5: tx-usecs 4096: at most 4095 (MLX5E_MAX_COAL_TIME)"},
		{[]string{"rx", "1024"}, 0, 0, false, "receive side is not modelled"},
		{[]string{"rx-queues", "4"}, 0, 0, false, "unknown option"},
	} {
		d := &MLX5{}
		info, ok := drivertest.Init(t, d, driver.Setup{NumTxQ: 2, NumCPUs: 2, Costs: sim.DefaultCosts()}, tc.args, tc.wantErr)
		if !ok {
			continue
		}
		if info.RingSize != tc.ring || d.vecs[1].ITR != tc.itr || (d.sqs[1].dim != nil) != tc.dim || info.Rx != nil {
			t.Errorf("%v: ring %d itr %v dim %v rx %v; want %d %v %v nil", tc.args, info.RingSize, d.vecs[1].ITR, d.sqs[1].dim != nil, info.Rx, tc.ring, tc.itr, tc.dim)
		}
	}
}

func newPkt(segs uint16, n uint32) skb.Packet { return skb.Packet{Len: n, GSOSegs: segs, Sock: -1} }

// A session takes what is left of its 64-WQEBB page, at most 15
// WQEBBs (mlx5e_txqsq_get_next_pi_anysize, 6.15 on): after four full
// sessions (60 WQEBBs) the fifth fills the page's last four (14 packets
// after its two header segments) and the next starts on the next page;
// no NOP.
func TestSessionShrinksAtPageEdge(t *testing.T) {
	d, f := newSQ(t)
	f.Xmit(d, 0, f.Packets(0, 4*58+14+1, 162))
	q := d.sqs[0]
	if q.nops != 0 || q.mpwqeBlks != 6 || q.used != 60+4+1 || q.pc != 65 {
		t.Fatalf("nops %d sessions %d used %d pc %d, want 0, 6, 65, 65", q.nops, q.mpwqeBlks, q.used, q.pc)
	}
	f.Clock = f.Irqs[0].At
	f.ServiceIRQs(d, nil)
	if q.used != 0 || f.Consumed[0] != 4*58+14+1 {
		t.Fatalf("after the CQE: used %d, consumed %d", q.used, f.Consumed[0])
	}
}

// A WQE of its own still needs contiguous room (mlx5e_txqsq_get_next_pi):
// a TCP data skb at a page's last two WQEBBs finds them filled with
// NOPs, counted in tx_nop and taking room until a CQE past them frees
// it.
func TestNOPsBeforeAWQEAtPageEdge(t *testing.T) {
	d, f := newSQ(t)
	f.Xmit(d, 0, f.Packets(0, 4*58+6, 162)) // 60 WQEBBs + a 2-WQEBB session
	q := d.sqs[0]
	data := f.Packets(0, 1, 90000) // a BIG TCP skb: three fragments, 9 segments
	data[0].Keys.Proto, data[0].GSOSegs = 6, 60
	n := wqebbsFor(data[0])
	if q.pc != 62 || n <= 2 {
		t.Fatalf("pc %d, a 90 KB TSO skb %d WQEBBs: the test needs 62 and more than 2", q.pc, n)
	}
	f.Xmit(d, 0, data)
	if q.nops != 2 || q.pc != 64+n {
		t.Fatalf("nops %d pc %d, want 2, %d", q.nops, q.pc, 64+n)
	}
}

// A TCP skb that carries data is not linear (tcp_sendmsg puts the
// payload in page fragments), so it takes a WQE of its own and closes
// an open session; a pure ACK is linear and joins one.
func TestTCPDataNotMPWQE(t *testing.T) {
	d, f := newSQ(t)
	batch := f.Packets(0, 3, 66) // ACKs
	data := f.Packets(0, 1, 1514)
	data[0].Keys.Proto = 6
	for i := range batch {
		batch[i].Keys.Proto = 6
	}
	f.Xmit(d, 0, append(batch[:2:2], data[0], batch[2]))
	q := d.sqs[0]
	// session {ack, ack}, the data skb's WQE, session {ack}.
	if q.mpwqeBlks != 2 || q.mpwqePkts != 3 || q.wN != 3 {
		t.Fatalf("%d sessions of %d packets in %d WQEs, want 2 of 3 in 3", q.mpwqeBlks, q.mpwqePkts, q.wN)
	}
}

// The CQ starts at DIM's default EQE profile, 8 us, while the zeroed
// struct dim is at profile 0: its first move out of parking goes right,
// towards longer periods.
func TestDIMStart(t *testing.T) {
	d, _ := newSQ(t)
	if d.vecs[0].ITR != 8*sim.Microsecond || d.sqs[0].dim.ProfileIx != 0 {
		t.Fatalf("itr %v profile %d, want 8us and 0", d.vecs[0].ITR, d.sqs[0].dim.ProfileIx)
	}
}

// mlx5e_sq_xmit_prepare counts a non-GSO skb as at least ETH_ZLEN bytes
// (attr->num_bytes): tx_bytes does on every path, and a WQE of its own
// tells BQL that much and its completion reports it; a MPWQE session
// tells BQL skb->len (txd.len) and reports the same.
func TestShortSkbBytes(t *testing.T) {
	for _, tc := range []struct {
		mpwqe string
		bql   uint64
	}{{"off", 2 * 60}, {"on", 2 * 43}} {
		d, f := newSQ(t, "skb_tx_mpwqe", tc.mpwqe)
		f.Xmit(d, 0, f.Packets(0, 2, 43)) // a 1-byte UDP datagram
		q := d.sqs[0]
		f.Clock = f.Irqs[0].At
		f.ServiceIRQs(d, nil)
		if q.xmitBytes != 2*60 || f.SentBytes[0] != tc.bql || f.ComplBytes[0] != tc.bql {
			t.Errorf("mpwqe %s: tx_bytes %d, BQL sent %d completed %d; want %d, %d, %d",
				tc.mpwqe, q.xmitBytes, f.SentBytes[0], f.ComplBytes[0], 2*60, tc.bql, tc.bql)
		}
	}
}
