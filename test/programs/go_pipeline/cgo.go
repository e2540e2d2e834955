//go:build cgo

// Links runtime/cgo wherever cgo is on, so that the binary built with the
// command `coz run` advises (CGO_ENABLED=1 go build -ldflags=-linkmode=external)
// has it with every Go release: Go 1.19's external linker left it out, and
// without it Go's raw signal handlers take the runtime's samples (go_binary.h).
// Without cgo (the statically linked variant) this file is not built.
package main

import _ "runtime/cgo"
