package idpf

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
)

func setup(nq int) driver.Setup {
	return driver.Setup{Name: "eth0", NumTxQ: nq, NumCPUs: 8, Costs: sim.DefaultCosts()}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		args       []string
		ring       int
		compl      int
		wantErr    string
		itr        sim.Time
		dim        bool
		wantVector int
	}{
		// Adaptive TX moderation by default: DIM starts at profile 1, 8 us.
		{args: nil, ring: 512, compl: 512, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"tx", "1024"}, ring: 1024, compl: 1024, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"tx", "128"}, ring: 128, compl: 256, itr: 8 * sim.Microsecond, dim: true}, // complq at least 256
		{args: []string{"tx", "256", "tx-compl", "8160", "tx-usecs", "10", "adaptive-tx", "off"}, ring: 256, compl: 8160, itr: 10 * sim.Microsecond},
		{args: []string{"adaptive-tx", "off"}, ring: 512, compl: 512, itr: 50 * sim.Microsecond},
		{args: []string{"tx-usecs", "51", "adaptive-tx", "off"}, ring: 512, compl: 512, itr: 50 * sim.Microsecond}, // odd usecs rounded down to even
		// __idpf_set_q_coalesce: a usecs change while adaptive stays on
		// is -EINVAL, checked before the rounding; the current 50 is
		// taken and DIM stays.
		{args: []string{"tx-usecs", "50"}, ring: 512, compl: 512, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"tx-usecs", "51"}, wantErr: "idpf: tx-usecs 51: Cannot set coalesce usecs if adaptive enabled"},
		{args: []string{"adaptive-tx", "on", "tx-usecs", "10"}, wantErr: "idpf: tx-usecs 10: Cannot set coalesce usecs if adaptive enabled"},
		{args: []string{"adaptive-tx", "yes"}, wantErr: `adaptive-tx "yes": want on or off`},
		{args: []string{"tx-usecs", "8200", "adaptive-tx", "off"}, wantErr: "idpf: tx-usecs 8200: at most 8160 (IDPF_ITR_MAX)"},
		// The TX queue's checks, then the RX queue's.
		{args: []string{"tx-usecs", "9000", "adaptive-tx", "off", "rx-usecs", "20"}, wantErr: "idpf: tx-usecs 9000: at most 8160"},
		{args: []string{"tx", "32"}, wantErr: "must be in [64, 8160]"},
		{args: []string{"tx", "8192"}, wantErr: "must be in [64, 8160]"},
		// idpf_set_ringparam rounds up to IDPF_REQ_DESC_MULTIPLE (and
		// the completion queue follows the rounded count).
		{args: []string{"tx", "100"}, ring: 128, compl: 256, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"tx", "1000"}, ring: 1024, compl: 1024, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"tx", "64"}, wantErr: "too small for flow scheduling"},
		{args: []string{"tx", "96"}, wantErr: "too small for flow scheduling"},
		{args: []string{"tx-compl", "224"}, wantErr: "completion queue size 224"},
		{args: []string{"tx-compl", "300"}, wantErr: "multiple of 32"},
		{args: []string{"rx-frames", "8"}, wantErr: "unknown option"},
		{args: []string{"rx", "50"}, wantErr: "rx ring size 50 must be in [64, 8128]"},
		{args: []string{"rx", "8129"}, wantErr: "rx ring size 8129 must be in [64, 8128]"},
		{args: []string{"tx"}, wantErr: "needs a value"},
		{args: []string{"tx", "-1"}, wantErr: "non-negative"},
		{args: []string{"work", "0"}, wantErr: "work must be"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			d := &IDPF{}
			info, ok := drivertest.Init(t, d, setup(2), tc.args, tc.wantErr)
			if !ok {
				return
			}
			if (d.qs[0].dim != nil) != tc.dim {
				t.Errorf("adaptive moderation %v, want %v", d.qs[0].dim != nil, tc.dim)
			}
			if info.RingSize != tc.ring || d.qs[0].complSize != tc.compl || d.vecs[0].ITR != tc.itr {
				t.Errorf("ring %d complq %d itr %d; want %d %d %d", info.RingSize, d.qs[0].complSize, d.vecs[0].ITR, tc.ring, tc.compl, tc.itr)
			}
			if info.RateBps != DefaultRate || !info.BQL || info.Vectors != 2 || info.QueueVec[1] != 1 {
				t.Errorf("info %+v: want 200G, BQL, one vector per queue", info)
			}
		})
	}
}

// checker verifies the ring invariants after every driver call.
func checker(t *testing.T, d *IDPF, f *fakeCtx) func() {
	return func() {
		t.Helper()
		for i, q := range d.qs {
			n := len(q.Desc)
			if u := q.Used(); u < 0 || u > n-1 {
				t.Fatalf("q%d: %d descriptors used of %d", i, u, n)
			}
			// The completion queue never overflows, and the stop keeps
			// pending completions within half of it plus one frame's.
			if p := q.complqPending(); p > uint64(q.complSize/2+2) {
				t.Fatalf("q%d: %d completions pending, complq %d", i, p, q.complSize)
			}
			if int(q.complqPending()) != len(q.rs)+len(q.fetch)+q.unposted() {
				t.Fatalf("q%d: pending %d != %d RS + %d RE + %d unposted", i, q.complqPending(), len(q.rs), len(q.fetch), q.unposted())
			}
			held := 0
			for _, p := range f.Held {
				if int(p.Queue) == i {
					held++
				}
			}
			if held != len(q.rs)+q.unpostedPkts() {
				t.Fatalf("q%d: host sees %d packets in the driver, the driver has %d", i, held, len(q.rs)+q.unpostedPkts())
			}
		}
	}
}

// unposted counts the completions (RS + RE) of descriptors not yet handed
// to hardware; unpostedPkts the packets among them.
func (q *txQueue) unposted() int {
	n := 0
	for i := q.Tail; i != q.NTU; i = (i + 1) % len(q.Desc) {
		if q.Desc[i].Last {
			n++
		}
		if q.re[i] {
			n++
		}
	}
	return n
}

func (q *txQueue) unpostedPkts() int {
	n := 0
	for i := q.Tail; i != q.NTU; i = (i + 1) % len(q.Desc) {
		if q.Desc[i].Last {
			n++
		}
	}
	return n
}

// Ring accounting under load: the queue stops before either ring
// overflows, wakes only at the threshold from the clean, every packet
// completes, and the counters add up.
func TestRingAccounting(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		nq, bulk  int
		size      uint32
		bql       bool
		wantStops bool
	}{
		// At the static 50 us ITR (adaptive-tx off), so that completions
		// come back late enough for the rings to fill.
		{"default complq limits", []string{"adaptive-tx", "off"}, 1, 64, 1500, false, true},
		{"small ring", []string{"tx", "128", "tx-compl", "8160", "adaptive-tx", "off"}, 1, 32, 60, false, true},
		{"4 queues bql", []string{"tx", "128", "adaptive-tx", "off"}, 4, 16, 1000, true, false},
		{"big complq, ring limits", []string{"tx", "256", "tx-compl", "4096", "adaptive-tx", "off"}, 2, 64, 1500, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &IDPF{}
			if _, err := d.Init(setup(tc.nq), tc.args); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, tc.nq, tc.bql)
			f.OnWake = func(q int) {
				if !f.InPoll {
					return // the restart in idpf_tx_maybe_stop_splitq
				}
				r := d.qs[q]
				if r.Unused() < TxWakeThresh || r.complqPending() > uint64(r.complSize/2) {
					t.Errorf("q%d woken with %d descriptors free, %d completions pending", q, r.Unused(), r.complqPending())
				}
			}
			const total = 5000
			busy := f.Pump(d, tc.nq, total, tc.bulk, tc.size, 200, checker(t, d, f))
			st := d.Stats()
			var pkts, bytes, irqs uint64
			for i, s := range st {
				if s.Packets != f.Consumed[i] || s.Bytes != f.ConsumedB[i] {
					t.Errorf("q%d: stats %d pkts %d bytes, host consumed %d / %d", i, s.Packets, s.Bytes, f.Consumed[i], f.ConsumedB[i])
				}
				if f.SentBytes[i] != f.ComplBytes[i] || f.ComplBytes[i] != f.ConsumedB[i] {
					t.Errorf("q%d: BQL sent %d completed %d bytes, consumed %d", i, f.SentBytes[i], f.ComplBytes[i], f.ConsumedB[i])
				}
				if f.DrvXoff[i] {
					t.Errorf("q%d still stopped after the drain", i)
				}
				pkts += s.Packets
				bytes += s.Bytes
				irqs += s.Irqs
			}
			if pkts != total*uint64(tc.nq) || bytes != pkts*uint64(tc.size) {
				t.Errorf("%d packets %d bytes completed, want %d", pkts, bytes, total*tc.nq)
			}
			hostStops := f.CheckStopsWakes(st, busy)
			if tc.wantStops && hostStops == 0 {
				t.Errorf("the queue never stopped")
			}
			if irqs == 0 {
				t.Error("no interrupts")
			}
			for _, x := range f.Irqs {
				if x.V < 0 || x.V >= tc.nq {
					t.Errorf("interrupt on vector %d", x.V)
				}
			}
			t.Logf("busy %d stops %d irqs %d extra %v", busy, hostStops, irqs, st[0].Extra)
		})
	}
}

// BQL follows completions: in flight is exactly what the driver holds,
// and the limit only grows once completions come back.
func TestBQLFollowsCompletions(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, true)
	var limits []uint32
	f.Pump(d, 1, 3000, 32, 1200, 500, func() {
		if in, held := uint64(f.DQL[0].Inflight()), f.HeldBytes(0); in != held {
			t.Fatalf("BQL in flight %d bytes, driver holds %d", in, held)
		}
		limits = append(limits, f.DQL[0].Limit)
	})
	if limits[0] != 0 {
		t.Errorf("limit %d before any completion, want 0", limits[0])
	}
	if f.DQL[0].Limit == 0 {
		t.Error("BQL limit never grew with completions")
	}
	if f.StackXoff[0] {
		t.Error("STACK_XOFF left set after the drain")
	}
}

// The doorbell is rung only at the end of a bulk (or when stopped), and
// RE completions return ring space every ReMinGap descriptors.
func TestDoorbellAndRE(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	rest, _ := f.Xmit(d, 0, f.Packets(0, 200, 100))
	q := d.qs[0]
	if len(rest) != 0 || q.stats.Doorbells != 1 {
		t.Fatalf("200-packet bulk: %d refused, %d doorbells; want 0, 1", len(rest), q.stats.Doorbells)
	}
	if q.reSet != 4 || len(q.fetch) != 4 { // descriptors 0, 64, 128, 192
		t.Fatalf("RE set on %d descriptors (%d fetch completions), want 4", q.reSet, len(q.fetch))
	}
	if q.complqPending() != 204 {
		t.Fatalf("pending %d, want 204", q.complqPending())
	}
	// After the fetches but before any packet is done, the clean returns
	// ring space but no packets, and does not credit BQL.
	f.Clock = q.fetch[3].at
	f.Poll(d, 0, nil)
	if q.NTC != 193 || q.stats.Packets != 0 || f.ComplBytes[0] != 0 {
		t.Fatalf("after the fetch completions: NTC %d, %d packets cleaned; want 193, 0", q.NTC, q.stats.Packets)
	}
	// A second bulk past the complq threshold stops the queue at the
	// start of a frame with NETDEV_TX_BUSY.
	rest, rc := f.Xmit(d, 0, f.Packets(0, 100, 100))
	if rc != driver.TxBusy || !f.DrvXoff[0] || q.busyCompl == 0 {
		t.Fatalf("rc %#x stopped %v busy_compl %d: want BUSY on a full completion queue", rc, f.DrvXoff[0], q.busyCompl)
	}
	if got := q.complqPending(); got <= uint64(q.complSize/2) || got > uint64(q.complSize/2+2) {
		t.Fatalf("stopped at %d pending", got)
	}
	t.Logf("refused %d of 100", len(rest))
}

// A refused packet rings the doorbell whatever xmit_more held back
// (idpf_tx_buf_hw_update with xmit_more false): a bulk whose first packet
// finds no room pays one MMIO write for nothing new.
func TestBusyRingsDoorbell(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), []string{"tx", "128", "tx-compl", "8160"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	if _, rc := f.Xmit(d, 0, f.Packets(0, 200, 100)); rc != driver.TxBusy {
		t.Fatalf("rc %#x, want busy", rc)
	}
	q := d.qs[0]
	bells, fetches := q.stats.Doorbells, len(q.fetch)
	start := f.Clock // Spend advances the fake's clock
	rest, rc := f.Xmit(d, 0, f.Packets(0, 5, 100))
	if rc != driver.TxBusy || len(rest) != 5 {
		t.Fatalf("the ring still full: rc %#x, %d refused, want busy, 5", rc, len(rest))
	}
	if q.stats.Doorbells != bells+1 || len(q.fetch) != fetches || int64(f.Clock-start) < d.costs.Doorbell {
		t.Fatalf("doorbells %d -> %d, fetches %d -> %d, spent %d: want one more doorbell, no fetch, its cost",
			bells, q.stats.Doorbells, fetches, len(q.fetch), f.Clock-start)
	}
}

// __netif_txq_completed_wake wakes only with IDPF_TX_WAKE_THRESH free
// descriptors: a clean that frees packets but leaves the ring short
// keeps the queue stopped.
func TestNoWakeBelowThreshold(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), []string{"tx", "128", "tx-compl", "8160"}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	_, rc := f.Xmit(d, 0, f.Packets(0, 200, 100))
	q := d.qs[0]
	if rc != driver.TxBusy || !f.DrvXoff[0] || q.busyDescs != 1 {
		t.Fatalf("rc %#x stopped %v busy_low_txq_descs %d", rc, f.DrvXoff[0], q.busyDescs)
	}
	// The device has not reported the fetch of RE@64 yet: only RE@0's.
	if len(q.fetch) != 2 {
		t.Fatalf("%d fetch completions, want 2", len(q.fetch))
	}
	late := q.fetch[1]
	q.fetch = q.fetch[:1]
	f.Clock = q.rs[len(q.rs)-1].at
	f.Poll(d, 0, nil)
	if q.stats.Packets != 123 || q.Unused() >= TxWakeThresh {
		t.Fatalf("cleaned %d, %d free", q.stats.Packets, q.Unused())
	}
	if !f.DrvXoff[0] || q.stats.Restart != 0 {
		t.Fatalf("woken with %d free descriptors, below IDPF_TX_WAKE_THRESH %d", q.Unused(), TxWakeThresh)
	}
	// With the ring space back and a packet completing, it wakes.
	q.fetch = append(q.fetch, late)
	f.DrvXoff[0] = false
	f.Xmit(d, 0, f.Packets(0, 1, 100))
	f.DrvXoff[0] = true
	f.Clock = q.rs[len(q.rs)-1].at
	f.Poll(d, 0, nil)
	if f.DrvXoff[0] || q.Unused() < TxWakeThresh {
		t.Fatalf("not woken with %d free", q.Unused())
	}
}

// The TX DIM (on by default) runs from the clean at napi_complete_done:
// under load it changes profile, and the vector's ITR is always the
// profile DIM is at.
func TestAdaptiveModerationFromClean(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	f.Pump(d, 1, 200000, 64, 120, 200, nil)
	q := d.qs[0]
	if q.dim.Changes == 0 {
		t.Error("DIM never changed the profile under load")
	}
	if d.vecs[0].ITR != TxITRProfile[q.dim.ProfileIx] {
		t.Errorf("vector ITR %v, DIM at profile %d (%v)", d.vecs[0].ITR, q.dim.ProfileIx, TxITRProfile[q.dim.ProfileIx])
	}
}

// A TSO skb takes its context descriptor and its data descriptors (the
// head and the payload split at 12K), asks for that many more at the
// stop check, and carries RE on its EOP descriptor when its first data
// descriptor is ReMinGap past the last RE (idpf_tx_splitq_need_re).
func TestTSODescriptorsAndRE(t *testing.T) {
	d := &IDPF{}
	if _, err := d.Init(setup(1), nil); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1, false)
	check := checker(t, d, f)
	q := d.qs[0]
	tso := func(n int) []skb.Packet {
		out := f.Packets(0, n, 65226) // 45 segments of 1448 B + headers
		for i := range out {
			out[i].GSOSegs = 45
		}
		return out
	}
	// 64 KB: 1 + ceil(65226/12288) = 7 data descriptors + 1 context.
	if rest, _ := f.Xmit(d, 0, tso(1)); len(rest) != 0 {
		t.Fatal("one TSO skb refused")
	}
	check()
	if q.NTU != 8 || !q.re[7] || q.reSet != 1 || q.lastRE != 1 {
		t.Fatalf("one TSO skb: next_to_use %d, RE on its EOP %v, %d REs, last_re %d; want 8, true, 1, 1", q.NTU, q.re[7], q.reSet, q.lastRE)
	}
	// Eight more: data descriptors at 9, 17, ..., 65; the first at or
	// past 1 + 64 asks for RE: the one whose data starts at 65 (EOP 71).
	if rest, _ := f.Xmit(d, 0, tso(8)); len(rest) != 0 {
		t.Fatal("TSO skbs refused")
	}
	check()
	if q.NTU != 72 || q.reSet != 2 || q.lastRE != 65 || !q.re[71] {
		t.Fatalf("nine TSO skbs: next_to_use %d, %d REs, last_re %d, RE on 71 %v; want 72, 2, 65, true", q.NTU, q.reSet, q.lastRE, q.re[71])
	}
	for i := 0; i < 71; i++ {
		if q.re[i] && i != 7 {
			t.Fatalf("RE on descriptor %d", i)
		}
	}
	if got := q.Used(); got != 72 {
		t.Fatalf("%d descriptors used, want 72", got)
	}
	// 512 descriptors: the stop needs 7 + 4 + 1 free for the next one.
	rest, rc := f.Xmit(d, 0, tso(60))
	check()
	if rc != driver.TxBusy || q.busyDescs == 0 || q.Unused() >= 12 {
		t.Fatalf("rc %#x, busy_low_txq_descs %d, %d unused: want BUSY with under 12 free", rc, q.busyDescs, q.Unused())
	}
	t.Logf("%d of 60 refused, %d descriptors free", len(rest), q.Unused())
}
