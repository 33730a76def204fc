package netdev

import (
	"strings"
	"testing"
)

func TestConfigSet(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        string // error substring; "" accepted
		check       func(c Config) bool
	}{
		{"sock_wfree", "direct", "", func(c Config) bool { return c.SockWfree == CallDirect }},
		{"sock_wfree", "indirect", "", func(c Config) bool { return c.SockWfree == CallIndirect }},
		{"sock_wfree", "retpoline", "", func(c Config) bool { return c.SockWfree == CallRetpoline }},
		{"sock_wfree", "on", `"on" is not retpoline, direct or indirect`, nil},
		{"retpoline", "off", "toggle retpoline was merged into sock_wfree", nil},
		{"indirect_call_wrapper", "on", "indirect_call_wrapper=on is sock_wfree=direct", nil},
		{"dev_tx_weight", "2147483647", "", func(c Config) bool { return c.DevTxWeight == 2147483647 }},
		{"dev_tx_weight", "2147483648", "out of range: 1..2147483647", nil},
		{"dev_tx_weight", "0", "out of range: 1..2147483647", nil},
		{"sndbuf", "4607", "out of range: 4608..2147483647", nil},
		{"max_skb_frags", "45", "", func(c Config) bool { return c.MaxSkbFrags == 45 }},
		{"max_skb_frags", "17", "", func(c Config) bool { return c.MaxSkbFrags == 17 }},
		{"max_skb_frags", "16", "out of range: 17..45", nil},
		{"max_skb_frags", "46", "out of range: 17..45", nil},
		{"max_skb_frags", "x", "not a whole number", nil},
		{"slab_cpu_partial", "64", "", func(c Config) bool { return c.SlabCPUPartial == 64 }},
		{"slab_cpu_partial", "0", "", func(c Config) bool { return c.SlabCPUPartial == 0 }},
		{"slab_cpu_partial", "default", "", func(c Config) bool {
			return c.SlabCPUPartial == SlabCPUPartialDefault && c.Get("slab_cpu_partial") == "default"
		}},
		{"slab_cpu_partial", "-1", "out of range: 0..2147483647", nil},
		{"slab_cpu_partial", "lots", `"lots" is not a whole number or default`, nil},
		{"tx_queue_len", "-1", "out of range: 0..2147483647", nil},
		{"tx_queue_len", "x", "not a whole number", nil},
		{"fast_path", "maybe", "not on/off", nil},
		{"nope", "1", `unknown toggle "nope"`, nil},
	} {
		c, _ := Profile("6.18")
		err := c.Set(tc.name, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Set(%s, %s): %v", tc.name, tc.value, err)
		case tc.want == "" && !tc.check(c):
			t.Errorf("Set(%s, %s) did not set it: %+v", tc.name, tc.value, c)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Set(%s, %s) = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
	for _, name := range ToggleNames() {
		if _, removed := removedToggles[name]; removed {
			t.Errorf("toggle %s is both current and removed", name)
		}
	}
}

// Each profile's toggles as the kernel it stands for had them.
func TestProfileToggles(t *testing.T) {
	for _, tc := range []struct {
		toggle string
		want   map[string]string // profile -> value
	}{
		// 4d202a0d1 (4.8): every qdisc bulk-dequeues, not only
		// TCQ_F_ONETXQUEUE ones.
		{"bulk_dequeue", map[string]string{"4.7": "onetxqueue", "4.8": "all", "6.18": "all", "6.19-rc1": "all", "net-next": "all"}},
		// 4d202a0d1's struct Qdisc reorder put qstats on the hot line.
		{"qdisc_stats_line", map[string]string{"4.7": "on", "4.8": "off", "6.18": "off", "6.19-rc1": "off", "net-next": "off"}},
		// qdisc_run_begin loads before it stores in 4.7 (qdisc_is_running
		// on __state) and 4.8 (the running seqcount, f9eb8aea2a1e);
		// 6.18's __test_and_set_bit on state2 stores either way; 6.19's
		// "claim one cache line in Qdisc" loads again.
		{"run_begin_reads", map[string]string{"4.7": "on", "4.8": "on", "6.18": "off", "6.19-rc1": "on", "net-next": "on"}},
		// No retpoline in 2016; 6.18 retpolines skb->destructor; the llist
		// series' patch 1 (6.19) wraps it in INDIRECT_CALL_3.
		{"sock_wfree", map[string]string{"4.7": "indirect", "4.8": "indirect", "6.18": "retpoline", "6.19-rc1": "direct", "net-next": "direct"}},
		// "net: deal with sticky tx queues" (6.19): UDP ooo_okay and
		// net.core.txq_reselection_ms, 1000 by default.
		{"ooo_okay", map[string]string{"4.7": "off", "4.8": "off", "6.18": "off", "6.19-rc1": "on", "net-next": "on"}},
		{"txq_reselection_ms", map[string]string{"4.7": "0", "4.8": "0", "6.18": "0", "6.19-rc1": "1000", "net-next": "1000"}},
		// __qdisc_run's need_resched() break, gone since b60fa1c5d01a (5.5).
		{"qdisc_run_resched", map[string]string{"4.7": "on", "4.8": "on", "6.18": "off", "6.19-rc1": "off", "net-next": "off"}},
		// napi_alloc_cache only defers frees from 795bb1c00dd3 (4.5)
		// until 5.12's napi_skb_cache_get.
		{"kfree_skb_defer", map[string]string{"4.7": "on", "4.8": "on", "6.18": "off", "6.19-rc1": "off", "net-next": "off"}},
	} {
		for prof, want := range tc.want {
			c, err := Profile(prof)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Get(tc.toggle); got != want {
				t.Errorf("profile %s: %s %s, want %s", prof, tc.toggle, got, want)
			}
		}
	}
}
