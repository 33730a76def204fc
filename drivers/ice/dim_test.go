package ice

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/driver/drivertest"
	"github.com/txlab/txlab/framework/sim"
)

// ethtool -C on ice: adaptive-tx is on by default and starts at
// tx_profile[ICE_DIM_DEFAULT_PROFILE_IX]; tx-usecs alone turns it off
// (a static ITR, no shorter than the vector's INTRL), adaptive-tx on
// keeps the DIM whatever tx-usecs says.
func TestModerationOptions(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		itr     sim.Time
		dim     bool
		wantErr string
	}{
		{args: nil, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"adaptive-tx", "off"}, itr: DfltTxITR},
		{args: []string{"tx-usecs", "20", "adaptive-tx", "off"}, itr: 20 * sim.Microsecond},
		{args: []string{"adaptive-tx", "off", "tx-usecs", "8"}, itr: 8 * sim.Microsecond},
		// ice_set_rc_coalesce: a change while the container stays
		// dynamic is -EINVAL; its current value is taken and DIM stays.
		{args: []string{"tx-usecs", "50"}, itr: 8 * sim.Microsecond, dim: true},
		{args: []string{"tx-usecs", "20"}, wantErr: "ice: tx-usecs 20: tx interrupt throttling cannot be changed if adaptive-tx is enabled"},
		{args: []string{"adaptive-tx", "on", "tx-usecs", "20"}, wantErr: "ice: tx-usecs 20: tx interrupt throttling cannot be changed if adaptive-tx is enabled"},
		{args: []string{"rx-usecs", "20"}, wantErr: "ice: rx-usecs 20: rx interrupt throttling cannot be changed if adaptive-rx is enabled"},
		// ice_set_q_coalesce checks the RX container first.
		{args: []string{"tx-usecs", "20", "rx-usecs", "20"}, wantErr: "ice: rx-usecs 20: rx interrupt throttling"},
		// ice_set_q_vector_intrl: the 4 us INTRL holds while the RX
		// container is dynamic, and caps a static TX ITR too.
		{args: []string{"tx-usecs", "2", "adaptive-tx", "off"}, itr: 4 * sim.Microsecond},
		{args: []string{"tx-usecs", "2", "adaptive-tx", "off", "adaptive-rx", "off"}, itr: 2 * sim.Microsecond},
		// ITR_REG_ALIGN: the register counts 2 us, an odd usecs rounds down.
		{args: []string{"tx-usecs", "9", "adaptive-tx", "off", "adaptive-rx", "off"}, itr: 8 * sim.Microsecond},
		{args: []string{"adaptive-tx", "1"}, wantErr: `ice: adaptive-tx "1": want on or off`},
		{args: []string{"adaptive-tx", "off", "tx-usecs", "8162"}, wantErr: "ice: tx-usecs 8162: at most 8160 (ICE_ITR_MAX)"},
		{args: []string{"adaptive-rx", "off", "rx-usecs", "9000"}, wantErr: "ice: rx-usecs 9000: at most 8160"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			d := &ICE{}
			if _, ok := drivertest.Init(t, d, driver.Setup{NumTxQ: 2, NumCPUs: 8, Costs: sim.DefaultCosts()}, tc.args, tc.wantErr); !ok {
				return
			}
			for i, r := range d.rings {
				if (r.dim != nil) != tc.dim || d.vecs[i].ITR != tc.itr {
					t.Errorf("q%d: dim %v itr %v, want %v %v", i, r.dim != nil, d.vecs[i].ITR, tc.dim, tc.itr)
				}
			}
		})
	}
}

// The TX DIM runs at napi_complete_done: under a steady load it steps
// through tx_profile as net_dim decides, the vector's interval is always
// the profile's ITR (never under the 4 us INTRL); with adaptive-tx off
// the static ITR never moves.
func TestModerationFollowsRate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		bulk       int
		step       sim.Time
		wantChange bool
	}{
		{"adaptive, line rate", nil, 64, 2 * sim.Microsecond, true},
		{"adaptive, sparse", nil, 1, 20 * sim.Microsecond, true},
		{"static", []string{"adaptive-tx", "off"}, 64, 2 * sim.Microsecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &ICE{}
			if _, err := d.Init(driver.Setup{NumTxQ: 1, NumCPUs: 8, Costs: sim.DefaultCosts()}, tc.args); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, 1, true)
			r, vec := d.rings[0], &d.vecs[0]
			seen := map[sim.Time]bool{}
			check := func() {
				want := DfltTxITR
				if r.dim != nil {
					want = max(TxProfile[r.dim.ProfileIx], DynamicINTRL)
				}
				if vec.ITR != want {
					t.Fatalf("vector ITR %v, want %v", vec.ITR, want)
				}
				seen[vec.ITR] = true
			}
			f.Pump(d, 1, 100000, tc.bulk, 120, tc.step, check)
			changed := r.dim != nil && r.dim.Changes > 0
			if changed != tc.wantChange {
				t.Errorf("DIM changed the profile: %v, want %v (ITRs seen %v)", changed, tc.wantChange, seen)
			}
			if tc.wantChange && len(seen) < 2 {
				t.Errorf("the interval never moved: %v", seen)
			}
			if r.dim != nil {
				t.Logf("profile %d, %d changes, ITRs %v, irqs %d", r.dim.ProfileIx, r.dim.Changes, seen, vec.Irqs)
			}
		})
	}
}
