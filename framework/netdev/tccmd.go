package netdev

import (
	"errors"
	"fmt"
	"github.com/txlab/txlab/framework/cls"
	"strings"

	"github.com/txlab/txlab/framework/plugin/wire"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/skb"
	"github.com/txlab/txlab/framework/tc"
)

// TCBatch runs the commands of a `tc -batch` text on d, in order, as tc
// and the kernel would: the first that fails stops the batch with its
// error, named "NAME:LINE: COMMAND: ..." (tc's "Command failed
// NAME:LINE"). At the end every filter must point at a class that
// exists (see CheckFilters).
func (n *Net) TCBatch(d *Device, name, text string) error {
	cmds, err := tc.ParseBatch(text)
	if err != nil {
		return fmt.Errorf("%s:%w", name, err)
	}
	for _, c := range cmds {
		nw := len(n.Warnings)
		if err := n.TC(n.tcDevice(d, c), c); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", name, c.Line, c, err)
		}
		for i := nw; i < len(n.Warnings); i++ {
			n.Warnings[i] = fmt.Sprintf("%s:%d: %s", name, c.Line, n.Warnings[i])
		}
	}
	return n.checkAllFilters(d)
}

// TC runs one command on d.
func (n *Net) TC(d *Device, c tc.Command) error {
	switch c.Object {
	case tc.ObjQdisc:
		return n.tcQdisc(d, c)
	case tc.ObjClass:
		return n.tcClass(d, c)
	case tc.ObjFilter:
		return n.tcFilter(d, c)
	}
	return fmt.Errorf("tc %s is not modelled", c.Object)
}

func checkDev(d *Device, dev string) error {
	if dev != "" && dev != d.Name {
		return fmt.Errorf("cannot find device %q (this host's %s)", dev, d.net.hostDevices(d))
	}
	return nil
}

// tcQdisc is tc_modify_qdisc: change, or add/replace at the root or
// under a class (qdisc_graft).
func (n *Net) tcQdisc(d *Device, c tc.Command) error {
	cmd, err := tc.ParseQdisc(c.Words)
	if err != nil {
		return err
	}
	if err := checkDev(d, cmd.Dev); err != nil {
		return err
	}
	if cmd.Parent == tc.Clsact {
		return n.tcClsact(d, c.Verb, cmd)
	}
	switch c.Verb {
	case tc.VerbDelete:
		return n.tcDelete(d, cmd)
	case tc.VerbChange:
		return n.tcChange(d, cmd)
	}
	if cmd.Kind == "" {
		return kernelf("Error: no qdisc kind in %q", strings.Join(c.Words, " "))
	}
	if cmd.Parent == tc.Unspec || cmd.Parent == tc.Root {
		return n.tcRoot(d, c.Verb, cmd)
	}
	return n.tcGraft(d, c.Verb, cmd)
}

// tcDelete is tc_get_qdisc's RTM_DELQDISC: the root's delete grafts
// nothing at the root, and the device gets the kernel's default
// qdiscs (dev_activate's attach_default_qdiscs; on a device that is up,
// after the deactivation every root graft goes through).
func (n *Net) tcDelete(d *Device, cmd tc.Qdisc) error {
	switch {
	case cmd.Parent == tc.Unspec:
		if cmd.Handle == tc.Unspec || d.qdiscLookup(cmd.Handle) == nil {
			return kernelf("Error: Failed to find qdisc with specified handle.")
		}
		return kernelf("Error: Classid cannot be zero (write \"root\" or \"parent X:Y\").")
	case cmd.Parent != tc.Root:
		return n.tcDeleteLeaf(d, cmd)
	case cmd.Handle != tc.Unspec && cmd.Handle != d.RootHandle:
		return kernelf("Error: Invalid handle (the root is %s).", d.RootHandle.QdiscString())
	case cmd.Kind != "" && cmd.Kind != d.RootKind:
		return kernelf("Error: Invalid qdisc name (the root is %s).", d.RootKind)
	case d.RootHandle == tc.Unspec:
		return kernelf("Error: Cannot delete qdisc with handle of zero (the root is the kernel's default %s).", d.RootKind)
	}
	if err := n.graftRoot(d, nil); err != nil {
		return err
	}
	d.rootByTC = false
	return nil
}

// tcDeleteLeaf is RTM_DELQDISC of the qdisc under a class (qdisc_leaf,
// then qdisc_graft of NULL there, which purges it): the class gets what
// its kind's graft puts in place of nothing (Class.DelNoop, GraftOnly:
// noop_qdisc, no leaf; else a default pfifo).
func (n *Net) tcDeleteLeaf(d *Device, cmd tc.Qdisc) error {
	p := d.qdiscLookup(tc.MakeHandle(cmd.Parent.Major(), 0))
	if _, mq := qdisc.MultiQueueChild(d.RootKind); p == nil && (MQRoot(d.RootKind) || mq) && cmd.Parent.Major() == d.RootHandle.Major() {
		if mq {
			// cake_mq_graft refuses a graft of nothing too.
			return qdisc.Refusef(d.RootKind, "can't replace %s sub-qdiscs (parent %s; EOPNOTSUPP)", d.RootKind, cmd.Parent)
		}
		return n.tcDeleteMQ(d, cmd)
	}
	if p == nil {
		return kernelf("Error: Failed to find qdisc with specified classid (no qdisc %s on %s).", tc.MakeHandle(cmd.Parent.Major(), 0).QdiscString(), d.Name)
	}
	id := qdisc.ClassID(cmd.Parent)
	var cl *qdisc.Class
	if p.Classful() {
		cl = qdisc.FindClass(p.classful().Classes(), id)
	}
	leaf := p.leaves[id]
	switch {
	case !p.Classful() && p.Flags&qdisc.HasBlock == 0:
		return kernelf("Error: Parent qdisc is not classful (%s).", p.Name())
	case cl == nil: // a flow qdisc's find answers 0 for any classid
		return kernelf("Error: Specified class not found (%s has no class %s).", p.Name(), id)
	case leaf == nil:
		return kernelf("Error: Cannot find specified qdisc on specified device (class %s holds none).", id)
	case cmd.Handle != tc.Unspec && cmd.Handle != leaf.Handle:
		return kernelf("Error: Invalid handle (class %s holds %s).", id, leaf.Name())
	case cmd.Kind != "" && cmd.Kind != leaf.Kind:
		return kernelf("Error: Invalid qdisc name (class %s holds %s).", id, leaf.Name())
	case leaf.Handle == tc.Unspec:
		return kernelf("Error: Cannot delete qdisc with handle of zero (class %s's default %s).", id, leaf.Kind)
	}
	var freed skb.List
	held := leaf.leafState() != qdisc.LeafState{}
	switch {
	case cl.GraftOnly:
		n.destroyQdisc(leaf, &freed)
		delete(p.leaves, id)
		if held {
			n.notifyUp(nil, leaf) // its parent learns it holds nothing now
		}
		p.classful().Grafted(p.bind(nil, nil), id, false)
	case cl.DelNoop:
		n.destroyQdisc(leaf, &freed)
		noop := n.newNoop(d)
		noop.parentQ, noop.classID, noop.invisible, noop.Parent, noop.leafGen = p, id, true, tc.Handle(id), cl.LeafGen
		p.leaves[id] = noop
		if held {
			n.notifyUp(nil, noop)
		}
	default:
		nl, err := n.graft(p, id, cl.DefaultLeafWords(), tc.Unspec, true, &freed)
		if err != nil {
			return err
		}
		nl.leafGen = cl.LeafGen
		if held {
			n.notifyUp(nil, nl)
		}
	}
	n.rtnlKfreeSkbs(&freed)
	return nil
}

// tcChange is `tc qdisc change`: qdisc_change on each qdisc the command
// names.
func (n *Net) tcChange(d *Device, cmd tc.Qdisc) error {
	targets, err := d.ChangeTargets(cmd)
	if err != nil {
		return err
	}
	for _, q := range targets {
		if cmd.Kind != "" && cmd.Kind != q.Kind {
			return kernelf("Error: Invalid qdisc name: %q is not %s's kind (%s)", cmd.Kind, q.Name(), q.Kind)
		}
		if err := checkStab(cmd.Stab); err != nil {
			return err
		}
		if err := n.ChangeQdisc(q, cmd.Options); err != nil {
			return fmt.Errorf("%s: %w", q.Name(), err)
		}
		q.stab = cmd.Stab // qdisc_change: the words' table, or none
	}
	return nil
}

// tcRoot is `tc qdisc add|replace dev D root ...`: a new root in place
// of the one there. The root --qdisc (or a script's txlab.qdisc) made
// counts as the kernel's default root, which "add" replaces; one an
// earlier tc command made needs "replace", as NLM_F_REPLACE. A replace
// naming that root (its handle, or none) with its own kind changes it
// in place, under traffic too, as tc_modify_qdisc falls through to
// qdisc_change (what the options left out become is the kind's change:
// cake keeps them, tbf's tc sends them all); with another kind and its
// handle it is "Invalid qdisc name". An mq root has no change
// operation, so tc's words fail there; txlab's child word ("mq fq")
// names its children, and a replace with one builds it anew.
func (n *Net) tcRoot(d *Device, verb tc.Verb, cmd tc.Qdisc) error {
	if verb == tc.VerbReplace && d.rootByTC && (cmd.Handle == tc.Unspec || cmd.Handle == d.RootHandle) {
		switch {
		case d.RootKind == "mq" && cmd.Kind == "mq" && len(cmd.Options) == 0:
			// tc's own words: qdisc_change on the mq root, which has no
			// change operation.
			return kernelf("Error: Change operation not supported by specified qdisc (mq %s: graft its children with \"qdisc replace dev %s parent %s ...\").",
				d.RootHandle.QdiscString(), d.Name, tc.MakeHandle(d.RootHandle.Major(), 1))
		case d.RootKind == "mq":
			// txlab's child word ("mq fq", or another kind): a new root.
		case cmd.Kind == d.RootKind:
			cmd.Parent, cmd.Handle = tc.Root, d.RootHandle
			return n.tcChange(d, cmd)
		case cmd.Handle == d.RootHandle:
			return kernelf("Error: Invalid qdisc name (the root %s is %s, not %s).", d.RootHandle.QdiscString(), d.RootKind, cmd.Kind)
		}
	}
	if verb == tc.VerbAdd && d.rootByTC {
		if cmd.Handle != tc.Unspec && cmd.Handle == d.RootHandle {
			return kernelf("Error: Exclusivity flag on, cannot modify.")
		}
		return kernelf("Error: NLM_F_REPLACE needed to override (the root is %s %s; write \"qdisc replace\")", d.RootKind, d.RootHandle.QdiscString())
	}
	cmd.Parent, cmd.Dev = tc.Root, ""
	if err := n.ReplaceRoot(d, cmd.Words()); err != nil {
		return err
	}
	d.rootByTC = true
	return nil
}

// ReplaceRoot is `tc qdisc replace dev D root WORDS`: the old root, its
// children and every qdisc under a class go, with the filters, and
// words build the new root as --qdisc does. A new root that cannot be
// made changes nothing (qdisc_create fails before qdisc_graft): the old
// tree and its filters stay. On a device that is up (the run started:
// Net.Up) it is qdisc_graft's dev_deactivate and dev_activate
// (graftRootLive: the queues meet noop_qdisc meanwhile); before, at
// once.
func (n *Net) ReplaceRoot(d *Device, words []string) error { return n.graftRoot(d, words) }

// graftRoot is qdisc_graft of the root words name, or with none of the
// kernel's default (a deleted root: dev_activate's
// attach_default_qdiscs).
func (n *Net) graftRoot(d *Device, words []string) error {
	if n.up {
		return n.graftRootLive(d, words)
	}
	for _, q := range n.qdiscs {
		if q.dev == d && (q.Qlen() > 0 || q.deferHead != nil || q.toFree.Len > 0) {
			sim.Panicf("device %s is down but its qdisc %s holds packets", d.Name, q.Name())
		}
	}
	old, err := n.newRoot(d, words)
	if err == nil {
		old.put()
	}
	return err
}

// newRoot is qdisc_create of the root words name (none: the kernel's
// default) in place of d's tree, which it returns, taken off the device
// with its filters; a root that cannot be made changes nothing: the old
// tree, its filters and the queues' qdiscs stay.
func (n *Net) newRoot(d *Device, words []string) (devQdiscs, error) {
	old, filters := n.takeQdiscs(d), *d.filters
	d.filters.Reset()
	if err := n.attachQdiscs(d, words); err != nil {
		n.detachQdiscs(d) // what the new root made before it failed
		n.restoreQdiscs(d, old)
		*d.filters = filters
		return devQdiscs{}, err
	}
	return old, nil
}

// tcGraft is `tc qdisc add|replace dev D parent X:Y [handle H:] KIND`:
// qdisc_leaf finds class X:Y of qdisc X, and qdisc_graft puts the new
// qdisc in place of its leaf (whose packets are purged).
func (n *Net) tcGraft(d *Device, verb tc.Verb, cmd tc.Qdisc) error {
	p := d.qdiscLookup(cmd.Parent)
	if p == nil {
		if _, mq := qdisc.MultiQueueChild(d.RootKind); (MQRoot(d.RootKind) || mq) && cmd.Parent.Major() == d.RootHandle.Major() {
			if mq {
				// cake_mq_graft refuses every graft.
				return qdisc.Refusef(d.RootKind, "can't replace %s sub-qdiscs (parent %s; EOPNOTSUPP)", d.RootKind, cmd.Parent)
			}
			return n.tcGraftMQ(d, verb, cmd)
		}
		return kernelf("Error: Failed to find specified qdisc (no qdisc %s on %s).", cmd.Parent.QdiscString(), d.Name)
	}
	if !p.Classful() {
		return kernelf("Error: Parent qdisc is not classful (%s).", p.Name())
	}
	id := qdisc.ClassID(cmd.Parent)
	cl := qdisc.FindClass(p.classful().Classes(), id) // a GraftOnly class too (cops->find)
	if cl == nil {
		return kernelf("Error: Specified class not found (%s has no class %s).", p.Name(), id)
	}
	if !cl.Leaf {
		return kernelf("RTNETLINK answers: Invalid argument (class %s is an inner class: only a leaf class holds a qdisc)", id)
	}
	old := p.leaves[id]
	h, err := n.graftHandle(d, verb, cmd, old, old != nil && !old.invisible, "class "+id.String())
	if err != nil {
		return err
	}
	if err := checkStab(cmd.Stab); err != nil {
		return err
	}
	var freed skb.List
	before := qdisc.LeafState{}
	if old != nil {
		before = old.leafState()
	}
	leaf, err := n.graft(p, id, append([]string{cmd.Kind}, cmd.Options...), h, false, &freed)
	if err != nil {
		return err
	}
	leaf.leafGen, leaf.stab = cl.LeafGen, cmd.Stab
	if before != (qdisc.LeafState{}) {
		n.notifyUp(nil, leaf) // the old leaf's packets were purged
	}
	if old == nil && cl.GraftOnly {
		p.classful().Grafted(p.bind(nil, nil), id, true)
	}
	n.rtnlKfreeSkbs(&freed)
	return nil
}

// graftHandle is tc_modify_qdisc's checks before create_n_graft under
// a class (where names it) that holds old (nil: none; shown: not a
// default leaf, handle 0:, which tc_modify_qdisc ignores), and the new
// qdisc's handle: the one given, or the next automatic one.
func (n *Net) graftHandle(d *Device, verb tc.Verb, cmd tc.Qdisc, old *Qdisc, shown bool, where string) (tc.Handle, error) {
	if shown && verb == tc.VerbAdd {
		if cmd.Handle != tc.Unspec && cmd.Handle != old.Handle {
			return 0, kernelf("Error: NLM_F_REPLACE needed to override (%s holds %s; write \"qdisc replace\").", where, old.Name())
		}
		return 0, kernelf("Error: Exclusivity flag on, cannot modify (%s holds %s).", where, old.Name())
	}
	h := cmd.Handle
	switch {
	case h == tc.Unspec:
		return n.allocHandle(d)
	case cmd.Handle.Minor() != 0:
		return 0, kernelf("Error: Invalid minor handle.")
	}
	if q := d.qdiscLookup(h); q != nil && q != old {
		return 0, kernelf("Error: Exclusivity flag on, cannot override (handle %s is %s's).", h.QdiscString(), q.Name())
	}
	return h, nil
}

// tcClasslessKinds are the kernel's qdisc kinds tc knows (a q_KIND.c in
// iproute2) whose qdisc_util has no parse_copt: tc_class_modify answers
// `Qdisc "KIND" is classless.` for their words before it sends anything,
// classful as the kernel's qdisc may be (prio, tbf, netem, red hold
// leaves). Of the kinds tc knows, htb, drr, hfsc, qfq and ets parse
// class options; a plugin's kind, which tc does not know, is taken at
// its word here (the model lets a classful plugin parse its own).
var tcClasslessKinds = map[string]bool{
	"pfifo": true, "bfifo": true, "pfifo_head_drop": true, "pfifo_fast": true, "noqueue": true, "mq": true,
	"fq": true, "fq_codel": true, "codel": true, "sfq": true, "cake": true, "cake_mq": true, "pie": true, "fq_pie": true,
	"tbf": true, "netem": true, "red": true, "prio": true, "cbs": true, "dualpi2": true, "plug": true, "etf": true, "sfb": true, "skbprio": true, "choke": true, "hhf": true,
}

// classBlockRefusal is the extack message of a kind whose tcf_block
// refuses a class (drr_tcf_block, ets_qdisc_tcf_block: a block only on
// the qdisc).
var classBlockRefusal = map[string]string{
	"drr": "DRR classid must be zero",
	"ets": "ETS classid must be zero",
}

// classInUse is the extack message of a kind whose class delete
// refuses a class a filter points at in words other than "KIND class
// in use".
var classInUse = map[string]string{
	"drr": "DRR class is in use",       // drr_delete_class's
	"qfq": "sch_qfq: QFQ class in use", // qfq_delete_class's NL_SET_ERR_MSG_MOD
}

// classBlockEINVAL are the kinds whose tcf_block gives a class no
// block and no extack (qfq_tcf_block): -EINVAL, tc's bare "RTNETLINK
// answers: Invalid argument".
var classBlockEINVAL = map[string]bool{"qfq": true}

// tcClass is tc_ctl_tclass, after tc_class_modify's parse of the words.
func (n *Net) tcClass(d *Device, c tc.Command) error {
	cmd, err := tc.ParseClass(c.Words)
	if err != nil {
		return err
	}
	if cmd.Kind != "" && tcClasslessKinds[cmd.Kind] {
		return &qdisc.OptionError{Class: qdisc.ErrParse, Msg: fmt.Sprintf("Error: Qdisc %q is classless.", cmd.Kind)}
	}
	if err := checkDev(d, cmd.Dev); err != nil {
		return err
	}
	// Step 1: the qdisc, from the classid's and the parent's majors.
	portid, clid := cmd.Parent, cmd.ClassID
	qid := clid.Major()
	rootMaj := d.RootHandle.Major()
	if portid != tc.Root {
		qid1 := portid.Major()
		switch {
		case qid != 0 && qid1 != 0:
			if qid != qid1 {
				return kernelf("RTNETLINK answers: Invalid argument (classid %s and parent %s name different qdiscs)", clid, portid)
			}
		case qid1 != 0:
			qid = qid1
		case qid == 0:
			qid = rootMaj
		}
		if portid != tc.Unspec {
			portid = tc.MakeHandle(qid, portid.Minor())
		}
	} else if qid == 0 {
		qid = rootMaj
	}
	q := d.qdiscLookup(tc.MakeHandle(qid, 0))
	if q == nil {
		return kernelf("RTNETLINK answers: No such file or directory (no qdisc %x: on %s)", qid, d.Name)
	}
	cops := q.classful()
	if cops == nil {
		return kernelf("RTNETLINK answers: Invalid argument (%s has no classes)", q.Name())
	}
	// Step 2: the class.
	if clid == tc.Unspec {
		if portid == tc.Root {
			clid = tc.MakeHandle(qid, 0)
		}
	} else {
		clid = tc.MakeHandle(qid, clid.Minor())
	}
	// cops->find: a GraftOnly class too.
	exists := clid != tc.Unspec && qdisc.FindClass(cops.Classes(), qdisc.ClassID(clid)) != nil
	switch {
	case !exists && (c.Verb == tc.VerbChange || c.Verb == tc.VerbDelete):
		return kernelf("RTNETLINK answers: No such file or directory (class %s does not exist)", clid)
	case exists && c.Verb == tc.VerbAdd:
		return kernelf("RTNETLINK answers: File exists (class %s exists; write \"class change\" or \"class replace\")", clid)
	}
	var freed skb.List
	x := &ctlCtx{qctx: q.bind(nil, nil)}
	before := q.leafState()
	if c.Verb == tc.VerbDelete {
		// A class a filter is bound to is in use (qdisc_class_in_use).
		for _, at := range d.filters.Attached() {
			for _, f := range d.filters.Filters(at) {
				if f.ClassID == qdisc.ClassID(clid) {
					inUse := classInUse[q.Kind]
					if inUse == "" {
						inUse = strings.ToUpper(q.Kind) + " class in use" // htb_delete's, hfsc's
					}
					return kernelf("Error: %s (filter parent %s pref %d %s points at %s).", inUse, at, f.Pref, f.Kind, clid)
				}
			}
		}
		if err := cops.DeleteClass(x, qdisc.ClassID(clid)); err != nil {
			return err
		}
		d.filters.DropBlock(qdisc.ClassID(clid))
	} else {
		if cmd.Kind == "" {
			return kernelf("RTNETLINK answers: Invalid argument (no class options: write \"%s ...\" after the classid)", q.Kind)
		}
		if cmd.Kind != q.Kind {
			// tc parses the words with the kind's parse_copt; a kind
			// without one is "classless" to it. The kernel does not
			// check the kind: another classful kind's options are not
			// htb's (EINVAL).
			if ops, err := qdisc.New(cmd.Kind); err != nil || !isClassful(ops) { // a kind no plugin serves, or a classless plugin's
				return &qdisc.OptionError{Class: qdisc.ErrParse, Msg: fmt.Sprintf("Error: Qdisc %q is classless (the qdisc is %s).", cmd.Kind, q.Name())}
			}
			return kernelf("RTNETLINK answers: Invalid argument (class kind %q is not %s's)", cmd.Kind, q.Name())
		}
		if clid == tc.Root {
			return kernelf("Error: Cannot create traffic class with classid TC_H_ROOT.")
		}
		parent := qdisc.ClassID(portid)
		if portid == tc.Root {
			parent = qdisc.RootClass
		}
		req := qdisc.ClassReq{ID: qdisc.ClassID(clid), Parent: parent, Create: c.Verb != tc.VerbChange, Exists: exists, Args: cmd.Options}
		if err := cops.ChangeClass(x, req); err != nil {
			var w *qdisc.Warning
			if !errors.As(err, &w) {
				return err
			}
			// tc prints the kernel's extack warning and carries on.
			n.Warnings = append(n.Warnings, "Warning: "+w.Msg)
		}
	}
	freed.PushList(&x.freed)
	if err := n.syncLeaves(q, &freed); err != nil {
		return err
	}
	if q.parentQ != nil && q.leafState() != before {
		n.notifyUp(nil, q)
	}
	n.rtnlKfreeSkbs(&freed)
	return nil
}

// tcFilter is tc_new_tfilter and tc_del_tfilter: the block is the
// qdisc's (parent X:, root, or none: the root qdisc) or a class's.
func (n *Net) tcFilter(d *Device, c tc.Command) error {
	cmd, err := tc.ParseFilter(c.Words)
	if err != nil {
		return err
	}
	if err := checkDev(d, cmd.Dev); err != nil {
		return err
	}
	if cmd.Parent.Major() == tc.Egress.Major() {
		return n.tcClsactFilter(d, c.Verb, cmd)
	}
	var q *Qdisc
	switch cmd.Parent {
	case tc.Unspec, tc.Root:
		q = d.Root
		if q == nil {
			if d.RootKind == "noqueue" {
				return kernelf("Error: Qdisc not classful.")
			}
			return kernelf("Error: Class doesn't support blocks (the root is %s: attach filters to a classful qdisc).", d.RootKind)
		}
	default:
		q = d.qdiscLookup(cmd.Parent)
		if q == nil {
			return kernelf("Error: Parent Qdisc doesn't exists.")
		}
	}
	cops := q.filterOps()
	if cops == nil {
		if classOpsNoBlock[q.Kind] || q.Flags&qdisc.NoBlock != 0 {
			// __tcf_block_find: class ops without cops->tcf_block.
			return kernelf("Error: Class doesn't support blocks (%s).", q.Name())
		}
		return kernelf("Error: Qdisc not classful (%s).", q.Name())
	}
	at := qdisc.MakeClassID(q.Handle.Major(), 0)
	if cmd.Parent != tc.Unspec && cmd.Parent != tc.Root && cmd.Parent.Minor() != 0 {
		at = qdisc.ClassID(cmd.Parent)
		cl := qdisc.FindClass(q.Classes(), at)
		switch {
		case cl == nil:
			return kernelf("Error: Specified class doesn't exist.")
		case !cl.Filters && classBlockEINVAL[q.Kind]:
			return kernelf("RTNETLINK answers: Invalid argument (%s's classes take no filters; attach them to %s)", q.Kind, q.Handle.QdiscString())
		case !cl.Filters && classBlockRefusal[q.Kind] != "":
			// cops->tcf_block of a class: NULL, with the kind's extack.
			return kernelf("Error: %s (%s's classes take no filters; attach them to %s).", classBlockRefusal[q.Kind], q.Kind, q.Handle.QdiscString())
		case !cl.Filters:
			return kernelf("Error: Class doesn't support blocks (%s's classes take no filters; attach them to %s).", q.Kind, q.Handle.QdiscString())
		}
	}
	if c.Verb == tc.VerbDelete {
		err = d.filters.Delete(cmd, at)
	} else {
		_, err = d.filters.Add(c.Verb, cmd, at)
	}
	if err != nil {
		return err
	}
	if err := cops.SetFilters(sim.Ktime(n.E.Now()), d.filters.Specs(q.Handle.Major())); err != nil {
		return err
	}
	if c.Verb != tc.VerbDelete {
		// tc_new_tfilter, once the filter's change succeeded:
		// q->flags &= ~TCQ_F_CAN_BYPASS. Nothing sets it again (the
		// flow qdiscs set it in their init only), and a delete
		// leaves it off.
		q.Flags &^= qdisc.CanBypass
		q.filtered = true
	}
	return nil
}

// filterSaltKinds are the classful kinds whose filters' classid names
// no class: sfb hashes its minor (sfb_classify's salt).
var filterSaltKinds = map[string]bool{"sfb": true}

// CheckFilters refuses a filter whose flowid names no class of its
// qdisc. The kernel accepts one (tcf_bind_filter binds nothing) and
// classifies its packets as if no filter matched (htb's default class);
// txlab refuses it, as a typo more often than not.
func (n *Net) CheckFilters(d *Device) error {
	for _, at := range d.filters.Attached() {
		q := d.qdiscLookup(tc.MakeHandle(at.Major(), 0))
		if q == nil || !q.Classful() || filterSaltKinds[q.Kind] {
			// A flow qdisc's filters name its flows by their minor
			// (fq_codel_classify's TC_H_MIN(res.classid)), not
			// classes; one out of range drops the packet.
			continue
		}
		ids := map[qdisc.ClassID]bool{qdisc.MakeClassID(at.Major(), 0): true}
		for _, cl := range q.Classes() {
			ids[cl.ID] = true
		}
		for _, f := range d.filters.Filters(at) {
			if f.ClassID != 0 && f.ClassID.Major() == at.Major() && !ids[f.ClassID] {
				return qdisc.Lacksf("filter", "parent %s pref %d %s: flowid %s names no class of %s (the kernel accepts it and classifies as if nothing matched; txlab refuses it)",
					at, f.Pref, f.Kind, f.ClassID, q.Name())
			}
		}
	}
	return nil
}

// Filters is `tc -s filter show dev D parent X` for every qdisc or
// class X with filters, in classid order (the lines leave out "parent
// X", which the command names), each action with its counters and
// times: the host's for clsact's and the ingress qdisc's blocks, whose
// actions it runs; for a qdisc's, those of the copy its plugin
// classifies with (wire.ClassOps.FilterStats).
func (d *Device) Filters() []FilterBlock {
	var out []FilterBlock
	now := sim.Ktime(d.net.E.Now())
	for _, at := range d.filters.Attached() {
		if at == egressAt || at == ingressAt {
			out = append(out, FilterBlock{At: at, Stats: true, Text: d.filters.ShowStats(at, cls.Dump{Now: now})})
			continue
		}
		if q := d.qdiscLookup(tc.Handle(qdisc.MakeClassID(at.Major(), 0))); q != nil {
			if ops := q.filterOps(); ops != nil {
				if text := ops.FilterStats(at, now); text != "" {
					out = append(out, FilterBlock{At: at, Stats: true, Text: text})
					continue
				}
			}
		}
		out = append(out, FilterBlock{At: at, Text: d.filters.Show(at, false)})
	}
	return out
}

// FilterBlock is the `tc filter show` text of one block; Stats says it
// is `tc -s filter show`'s.
type FilterBlock struct {
	At    qdisc.ClassID
	Text  string
	Stats bool
}

// filterOps is what takes q's filters (cops->tcf_block): a classful
// qdisc's class operations, or the same of a classless qdisc with a
// block of its own (fq_codel, sfq, cake: qdisc.HasBlock); nil for any
// other qdisc, which has no class ops ("Qdisc not classful").
func (q *Qdisc) filterOps() wire.ClassOps {
	if c := q.classful(); c != nil && q.Flags&qdisc.NoBlock == 0 {
		return c
	}
	if c, ok := q.Ops.(wire.ClassOps); ok && q.Flags&qdisc.HasBlock != 0 {
		return c
	}
	return nil
}

// classOpsNoBlock are the kinds whose Qdisc_class_ops have no
// tcf_block (a child qdisc, no filters) that the model keeps classless:
// netem_class_ops, red_class_ops, skbprio_class_ops (tbf, classful here, says so itself:
// qdisc.NoBlock). mq and cake_mq roots are the host's (above).
var classOpsNoBlock = map[string]bool{"netem": true, "red": true, "skbprio": true}

func isClassful(q qdisc.Qdisc) bool {
	_, ok := q.(qdisc.Classful)
	return ok
}
