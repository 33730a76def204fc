package sim

import (
	"strings"
	"testing"
)

// The activity profile puts each CPU's work under the label current when
// it was spent, spinning under the waiter's label, softirq work under its
// vector and a hard interrupt under hardirq, restoring the label after.
func TestActProfileAttributes(t *testing.T) {
	e := testEngine(t, Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1})
	p := e.EnableActProfile()
	send, drain := e.ActName("send"), e.ActName("drain")
	if again := e.ActName("send"); again != send {
		t.Fatalf("ActName(send) twice: %d then %d", send, again)
	}
	var l SpinLock
	site := e.LockSite("test")
	e.CPUs[0].SetSoftirqHandler(NetTxSoftirq, func(c *CPU) { c.Spend(300) })
	e.CPUs[0].Start(0, func(c *CPU) {
		c.SetAct(send)
		c.Spend(1000)
		prev := c.SetAct(drain)
		l.Lock(c, site)
		c.Spend(2000)
		l.Unlock(c)
		c.LocalBhDisable()
		c.RaiseSoftirq(NetTxSoftirq)
		c.LocalBhEnable() // the softirq runs here, under its vector
		c.SetAct(prev)
		c.Spend(50)
	})
	e.CPUs[1].Start(0, func(c *CPU) {
		l.Lock(c, site) // holds it first: CPU 0 spins under "drain"
		c.SetAct(send)
		c.Spend(5000)
		l.Unlock(c)
	})
	if err := e.Run(Millisecond); err != nil {
		t.Fatal(err)
	}
	costs := DefaultCosts()
	cases := []struct {
		name       string
		act        Act
		work, spin int64 // minimum; spin exact when want is set
	}{
		{"send", send, 1000 + 50 + 5000, 0},
		{"drain", drain, 2000, 1},
		{"softirq NET_TX", ActSoftirq0 + NetTxSoftirq, 300, 0},
	}
	for _, c := range cases {
		if p.Names[c.act] != c.name {
			t.Errorf("label %d is %q, want %q", c.act, p.Names[c.act], c.name)
		}
		if p.Work[c.act] < c.work || p.Work[c.act] > c.work+400 {
			t.Errorf("%s: work %d ns, want %d (+ lock costs)", c.name, p.Work[c.act], c.work)
		}
		if (c.spin > 0) != (p.Spin[c.act] > 0) {
			t.Errorf("%s: spin %d ns", c.name, p.Spin[c.act])
		}
	}
	// CPU 0 spun until CPU 1's 5 us hold ended.
	if s := p.Spin[drain]; s < 5000-1000-costs.SpinAcquire || s > 5000 {
		t.Errorf("drain spun %d ns, want about CPU 1's hold less CPU 0's head start", s)
	}
	var sum int64
	for i := range p.Work {
		sum += p.Work[i] + p.Spin[i]
	}
	if busy := int64(e.CPUs[0].Busy() + e.CPUs[1].Busy()); sum != busy {
		t.Errorf("profile sums to %d ns, the CPUs were busy %d", sum, busy)
	}
	if out := p.Format(1); !strings.Contains(out, "drain") || !strings.Contains(out, "total") {
		t.Errorf("Format:\n%s", out)
	}
}
