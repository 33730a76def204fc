package cake

import (
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
)

func TestConformance(t *testing.T) {
	for _, args := range [][]string{nil, {"bandwidth", "100Mbit"}, {"besteffort", "flows"}, {"diffserv4", "dual-dsthost", "memlimit", "200kb"}} {
		f := func() qdisc.Qdisc { return &Cake{} }
		for _, r := range qdisctest.Run(f, qdisctest.Options{Args: args, Seed: 1}) {
			t.Errorf("%v: %s: %v", args, r.Check, r.Err)
		}
	}
}
