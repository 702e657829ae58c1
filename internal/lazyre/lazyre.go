// Package lazyre holds regular expressions that are compiled the first time they are used.
//
// A package-level regexp.MustCompile runs while the process starts, in every verb of the
// binary, whether or not that verb ever matches the expression: with the expressions of the
// checks, the redactor and the message parsers that was several milliseconds and about a
// megabyte of heap before `unstick version` printed a line. New defers the work to the first
// match; TestEveryExpressionCompiles compiles every expression of the module given to New, as
// an init-time MustCompile would have.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns that one *Regexp to
// every call, from any goroutine. Like regexp.MustCompile, it panics if expr does not compile.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
