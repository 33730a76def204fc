package fidelity

import _ "github.com/txlab/txlab/framework/internal/builtintest" // the built-in qdiscs and drivers
