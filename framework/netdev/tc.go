package netdev

import (
	"fmt"
	"strings"

	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/tc"
)

// ParseRootQdisc reads a device's root qdisc in tc words, as after `tc
// qdisc replace`: "handle 1: root fq_codel limit 100", "root handle 1:
// mq fq", "dev eth0 cake". The qdisc is the root, so "root" may be left
// out and any other parent is refused. "mq CHILD ..." is txlab's way to
// give mq's per-queue qdisc (the kernel takes net.core.default_qdisc):
// the children are named by the kernel, so their words cannot carry
// handle or parent.
//
// Errors carry tc's classes (framework/qdisc): tc's command line
// (qdisc.ErrSyntax, from framework/tc), options of a kind with no parser
// (qdisc.ErrParse, tc's parse_noqopt), the kernel's refusals
// (qdisc.ErrKernel). An unknown device is tc's own lookup (it exits 1,
// as for any other error).
func ParseRootQdisc(dev string, words []string) (tc.Qdisc, error) {
	cmd, err := tc.ParseQdisc(words)
	if err != nil {
		return cmd, err
	}
	if cmd.Dev != "" && cmd.Dev != dev {
		return cmd, fmt.Errorf("cannot find device %q (this host's device is %s)", cmd.Dev, dev)
	}
	if cmd.Parent == tc.Clsact {
		return cmd, &qdisc.OptionError{Class: qdisc.ErrParse, Msg: cmd.Kind + " is no root qdisc: it goes beside the root, with tc (qdisc add dev eth0 " + cmd.Kind + ")"}
	}
	if cmd.Parent != tc.Unspec && cmd.Parent != tc.Root {
		return cmd, kernelf("parent %s: failed to find specified qdisc (this is the root qdisc: write \"root\" or no parent)", cmd.Parent)
	}
	if cmd.Kind == "" {
		return cmd, kernelf("no qdisc kind in %q", strings.Join(words, " "))
	}
	if cmd.Kind == "mq" && len(cmd.Options) > 0 && tc.IsKeyword(cmd.Options[0]) {
		// tc has no parser for mq: parse_noqopt refuses any word.
		return cmd, &qdisc.OptionError{Class: qdisc.ErrParse, Msg: fmt.Sprintf("mq %s: mq's children are the kernel's default qdiscs (0: parent MAJ:queue); give handle and root before \"mq\"", cmd.Options[0])}
	}
	return cmd, nil
}

// errNoHandles is qdisc_alloc_handle's -ENOSPC.
var errNoHandles error = &qdisc.OptionError{Class: qdisc.ErrKernel, Msg: "maximum number of qdisc handles was exceeded"}

// allocHandle is qdisc_alloc_handle: the next automatic handle from
// 8001: on (8000: after a wrap) that no qdisc of d holds. The kernel's
// counter is a static shared by every device; here it is the host's.
func (n *Net) allocHandle(d *Device) (tc.Handle, error) {
	const first = tc.Handle(0x80000000)
	if n.autoHandle == 0 {
		n.autoHandle = first
	}
	for i := 0; i < 0x8000; i++ {
		n.autoHandle += 0x10000
		if n.autoHandle == tc.MakeHandle(0xffff, 0) {
			n.autoHandle = first
		}
		if d.qdiscLookup(n.autoHandle) == nil && d.RootHandle != n.autoHandle {
			return n.autoHandle, nil
		}
	}
	return 0, errNoHandles
}

// qdiscLookup is qdisc_lookup: the qdisc of d whose handle has the major
// of h (a root without a Qdisc, mq or noqueue, is not returned).
func (d *Device) qdiscLookup(h tc.Handle) *Qdisc {
	if d.Root != nil && d.Root.Handle.Major() == h.Major() {
		return d.Root
	}
	for _, q := range d.Children {
		if q.Handle.Major() == h.Major() {
			return q
		}
	}
	for _, q := range d.Tree {
		if q.Handle.Major() == h.Major() && q.Handle != tc.Unspec {
			return q
		}
	}
	return nil
}

// kernelf is a refusal of the kernel's tc_modify_qdisc (its extack
// text, where it has one).
func kernelf(format string, a ...any) error {
	return &qdisc.OptionError{Class: qdisc.ErrKernel, Msg: fmt.Sprintf(format, a...)}
}

// ChangeTargets finds what `tc qdisc change` with cmd's dev, handle and
// parent changes, as tc_modify_qdisc finds it: the root by "root" or its
// handle, an mq child by its class ("parent 8001:3" is queue 2). A
// change on an mq-style root with a change operation (cake_mq) reaches
// every child; plain mq has none, and a child of an mq-style root cannot
// be changed on its own (cake_change: "can't reconfigure cake_mq
// sub-qdiscs"). With no selector the target is the root, or every mq
// child. The kernel refuses to change a default child (handle 0:); txlab
// lets "parent" reach a plain mq's child, as the `queue` key of a
// script's timed change does.
func (d *Device) ChangeTargets(cmd tc.Qdisc) ([]*Qdisc, error) {
	if cmd.Dev != "" && cmd.Dev != d.Name {
		return nil, fmt.Errorf("cannot find device %q (this host's device is %s)", cmd.Dev, d.Name)
	}
	rootChange := func() ([]*Qdisc, error) {
		switch {
		case d.Root != nil:
			return []*Qdisc{d.Root}, nil
		case len(d.Children) > 0 && !MQRoot(d.RootKind):
			return d.Children, nil // cake_mq_change: the shared config
		}
		return nil, fmt.Errorf("%s %s root: %w", d.RootKind, d.RootHandle.QdiscString(), qdisc.ErrCannotChange)
	}
	if t, ok, err := d.treeTarget(cmd); ok || err != nil {
		return t, err
	}
	switch {
	case !cmd.Selects():
		if d.Root != nil {
			return []*Qdisc{d.Root}, nil
		}
		if len(d.Children) == 0 {
			return nil, kernelf("%s has no qdisc to change", d.RootKind)
		}
		return d.Children, nil
	case cmd.Parent == tc.Root:
		if cmd.Handle != tc.Unspec && cmd.Handle != d.RootHandle {
			return nil, kernelf("handle %s root: the root is %s; NLM_F_REPLACE needed to override", cmd.Handle.QdiscString(), d.RootHandle.QdiscString())
		}
		return rootChange()
	case cmd.Parent != tc.Unspec:
		if cmd.Parent.Major() != d.RootHandle.Major() || len(d.Children) == 0 {
			return nil, kernelf("parent %s: failed to find specified qdisc", cmd.Parent)
		}
		i := int(cmd.Parent.Minor()) - 1
		if i < 0 || i >= len(d.Children) {
			return nil, kernelf("parent %s: specified class not found (%s has classes %s to %s)", cmd.Parent,
				d.RootKind, tc.MakeHandle(d.RootHandle.Major(), 1), tc.MakeHandle(d.RootHandle.Major(), uint16(len(d.Children))))
		}
		if _, shared := qdisc.MultiQueueChild(d.RootKind); shared {
			return nil, qdisc.Refusef(d.RootKind, "can't reconfigure %s sub-qdiscs (change the root)", d.RootKind)
		}
		if q := d.Children[i]; cmd.Handle == tc.Unspec || cmd.Handle == q.Handle {
			return []*Qdisc{q}, nil
		}
		return nil, kernelf("handle %s parent %s: the qdisc there is %s; NLM_F_REPLACE needed to override", cmd.Handle.QdiscString(), cmd.Parent, d.Children[i].Handle.QdiscString())
	case cmd.Handle != tc.Unspec:
		if cmd.Handle.Major() == d.RootHandle.Major() {
			return rootChange()
		}
		return nil, kernelf("specified qdisc not found: no qdisc has handle %s", cmd.Handle.QdiscString())
	}
	return nil, kernelf("handle cannot be zero (name the qdisc with root, handle or parent)") // tc_modify_qdisc with no parent and no handle
}

// treeTarget finds a qdisc under a class for `tc qdisc change`: "parent
// X:Y" is the leaf of class X:Y of classful qdisc X (qdisc_leaf), and a
// handle alone is any grafted qdisc's. ok is false when cmd names no
// qdisc in the tree (the root and mq children are ChangeTargets').
func (d *Device) treeTarget(cmd tc.Qdisc) ([]*Qdisc, bool, error) {
	if cmd.Parent != tc.Unspec && cmd.Parent != tc.Root {
		p := d.qdiscLookup(cmd.Parent)
		if p == nil || !p.Classful() {
			return nil, false, nil
		}
		leaf := p.LeafOf(qdisc.ClassID(cmd.Parent))
		if leaf == nil {
			return nil, true, kernelf("Specified class not found (%s has no leaf class %s)", p.Name(), cmd.Parent)
		}
		if cmd.Handle != tc.Unspec && cmd.Handle != leaf.Handle {
			return nil, true, kernelf("handle %s parent %s: the qdisc there is %s; NLM_F_REPLACE needed to override", cmd.Handle.QdiscString(), cmd.Parent, leaf.Handle.QdiscString())
		}
		return []*Qdisc{leaf}, true, nil
	}
	if cmd.Parent == tc.Unspec && cmd.Handle != tc.Unspec {
		for _, q := range d.Tree {
			if q.Handle == cmd.Handle {
				return []*Qdisc{q}, true, nil
			}
		}
	}
	return nil, false, nil
}
