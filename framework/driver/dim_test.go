package driver

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
)

// dimDrive feeds d measurements of 64 interrupts each: the interrupt
// interval of the profile in use (itr, in us, by index) and a throughput
// given by bps(profile index) bytes per ms of 100-byte packets. It returns
// the profile index after each decision.
func dimDrive(d *DIM, rounds int, itr []int64, bpms func(ix int) int64) []int {
	var s DIMSample
	d.Sample(s) // the first call starts a measurement
	var path []int
	for r := 0; r < rounds; r++ {
		us := itr[d.ProfileIx]
		dt := sim.Time(64*us) * sim.Microsecond
		bytes := bpms(d.ProfileIx) * 64 * us / 1000
		s.Time += dt
		s.Bytes += uint32(bytes)
		s.Pkts += uint32(bytes / 100)
		s.Events += 64
		changed := d.Sample(s)
		path = append(path, d.ProfileIx)
		if changed {
			d.Sample(s) // the work set DIM_START_MEASURE: a new start
		}
	}
	return path
}

func TestDIMDecisions(t *testing.T) {
	itr := []int64{2, 8, 64, 128, 256} // idpf's tx_itr[]
	cases := []struct {
		name string
		bpms func(ix int) int64
		want []int
	}{
		// Throughput the same at every profile: fewer interrupts per ms
		// is better, so DIM leaves the default (1) for 0 (exit parking
		// goes left), finds it worse, turns, climbs to the top edge and
		// parks there.
		{"same throughput climbs and parks on top", func(int) int64 { return 100000 },
			[]int{0, 1, 2, 3, 4, 4, 4, 4}},
		// Throughput falls by more than 10% at 256 us (the queue stops on
		// its completion queue): DIM turns back to 128 and, having gone
		// right more than once and left once, parks there.
		{"a throughput loss at the top turns it back", func(ix int) int64 {
			if ix == 4 {
				return 80000
			}
			return 100000
		}, []int{0, 1, 2, 3, 4, 3, 3, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDIM(1, len(itr))
			got := dimDrive(d, len(tc.want), itr, tc.bpms)
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("profile path %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// No decision before DIM_NEVENTS interrupts.
func TestDIMWaitsForEvents(t *testing.T) {
	d := NewDIM(1, 5)
	d.Sample(DIMSample{})
	if d.Sample(DIMSample{Time: sim.Millisecond, Bytes: 1e6, Pkts: 1e4, Events: 63}) || d.ProfileIx != 1 {
		t.Fatalf("decided after 63 events: profile %d", d.ProfileIx)
	}
	if !d.Sample(DIMSample{Time: sim.Millisecond, Bytes: 1e6, Pkts: 1e4, Events: 64}) {
		t.Fatal("no decision after 64 events")
	}
}

// adaptive-tx is on by default and off only when asked: a tx-usecs word
// leaves it as it is (ethtool -C sends the current adaptive setting).
func TestAdaptiveTx(t *testing.T) {
	for _, c := range []struct {
		args []string
		on   bool
		err  string
	}{
		{nil, true, ""},
		{[]string{"adaptive-tx", "off"}, false, ""},
		{[]string{"tx-usecs", "30"}, true, ""},
		{[]string{"tx-usecs", "30", "adaptive-tx", "off"}, false, ""},
		{[]string{"adaptive-tx", "on", "adaptive-tx", "off"}, false, ""},
		{[]string{"adaptive-tx", "off", "adaptive-tx", "on"}, true, ""},
		{[]string{"adaptive-tx", "yes"}, false, `nic: adaptive-tx "yes": want on or off`},
		{[]string{"rx-adaptive", "on"}, false, `nic: unknown option "rx-adaptive"`},
	} {
		var o RingOpts
		var a Adaptive
		err := ParseRingOpts("nic", c.args, &o, []string{"tx-usecs", "adaptive-tx"}, func(k, v string) (bool, error) { return a.Opt("nic", k, v) })
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want %q", c.args, err, c.err)
			}
		case err != nil:
			t.Errorf("%v: %v", c.args, err)
		case a.Tx() != c.on:
			t.Errorf("%v: adaptive %v, want %v", c.args, a.Tx(), c.on)
		}
	}
}

// Check is the Intel drivers' set_coalesce: a usecs change on a side
// that stays adaptive is refused, naming the word and the side; the
// current value, a change with that side's adaptive off, and the other
// side's change with its own adaptive off are taken; a usecs above the
// maximum is refused after its side's adaptive check; the sides go in
// the driver's order (RX first for ice and i40e, TX first for idpf).
func TestCoalesceCheck(t *testing.T) {
	us := sim.Microsecond
	msg := func(side string) string { return side + " stays adaptive" }
	for _, c := range []struct {
		args    []string
		rxFirst bool
		err     string
	}{
		{nil, false, ""},
		{[]string{"tx-usecs", "50"}, false, ""},
		{[]string{"rx-usecs", "50"}, false, ""},
		{[]string{"tx-usecs", "8"}, false, "nic: tx-usecs 8: tx stays adaptive (add adaptive-tx off)"},
		{[]string{"tx-usecs", "8", "adaptive-tx", "on"}, false, "nic: tx-usecs 8: tx stays adaptive"},
		{[]string{"tx-usecs", "8", "adaptive-tx", "off"}, false, ""},
		{[]string{"adaptive-tx", "off", "tx-usecs", "8"}, false, ""},
		{[]string{"rx-usecs", "2", "adaptive-tx", "off"}, false, "nic: rx-usecs 2: rx stays adaptive (add adaptive-rx off)"},
		{[]string{"rx-usecs", "2", "adaptive-rx", "off", "tx-usecs", "50"}, false, ""},
		{[]string{"tx-usecs", "200", "adaptive-tx", "off"}, false, "nic: tx-usecs 200: at most 100 (MAX)"},
		// Both sides wrong: the driver's first side speaks.
		{[]string{"tx-usecs", "20", "rx-usecs", "20"}, false, "nic: tx-usecs 20: tx stays adaptive"},
		{[]string{"tx-usecs", "20", "rx-usecs", "20"}, true, "nic: rx-usecs 20: rx stays adaptive"},
		{[]string{"rx-usecs", "200", "adaptive-rx", "off", "tx-usecs", "20"}, true, "nic: rx-usecs 200: at most 100 (MAX)"},
		{[]string{"tx-usecs", "200", "adaptive-tx", "off", "rx-usecs", "20"}, false, "nic: tx-usecs 200: at most 100"},
	} {
		o := RingOpts{ITR: 50 * us, RxITR: 50 * us}
		var a Adaptive
		if err := ParseRingOpts("nic", c.args, &o, []string{"tx-usecs", "rx-usecs", "adaptive-tx", "adaptive-rx"}, func(k, v string) (bool, error) { return a.Opt("nic", k, v) }); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		err := a.Check("nic", o, Coalesce{DfltTx: 50 * us, DfltRx: 50 * us, Max: 100 * us, Macro: "MAX", RxFirst: c.rxFirst, Msg: msg})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v rx first %v: %v, want %q", c.args, c.rxFirst, err, c.err)
		}
	}
}

// A receive side's RX DIM as the host takes it: the vector starts at the
// start profile's ITR, or the static one, never under the rate limit; a
// start outside the table or a negative ITR is refused.
func TestRxInfoDIM(t *testing.T) {
	us := sim.Microsecond
	prof := []sim.Time{2 * us, 8 * us, 16 * us}
	for _, tc := range []struct {
		name    string
		profile []sim.Time
		start   int
		itr     sim.Time
		intrl   sim.Time
		want    sim.Time
		wantErr bool
	}{
		{"static", nil, 0, 50 * us, 0, 50 * us, false},
		{"static under the rate limit", nil, 0, 2 * us, 4 * us, 4 * us, false},
		{"dim", prof, 1, 50 * us, 4 * us, 8 * us, false},
		{"dim from profile 0", prof, 0, 50 * us, 4 * us, 4 * us, false},
		{"start past the table", prof, 3, 50 * us, 0, 0, true},
		{"negative profile", []sim.Time{-us}, 0, 50 * us, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RxInfo{RingSize: 512, MaxQueues: 4, QueueVec: []int{0}, ITR: tc.itr, BufSize: 2048, LUTSize: 64,
				ITRProfile: tc.profile, DIMStart: tc.start, INTRL: tc.intrl}
			if err := r.Validate(1); (err != nil) != tc.wantErr {
				t.Fatalf("validate: %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && r.StartITR() != tc.want {
				t.Errorf("starts at %v, want %v", r.StartITR(), tc.want)
			}
		})
	}
}
