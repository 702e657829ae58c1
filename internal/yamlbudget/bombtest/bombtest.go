// Package bombtest builds YAML alias bombs for tests, and measures what reading one allocates.
package bombtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// AliasList is n aliases to anchor in one flow sequence: [*a, *a, …].
func AliasList(anchor string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("*"+anchor+", ", n), ", ") + "]"
}

// BigScalar is a ConfigMap whose 1 MiB anchored value is aliased 900 times: 900 MiB expanded
// from a 1 MiB text, under go-yaml's own alias-ratio guard.
func BigScalar(namespace, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n", name, namespace) +
		"  values: &v \"" + strings.Repeat("A", 1<<20) + "\"\n" +
		"copies: " + AliasList("v", 900) + "\n"
}

// Laughs is a ConfigMap holding a nested "billion laughs": 9 levels of 9 from a 12 KiB value.
func Laughs(namespace, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, namespace)
	fmt.Fprintf(&b, "l0: &l0 %q\n", strings.Repeat("lol", 1<<12))
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d %s\n", i, i, AliasList(fmt.Sprintf("l%d", i-1), 9))
	}
	b.WriteString("data:\n  bomb: *l8\n")
	return b.String()
}

// Shapes are the bombs by name, each one document.
func Shapes(namespace, name string) map[string]string {
	return map[string]string{"big scalar": BigScalar(namespace, name), "nested laughs": Laughs(namespace, name)}
}

// MaxAlloc is what reading one bomb may allocate in all: a few copies of its text and its
// node graph. Expanded, the smaller bomb is 900 MiB.
const MaxAlloc = 64 << 20

// Allocated runs f and returns the bytes the heap allocated meanwhile (runtime.MemStats
// TotalAlloc): what expanding an alias would cost shows there even when it is freed at once.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// WithinAlloc runs f and fails t when it allocated more than MaxAlloc.
func WithinAlloc(t testing.TB, what string, f func()) {
	t.Helper()
	if n := Allocated(f); n > MaxAlloc {
		t.Errorf("%s allocated %d MiB, more than %d MiB: the aliases were expanded", what, n>>20, MaxAlloc>>20)
	}
}
