package qdisc

import (
	"errors"
	"fmt"
)

// Classes of option errors, so a front end can answer as tc does
// (tc/tc_qdisc.c, tc_qdisc_modify): the kind's own parser refuses words
// it cannot parse (parse_qopt fails: tc exits 1); tc refuses its own
// command line before any kind's parser runs (invarg, duparg, a missing
// value, options for a kind without a parser: tc exits 255, its -1);
// the kernel refuses a request it will not apply (rtnl_talk fails on
// netlink's EINVAL/EOPNOTSUPP: tc prints "Error: ..." and exits 2).
// Options tc and the kernel accept but the model does not have are a
// class of their own.
var (
	ErrParse  = errors.New("tc cannot parse the options")
	ErrKernel = errors.New("the kernel refuses the options")
	ErrLacks  = errors.New("the model lacks the option")
	// ErrSyntax is tc's own command line refused; it is also an
	// ErrParse (errors.Is(err, ErrParse) holds).
	ErrSyntax = fmt.Errorf("tc cannot read the command line: %w", ErrParse)
)

// OptionError is an error in a qdisc's options, of one of the classes
// above (errors.Is(err, ErrParse), ...). Msg names the qdisc kind and
// the option.
type OptionError struct {
	Class error
	Msg   string
}

func (e *OptionError) Error() string { return e.Msg }
func (e *OptionError) Unwrap() error { return e.Class }

// PartialChange is a change the kernel refused after it had applied
// part of it, which stays: fq_pie_change sets the limit before it
// refuses a number of flows. Info is the qdisc's after the part
// applied (the host takes its Limit and Flags, as the kernel's
// sch->limit keeps the new limit); Err is the refusal. A qdisc's Change
// returns it as its error; it crosses the plugin protocol.
type PartialChange struct {
	Info Info
	Err  error
}

func (e *PartialChange) Error() string { return e.Err.Error() }
func (e *PartialChange) Unwrap() error { return e.Err }

// Parsef is an option tc refuses (kind: message).
func Parsef(kind, format string, a ...any) error {
	return &OptionError{Class: ErrParse, Msg: kind + ": " + fmt.Sprintf(format, a...)}
}

// Refusef is options the kernel refuses (kind: message, the kernel's
// extack text where it sets one).
func Refusef(kind, format string, a ...any) error {
	return &OptionError{Class: ErrKernel, Msg: kind + ": " + fmt.Sprintf(format, a...)}
}

// Syntaxf is tc's own command line refused, before any kind's parser
// runs (the message as tc prints it, without its "Error: ").
func Syntaxf(format string, a ...any) error {
	return &OptionError{Class: ErrSyntax, Msg: fmt.Sprintf(format, a...)}
}

// Lacksf is an option tc and the kernel accept that the model lacks.
func Lacksf(kind, format string, a ...any) error {
	return &OptionError{Class: ErrLacks, Msg: kind + ": " + fmt.Sprintf(format, a...)}
}

// Warning is a request the kernel applied but warned about (an extack
// message with a zero return: tc prints "Warning: ..." and exits 0), as
// htb's "quantum of class 10010 is big. Consider r2q change.". A
// Classful's ChangeClass returns one for success with a message; the
// host keeps it (the run's report lists it under warnings).
type Warning struct{ Msg string }

func (w *Warning) Error() string { return w.Msg }

// Warnf is a Warning: "kind: message".
func Warnf(kind, format string, a ...any) error {
	return &Warning{Msg: kind + ": " + fmt.Sprintf(format, a...)}
}
