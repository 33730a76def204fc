package sim

import (
	"fmt"
	"strings"
)

// CPUModel is a processor generation's cache-to-cache and memory
// latencies: the rows of the cost table that depend on the silicon a
// host runs on rather than on the kernel's code. A host names one
// (txlab.host({cpu: ...}), --cpu); --set cost.line_* still wins over it.
type CPUModel struct {
	Name string
	// LineSocket, LineRemote and LineMemory are line_socket,
	// line_remote and line_memory (see Costs).
	LineSocket, LineRemote, LineMemory int64
	// Source says where the figures come from.
	Source string
}

// DefaultCPU is the model's own host: the cost table's defaults.
const DefaultCPU = "default"

// defaultCPU is the cost table's own figures as a processor.
func defaultCPU() CPUModel {
	d := DefaultCosts()
	return CPUModel{Name: DefaultCPU, LineSocket: d.LineSocket, LineRemote: d.LineRemote, LineMemory: d.LineMemory,
		Source: "the cost table's defaults: the model's estimates for E1's 2 x Xeon 6985P-C (128-core mesh, UPI); no public measurement"}
}

// measuredCPUs are the processors a host may name besides the default.
// Each row is a measurement of that processor, never a figure fitted to
// a seed.
var measuredCPUs = []CPUModel{
	// Intel MLC 3.5 on a 2 x Xeon E5-2699 v3 (18 cores, two rings, QPI),
	// FD.io CSIT's "Calibration Data - Haswell" (its Xeon Haswell
	// testbeds): --c2c_latency gives a local L2->L2 HITM of 47.0 ns and
	// a remote one of 106.9-108.0 ns homed at the writer, 106.6-107.7
	// ns at the reader (107); --idle_latency 99.0 ns of local DRAM.
	{Name: "haswell-ep", LineSocket: 47, LineRemote: 107, LineMemory: 99,
		Source: "Intel MLC 3.5 on 2 x Xeon E5-2699 v3 (FD.io CSIT Haswell testbed calibration): local HITM 47.0 ns, remote HITM 106.6-108.0 ns, local DRAM 99.0 ns"},
	// Intel MLC 3.5 on a 2 x Xeon Platinum 8180 (28 cores, mesh, UPI),
	// FD.io CSIT's "Xeon Skylake HW Calibration" (docs of its
	// testbeds, 2018): --c2c_latency gives a local L2->L2 HITM of
	// 50.3 ns, a remote one of 108.6 ns with the line homed at the
	// writer and 170.8 ns at the reader (a bounced lock or queue line
	// is homed at either: their mean, 140); --latency_matrix an idle
	// local DRAM latency of 81.1 ns.
	{Name: "skylake-sp", LineSocket: 50, LineRemote: 140, LineMemory: 81,
		Source: "Intel MLC 3.5 on 2 x Xeon Platinum 8180 (FD.io CSIT testbed calibration): local HITM 50.3 ns, remote HITM 108.6/170.8 ns (writer/reader homed), local DRAM 81.1 ns"},
}

// CPUModels lists the processors a host may name, the default first.
func CPUModels() []CPUModel { return append([]CPUModel{defaultCPU()}, measuredCPUs...) }

// LookupCPU finds a processor by name ("" is DefaultCPU).
func LookupCPU(name string) (CPUModel, error) {
	if name == "" {
		name = DefaultCPU
	}
	all := CPUModels()
	names := make([]string, 0, len(all))
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return CPUModel{}, fmt.Errorf("unknown cpu %q (known: %s)", name, strings.Join(names, ", "))
}

// ApplyCPU sets the line latencies of the named processor.
func (c *Costs) ApplyCPU(name string) error {
	m, err := LookupCPU(name)
	if err != nil {
		return err
	}
	c.LineSocket, c.LineRemote, c.LineMemory = m.LineSocket, m.LineRemote, m.LineMemory
	return nil
}
