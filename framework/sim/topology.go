package sim

import "fmt"

// Topology is sockets x cores per socket x SMT threads per core.
//
// CPU numbering follows what Linux shows on Intel servers: first thread of
// every core on every socket, then the SMT siblings, so CPU i and
// i+Sockets*Cores are siblings.
type Topology struct {
	Sockets        int
	CoresPerSocket int
	ThreadsPerCore int
}

// MaxCPUs is the most CPUs a topology may have (CONFIG_NR_CPUS=8192,
// as x86_64 distribution kernels build with MAXSMP).
const MaxCPUs = 8192

// Validate rejects empty or absurd topologies with a clear message. The
// product is checked factor by factor, so no size wraps around the bound.
func (t Topology) Validate() error {
	switch {
	case t.Sockets < 1 || t.Sockets > MaxCPUs:
		return fmt.Errorf("topology: sockets must be in [1, %d], got %d", MaxCPUs, t.Sockets)
	case t.CoresPerSocket < 1 || t.CoresPerSocket > MaxCPUs:
		return fmt.Errorf("topology: cores per socket must be in [1, %d], got %d", MaxCPUs, t.CoresPerSocket)
	case t.ThreadsPerCore < 1 || t.ThreadsPerCore > 8:
		return fmt.Errorf("topology: threads per core must be 1..8, got %d", t.ThreadsPerCore)
	}
	// Each factor is at most 8192, so the product fits an int64.
	if n := int64(t.Sockets) * int64(t.CoresPerSocket) * int64(t.ThreadsPerCore); n > MaxCPUs {
		return fmt.Errorf("topology: %d sockets x %d cores x %d threads is %d CPUs, more than the %d supported",
			t.Sockets, t.CoresPerSocket, t.ThreadsPerCore, n, MaxCPUs)
	}
	return nil
}

// NumCPUs is the number of hardware threads.
func (t Topology) NumCPUs() int { return t.Sockets * t.CoresPerSocket * t.ThreadsPerCore }

// Place returns socket, core (within socket) and thread of a CPU id.
func (t Topology) Place(cpu int) (socket, core, thread int) {
	perThread := t.Sockets * t.CoresPerSocket
	thread = cpu / perThread
	rest := cpu % perThread
	return rest / t.CoresPerSocket, rest % t.CoresPerSocket, thread
}

// Distance classes between two CPUs, cheapest first.
const (
	DistSelf   = 0 // same hardware thread
	DistSMT    = 1 // SMT sibling: shared L1/L2
	DistSocket = 2 // same socket: through the LLC / mesh
	DistRemote = 3 // other socket: through the socket interconnect (UPI)
	DistMemory = 4 // nobody holds the line: from memory
)

// Distance is the topology distance class between CPUs a and b.
func (t Topology) Distance(a, b int) int {
	if a == b {
		return DistSelf
	}
	sa, ca, _ := t.Place(a)
	sb, cb, _ := t.Place(b)
	switch {
	case sa != sb:
		return DistRemote
	case ca == cb:
		return DistSMT
	default:
		return DistSocket
	}
}

// Spread returns n CPU ids spread the way the scheduler spreads busy
// threads: one per physical core, alternating sockets, before any SMT
// sibling is used.
func (t Topology) Spread(n int) []int {
	out := make([]int, 0, n)
	total := t.NumCPUs()
	for i := 0; len(out) < n && i < total; i++ {
		thread := i / (t.Sockets * t.CoresPerSocket)
		rest := i % (t.Sockets * t.CoresPerSocket)
		socket := rest % t.Sockets
		core := rest / t.Sockets
		out = append(out, thread*t.Sockets*t.CoresPerSocket+socket*t.CoresPerSocket+core)
	}
	return out
}
