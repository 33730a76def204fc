package codel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	_ "github.com/txlab/txlab/plugins/codel"
	_ "github.com/txlab/txlab/plugins/drr"
	_ "github.com/txlab/txlab/plugins/htb"
	_ "github.com/txlab/txlab/plugins/prio"
)

// codel, pfifo_head_drop and bfifo as the leaves of prio's, drr's and
// htb's classes pass the conformance suite with their parent: codel
// drops at dequeue under the parent (its drops reach the parent's
// counters), the head drop answers NET_XMIT_CN, drr peeks them
// (codel_peek keeps CoDel's packet for the next dequeue). Under drr
// codel keeps its default target, which the suite's microseconds never
// reach: a drop in a leaf's peek reaches drr's copy of the leaf's qlen
// only at its next DequeueLeaf (PeekLeaf answers no LeafState, where
// the kernel's codel_peek calls qdisc_tree_reduce_backlog at once), so
// the suite would see drr's qlen one ahead; fq_codel's leaf does the
// same.
func TestConformanceAsLeaves(t *testing.T) {
	leaves := func(a, b, c, codel string) []string {
		return []string{"parent " + a + " handle 10: codel limit 100 " + codel,
			"parent " + b + " handle 20: pfifo_head_drop limit 20", "parent " + c + " handle 30: bfifo limit 20kb"}
	}
	const aqm = "target 1us interval 2us"
	var drr []string
	for i := 1; i <= 7; i++ {
		drr = append(drr, fmt.Sprintf("parent 1: classid 1:%d drr quantum %d00", i, i))
	}
	for _, tt := range []struct {
		kind            string
		args            []string
		classes, leaves []string
	}{
		{"prio", nil, nil, leaves("1:1", "1:2", "1:3", aqm)},
		{"drr", nil, drr, leaves("1:1", "1:2", "1:3", "")},
		{"htb", []string{"default", "20"}, []string{
			"parent 1: classid 1:1 htb rate 200mbit",
			"parent 1:1 classid 1:10 htb rate 100mbit ceil 200mbit",
			"parent 1:1 classid 1:20 htb rate 50mbit ceil 200mbit",
			"parent 1:1 classid 1:30 htb rate 50mbit ceil 100mbit",
		}, leaves("1:10", "1:20", "1:30", aqm)},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			f := func() qdisc.Qdisc { q, _ := qdisc.New(tt.kind); return wire.WrapQdisc(q) }
			for _, r := range qdisctest.Run(f, qdisctest.Options{Args: tt.args, Classes: tt.classes, Leaves: tt.leaves, Seed: 6, Pkts: 2000}) {
				t.Errorf("%s (%s): %v", r.Check, strings.Join(tt.leaves, "; "), r.Err)
			}
		})
	}
}
