package main

// The built-in qdiscs and drivers: internal/builtins imports every
// package that registers one, and this is the only non-test import of
// it. `txlab --isolate` serves the same set out of process
// (plugin.Builtins).
import _ "github.com/txlab/txlab/internal/builtins"
