package cls

import (
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/tc"
)

// FuzzFilter feeds `tc filter add` words to the parsers: any input is
// refused with an error or added, never a panic; an added filter
// classifies a packet, and its set rebuilt from Specs (what a qdisc
// plugin's copy is) shows the same.
func FuzzFilter(f *testing.F) {
	for _, seed := range []string{
		"protocol ip prio 1 matchall classid 1:1 action police rate 1mbit burst 10k conform-exceed drop/pipe",
		"protocol ip prio 1 matchall action police pkts_rate 1000 pkts_burst 20 drop",
		"protocol ip prio 2 u32 match ip dport 5001 0xffff action police rate 8mbit burst 100k mtu 2k peakrate 16mbit flowid 1:10",
		"protocol ip prio 1 flower ip_proto udp dst_port 5001 action skbedit priority 1:3 action gact drop random determ pass 3",
		"protocol ip prio 1 handle 1 fw classid 1:1 action reclassify",
		"protocol ip prio 1 u32 match ip dport 5001 0xffff police rate 1mbit burst 10k mtu 2k peakrate 2mbit drop flowid 1:1",
		"protocol ip prio 1 handle 2 fw classid 1:2 police pkts_rate 100 pkts_burst 10 conform-exceed drop/ok",
		"protocol ip prio 1 handle 1 flow hash keys src,dst divisor 16 baseclass 1:1",
		"protocol ip prio 1 matchall action mirred egress mirror dev ifb0 pipe action mirred egress redirect dev eth1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, words string) {
		if len(words) > 512 {
			return
		}
		cmd, err := tc.ParseFilter(strings.Fields(words))
		if err != nil {
			return
		}
		s := NewSet()
		if _, err := s.Add(tc.VerbAdd, cmd, root); err != nil {
			return
		}
		s.ArmActions(0)
		x := &clockCtx{now: 1e9}
		p := pkt()
		s.Classify(x, &p, root)
		c, err := Load(s.Specs(root.Major()))
		if err != nil {
			t.Fatalf("%q: the copy: %v", words, err)
		}
		if got, want := c.Show(root, true), s.Show(root, true); got != want {
			t.Fatalf("%q: the copy shows\n%s\nthe set\n%s", words, got, want)
		}
	})
}
