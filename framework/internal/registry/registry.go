// Package registry is a named set of factories, shared by the qdisc and
// driver registries.
package registry

import (
	"fmt"
	"sort"
	"strings"
)

type entry[T any] struct {
	new  func() T
	help string
}

// Registry maps names to factories of T.
type Registry[T any] struct {
	what    string // "qdisc", "driver": used in messages
	entries map[string]entry[T]
}

// New makes an empty registry of things called what.
func New[T any](what string) *Registry[T] {
	return &Registry[T]{what: what, entries: map[string]entry[T]{}}
}

// Register adds a name; registering one twice is a programming error.
func (r *Registry[T]) Register(name, help string, f func() T) {
	if _, dup := r.entries[name]; dup {
		panic(r.what + ": registered twice: " + name)
	}
	r.entries[name] = entry[T]{f, help}
}

// New makes a fresh T by name, or says which names exist.
func (r *Registry[T]) New(name string, extra ...string) (T, error) {
	e, ok := r.entries[name]
	if !ok {
		var zero T
		return zero, fmt.Errorf("unknown %s %q (known: %s)", r.what, name, strings.Join(r.Names(extra...), ", "))
	}
	return e.new(), nil
}

// Names lists the registered names plus extra ones, sorted.
func (r *Registry[T]) Names(extra ...string) []string {
	out := append([]string(nil), extra...)
	for k := range r.entries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Help is a name's one-line description.
func (r *Registry[T]) Help(name string) string { return r.entries[name].help }
