package netdev

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/tc"
)

// TestQdiscHandles: the root gets the handle given, or qdisc_alloc_handle's
// first (8001:) when tc made it, or 0: when the kernel attached its
// default; mq's children are qdisc_create_dflt's 0: under the root's
// class for their queue (sch_mq.c mq_init).
func TestQdiscHandles(t *testing.T) {
	tests := []struct {
		qdisc      string
		queues     int
		root, kind string
		children   []string // "handle parent" of each child
		single     bool
	}{
		{"", 2, "0:", "mq", []string{"0: :1", "0: :2"}, false},
		{"", 1, "0:", "pfifo_fast", nil, true},
		{"mq pfifo", 3, "8001:", "mq", []string{"0: 8001:1", "0: 8001:2", "0: 8001:3"}, false},
		{"handle 1: root mq", 2, "1:", "mq", []string{"0: 1:1", "0: 1:2"}, false},
		{"root handle 1a: mq pfifo", 2, "1a:", "mq", []string{"0: 1a:1", "0: 1a:2"}, false},
		{"dev eth0 handle ffff: mq", 2, "ffff:", "mq", []string{"0: ffff:1", "0: ffff:2"}, false},
		{"pfifo limit 5", 4, "8001:", "pfifo", nil, true},
		{"handle 10: pfifo_fast", 1, "10:", "pfifo_fast", nil, true},
		{"handle 0: pfifo", 1, "8001:", "pfifo", nil, true}, // 0: is "none given"
		{"noqueue", 2, "8001:", "noqueue", nil, false},
	}
	for _, tt := range tests {
		var words []string
		if tt.qdisc != "" {
			words = strings.Fields(tt.qdisc)
		}
		h := newHarness(t, Config{TxQueueLen: 1000}, 4, "test", tt.queues, words...)
		d := h.dev
		if got := d.RootHandle.QdiscString(); got != tt.root || d.RootKind != tt.kind {
			t.Errorf("%q: root %s %s, want %s %s", tt.qdisc, d.RootKind, got, tt.kind, tt.root)
		}
		if tt.single != (d.Root != nil) {
			t.Errorf("%q: single root %v, want %v", tt.qdisc, d.Root != nil, tt.single)
		}
		if d.Root != nil && (d.Root.Parent != tc.Root || d.Root.Name() != tt.kind+" "+tt.root+" root") {
			t.Errorf("%q: root qdisc is %q", tt.qdisc, d.Root.Name())
		}
		var got []string
		for _, c := range d.Children {
			got = append(got, c.Handle.QdiscString()+" "+c.Parent.String())
		}
		if strings.Join(got, ",") != strings.Join(tt.children, ",") {
			t.Errorf("%q: children %q, want %q", tt.qdisc, got, tt.children)
		}
	}
}

// TestAllocHandle is qdisc_alloc_handle: 8001:, 8002:, ..., skipping
// handles in use, wrapping from ffff: to 8000:.
func TestAllocHandle(t *testing.T) {
	h := newHarness(t, Config{TxQueueLen: 1000}, 2, "test", 1, "handle", "8002:", "pfifo")
	n, d := h.n, h.dev
	var got []string
	for i := 0; i < 3; i++ {
		hd, err := n.allocHandle(d)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, hd.QdiscString())
	}
	if strings.Join(got, " ") != "8001: 8003: 8004:" {
		t.Errorf("auto handles %v, want 8001: 8003: 8004: (8002: is taken)", got)
	}
	n.autoHandle = tc.MakeHandle(0xfffe, 0)
	if hd, _ := n.allocHandle(d); hd != tc.MakeHandle(0x8000, 0) {
		t.Errorf("after fffe: got %s, want the wrap to 8000:", hd.QdiscString())
	}
}

// Bad root qdiscs in tc words: one line each, naming the word, of tc's
// class (nil: an error of no class, as tc's own device lookup).
func TestParseRootQdiscErrors(t *testing.T) {
	tests := []struct {
		words, want string
		class       error
	}{
		{"handle x: fq", `argument "x:" is wrong: invalid qdisc ID`, qdisc.ErrSyntax},
		{"parent 1:1 fq", `parent 1:1: failed to find specified qdisc (this is the root qdisc: write "root" or no parent)`, qdisc.ErrKernel},
		{"parent :1 fq", `parent :1: failed to find specified qdisc`, qdisc.ErrKernel},
		{"dev eth1 root fq", `cannot find device "eth1" (this host's device is eth0)`, nil},
		{"handle 1: root", `no qdisc kind in "handle 1: root"`, qdisc.ErrKernel},
		{"root", `no qdisc kind in "root"`, qdisc.ErrKernel},
		{"mq handle 1: fq", `mq handle: mq's children are the kernel's default qdiscs`, qdisc.ErrParse},
		{"mq parent 1:1 fq", `mq parent: mq's children`, qdisc.ErrParse},
		{"estimator 1s 8s fq", `"estimator" is not supported`, qdisc.ErrLacks},
		{"ingress", `ingress is no root qdisc: it goes beside the root`, qdisc.ErrParse},
		{"root root fq", `"root" is duplicate parent ID`, qdisc.ErrSyntax},
	}
	for _, tt := range tests {
		_, err := ParseRootQdisc("eth0", strings.Fields(tt.words))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRootQdisc(%q) = %v, want %q", tt.words, err, tt.want)
			continue
		}
		var oe *qdisc.OptionError
		if tt.class == nil && errors.As(err, &oe) || tt.class != nil && !errors.Is(err, tt.class) {
			t.Errorf("ParseRootQdisc(%q) = %v, want class %v", tt.words, err, tt.class)
		}
	}
	for _, ok := range []string{"root fq", "parent root fq", "parent ffffffff fq", "parent none fq", "dev eth0 fq", "mq fq limit 5"} {
		if _, err := ParseRootQdisc("eth0", strings.Fields(ok)); err != nil {
			t.Errorf("ParseRootQdisc(%q): %v", ok, err)
		}
	}
}

// A bad root qdisc fails AddDevice with the device named.
func TestAddDeviceQdiscError(t *testing.T) {
	e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = NewNet(e, Config{TxQueueLen: 1000}, localMaker{}).AddDevice(DeviceSpec{Name: "eth0", Driver: "test", Queues: 2,
		Qdisc: []string{"handle", "1:", "parent", "1:1", "pfifo"}})
	if err == nil || err.Error() != `device eth0: qdisc "handle 1: parent 1:1 pfifo": parent 1:1: failed to find specified qdisc (this is the root qdisc: write "root" or no parent)` {
		t.Errorf("AddDevice: %v", err)
	}
}

// TestDefaultQdiscFallback is attach_default_qdiscs' fallback: a default
// root whose init fails (pfifo_fast with tx_queue_len 0, mq through its
// children) leaves noqueue on an IFF_NO_QUEUE device, while the same
// qdisc asked for by tc is refused.
func TestDefaultQdiscFallback(t *testing.T) {
	tests := []struct {
		name   string
		txqlen int
		queues int
		qdisc  []string
		kind   string // the root, "" for an AddDevice error
		err    string
	}{
		{"default 1 queue", 0, 1, nil, "noqueue", ""},
		{"default mq", 0, 2, nil, "noqueue", ""},
		{"default with tx_queue_len", 1000, 2, nil, "mq", ""},
		{"tc pfifo_fast", 0, 1, []string{"pfifo_fast"}, "", "tx_queue_len must be >= 1"},
		{"tc mq", 0, 2, []string{"mq", "pfifo_fast"}, "", "tx_queue_len must be >= 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			n := NewNet(e, Config{TxQueueLen: tt.txqlen}, localMaker{})
			d, err := n.AddDevice(DeviceSpec{Name: "eth0", Driver: "test", Queues: tt.queues, Qdisc: tt.qdisc})
			if tt.kind == "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("AddDevice: %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.RootKind != tt.kind || d.RootHandle != tc.Unspec {
				t.Fatalf("root %s %s, want %s 0:", d.RootKind, d.RootHandle.QdiscString(), tt.kind)
			}
			if tt.kind != "noqueue" {
				return
			}
			if d.Root != nil || len(d.Children) > 0 || len(n.Qdiscs()) > 0 || !d.Info.NoQueue {
				t.Fatalf("noqueue fallback left root %v, %d children, %d qdiscs, IFF_NO_QUEUE %v",
					d.Root, len(d.Children), len(n.Qdiscs()), d.Info.NoQueue)
			}
			for _, txq := range d.Queues {
				if txq.Qdisc() != nil {
					t.Fatalf("txq %d has qdisc %s", txq.Index, txq.Qdisc().Name())
				}
			}
		})
	}
}

// Absurd device sizes are an error before anything is allocated for them.
func TestAddDeviceBounds(t *testing.T) {
	tests := []struct {
		spec DeviceSpec
		want string
	}{
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: 0}, "device eth0: queues must be in [1, 65535], got 0"},
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: -1}, "queues must be in [1, 65535], got -1"},
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: 0x10000}, "queues must be in [1, 65535], got 65536"},
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: 1 << 40}, "queues must be in [1, 65535]"},
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: 2, RateBps: -1}, "negative link rate"},
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: 2, IRQCPUs: []int{-1}}, "IRQ CPU -1 out of range"},
		{DeviceSpec{Name: "eth0", Driver: "test", Queues: 2, IRQCPUs: []int{2}}, "IRQ CPU 2 out of range"},
	}
	for _, tt := range tests {
		e, err := sim.NewEngine(sim.Topology{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1}, sim.DefaultCosts(), 7)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewNet(e, Config{TxQueueLen: 1000}, localMaker{}).AddDevice(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.spec, err, tt.want)
		}
		e.Close()
	}
}

// A `tc qdisc replace ... root` whose new qdisc cannot be made changes
// nothing, as qdisc_create fails before qdisc_graft: the old root, its
// leaves and its filters stay, and the next replace works. The model
// had dropped the old tree first and left the device with none.
func TestFailedRootReplaceKeepsTheOld(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 1, "pfifo")
	if err := h.n.TCBatch(h.dev, "t.tc", `
qdisc replace dev eth0 root handle 1: htb default 1
class add dev eth0 parent 1: classid 1:1 htb rate 1gbit
qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 5
filter add dev eth0 parent 1: protocol ip prio 1 matchall classid 1:1
`); err != nil {
		t.Fatal(err)
	}
	show := func() string {
		return fmt.Sprint(h.dev.RootKind, h.dev.RootHandle, len(h.n.Qdiscs()), len(h.dev.Filters()))
	}
	before := show()
	for _, bad := range []string{
		"qdisc replace dev eth0 root handle 2: tbf limit 1000",
		"qdisc replace dev eth0 root handle 2: pfifo limit x",
		"qdisc replace dev eth0 root handle 2: cake bogus",
	} {
		if err := h.n.TCBatch(h.dev, "t.tc", bad); err == nil {
			t.Fatalf("%q: no error", bad)
		}
		if got := show(); got != before {
			t.Errorf("after %q: %s, want %s as before", bad, got, before)
		}
		if leaf := h.dev.Root.LeafOf(qdisc.MakeClassID(1, 1)); leaf == nil || leaf.Kind != "pfifo" {
			t.Errorf("after %q: 1:1's leaf %v, want the pfifo", bad, leaf)
		}
	}
	if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 2: pfifo limit 10"); err != nil {
		t.Fatal(err)
	}
	if h.dev.RootKind != "pfifo" || len(h.n.Qdiscs()) != 1 || len(h.dev.Filters()) != 0 {
		t.Errorf("the good replace: %s", show())
	}
}

// A class a filter points at is in use (qdisc_class_in_use): each
// qdisc's class delete refuses it with its own message.
func TestClassInUse(t *testing.T) {
	for kind, want := range map[string]string{
		"drr": "Error: DRR class is in use",       // drr_delete_class
		"htb": "Error: HTB class in use",          // htb_delete
		"qfq": "Error: sch_qfq: QFQ class in use", // qfq_delete_class
	} {
		h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 1, "pfifo")
		opts := map[string]string{"drr": "drr", "htb": "htb rate 1gbit", "qfq": "qfq weight 2"}[kind]
		if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 1: "+kind+"\n"+
			"class add dev eth0 parent 1: classid 1:1 "+opts+"\n"+
			"filter add dev eth0 parent 1: protocol ip prio 1 matchall classid 1:1\n"); err != nil {
			t.Fatal(err)
		}
		err := h.n.TCBatch(h.dev, "t.tc", "class del dev eth0 classid 1:1")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", kind, err, want)
		}
	}
}

// A replace that names the root tc made (its handle, or none) with its
// own kind is qdisc_change on it (tc_modify_qdisc's fall-through): the
// same qdisc, changed as `tc qdisc change` changes it; with another kind and its handle,
// "Invalid qdisc name"; with another kind and no handle, a new root.
func TestReplaceRootSameKindChanges(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 1, "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := tcLine("qdisc replace dev eth0 root handle 1: tbf rate 1gbit burst 10k latency 10ms mpu 64"); err != nil {
		t.Fatal(err)
	}
	q := h.dev.Root
	if err := tcLine("qdisc replace dev eth0 root tbf rate 2gbit burst 10k latency 10ms"); err != nil {
		t.Fatal(err)
	}
	// tbf_change takes tc's whole tc_tbf_qopt: the mpu left out is 0.
	if h.dev.Root != q || !strings.Contains(q.Ops.Dump(), "rate 2Gbit") || !strings.Contains(q.Ops.Dump(), "mpu 0b") {
		t.Errorf("replace with the root's kind: root %p (was %p), %q; want the same tbf at 2Gbit", h.dev.Root, q, q.Ops.Dump())
	}
	if err := tcLine("qdisc replace dev eth0 root handle 1: tbf rate 3gbit burst 10k latency 10ms"); err != nil || h.dev.Root != q {
		t.Errorf("replace naming the root's handle: %v, root changed %v", err, h.dev.Root != q)
	}
	if err := tcLine("qdisc replace dev eth0 root handle 1: pfifo"); err == nil || !strings.Contains(err.Error(), "Invalid qdisc name") {
		t.Errorf("another kind with the root's handle: %v", err)
	}
	if err := tcLine("qdisc replace dev eth0 root pfifo limit 5"); err != nil || h.dev.RootKind != "pfifo" || h.dev.Root == q {
		t.Errorf("another kind, no handle: %v, root %s", err, h.dev.RootKind)
	}
}
