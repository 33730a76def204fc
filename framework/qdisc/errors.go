package qdisc

import (
	"errors"
	"fmt"
)

// Classes of option errors, so a front end can answer as tc does: tc
// itself refuses words it cannot parse (its parse_qopt returns -1, tc
// exits 255), the kernel refuses a request it will not apply (netlink
// EINVAL/EOPNOTSUPP: tc prints "Error: ..." and exits 2). Options tc and
// the kernel accept but the model does not have are a third class.
var (
	ErrParse  = errors.New("tc cannot parse the options")
	ErrKernel = errors.New("the kernel refuses the options")
	ErrLacks  = errors.New("the model lacks the option")
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

// Parsef is an option tc refuses (kind: message).
func Parsef(kind, format string, a ...any) error {
	return &OptionError{Class: ErrParse, Msg: kind + ": " + fmt.Sprintf(format, a...)}
}

// Refusef is options the kernel refuses (kind: message, the kernel's
// extack text where it sets one).
func Refusef(kind, format string, a ...any) error {
	return &OptionError{Class: ErrKernel, Msg: kind + ": " + fmt.Sprintf(format, a...)}
}

// Lacksf is an option tc and the kernel accept that the model lacks.
func Lacksf(kind, format string, a ...any) error {
	return &OptionError{Class: ErrLacks, Msg: kind + ": " + fmt.Sprintf(format, a...)}
}
