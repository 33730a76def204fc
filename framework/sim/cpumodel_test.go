package sim

import (
	"strings"
	"testing"
)

// No name is the default processor, listed first; every row names its
// measurement and applies its three latencies and nothing else; a name
// the table lacks is refused with the list and changes nothing.
func TestCPUModels(t *testing.T) {
	def, err := LookupCPU("")
	if err != nil || def.Name != DefaultCPU || CPUModels()[0].Name != DefaultCPU {
		t.Fatalf(`LookupCPU("") = %+v, %v; want the default, listed first`, def, err)
	}
	d := DefaultCosts()
	for _, m := range CPUModels() {
		if m.Source == "" || m.LineSocket <= 0 || m.LineRemote < m.LineSocket || m.LineMemory <= 0 {
			t.Errorf("cpu %q: %+v (want a source, and a remote line no cheaper than a local one)", m.Name, m)
		}
		c := DefaultCosts()
		if err := c.ApplyCPU(m.Name); err != nil {
			t.Fatal(err)
		}
		if c.LineSocket != m.LineSocket || c.LineRemote != m.LineRemote || c.LineMemory != m.LineMemory || c.LineSMT != d.LineSMT {
			t.Errorf("ApplyCPU(%q) gave %d/%d/%d, smt %d", m.Name, c.LineSocket, c.LineRemote, c.LineMemory, c.LineSMT)
		}
	}
	c := DefaultCosts()
	err = c.ApplyCPU("haswell")
	if err == nil || !strings.Contains(err.Error(), `unknown cpu "haswell" (known: default, haswell-ep, skylake-sp)`) {
		t.Errorf("ApplyCPU(haswell): %v", err)
	}
	if *c != *DefaultCosts() {
		t.Error("a refused cpu changed the costs")
	}
}

// A host's processor changes what a line transfer costs by distance.
func TestCPUModelLineCosts(t *testing.T) {
	c := DefaultCosts()
	if err := c.ApplyCPU("haswell-ep"); err != nil {
		t.Fatal(err)
	}
	if got := c.Line(DistSocket); got != 47 {
		t.Errorf("haswell-ep same-socket line %d ns, want 47", got)
	}
	if got := c.Line(DistRemote); got != 107 {
		t.Errorf("haswell-ep cross-socket line %d ns, want 107", got)
	}
}
