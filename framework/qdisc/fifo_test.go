package qdisc_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/qdisc/qdisctest"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// exitOf is tc's exit code for an error of the model's classes (cli's
// exitCode): 1 parse, 2 kernel, 255 tc's command line.
func exitOf(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, qdisc.ErrKernel):
		return 2
	case errors.Is(err, qdisc.ErrSyntax):
		return 255
	case errors.Is(err, qdisc.ErrParse):
		return 1
	}
	return -1
}

// The kernel's tc-testing cases for the fifos
// (tools/testing/selftests/tc-testing/tc-tests/qdiscs/fifo.json, by id):
// the command after "tc qdisc add|replace dev $DUMMY" on a device of
// txqueuelen txq, tc's exit code, and the pattern `tc qdisc show` must
// match count times (the line built as tc prints it: kind, handle,
// "root refcnt 2", the options). A replace of the root is a new qdisc,
// as here. Left out: 1298 (a second add: the host's NLM_F_EXCL refusal,
// framework/netdev), 45a0 and 4d39 (qdisc del, not modelled).
func TestFifoTcTesting(t *testing.T) {
	cases := []struct {
		id, cmd string
		txq     int
		exit    int
		pattern string
		count   int
	}{
		{"a519", "handle 1: root bfifo", 1000, 0, `qdisc bfifo 1: root.*limit [0-9]+b`, 1},
		{"585c", "handle 1: root pfifo", 1000, 0, `qdisc pfifo 1: root.*limit [0-9]+p`, 1},
		{"a86e", "root handle ffff: bfifo", 1000, 0, `qdisc bfifo ffff: root.*limit [0-9]+b`, 1},
		{"9ac8", "handle 1: root bfifo limit 3000b", 1000, 0, `qdisc bfifo 1: root.*limit 3000b`, 1},
		{"f4e6", "handle 1: root pfifo limit 3000", 3000, 0, `qdisc pfifo 1: root.*limit 3000p`, 1},
		{"b1b1", "root handle 10000: bfifo", 1000, 255, `qdisc bfifo 10000: root.*limit [0-9]+b`, 0},
		{"8d5e", "handle 1: root bfifo foorbar", 1000, 1, `qdisc bfifo 1: root`, 0},
		{"7787", "handle 1: root pfifo foorbar", 1000, 1, `qdisc pfifo 1: root`, 0},
		{"c4b6", "handle 1: root bfifo limit 3000b", 1000, 0, `qdisc bfifo 1: root.*limit 3000b`, 1},
		{"3df6", "handle 1: root pfifo limit 30", 1000, 0, `qdisc pfifo 1: root.*limit 30p`, 1},
		{"7a67", "handle 1: root bfifo limit foo-bar", 1000, 1, `qdisc bfifo 1: root.*limit foo-bar`, 0},
		{"972b", "root handle 123^ bfifo limit 100b", 1000, 255, `qdisc bfifo 123 root`, 0},
	}
	for _, c := range cases {
		show, err := tcAdd(c.cmd, c.txq)
		if got := exitOf(err); got != c.exit {
			t.Errorf("%s %q: exit %d (%v), want %d", c.id, c.cmd, got, err, c.exit)
		}
		if n := len(regexp.MustCompile(c.pattern).FindAllString(show, -1)); n != c.count {
			t.Errorf("%s %q: %q matched %d times in %q, want %d", c.id, c.cmd, c.pattern, n, show, c.count)
		}
	}
	// The bfifo default is txqueuelen * (MTU + the Ethernet header).
	if show, _ := tcAdd("handle 1: root bfifo", 1000); !strings.HasSuffix(show, "limit 1514000b") {
		t.Errorf("bfifo default: %q", show)
	}
}

// tcAdd is `tc qdisc add dev eth0 WORDS` on an Ethernet device of
// tx_queue_len txq: tc's parse, the qdisc's init, and the show line.
func tcAdd(words string, txq int) (string, error) {
	cmd, err := tc.ParseQdisc(strings.Fields(words))
	if err != nil {
		return "", err
	}
	q, err := qdisc.New(cmd.Kind)
	if err != nil {
		return "", err
	}
	s := qdisc.Setup{Handle: cmd.Handle.QdiscString(), Parent: "root", MTU: 1514, DevMTU: 1500, TxQueueLen: txq, NumTxQ: 1}
	if _, err := q.Init(qdisctest.NewCtx(1), s, cmd.Options); err != nil {
		return "", err
	}
	return fmt.Sprintf("qdisc %s %s root refcnt 2 %s", cmd.Kind, s.Handle, q.Dump()), nil
}

// newFifo inits a fifo of kind on a device of tx_queue_len txq.
func newFifo(t *testing.T, kind string, txq int, args ...string) (qdisc.Qdisc, qdisc.Info) {
	t.Helper()
	q, err := qdisc.New(kind)
	if err != nil {
		t.Fatal(err)
	}
	info, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{MTU: 1514, TxQueueLen: txq}, args)
	if err != nil {
		t.Fatal(err)
	}
	return q, info
}

// offer enqueues packets of the lengths given, handles 1, 2, ...
// following on from first, one per call, and returns their codes.
func offer(q qdisc.Qdisc, ctx qdisc.Ctx, first skb.Handle, lens ...uint32) []qdisc.Code {
	var out []qdisc.Code
	for i, l := range lens {
		rc := make([]qdisc.Code, 1)
		q.Enqueue(ctx, []skb.Packet{{Handle: first + skb.Handle(i), Len: l, GSOSegs: 1}}, rc)
		out = append(out, rc[0])
	}
	return out
}

func handlesOf(ps []skb.Packet) []skb.Handle {
	var hs []skb.Handle
	for _, p := range ps {
		hs = append(hs, p.Handle)
	}
	return hs
}

// bfifo counts bytes (qdisc_pkt_len into the backlog): a packet goes in
// while the backlog with it is within the limit, whatever the count;
// sch->limit is in bytes, the default tx_queue_len * psched_mtu, and
// CAN_BYPASS needs room for an MTU-sized packet (__fifo_init).
func TestBfifoCountsBytes(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q, info := newFifo(t, "bfifo", 1000, "limit", "3000")
	if info.Limit != 3000 || info.Flags&qdisc.CanBypass == 0 {
		t.Fatalf("info %+v", info)
	}
	rc := offer(q, ctx, 1, 1000, 1000, 900, 200, 100, 60)
	want := []qdisc.Code{qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitDrop, qdisc.XmitSuccess, qdisc.XmitDrop}
	if !slices.Equal(rc, want) {
		t.Fatalf("codes %v, want %v", rc, want)
	}
	if st := q.Stats(); st.Qlen != 4 || st.Backlog != 3000 || st.Drops != 2 || ctx.Dropped[4] != skb.DropQdiscDrop || ctx.Dropped[6] != skb.DropQdiscDrop {
		t.Fatalf("stats %+v, dropped %v", st, ctx.Dropped)
	}
	// Many small packets: 3000 bytes hold 50 of 60 bytes.
	q, _ = newFifo(t, "bfifo", 1000, "limit", "3000")
	lens := make([]uint32, 60)
	for i := range lens {
		lens[i] = 60
	}
	offer(q, ctx, 100, lens...)
	if st := q.Stats(); st.Qlen != 50 || st.Backlog != 3000 || st.Drops != 10 {
		t.Fatalf("small packets: %+v", st)
	}
	for _, c := range []struct {
		txq, limit int
		args       []string
		bypass     bool
		dump       string
	}{
		{1000, 1514000, nil, true, "limit 1514000b"},
		{0, 0, nil, false, "limit 0b"},
		{1000, 1513, []string{"limit", "1513"}, false, "limit 1513b"},
		{1000, 1514, []string{"limit", "1514"}, true, "limit 1514b"},
		{1000, 64 << 10, []string{"limit", "64kb"}, true, "limit 64Kb"},
	} {
		q, info := newFifo(t, "bfifo", c.txq, c.args...)
		if info.Limit != c.limit || (info.Flags&qdisc.CanBypass != 0) != c.bypass || q.Dump() != c.dump {
			t.Errorf("txq %d %v: %+v %q, want limit %d bypass %v %q", c.txq, c.args, info, q.Dump(), c.limit, c.bypass, c.dump)
		}
	}
}

// pfifo_head_drop keeps the newest packets: at the limit the head is
// dropped (QDISC_DROP, counted as a drop, not an overlimit) and the new
// packet queued with NET_XMIT_CN (pfifo_tail_enqueue). Limit 0 has no
// head to drop: the kernel counts a drop and queues the packet anyway.
func TestPfifoHeadDropKeepsNewest(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	q, info := newFifo(t, "pfifo_head_drop", 1000, "limit", "3")
	if info.Limit != 3 || info.Flags&qdisc.CanBypass == 0 {
		t.Fatalf("info %+v", info)
	}
	rc := offer(q, ctx, 1, 100, 200, 300, 400, 500, 600)
	want := []qdisc.Code{qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitSuccess, qdisc.XmitCN, qdisc.XmitCN, qdisc.XmitCN}
	if !slices.Equal(rc, want) {
		t.Fatalf("codes %v, want %v", rc, want)
	}
	st := q.Stats()
	if st.Qlen != 3 || st.Backlog != 1500 || st.Drops != 3 || st.Overlimits != 0 {
		t.Fatalf("stats %+v", st)
	}
	for h := skb.Handle(1); h <= 3; h++ {
		if ctx.Dropped[h] != skb.DropQdiscDrop {
			t.Fatalf("head %d: dropped %q, want QDISC_DROP", h, ctx.Dropped[h])
		}
	}
	if got := handlesOf(q.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 20}, nil)); !slices.Equal(got, []skb.Handle{4, 5, 6}) {
		t.Fatalf("dequeued %v, want the newest 4 5 6", got)
	}
	// pfifo with the same limit keeps the oldest.
	ctx = qdisctest.NewCtx(1)
	p, _ := newFifo(t, "pfifo", 1000, "limit", "3")
	offer(p, ctx, 1, 100, 200, 300, 400, 500, 600)
	if got := handlesOf(p.Dequeue(ctx, qdisc.DequeueReq{Max: 8, Bytes: 1 << 20}, nil)); !slices.Equal(got, []skb.Handle{1, 2, 3}) {
		t.Fatalf("pfifo dequeued %v", got)
	}

	// The default is tx_queue_len as it is: 0 gives limit 0, no bypass.
	ctx = qdisctest.NewCtx(1)
	z, info := newFifo(t, "pfifo_head_drop", 0)
	if info.Limit != 0 || info.Flags&qdisc.CanBypass != 0 || z.Dump() != "limit 0p" {
		t.Fatalf("limit 0: %+v %q", info, z.Dump())
	}
	// pfifo_tail_enqueue drops the new packet at limit 0 (the 2025 fix
	// in 6.12's stable tree; before it the packet was queued).
	rc = offer(z, ctx, 1, 100, 200)
	if !slices.Equal(rc, []qdisc.Code{qdisc.XmitDrop, qdisc.XmitDrop}) {
		t.Fatalf("limit 0 codes %v", rc)
	}
	if st := z.Stats(); st.Qlen != 0 || st.Backlog != 0 || st.Drops != 2 || len(ctx.Dropped) != 2 || ctx.Dropped[2] != skb.DropQdiscDrop {
		t.Fatalf("limit 0: %+v, dropped %v", st, ctx.Dropped)
	}
	if _, info := newFifo(t, "pfifo_head_drop", 1000); info.Limit != 1000 {
		t.Fatalf("default limit %d", info.Limit)
	}
}

// The fifos' change is fifo_init with the new limit: what they hold
// stays, and CAN_BYPASS follows the limit.
func TestFifoChange(t *testing.T) {
	ctx := qdisctest.NewCtx(1)
	b, _ := newFifo(t, "bfifo", 1000)
	offer(b, ctx, 1, 1000, 1000, 1000)
	info, err := qdisc.Change(b, ctx, []string{"limit", "1000"})
	if err != nil || info.Limit != 1000 || info.Flags&qdisc.CanBypass != 0 || b.Stats().Qlen != 3 || len(ctx.Dropped) != 0 {
		t.Fatalf("bfifo change: %+v %v, stats %+v", info, err, b.Stats())
	}
	if rc := offer(b, ctx, 9, 60); rc[0] != qdisc.XmitDrop {
		t.Fatalf("enqueue past a lowered limit: %v", rc)
	}
	// Without options tc sends none, and nothing changes.
	if info, err := qdisc.Change(b, ctx, nil); err != nil || info.Limit != 1000 || b.Dump() != "limit 1000b" {
		t.Fatalf("bfifo change without options: %+v %v %q", info, err, b.Dump())
	}
	h, _ := newFifo(t, "pfifo_head_drop", 1000)
	offer(h, ctx, 20, 100, 100, 100, 100)
	if info, err := qdisc.Change(h, ctx, []string{"limit", "2"}); err != nil || info.Limit != 2 || h.Stats().Qlen != 4 {
		t.Fatalf("head drop change: %+v %v %+v", info, err, h.Stats())
	}
	// Over the limit, each packet still drops one head: the queue keeps its length.
	if rc := offer(h, ctx, 30, 100); rc[0] != qdisc.XmitCN || h.Stats().Qlen != 4 || ctx.Dropped[20] != skb.DropQdiscDrop {
		t.Fatalf("head drop over a lowered limit: %v %+v", rc, h.Stats())
	}
	if _, err := qdisc.Change(h, ctx, []string{"limit", "x"}); !errors.Is(err, qdisc.ErrParse) || h.Dump() != "limit 2p" {
		t.Fatalf("bad change: %v %q", err, h.Dump())
	}
}

// Bad options give q_fifo.c's messages, as tc's parse errors (exit 1).
func TestFifoOptionErrors(t *testing.T) {
	for _, c := range []struct{ kind, args, want string }{
		{"bfifo", "foorbar", `bfifo: unknown parameter "foorbar" (Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ])`},
		{"pfifo_head_drop", "limit foo-bar", `pfifo_head_drop: Illegal value for "limit": "foo-bar" is not a size`},
		{"bfifo", "limit -1", `bfifo: Illegal value for "limit": "-1" is not a size: it is negative`},
		{"bfifo", "limit 5Gb", `bfifo: Illegal value for "limit": "5Gb" is out of range`},
		{"pfifo", "help", `pfifo: Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]`},
		{"pfifo_head_drop", "limit", `pfifo_head_drop: option "limit" needs a value`},
	} {
		q, _ := qdisc.New(c.kind)
		_, err := q.Init(qdisctest.NewCtx(1), qdisc.Setup{TxQueueLen: 1000, MTU: 1514}, strings.Fields(c.args))
		if !errors.Is(err, qdisc.ErrParse) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want a parse error %q", c.kind, c.args, err, c.want)
		}
	}
}
