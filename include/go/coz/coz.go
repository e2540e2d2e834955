//go:build cgo

// Package coz marks progress points in a Go program for the causal profiler
// (`coz run`), with the API of Coz's own Go package, whose import path it
// keeps: a program written for Coz builds against this directory unchanged
// (go mod edit -replace github.com/plasma-umass/coz/go=DIR, docs/go.md).
//
//	for _, request := range requests {
//		handle(request)
//		coz.Progress() // a throughput point named after this file and line
//	}
//
//	func handle(request Request) {
//		defer coz.Scope("request")() // a latency point: Begin now, End on return
//		...
//	}
//
// Without `coz run` every call is a cheap no-op. Importing the package links
// runtime/cgo, which the profiler needs in a Go program (without it Go's own
// signal handlers would take the profiler's samples).
package coz

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// Whether the profiler's runtime is loaded.
static int coz_available(void) { return dlsym(RTLD_DEFAULT, "_coz_get_counter") != NULL; }

// The profiler's counter lookup (include/coz.h: the runtime exports it), or NULL.
static void* coz_lookup_counter(int type, const char* name) {
	void* symbol = dlsym(RTLD_DEFAULT, "_coz_get_counter");
	if (symbol == NULL) return NULL;
	void* (*get_counter)(int, const char*);
	memcpy(&get_counter, &symbol, sizeof symbol);
	return get_counter(type, name);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The counter types of include/coz.h.
const (
	throughput = 1
	begin      = 2
	end        = 3
)

// A Counter is one of the profiler's progress-point counters. Its first word
// is the count that code built against Coz's header increments (coz.h's
// coz_counter_t), which the profiler adds to the rest. The zero Counter, what
// a program gets without the profiler, does nothing.
type Counter struct {
	count *uintptr
}

func newCounter(kind int, name string) *Counter {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	pointer := C.coz_lookup_counter(C.int(kind), cname) // the profiler copies the name
	if pointer == nil {
		return &Counter{}
	}
	return &Counter{count: (*uintptr)(pointer)}
}

// NewThroughput returns the counter of a throughput point (COZ_PROGRESS_NAMED).
func NewThroughput(name string) *Counter { return newCounter(throughput, name) }

// NewBegin returns the counter that opens a latency point (COZ_BEGIN).
func NewBegin(name string) *Counter { return newCounter(begin, name) }

// NewEnd returns the counter that closes a latency point (COZ_END).
func NewEnd(name string) *Counter { return newCounter(end, name) }

// Increment counts one visit. Safe from any goroutine.
func (c *Counter) Increment() {
	if c != nil && c.count != nil {
		atomic.AddUintptr(c.count, 1)
	}
}

// Available reports whether the program runs under the profiler.
func Available() bool { return C.coz_available() != 0 }

type counterKey struct {
	kind int
	name string
}

var counters sync.Map // counterKey -> *Counter

func cached(kind int, name string) *Counter {
	key := counterKey{kind, name}
	if c, ok := counters.Load(key); ok {
		return c.(*Counter)
	}
	c, _ := counters.LoadOrStore(key, newCounter(kind, name))
	return c.(*Counter)
}

// ProgressNamed counts a visit to the throughput point `name` (COZ_PROGRESS_NAMED).
func ProgressNamed(name string) { cached(throughput, name).Increment() }

var callSites sync.Map // return address -> *Counter

// Progress counts a visit to the throughput point named after its caller's
// file and line (COZ_PROGRESS). Finding the caller costs a stack lookup: on
// a hot path, keep a Counter from NewThroughput.
func Progress() {
	pc, _, _, ok := runtime.Caller(1)
	if !ok {
		ProgressNamed("unknown")
		return
	}
	if c, ok := callSites.Load(pc); ok {
		c.(*Counter).Increment()
		return
	}
	name := "unknown"
	if function := runtime.FuncForPC(pc); function != nil {
		file, line := function.FileLine(pc - 1) // the call, not the instruction after it
		name = fmt.Sprintf("%s:%d", file, line)
	}
	c := cached(throughput, name)
	callSites.Store(pc, c)
	c.Increment()
}

// Begin counts the start of an operation of the latency point `name` (COZ_BEGIN).
func Begin(name string) { cached(begin, name).Increment() }

// End counts the end of an operation of the latency point `name` (COZ_END).
func End(name string) { cached(end, name).Increment() }

// Scope counts a Begin of `name` and returns the function that counts its End:
// `defer coz.Scope("request")()`.
func Scope(name string) func() {
	cached(begin, name).Increment()
	return cached(end, name).Increment
}
