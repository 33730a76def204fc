package netdev

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
)

// tc's mqprio_parse_opt: its defaults (8 classes, its map, hw 1), a map
// or queue list that ends at the first word that is not one of its
// elements, and its messages.
func TestParseMQPrio(t *testing.T) {
	o, err := parseMQPrio(strings.Fields("num_tc 3 map 2 2 1 queues 2@0 1@2 1@3 hw 0"))
	if err != nil {
		t.Fatal(err)
	}
	if o.numTC != 3 || o.hw != 0 || o.prioTC != [16]uint8{2, 2, 1} || o.count[:3][2] != 1 || o.offset[1] != 2 || o.attrs {
		t.Errorf("parsed %+v", o)
	}
	if o, _ := parseMQPrio(nil); o.numTC != 8 || o.hw != 1 || o.prioTC[12] != 3 {
		t.Errorf("tc's defaults: %+v", o)
	}
	for _, tt := range []struct{ args, want string }{
		{"num_tc 300", `Illegal "num_tc"`},
		{"num_tc 2 queues 1@0 1@1 1@2", "queues count/offset pair count 3 can not be higher than given num_tc 2"},
		{"queues 1@0 4", `argument "4" is wrong: unknown argument`},
		{"hw 0 mode channel", `argument "mode" is wrong`},
		{"mode tunnel", "Illegal mode (tunnel)"},
		{"shaper bw_rlimit", "Incomplete shaper arguments"},
		{"hw x", `Illegal "hw"`},
		{"min_rate 1gbit", `argument "min_rate" is wrong`},
	} {
		_, err := parseMQPrio(strings.Fields(tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, qdisc.ErrParse) {
			t.Errorf("%q: %v, want tc's %q", tt.args, err, tt.want)
		}
	}
}

// mqprio as the root (hw 0): the device's traffic classes, the XPS map
// gone (netdev_set_num_tc), the dump as tc prints 6.12's, the classes;
// the kernel's refusals, each of which also runs mqprio_destroy
// (netdev_set_num_tc(dev, 0)); hw 1 is not modelled.
func TestMQPrioRoot(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 4, "mq", "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := h.dev.setXPS(XPSIRQ, h.e.Topo); err != nil || h.dev.XPSQueue(0) < 0 {
		t.Fatalf("ice's XPS map: %v", err)
	}
	if err := tcLine("qdisc replace dev eth0 root handle 1: mqprio num_tc 3 map 2 2 1 0 queues 1@0 1@1 2@2 hw 0"); err != nil {
		t.Fatal(err)
	}
	if h.dev.RootKind != "mqprio" || len(h.dev.Children) != 4 || h.dev.Children[0].Kind != "pfifo_fast" || h.dev.tc.num != 3 {
		t.Fatalf("root %s, %d children, %d classes", h.dev.RootKind, len(h.dev.Children), h.dev.tc.num)
	}
	if h.dev.XPSQueue(0) >= 0 || h.dev.XPSQueue(1) >= 0 {
		t.Error("netdev_set_num_tc left the XPS map")
	}
	want := "tc 3 map 2 2 1 0 0 0 0 0 0 0 0 0 0 0 0 0 \n             queues:(0:0) (1:1) (2:3) \n" +
		"             mode:dcb\n             shaper:dcb\n             fp: E E E E E E E E E E E E E E E E\n"
	if got := h.dev.MQPrioOptions(); got != want {
		t.Errorf("dump\n%q\nwant\n%q", got, want)
	}
	for i, k := range []int{0, 1, 2, 2} {
		if got := h.dev.TxqToTC(i); got != k {
			t.Errorf("queue %d in class %d, want %d", i, got, k)
		}
	}
	// A child is grafted as mq's are; the root has no change op.
	if err := tcLine("qdisc replace dev eth0 parent 1:3 handle 30: fq_codel"); err != nil || h.dev.Queues[2].qdisc.Kind != "fq_codel" {
		t.Errorf("graft on 1:3: %v", err)
	}
	if err := tcLine("qdisc add dev eth0 parent 1:ffe1 fq"); err == nil || !strings.Contains(err.Error(), "Invalid argument") {
		t.Errorf("graft on a traffic class: %v", err)
	}
	if err := tcLine("qdisc replace dev eth0 root handle 1: mqprio num_tc 2 map 0 1 queues 2@0 2@2 hw 0"); err == nil || !strings.Contains(err.Error(), "Change operation not supported") {
		t.Errorf("replace of the same root: %v", err)
	}
	for _, tt := range []struct {
		args, want string
		class      error
	}{
		{"num_tc 2 map 0 1 2 queues 2@0 2@2 hw 0", "Invalid traffic class in priority to traffic class mapping", qdisc.ErrKernel},
		{"num_tc 2 map 0 1 queues 2@0 hw 0", "sch_mqprio_lib: No queues for TC 1.", qdisc.ErrKernel},
		{"num_tc 2 map 0 1 queues 2@0 2@3 hw 0", "Queues 2:3 for TC 1 exceed the 4 TX queues available", qdisc.ErrKernel},
		{"num_tc 2 map 0 1 queues 3@0 2@2 hw 0", "TC 0 queues 3@0 overlap with TC 1 queues 2@2", qdisc.ErrKernel},
		{"num_tc 17 hw 0", "Number of traffic classes is outside valid range", qdisc.ErrKernel},
		{"num_tc 2 map 0 1 queues 2@0 2@2 fp E P hw 0", "can only contain netlink attributes in hardware mode", qdisc.ErrKernel},
		{"num_tc 2 map 0 1 queues 2@0 2@2", "hw 1", qdisc.ErrLacks},
	} {
		if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 2: mqprio "+tt.args); err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.class) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
	// The refusals ran mqprio_destroy: the old root stays, its classes
	// do not.
	if h.dev.RootKind != "mqprio" || h.dev.RootHandle.Major() != 1 || h.dev.tc.num != 0 {
		t.Errorf("after the refusals: root %s %s, %d classes; want 1: kept, its classes gone", h.dev.RootKind, h.dev.RootHandle.QdiscString(), h.dev.tc.num)
	}
}

// skb_tx_hash with traffic classes: a packet's queue is in its class's
// range (the priority's class through prio_tc_map, low 4 bits), hashed
// within it; a forwarded packet's RX queue folds into the range.
func TestMQPrioPicksByClass(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 8, "mq", "pfifo")
	if err := h.n.TCBatch(h.dev, "t.tc", "qdisc replace dev eth0 root handle 1: mqprio num_tc 3 map 0 1 2 queues 1@0 3@1 4@4 hw 0"); err != nil {
		t.Fatal(err)
	}
	seen := map[uint32][]int{}
	h.on(0, sim.Microsecond, func(c *sim.CPU) {
		for i := 0; i < 64; i++ {
			for _, prio := range []uint32{0, 1, 2, 0x10002, 9} {
				s := h.skb(c, i)
				s.Priority = prio
				txq := h.n.netdevCorePickTx(c, h.dev, s)
				seen[prio] = append(seen[prio], txq.Index)
			}
			s := h.skb(c, i)
			s.Priority, s.RxQueue = 2, uint16(i%8)+1
			seen[100] = append(seen[100], h.n.netdevCorePickTx(c, h.dev, s).Index)
		}
	})
	h.run(sim.Millisecond)
	for prio, want := range map[uint32][]int{0: {0}, 1: {1, 2, 3}, 2: {4, 5, 6, 7}, 0x10002: {4, 5, 6, 7}, 9: {0}} {
		got := slices.Compact(slices.Sorted(slices.Values(seen[prio])))
		if !slices.Equal(got, want) {
			t.Errorf("priority %#x went to queues %v, want %v", prio, got, want)
		}
	}
	// RX queue r (0-7), class 2 (offset 4, 4 queues): r >= 4 gives
	// r-4, r < 4 gives r; then + 4.
	for i, q := range seen[100] {
		r := i % 8
		if r >= 4 {
			r -= 4
		}
		if q != r+4 {
			t.Fatalf("RX queue %d went to TX queue %d, want %d", i%8, q, r+4)
		}
	}
}

// qdisc_graft destroys the old root after the new one's init: an mqprio
// replaced by another mqprio (another handle) loses the new one's
// classes to the old one's mqprio_destroy (netdev_set_num_tc(dev, 0)),
// as the kernel's code does; one replaced by any other root leaves none.
func TestMQPrioDestroyedAfterTheNewInit(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 4, "mq", "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := tcLine("qdisc replace dev eth0 root handle 1: mqprio num_tc 2 map 0 1 queues 2@0 2@2 hw 0\n" +
		"qdisc replace dev eth0 root handle 2: mqprio num_tc 4 map 0 1 2 3 queues 1@0 1@1 1@2 1@3 hw 0"); err != nil {
		t.Fatal(err)
	}
	if h.dev.RootHandle.Major() != 2 || h.dev.tc.num != 0 || !strings.HasPrefix(h.dev.MQPrioOptions(), "tc 0 map 0 1 2 3 ") {
		t.Errorf("after mqprio over mqprio: root %s, %d classes, dump %q", h.dev.RootHandle.QdiscString(), h.dev.tc.num, h.dev.MQPrioOptions())
	}
	if err := tcLine("qdisc replace dev eth0 root handle 3: mqprio num_tc 2 map 0 1 queues 2@0 2@2 hw 0\nqdisc replace dev eth0 root handle 4: mq"); err != nil {
		t.Fatal(err)
	}
	if h.dev.RootKind != "mq" || h.dev.tc.num != 0 {
		t.Errorf("after mq over mqprio: root %s, %d classes", h.dev.RootKind, h.dev.tc.num)
	}
}

// tcMapQdisc is a pfifo that writes the device's traffic classes, as
// taprio does (qdisc.Info.TCMap): two classes on queues 0-1 and 2-3,
// or with the word "bad" a class on queues that do not exist.
type tcMapQdisc struct{ qdisc.Qdisc }

func init() {
	qdisc.Register("tcmaptest", "a pfifo that sets the device's traffic classes (tests)", func() qdisc.Qdisc { return &tcMapQdisc{} })
}

func (q *tcMapQdisc) Init(ctx qdisc.Ctx, s qdisc.Setup, args []string) (qdisc.Info, error) {
	q.Qdisc, _ = qdisc.New("pfifo")
	info, err := q.Qdisc.Init(ctx, s, nil)
	info.TCMap = &qdisc.TCMap{NumTC: 2, PrioTC: [16]uint8{0, 1}, Count: [16]uint16{2, 2}, Offset: [16]uint16{0, 2}}
	if slices.Contains(args, "bad") {
		info.TCMap.Offset[1] = 3
	}
	return info, err
}

// A root qdisc's Info.TCMap is the device's (taprio_change's
// netdev_set_num_tc, netdev_set_tc_queue, netdev_set_prio_tc_map): the
// XPS maps go and a packet's queue is picked within its class; the map
// goes with the qdisc (netdev_reset_tc), and one the device cannot hold
// is refused, the device left without classes.
func TestQdiscSetsTrafficClasses(t *testing.T) {
	h := newHarness(t, profile(t, "6.19-rc1"), 2, "ice", 4, "mq", "pfifo")
	tcLine := func(line string) error { return h.n.TCBatch(h.dev, "t.tc", line) }
	if err := h.dev.setXPS(XPSIRQ, h.e.Topo); err != nil {
		t.Fatal(err)
	}
	if err := tcLine("qdisc replace dev eth0 root handle 1: tcmaptest"); err != nil {
		t.Fatal(err)
	}
	if h.dev.NumTC() != 2 || h.dev.XPSQueue(0) >= 0 {
		t.Fatalf("%d classes, XPS queue of CPU 0 %d", h.dev.NumTC(), h.dev.XPSQueue(0))
	}
	if off, n := h.dev.tcRange(1); off != 2 || n != 2 {
		t.Errorf("priority 1's queues %d@%d, want 2@2", n, off)
	}
	if err := tcLine("qdisc del dev eth0 root"); err != nil || h.dev.NumTC() != 0 {
		t.Errorf("after the delete: %v, %d classes", err, h.dev.NumTC())
	}
	err := tcLine("qdisc replace dev eth0 root handle 2: tcmaptest bad")
	if err == nil || !strings.Contains(err.Error(), "Queues 2:3 for TC 1 exceed the 4 TX queues available") || h.dev.NumTC() != 0 {
		t.Errorf("a map past the queues: %v, %d classes", err, h.dev.NumTC())
	}
}
